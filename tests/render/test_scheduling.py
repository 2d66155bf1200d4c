"""render/scheduling.py: RuntimeClasses, node label patches and namespaces, validated with
kubernetes-validate against the cluster's Kubernetes version in strict mode."""
from __future__ import annotations

from decimal import Decimal

import kubernetes_validate
import pytest

from render import kubeadm
from render.scheduling import (
    PROCESS_ISOLATION_HANDLER,
    WindowsBuildParams,
    namespace,
    node_labels,
    runtime_class,
    runtime_classes,
    system_namespace,
    windows_toleration,
)
from vocab.labels import (
    CONTROL_PLANE_ROLE_LABEL,
    DISTRO_LABEL,
    WINDOWS_BUILD_LABEL,
    WINDOWS_TAINT_EFFECT,
    WINDOWS_TAINT_KEY,
    WINDOWS_TAINT_VALUE,
    WORKER_ROLE_LABEL,
    ZONE_LABEL,
)
from vocab.namespaces import NamespaceParams, parse_quantity

K8S = "1.36.0"   # hk-prod runs 1.36.4; kubernetes-validate ships schemas per minor
WIN2019 = WindowsBuildParams("win2019", "10.0.17763")
WIN2022 = WindowsBuildParams("win2022", "10.0.20348")


def valid(obj: dict) -> dict:
    kubernetes_validate.validate(obj, K8S, strict=True)
    return obj


def win_prod(**overrides) -> NamespaceParams:
    values = {"name": "win-prod", "os": "windows", "cpu_requests": "4", "memory_requests": "8Gi", "cpu_limits": "12",
                  "memory_limits": "16Gi", "pods": 20, "default_cpu_request": "100m", "default_memory_request": "128Mi",
                  "default_cpu_limit": "500m", "default_memory_limit": "512Mi", "pod_security": "restricted"}
    values.update(overrides)
    return NamespaceParams(**values)


def linux_prod(**overrides) -> NamespaceParams:
    return win_prod(name="linux-prod", os="linux", **overrides)


# --- RuntimeClass ---------------------------------------------------------------------------------------

def test_runtime_class_selects_the_build_and_tolerates_the_windows_taint():
    rc = valid(runtime_class(WIN2022))
    assert rc["metadata"]["name"] == "win2022"
    assert rc["handler"] == PROCESS_ISOLATION_HANDLER == "runhcs-wcow-process"
    assert rc["scheduling"]["nodeSelector"] == {"kubernetes.io/os": "windows", WINDOWS_BUILD_LABEL: "10.0.20348"}
    # The toleration must match the exact taint Windows nodes register with (components/cluster/bootstrap.py).
    taint = {"key": WINDOWS_TAINT_KEY, "value": WINDOWS_TAINT_VALUE, "effect": WINDOWS_TAINT_EFFECT}
    assert taint == {"key": "node-role.kubernetes.io/windows", "value": "true", "effect": "NoSchedule"}
    [toleration] = rc["scheduling"]["tolerations"]
    assert toleration == {**taint, "operator": "Equal"} == windows_toleration()


def test_windows_taint_is_the_one_nodes_register_with():
    from plan.nodes import WINDOWS_TAINT
    assert (WINDOWS_TAINT.key, WINDOWS_TAINT.value, WINDOWS_TAINT.effect) == (
        WINDOWS_TAINT_KEY, WINDOWS_TAINT_VALUE, WINDOWS_TAINT_EFFECT)


def test_runtime_class_builds_match_the_compat_matrix():
    from config import compat
    for key, build in compat.WINDOWS.items():
        rc = valid(runtime_class(WindowsBuildParams(key, build.build)))
        assert rc["scheduling"]["nodeSelector"][WINDOWS_BUILD_LABEL] == build.build


def test_adding_a_windows_build_adds_exactly_one_runtime_class_and_changes_nothing_else():
    before = runtime_classes([WIN2019])
    after = runtime_classes([WIN2022, WIN2019])
    for obj in after:
        valid(obj)
    added = [obj for obj in after if obj not in before]
    assert len(after) == len(before) + 1
    assert [obj["metadata"]["name"] for obj in added] == ["win2022"]
    assert all(obj in after for obj in before)


@pytest.mark.parametrize("builds, message", [
    ([WIN2019, WindowsBuildParams("win2019", "10.0.20348")], "duplicate"),
    ([WIN2019, WindowsBuildParams("ws2019", "10.0.17763")], "share one Windows build"),
    ([WindowsBuildParams("win2022", "20348")], "build number"),
    ([WindowsBuildParams("Win_2022", "10.0.20348")], "DNS-1123"),
])
def test_runtime_classes_reject_bad_builds(builds, message):
    with pytest.raises(ValueError, match=message):
        runtime_classes(builds)


# --- node labels ---------------------------------------------------------------------------------------------

def test_worker_patch_carries_role_zone_and_distro():
    patch = valid(node_labels("hk-win-01", "worker", "hk-2", "win2022", "windows"))
    assert patch["apiVersion"] == "v1" and patch["kind"] == "Node"
    assert patch["metadata"]["name"] == "hk-win-01"
    assert patch["metadata"]["labels"] == {WORKER_ROLE_LABEL: "", ZONE_LABEL: "hk-2", DISTRO_LABEL: "win2022"}


def test_control_plane_patch_does_not_duplicate_kubeadms_role_label():
    patch = valid(node_labels("hk-cp-01", "control-plane", "hk-1", "ubuntu22", "linux"))
    assert not any(key.startswith("node-role.kubernetes.io/") for key in patch["metadata"]["labels"])
    assert CONTROL_PLANE_ROLE_LABEL not in patch["metadata"]["labels"]
    assert patch["metadata"]["labels"] == {ZONE_LABEL: "hk-1", DISTRO_LABEL: "ubuntu22"}


def test_patch_uses_the_registration_label_keys_and_only_adds_what_the_kubelet_may_not_set():
    from vocab.labels import DISTRO_LABEL as REGISTERED_DISTRO
    from vocab.labels import ZONE_LABEL as REGISTERED_ZONE
    assert (ZONE_LABEL, DISTRO_LABEL) == (REGISTERED_ZONE, REGISTERED_DISTRO)
    labels = node_labels("hk-lnx-01", "worker", "hk-1", "rocky9", "linux")["metadata"]["labels"]
    # Zone and distro pass the kubeadm renderer's --node-labels check (the kubelet registers them);
    # the role label is exactly what that check refuses, which is why it travels through the API.
    kubeadm._check_labels({ZONE_LABEL: labels[ZONE_LABEL], DISTRO_LABEL: labels[DISTRO_LABEL]})
    with pytest.raises(ValueError, match="NodeRestriction"):
        kubeadm._check_labels({WORKER_ROLE_LABEL: labels[WORKER_ROLE_LABEL]})


def test_zone_change_reaches_the_patch():
    assert node_labels("n1", "worker", "hk-1", "ubuntu22", "linux") != node_labels("n1", "worker", "hk-2", "ubuntu22", "linux")


@pytest.mark.parametrize("args, message", [
    (("n1", "master", "hk-1", "ubuntu22", "linux"), "role"),
    (("n1", "worker", "hk-1", "win2022", "linux"), "does not run linux"),
    (("n1", "worker", "hk-1", "ubuntu22", "windows"), "does not run windows"),
    (("n1", "control-plane", "hk-1", "win2022", "windows"), "only be a worker"),
    (("n1", "worker", "hk 1", "ubuntu22", "linux"), "label value"),
    (("N1", "worker", "hk-1", "ubuntu22", "linux"), "DNS-1123"),
])
def test_node_labels_reject_inconsistent_input(args, message):
    with pytest.raises(ValueError, match=message):
        node_labels(*args)


# --- namespaces ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("params", [win_prod(), linux_prod(), win_prod(pod_security="baseline", pod_security_version="v1.36")])
def test_namespace_objects_validate_and_carry_psa_labels(params):
    ns, quota, limits = [valid(obj) for obj in namespace(params)]
    assert [ns["kind"], quota["kind"], limits["kind"]] == ["Namespace", "ResourceQuota", "LimitRange"]
    assert quota["metadata"]["namespace"] == limits["metadata"]["namespace"] == ns["metadata"]["name"] == params.name
    labels = ns["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == params.pod_security
    assert labels["pod-security.kubernetes.io/enforce-version"] == params.pod_security_version
    # audit and warn look ahead to the newest policy, so a tightening warns before it enforces.
    assert labels["pod-security.kubernetes.io/audit-version"] == "latest"
    assert labels["pod-security.kubernetes.io/warn-version"] == "latest"


def test_quota_and_limit_range_carry_the_configured_values():
    _, quota, limits = namespace(win_prod())
    assert quota["spec"]["hard"] == {"requests.cpu": "4", "requests.memory": "8Gi", "limits.cpu": "12",
                                     "limits.memory": "16Gi", "pods": "20"}
    [item] = limits["spec"]["limits"]
    assert item["type"] == "Container"
    # Every resource the quota constrains has a default, so containers that state nothing are admitted.
    constrained = {key.split(".", 1)[1] for key in quota["spec"]["hard"] if "." in key}
    assert set(item["default"]) == set(item["defaultRequest"]) == constrained


@pytest.mark.parametrize("overrides, message", [
    ({"name": "prod-win"}, "named win-"),
    ({"os": "macos"}, "os"),
    ({"pod_security": "strict"}, "pod security level"),
    ({"pod_security_version": "1.36"}, "pod security version"),
    ({"default_cpu_request": "2", "default_cpu_limit": "1"}, "exceeds the default limit"),
    ({"memory_requests": "32Gi"}, "requests quota exceeds"),
    ({"default_memory_limit": "32Gi", "default_memory_request": "1Gi"}, "one defaulted container"),
    ({"cpu_limits": "lots"}, "quantity"),
    ({"pods": 0}, "positive"),
])
def test_namespace_rejects_bad_parameters(overrides, message):
    with pytest.raises(ValueError, match=message):
        namespace(win_prod(**overrides))


def test_system_namespace_is_privileged():
    ns = valid(system_namespace("windows-system"))
    labels = ns["metadata"]["labels"]
    assert {labels[f"pod-security.kubernetes.io/{mode}"] for mode in ("enforce", "audit", "warn")} == {"privileged"}


@pytest.mark.parametrize("text, value", [
    ("250m", Decimal("0.25")), ("1", Decimal(1)), ("1Gi", Decimal(2**30)), ("512Mi", Decimal(512 * 2**20)),
    ("1k", Decimal(1000)), ("1e3", Decimal(1000)), ("0.5", Decimal("0.5")),
])
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


def test_parse_quantity_rejects_garbage():
    for text in ("", "1GB", "one", "1.2.3"):
        with pytest.raises(ValueError):
            parse_quantity(text)
