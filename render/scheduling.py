"""Renders the cluster-wide scheduling objects: one RuntimeClass per Windows Server build, the NodePatch
bodies that carry the node labels a kubelet may not set itself, the win-*/linux-* application namespaces
(Namespace with Pod Security Admission labels, ResourceQuota, LimitRange) and the privileged namespace the
Windows HostProcess system pods live in.

This module owns the Windows toleration and Pod Security names other renderers use, the input dataclasses and the
render functions. It is pure: no Pulumi, no ``config`` imports; dataclasses in, plain Kubernetes objects (dicts) out.
Components turn each dict into a typed pulumi_kubernetes resource.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from vocab.checks import DNS_LABEL, DNS_SUBDOMAIN, LABEL_VALUE, require
from vocab.labels import (
    DISTRO_LABEL,
    OS_LABEL,
    WINDOWS_BUILD_LABEL,
    WINDOWS_TAINT_EFFECT,
    WINDOWS_TAINT_KEY,
    WINDOWS_TAINT_VALUE,
    WORKER_ROLE_LABEL,
    ZONE_LABEL,
)
from vocab.namespaces import OPERATING_SYSTEMS, NamespaceParams, check_namespace, quota

# containerd's Windows process-isolation runtime handler, registered on Windows out of the box (DefaultRuntimeName and
# Runtimes in containerd internal/cri/config/config_windows.go; runhcs-wcow-hypervisor is the Hyper-V isolated one).
# Our Windows containerd configuration (render/windows_bootstrap.py) sets only CNI paths, so that default runtime table
# stays in force.
PROCESS_ISOLATION_HANDLER = "runhcs-wcow-process"

PSA_LEVELS = ("privileged", "baseline", "restricted")
PSA_MODES = ("enforce", "audit", "warn")
# Labels pod-security.kubernetes.io/<mode> and <mode>-version (https://kubernetes.io/docs/concepts/security/pod-security-admission/).
_PSA_PREFIX = "pod-security.kubernetes.io"

ROLES = ("worker", "control-plane")

# --- syntax checks (k8s.io/apimachinery/pkg/util/validation) ---------------------------------------------

_WINDOWS_BUILD = re.compile(r"^10\.0\.\d{5}$")
_PSA_VERSION = re.compile(r"^(latest|v1\.\d{1,2})$")





# --- RuntimeClass ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WindowsBuildParams:
    key: str     # "win2022": names the RuntimeClass, so pods say runtimeClassName: win2022
    build: str   # "10.0.20348": the node.kubernetes.io/windows-build value of hosts of that build


def windows_toleration() -> dict[str, Any]:
    """The toleration for the taint every Windows node registers with."""
    return {"key": WINDOWS_TAINT_KEY, "operator": "Equal", "value": WINDOWS_TAINT_VALUE,
            "effect": WINDOWS_TAINT_EFFECT}


def runtime_class(build: WindowsBuildParams) -> dict[str, Any]:
    """node.k8s.io/v1 RuntimeClass named after the build key: process isolation on hosts of that build.

    A Windows pod then needs only ``runtimeClassName``: the RuntimeClass admission step merges
    ``scheduling.nodeSelector`` into the pod and appends ``scheduling.tolerations`` (field descriptions of RuntimeClass
    ``scheduling`` in the Kubernetes v1.36 OpenAPI schema; https://kubernetes.io/docs/concepts/windows/user-guide/
    "Simplifying with RuntimeClass"). Process isolation needs the image build to equal the host build, and
    ``node.kubernetes.io/windows-build`` is the label the kubelet sets from the host's major.minor.build (same page,
    "Handling multiple Windows versions in the same cluster"), so a pod lands only where its image can start."""
    require(bool(DNS_LABEL.match(build.key)), f"RuntimeClass name {build.key!r} is not a DNS-1123 label")
    require(bool(_WINDOWS_BUILD.match(build.build)),
             f"{build.key}: {build.build!r} is not a Windows build number like 10.0.20348")
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": build.key},
        "handler": PROCESS_ISOLATION_HANDLER,
        "scheduling": {
            "nodeSelector": {OS_LABEL: "windows", WINDOWS_BUILD_LABEL: build.build},
            "tolerations": [windows_toleration()],
        },
    }


def runtime_classes(builds: Iterable[WindowsBuildParams]) -> list[dict[str, Any]]:
    """One RuntimeClass per Windows build in the stack, in build-key order; duplicates are refused."""
    builds = sorted(builds, key=lambda b: b.key)
    keys = [b.key for b in builds]
    require(len(set(keys)) == len(keys), f"duplicate Windows build keys: {keys}")
    numbers = [b.build for b in builds]
    require(len(set(numbers)) == len(numbers), f"two build keys share one Windows build: {numbers}")
    return [runtime_class(b) for b in builds]


# --- node labels ---------------------------------------------------------------------------------------------

def node_labels(name: str, role: str, zone: str, distro: str, os: str) -> dict[str, Any]:
    """The NodePatch body for one node: the labels its kubelet may not set (role) and the ones that must
    follow config (zone, distro)."""
    require(bool(DNS_SUBDOMAIN.match(name)), f"node name {name!r} is not a DNS-1123 subdomain")
    require(role in ROLES, f"{name}: role {role!r} is not one of {ROLES}")
    require(os in OPERATING_SYSTEMS, f"{name}: os {os!r} is not one of {OPERATING_SYSTEMS}")
    require(os == "linux" or role == "worker", f"{name}: a Windows node can only be a worker")
    for key, value in ((ZONE_LABEL, zone), (DISTRO_LABEL, distro)):
        require(bool(value) and bool(LABEL_VALUE.fullmatch(value)), f"{name}: {key}={value!r} is not a label value")
    # Our distro keys name the OS family (win2019/win2022 vs ubuntu22/rocky9/centos7): a mismatch means
    # the caller mixed up two nodes, and would put the node in the wrong distro affinity.
    require(distro.startswith("win") == (os == "windows"), f"{name}: distro {distro!r} does not run {os}")
    # Zone and distro with the same keys and config value the kubelet registers with (render/kubeadm.py --node-labels), so
    # the two never disagree for long: the kubelet copies topology.kubernetes.io/zone from its registration labels onto
    # the Node at every start (updateDefaultLabels in kubernetes pkg/kubelet/kubelet_node_status.go), but never touches
    # node.os.distro again after registration, so this patch keeps the distro label in step with config.
    labels = {ZONE_LABEL: zone, DISTRO_LABEL: distro}
    if role == "worker":
        # node-role.kubernetes.io/* cannot come from the kubelet (NodeRestriction and the kubelet's own flag check; see
        # render/kubeadm.py), hence this patch through the API. kubeadm already labels control-plane nodes
        # node-role.kubernetes.io/control-plane (labelsToAdd in kubernetes cmd/kubeadm/app/phases/markcontrolplane/
        # markcontrolplane.go), so only workers get a role label here.
        # The role label's value is empty by convention (kubeadm's control-plane label is also "").
        labels[WORKER_ROLE_LABEL] = ""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            # Takes over a label the kubelet registered with when config changes (pulumi-kubernetes Patch resources:
            # server-side apply conflicts are overridden by this annotation).
            "annotations": {"pulumi.com/patchForce": "true"},
        },
    }


# The machine instance a Node runs on (components/machines/nodes.py `instance`), on its label patch.
MACHINE_ANNOTATION = "hybrid-cluster.io/machine"


def with_machine(patch: dict[str, Any], machine: object) -> dict[str, Any]:
    """The node label patch with the machine instance it applies to (a value the caller supplies, possibly
    not yet known): a new instance changes the patch, so the labels are applied to the new Node."""
    annotations = {**patch["metadata"]["annotations"], MACHINE_ANNOTATION: machine}
    return {**patch, "metadata": {**patch["metadata"], "annotations": annotations}}


# --- namespaces ----------------------------------------------------------------------------------------------

def _psa_labels(level: str, enforce_version: str) -> dict[str, str]:
    require(level in PSA_LEVELS, f"pod security level {level!r} is not one of {PSA_LEVELS}")
    require(bool(_PSA_VERSION.match(enforce_version)),
             f"pod security version {enforce_version!r} is neither 'latest' nor a minor like 'v1.36'")
    # enforce-version is pinned by the caller (default latest); audit and warn always use latest, so a tightening in the
    # next Kubernetes release shows up as warnings before it is enforced.
    labels = {}
    for mode in PSA_MODES:
        labels[f"{_PSA_PREFIX}/{mode}"] = level
        labels[f"{_PSA_PREFIX}/{mode}-version"] = enforce_version if mode == "enforce" else "latest"
    return labels


def namespace(p: NamespaceParams) -> list[dict[str, Any]]:
    """Namespace (with PSA labels), ResourceQuota and LimitRange for one application namespace."""
    check_namespace(p)
    # The level is a parameter so the choice stays in config. Windows pods can run under restricted: since v1.25 its
    # Linux-only checks skip a pod whose spec.os.name is windows - allowPrivilegeEscalation, seccompProfile, capabilities
    # (allowPrivilegeEscalationV1Dot25, seccompProfileRestricted_1_25, capabilitiesRestricted_1_25 in kubernetes
    # staging/src/k8s.io/pod-security-admission/policy/, and their tests "windows pod, admit without checking ...");
    # API validation forbids those very fields on a Windows pod anyway ("cannot be set when spec.os.name is windows",
    # SecurityContext/PodSecurityContext in the v1.36 schema). runAsNonRoot: true is still required for every OS
    # (check_runAsNonRoot.go has no OS exemption); on Windows the kubelet enforces it by refusing ContainerAdministrator
    # (pkg/kubelet/kuberuntime/security_context_windows.go). So a pod that declares spec.os.name: windows and runs as
    # ContainerUser passes. The .NET nanoserver images do (USER ContainerUser in dotnet/dotnet-docker
    # src/runtime/10.0/nanoserver-ltsc2022/amd64/Dockerfile), so win-prod is restricted like linux-prod; a workload
    # whose image has to run as ContainerAdministrator would need baseline instead.
    labels = _psa_labels(p.pod_security, p.pod_security_version)
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": p.name, "labels": labels},
        },
        # A ResourceQuota on requests.*/limits.* makes the API reject any pod that does not state those resources; the
        # LimitRange default/defaultRequest fill them in for containers that do not, so the two always come together
        # (https://kubernetes.io/docs/concepts/policy/resource-quotas/, https://kubernetes.io/docs/concepts/policy/limit-range/).
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute", "namespace": p.name},
            "spec": {"hard": quota(p)},
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "container-defaults", "namespace": p.name},
            "spec": {"limits": [{
                "type": "Container",
                "defaultRequest": {"cpu": p.default_cpu_request, "memory": p.default_memory_request},
                "default": {"cpu": p.default_cpu_limit, "memory": p.default_memory_limit},
            }]},
        },
    ]


def system_namespace(name: str) -> dict[str, Any]:
    """The privileged namespace windows_exporter's HostProcess pods run in (vocab.cluster.WINDOWS_SYSTEM_NAMESPACE).
    HostProcess containers (Windows kube-proxy, Calico's Windows node agent) are refused by the baseline profile
    (``windowsOptions.hostProcess``, check_windowsHostProcess.go), hence their own namespace at privileged."""
    require(bool(DNS_LABEL.match(name)), f"namespace {name!r} is not a DNS-1123 label")
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": _psa_labels("privileged", "latest")},
    }
