"""Renders the cluster network: Calico through the Tigera operator, and kube-proxy on Windows nodes.

This module owns CalicoParams, the Calico namespace and the render functions below (the chart pins live in
config.compat.CHARTS). It is pure:
no Pulumi and no ``config`` imports; frozen dataclasses (or plain values) come in, Kubernetes objects as
plain dicts and Helm values dicts go out. The components turn them into resources.

Creation order on a fresh cluster (every step waits for the one before it):

1. The ``calico-crds`` chart (config.compat.CHARTS): the ``projectcalico.org/v3`` and ``operator.tigera.io/v1`` CRDs. Calico 3.33
   installs these from their own chart, ahead of the operator chart, with ``helm template ... | kubectl
   apply --server-side``: as a Helm release its release Secret would exceed the 1 MiB Secret limit. The
   network component renders it with pulumi-kubernetes' Chart v4 ("does not use Tiller or create a Helm
   Release; the semantics are equivalent to running helm template ... and then using Pulumi to deploy
   the resulting YAML manifests", Chart v4 API docs), and the provider applies each object server-side
   (pulumi-kubernetes v4 enables server-side apply by default), each retained on delete.
2. ``felix_vxlan()`` and ``ipam_strict_affinity()``: plain custom resources once step 1 exists. They must
   be created before the operator reconciles the Installation, which creates ``FelixConfiguration
   default`` itself; pulumi-kubernetes since v4.29.0 creates with a client-side create and fails with
   AlreadyExists on an object it did not create (pulumi/pulumi-kubernetes v4.29.0 release notes, #2926).
3. The ``tigera-operator`` chart with ``tigera_operator_values()``: the operator and the
   ``kubernetes-services-endpoint`` ConfigMap, but no Installation.
4. ``installation()``: carries ``pulumi.com/waitFor: condition=Ready``, so everything that depends on it
   starts only once the operator reports Calico ready.
5. ``windows_kube_proxy()`` after the Windows nodes have joined and calico-node-windows has created the
   ``Calico`` HNS network. DaemonSets are awaited by pulumi-kubernetes itself (await logic added in
   pulumi/pulumi-kubernetes#2953), so they carry no waitFor annotation.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from render import availability
from render.script_files import render_script
from vocab.labels import CONTROL_PLANE_TAINT_KEY, OS_LABEL, WINDOWS_TAINT_KEY

# --- Charts ----------------------------------------------------------------------------------------
#
# Both Calico charts (config.compat.CHARTS "calico-crds" and "tigera-operator", one Calico version) go into
# this namespace.
CALICO_CHARTS_NAMESPACE = "tigera-operator"

# New 3.33 installs use native projectcalico.org/v3 CRDs with no aggregated API server; the CRDs come
# from the projectcalico.org.v3 chart ("calico-crds"), installed before the operator chart and never together with the
# crd.projectcalico.org.v1 chart (helm.mdx and operations/native-v3-crds.mdx, version-3.33). The
# operator keeps whichever mode the CRDs present select (tigera/operator#4973). On Kubernetes 1.36 the
# chart must be rendered with the API version admissionregistration.k8s.io/v1/MutatingAdmissionPolicy
# available, otherwise Helm emits v1beta1 MutatingAdmissionPolicies, which 1.36 does not serve
# (native-v3-crds.mdx, note under "Install the v3 CRD chart"). Chart v4 renders like `helm template
# --dry-run=server`, i.e. against the cluster's own API versions; on 1.35 the v1beta1 API exists because
# the API servers run with the MutatingAdmissionPolicy gate (config.compat KUBERNETES["1.35"].api_server_args).
#
# With the v3 CRDs of the calico-crds chart installed, projectcalico.org/v3 objects are plain custom
# resources: they can be created as soon as the CRDs exist, with no Calico API server running, while
# crd.projectcalico.org/v1 CRDs do not exist at all in that mode (native-v3-crds.mdx, "How native
# projectcalico.org/v3 CRDs work").
CALICO_API_VERSION = "projectcalico.org/v3"

# The Windows CNI log directory the operator uses when spec.windowsNodes.cniLogDir is unset
# (tigera/operator pkg/render, DefaultWindowsCNIDirectories: "/var/log/calico/cni", on the system drive).
# The bin and conf directories must equal containerd's on the Windows nodes, so render.windows_bootstrap
# owns them (CALICO_WINDOWS_CNI_BIN_DIR, CALICO_WINDOWS_CNI_CONF_DIR).
CALICO_WINDOWS_CNI_LOG_DIR = "/var/log/calico/cni"



# pulumi-kubernetes v4 user-defined readiness: `condition=Type[=Value]` or `jsonpath={expr}[=Value]`
# (pulumi/pulumi-kubernetes#3134, released in v4.18.0).
PULUMI_WAIT_FOR = "pulumi.com/waitFor"

# The Installation's status.conditions mirror the operator's TigeraStatus; "Ready" is "identical to
# Available and used in Status conditions for CRs" (tigera/operator api/v1/tigerastatus_types.go,
# ComponentReady; conditions added to the Installation by tigera/operator#1954). The CRD's status schema
# lists conditions of types "Ready, Progressing, Degraded" (tests/fixtures/schemas/
# operator.tigera.io_v1_Installation.json, status.conditions).
INSTALLATION_READY = "condition=Ready"

# HNS names created by calico-node-windows for VXLAN: the network "Calico" and the host endpoint
# "Calico_ep" whose address is kube-proxy's SNAT source VIP (kubernetes-sigs/sig-windows-tools
# hostprocess/calico/kube-proxy/start.ps1: `$NetworkName = "Calico"`, `Get-HnsEndpoint | ? Name -EQ
# "Calico_ep"`, `--source-vip=$sourceVip`).
_CALICO_HNS_NETWORK = "Calico"
_CALICO_HNS_HOST_ENDPOINT = "Calico_ep"


@dataclass(frozen=True)
class CalicoParams:
    pod_cidr: str
    service_cidr: str
    mtu: int
    block_size: int
    encapsulation: str     # "VXLAN", "VXLANCrossSubnet", ... (Installation ipPools[].encapsulation enum)
    bgp: str               # "Disabled" | "Enabled"
    vxlan_port: int
    vxlan_vni: int
    windows: bool          # the stack has Windows nodes
    api_host: str          # an IP: Calico must reach the API server before cluster DNS exists
    api_port: int
    windows_cni_bin_dir: str
    windows_cni_conf_dir: str
    windows_cni_log_dir: str
    dns_budget: bool = False   # CoreDNS gets a disruption budget (plan.platform survives_every_wave)

    def __post_init__(self) -> None:
        # The operator has no DNS to resolve a name with until Calico itself is up.
        try:
            ipaddress.ip_address(self.api_host)
        except ValueError:
            raise ValueError(f"api_host must be an IP address, not {self.api_host!r}") from None
        pod_net = ipaddress.ip_network(self.pod_cidr)
        ipaddress.ip_network(self.service_cidr)
        if pod_net.version != 4:
            raise ValueError(f"pod_cidr must be IPv4 (Calico for Windows has no IPv6): {self.pod_cidr}")
        if not pod_net.prefixlen <= self.block_size <= 32:
            raise ValueError(f"block_size {self.block_size} does not fit in {self.pod_cidr}")
        if self.bgp not in ("Enabled", "Disabled"):
            raise ValueError(f"bgp must be Enabled or Disabled, not {self.bgp!r}")


def tigera_operator_values(p: CalicoParams) -> dict[str, Any]:
    """Helm values for the tigera-operator chart.

    Keys are those of projectcalico/calico charts/tigera-operator/values.yaml.
    """
    return {
        # The chart renders an Installation from these values when enabled
        # (templates/crs/custom-resources.yaml); ours comes from installation() instead, where it is
        # validated and carries the readiness wait.
        "installation": {"enabled": False},
        # The chart turns this into the kubernetes-services-endpoint ConfigMap in its own namespace
        # (templates/tigera-operator/01-kubernetes-services-endpoint.yaml, port passed through `quote`),
        # which the operator reads through envFrom (02-tigera-operator.yaml) and Calico for Windows
        # needs to build its kubeconfig (windows-calico/operator.mdx, "Create the
        # kubernetes-services-endpoint ConfigMap"). The port goes in as a string: ConfigMap data is strings.
        "kubernetesServiceEndpoint": {"host": p.api_host, "port": str(p.api_port)},
        # Operator pod placement. The chart default tolerates every NoSchedule/NoExecute taint, which
        # includes the Windows taint; the nodeSelector already keeps it off Windows, but a Linux pod
        # tolerating that taint would break the rule that only Windows workloads do. It needs instead the
        # taints a node carries before any CNI exists: not-ready and network-unavailable
        # (kubernetes/api core/v1/well_known_taints.go) and kubeadm's control-plane taint, because the
        # control plane may be the only node when Calico is installed.
        "nodeSelector": {OS_LABEL: "linux"},
        "tolerations": [
            {"key": CONTROL_PLANE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
            {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
        ],
        # The chart sets none (`resources: {}`). Requests only, so the scheduler reserves room for the
        # operator without throttling it during an install; the figures are our sizing, not upstream's.
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }


def installation(p: CalicoParams) -> dict[str, Any]:
    """The operator.tigera.io/v1 Installation "default" (the only name its CEL rule accepts for Calico)."""
    calico_network: dict[str, Any] = {
        "bgp": p.bgp,
        "mtu": p.mtu,
        "ipPools": [{
            "cidr": p.pod_cidr,
            "encapsulation": p.encapsulation,
            "natOutgoing": "Enabled",
            "blockSize": p.block_size,
            "nodeSelector": "all()",
        }],
        # Not firstFound: control-plane nodes carry the kube-vip VIP on the node NIC, which the default
        # interface matching may pick. The Node's InternalIP is the kubelet's --node-ip, the node's own
        # address (render.kubeadm). Schema: calicoNetwork.nodeAddressAutodetectionV4.kubernetes, enum
        # [NodeInternalIP], "detect node addresses based on the Kubernetes API".
        "nodeAddressAutodetectionV4": {"kubernetes": "NodeInternalIP"},
    }
    spec: dict[str, Any] = {
        "variant": "Calico",
        "calicoNetwork": calico_network,
        # "Specifying this is required when using Calico for Windows" (Installation schema,
        # spec.serviceCIDRs); harmless on Linux only, so always set.
        "serviceCIDRs": [p.service_cidr],
        # kubernetesProvider is left out: kubeadm has no value in its enum and "If the specified value is
        # empty, the Operator will attempt to automatically determine the current provider".
    }
    if p.windows:
        # "If not specified, it is disabled and the operator will not render the Calico Windows nodes
        # daemonset" (schema, calicoNetwork.windowsDataplane).
        calico_network["windowsDataplane"] = "HNS"
        # Each must match the containerd CRI cni bin_dir/conf_dir on the Windows nodes (schema,
        # spec.windowsNodes.cniBinDir/cniConfigDir).
        spec["windowsNodes"] = {
            "cniBinDir": p.windows_cni_bin_dir,
            "cniConfigDir": p.windows_cni_conf_dir,
            "cniLogDir": p.windows_cni_log_dir,
        }
    return {
        "apiVersion": "operator.tigera.io/v1",
        "kind": "Installation",
        "metadata": {"name": "default", "annotations": {PULUMI_WAIT_FOR: INSTALLATION_READY}},
        "spec": spec,
    }


def ipam_strict_affinity() -> dict[str, Any]:
    """IPAMConfiguration "default" with strictAffinity on: Linux nodes must not borrow addresses from
    Windows nodes' blocks (windows-calico/operator.mdx, "Configure strict affinity": `kubectl patch
    ipamconfigurations default ... strictAffinity: true`).

    projectcalico.org/v3 is used because with the v3 CRDs it is an ordinary CRD, usable right after
    the calico-crds chart (module docstring, step 2); crd.projectcalico.org/v1 would need the v1 CRDs that a
    v3-mode install does not have. The CRD requires both spec fields (projectcalico/calico
    api/config/crd/projectcalico.org_ipamconfigurations.yaml: required autoAllocateBlocks, strictAffinity).
    """
    return {
        "apiVersion": CALICO_API_VERSION,
        "kind": "IPAMConfiguration",
        "metadata": {"name": "default"},
        "spec": {"strictAffinity": True, "autoAllocateBlocks": True},
    }


def felix_vxlan(p: CalicoParams) -> dict[str, Any]:
    """FelixConfiguration "default" with the VXLAN VNI and port the Windows dataplane needs.

    The operator does write these two fields into FelixConfiguration default (4096 and 4789, except on
    MKE), but with the "Defer" conflict policy: a value already set by someone else is left in place
    (tigera/operator pkg/controller/installation/felixconfig.go, declareFelixConfiguration; "ConflictDefer
    leaves the other writer's value in place", pkg/controller/sharedconfig/declaration.go; older operators
    only filled them in when nil). So setting them ourselves is supported and pins them against a future
    change of the operator's defaults; the chart's own switch for this (`defaultFelixConfiguration`,
    templates/crs/configmap-felixconfiguration-templates.yaml) picks its API group with Helm `lookup`,
    which returns nothing when a chart is rendered offline, so it is not used.
    """
    return {
        "apiVersion": CALICO_API_VERSION,
        "kind": "FelixConfiguration",
        "metadata": {"name": "default"},
        "spec": {"vxlanVNI": p.vxlan_vni, "vxlanPort": p.vxlan_port},
    }


def calico_settings(p: CalicoParams) -> list[dict[str, Any]]:
    """The Calico configuration we own, to create before the operator starts (module docstring, step 2).

    Strict affinity is only needed, and only rendered, when the stack has Windows nodes.
    """
    objects = [felix_vxlan(p)]
    if p.windows:
        objects.append(ipam_strict_affinity())
    return objects


# --- kube-proxy on Windows -------------------------------------------------------------------------

# kubeadm's CoreDNS: two replicas labelled k8s-app=kube-dns in kube-system (kubeadm cmd/kubeadm/app/phases/addons/dns
# manifests), with only a preferred anti-affinity, so both can sit on the node a wave drains first.
COREDNS_LABELS = {"k8s-app": "kube-dns"}


def dns_disruption_budget() -> dict[str, Any]:
    """CoreDNS's budget of one (render/availability.py), kubeadm's addon having none; only where a drain can satisfy
    it (CalicoParams.dns_budget)."""
    return availability.disruption_budget("coredns", "kube-system", COREDNS_LABELS)


KUBE_PROXY_WINDOWS = "kube-proxy-windows"
_KUBE_PROXY_NAMESPACE = "kube-system"
# kubeadm's kube-proxy addon: ServiceAccount "kube-proxy" (bound to system:node-proxier by kubeadm) and
# ConfigMap "kube-proxy" whose kubeconfig.conf points at the service account token. sig-windows-tools'
# DaemonSet reuses both (hostprocess/calico/kube-proxy/kube-proxy.yml: serviceAccountName: kube-proxy,
# configMap kube-proxy mounted at /var/lib/kube-proxy), and so do we: no extra RBAC.
_KUBEADM_KUBE_PROXY = "kube-proxy"
_KUBEADM_CONFIG_MOUNT = "/var/lib/kube-proxy"
_SCRIPT_MOUNT = "/var/lib/kube-proxy-windows"
_SCRIPT_NAME = "start.ps1"


def _kube_proxy_start_script(cluster_cidr: str) -> str:
    """The HostProcess entry script, render/scripts/network-kube-proxy-windows.ps1.

    It follows sig-windows-tools hostprocess/calico/kube-proxy/start.ps1 (wait for the Calico HNS network,
    take the source VIP from Calico_ep on an overlay network, point the kubeadm kubeconfig at the sandbox
    copy of the service account files, clear stale HNS policy lists, run kube-proxy in kernelspace mode
    with DSR) with three differences:
    * the node name comes from NODE_NAME, which the DaemonSet sets (upstream reads an unset NODENAME);
    * the pod CIDR goes in as --cluster-cidr, which upstream leaves unset;
    * no --feature-gates: WinDSR and WinOverlay are GA and locked on since 1.34 (kubernetes/kubernetes
      #132108, #133042) and are being removed (kubernetes/kubernetes#142125), after which setting them
      would stop kube-proxy from starting.
    The flags are kube-proxy's Windows flags (cmd/kube-proxy/app/server_windows.go addOSFlags:
    --source-vip, --network-name, --enable-dsr). Paths inside the image (kube-proxy/kube-proxy.exe,
    kube-proxy/hns.psm1) are those of hostprocess/calico/kube-proxy/Dockerfile.
    """
    ipaddress.ip_network(cluster_cidr)
    return render_script("network-kube-proxy-windows.ps1", NetworkName=_CALICO_HNS_NETWORK,
                         HostEndpointName=_CALICO_HNS_HOST_ENDPOINT,
                         KubeadmConfigDir=_KUBEADM_CONFIG_MOUNT.lstrip("/"), ClusterCidr=cluster_cidr)


def windows_kube_proxy(kubernetes_version: str, image_template: str, cluster_cidr: str) -> list[dict[str, Any]]:
    """kube-proxy for Windows as a HostProcess DaemonSet in kube-system, plus the ConfigMap holding its
    entry script. Only for stacks with Windows nodes: Linux nodes run kubeadm's kube-proxy.

    ``kubernetes_version`` is bare ("1.36.4"); ``image_template`` has a ``{version}`` field (config.compat
    WINDOWS[...].kube_proxy_image). One DaemonSet serves every Windows build: a HostProcess container
    runs on the host, so its image need not match the build (see config.compat), and adding a build to
    the stack leaves kube-proxy as it is.
    """
    labels = {"k8s-app": KUBE_PROXY_WINDOWS}
    script = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": KUBE_PROXY_WINDOWS, "namespace": _KUBE_PROXY_NAMESPACE, "labels": labels},
        "data": {_SCRIPT_NAME: _kube_proxy_start_script(cluster_cidr)},
    }
    container = {
        "name": "kube-proxy",
        "image": image_template.format(version=kubernetes_version),
        # powershell.exe is the host's: a HostProcess container runs on the host.
        "command": ["powershell.exe", "-NoProfile", "-ExecutionPolicy", "Bypass", "-Command"],
        "args": [f"$env:CONTAINER_SANDBOX_MOUNT_POINT{_SCRIPT_MOUNT}/{_SCRIPT_NAME}"],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "volumeMounts": [
            {"name": "kubeadm-kube-proxy", "mountPath": _KUBEADM_CONFIG_MOUNT, "readOnly": True},
            {"name": "start-script", "mountPath": _SCRIPT_MOUNT, "readOnly": True},
        ],
        # Our sizing (upstream sets none): requests only, so the node reserves room without throttling.
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    }
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": KUBE_PROXY_WINDOWS, "namespace": _KUBE_PROXY_NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": _KUBEADM_KUBE_PROXY,
                    # HostProcess pods must use the host network and run as a host account
                    # (https://kubernetes.io/docs/tasks/configure-pod-container/create-hostprocess-pod/);
                    # SYSTEM is what sig-windows-tools' kube-proxy.yml uses.
                    "hostNetwork": True,
                    "securityContext": {"windowsOptions": {
                        "hostProcess": True,
                        "runAsUserName": "NT AUTHORITY\\system",
                    }},
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": {OS_LABEL: "windows"},
                    "tolerations": [
                        {"key": WINDOWS_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                    ],
                    "containers": [container],
                    "volumes": [
                        {"name": "kubeadm-kube-proxy", "configMap": {"name": _KUBEADM_KUBE_PROXY}},
                        {"name": "start-script", "configMap": {"name": KUBE_PROXY_WINDOWS}},
                    ],
                },
            },
        },
    }
    return [script, daemonset]
