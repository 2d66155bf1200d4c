"""render/workloads.py: the sample workloads, their Ingresses and the ingress-nginx values.

Every object is validated with kubernetes-validate (strict, the cluster's Kubernetes version). On top of
schema validity the tests check what the issue cares about: each pod declares its OS; RuntimeClass
admission plus the scheduler's node filter (modelled below on a hk-prod-shaped node set) put Windows pods
only on nodes of their build and Linux pods only on Linux workers of the allowed distros; the pods pass
the Pod Security Standard of their namespace; the namespace quota holds a whole rollout.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import kubernetes_validate
import pytest

from config import compat
from render.scheduling import WindowsBuildParams, namespace, runtime_classes
from render.workloads import (
    GATEWAY_CONTROLLER,
    GATEWAY_HTTP_NODE_PORT,
    GATEWAY_NAMESPACE,
    LINUX_PATH,
    SampleParams,
    api_linux,
    api_win,
    envoy_gateway_values,
    gateway_objects,
    http_routes,
    peak_footprint,
)
from vocab.labels import (
    DISTRO_LABEL,
    OS_LABEL,
    WINDOWS_BUILD_LABEL,
    WINDOWS_TAINT_EFFECT,
    WINDOWS_TAINT_KEY,
    WINDOWS_TAINT_VALUE,
    ZONE_LABEL,
)
from vocab.namespaces import NamespaceParams, parse_quantity

K8S = "1.36.0"
BUILDS = [WindowsBuildParams("win2019", "10.0.17763"), WindowsBuildParams("win2022", "10.0.20348")]
RUNTIME_CLASSES = {rc["metadata"]["name"]: rc for rc in runtime_classes(BUILDS)}
PARAMS = SampleParams(win_namespace="win-prod", linux_namespace="linux-prod", win_runtime_class="win2022",
                      win_image=compat.SAMPLE_WINDOWS_IMAGE, linux_image=compat.SAMPLE_LINUX_IMAGE)

# Namespace sizing that holds the samples through a rollout (what the hk-prod config should carry).
NAMESPACES = {
    "win-prod": NamespaceParams("win-prod", "windows", "4", "8Gi", "12", "16Gi", 20, "100m", "128Mi", "500m",
                                "512Mi", "restricted"),
    "linux-prod": NamespaceParams("linux-prod", "linux", "4", "8Gi", "12", "16Gi", 30, "100m", "128Mi", "500m",
                                  "512Mi", "restricted"),
}

SCHEMA_DIR = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.36.0-local-strict"


def objects(params: SampleParams = PARAMS) -> list[dict]:
    return api_win(params) + api_linux(params) + http_routes(params)


def deployments(params: SampleParams = PARAMS) -> list[dict]:
    return [o for o in objects(params) if o["kind"] == "Deployment"]


def pod_spec(deployment: dict) -> dict:
    return deployment["spec"]["template"]["spec"]


def is_windows(deployment: dict) -> bool:
    return pod_spec(deployment)["os"]["name"] == "windows"


def containers(spec: dict) -> list[dict]:
    return spec.get("containers", []) + spec.get("initContainers", []) + spec.get("ephemeralContainers", [])


# --- a model of admission and of the scheduler's node filter -----------------------------------------------------

def node(name, os, zone, distro, build=None, taints=()):
    labels = {"kubernetes.io/os": os, ZONE_LABEL: zone, DISTRO_LABEL: distro}
    if build:
        labels[WINDOWS_BUILD_LABEL] = build
    return {"name": name, "labels": labels, "taints": list(taints)}


CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
WINDOWS_TAINT = {"key": WINDOWS_TAINT_KEY, "value": WINDOWS_TAINT_VALUE, "effect": WINDOWS_TAINT_EFFECT}
NODES = [
    node("hk-cp-01", "linux", "hk-1", "ubuntu22", taints=[CONTROL_PLANE_TAINT]),
    node("hk-cp-02", "linux", "hk-2", "ubuntu22", taints=[CONTROL_PLANE_TAINT]),
    node("hk-lnx-01", "linux", "hk-1", "ubuntu22"),
    node("hk-lnx-02", "linux", "hk-2", "rocky9"),
    node("hk-lnx-03", "linux", "hk-2", "centos7"),
    node("hk-win-01", "windows", "hk-1", "win2022", "10.0.20348", [WINDOWS_TAINT]),
    node("hk-win-02", "windows", "hk-2", "win2022", "10.0.20348", [WINDOWS_TAINT]),
    node("hk-win-03", "windows", "hk-1", "win2019", "10.0.17763", [WINDOWS_TAINT]),
]


def admitted(spec: dict) -> dict:
    """The pod spec after RuntimeClass admission: the class's nodeSelector merged in (a conflicting key
    rejects the pod) and its tolerations appended (RuntimeClass ``scheduling`` field descriptions)."""
    spec = copy.deepcopy(spec)
    name = spec.get("runtimeClassName")
    if name is None:
        return spec
    assert name in RUNTIME_CLASSES, f"RuntimeClass {name} is not rendered"
    scheduling = RUNTIME_CLASSES[name].get("scheduling", {})
    selector = spec.setdefault("nodeSelector", {})
    for key, value in scheduling.get("nodeSelector", {}).items():
        assert selector.get(key, value) == value, f"pod nodeSelector {key} conflicts with RuntimeClass {name}"
        selector[key] = value
    tolerations = spec.setdefault("tolerations", [])
    tolerations += [t for t in scheduling.get("tolerations", []) if t not in tolerations]
    return spec


def tolerates(toleration: dict, taint: dict) -> bool:
    """corev1 Toleration.ToleratesTaint: key (empty key with Exists matches all), effect (empty matches
    all), and value unless the operator is Exists."""
    operator = toleration.get("operator", "Equal")
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if not toleration.get("key") and operator != "Exists":
        return False
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    return operator == "Exists" or toleration.get("value", "") == taint.get("value", "")


def expression_holds(expression: dict, labels: dict) -> bool:
    key, op, values = expression["key"], expression["operator"], expression.get("values", [])
    return {"In": lambda: labels.get(key) in values, "NotIn": lambda: labels.get(key) not in values,
            "Exists": lambda: key in labels, "DoesNotExist": lambda: key not in labels}[op]()


def fits(spec: dict, candidate: dict) -> bool:
    labels = candidate["labels"]
    if any(labels.get(k) != v for k, v in spec.get("nodeSelector", {}).items()):
        return False
    required = spec.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required and not any(all(expression_holds(e, labels) for e in term.get("matchExpressions", []))
                            for term in required["nodeSelectorTerms"]):
        return False
    return all(any(tolerates(t, taint) for t in spec.get("tolerations", []))
               for taint in candidate["taints"] if taint["effect"] in ("NoSchedule", "NoExecute"))


def placement(deployment: dict) -> set[str]:
    spec = admitted(pod_spec(deployment))
    return {n["name"] for n in NODES if fits(spec, n)}


# --- a model of Pod Security Admission (kubernetes staging/src/k8s.io/pod-security-admission/policy) -----------

BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def psa_violations(spec: dict, level: str) -> list[str]:
    """The checks of the baseline and restricted profiles, with the v1.25+ Windows exemptions
    (allowPrivilegeEscalation, seccomp, capabilities are not checked for spec.os.name=windows)."""
    if level == "privileged":
        return []
    found: list[str] = []
    windows = spec.get("os", {}).get("name") == "windows"
    pod_sc = spec.get("securityContext", {})
    every = containers(spec)
    contexts = [pod_sc] + [c.get("securityContext", {}) for c in every]
    # baseline
    found += [f"host namespace {k}" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    found += ["hostProcess" for sc in contexts if sc.get("windowsOptions", {}).get("hostProcess")]
    found += ["privileged" for sc in contexts[1:] if sc.get("privileged")]
    found += ["capabilities.add" for sc in contexts[1:]
              if set(sc.get("capabilities", {}).get("add", [])) - BASELINE_CAPABILITIES]
    found += ["hostPath volume" for v in spec.get("volumes", []) if "hostPath" in v]
    found += ["hostPort" for c in every for p in c.get("ports", []) if p.get("hostPort")]
    found += ["seccomp Unconfined" for sc in contexts if sc.get("seccompProfile", {}).get("type") == "Unconfined"]
    found += ["procMount" for sc in contexts[1:] if sc.get("procMount", "Default") != "Default"]
    found += ["sysctls" for _ in pod_sc.get("sysctls", [])]
    found += ["seLinuxOptions" for sc in contexts if sc.get("seLinuxOptions")]
    if level == "baseline":
        return found
    # restricted
    found += [f"volume type {set(v) - {'name'}}" for v in spec.get("volumes", []) if not (set(v) - {"name"}) <= RESTRICTED_VOLUMES]
    pod_non_root = pod_sc.get("runAsNonRoot")
    if pod_non_root is False or any(c.get("securityContext", {}).get("runAsNonRoot") is False for c in every):
        found.append("runAsNonRoot=false")
    if pod_non_root is not True and not all(c.get("securityContext", {}).get("runAsNonRoot") for c in every):
        found.append("runAsNonRoot unset")
    found += ["runAsUser=0" for sc in contexts if sc.get("runAsUser") == 0]
    if not windows:
        found += [f"{c['name']}: allowPrivilegeEscalation" for c in every
                  if c.get("securityContext", {}).get("allowPrivilegeEscalation") is not False]
        pod_seccomp = pod_sc.get("seccompProfile", {}).get("type") in ("RuntimeDefault", "Localhost")
        found += [f"{c['name']}: seccomp" for c in every
                  if not pod_seccomp
                  and c.get("securityContext", {}).get("seccompProfile", {}).get("type") not in ("RuntimeDefault", "Localhost")]
        for c in every:
            caps = c.get("securityContext", {}).get("capabilities", {})
            if "ALL" not in caps.get("drop", []):
                found.append(f"{c['name']}: capabilities.drop ALL")
            if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
                found.append(f"{c['name']}: capabilities.add")
    return found


def fields_forbidden_for(os_name: str) -> dict[str, set[str]]:
    """Per security-context schema, the fields the v1.36 API refuses when spec.os.name is ``os_name``
    ("Note that this field cannot be set when spec.os.name is ..." in the field descriptions)."""
    forbidden = {}
    for schema in ("podsecuritycontext-v1.json", "securitycontext-v1.json"):
        properties = json.loads((SCHEMA_DIR / schema).read_text())["properties"]
        forbidden[schema] = {name for name, prop in properties.items()
                             if f"cannot be set when spec.os.name is {os_name}" in prop.get("description", "")}
    assert forbidden["securitycontext-v1.json"], "schema descriptions changed; the OS field rule is not found"
    return forbidden


# --- schema validity -------------------------------------------------------------------------------------------

# The routing layer's custom resources (Gateway API GatewayClass/Gateway/HTTPRoute, Envoy Gateway's
# EnvoyProxy) are not built-in kinds: tests/program/test_custom_resources.py validates them strictly against their
# vendored CRD schemas. Every built-in object is validated strictly here.
ROUTING_KINDS = {("gateway.networking.k8s.io/v1", "GatewayClass"), ("gateway.networking.k8s.io/v1", "Gateway"),
                 ("gateway.networking.k8s.io/v1", "HTTPRoute"), ("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy")}


@pytest.mark.parametrize("obj", [o for o in objects() if (o["apiVersion"], o["kind"]) not in ROUTING_KINDS],
                         ids=lambda o: f"{o['kind']}/{o['metadata']['namespace']}/{o['metadata']['name']}")
def test_every_object_passes_strict_validation(obj):
    kubernetes_validate.validate(obj, K8S, strict=True)


def test_the_routing_objects_use_only_the_fields_these_tests_check():
    """Without a CRD schema, a typo would pass unseen: each routing object's keys are exactly those the tests
    below assert, field names as the Gateway API v1 and Envoy Gateway v1alpha1 references spell them."""
    def keys(value, path=()):
        if isinstance(value, dict):
            for key, item in value.items():
                yield ".".join(map(str, (*path, key)))
                yield from keys(item, (*path, key))
        elif isinstance(value, list):
            for item in value:
                yield from keys(item, (*path, "[]"))
    route_keys = {k for r in http_routes(SampleParams(**{**PARAMS.__dict__, "host": "api.hk.example.com"}))
                  for k in keys(r["spec"], ("spec",))}
    assert route_keys == {
        "spec.parentRefs", "spec.parentRefs.[].name", "spec.parentRefs.[].namespace", "spec.parentRefs.[].sectionName",
        "spec.rules", "spec.rules.[].matches", "spec.rules.[].matches.[].path", "spec.rules.[].matches.[].path.type",
        "spec.rules.[].matches.[].path.value", "spec.rules.[].backendRefs", "spec.rules.[].backendRefs.[].name",
        "spec.rules.[].backendRefs.[].port", "spec.rules.[].filters", "spec.rules.[].filters.[].type",
        "spec.rules.[].filters.[].urlRewrite", "spec.rules.[].filters.[].urlRewrite.path",
        "spec.rules.[].filters.[].urlRewrite.path.type", "spec.rules.[].filters.[].urlRewrite.path.replacePrefixMatch",
        "spec.hostnames"}
    envoy_proxy, gateway_class, gateway = gateway_objects(PARAMS)
    assert set(keys(gateway["spec"], ("spec",))) >= {"spec.gatewayClassName", "spec.listeners", "spec.listeners.[].name",
                                                     "spec.listeners.[].protocol", "spec.listeners.[].port",
                                                     "spec.listeners.[].allowedRoutes"}
    assert set(gateway_class["spec"]) == {"controllerName", "parametersRef"}
    assert set(envoy_proxy["spec"]["provider"]["kubernetes"]) == {"envoyDeployment", "envoyService"}


def test_strict_validation_catches_a_misspelt_field():
    broken = copy.deepcopy(deployments()[0])
    broken["spec"]["template"]["spec"]["runtimeClass"] = broken["spec"]["template"]["spec"].pop("runtimeClassName")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S, strict=True)


# --- OS declaration and placement ------------------------------------------------------------------------------

def test_every_workload_declares_its_os():
    for deployment in deployments():
        spec = pod_spec(deployment)
        if is_windows(deployment):
            assert spec["runtimeClassName"] in RUNTIME_CLASSES
            assert RUNTIME_CLASSES[spec["runtimeClassName"]]["scheduling"]["nodeSelector"]["kubernetes.io/os"] == "windows"
        else:
            assert spec["os"]["name"] == "linux"
            assert spec["nodeSelector"]["kubernetes.io/os"] == "linux"


def test_windows_pods_tolerate_the_windows_taint_through_their_runtime_class_and_linux_pods_do_not():
    for deployment in deployments():
        spec = admitted(pod_spec(deployment))
        tolerated = any(tolerates(t, WINDOWS_TAINT) for t in spec.get("tolerations", []))
        assert tolerated == is_windows(deployment), deployment["metadata"]["name"]
        if is_windows(deployment):
            # Nothing on the pod itself: the RuntimeClass is the one place that knows the taint.
            assert "tolerations" not in pod_spec(deployment)


def test_api_win_lands_only_on_nodes_of_its_windows_build():
    [win] = [d for d in deployments() if is_windows(d)]
    assert placement(win) == {"hk-win-01", "hk-win-02"}


def test_api_linux_lands_only_on_linux_workers_of_the_allowed_distros():
    [linux] = [d for d in deployments() if not is_windows(d)]
    assert placement(linux) == {"hk-lnx-01", "hk-lnx-02"}
    narrowed = SampleParams(**{**PARAMS.__dict__, "linux_distros": ("rocky9",)})
    [linux] = [d for d in deployments(narrowed) if not is_windows(d)]
    assert placement(linux) == {"hk-lnx-02"}


def test_a_pod_without_the_runtime_class_would_not_reach_windows_nodes():
    # The negative that makes the positive meaningful: the taint alone keeps untolerating pods off.
    [win] = [d for d in deployments() if is_windows(d)]
    bare = copy.deepcopy(win)
    del bare["spec"]["template"]["spec"]["runtimeClassName"]
    assert placement(bare) <= {"hk-lnx-01", "hk-lnx-02", "hk-lnx-03"}


@pytest.mark.parametrize("image", ["mcr.microsoft.com/dotnet/samples:aspnetapp-9.0-nanoserver-1809",
                                   "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2019"])
def test_windows_image_must_match_the_runtime_class_build(image):
    with pytest.raises(ValueError, match="2019"):
        api_win(SampleParams(**{**PARAMS.__dict__, "win_image": image}))
    assert "ltsc2022" in compat.SAMPLE_WINDOWS_IMAGE
    # The same 2019 image is fine under the 2019 class.
    assert api_win(SampleParams(**{**PARAMS.__dict__, "win_image": image, "win_runtime_class": "win2019"}))


@pytest.mark.parametrize("image", ["mcr.microsoft.com/dotnet/samples", "docker.io/library/nginx:latest", ""])
def test_images_must_be_pinned(image):
    with pytest.raises(ValueError, match="pinned"):
        api_linux(SampleParams(**{**PARAMS.__dict__, "linux_image": image}))


def test_spread_over_zones_with_max_skew_one_selects_the_pods_own_labels():
    for deployment in deployments():
        [constraint] = pod_spec(deployment)["topologySpreadConstraints"]
        assert constraint["maxSkew"] == 1 and constraint["topologyKey"] == ZONE_LABEL
        assert constraint["whenUnsatisfiable"] == "DoNotSchedule"
        assert constraint["nodeTaintsPolicy"] == "Honor"
        selector = constraint["labelSelector"]["matchLabels"]
        assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_replicas():
    counts = {d["metadata"]["name"]: d["spec"]["replicas"] for d in deployments()}
    assert counts == {"api-win": 4, "api-linux": 6}


# --- security ---------------------------------------------------------------------------------------------------

def test_pods_comply_with_their_namespaces_pod_security_level():
    for deployment in deployments():
        ns = namespace(NAMESPACES[deployment["metadata"]["namespace"]])[0]
        level = ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        assert psa_violations(pod_spec(deployment), level) == [], deployment["metadata"]["name"]
    # Linux pods must meet restricted whatever a namespace says.
    [linux] = [d for d in deployments() if not is_windows(d)]
    assert psa_violations(pod_spec(linux), "restricted") == []


def test_linux_pod_sets_the_fields_restricted_requires():
    [linux] = [d for d in deployments() if not is_windows(d)]
    spec = pod_spec(linux)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] > 0
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in spec["containers"]:
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_psa_model_rejects_what_the_profiles_reject():
    [win] = [d for d in deployments() if is_windows(d)]
    [linux] = [d for d in deployments() if not is_windows(d)]
    no_root_check = copy.deepcopy(pod_spec(win))
    del no_root_check["securityContext"]["runAsNonRoot"]
    assert "runAsNonRoot unset" in psa_violations(no_root_check, "restricted")
    no_seccomp = copy.deepcopy(pod_spec(linux))
    del no_seccomp["securityContext"]["seccompProfile"]
    assert "api: seccomp" in psa_violations(no_seccomp, "restricted")
    host_process = copy.deepcopy(pod_spec(win))
    host_process["securityContext"]["windowsOptions"]["hostProcess"] = True
    assert "hostProcess" in psa_violations(host_process, "baseline")


def test_windows_pods_set_no_field_the_api_forbids_for_windows_and_run_as_container_user():
    forbidden = fields_forbidden_for("windows")
    linux_only = fields_forbidden_for("linux")
    for deployment in deployments():
        spec = pod_spec(deployment)
        pod_sc = spec.get("securityContext", {})
        banned = forbidden if is_windows(deployment) else linux_only
        assert not set(pod_sc) & banned["podsecuritycontext-v1.json"], deployment["metadata"]["name"]
        for c in containers(spec):
            assert not set(c.get("securityContext", {})) & banned["securitycontext-v1.json"], c["name"]
    [win] = [d for d in deployments() if is_windows(d)]
    # The kubelet's runAsNonRoot check on Windows refuses ContainerAdministrator only.
    assert pod_spec(win)["securityContext"]["windowsOptions"]["runAsUserName"] == "ContainerUser"


# --- probes, services, quota -----------------------------------------------------------------------------------

def test_probes_suit_each_os():
    for deployment in deployments():
        [c] = pod_spec(deployment)["containers"]
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[kind]["httpGet"]["port"] == "http"
        startup = c["startupProbe"]
        budget = startup.get("initialDelaySeconds", 0) + startup["periodSeconds"] * startup["failureThreshold"]
        if is_windows(deployment):
            assert budget >= 300 and all(c[k]["timeoutSeconds"] >= 5 for k in ("startupProbe", "readinessProbe", "livenessProbe"))
            assert {c[k]["httpGet"]["path"] for k in ("startupProbe", "readinessProbe", "livenessProbe")} == {"/healthz"}
        else:
            assert budget >= 120
            assert all(c[k]["httpGet"]["path"].startswith(LINUX_PATH + "/actuator/health") for k in ("readinessProbe", "livenessProbe"))


def test_every_container_states_requests_and_limits():
    for deployment in deployments():
        for c in pod_spec(deployment)["containers"]:
            for kind in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    parse_quantity(c["resources"][kind][resource])
            assert parse_quantity(c["resources"]["requests"]["memory"]) <= parse_quantity(c["resources"]["limits"]["memory"])


def test_services_select_their_pods_and_target_a_named_container_port():
    objs = objects()
    for deployment in deployments():
        [service] = [o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == deployment["metadata"]["name"]]
        assert service["metadata"]["namespace"] == deployment["metadata"]["namespace"]
        assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
        port_names = {p["name"] for c in pod_spec(deployment)["containers"] for p in c["ports"]}
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= port_names


def test_namespace_quota_holds_a_whole_rollout():
    for deployment in deployments():
        _, quota, _ = namespace(NAMESPACES[deployment["metadata"]["namespace"]])
        peak = peak_footprint(deployment)
        assert peak["pods"] == deployment["spec"]["replicas"] + 1
        for key, used in peak.items():
            assert used <= parse_quantity(quota["spec"]["hard"][key]), f"{deployment['metadata']['name']}: {key}"


def test_windows_deployment_waits_long_enough_for_a_windows_pull():
    [win] = [d for d in deployments() if is_windows(d)]
    assert int(win["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) >= win["spec"]["progressDeadlineSeconds"] >= 600


# --- Gateway API routing ---------------------------------------------------------------------------------------

def route_table(params: SampleParams = PARAMS) -> dict[str, tuple[dict, dict]]:
    found = {}
    for route in http_routes(params):
        assert route["apiVersion"] == "gateway.networking.k8s.io/v1" and route["kind"] == "HTTPRoute"
        assert route.get("spec", {}).get("hostnames") == ([params.host] if params.host else None)
        for rule in route["spec"]["rules"]:
            for match in rule["matches"]:
                found[match["path"]["value"]] = (route, rule)
    return found


def test_each_route_sends_its_prefix_to_the_service_in_its_own_namespace():
    objs = objects()
    services = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objs if o["kind"] == "Service"}
    table = route_table()
    assert set(table) == {"/win", LINUX_PATH}
    for route, rule in table.values():
        [backend] = rule["backendRefs"]
        service = services[(route["metadata"]["namespace"], backend["name"])]
        assert backend["port"] in {p["port"] for p in service["spec"]["ports"]}
        assert all(m["path"]["type"] == "PathPrefix" for m in rule["matches"])
        # Attached to the samples Gateway's HTTP listener.
        assert route["spec"]["parentRefs"] == [{"name": "samples", "namespace": GATEWAY_NAMESPACE, "sectionName": "http"}]
    assert table[LINUX_PATH][0]["metadata"]["namespace"] == "linux-prod"


def test_win_path_is_rewritten_to_the_apps_root_with_the_standard_filter():
    route, rule = route_table()["/win"]
    assert route["metadata"]["namespace"] == "win-prod" and rule["backendRefs"][0]["name"] == "api-win"
    assert rule["filters"] == [{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}]


def test_linux_app_serves_under_the_prefix_it_is_routed_by():
    [linux] = [d for d in deployments() if not is_windows(d)]
    env = {e["name"]: e["value"] for e in pod_spec(linux)["containers"][0]["env"]}
    assert env["SERVER_SERVLET_CONTEXTPATH"] == LINUX_PATH
    assert "filters" not in route_table()[LINUX_PATH][1]


def test_host_is_applied_to_the_routes_and_the_listener():
    params = SampleParams(**{**PARAMS.__dict__, "host": "api.hk-prod.example.com"})
    assert {tuple(r["spec"]["hostnames"]) for r, _ in route_table(params).values()} == {("api.hk-prod.example.com",)}
    gateway = next(o for o in gateway_objects(params) if o["kind"] == "Gateway")
    assert gateway["spec"]["listeners"][0]["hostname"] == "api.hk-prod.example.com"


def test_the_gateway_admits_routes_from_the_sample_namespaces_only_and_is_awaited_until_programmed():
    envoy_proxy, gateway_class, gateway = gateway_objects(PARAMS)
    assert gateway_class["spec"]["controllerName"] == GATEWAY_CONTROLLER == "gateway.envoyproxy.io/gatewayclass-controller"
    assert gateway_class["spec"]["parametersRef"] == {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy",
                                                      "name": envoy_proxy["metadata"]["name"],
                                                      "namespace": envoy_proxy["metadata"]["namespace"]}
    assert "namespace" not in gateway_class["metadata"]   # cluster-scoped
    [listener] = gateway["spec"]["listeners"]
    assert listener["allowedRoutes"]["namespaces"] == {"from": "Selector", "selector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["linux-prod", "win-prod"]}]}}
    assert gateway["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Programmed"
    assert gateway["spec"]["gatewayClassName"] == gateway_class["metadata"]["name"]


def test_the_envoy_data_plane_runs_on_linux_nodes_behind_a_fixed_node_port():
    envoy_proxy = gateway_objects(PARAMS)[0]
    kubernetes = envoy_proxy["spec"]["provider"]["kubernetes"]
    assert envoy_proxy["spec"]["provider"]["type"] == "Kubernetes"
    assert kubernetes["envoyDeployment"]["pod"]["nodeSelector"] == {OS_LABEL: "linux"}
    assert "tolerations" not in kubernetes["envoyDeployment"]["pod"]   # so never on a tainted Windows node
    assert kubernetes["envoyDeployment"]["replicas"] == 2
    service = kubernetes["envoyService"]
    assert service["type"] == "NodePort"
    [port] = service["patch"]["value"]["spec"]["ports"]
    assert port["nodePort"] == GATEWAY_HTTP_NODE_PORT and port["port"] == 80
    with pytest.raises(ValueError, match="node port range"):
        gateway_objects(PARAMS, node_port_range=(31000, 32000))


def test_envoy_gateway_controller_runs_on_linux():
    values = envoy_gateway_values(budget=False)
    terms = values["deployment"]["pod"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": OS_LABEL, "operator": "In", "values": ["linux"]}]}]
    assert values["deployment"]["replicas"] == 2


# --- autoscaling -------------------------------------------------------------------------------------------------

def _autoscaling(request_rate=None):
    from render.workloads import SampleAutoscaling
    return SampleAutoscaling(win_max_replicas=8, linux_max_replicas=10, cpu_utilization=70,
                             linux_request_rate=request_rate)


def test_each_sample_gets_a_cpu_autoscaler_over_its_replicas():
    from render.workloads import autoscalers
    win, linux = autoscalers(PARAMS, _autoscaling())
    deployments_by_name = {d["metadata"]["name"]: d for d in deployments()}
    for hpa, high in ((win, 8), (linux, 10)):
        kubernetes_validate.validate(hpa, K8S, strict=True)
        target = deployments_by_name[hpa["spec"]["scaleTargetRef"]["name"]]
        assert hpa["metadata"]["namespace"] == target["metadata"]["namespace"]
        assert hpa["spec"]["minReplicas"] == target["spec"]["replicas"] and hpa["spec"]["maxReplicas"] == high
        assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]
        # Utilization is of the request: every container states one.
        for c in pod_spec(target)["containers"]:
            assert parse_quantity(c["resources"]["requests"]["cpu"]) > 0


def test_with_keda_api_linux_scales_on_cpu_and_its_routes_request_rate():
    from render.custom_metrics import prometheus_address
    from render.workloads import RequestRate, autoscalers
    from tests.crd_schema import validate_custom_resource
    win, linux = autoscalers(PARAMS, _autoscaling(RequestRate(prometheus_address("monitoring"), 50)))
    assert win["kind"] == "HorizontalPodAutoscaler" and linux["kind"] == "ScaledObject"
    validate_custom_resource(linux, "keda.sh_v1alpha1_ScaledObject.json")
    spec = linux["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (6, 10)
    # KEDA's HPA under the sample's name, as its CPU autoscaler; never an adoption: the program deletes the one before it
    # makes the other (tests/program/test_autoscaler_handover.py).
    assert "annotations" not in linux["metadata"]
    assert spec["advanced"]["horizontalPodAutoscalerConfig"]["name"] == "api-linux"
    cpu, rate = spec["triggers"]
    assert cpu == {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}
    assert rate["type"] == "prometheus" and rate["metadata"]["threshold"] == "50"
    assert rate["metadata"]["serverAddress"] == "http://prometheus-operated.monitoring.svc:9090"
    # The route that serves api-linux is the one measured (Envoy Gateway's cluster name for it).
    [route] = [r for r in http_routes(PARAMS) if r["metadata"]["name"] == "api-linux"]
    assert f'httproute/{route["metadata"]["namespace"]}/{route["metadata"]["name"]}/rule/[0-9]+' in rate["metadata"]["query"]


def test_namespace_quota_holds_a_rollout_at_the_autoscalers_maximum():
    from render.workloads import autoscalers
    for hpa in autoscalers(PARAMS, _autoscaling()):
        [deployment] = [d for d in deployments() if d["metadata"]["name"] == hpa["metadata"]["name"]]
        at_max = copy.deepcopy(deployment)
        at_max["spec"]["replicas"] = hpa["spec"]["maxReplicas"]
        _, quota, _ = namespace(NAMESPACES[deployment["metadata"]["namespace"]])
        for key, used in peak_footprint(at_max).items():
            assert used <= parse_quantity(quota["spec"]["hard"][key]), f"{hpa['metadata']['name']}: {key}"


def test_an_autoscaler_below_its_deployment_is_refused():
    from render.workloads import SampleAutoscaling, autoscalers
    with pytest.raises(ValueError, match="maximum is below"):
        autoscalers(PARAMS, SampleAutoscaling(win_max_replicas=3, linux_max_replicas=10, cpu_utilization=70))
