"""Renders the sample workloads that prove the hybrid cluster end to end: ``api-win`` (ASP.NET Core on Windows
Server 2022 nodes) and ``api-linux`` (a Java 17 Spring Boot API on the Linux nodes) with their Services and
autoscalers, the HTTPRoutes sending ``/win`` and ``/linux`` to them, and the Envoy Gateway (chart values,
EnvoyProxy, GatewayClass, Gateway) that serves those routes from Linux nodes.

This module owns ``SampleParams``, ``SampleAutoscaling`` and the render functions. It is pure: no Pulumi, no
``config`` imports; plain Kubernetes objects / Helm values out. Whether the samples are deployed at all is the
caller's switch.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from vocab.checks import DNS_LABEL, ROUTE_HOST, require
from vocab.labels import DISTRO_LABEL, OS_LABEL, ZONE_LABEL
from vocab.namespaces import parse_quantity
from vocab.samples import LINUX_RESOURCES, WIN_RESOURCES

from . import availability, custom_metrics, progressive_delivery, tls, tracing

# Routing is Gateway API, not Ingress: ingress-nginx, the controller this program used, is retired upstream (best-effort
# maintenance ended in March 2026, no releases or security fixes after it; the announcement points to Gateway API
# implementations: Kubernetes SIG Network / SRC, 2025-11-11). Envoy Gateway (config.compat CHARTS "envoy-gateway")
# implements it, parameterised by an EnvoyProxy (gateway_objects).
# The namespace Envoy Gateway's install guide uses (`helm install eg oci://docker.io/envoyproxy/gateway-helm
# ... -n envoy-gateway-system --create-namespace`); the Gateway and its EnvoyProxy live there too.
GATEWAY_NAMESPACE = "envoy-gateway-system"
# Envoy Gateway's GatewayClass controllerName (charts/gateway-helm/templates/gateway-class.yaml).
GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
GATEWAY_CLASS = "hybrid-samples"
GATEWAY_NAME = "samples"
GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"
ENVOY_PROXY_API_VERSION = "gateway.envoyproxy.io/v1alpha1"
GATEWAY_HTTP_PORT = 80
GATEWAY_HTTPS_PORT = 443
GATEWAY_TLS_SECRET = "samples-tls"   # issued by cert-manager for the HTTPS listener (render/tls.py)

WIN_APP = "api-win"
LINUX_APP = "api-linux"
SAMPLE_PART_OF = "hybrid-samples"

# Images (pinned in config.compat as SAMPLE_WINDOWS_IMAGE and SAMPLE_LINUX_IMAGE):
# - Windows: the ASP.NET Core sample of dotnet/dotnet-docker (samples/aspnetapp) built on aspnet:10.0-nanoserver-ltsc2022
#   (samples/aspnetapp/Dockerfile.nanoserver; its runtime Dockerfile is src/runtime/10.0/nanoserver-ltsc2022/amd64/
#   Dockerfile). The tag table publishes the sample as aspnetapp-<major>-nanoserver-ltsc2022 (README.samples.md:
#   aspnetapp-9.0-nanoserver-ltsc2022, aspnetapp-8.0-nanoserver-ltsc2022); .NET 8 and 9 both left support on 2026-11-10
#   (https://devblogs.microsoft.com/dotnet/dotnet-sts-releases-supported-for-24-months), so the default is the .NET 10
#   tag of that same scheme.
# - Linux: spring-petclinic-rest (github.com/spring-petclinic/spring-petclinic-rest): a Spring Boot REST API with
#   spring-boot-starter-actuator and an in-memory database, published to Docker Hub with Jib as
#   springcommunity/spring-petclinic-rest:<version> (readme "With Docker"); the 3.x line is built on Spring Boot 3 and
#   later, whose Java baseline is 17. Tag 3.2.1 is the release in use in published manifests.
WIN_HTTP_PORT = 8080        # Kestrel's port: ASPNETCORE_HTTP_PORTS in the .NET images (runtime Dockerfile above)
LINUX_HTTP_PORT = 9966      # server.port in spring-petclinic-rest src/main/resources/application.properties
# The Spring app serves under this path itself (SERVER_SERVLET_CONTEXTPATH in api_linux), so its route needs no rewrite.
LINUX_PATH = "/linux"
# Rewritten to "/" by the route's standard URLRewrite filter (ReplacePrefixMatch): the ASP.NET Core sample serves at "/"
# and has no path-base setting.
WIN_PATH = "/win"
SERVICE_PORT = 80

LINUX_RUN_AS = 10001         # any non-zero UID: the image's files are world-readable (Jib layers)

# The Gateway's node port: fixed so the datacenter's upstream load balancer / firewall rules can point at
# it; inside the default --service-node-port-range 30000-32767 (kube-apiserver reference).
GATEWAY_HTTP_NODE_PORT = 30080

_YEAR = re.compile(r"(\d{4})")
# Tag markers of Windows container images and the Windows Server they run on: Microsoft tags 2019
# images "1809" or "ltsc2019" (dotnet/dotnet-docker README.samples.md "Nano Server, version 1809"
# tags; compat.WINDOWS ltsc_tag), later ones "ltsc<year>".
_WINDOWS_TAG_MARKERS = {"1809": "2019", "ltsc2019": "2019", "ltsc2022": "2022", "ltsc2025": "2025"}


@dataclass(frozen=True)
class SampleParams:
    win_namespace: str                 # "win-prod"
    linux_namespace: str               # "linux-prod"
    win_runtime_class: str             # "win2022": a RuntimeClass from render.scheduling.runtime_classes
    win_image: str                     # must be built for that RuntimeClass's Windows build
    linux_image: str
    win_replicas: int = 4
    linux_replicas: int = 6
    zone_key: str = ZONE_LABEL
    linux_distros: tuple[str, ...] = ("ubuntu22", "rocky9")
    host: str | None = None
    # With tracing (config `tracing`, render/tracing.py): the Gateway's sampling percentage, and the Java agent image
    # api-linux loads.
    tracing_sampling: int | None = None
    java_agent_image: str | None = None




@dataclass(frozen=True)
class RequestRate:
    prometheus: str                    # the Prometheus KEDA queries (render.custom_metrics.prometheus_address)
    requests_per_second: int           # per replica


@dataclass(frozen=True)
class SampleAutoscaling:
    win_max_replicas: int
    linux_max_replicas: int
    cpu_utilization: int               # percent of the pods' CPU request
    linux_request_rate: RequestRate | None = None   # api-linux scales on its request rate too (KEDA)


def _check(p: SampleParams) -> None:
    for name in (p.win_namespace, p.linux_namespace, p.win_runtime_class):
        require(bool(DNS_LABEL.match(name)), f"{name!r} is not a DNS-1123 label")
    require(p.win_namespace.startswith("win-"), f"{p.win_namespace}: Windows namespaces are named win-*")
    require(p.linux_namespace.startswith("linux-"), f"{p.linux_namespace}: Linux namespaces are named linux-*")
    require(p.win_replicas >= 1 and p.linux_replicas >= 1, "replica counts must be positive")
    require(bool(p.linux_distros), "linux_distros must name at least one distro")
    require(not any(d.startswith("win") for d in p.linux_distros), f"{p.linux_distros} names a Windows distro")
    require(p.host is None or bool(ROUTE_HOST.match(p.host)), f"host {p.host!r} is not a DNS name")
    for image in (p.win_image, p.linux_image):
        last = image.rsplit("/", 1)[-1]
        pinned = "@" in image or (":" in last and not last.endswith(":latest"))
        require(bool(image) and " " not in image and pinned, f"image {image!r} is not pinned to a tag or digest")
    # Process isolation runs only an image built for the host's kernel: a 2019 image under the win2022
    # RuntimeClass would be scheduled and then fail to start, so catch the mismatch here when both the
    # image tag and the class name say which Windows Server they are for.
    tag = p.win_image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    image_years = {year for marker, year in _WINDOWS_TAG_MARKERS.items() if re.search(rf"(^|-){marker}($|-)", tag)}
    class_year = _YEAR.search(p.win_runtime_class)
    if image_years and class_year:
        require(image_years == {class_year.group(1)},
                 f"{p.win_image} is built for Windows Server {sorted(image_years)}, not RuntimeClass {p.win_runtime_class}")


def _labels(app: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": SAMPLE_PART_OF}


def _zone_spread(app: str, zone_key: str) -> list[dict[str, Any]]:
    # nodeAffinityPolicy stays at its default Honor: only zones that have nodes of the right OS/build count.
    return [{
        # 4 (or 6) replicas over hk-1/hk-2 must split evenly; ScheduleAnyway would only prefer that.
        "maxSkew": 1,
        "topologyKey": zone_key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
        # Each revision spreads on its own during a rollout: pod-template-hash for a Deployment's pods,
        # rollouts-pod-template-hash for a Rollout's (render/progressive_delivery.py). Both owners' labels, so the template
        # is the same with and without progressive delivery; each is ignored on the pods that do not carry it ("Keys that
        # don't exist in the incoming pod labels will be ignored", the v1.36 field description).
        "matchLabelKeys": ["pod-template-hash", progressive_delivery.POD_TEMPLATE_HASH_LABEL],
        # So a zone outage does not block rescheduling into the surviving zone: nodes whose taints the pod does not
        # tolerate leave the skew computation, and the node lifecycle controller taints unreachable/not-ready nodes
        # (field description in the v1.36 schema; https://kubernetes.io/docs/concepts/architecture/nodes/ on condition
        # taints).
        "nodeTaintsPolicy": "Honor",
    }]


def _http_probe(path: str, *, period: int, timeout: int, failures: int, initial_delay: int = 0) -> dict[str, Any]:
    probe = {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }
    if initial_delay:
        probe["initialDelaySeconds"] = initial_delay
    return probe


def _service(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(name)},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app.kubernetes.io/name": name},
            "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def _deployment(name: str, namespace: str, replicas: int, pod_spec: dict[str, Any], annotations: dict[str, str] | None = None,
                progress_deadline: int | None = None) -> dict[str, Any]:
    # No pulumi.com/waitFor: pulumi-kubernetes already waits for a Deployment to become Available (provider await
    # logic; @pulumi/kubernetes apps/v1 Deployment doc comment).
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": _labels(name)}
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
        # One extra pod at a time and none taken away: capacity never drops during a rollout, and the
        # namespace quota has to hold replicas + 1 pods (checked in the tests).
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        "template": {"metadata": {"labels": _labels(name)}, "spec": pod_spec},
    }
    if progress_deadline:
        spec["progressDeadlineSeconds"] = progress_deadline
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": spec}


def api_win(p: SampleParams) -> list[dict[str, Any]]:
    """Deployment + Service for the ASP.NET Core sample on Windows Server 2022."""
    _check(p)
    pod_spec = {
        # Both samples set spec.os.name: the scheduler ignores it, it selects the OS-specific validation and PSA rules
        # (https://kubernetes.io/docs/concepts/windows/user-guide/).
        "os": {"name": "windows"},
        # The only scheduling a Windows pod needs: the RuntimeClass carries node selector and taint toleration
        # (render/scheduling.py runtime_class).
        "runtimeClassName": p.win_runtime_class,
        # Meets the restricted Pod Security Standard with runAsNonRoot as ContainerUser (USER ContainerUser in the .NET
        # runtime Dockerfile, see Images above) and nothing else: the Linux-only fields are forbidden by API validation
        # when spec.os.name is windows (v1.36 schema field descriptions) and skipped by PSA for such pods
        # (render/scheduling.py namespace has the sources).
        "securityContext": {
            "runAsNonRoot": True,
            "windowsOptions": {"runAsUserName": "ContainerUser"},
        },
        "automountServiceAccountToken": False,
        "topologySpreadConstraints": _zone_spread(WIN_APP, p.zone_key),
        "containers": [{
            "name": "api",
            "image": p.win_image,
            "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": WIN_HTTP_PORT, "protocol": "TCP"}],
            # Stated even though the image sets it: the Service's targetPort depends on it.
            "env": [{"name": "ASPNETCORE_HTTP_PORTS", "value": str(WIN_HTTP_PORT)}],
            "resources": WIN_RESOURCES,
            # /healthz: mapped with MapHealthChecks (dotnet/dotnet-docker samples/aspnetapp/aspnetapp/Program.cs).
            # A startupProbe holds liveness and readiness off until the app first answers, so a slow start (here a
            # Windows container's first start, in api_linux a JVM warming up) never counts as a failure; the budget is
            # generous on Windows (5 minutes), where a cold nanoserver start and HNS endpoint setup are slow.
            "startupProbe": _http_probe("/healthz", period=10, timeout=10, failures=30, initial_delay=15),
            "readinessProbe": _http_probe("/healthz", period=10, timeout=5, failures=3),
            "livenessProbe": _http_probe("/healthz", period=20, timeout=10, failures=3),
        }],
    }
    # Only the await timeout is raised (pulumi.com/timeoutSeconds, default 10 minutes for Deployments), with
    # progressDeadlineSeconds: the first pull of a Windows image through the registry mirror takes long.
    deployment = _deployment(
        WIN_APP, p.win_namespace, p.win_replicas, pod_spec,
        annotations={"pulumi.com/timeoutSeconds": "1800"},
        progress_deadline=1800,
    )
    return [deployment, _service(WIN_APP, p.win_namespace)]


def api_linux(p: SampleParams) -> list[dict[str, Any]]:
    """Deployment + Service for the Java 17 Spring Boot sample on the Linux distros in ``linux_distros``."""
    _check(p)
    health = f"{LINUX_PATH}/actuator/health"   # the actuator health endpoint sits under the servlet context path
    pod_spec = {
        "os": {"name": "linux"},
        # The OS and (below) the distro select Linux nodes; with no toleration, the Windows taint keeps the pods off Windows.
        "nodeSelector": {OS_LABEL: "linux"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": DISTRO_LABEL, "operator": "In", "values": list(p.linux_distros)}],
        }]}}},
        # Meets the restricted Pod Security Standard (with the container's securityContext and the /tmp emptyDir for
        # the read-only root). The UID is explicit: the Jib image has no USER, so the kubelet could not prove non-root.
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": LINUX_RUN_AS,
            "runAsGroup": LINUX_RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "automountServiceAccountToken": False,
        "topologySpreadConstraints": _zone_spread(LINUX_APP, p.zone_key),
        "containers": [{
            "name": "api",
            "image": p.linux_image,
            "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": LINUX_HTTP_PORT, "protocol": "TCP"}],
            # Spring Boot relaxed binding from environment variables (dots to underscores, dashes removed, upper case):
            # server.servlet.context-path, and management.endpoint.health.probes.enabled, which enables the
            # liveness/readiness health groups explicitly instead of relying on Kubernetes auto-detection (Spring Boot
            # reference "Kubernetes Probes").
            "env": [
                {"name": "SERVER_SERVLET_CONTEXTPATH", "value": LINUX_PATH},
                {"name": "MANAGEMENT_ENDPOINT_HEALTH_PROBES_ENABLED", "value": "true"},
            ],
            "resources": LINUX_RESOURCES,
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
            # The startupProbe as in api_win.
            "startupProbe": _http_probe(f"{health}/liveness", period=5, timeout=3, failures=36, initial_delay=10),
            "readinessProbe": _http_probe(f"{health}/readiness", period=10, timeout=3, failures=3),
            "livenessProbe": _http_probe(f"{health}/liveness", period=10, timeout=3, failures=3),
        }],
        # Tomcat's work directory and the JVM's perf data live under java.io.tmpdir (/tmp).
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}],
    }
    if p.java_agent_image is not None:
        pod_spec = tracing.java_agent(pod_spec, "api", LINUX_APP, p.java_agent_image)
    return [_deployment(LINUX_APP, p.linux_namespace, p.linux_replicas, pod_spec), _service(LINUX_APP, p.linux_namespace)]


def _linux_affinity() -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": OS_LABEL, "operator": "In", "values": ["linux"]}]}]}}}


# The controller's pods (charts/gateway-helm/templates/envoy-gateway-deployment.yaml, read at v1.9.0).
GATEWAY_CONTROLLER_LABELS = {"control-plane": "envoy-gateway"}


def envoy_gateway_values(budget: bool) -> dict[str, Any]:
    """Values for the Envoy Gateway chart (charts/gateway-helm/values.yaml): its controller pod on Linux
    nodes (``deployment.pod.affinity``, templates/envoy-gateway-deployment.yaml), two replicas (leader-elected; each
    serves the proxies' configuration). The Envoy data plane it creates is placed by the EnvoyProxy of
    ``gateway_objects``. With ``budget`` (plan/platform.py survives_every_wave), the replicas spread over nodes and the
    chart's budget, which renders unhealthyPodEvictionPolicy and takes whole numbers only (a percentage renders no
    budget: templates/envoy-gateway-poddisruptionbudget.yaml, read at v1.9.0)."""
    affinity = _linux_affinity()
    values: dict[str, Any] = {"deployment": {"replicas": availability.REPLICAS, "pod": {"affinity": affinity}},
                              # The CRDs come from gateway-crds-helm (config/compat.py says why).
                              "crds": {"enabled": False}}
    if budget:
        affinity.update(availability.host_spread(GATEWAY_CONTROLLER_LABELS))
        values["podDisruptionBudget"] = availability.budget_fields()
    return values


def envoy_gateway_crd_values() -> dict[str, Any]:
    """Values for gateway-crds-helm (charts/gateway-crds-helm/values.yaml): Gateway API's standard channel and
    Envoy Gateway's own CRDs."""
    return {"crds": {"gatewayAPI": {"enabled": True, "channel": "standard"}, "envoyGateway": {"enabled": True}}}


GATEWAY_PROXY_REPLICAS = 2


def gateway_proxy_labels() -> dict[str, str]:
    return {"gateway.envoyproxy.io/owning-gateway-name": GATEWAY_NAME,
            "gateway.envoyproxy.io/owning-gateway-namespace": GATEWAY_NAMESPACE}


def gateway_objects(p: SampleParams, node_port_range: tuple[int, int] = (30000, 32767),
                    http_node_port: int = GATEWAY_HTTP_NODE_PORT, load_balancer: bool = False,
                    tls_issuer: str | None = None, proxy_budget: bool = False) -> list[dict[str, Any]]:
    """The EnvoyProxy, GatewayClass and Gateway that serve the samples: on a LoadBalancer address (port 80) when
    the cluster has a LoadBalancer implementation (config ``loadBalancer``), else on a NodePort of Linux nodes.

    With ``tls_issuer`` (config ``tls``) the Gateway also listens for HTTPS on 443 with a certificate cert-manager
    issues from that ClusterIssuer for the sample host (render/tls.py), the samples' routes attach there, and the
    HTTP listener only redirects to HTTPS (and carries ACME HTTP-01 challenges).

    ``node_port_range`` is the cluster's ``--service-node-port-range`` (config ``node_port_range``); the
    API server refuses a Service whose nodePort lies outside it. ``proxy_budget``: the proxies get a disruption
    budget (where every wave leaves them a Linux worker, plan/platform.py survives_every_wave)."""
    _check(p)
    require(tls_issuer is None or bool(p.host), "HTTPS needs the sample host name: cert-manager issues certificates "
                                                 "for listener hostnames only")
    low, high = node_port_range
    require(low <= http_node_port <= high, f"node port {http_node_port} is outside the cluster's node port range {low}-{high}")
    envoy_service: dict[str, Any]
    if load_balancer:
        # Local (the EnvoyProxy default, written out): the client's address reaches Envoy, and MetalLB's layer 2
        # leader is then a node that runs an Envoy pod (metallb.universe.tf usage, "Local" traffic policy).
        envoy_service = {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}
    else:
        # envoyService.type exposes the data plane as a NodePort Service; its node port is fixed with a strategic-merge
        # patch of that Service (envoyService.patch, the form Envoy Gateway's own examples use).
        envoy_service = {
            "type": "NodePort",
            # Envoy Gateway names a listener's Service port <protocol>-<port>, as its examples patch it.
            "patch": {"type": "StrategicMerge", "value": {"spec": {"ports": [
                {"name": f"http-{GATEWAY_HTTP_PORT}", "port": GATEWAY_HTTP_PORT, "protocol": "TCP",
                 "nodePort": http_node_port}]}}},
        }
    labels = _labels(GATEWAY_NAME)
    envoy_proxy: dict[str, Any] = {
        "apiVersion": ENVOY_PROXY_API_VERSION,
        "kind": "EnvoyProxy",
        "metadata": {"name": GATEWAY_CLASS, "namespace": GATEWAY_NAMESPACE, "labels": labels},
        "spec": {"provider": {"type": "Kubernetes", "kubernetes": {
            "envoyDeployment": {
                "replicas": GATEWAY_PROXY_REPLICAS,
                # spec.provider.kubernetes.envoyDeployment.pod places the Envoy data plane on Linux nodes.
                # Spread over the Linux nodes and zones (soft: never left Pending by a drained node), so one node or
                # one wave does not hold both proxies. Envoy Gateway labels its proxy pods with their Gateway
                # (gateway.envoyproxy.io/owning-gateway-name and -namespace; envoyproxy/gateway's own test scripts
                # select the proxies by them).
                "pod": {"nodeSelector": {OS_LABEL: "linux"}, "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
                     "labelSelector": {"matchLabels": gateway_proxy_labels()}}
                    for key in ("kubernetes.io/hostname", ZONE_LABEL)]},
                "container": {"resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}},
            },
            "envoyService": envoy_service,
        }}},
    }
    if proxy_budget:
        # A drain moves one proxy at a time (the EnvoyProxy's envoyPDB), evicting an unready one too.
        envoy_proxy["spec"]["provider"]["kubernetes"]["envoyPDB"] = {
            "minAvailable": availability.MIN_AVAILABLE,
            "patch": {"type": "StrategicMerge",
                      "value": {"spec": {"unhealthyPodEvictionPolicy": availability.UNHEALTHY_POD_EVICTION}}}}
    if p.tracing_sampling is not None:
        envoy_proxy["spec"]["telemetry"] = tracing.gateway_tracing(p.tracing_sampling)
    gateway_class = {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "GatewayClass",
        "metadata": {"name": GATEWAY_CLASS, "labels": labels},
        "spec": {"controllerName": GATEWAY_CONTROLLER,
                 "parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy",
                                   "name": GATEWAY_CLASS, "namespace": GATEWAY_NAMESPACE}},
    }
    # The Gateway admits routes from exactly the two sample namespaces, by kubernetes.io/metadata.name (a label every
    # namespace carries).
    sample_namespaces = {"namespaces": {"from": "Selector", "selector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted({p.win_namespace, p.linux_namespace})}]}}}
    listener: dict[str, Any] = {"name": "http", "protocol": "HTTP", "port": GATEWAY_HTTP_PORT,
                                "allowedRoutes": sample_namespaces}
    if p.host:
        listener["hostname"] = p.host
    listeners = [listener]
    # Gateway API objects are custom resources, which pulumi-kubernetes does not await: wait for the Gateway condition
    # "Programmed", set once the implementation has configured its data plane (Gateway API v1 GatewayConditionType;
    # pulumi-kubernetes user-defined readiness, render/network.py PULUMI_WAIT_FOR). The routes are declared after it.
    annotations = {"pulumi.com/waitFor": "condition=Programmed"}
    if tls_issuer is not None:
        # HTTP carries only the redirect and cert-manager's challenge routes, both in the Gateway's namespace.
        listener["allowedRoutes"] = {"namespaces": {"from": "Same"}}
        listeners.append({"name": "https", "protocol": "HTTPS", "port": GATEWAY_HTTPS_PORT, "hostname": p.host,
                          "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": GATEWAY_TLS_SECRET}]},
                          "allowedRoutes": sample_namespaces})
        annotations[tls.ISSUER_ANNOTATION] = tls_issuer
    gateway = {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE, "labels": labels, "annotations": annotations},
        "spec": {"gatewayClassName": GATEWAY_CLASS, "listeners": listeners},
    }
    objects = [envoy_proxy, gateway_class, gateway]
    if tls_issuer is not None:
        objects.append(_https_redirect(p))
    return objects


def _https_redirect(p: SampleParams) -> dict[str, Any]:
    """Every plain HTTP request answered with a 301 to HTTPS (Gateway API RequestRedirect). cert-manager's
    HTTP-01 challenge routes match their exact path, which takes precedence over this route's catch-all."""
    spec: dict[str, Any] = {
        "parentRefs": [{"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE, "sectionName": "http"}],
        "rules": [{"filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}]}],
    }
    if p.host:
        spec["hostnames"] = [p.host]
    return {"apiVersion": GATEWAY_API_VERSION, "kind": "HTTPRoute",
            "metadata": {"name": "https-redirect", "namespace": GATEWAY_NAMESPACE, "labels": _labels(GATEWAY_NAME)},
            "spec": spec}


def _http_route(name: str, namespace: str, p: SampleParams, prefix: str, rewrite: bool,
                listener: str = "http", rewrite_to: str = "/") -> dict[str, Any]:
    rule: dict[str, Any] = {
        "matches": [{"path": {"type": "PathPrefix", "value": prefix}}],
        "backendRefs": [{"name": name, "port": SERVICE_PORT}],
    }
    if rewrite:
        rule["filters"] = [{"type": "URLRewrite", "urlRewrite": {
            "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": rewrite_to}}}]
    spec: dict[str, Any] = {"parentRefs": [{"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE, "sectionName": listener}],
                  "rules": [rule]}
    if p.host:
        spec["hostnames"] = [p.host]
    return {"apiVersion": GATEWAY_API_VERSION, "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": namespace, "labels": _labels(name)}, "spec": spec}


PREVIEW_PATH = "/preview"


def http_routes(p: SampleParams, https: bool = False, preview: bool = False) -> list[dict[str, Any]]:
    """The HTTPRoutes sending /win to api-win (rewritten to /) and /linux to api-linux: one per namespace,
    because a route's backends are Services of its own namespace (cross-namespace refs need a ReferenceGrant). On the
    HTTPS listener with `https`. With `preview` (progressive delivery) also /preview/win and /preview/linux to the
    preview Services, where a new version answers before it is promoted."""
    _check(p)
    listener = "https" if https else "http"
    routes = [_http_route(WIN_APP, p.win_namespace, p, WIN_PATH, rewrite=True, listener=listener),
              _http_route(LINUX_APP, p.linux_namespace, p, LINUX_PATH, rewrite=False, listener=listener)]
    if preview:
        suffix = progressive_delivery.PREVIEW_SUFFIX
        routes += [_http_route(WIN_APP + suffix, p.win_namespace, p, PREVIEW_PATH + WIN_PATH, rewrite=True,
                               listener=listener),
                   _http_route(LINUX_APP + suffix, p.linux_namespace, p, PREVIEW_PATH + LINUX_PATH, rewrite=True,
                               listener=listener, rewrite_to=LINUX_PATH)]
    return routes



# --- autoscaling ----------------------------------------------------------------------------------------------

HPA_API_VERSION = "autoscaling/v2"


def scale_target(name: str, rollout: bool) -> dict[str, str]:
    """What an autoscaler scales: the sample's Deployment, or with progressive delivery the Rollout that took it over
    (its scale subresource, docs/features/hpa-support.md)."""
    if rollout:
        return {"apiVersion": progressive_delivery.API_VERSION, "kind": "Rollout", "name": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}


# A sample's autoscaler is a HorizontalPodAutoscaler on CPU, or with customMetrics a KEDA ScaledObject whose HPA KEDA
# makes under the same name. Switching between them must delete the one before making the other, in both directions:
# KEDA's webhook refuses a ScaledObject for a workload another HPA scales (apis/keda/v1alpha1/scaledobject_webhook.go
# verifyHpas at v2.20.2), and a new HPA of the ScaledObject's HPA's name fails as "already exists" while KEDA's is
# there (pulumi-kubernetes creates, it does not upsert: provider/pkg/await/await.go). Pulumi makes the new one first
# unless the two are one resource: the component aliases each to the other kind and replaces it, deleting first, when
# these fields change (pulumi-kubernetes' Diff replaces on a name or namespace change only, provider.go). Deleting the
# ScaledObject takes KEDA's HPA with it (its ownerReference with blockOwnerDeletion, controllers/keda/hpa.go; Pulumi's
# foreground delete returns once the owner is gone).
AUTOSCALER_KIND_FIELDS = ("apiVersion", "kind")


def other_autoscaler(scaler: dict[str, Any]) -> dict[str, Any]:
    """The same autoscaler as the other kind: the identity it had, or will have, when customMetrics is switched."""
    kinds = {"HorizontalPodAutoscaler": (custom_metrics.SCALED_OBJECT_API_VERSION, "ScaledObject"),
             "ScaledObject": (HPA_API_VERSION, "HorizontalPodAutoscaler")}
    require(scaler["kind"] in kinds, f"{scaler['kind']} is not an autoscaler")
    api_version, kind = kinds[scaler["kind"]]
    meta = scaler["metadata"]
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}


def _cpu_autoscaler(name: str, namespace: str, low: int, high: int, utilization: int, rollout: bool) -> dict[str, Any]:
    """A HorizontalPodAutoscaler keeping the Deployment's average CPU at ``utilization`` percent of its request (the
    pods state requests: WIN_RESOURCES, LINUX_RESOURCES; "the HorizontalPodAutoscaler ... will not take any action
    for that metric" without them, kubernetes.io HPA walkthrough)."""
    return {
        "apiVersion": HPA_API_VERSION,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(name)},
        "spec": {
            "scaleTargetRef": scale_target(name, rollout),
            "minReplicas": low,
            "maxReplicas": high,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": utilization}}}],
        },
    }


def autoscalers(p: SampleParams, a: SampleAutoscaling, rollout: bool = False) -> list[dict[str, Any]]:
    """One autoscaler per sample, between its replicas and its maximum: api-win on CPU (a HorizontalPodAutoscaler), and
    api-linux on CPU, or with ``a.linux_request_rate`` on CPU and on its route's request rate (a KEDA ScaledObject,
    which makes the one HorizontalPodAutoscaler). Both work the same for Windows and Linux pods: the metrics come from
    the kubelets (metrics-server) and from the Gateway on Linux nodes."""
    _check(p)
    require(a.win_max_replicas >= p.win_replicas and a.linux_max_replicas >= p.linux_replicas,
            "an autoscaler's maximum is below its Deployment's replicas")
    require(10 <= a.cpu_utilization <= 100, f"CPU target {a.cpu_utilization}% is outside 10-100")
    win = _cpu_autoscaler(WIN_APP, p.win_namespace, p.win_replicas, a.win_max_replicas, a.cpu_utilization, rollout)
    if a.linux_request_rate is None:
        linux = _cpu_autoscaler(LINUX_APP, p.linux_namespace, p.linux_replicas, a.linux_max_replicas, a.cpu_utilization,
                                rollout)
    else:
        linux = custom_metrics.scaled_object(LINUX_APP, p.linux_namespace, _labels(LINUX_APP), p.linux_replicas,
                                             a.linux_max_replicas, a.cpu_utilization, a.linux_request_rate.prometheus,
                                             a.linux_request_rate.requests_per_second, scale_target(LINUX_APP, rollout))
    return [win, linux]


# --- footprint ----------------------------------------------------------------------------------------------

def peak_footprint(deployment: dict[str, Any]) -> dict[str, Decimal]:
    """What a Deployment holds against a ResourceQuota at the peak of a rollout (replicas + maxSurge pods):
    ``pods``, ``requests.cpu``, ``requests.memory``, ``limits.cpu``, ``limits.memory``."""
    spec = deployment["spec"]
    surge = spec.get("strategy", {}).get("rollingUpdate", {}).get("maxSurge", 1)
    require(isinstance(surge, int), "peak_footprint needs an absolute maxSurge")
    pods = spec["replicas"] + surge
    totals = {"pods": Decimal(pods)}
    for kind in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            per_pod = sum(parse_quantity(c["resources"][kind][resource]) for c in spec["template"]["spec"]["containers"])
            totals[f"{kind}.{resource}"] = per_pod * pods
    return totals
