"""Renders the sample workloads that prove the hybrid cluster end to end: ``api-win`` (ASP.NET Core on
Windows Server 2022 nodes), ``api-linux`` (a Java 17 Spring Boot API on the Linux nodes), one Ingress per
namespace routing ``/win`` and ``/linux`` to them, and the values for the ingress-nginx Helm chart that
serves those Ingresses from Linux nodes.

This module owns ``SampleParams``, the ingress-nginx values and the render
functions. It is pure: no Pulumi, no ``config`` imports; plain Kubernetes objects / Helm values out.
Whether the samples are deployed at all is the caller's switch.

Design decisions, with their sources:

* Images (pinned in config.compat as SAMPLE_WINDOWS_IMAGE and SAMPLE_LINUX_IMAGE). The Windows one is the ASP.NET Core sample from dotnet/dotnet-docker
  (samples/aspnetapp: Kestrel on port 8080, ``/healthz`` mapped with ``MapHealthChecks`` in
  samples/aspnetapp/aspnetapp/Program.cs) built on ``aspnet:10.0-nanoserver-ltsc2022``
  (samples/aspnetapp/Dockerfile.nanoserver), which runs as ``ContainerUser`` (``USER ContainerUser`` in
  src/runtime/10.0/nanoserver-ltsc2022/amd64/Dockerfile). The repository's tag table publishes the sample
  as ``aspnetapp-<major>-nanoserver-ltsc2022`` (README.samples.md: ``aspnetapp-9.0-nanoserver-ltsc2022``,
  ``aspnetapp-8.0-nanoserver-ltsc2022``); .NET 8 and 9 both left support on 2026-11-10
  (https://devblogs.microsoft.com/dotnet/dotnet-sts-releases-supported-for-24-months), so the default is
  the .NET 10 tag of that same scheme. The Linux one is spring-petclinic-rest
  (github.com/spring-petclinic/spring-petclinic-rest: a Spring Boot REST API with
  spring-boot-starter-actuator, in-memory database, port 9966, published to Docker Hub with Jib as
  ``springcommunity/spring-petclinic-rest:<version>``, readme "With Docker"; the 3.x line is built on
  Spring Boot 3 and later, whose Java baseline is 17). Tag 3.2.1 is the release in use in published
  manifests; its actuator health endpoint sits under the servlet context path.
* OS declaration. Every pod sets ``spec.os.name`` (https://kubernetes.io/docs/concepts/windows/user-guide/:
  the scheduler ignores it, it selects the OS-specific validation and PSA rules). Windows pods schedule
  only through ``runtimeClassName`` (the RuntimeClass carries node selector and taint toleration, see
  render/scheduling.py); Linux pods use ``nodeSelector: kubernetes.io/os: linux`` and a required
  nodeAffinity on ``node.os.distro``, and carry no toleration, so the Windows taint keeps them off Windows.
* Security context. Both pods meet the ``restricted`` Pod Security Standard. Linux: runAsNonRoot with an
  explicit non-zero UID (the Jib image has no USER, so the kubelet could not prove non-root otherwise),
  seccomp RuntimeDefault, allowPrivilegeEscalation false, all capabilities dropped, read-only root with
  an emptyDir for /tmp. Windows: runAsNonRoot with ``runAsUserName: ContainerUser`` and nothing else -
  the Linux-only fields are forbidden by API validation when ``spec.os.name`` is windows (v1.36 schema
  field descriptions) and skipped by PSA for such pods (render/scheduling.py has the sources).
* Topology spread over zones, ``maxSkew: 1`` with ``whenUnsatisfiable: DoNotSchedule``: 4 (or 6) replicas
  over hk-1/hk-2 must split evenly, and ``ScheduleAnyway`` would only prefer that. To keep a zone outage
  from blocking rescheduling into the surviving zone, ``nodeTaintsPolicy: Honor`` drops nodes whose
  taints the pod does not tolerate from the skew computation (the node lifecycle controller taints
  unreachable/not-ready nodes; field description in the v1.36 schema, and
  https://kubernetes.io/docs/concepts/architecture/nodes/ on condition taints). ``nodeAffinityPolicy``
  stays at its default Honor, so only zones that have nodes of the right OS/build count, and
  ``matchLabelKeys: [pod-template-hash]`` spreads each ReplicaSet revision on its own during a rollout.
* Probes. A startupProbe holds liveness and readiness off until the app first answers, so slow starts
  (a Windows container's first start, a JVM warming up) never count as failures; the budget is
  generous on Windows (5 minutes) where a cold nanoserver start and HNS endpoint setup are slow.
  Spring Boot's liveness/readiness health groups are enabled explicitly
  (``management.endpoint.health.probes.enabled``, Spring Boot reference "Kubernetes Probes") instead of
  relying on Kubernetes auto-detection.
* Readiness ordering needs no ``pulumi.com/waitFor`` here: pulumi-kubernetes already waits for a
  Deployment to become Available and for an Ingress to get an address and live endpoints
  (provider await logic; @pulumi/kubernetes apps/v1 Deployment doc comment, provider/pkg/await/ingress.go).
  The Windows Deployment only raises the await timeout with ``pulumi.com/timeoutSeconds`` (default 10
  minutes for Deployments) and its ``progressDeadlineSeconds``: the first pull of a Windows image through
  the registry mirror takes long.
* Ingress. An Ingress can only name Services in its own namespace, and api-win and api-linux live in
  different namespaces, so there is one Ingress per namespace, same class and host; ingress-nginx merges
  rules for one host. ``/win`` needs a rewrite: the ASP.NET Core sample serves at ``/`` and has no
  path-base setting, and ingress-nginx only rewrites with a regex capture
  (``nginx.ingress.kubernetes.io/rewrite-target: /$2``, https://kubernetes.github.io/ingress-nginx/examples/rewrite/),
  which its admission webhook refuses under ``pathType: Prefix`` (kubernetes/ingress-nginx#10281, strict
  path validation), so that path is ``ImplementationSpecific``. ``/linux`` needs no rewrite: the Spring
  app is told to serve under /linux (``SERVER_SERVLET_CONTEXTPATH``, Spring Boot relaxed binding of
  ``server.servlet.context-path`` from environment variables: dots to underscores, dashes removed,
  upper case), so it stays ``Prefix``.
* ingress-nginx. Upstream retired the project: best-effort maintenance ended in March 2026 and there are
  no releases after that (Kubernetes SIG Network / SRC announcement of 2025-11-11). Its last line,
  controller v1.15 / chart 4.15, is the first to support Kubernetes 1.35 (maintainer answer in
  kubernetes/ingress-nginx#14428) and v1.15.0 shipped on 2026-03-10 with the CVE-2026-3288 fix
  (kubernetes/kubernetes#137560). No upstream release lists Kubernetes 1.36; the chart's ``kubeVersion``
  (">=1.21.0-0") is only a technical floor (kubernetes/ingress-nginx#13217), so Helm installs it on 1.36
  without that support claim. The pin is the last release, with that caveat.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from render.checks import DNS_LABEL, ROUTE_HOST, require
from render.scheduling import (
    DISTRO_LABEL,
    OS_LABEL,
    ZONE_LABEL,
    parse_quantity,
)


INGRESS_NAMESPACE = "ingress-nginx"

WIN_APP = "api-win"
LINUX_APP = "api-linux"
SAMPLE_PART_OF = "hybrid-samples"

WIN_HTTP_PORT = 8080        # ASPNETCORE_HTTP_PORTS in the .NET images (runtime Dockerfile above)
LINUX_HTTP_PORT = 9966      # server.port in spring-petclinic-rest src/main/resources/application.properties
LINUX_PATH = "/linux"
WIN_PATH = "/win"
SERVICE_PORT = 80

# Sizing: requests are what the scheduler and the namespace quota count; limits leave headroom for a
# garbage-collected runtime under load. Sized for samples, not measured.
WIN_RESOURCES = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
LINUX_RESOURCES = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "768Mi"}}
LINUX_RUN_AS = 10001         # any non-zero UID: the image's files are world-readable (Jib layers)

# ingress-nginx node ports: fixed so the datacenter's upstream load balancer / firewall rules can point at
# them; both inside the default --service-node-port-range 30000-32767 (kube-apiserver reference).
INGRESS_HTTP_NODE_PORT = 30080
INGRESS_HTTPS_NODE_PORT = 30443

# The chart's values that place a pod, from charts/ingress-nginx values.yaml (README "Values" table):
# the controller, the admission webhook's create/patch Jobs (one nodeSelector for both) and the
# optional default backend.
INGRESS_NGINX_NODE_SELECTOR_PATHS = (
    ("controller", "nodeSelector"),
    ("controller", "admissionWebhooks", "patch", "nodeSelector"),
    ("defaultBackend", "nodeSelector"),
)

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
    ingress_class: str = "nginx"
    host: str | None = None




def _check(p: SampleParams) -> None:
    for name in (p.win_namespace, p.linux_namespace, p.win_runtime_class, p.ingress_class):
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


def _zone_spread(app: str, zone_key: str) -> list[dict]:
    return [{
        "maxSkew": 1,
        "topologyKey": zone_key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
        "matchLabelKeys": ["pod-template-hash"],
        "nodeTaintsPolicy": "Honor",
    }]


def _http_probe(path: str, *, period: int, timeout: int, failures: int, initial_delay: int = 0) -> dict:
    probe = {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }
    if initial_delay:
        probe["initialDelaySeconds"] = initial_delay
    return probe


def _service(name: str, namespace: str) -> dict:
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


def _deployment(name: str, namespace: str, replicas: int, pod_spec: dict, annotations: dict | None = None,
                progress_deadline: int | None = None) -> dict:
    metadata: dict = {"name": name, "namespace": namespace, "labels": _labels(name)}
    if annotations:
        metadata["annotations"] = annotations
    spec: dict = {
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


def api_win(p: SampleParams) -> list[dict]:
    """Deployment + Service for the ASP.NET Core sample on Windows Server 2022."""
    _check(p)
    pod_spec = {
        "os": {"name": "windows"},
        "runtimeClassName": p.win_runtime_class,
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
            "startupProbe": _http_probe("/healthz", period=10, timeout=10, failures=30, initial_delay=15),
            "readinessProbe": _http_probe("/healthz", period=10, timeout=5, failures=3),
            "livenessProbe": _http_probe("/healthz", period=20, timeout=10, failures=3),
        }],
    }
    deployment = _deployment(
        WIN_APP, p.win_namespace, p.win_replicas, pod_spec,
        annotations={"pulumi.com/timeoutSeconds": "1800"},
        progress_deadline=1800,
    )
    return [deployment, _service(WIN_APP, p.win_namespace)]


def api_linux(p: SampleParams) -> list[dict]:
    """Deployment + Service for the Java 17 Spring Boot sample on the Linux distros in ``linux_distros``."""
    _check(p)
    health = f"{LINUX_PATH}/actuator/health"
    pod_spec = {
        "os": {"name": "linux"},
        "nodeSelector": {OS_LABEL: "linux"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": DISTRO_LABEL, "operator": "In", "values": list(p.linux_distros)}],
        }]}}},
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
            "startupProbe": _http_probe(f"{health}/liveness", period=5, timeout=3, failures=36, initial_delay=10),
            "readinessProbe": _http_probe(f"{health}/readiness", period=10, timeout=3, failures=3),
            "livenessProbe": _http_probe(f"{health}/liveness", period=10, timeout=3, failures=3),
        }],
        # Tomcat's work directory and the JVM's perf data live under java.io.tmpdir (/tmp).
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}],
    }
    return [_deployment(LINUX_APP, p.linux_namespace, p.linux_replicas, pod_spec), _service(LINUX_APP, p.linux_namespace)]


def _ingress(name: str, namespace: str, p: SampleParams, path: str, path_type: str, annotations: dict) -> dict:
    rule: dict = {"http": {"paths": [{
        "path": path,
        "pathType": path_type,
        "backend": {"service": {"name": name, "port": {"name": "http"}}},
    }]}}
    if p.host:
        rule = {"host": p.host, **rule}
    metadata: dict = {"name": name, "namespace": namespace, "labels": _labels(name)}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": metadata,
        "spec": {"ingressClassName": p.ingress_class, "rules": [rule]},
    }


def ingress(p: SampleParams) -> list[dict]:
    """The Ingresses routing /win to api-win and /linux to api-linux: one per namespace, because an
    Ingress backend can only be a Service in the Ingress's own namespace."""
    _check(p)
    win = _ingress(WIN_APP, p.win_namespace, p, f"{WIN_PATH}(/|$)(.*)", "ImplementationSpecific", {
        "nginx.ingress.kubernetes.io/use-regex": "true",
        "nginx.ingress.kubernetes.io/rewrite-target": "/$2",
    })
    linux = _ingress(LINUX_APP, p.linux_namespace, p, LINUX_PATH, "Prefix", {})
    return [win, linux]


def ingress_nginx_values(zone_key: str = ZONE_LABEL, http_node_port: int = INGRESS_HTTP_NODE_PORT,
                         https_node_port: int = INGRESS_HTTPS_NODE_PORT,
                         node_port_range: tuple[int, int] = (30000, 32767)) -> dict:
    """Values for the ingress-nginx chart: every pod it creates on Linux, two controllers spread over
    zones, a NodePort Service (our datacenter has no LoadBalancer implementation).

    ``node_port_range`` is the cluster's ``--service-node-port-range`` (config ``node_port_range``); the
    API server refuses a Service whose nodePort lies outside it.
    """
    low, high = node_port_range
    for port in (http_node_port, https_node_port):
        require(low <= port <= high, f"node port {port} is outside the cluster's node port range {low}-{high}")
    require(http_node_port != https_node_port, "HTTP and HTTPS need different node ports")
    linux = {OS_LABEL: "linux"}
    small = {"requests": {"cpu": "10m", "memory": "20Mi"}}
    return {
        "controller": {
            "replicaCount": 2,
            "nodeSelector": dict(linux),
            "topologySpreadConstraints": [{
                "maxSkew": 1,
                "topologyKey": zone_key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {
                    "app.kubernetes.io/name": "ingress-nginx",
                    "app.kubernetes.io/component": "controller",
                }},
                "matchLabelKeys": ["pod-template-hash"],
                "nodeTaintsPolicy": "Honor",
            }],
            # The chart's own default requests (values.yaml), stated so the quota-free ingress namespace
            # still schedules with a known footprint.
            "resources": {"requests": {"cpu": "100m", "memory": "90Mi"}},
            "service": {
                "type": "NodePort",
                "nodePorts": {"http": http_node_port, "https": https_node_port},
            },
            "admissionWebhooks": {
                "patch": {"nodeSelector": dict(linux)},
                "createSecretJob": {"resources": small},
                "patchWebhookJob": {"resources": small},
            },
        },
        "defaultBackend": {
            "nodeSelector": dict(linux),
            "resources": small,
        },
    }


# --- footprint ----------------------------------------------------------------------------------------------

def peak_footprint(deployment: dict) -> dict[str, Decimal]:
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
