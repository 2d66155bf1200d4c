"""Renders the kubeadm configuration files: the ``kubeadm init --config`` file of the first control-plane
node (InitConfiguration, ClusterConfiguration, KubeletConfiguration) and one ``kubeadm join --config`` file
(JoinConfiguration) per other node, for the kubeadm config API the cluster's minor uses
(``kubeadm.k8s.io/v1beta3`` or ``kubeadm.k8s.io/v1beta4``).

This module owns the two input dataclasses, the render functions and the join placeholders. It is pure:
no Pulumi, no ``config`` imports; values come in through the dataclasses and YAML text goes out.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from render import yaml_text
from vocab.checks import DNS_SUBDOMAIN, LABEL_VALUE, check_image, is_ip_address

# Field names are the json tags of cmd/kubeadm/app/apis/kubeadm/v1beta3/types.go and .../v1beta4/types.go
# (kubernetes/kubernetes paths in this file are at the commits read for this work). v1beta3 is read by kubeadm
# 1.22-1.35 (removed in 1.36, kubernetes/kubernetes#136016), v1beta4 from 1.31 (kubernetes/kubernetes#125029);
# _check_cluster refuses other pairings.
KUBEADM_V1BETA3 = "kubeadm.k8s.io/v1beta3"
KUBEADM_V1BETA4 = "kubeadm.k8s.io/v1beta4"
KUBELET_CONFIG_API = "kubelet.config.k8s.io/v1beta1"

# Join files carry these placeholders instead of secrets: the join script substitutes the token, the API endpoint, the
# discovery CA hash and (control-plane joins) the certificate key that it parses out of the ``kubeadm token create
# --print-join-command`` line, so no secret is ever part of a rendered string. Each appears once, inside a single-quoted
# YAML scalar; the values (token ``[a-z0-9]{6}.[a-z0-9]{16}``, ``sha256:<hex>``, hex key, ``host:port``) contain no
# quote, so the quoting stays valid after substitution.
JOIN_TOKEN = "@@JOIN_TOKEN@@"
JOIN_CA_CERT_HASH = "@@JOIN_CA_CERT_HASH@@"
JOIN_API_ENDPOINT = "@@JOIN_API_ENDPOINT@@"
JOIN_CERTIFICATE_KEY = "@@JOIN_CERTIFICATE_KEY@@"

# Short life for the token kubeadm always creates at init: an empty ``bootstrapTokens`` list is defaulted to one entry
# with the 24h TTL (SetDefaults_BootstrapTokens, cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go), and an entry
# without ``token`` gets a random one at runtime (SetBootstrapTokensDynamicDefaults,
# cmd/kubeadm/app/util/config/initconfiguration.go). Joins never use it (each creates a fresh short-lived token), so
# the init file lists one entry with only this ``ttl`` and no token value: the token kubeadm prints after init dies
# within minutes instead of a day. Long enough for nothing; a Go duration string as metav1.Duration expects.
INIT_BOOTSTRAP_TOKEN_TTL = "15m0s"

# Cross-border image pulls are slow; the kubelet's default is one pull at a time (serializeImagePulls
# "Default: true", staging/src/k8s.io/kubelet/config/v1beta1/types.go), so one large image would hold up
# every other pod on the node. A small bound keeps the Harbor mirror and the uplink from being flooded.
# maxParallelImagePulls "cannot be set if SerializeImagePulls is true" (same file), hence both fields.
MAX_PARALLEL_IMAGE_PULLS = 3

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CRI_SOCKET_PREFIXES = ("unix://", "npipe://")

# The kubelet's self-settable label keys and namespaces (staging/src/k8s.io/kubelet/pkg/apis/
# well_known_labels.go, kubeletLabels / kubeletLabelNamespaces, with the v1 constants of
# staging/src/k8s.io/api/core/v1/well_known_labels.go).
_KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
})
_KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
_NODE_ROLE_PREFIX = "node-role.kubernetes.io"

# Label name syntax: a qualified name (optional DNS-subdomain prefix, name of at most 63 characters), as
# k8s.io/apimachinery/pkg/util/validation IsQualifiedName; label values: vocab.checks.LABEL_VALUE.
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")
_CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# core/v1 HostPathType values (staging/src/k8s.io/api/core/v1/types.go).
_HOST_PATH_TYPES = ("", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice")
# The keys kubelet_config writes from ClusterParams' own fields.
_KUBELET_CONFIG_OWN_KEYS = frozenset({"apiVersion", "kind", "cgroupDriver", "serializeImagePulls", "maxParallelImagePulls",
                                      "serverTLSBootstrap"})


def etcd_pod(node_name: str) -> str:
    """The etcd Pod of a control-plane node: kubeadm's static Pod `etcd`, whose mirror Pod the kubelet names
    `<pod name>-<node name>` (kubelet pkg/kubelet/config/common.go generatePodName)."""
    return f"etcd-{node_name}"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str            # NoSchedule | PreferNoSchedule | NoExecute


# A KubeletConfiguration value this renderer writes: a scalar, or a list of strings held as a tuple.
KubeletValue = bool | int | str | tuple[str, ...]


@dataclass(frozen=True)
class HostPathMount:
    """One extra hostPath mount of a control-plane component (kubeadm HostPathMount: name, hostPath, mountPath,
    readOnly, pathType)."""
    name: str
    host_path: str
    mount_path: str
    read_only: bool
    path_type: str       # a core/v1 HostPathType: "Directory", "DirectoryOrCreate", "File", ...


@dataclass(frozen=True)
class ClusterParams:
    kubeadm_api: str                 # KUBEADM_V1BETA3 | KUBEADM_V1BETA4
    cluster_name: str
    kubernetes_version: str          # "1.36.4" (rendered as "v1.36.4")
    control_plane_endpoint: str      # "10.30.30.10:6443" (VIP) or the only control-plane node
    pod_subnet: str
    service_subnet: str
    dns_domain: str
    node_cidr_mask_size: int         # kube-controller-manager --node-cidr-mask-size
    service_node_port_range: str     # kube-apiserver --service-node-port-range, "30000-32767"
    cert_sans: tuple[str, ...]       # API server certificate SANs: VIP, every control-plane IP and name
    # The sandbox (pause) image has no field in either kubeadm API nor in KubeletConfiguration; the kubelet flag
    # ``--pod-infra-container-image`` was removed in 1.35 and passing it makes the kubelet fail to start
    # (kubernetes/kubernetes#133779, "ACTION REQUIRED: Removed the --pod-infra-container-image flag"). The container
    # runtime owns it: containerd's pinned ``sandbox`` image (Linux: render/linux_node.py; Windows: the guest's
    # containerd config).
    sandbox_image: str               # validated only, not rendered
    api_server_args: tuple[tuple[str, str], ...] = ()  # further kube-apiserver flags (config.compat, per minor)
    server_tls_bootstrap: bool = False  # kubelet serving certificates from the cluster CA (render/resource_metrics.py)
    # The hardening (render/security.py): further flags of each control-plane component, the API server's hostPath
    # mounts for the files they name, and the KubeletConfiguration keys every kubelet runs with.
    hardening_args: tuple[tuple[str, str], ...] = ()
    api_server_volumes: tuple[HostPathMount, ...] = ()
    controller_manager_args: tuple[tuple[str, str], ...] = ()
    scheduler_args: tuple[tuple[str, str], ...] = ()
    kubelet_settings: tuple[tuple[str, KubeletValue], ...] = ()


@dataclass(frozen=True)
class NodeParams:
    name: str
    advertise_address: str           # node IP on the node VLAN
    cri_socket: str                  # "unix:///var/run/containerd/containerd.sock" | "npipe:////./pipe/containerd-containerd"
    labels: dict[str, str] = field(default_factory=dict)  # registered by the kubelet itself
    taints: tuple[Taint, ...] | None = None  # None = kubeadm default, () = no taints
    control_plane: bool = False
    max_pods: int | None = None      # the kubelet's --max-pods for this node; None = the cluster-wide default


# --- validation ------------------------------------------------------------------------------------


def _minor(version: str) -> tuple[int, int]:
    match = _VERSION.match(version)
    if match is None:
        raise ValueError(f"kubernetes_version {version!r} must be MAJOR.MINOR.PATCH, e.g. '1.36.4'")
    return int(match.group(1)), int(match.group(2))


def _split_host_port(endpoint: str) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"endpoint {endpoint!r} must be host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not (is_ip_address(host) or DNS_SUBDOMAIN.match(host)):
        raise ValueError(f"endpoint {endpoint!r}: {host!r} is neither an IP address nor a DNS name")
    return host, int(port)


def _check_cluster(cluster: ClusterParams) -> None:
    major_minor = _minor(cluster.kubernetes_version)
    if cluster.kubeadm_api == KUBEADM_V1BETA3:
        if major_minor > (1, 35):
            raise ValueError(f"kubeadm {cluster.kubernetes_version} no longer reads {KUBEADM_V1BETA3} (removed in 1.36)")
    elif cluster.kubeadm_api == KUBEADM_V1BETA4:
        if major_minor < (1, 31):
            raise ValueError(f"kubeadm {cluster.kubernetes_version} does not read {KUBEADM_V1BETA4} (added in 1.31)")
    else:
        raise ValueError(f"unknown kubeadm API {cluster.kubeadm_api!r}; expected {KUBEADM_V1BETA3} or {KUBEADM_V1BETA4}")
    if not _CLUSTER_NAME.match(cluster.cluster_name):
        raise ValueError(f"cluster_name {cluster.cluster_name!r} is not a lowercase DNS label")
    _split_host_port(cluster.control_plane_endpoint)
    pods = ipaddress.ip_network(cluster.pod_subnet)
    services = ipaddress.ip_network(cluster.service_subnet)
    if pods.overlaps(services):
        raise ValueError(f"pod_subnet {pods} overlaps service_subnet {services}")
    if not pods.prefixlen < cluster.node_cidr_mask_size <= pods.max_prefixlen:
        raise ValueError(
            f"node_cidr_mask_size {cluster.node_cidr_mask_size} must be longer than the pod subnet's "
            f"/{pods.prefixlen} and at most /{pods.max_prefixlen}"
        )
    if not DNS_SUBDOMAIN.match(cluster.dns_domain):
        raise ValueError(f"dns_domain {cluster.dns_domain!r} is not a DNS name")
    low, sep, high = cluster.service_node_port_range.partition("-")
    if not (sep and low.isdigit() and high.isdigit() and 1 <= int(low) < int(high) <= 65535):
        raise ValueError(f"service_node_port_range {cluster.service_node_port_range!r} must be LOW-HIGH ports")
    flags = [name for name, _ in (*cluster.api_server_args, *cluster.hardening_args)]
    if len(set(flags)) != len(flags) or "service-node-port-range" in flags:
        raise ValueError(f"api_server_args {flags} repeat a flag")
    for component, args in (("controller manager", cluster.controller_manager_args),
                            ("scheduler", cluster.scheduler_args)):
        names = [name for name, _ in args]
        if len(set(names)) != len(names) or ("controller manager" == component and "node-cidr-mask-size" in names):
            raise ValueError(f"{component} args {names} repeat a flag")
    mounts = [m.name for m in cluster.api_server_volumes]
    if len(set(mounts)) != len(mounts):
        raise ValueError(f"api_server_volumes {mounts} repeat a name")
    for mount in cluster.api_server_volumes:
        if not (_CLUSTER_NAME.match(mount.name) and mount.host_path.startswith("/") and mount.mount_path.startswith("/")):
            raise ValueError(f"api server volume {mount.name!r}: a DNS label and absolute paths")
        if mount.path_type not in _HOST_PATH_TYPES:
            raise ValueError(f"api server volume {mount.name!r}: pathType {mount.path_type!r} is not one of {_HOST_PATH_TYPES}")
    keys = [key for key, _ in cluster.kubelet_settings]
    if len(set(keys)) != len(keys) or set(keys) & _KUBELET_CONFIG_OWN_KEYS:
        raise ValueError(f"kubelet_settings {keys} repeat a key or one kubelet_config writes itself")
    if not cluster.cert_sans:
        raise ValueError("cert_sans must name at least the API endpoint")
    for san in cluster.cert_sans:
        if not (is_ip_address(san) or DNS_SUBDOMAIN.match(san)):
            raise ValueError(f"cert SAN {san!r} is neither an IP address nor a DNS name")
    if len(set(cluster.cert_sans)) != len(cluster.cert_sans):
        raise ValueError(f"cert_sans has duplicates: {cluster.cert_sans}")
    check_image(cluster.sandbox_image, "sandbox_image")


def _check_label_key(key: str) -> None:
    prefix, sep, name = key.rpartition("/")
    if not _LABEL_NAME.match(name) or (sep and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))):
        raise ValueError(f"{key!r} is not a qualified label/taint key")


# The kubelet refuses to start with a ``kubernetes.io``/``k8s.io`` label that is not in its self-settable list
# (ValidateKubeletFlags in cmd/kubelet/app/options/options.go; the list is _KUBELET_LABELS: topology.kubernetes.io/zone
# is allowed, node-role.kubernetes.io/* is not); the NodeRestriction admission plugin enforces the same set on the API
# side (https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#noderestriction). So such labels
# are a ValueError here instead of a kubelet that crash-loops.
def _check_labels(labels: dict[str, str]) -> None:
    for key, value in labels.items():
        _check_label_key(key)
        if not LABEL_VALUE.fullmatch(value):
            raise ValueError(f"label {key}={value!r}: not a valid label value")
        namespace = key.partition("/")[0] if "/" in key else ""
        if namespace == _NODE_ROLE_PREFIX:
            raise ValueError(
                f"label {key!r}: a kubelet may not set node-role.kubernetes.io/* on its own Node (NodeRestriction "
                f"admission; the kubelet refuses it in --node-labels). Apply it through the API after the join."
            )
        kubernetes_namespace = namespace in ("kubernetes.io", "k8s.io") or namespace.endswith((".kubernetes.io", ".k8s.io"))
        self_settable = key in _KUBELET_LABELS or any(
            namespace == allowed or namespace.endswith("." + allowed) for allowed in _KUBELET_LABEL_NAMESPACES
        )
        if kubernetes_namespace and not self_settable:
            raise ValueError(
                f"label {key!r}: the kubelet may only self-set kubernetes.io/k8s.io labels in "
                f"{sorted(_KUBELET_LABELS)} or under {_KUBELET_LABEL_NAMESPACES}; apply it through the API"
            )


def _check_node(node: NodeParams) -> None:
    if not DNS_SUBDOMAIN.match(node.name):
        raise ValueError(f"node name {node.name!r} is not a lowercase DNS name")
    if not is_ip_address(node.advertise_address):
        raise ValueError(f"advertise_address {node.advertise_address!r} is not an IP address")
    if not node.cri_socket.startswith(CRI_SOCKET_PREFIXES):
        raise ValueError(f"cri_socket {node.cri_socket!r} must be a unix:// or npipe:// URL")
    if node.control_plane and node.cri_socket.startswith("npipe://"):
        raise ValueError(f"{node.name}: Windows nodes cannot run the control plane")
    if node.max_pods is not None and not (type(node.max_pods) is int and node.max_pods >= 1):
        raise ValueError(f"{node.name}: max_pods must be a positive integer")
    _check_labels(node.labels)
    for taint in node.taints or ():
        _check_label_key(taint.key)
        if taint.effect not in TAINT_EFFECTS:
            raise ValueError(f"taint {taint.key}: effect {taint.effect!r} is not one of {TAINT_EFFECTS}")
        if taint.value is not None and not LABEL_VALUE.fullmatch(taint.value):
            raise ValueError(f"taint {taint.key}: {taint.value!r} is not a valid taint value")


# --- documents -------------------------------------------------------------------------------------


def _args(api: str, args: dict[str, str]) -> dict[str, str] | list[dict[str, str]]:
    """Extra arguments in the form the API version wants: a map (v1beta3) or name/value list (v1beta4)."""
    # v1beta4 turned ``extraArgs`` (apiServer, controllerManager, scheduler, etcd.local) and
    # ``nodeRegistration.kubeletExtraArgs`` from ``map[string]string`` into ``[]Arg`` (``{name, value}``) and moved
    # timeouts into ``timeouts`` (https://kubernetes.io/docs/reference/config-api/kubeadm-config.v1beta4/, "A list of
    # changes since v1beta3").
    if api == KUBEADM_V1BETA3:
        return dict(args)
    return [{"name": name, "value": value} for name, value in args.items()]


def _node_registration(cluster: ClusterParams, node: NodeParams) -> dict[str, Any]:
    registration: dict[str, Any] = {"name": node.name, "criSocket": node.cri_socket}
    # ``taints`` has no ``omitempty``: nil means "kubeadm default" (the control-plane taint on control-plane nodes), ``[]``
    # none. On join kubeadm passes them to the kubelet as ``--register-with-taints`` (buildKubeletArgMapCommon,
    # cmd/kubeadm/app/phases/kubelet/flags.go), so the Node object is created already tainted: no untolerating pod can
    # be scheduled there even briefly.
    if node.taints is not None:
        registration["taints"] = [
            {"key": t.key, **({"value": t.value} if t.value is not None else {}), "effect": t.effect}
            for t in node.taints
        ]
    # The kubelet reports this address as the Node's InternalIP ("--node-ip: IP address (or
    # comma-separated dual-stack IP addresses) of the node. If unset, kubelet will use the node's default
    # IPv4 address", kubelet reference). Without it, a control-plane node holding the kube-vip VIP on the
    # same NIC may report either; Calico detects node addresses from InternalIP (render.network).
    extra = {"node-ip": node.advertise_address}
    # Per node, so a flag: the KubeletConfiguration is cluster-wide (kubelet_config). Flags override the
    # config file ("--max-pods ... DEPRECATED: This parameter should be set via the config file
    # specified by the Kubelet's --config flag", kubelet reference; deprecated, not removed).
    if node.max_pods is not None:
        extra["max-pods"] = str(node.max_pods)
    # Labels through the flag: NodeRegistrationOptions has no labels field (both types.go), and the KubeletConfiguration
    # is cluster-wide (uploaded to the kubelet-config ConfigMap), so it cannot carry per-node labels (_check_labels).
    if node.labels:
        extra["node-labels"] = ",".join(f"{key}={value}" for key, value in sorted(node.labels.items()))
    registration["kubeletExtraArgs"] = _args(cluster.kubeadm_api, extra)
    return registration


def _local_api_endpoint(cluster: ClusterParams, node: NodeParams) -> dict[str, Any]:
    # ``controlPlaneEndpoint`` is the VIP (or the single control-plane node); the local API server binds the same port
    # (``bindPort``), because kube-vip only moves the address, not the port.
    _, port = _split_host_port(cluster.control_plane_endpoint)
    return {"advertiseAddress": node.advertise_address, "bindPort": port}


def kubelet_config(cluster: ClusterParams) -> dict[str, Any]:
    """The cluster-wide KubeletConfiguration document. kubeadm uploads it to the kubelet-config ConfigMap at
    init and every joining node (Linux and Windows) downloads it, so only node-independent settings belong here.

    Left to kubeadm on purpose (cmd/kubeadm/app/componentconfigs/kubelet.go, kubeletConfig.Default):
    clusterDNS (derived from the service subnet) and clusterDomain (from networking.dnsDomain) - setting them
    here could only drift from ClusterConfiguration; rotateCertificates (forced to true), webhook
    authentication/authorization, healthz and staticPodPath.
    resolvConf must stay unset: this document is shared by Ubuntu (systemd-resolved, needs
    /run/systemd/resolve/resolv.conf), Rocky (plain /etc/resolv.conf) and Windows nodes. Current kubeadm
    picks it per node when it writes the node's kubelet config (mutateResolverConfig,
    cmd/kubeadm/app/componentconfigs/kubelet_unix.go); a cluster-wide value is what broke RHEL joins to an
    Ubuntu-initialised cluster in kubernetes/kubeadm#3034.
    serverTLSBootstrap (``cluster.server_tls_bootstrap``, config `resourceMetrics`): the kubelet asks the cluster CA
    for its serving certificate instead of signing its own, which lets metrics-server verify it. It "requires an
    approver to approve the certificate signing requests" (kubelet v1beta1 types.go) and kubeadm ships none: the
    stack runs one on the control-plane nodes (render/serving_approver.py), and until it approves, the kubelet serves no TLS at
    all (no self-signed fallback: InitializeTLS in cmd/kubelet/app/server.go), so `kubectl logs/exec` wait for it.
    Written only when on, so that a cluster without it keeps the document it always had.
    """
    _check_cluster(cluster)
    return {
        "apiVersion": KUBELET_CONFIG_API,
        "kind": "KubeletConfiguration",
        # containerd runs runc with SystemdCgroup = true (render/linux_node.py); kubelet and runtime must agree.
        # kubeadm also defaults an empty cgroupDriver to systemd, so Windows nodes (which have no cgroups)
        # already receive this value from every kubeadm cluster; stating it keeps the intent visible.
        "cgroupDriver": "systemd",
        "serializeImagePulls": False,
        "maxParallelImagePulls": MAX_PARALLEL_IMAGE_PULLS,
        **({"serverTLSBootstrap": True} if cluster.server_tls_bootstrap else {}),
        **{key: list(value) if isinstance(value, tuple) else value for key, value in cluster.kubelet_settings},
    }


def _cluster_configuration(cluster: ClusterParams) -> dict[str, Any]:
    api = cluster.kubeadm_api
    return {
        "apiVersion": api,
        "kind": "ClusterConfiguration",
        "clusterName": cluster.cluster_name,
        "kubernetesVersion": "v" + cluster.kubernetes_version.removeprefix("v"),
        "controlPlaneEndpoint": cluster.control_plane_endpoint,
        # No ``imageRepository``: its default (registry.k8s.io) stays, the registry mirror being containerd's hosts.toml
        # business, so image names stay canonical and kubeadm's preflight image check still matches.
        "networking": {
            "podSubnet": cluster.pod_subnet,
            "serviceSubnet": cluster.service_subnet,
            "dnsDomain": cluster.dns_domain,
        },
        **control_plane_components(cluster),
    }


def control_plane_components(cluster: ClusterParams) -> dict[str, Any]:
    """The apiServer, controllerManager and scheduler sections of the ClusterConfiguration: what init uploads to the
    kubeadm-config ConfigMap and what the control-plane settings step keeps there for an existing cluster
    (render/scripts/kubeadm-config-sync.sh), from which every `kubeadm join --control-plane` and `kubeadm upgrade`
    writes the static Pod manifests."""
    api = cluster.kubeadm_api
    api_server: dict[str, Any] = {
        "certSANs": list(cluster.cert_sans),
        "extraArgs": _args(api, {"service-node-port-range": cluster.service_node_port_range,
                                 **dict(cluster.api_server_args), **dict(cluster.hardening_args)}),
    }
    if cluster.api_server_volumes:
        # readOnly only when true: kubeadm writes the document back without a false one (HostPathMount's
        # `readOnly,omitempty`), and the settings step compares what it finds with this.
        api_server["extraVolumes"] = [
            {"name": m.name, "hostPath": m.host_path, "mountPath": m.mount_path,
             **({"readOnly": True} if m.read_only else {}), **({"pathType": m.path_type} if m.path_type else {})}
            for m in cluster.api_server_volumes]
    sections: dict[str, Any] = {
        "apiServer": api_server,
        "controllerManager": {
            "extraArgs": _args(api, {"node-cidr-mask-size": str(cluster.node_cidr_mask_size),
                                     **dict(cluster.controller_manager_args)}),
        },
    }
    if cluster.scheduler_args:
        sections["scheduler"] = {"extraArgs": _args(api, dict(cluster.scheduler_args))}
    return sections


def _dump(documents: list[dict[str, Any]]) -> str:
    return yaml.dump_all(documents, Dumper=yaml_text.SAFE_DUMPER, sort_keys=False,
                         explicit_start=True, default_flow_style=False, width=4096)


def render_init_config(cluster: ClusterParams, node: NodeParams) -> str:
    """The ``kubeadm init --config`` file of the first control-plane node: InitConfiguration,
    ClusterConfiguration and KubeletConfiguration, as one multi-document YAML string."""
    _check_cluster(cluster)
    _check_node(node)
    if not node.control_plane:
        raise ValueError(f"{node.name}: kubeadm init runs on a control-plane node")
    init = {
        "apiVersion": cluster.kubeadm_api,
        "kind": "InitConfiguration",
        "bootstrapTokens": [{
            "description": "unused: every join creates its own short-lived token",
            "ttl": INIT_BOOTSTRAP_TOKEN_TTL,
        }],
        "localAPIEndpoint": _local_api_endpoint(cluster, node),
        "nodeRegistration": _node_registration(cluster, node),
    }
    return _dump([init, _cluster_configuration(cluster), kubelet_config(cluster)])


def render_join_config(cluster: ClusterParams, node: NodeParams) -> str:
    """The ``kubeadm join --config`` file of one node, with the JOIN_* placeholders where the join script
    puts the credentials of its fresh join line. Control-plane joins get a ``controlPlane`` section."""
    _check_cluster(cluster)
    _check_node(node)
    join: dict[str, Any] = {
        "apiVersion": cluster.kubeadm_api,
        "kind": "JoinConfiguration",
        "nodeRegistration": _node_registration(cluster, node),
        # tlsBootstrapToken defaults to bootstrapToken.token (Discovery in both types.go), so the token
        # placeholder appears once. unsafeSkipCAVerification stays false: the CA hash pins the cluster.
        "discovery": {
            "bootstrapToken": {
                "token": JOIN_TOKEN,
                "apiServerEndpoint": JOIN_API_ENDPOINT,
                "caCertHashes": [JOIN_CA_CERT_HASH],
            },
        },
    }
    if node.control_plane:
        join["controlPlane"] = {
            "localAPIEndpoint": _local_api_endpoint(cluster, node),
            "certificateKey": JOIN_CERTIFICATE_KEY,
        }
    return _dump([join])
