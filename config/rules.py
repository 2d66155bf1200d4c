"""Rules that relate one part of a stack to another (addresses, references, versions, capacity).

Each rule names the top-level sections it reads; config.loader runs every rule whose sections parsed,
so one run reports every problem it can find, each at its config key path.
"""
from __future__ import annotations

import re
import zoneinfo
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from ipaddress import IPv4Address, IPv4Network
from typing import Literal

from vocab import samples, windows_pods
from vocab.checks import NETBIOS_NAME, PLACEHOLDER_SSH_KEY, openpgp_fingerprint
from vocab.namespaces import check_namespace, parse_quantity, quota
from vocab.time_zones import windows_time_zone

from . import compat
from .endpoints import endpoints, url_host_port
from .model import DEFAULT_MTU, READ_HOST_KEY, HypervHostSpec, LinuxNodeSpec, ProxmoxNodeSpec, Spec, StackSpec, VlanSpec, WindowsNodeSpec

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


Rule = Callable[[StackSpec], Iterator[Problem]]
RULES: list[tuple[frozenset[str], Rule]] = []

# VXLAN adds 50 bytes to every packet: outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8
# (RFC 7348 section 5; Calico's MTU guide: https://docs.tigera.io/calico/latest/networking/configuring/mtu).
VXLAN_OVERHEAD = 50
# Calico for Windows supports VXLAN only with VNI 4096 and port 4789 (Windows HNS limitation):
# https://docs.tigera.io/calico/latest/getting-started/kubernetes/windows-calico/requirements
WINDOWS_VXLAN_PORT = 4789
# What a Windows node's own agents listen on (kubernetes pkg/cluster/ports/ports.go: KubeletHealthzPort 10248,
# ProxyStatusPort 10249, KubeletPort 10250, ProxyHealthzPort 10256; windows_exporter's --web.listen-address
# default :9182, cmd/windows_exporter/main.go).
WINDOWS_AGENT_PORTS = ((9182, "windows_exporter"), (10248, "kubelet healthz"), (10249, "kube-proxy metrics"),
                       (10250, "kubelet"), (10256, "kube-proxy healthz"))
WINDOWS_MIN_VNI = 4096


def rule(*sections: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        RULES.append((frozenset(sections), fn))
        return fn

    return register


def _node_paths(spec: StackSpec) -> Iterator[tuple[str, LinuxNodeSpec | WindowsNodeSpec]]:
    """Every node with its key path, in declaration order."""
    pools: tuple[tuple[str, Sequence[LinuxNodeSpec | WindowsNodeSpec]], ...] = (
        ("controlPlane", spec.nodes.control_plane),
        ("linux", spec.nodes.linux),
        ("windows", spec.nodes.windows),
    )
    for pool, nodes in pools:
        for index, node in enumerate(nodes):
            yield f"nodes.{pool}[{index}]", node


def _networks(spec: StackSpec) -> list[tuple[str, IPv4Network]]:
    networks = [("cluster.podCidr", spec.cluster.pod_cidr), ("cluster.serviceCidr", spec.cluster.service_cidr)]
    for name in ("management", "nodes", "storage"):
        vlan: VlanSpec | None = getattr(spec.network, name)
        if vlan is not None:
            networks.append((f"network.{name}.cidr", vlan.cidr))
    return networks


def _reserved(vlan: VlanSpec) -> dict[IPv4Address, str]:
    reserved = {vlan.cidr.network_address: "the network address", vlan.cidr.broadcast_address: "the broadcast address"}
    if vlan.gateway is not None:
        reserved[vlan.gateway] = "the gateway"
    return reserved


def _host_address(path: str, address: IPv4Address, vlan: VlanSpec, vlan_path: str) -> Iterator[Problem]:
    if address not in vlan.cidr:
        yield Problem(path, f"{address} is not in {vlan_path} {vlan.cidr}")
    elif address in _reserved(vlan):
        yield Problem(path, f"{address} is {_reserved(vlan)[address]} of {vlan_path} {vlan.cidr}")


@rule("cluster", "network")
def networks_disjoint(spec: StackSpec) -> Iterator[Problem]:
    networks = _networks(spec)
    for i, (path_a, net_a) in enumerate(networks):
        for path_b, net_b in networks[i + 1 :]:
            if net_a.overlaps(net_b):
                yield Problem(path_b, f"{net_b} overlaps {path_a} {net_a}")


@rule("network")
def gateways_inside(spec: StackSpec) -> Iterator[Problem]:
    for name in ("management", "nodes", "storage"):
        vlan: VlanSpec | None = getattr(spec.network, name)
        if vlan is not None and vlan.gateway is not None and vlan.gateway not in vlan.cidr:
            yield Problem(f"network.{name}.gateway", f"{vlan.gateway} is not in {vlan.cidr}")
    if spec.network.nodes.gateway is None:
        yield Problem("network.nodes.gateway", "the node network needs a gateway (the nodes' default route)")


@rule("network", "nodes")
def proxmox_bridges(spec: StackSpec) -> Iterator[Problem]:
    # A NIC with no bridge would land on the provider's default bridge, untagged: never what was meant.
    if spec.network.nodes.proxmox_bridge is None:
        yield Problem("network.nodes.proxmoxBridge", "Linux nodes need the Proxmox bridge of the node VLAN")
    management = spec.network.management
    if management is not None and management.proxmox_bridge is None and any(n.management_ip for n in spec.linux_nodes):
        yield Problem("network.management.proxmoxBridge", "nodes with a managementIp need the Proxmox bridge of the management VLAN")
    for key in ("nodes", "management", "storage"):
        vlan = getattr(spec.network, key)
        if vlan is not None and vlan.proxmox_vlan_aware and vlan.vlan_id is None:
            yield Problem(f"network.{key}.proxmoxVlanAware", "tags the Linux NICs with vlanId, which this network does "
                                                              "not have: add vlanId, or leave proxmoxVlanAware out")
        elif vlan is not None and vlan.vlan_id is not None and not vlan.proxmox_vlan_aware and vlan.proxmox_bridge == "vmbr0":
            yield Problem(f"network.{key}.proxmoxBridge", f"vmbr0 with vlanId {vlan.vlan_id}: the Linux NICs carry no tag, "
                                                          f"so vmbr0 must be on VLAN {vlan.vlan_id} already; if it is "
                                                          "VLAN-aware, set proxmoxVlanAware: true", "warning")
        # Only the node network reaches the Windows VMs (render/hyperv.py: one NIC).
        if key != "nodes" and vlan is not None and not vlan.hyperv_vlan_tagged:
            yield Problem(f"network.{key}.hypervVlanTagged", "only the node network reaches the Windows VMs: remove the "
                                                              "key", "warning")


@rule("network", "nodes")
def node_addresses(spec: StackSpec) -> Iterator[Problem]:
    seen: dict[IPv4Address, str] = {}
    for path, node in _node_paths(spec):
        addresses: list[tuple[str, IPv4Address, VlanSpec, str]] = [(f"{path}.ip", node.ip, spec.network.nodes, "network.nodes")]
        if isinstance(node, LinuxNodeSpec) and node.management_ip is not None:
            if spec.network.management is None:
                yield Problem(f"{path}.managementIp", "there is no management network: declare network.management "
                                                      "(cidr, proxmoxBridge), or remove managementIp")
            else:
                addresses.append((f"{path}.managementIp", node.management_ip, spec.network.management,
                                  "network.management"))
        for address_path, address, vlan, vlan_path in addresses:
            yield from _host_address(address_path, address, vlan, vlan_path)
            if address in seen:
                yield Problem(address_path, f"{address} is already used by {seen[address]}")
            seen.setdefault(address, address_path)


@rule("cluster", "network", "nodes", "proxmox", "hyperv")
def infrastructure_addresses(spec: StackSpec) -> Iterator[Problem]:
    """A node or the API VIP on the address of a Proxmox node, a Hyper-V host or a DNS server would take
    that machine's traffic (ARP answers from two hosts): every address the cluster claims is its own."""
    taken: dict[IPv4Address, str] = {}
    for index, node in enumerate(spec.proxmox.nodes):
        taken.setdefault(node.address, f"proxmox.nodes[{index}].address")
    for index, host in enumerate(spec.hyperv.hosts):
        if host.address in taken:
            yield Problem(f"hyperv.hosts[{index}].address", f"{host.address} is also {taken[host.address]}")
        taken.setdefault(host.address, f"hyperv.hosts[{index}].address")
    for index, server in enumerate(spec.network.dns_servers):
        taken.setdefault(server, f"network.dnsServers[{index}]")
    claimed = [(f"{path}.ip", node.ip) for path, node in _node_paths(spec)]
    claimed += [(f"{path}.managementIp", node.management_ip) for path, node in _node_paths(spec)
                if isinstance(node, LinuxNodeSpec) and node.management_ip is not None]
    if spec.cluster.api_vip is not None:
        claimed.append(("cluster.apiVip", spec.cluster.api_vip))
    for path, address in claimed:
        if address in taken:
            yield Problem(path, f"{address} is already {taken[address]}")


@rule("cluster", "network", "nodes")
def api_endpoint(spec: StackSpec) -> Iterator[Problem]:
    vip = spec.cluster.api_vip
    if vip is None:
        if len(spec.nodes.control_plane) > 1:
            yield Problem("cluster.apiVip", "a control plane of several nodes needs a virtual IP for the API server")
        return
    yield from _host_address("cluster.apiVip", vip, spec.network.nodes, "network.nodes")
    for path, node in _node_paths(spec):
        if node.ip == vip:
            yield Problem("cluster.apiVip", f"{vip} is also the address of {path}")


@rule("nodes")
def node_names(spec: StackSpec) -> Iterator[Problem]:
    names = Counter(node.name for _, node in _node_paths(spec))
    netbios = Counter(node.netbios_name.upper() for node in spec.nodes.windows)
    for path, node in _node_paths(spec):
        if names[node.name] > 1:
            yield Problem(f"{path}.name", f"node name {node.name!r} is used more than once")
    for index, node in enumerate(spec.nodes.windows):
        key = "computerName" if node.computer_name else "name"
        # NetBIOS computer names are limited to 15 characters:
        # https://learn.microsoft.com/en-us/troubleshoot/windows-server/active-directory/naming-conventions-for-computer-domain-site-ou
        if len(node.netbios_name) > 15:
            yield Problem(f"nodes.windows[{index}].{key}", f"Windows computer name {node.netbios_name!r} is longer than "
                                                           "15 characters; set computerName")
        elif not NETBIOS_NAME.match(node.netbios_name):
            yield Problem(f"nodes.windows[{index}].{key}", f"{node.netbios_name!r} is not a Windows computer name (NetBIOS: "
                                                           "1-15 letters, digits or '-', not only digits); set computerName")
        elif netbios[node.netbios_name.upper()] > 1:
            yield Problem(f"nodes.windows[{index}].{key}", f"Windows computer name {node.netbios_name!r} is used more than once")


# Helm's limit on a release name (helm pkg/chartutil/validate_name.go maxReleaseNameLen: "a Helm release name
# must be at most 53 characters", so that the names a chart derives from it fit a DNS label).
HELM_RELEASE_NAME_MAX = 53
# The Helm releases the program installs, <cluster.name>-<suffix>, by the optional section that declares them (None:
# always). tests/program/test_addons.py checks this table against the releases each section renders.
HELM_RELEASES: dict[str | None, tuple[str, ...]] = {
    None: ("network-tigera-operator",),
    "resourceMetrics": ("metrics-server-metrics-server",),
    "storage.smb": ("storage-csi-driver-smb",), "storage.nfs": ("storage-csi-driver-nfs",),
    "storage.longhorn": ("storage-longhorn",),
    "observability.metrics": ("observability-kube-prometheus-stack",),
    "observability.logs": ("observability-fluent-bit",),
    "policy": ("policy-gatekeeper",), "tls": ("tls-cert-manager", "tls-approver-policy"),
    "loadBalancer": ("load-balancer-metallb",), "workloads": ("samples-envoy-gateway",),
    "customMetrics": ("custom-metrics-keda",), "progressiveDelivery": ("progressive-delivery-argo-rollouts",),
    "tracing": ("tracing-opentelemetry-collector",), "backup": ("backup-velero",),
}


def helm_releases(spec: StackSpec) -> list[tuple[str | None, str]]:
    """(section, release name) of every Helm release the stack installs."""
    return [(section, f"{spec.cluster.name}-{suffix}") for section, suffixes in HELM_RELEASES.items()
            if section is None or section_on(spec, section) for suffix in suffixes]


@rule("cluster", "storage", "observability", "policy", "tls", "loadBalancer", "workloads", "customMetrics",
      "progressiveDelivery", "tracing", "backup", "resourceMetrics")
def release_names(spec: StackSpec) -> Iterator[Problem]:
    """Every Helm release name within Helm's limit, checked for the sections the stack has: a cluster name cannot be
    changed later (components/guards.py ClusterIdentity), so the message says how long it may be and what makes it
    so."""
    releases = helm_releases(spec)
    section, longest = max(releases, key=lambda item: len(item[1]))
    if len(longest) > HELM_RELEASE_NAME_MAX:
        room = HELM_RELEASE_NAME_MAX - (len(longest) - len(spec.cluster.name))
        cause = f"with {section} on, " if section is not None else ""
        yield Problem("cluster.name", f"{spec.cluster.name} has {len(spec.cluster.name)} characters: {cause}the Helm "
                                      f"release {longest} would have {len(longest)}, past Helm's "
                                      f"{HELM_RELEASE_NAME_MAX}; a cluster of this stack's sections may have a name of "
                                      f"at most {room} characters")


@rule("nodes")
def first_control_plane_stays(spec: StackSpec) -> Iterator[Problem]:
    first = spec.nodes.control_plane[0]
    for key in ("retire", "lost"):
        if getattr(first, key):
            # kubeadm init ran there and every lifecycle command runs there (components/cluster/bootstrap.py).
            yield Problem(f"nodes.controlPlane[0].{key}",
                          f"{first.name} is the first control-plane node, where the cluster was initialised and every "
                          "node's lifecycle commands run; it cannot be retired or lost (docs/lifecycle.md: The "
                          "first control-plane node)")


@rule("nodes")
def pool_shape(spec: StackSpec) -> Iterator[Problem]:
    count = len(spec.nodes.control_plane)
    if count % 2 == 0:
        # etcd needs a majority: an even member count tolerates no more failures than one fewer.
        yield Problem("nodes.controlPlane", f"{count} control-plane nodes: use an odd number (1 or 3) for etcd quorum")
    if not spec.nodes.linux:
        yield Problem("nodes.linux", "at least one Linux worker is needed: CoreDNS, the operators and Linux-only DaemonSets run there")


@rule("cluster", "nodes")
def pod_cidr_capacity(spec: StackSpec) -> Iterator[Problem]:
    pod, mask = spec.cluster.pod_cidr, spec.cluster.node_cidr_mask_size
    if mask < pod.prefixlen:
        yield Problem("cluster.nodeCidrMaskSize", f"/{mask} is larger than the pod CIDR {pod}")
        return
    capacity = 2 ** (mask - pod.prefixlen)
    count = sum(1 for _ in _node_paths(spec))
    if count > capacity:
        yield Problem("cluster.nodeCidrMaskSize",
                      f"pod CIDR {pod} holds {capacity} node ranges of /{mask}, but the stack has {count} nodes")


@rule("calico", "network", "nodes")
def calico_network(spec: StackSpec) -> Iterator[Problem]:
    calico = spec.calico
    limit = spec.network.underlay_mtu - VXLAN_OVERHEAD
    if calico.encapsulation.startswith("VXLAN") and calico.mtu > limit:
        yield Problem("calico.mtu", f"{calico.mtu} exceeds the underlay MTU {spec.network.underlay_mtu} "
                      f"minus VXLAN's {VXLAN_OVERHEAD} bytes ({limit})")
    windows_limit = DEFAULT_MTU - VXLAN_OVERHEAD
    if spec.nodes.windows and calico.encapsulation.startswith("VXLAN") and calico.mtu > windows_limit:
        yield Problem("calico.mtu", f"{calico.mtu} with Windows nodes: the program leaves the Hyper-V VMs' NICs at "
                      f"{DEFAULT_MTU} (no jumbo frames), so VXLAN packets would not fit them; at most {windows_limit}")
    if spec.nodes.windows:
        # Calico for Windows: VXLAN only (no IPIP, no cross-subnet), no BGP with VXLAN
        # (https://docs.tigera.io/calico/latest/getting-started/kubernetes/windows-calico/requirements).
        if calico.encapsulation != "VXLAN":
            yield Problem("calico.encapsulation", f"{calico.encapsulation} is not supported with Windows nodes: use VXLAN")
        if calico.bgp != "Disabled":
            yield Problem("calico.bgp", "BGP must be Disabled with VXLAN and Windows nodes")
        if calico.vxlan_port != WINDOWS_VXLAN_PORT:
            yield Problem("calico.vxlanPort", f"Windows nodes require VXLAN port {WINDOWS_VXLAN_PORT}")
        if calico.vxlan_vni < WINDOWS_MIN_VNI:
            yield Problem("calico.vxlanVni", f"Windows nodes require a VXLAN VNI of at least {WINDOWS_MIN_VNI}")


@rule("cluster", "calico")
def calico_block(spec: StackSpec) -> Iterator[Problem]:
    if spec.calico.block_size < spec.cluster.pod_cidr.prefixlen:
        yield Problem("calico.blockSize", f"/{spec.calico.block_size} blocks do not fit in the pod CIDR {spec.cluster.pod_cidr}")


# Below a /27 (28 pod addresses) a Windows node fits little more than its own system pods.
WINDOWS_SMALL_BLOCK = 27


@rule("calico", "nodes")
def windows_pod_capacity(spec: StackSpec) -> Iterator[Problem]:
    """A Windows node has one block, four addresses short (vocab.windows_pods.windows_pod_capacity); its kubelet
    gets maxPods to match, so the block size sets how many pods each Windows node runs."""
    if not spec.nodes.windows:
        return
    capacity = windows_pods.windows_pod_capacity(spec.calico.block_size)
    if capacity < 1:
        yield Problem("calico.blockSize", f"a /{spec.calico.block_size} block leaves no pod address on a Windows node "
                      f"(Windows reserves {windows_pods.CALICO_WINDOWS_RESERVED_IPS_PER_BLOCK} per block): use /29 or larger")
    elif spec.calico.block_size > WINDOWS_SMALL_BLOCK:
        yield Problem("calico.blockSize", f"each Windows node can run only {capacity} pods with /{spec.calico.block_size} "
                      "blocks (one block per Windows node)", severity="warning")


@rule("zones", "proxmox", "hyperv", "nodes")
def references(spec: StackSpec) -> Iterator[Problem]:
    zones = set(spec.zones)
    for index, zone in enumerate(spec.zones):
        if spec.zones.count(zone) > 1 and spec.zones.index(zone) != index:
            yield Problem(f"zones[{index}]", f"zone {zone!r} is listed twice")
    proxmox = {node.name: node for node in spec.proxmox.nodes}
    hosts = {host.name: host for host in spec.hyperv.hosts}
    for index, proxmox_node in enumerate(spec.proxmox.nodes):
        if proxmox_node.zone not in zones:
            yield Problem(f"proxmox.nodes[{index}].zone", f"unknown zone {proxmox_node.zone!r} (zones: {', '.join(spec.zones)})")
    for index, hyperv_host in enumerate(spec.hyperv.hosts):
        if hyperv_host.zone not in zones:
            yield Problem(f"hyperv.hosts[{index}].zone", f"unknown zone {hyperv_host.zone!r} (zones: {', '.join(spec.zones)})")
    seen_templates: set[tuple[str, str]] = set()
    for index, template in enumerate(spec.proxmox.templates):
        if template.node not in proxmox:
            yield Problem(f"proxmox.templates[{index}].node", f"unknown Proxmox node {template.node!r}")
        if (template.distro, template.node) in seen_templates:
            # A node clones the one template of its distro on its Proxmox node: a second would leave which one unsaid.
            yield Problem(f"proxmox.templates[{index}]", f"a second {template.distro} template on Proxmox node "
                          f"{template.node}: keep one (change its vmId to move new nodes to a new template)")
        seen_templates.add((template.distro, template.node))
    templates = {(t.distro, t.node) for t in spec.proxmox.templates}
    for path, node in _node_paths(spec):
        if node.zone not in zones:
            yield Problem(f"{path}.zone", f"unknown zone {node.zone!r} (zones: {', '.join(spec.zones)})")
        if isinstance(node, LinuxNodeSpec):
            target = proxmox.get(node.proxmox_node)
            if target is None:
                yield Problem(f"{path}.proxmoxNode", f"unknown Proxmox node {node.proxmox_node!r}")
            elif target.zone != node.zone:
                yield Problem(f"{path}.proxmoxNode", f"{node.proxmox_node} is in zone {target.zone}, not {node.zone}")
            elif (node.distro, node.proxmox_node) not in templates:
                yield Problem(f"{path}.distro", f"no {node.distro} template on Proxmox node {node.proxmox_node} (proxmox.templates)")
        else:
            host = hosts.get(node.hyperv_host)
            if host is None:
                yield Problem(f"{path}.hypervHost", f"unknown Hyper-V host {node.hyperv_host!r}")
            elif host.zone != node.zone:
                yield Problem(f"{path}.hypervHost", f"{node.hyperv_host} is in zone {host.zone}, not {node.zone}")
            elif node.version not in host.golden_images:
                yield Problem(f"{path}.version",
                              f"Hyper-V host {host.name} has no golden image for {node.version} (hyperv.hosts[].goldenImages)")


@rule("proxmox", "nodes")
def vm_ids(spec: StackSpec) -> Iterator[Problem]:
    owners: dict[int, str] = {}
    ids = [(f"proxmox.templates[{i}].vmId", t.vm_id) for i, t in enumerate(spec.proxmox.templates)]
    ids += [(f"{path}.vmId", node.vm_id) for path, node in _node_paths(spec) if hasattr(node, "vm_id")]
    for path, vm_id in ids:
        if vm_id in owners:
            yield Problem(path, f"VM id {vm_id} is already used by {owners[vm_id]}")
        owners.setdefault(vm_id, path)


@rule("proxmox", "hyperv")
def host_names(spec: StackSpec) -> Iterator[Problem]:
    sections: tuple[tuple[str, Sequence[ProxmoxNodeSpec | HypervHostSpec]], ...] = (
        ("proxmox.nodes", spec.proxmox.nodes), ("hyperv.hosts", spec.hyperv.hosts))
    for section, items in sections:
        names = Counter(item.name for item in items)
        for index, item in enumerate(items):
            if names[item.name] > 1:
                yield Problem(f"{section}[{index}].name", f"{item.name!r} is listed twice")


@rule("cluster", "nodes")
def versions(spec: StackSpec) -> Iterator[Problem]:
    version = spec.cluster.kubernetes_version
    minor = compat.kubernetes_minor(version)
    release = compat.KUBERNETES.get(minor)
    if release is None:
        yield Problem("cluster.kubernetesVersion",
                      f"Kubernetes {minor} is not supported; supported: {', '.join(compat.supported_versions())}")
        return
    if compat.patch_number(version) > compat.patch_number(release.patch):
        # Newer than any release the matrix knows: the packages and images would not exist.
        yield Problem("cluster.kubernetesVersion", f"{version} is not a known {minor} release; the newest in "
                                                   f"config/compat.py is {release.patch}")
    for path, node in _node_paths(spec):
        if hasattr(node, "distro"):
            distro = compat.DISTROS[node.distro]
            if not distro.cgroup_v2 and release.refuses_cgroup_v1:
                yield Problem(f"{path}.distro", f"{node.distro} runs cgroup v1, which the kubelet of Kubernetes {minor} refuses")
            elif distro.end_of_life <= date.today():
                yield Problem(f"{path}.distro", f"{node.distro} reached end of life on {distro.end_of_life}", "warning")
        else:
            build = compat.WINDOWS[node.version]
            missing = _missing_images(build)
            if missing:
                yield Problem(f"{path}.version", f"no {', '.join(missing)} image for {node.version} ({build.build})")
            elif not build.calico_images:
                yield Problem(f"{path}.version", f"Calico builds no Windows images for {node.version} ({build.ltsc_tag}); "
                                                 f"Calico for Windows runs on {', '.join(_calico_windows())}")
            elif not build.upstream_supported:
                if node.version in spec.windows.allow_unsupported_versions:
                    yield Problem(f"{path}.version", f"{node.version} is not supported by upstream Kubernetes "
                                                     "(accepted by windows.allowUnsupportedVersions)", "warning")
                else:
                    yield Problem(f"{path}.version", f"{node.version} is not supported by upstream Kubernetes; move the "
                                                     "node to a supported version, or accept it explicitly in "
                                                     "windows.allowUnsupportedVersions")


@rule("cluster", "workloads")
def envoy_gateway_support(spec: StackSpec) -> Iterator[Problem]:
    minor = compat.kubernetes_minor(spec.cluster.kubernetes_version)
    supported = compat.ENVOY_GATEWAY.kubernetes
    if spec.workloads is not None and minor in compat.KUBERNETES and minor not in supported:
        yield Problem("cluster.kubernetesVersion",
                      f"the samples' gateway, Envoy Gateway {compat.ENVOY_GATEWAY.version}, supports Kubernetes "
                      f"{', '.join(supported)}, not {minor}; use a supported minor, or leave out the workloads section")


def _calico_windows() -> list[str]:
    return [key for key, build in compat.WINDOWS.items() if build.calico_images and build.upstream_supported]


def _missing_images(build: compat.WindowsBuild) -> list[str]:
    """The image fields of a Windows build that have no published image for it."""
    return [f.name.removesuffix("_image") for f in fields(build) if f.name.endswith("_image") and getattr(build, f.name) is None]


@rule("cluster", "windows", "nodes")
def windows_ports(spec: StackSpec) -> Iterator[Problem]:
    start, count = spec.windows.dynamic_port_start, spec.windows.dynamic_port_count
    end = start + count - 1
    if end > 65535:
        yield Problem("windows.dynamicPortCount", f"{start}+{count} runs past port 65535")
    low, high = spec.cluster.node_ports
    if spec.nodes.windows and start <= high and low <= end:
        # Windows hands out ephemeral ports from this range; one inside the NodePort range breaks
        # the NodePort that happens to collide on that node.
        yield Problem("windows.dynamicPortStart", f"dynamic ports {start}-{end} overlap the NodePort range {low}-{high}; "
                                                  "the default 33000-65535 (start 33000, count 32536) stays above it")
    # An agent's port inside the range can be handed out (or reserved by Windows components at boot,
    # kubernetes/kubernetes#107114) before the agent binds it after a reboot.
    taken = sorted(port for port, _ in WINDOWS_AGENT_PORTS if start <= port <= end)
    if spec.nodes.windows and taken:
        names = ", ".join(f"{port} ({what})" for port, what in WINDOWS_AGENT_PORTS if port in taken)
        yield Problem("windows.dynamicPortStart", f"dynamic ports {start}-{end} contain ports the node's own agents listen on: "
                                                  f"{names}; use a range above them, e.g. start 33000, count 32536")


@rule("registry")
def mirrors(spec: StackSpec) -> Iterator[Problem]:
    upstreams = Counter(mirror.upstream for mirror in spec.registry.mirrors)
    for index, mirror in enumerate(spec.registry.mirrors):
        if upstreams[mirror.upstream] > 1:
            yield Problem(f"registry.mirrors[{index}].upstream", f"{mirror.upstream} has more than one mirror")


@rule("zones", "storage", "nodes")
def storage_backends(spec: StackSpec) -> Iterator[Problem]:
    storage = spec.storage
    if storage is None:
        return
    longhorn = storage.longhorn
    # Longhorn runs on Linux workers only and keeps each replica of a volume on its own node, and in its own zone
    # while there are zones enough (plan/platform.py longhorn_params; the default count: StackSpec.longhorn_replicas).
    worker_zones, workers = spec.linux_worker_zones, len(spec.nodes.linux)
    if longhorn is not None and longhorn.replicas is not None and longhorn.replicas > workers:
        yield Problem("storage.longhorn.replicas", f"{longhorn.replicas} replicas need as many Linux workers; the stack "
                      f"has {workers} (Longhorn keeps each replica on its own worker): use at most {workers}, or leave "
                      "replicas out")
    elif longhorn is not None and len(worker_zones) > 1 and spec.longhorn_replicas > len(worker_zones):
        yield Problem("storage.longhorn.replicas", f"{spec.longhorn_replicas} replicas in "
                      f"{len(worker_zones)} zones with a Linux worker: two replicas of a volume can share a zone, and "
                      "losing that zone loses both; add a worker in another zone, or set replicas to "
                      f"{len(worker_zones)}", "warning")
    enabled = {"shared-files": ("smb", storage.smb), "nfs-files": ("nfs", storage.nfs), "longhorn": ("longhorn", longhorn)}
    if storage.default_class is not None:
        section, backend = enabled[storage.default_class]
        if backend is None:
            yield Problem("storage.defaultClass", f"{storage.default_class!r} is the class of storage.{section}, which is "
                          "not configured: add that section, or name the class of a configured backend")
    elif storage.smb is None and storage.nfs is None and longhorn is None:
        yield Problem("storage", "no backend is configured: add smb, nfs or longhorn, or leave the storage section out",
                      severity="warning")


def check(spec: StackSpec, parsed: set[str]) -> list[Problem]:
    """Every problem found by the rules whose sections all parsed."""
    return [problem for sections, fn in RULES if sections <= parsed for problem in fn(spec)]


@rule("namespaces", "workloads", "policy")
def namespaces(spec: StackSpec) -> Iterator[Problem]:
    """The namespace checks the renderer applies too (vocab.namespaces: name prefix per OS, quantities that relate), at the key path,
    and every reference to a namespace names one that is declared, for the right OS."""
    declared = {}
    for index, namespace in enumerate(spec.namespaces):
        if namespace.name in declared:
            yield Problem(f"namespaces[{index}].name", f"namespace {namespace.name!r} is declared twice")
        declared[namespace.name] = namespace
        try:
            check_namespace(namespace.params())
        except ValueError as error:
            yield Problem(f"namespaces[{index}]", str(error))
    workloads = spec.workloads
    for key, os_name in (("windowsNamespace", "windows"), ("linuxNamespace", "linux")):
        if workloads is None:
            break
        name = workloads.windows_namespace if os_name == "windows" else workloads.linux_namespace
        if name not in declared or declared[name].os != os_name:
            yield Problem(f"workloads.{key}", f"{name!r} is not a declared {os_name} namespace (namespaces)")
    policy_namespaces = spec.policy.namespaces if spec.policy is not None else []
    for index, name in enumerate(policy_namespaces):
        if name not in declared:
            yield Problem(f"policy.namespaces[{index}]", f"{name!r} is not a declared namespace (namespaces)")
        elif name in policy_namespaces[:index]:
            yield Problem(f"policy.namespaces[{index}]", f"{name!r} is listed twice")


# kubeadm's preflight refuses a control-plane node with fewer CPUs or less memory (cmd/kubeadm/app/constants/
# constants.go: ControlPlaneNumCPU = 2, ControlPlaneMem = 1700 MB, checked against the memory the guest sees).
KUBEADM_CONTROL_PLANE_CPUS = 2
KUBEADM_CONTROL_PLANE_MEMORY_MB = 1700
# A guest sees less memory than its VM is given (the kernel keeps some): below this, the check can fail.
CONTROL_PLANE_MEMORY_MARGIN_MB = 2048


@rule("nodes")
def control_plane_size(spec: StackSpec) -> Iterator[Problem]:
    for index, node in enumerate(spec.nodes.control_plane):
        path = f"nodes.controlPlane[{index}]"
        if node.cpu < KUBEADM_CONTROL_PLANE_CPUS:
            yield Problem(f"{path}.cpu", f"kubeadm requires at least {KUBEADM_CONTROL_PLANE_CPUS} CPUs on a control-plane "
                                         f"node (preflight NumCPU): use cpu: {KUBEADM_CONTROL_PLANE_CPUS} or more")
        if node.memory_mb < KUBEADM_CONTROL_PLANE_MEMORY_MB:
            yield Problem(f"{path}.memoryMb", f"kubeadm requires at least {KUBEADM_CONTROL_PLANE_MEMORY_MB} MB on a "
                                              "control-plane node (preflight Mem): use memoryMb: 4096 (2048 at least)")
        elif node.memory_mb < CONTROL_PLANE_MEMORY_MARGIN_MB:
            yield Problem(f"{path}.memoryMb", f"{node.memory_mb} MB leaves the guest under kubeadm's "
                                              f"{KUBEADM_CONTROL_PLANE_MEMORY_MB} MB once the kernel takes its share: use "
                                              "2048 or more", "warning")


def _loopback(host: str | IPv4Address) -> bool:
    if isinstance(host, IPv4Address):
        return host.is_loopback
    try:
        return IPv4Address(host).is_loopback
    except ValueError:
        return host.lower().rstrip(".") in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost")


@rule("network", "ntpServers", "observability", "storage", "etcdBackup", "registry")
def no_loopback_targets(spec: StackSpec) -> Iterator[Problem]:
    """Servers the nodes and pods reach must be other machines: 127.0.0.53 in a workstation's resolv.conf is its
    own systemd-resolved stub, and on a node or in a pod a loopback address is that node or pod itself."""
    targets: list[tuple[str, str | IPv4Address, str]] = [
        (f"network.dnsServers[{i}]", server, "the site's DNS servers, e.g. the router or domain controllers")
        for i, server in enumerate(spec.network.dns_servers)]
    targets += [(f"ntpServers[{i}]", server, "the site's NTP servers or a pool, e.g. pool.ntp.org")
                for i, server in enumerate(spec.ntp_servers)]
    if spec.observability is not None and spec.observability.logs is not None:
        targets.append(("observability.logs.host", spec.observability.logs.host, "the log server's address or DNS name"))
    if spec.storage is not None and spec.storage.nfs is not None:
        targets.append(("storage.nfs.server", spec.storage.nfs.server, "the NFS server's address or DNS name"))
    if spec.etcd_backup is not None:
        targets.append(("etcdBackup.nfsServer", spec.etcd_backup.nfs_server, "the NFS server's address or DNS name"))
    for index, mirror in enumerate(spec.registry.mirrors):
        mirror_host = url_host_port(mirror.endpoint)[0]
        targets.append((f"registry.mirrors[{index}].endpoint", mirror_host, "the mirror's address or DNS name"))
    for path, target, fix in targets:
        if _loopback(target):
            if path.startswith("registry.mirrors"):
                # A node-local mirror (Spegel, kube-image-keeper) is that node by design: only likely a mistake.
                yield Problem(path, f"{target} is a loopback address: each node's containerd pulls from itself; "
                                    "right only for a mirror every node runs locally", "warning")
            else:
                yield Problem(path, f"{target} is a loopback address: on a node or in a pod it is that machine itself; "
                                    f"use {fix}")


@rule("proxmox")
def proxmox_endpoint(spec: StackSpec) -> Iterator[Problem]:
    endpoint = spec.proxmox.endpoint
    # The bpg provider appends api2/json to the endpoint itself (proxmox/api/client.go: basePathJSONAPI,
    # "%s/%s/%s" of endpoint, api2/json, path): an endpoint ending in it would request /api2/json/api2/json/...
    if endpoint.rstrip("/").endswith("/api2/json"):
        yield Problem("proxmox.endpoint", "must not end in /api2/json (the provider adds it): write the address the "
                                          "web UI has, e.g. https://10.10.10.11:8006/")
    authority = endpoint.split("://", 1)[1].split("/", 1)[0]
    if ":" not in authority:
        # pveproxy listens on 8006 (pveproxy(8)); 443 only works behind a reverse proxy.
        yield Problem("proxmox.endpoint", f"has no port, so it means port 443; Proxmox VE's API listens on 8006: "
                                          f"https://{authority}:8006/ unless a reverse proxy serves 443", "warning")


def _range_addresses(value: str) -> tuple[IPv4Address, IPv4Address]:
    if "-" in value:
        first, last = value.split("-", 1)
        return IPv4Address(first), IPv4Address(last)
    network = IPv4Network(value)
    return network.network_address, network.broadcast_address


@rule("loadBalancer", "network", "nodes", "cluster", "proxmox", "hyperv")
def load_balancer_addresses(spec: StackSpec) -> Iterator[Problem]:
    """MetalLB's layer 2 mode answers ARP for its addresses on the node network, so they must be on it
    (metallb.universe.tf, concepts/layer2), and not an address anything else there already has."""
    if spec.load_balancer is None:
        return
    nodes_net = spec.network.nodes.cidr
    taken: dict[IPv4Address, str] = {address: f"network.nodes: {what}" for address, what in _reserved(spec.network.nodes).items()}
    for path, node in _node_paths(spec):
        taken.setdefault(node.ip, f"{path}.ip")
    if spec.cluster.api_vip is not None:
        taken.setdefault(spec.cluster.api_vip, "cluster.apiVip")
    for index, server in enumerate(spec.network.dns_servers):
        taken.setdefault(server, f"network.dnsServers[{index}]")
    for index, proxmox_node in enumerate(spec.proxmox.nodes):
        taken.setdefault(proxmox_node.address, f"proxmox.nodes[{index}].address")
    for index, host in enumerate(spec.hyperv.hosts):
        taken.setdefault(host.address, f"hyperv.hosts[{index}].address")
    spans: list[tuple[IPv4Address, IPv4Address, str]] = []
    for index, value in enumerate(spec.load_balancer.addresses):
        path = f"loadBalancer.addresses[{index}]"
        first, last = _range_addresses(value)
        if first not in nodes_net or last not in nodes_net:
            yield Problem(path, f"{value} is not inside network.nodes {nodes_net}: layer 2 mode announces addresses "
                                "on the node network only")
            continue
        clashes = sorted((address, what) for address, what in taken.items() if first <= address <= last)
        if clashes:
            listed = ", ".join(f"{address} ({what})" for address, what in clashes[:3])
            yield Problem(path, f"{value} contains addresses already in use: {listed}; choose a free range")
        for other_first, other_last, other_path in spans:
            if first <= other_last and other_first <= last:
                yield Problem(path, f"{value} overlaps {other_path}")
        spans.append((first, last, path))


@rule("tls", "workloads")
def tls_host(spec: StackSpec) -> Iterator[Problem]:
    """cert-manager issues a Gateway certificate only for a listener with a hostname (certificate-shim sync.go:
    "the hostname cannot be empty"), and an HTTP-01 challenge cannot prove a wildcard name (Let's Encrypt,
    docs/challenge-types: HTTP-01 "can't be used to issue wildcard certificates")."""
    if spec.tls is None or spec.workloads is None:
        return
    host = spec.workloads.sample_host
    if host is None:
        yield Problem("workloads.sampleHost", "HTTPS for the samples (tls) needs the host name their certificate is "
                                              "issued for, e.g. samples.hk-prod.example.com")
    elif spec.tls.acme is not None and host.startswith("*."):
        yield Problem("workloads.sampleHost", f"{host} is a wildcard, which ACME cannot validate over HTTP-01: use a "
                                              "plain name, or tls.ca")


@rule("tls")
def tls_grants(spec: StackSpec) -> Iterator[Problem]:
    """One grant per namespace (each is one CertificateRequestPolicy, render/tls.py), and no wildcard through ACME's
    HTTP-01, for the reason tls_host gives."""
    if spec.tls is None:
        return
    seen: set[str] = set()
    for i, grant in enumerate(spec.tls.allow):
        if grant.namespace in seen:
            yield Problem(f"tls.allow[{i}].namespace", f"{grant.namespace} is granted twice: list all its names in "
                                                        "one entry")
        seen.add(grant.namespace)
        for j, name in enumerate(grant.dns_names):
            if spec.tls.acme is not None and name.startswith("*."):
                yield Problem(f"tls.allow[{i}].dnsNames[{j}]", f"{name} is a wildcard, which ACME cannot validate over "
                                                               "HTTP-01: list the plain names, or use tls.ca")


# What an optional section cannot work without: section -> (what it needs, why). A need the program can meet by itself
# (cert-manager's Gateway API support only with the Gateway API's CRDs, plan/platform.py tls_plan) is met there; these
# are the ones only the stack can. tests/program/test_addons.py renders every optional section alone with its needs, and with
# each other section, and checks that every custom resource and every release waits for what installs its CRDs.
NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    # KEDA's prometheus trigger reads the cluster's Prometheus, and its cpu trigger metrics-server (keda-docs
    # scalers/cpu.md: "The Kubernetes Metrics Server must be installed").
    "customMetrics": (("observability.metrics", "KEDA scales on metrics from the cluster's Prometheus"),
                      ("resourceMetrics", "KEDA's CPU trigger reads metrics-server")),
    # The ACME issuer answers HTTP-01 challenges through the samples' Gateway (render/tls.py acme_cluster_issuer:
    # gatewayHTTPRoute parentRefs).
    "tls.acme": (("workloads", "ACME proves names over HTTP-01 through the samples' Gateway"),),
}


def section_on(spec: StackSpec, path: str) -> bool:
    """Whether the optional section at `path` (a stack-file key path, e.g. observability.metrics) is on."""
    if path == "resourceMetrics":
        return spec.resource_metrics.enabled
    value: object = spec
    for key in path.split("."):
        fields = type(value).model_fields if isinstance(value, Spec) else {}
        value = getattr(value, next((name for name, f in fields.items() if f.alias == key), key), None)
        if value is None:
            return False
    return True


@rule("customMetrics", "observability", "resourceMetrics", "tls", "workloads")
def section_needs(spec: StackSpec) -> Iterator[Problem]:
    for section, needs in NEEDS.items():
        if section_on(spec, section):
            for needed, why in needs:
                if not section_on(spec, needed):
                    how = "set resourceMetrics.enabled to true" if needed == "resourceMetrics" else f"add {needed}"
                    yield Problem(section, f"{why}, which this stack does not have: {how}, or leave out {section}")


def _untested_minor(spec: StackSpec, path: str, component: str, tested: tuple[str, ...], note: str) -> Iterator[Problem]:
    """A warning when the stack's Kubernetes minor is outside the ones a pinned component was tested on upstream."""
    minor = compat.kubernetes_minor(spec.cluster.kubernetes_version)
    if minor not in tested:
        yield Problem(path, f"{component} was tested upstream on Kubernetes {tested[0]}-{tested[-1]}, not {minor}{note}",
                      "warning")


@rule("customMetrics", "cluster")
def custom_metrics(spec: StackSpec) -> Iterator[Problem]:
    if spec.custom_metrics is None:
        return
    yield from _untested_minor(spec, "customMetrics", f"KEDA {compat.CHARTS['keda'].version}", compat.KEDA_TESTED_KUBERNETES,
                               "; it uses only stable APIs, so it is installed, but untested on this minor")


@rule("backup", "nodes", "cluster")
def backups(spec: StackSpec) -> Iterator[Problem]:
    """Velero's Windows node agent is built for Windows Server 2022 only (config.compat VELERO_WINDOWS_BUILDS): a
    process-isolated container needs its host's build, so file-system backups cannot cover another build's nodes."""
    if spec.backup is None:
        return
    if spec.backup.file_system_backup:
        for index, node in enumerate(spec.nodes.windows):
            if node.version not in compat.VELERO_WINDOWS_BUILDS:
                yield Problem(f"nodes.windows[{index}].version",
                              f"Velero's Windows node agent is built for {', '.join(compat.VELERO_WINDOWS_BUILDS)} only, "
                              f"not {node.version}, so its pods' volumes could not be backed up: set "
                              "backup.fileSystemBackup to false (objects only), or move the node to a supported build")
    offsite = spec.backup.offsite
    if offsite is None and spec.backup.offsite_retention_days is not None:
        yield Problem("backup.offsiteRetentionDays", "there are no off-site copies to keep: add backup.offsite, or remove "
                                                     "the key")
    if offsite is not None and (offsite.endpoint, offsite.bucket) == (spec.backup.primary.endpoint, spec.backup.primary.bucket):
        yield Problem("backup.offsite", "is the same bucket as backup.primary: an off-site copy must be in another site")
    yield from _untested_minor(spec, "backup", f"Velero {compat.VELERO_VERSION}", compat.VELERO_TESTED_KUBERNETES,
                               " (README compatibility matrix: newer minors are expected to work, untested)")


# A year to test the backup time against the stack's zone's clock changes (its rules, not that year's, matter).
_DST_REFERENCE_YEAR = 2027


@rule("backup", "timezone")
def backup_time_exists_every_day(spec: StackSpec) -> Iterator[Problem]:
    """Velero skips a scheduled time the clock jumps over ("jobs scheduled during daylight-savings leap-ahead
    transitions will not be run!", docs/v1.18/backup-reference.md): backup.schedule is read in `timezone` now."""
    if spec.backup is None:
        return
    minute, hour, *days = spec.backup.schedule.split()
    for value, name, top in ((minute, "minute", 59), (hour, "hour", 23)):
        if value.isdigit() and int(value) > top:
            yield Problem("backup.schedule", f"{name} {value} is out of 0-{top}: Velero would refuse the schedule")
            return
    # Only a daily time at fixed hour and minute is checked: a schedule on some days may miss the change's day.
    if not (minute.isdigit() and hour.isdigit()) or days != ["*", "*", "*"]:
        return
    zone = zoneinfo.ZoneInfo(spec.timezone)
    day = datetime(_DST_REFERENCE_YEAR, 1, 1, int(hour), int(minute))
    while day.year == _DST_REFERENCE_YEAR:
        local = day.replace(tzinfo=zone)
        if local.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != day:
            yield Problem("backup.schedule", f"{hour}:{minute.zfill(2)} does not exist in {spec.timezone} on the day its "
                                             f"clocks go forward ({day:%B %d} in {_DST_REFERENCE_YEAR}), and Velero "
                                             "skips that day's backup: choose a time outside the change",
                          severity="warning")
            return
        day += timedelta(days=1)


@rule("backup", "cluster")
def recovery_location(spec: StackSpec) -> Iterator[Problem]:
    """The recovery location is another cluster's backups: the same bucket and prefix as this cluster's own would mix
    the two clusters' backups."""
    if spec.backup is None or spec.backup.recover_from is None:
        return
    source = spec.backup.recover_from
    for key, own in (("primary", spec.backup.primary), ("offsite", spec.backup.offsite)):
        if own is not None and (own.endpoint, own.bucket, own.prefix or spec.cluster.name) == (
                source.endpoint, source.bucket, source.prefix or spec.cluster.name):
            yield Problem("backup.recoverFrom", f"is backup.{key} itself: give the replaced cluster's store and its "
                                                "prefix (its cluster name)")


@rule("progressiveDelivery", "cluster")
def progressive_delivery(spec: StackSpec) -> Iterator[Problem]:
    if spec.progressive_delivery is None:
        return
    yield from _untested_minor(spec, "progressiveDelivery",
                               f"Argo Rollouts {compat.CHARTS['argo-rollouts'].version} (controller 1.9)",
                               compat.ARGO_ROLLOUTS_TESTED_KUBERNETES, " (its end-to-end test matrix)")


_QUOTA_FIELDS = {"pods": "pods", "requests.cpu": "cpuRequests", "requests.memory": "memoryRequests",
                 "limits.cpu": "cpuLimits", "limits.memory": "memoryLimits"}


@rule("workloads", "namespaces", "resourceMetrics", "progressiveDelivery")
def sample_quotas(spec: StackSpec) -> Iterator[Problem]:
    """Each sample's namespace quota holds the sample at its peak (vocab.samples.peak_pods): otherwise the API server
    refuses the pods past the quota, and the autoscaler, a rollout or a blue-green promotion stalls without a word."""
    w = spec.workloads
    if w is None:
        return
    indexes = {ns.name: index for index, ns in enumerate(spec.namespaces)}
    blue_green = spec.progressive_delivery is not None
    for os_name, namespace, replicas, max_replicas, key in (
            ("windows", w.windows_namespace, w.windows_replicas, w.windows_max_replicas, "windowsMaxReplicas"),
            ("linux", w.linux_namespace, w.linux_replicas, w.linux_max_replicas, "linuxMaxReplicas")):
        if namespace not in indexes:
            continue   # rules.namespaces reports it
        quota_spec = spec.namespaces[indexes[namespace]]
        top = max_replicas if spec.resource_metrics.enabled else None
        pods = samples.peak_pods(replicas, top, blue_green)
        needed = samples.footprint(samples.RESOURCES[os_name], pods)
        hard = {key: parse_quantity(value) for key, value in quota(quota_spec.params()).items()}
        over = [k for k in samples.QUOTA_KEYS if needed[k] > hard[k]]
        if over:
            moment = "a blue-green promotion" if blue_green else "a rolling update"
            what = ", ".join(f"{k} {_quantity_text(needed[k])}" for k in over)
            fields = ", ".join(f"namespaces[{indexes[namespace]}].{_QUOTA_FIELDS[k]}" for k in over)
            yield Problem(f"workloads.{key}" if top is not None else f"workloads.{key.replace('Max', '')}",
                          f"at {moment} the sample in {namespace} runs {pods} pods, which need {what}, more than the "
                          f"namespace's quota: raise {fields}, or lower the replicas")


def _quantity_text(value: Decimal) -> str:
    if value >= 2**30 and value % 2**20 == 0:
        return f"{value / 2**30:g}Gi"
    return f"{value.normalize():f}"


@rule("etcdBackup", "nodes", "backup")
def etcd_snapshots_encrypted(spec: StackSpec) -> Iterator[Problem]:
    """Every control-plane node can encrypt its snapshots to the recipients' files: gpg's --recipient-file came with
    GnuPG 2.1.14 (its NEWS, 2016-07-14), which CentOS 7's gnupg2 2.0.22 predates."""
    if spec.etcd_backup is None:
        return
    for index, node in enumerate(spec.nodes.control_plane):
        if node.distro == "centos7":
            yield Problem(f"nodes.controlPlane[{index}].distro",
                          "centos7 cannot take etcdBackup: its GnuPG 2.0 cannot encrypt to a key file (--recipient-file "
                          "needs 2.1.14); give the control-plane nodes rocky9 or ubuntu22")
    seen: dict[str, int] = {}
    for index, key in enumerate(spec.etcd_backup.recipient_keys):
        fingerprint = openpgp_fingerprint(key)
        if fingerprint in seen:
            yield Problem(f"etcdBackup.recipientKeys[{index}]", f"is the key of recipientKeys[{seen[fingerprint]}] "
                                                                f"(fingerprint {fingerprint}) again; list each key once")
        seen.setdefault(fingerprint, index)
    if spec.backup is not None and spec.backup.offsite_etcd_schedule is not None:
        yield Problem("backup.offsiteEtcdSchedule", "no longer used: each control-plane node uploads its encrypted "
                                                    "snapshot off-site as soon as it is stored; remove the key", "warning")


@rule("backup")
def object_lock_checksums(spec: StackSpec) -> Iterator[Problem]:
    """A Ceph store's locations turn the AWS plugin's checksums off (render/backup.py), and S3 asks an upload to an
    Object Lock bucket with a default retention for a Content-MD5 or a checksum header (the S3 user guide, "Using S3
    Object Lock"); whether Ceph RGW insists as AWS does was not confirmed, so a backup should be tried first."""
    if spec.backup is None:
        return
    if spec.backup.recover_from is not None and spec.backup.recover_from.object_lock is not None:
        yield Problem("backup.recoverFrom.objectLock", "is not checked: this cluster only reads that store, whose lock "
                                                       "is the other cluster's (check it there); remove it")
    for key, store in (("primary", spec.backup.primary), ("offsite", spec.backup.offsite)):
        if store is not None and store.object_lock is not None and store.provider == "ceph":
            yield Problem(f"backup.{key}.objectLock", "Velero's AWS plugin sends Ceph no checksum, which an upload to a "
                                                      "bucket with Object Lock may need: run a test backup to it and "
                                                      "check it completes (docs/backup.md, \"Immutable buckets\")",
                          "warning")


@rule("backup")
def velero_repository_password(spec: StackSpec) -> Iterator[Problem]:
    """Keeping Velero's default repository password is a relaxation, said back; without file-system backups there is
    no repository to keep it for."""
    if spec.backup is None or not spec.backup.keep_velero_default_repository_password:
        return
    if not spec.backup.file_system_backup:
        yield Problem("backup.keepVeleroDefaultRepositoryPassword", "there are no file-system backups "
                                                                     "(fileSystemBackup: false): remove the key")
    else:
        yield Problem("backup.keepVeleroDefaultRepositoryPassword", "true: the repositories Velero already made keep "
                                                                     "its published default password, which opens their "
                                                                     "volume data to anyone who can read the bucket",
                      "warning")


def _host_key_missing(what: str, address: str, system: str) -> str:
    return (f"required: every SSH connection to {what} is pinned to its host key; on the host's console run "
            f"`{READ_HOST_KEY[system]}`, compare "
            f"its fingerprint with `ssh-keyscan -t ed25519 {address} | ssh-keygen -lf -` from where Pulumi runs, and set "
            "hostKey to the `ssh-ed25519 AAAA...` line; or, for a lab only, set security.pinHostKeys: false (synth warns)")


@rule("security", "proxmox", "hyperv", "access", "nodes")
def host_keys_pinned(spec: StackSpec) -> Iterator[Problem]:
    """Every host a connection dials has its host key in the stack, unless the stack says security.pinHostKeys:
    false (warned). The Linux nodes need none here: the program makes each one's key (components/machines/nodes.py)."""
    if not spec.security.pin_host_keys:
        yield Problem("security.pinHostKeys", "false: the Proxmox nodes, Hyper-V hosts and bastion without hostKey are "
                                              "accepted whatever key they present, so a machine in the middle receives "
                                              "join credentials and the Windows password; the Linux nodes' keys are "
                                              "read through those connections", "warning")
        return
    for index, node in enumerate(spec.proxmox.nodes):
        if node.host_key is None:
            yield Problem(f"proxmox.nodes[{index}].hostKey", _host_key_missing(f"Proxmox node {node.name}",
                                                                              str(node.address), "linux"))
    in_use = {node.hyperv_host for node in spec.nodes.windows}
    for index, host in enumerate(spec.hyperv.hosts):
        if host.name in in_use and host.host_key is None:
            yield Problem(f"hyperv.hosts[{index}].hostKey", _host_key_missing(f"Hyper-V host {host.name}",
                                                                             str(host.address), "windows"))
    bastion = spec.access.bastion
    if bastion is not None and bastion.host_key is None:
        yield Problem("access.bastion.hostKey", _host_key_missing("the bastion", bastion.host, "linux"))


@rule("security", "resourceMetrics", "namespaces", "nodes")
def security_relaxations(spec: StackSpec) -> Iterator[Problem]:
    """Every protection the stack turns down is said back as a warning at its key (docs/security.md says what each one
    leaves open); a stack relaxes a protection only by writing it."""
    s = spec.security
    if not s.secrets_encryption.enabled:
        yield Problem("security.secretsEncryption.enabled", "false: Secrets are stored in etcd, and in every etcd "
                                                            "snapshot, as plain text", "warning")
    psa = s.pod_security
    order = ("privileged", "baseline", "restricted")
    if psa.enforce == "privileged":
        yield Problem("security.podSecurity.enforce", "privileged: a pod in any namespace without its own Pod Security "
                                                      "labels may use the host's network, processes and files",
                      "warning")
    for mode, level in (("audit", psa.audit), ("warn", psa.warn)):
        if order.index(level) < order.index("restricted"):
            yield Problem(f"security.podSecurity.{mode}", f"{level}: pods that break the restricted level are no longer "
                                                          f"{'recorded in the audit log' if mode == 'audit' else 'warned about'}",
                          "warning")
    for index, name in enumerate(psa.exempt_namespaces):
        yield Problem(f"security.podSecurity.exemptNamespaces[{index}]", f"{name} is exempt from Pod Security: its pods "
                                                                          "may use the host's network, processes and "
                                                                          "files", "warning")
    for index, name in enumerate(psa.inline_nfs_namespaces):
        yield Problem(f"security.podSecurity.inlineNfsNamespaces[{index}]", f"the pods of {name} may mount any NFS "
                                                                            "export their node reaches, past network "
                                                                            "policy", "warning")
    for index, namespace in enumerate(spec.namespaces):
        if namespace.pod_security == "privileged":
            yield Problem(f"namespaces[{index}].podSecurity", f"privileged: the pods of {namespace.name} may use the "
                                                              "host's network, processes and files", "warning")
    if not s.network_policy.enabled:
        yield Problem("security.networkPolicy.enabled", "false: every pod reaches the management network, the "
                                                        "hypervisors, the storage servers and the nodes' SSH", "warning")
    audit = s.audit_log
    if not audit.enabled:
        yield Problem("security.auditLog.enabled", "false: the API server records no audit log", "warning")
    else:
        for key, value, minimum in (("maxAgeDays", audit.max_age_days, 30), ("maxBackups", audit.max_backups, 10),
                                    ("maxSizeMb", audit.max_size_mb, 100)):
            if value < minimum:
                yield Problem(f"security.auditLog.{key}", f"{value} is below the CIS benchmark's {minimum}", "warning")
    if not s.seccomp_default:
        yield Problem("security.seccompDefault", "false: containers without a seccomp profile run unconfined",
                      "warning")
    if s.selinux == "permissive" and any(compat.DISTROS[n.distro].family == "rhel" for n in spec.linux_nodes):
        yield Problem("security.selinux", "permissive: SELinux on the RHEL-family nodes logs what it would deny and "
                                          "denies nothing", "warning")
    observability = spec.observability
    if observability is not None and observability.logs is not None and not observability.logs.tls:
        yield Problem("observability.logs.tls", "false: every log line, the API server's audit log included, travels to "
                                                "the log server in plain text", "warning")
    if spec.tracing is not None and spec.tracing.insecure:
        yield Problem("tracing.insecure", "true: traces travel to the backend in plain text", "warning")
    if not spec.resource_metrics.enabled:
        yield Problem("resourceMetrics.enabled", "false: kubelets serve self-signed certificates, so the API server "
                                                 "cannot verify them (--kubelet-certificate-authority is left out)",
                      "warning")


# kubeadm refuses a larger service subnet: "the largest supported service subnet is /12 for IPv4"
# (cmd/kubeadm/app/constants/constants.go MaximumBitsForServiceSubnet = 20; validation.go ValidateServiceSubnetSize).
MAX_SERVICE_HOST_BITS = 20


@rule("cluster")
def service_cidr_size(spec: StackSpec) -> Iterator[Problem]:
    prefix = spec.cluster.service_cidr.prefixlen
    if 32 - prefix > MAX_SERVICE_HOST_BITS:
        yield Problem("cluster.serviceCidr", f"/{prefix} is larger than kubeadm accepts (at most /{32 - MAX_SERVICE_HOST_BITS} "
                                             "for IPv4): use e.g. 10.96.0.0/12")


@rule("cluster", "network", "ntpServers")
def site_servers_outside_the_cluster_ranges(spec: StackSpec) -> Iterator[Problem]:
    """A DNS or NTP server inside the pod or service range is unreachable from every node and pod: the range's
    addresses are routed to pods and Services (Calico's routes, kube-proxy's rules) before the site's network."""
    ranges = (("cluster.podCidr", spec.cluster.pod_cidr), ("cluster.serviceCidr", spec.cluster.service_cidr))
    servers = [(f"network.dnsServers[{i}]", str(server)) for i, server in enumerate(spec.network.dns_servers)]
    servers += [(f"ntpServers[{i}]", server) for i, server in enumerate(spec.ntp_servers)]
    for path, server in servers:
        try:
            address = IPv4Address(server)
        except ValueError:
            continue    # a host name: resolved by the site's DNS
        for range_path, network in ranges:
            if address in network:
                yield Problem(path, f"{address} is inside {range_path} {network}, whose addresses are pods' or "
                                    "Services': give the server's address on the site's network, or move the range")


# What listens on every node's own addresses: the agents every node runs (WINDOWS_AGENT_PORTS), and the control plane's
# kube-controller-manager 10257 and kube-scheduler 10259 (kubernetes pkg/cluster/ports/ports.go), etcd 2379-2380 and
# sshd 22; and what the add-ons listen on there: Calico's Typha 5473 (Calico's "Network requirements"; its VXLAN port
# is the stack's calico.vxlanPort), node-exporter 9100, MetalLB's speaker 7472 and memberlist 7946
# (metallb.universe.tf installation, "Requirements").
NODE_PORTS = (*WINDOWS_AGENT_PORTS, (22, "sshd"), (2379, "etcd"), (2380, "etcd peers"), (5473, "Calico Typha"),
              (7472, "MetalLB speaker"), (7946, "MetalLB memberlist"), (9100, "node-exporter"),
              (10257, "kube-controller-manager"), (10259, "kube-scheduler"))
# Linux's ephemeral ports (net.ipv4.ip_local_port_range default 32768 60999, kernel Documentation/networking/
# ip-sysctl.rst): a NodePort inside them can be taken by an outgoing connection first (kubernetes/kubernetes#111682).
LINUX_EPHEMERAL_PORTS = (32768, 60999)


@rule("cluster", "calico")
def node_port_range(spec: StackSpec) -> Iterator[Problem]:
    """kube-proxy sends a node's traffic to a NodePort to the Service's pods, whatever else listens there, and nothing
    in kube-apiserver or kubeadm keeps the range off the node's own ports (kubernetes/kubernetes#76892: a NodePort on
    6443 took the API server's traffic)."""
    low, high = spec.cluster.node_ports
    own = [*NODE_PORTS, (spec.cluster.api_port, "the API server"), (spec.calico.vxlan_port, "Calico VXLAN")]
    inside = [f"{port} ({what})" for port, what in sorted(set(own)) if low <= port <= high]
    if inside:
        yield Problem("cluster.nodePortRange", f"{low}-{high} contains ports the nodes listen on: {', '.join(inside)}; "
                                               "keep it clear of them, e.g. the default 30000-32767")
    first, last = LINUX_EPHEMERAL_PORTS
    if low <= last and first <= high:
        yield Problem("cluster.nodePortRange", f"{low}-{high} overlaps Linux's ephemeral ports {first}-{last}, which "
                                               "outgoing connections take: keep it below them, e.g. the default "
                                               "30000-32767")


# A cron expression of five or six fields ("0 2 * * *", "0 2 * * MON-FRI", Quartz's "0 0 2 * * ?"), which systemd's
# OnCalendar does not parse (systemd.time(7), "Calendar Events": [DayOfWeek] Year-Month-Day Hour:Minute:Second); an
# OnCalendar expression has at most three fields, or a ':' in its time.
_CRON = re.compile(r"^\s*([0-9A-Za-z*/,?#LW-]+\s+){4,5}[0-9A-Za-z*/,?#LW-]+\s*$")


@rule("etcdBackup")
def etcd_backup_schedule(spec: StackSpec) -> Iterator[Problem]:
    if spec.etcd_backup is not None and _CRON.match(spec.etcd_backup.schedule):
        yield Problem("etcdBackup.schedule", f"{spec.etcd_backup.schedule!r} is a cron expression; this is a systemd "
                                             "OnCalendar expression: e.g. \"*-*-* 00/6:00:00\" (every six hours) or "
                                             "\"*-*-* 02:00:00\" (daily at 02:00)")


# Hyper-V's "Default Switch" is an internal switch with its own DHCP and NAT that Windows creates (Microsoft
# azure-docs iot-edge-for-linux-on-windows-networking.md): a VM on it is not on the node network.
DEFAULT_SWITCH = "default switch"


@rule("hyperv")
def hyperv_hosts(spec: StackSpec) -> Iterator[Problem]:
    for index, host in enumerate(spec.hyperv.hosts):
        if host.switch_name.strip().lower() == DEFAULT_SWITCH:
            yield Problem(f"hyperv.hosts[{index}].switchName", "Default Switch is Hyper-V's internal NAT switch: the "
                                                               "nodes would not be on the node network; give the host's "
                                                               "external switch (Get-VMSwitch -SwitchType External)")
        for key, path in host.golden_images.items():
            if not path.lower().endswith(".vhdx"):
                kind = "an installation ISO" if path.lower().endswith(".iso") else "not a .vhdx file"
                yield Problem(f"hyperv.hosts[{index}].goldenImages.{key}",
                              f"{path} is {kind}: give the sysprepped golden VHDX built from it (images/windows)")


# The CPU models the Proxmox provider accepts, case-sensitively, besides `custom-<name>` (bpg/terraform-provider-proxmox
# validators CPUTypeValidator standardTypes, as stored, with the four EPYC models later releases added, which the
# pinned pulumi-proxmoxve's provider accepts; review of #39). A name not here is warned about, not refused.
PROXMOX_CPU_TYPES = (
    "486", "Broadwell", "Broadwell-IBRS", "Broadwell-noTSX", "Broadwell-noTSX-IBRS", "Cascadelake-Server",
    "Cascadelake-Server-noTSX", "Cascadelake-Server-v2", "Cascadelake-Server-v4", "Cascadelake-Server-v5", "Conroe",
    "Cooperlake", "Cooperlake-v2", "EPYC", "EPYC-Genoa", "EPYC-IBPB", "EPYC-Milan", "EPYC-Rome", "EPYC-Rome-v2",
    "EPYC-Rome-v3", "EPYC-Rome-v4", "EPYC-v3", "EPYC-v4", "Haswell",
    "Haswell-IBRS", "Haswell-noTSX", "Haswell-noTSX-IBRS", "Icelake-Client", "Icelake-Client-noTSX", "Icelake-Server",
    "Icelake-Server-noTSX", "Icelake-Server-v3", "Icelake-Server-v4", "Icelake-Server-v5", "Icelake-Server-v6",
    "IvyBridge", "IvyBridge-IBRS", "KnightsMill", "Nehalem", "Nehalem-IBRS", "Opteron_G1", "Opteron_G2", "Opteron_G3",
    "Opteron_G4", "Opteron_G5", "Penryn", "SandyBridge", "SandyBridge-IBRS", "SapphireRapids", "Skylake-Client",
    "Skylake-Client-IBRS", "Skylake-Client-noTSX-IBRS", "Skylake-Client-v4", "Skylake-Server", "Skylake-Server-IBRS",
    "Skylake-Server-noTSX-IBRS", "Skylake-Server-v4", "Skylake-Server-v5", "Westmere", "Westmere-IBRS", "athlon",
    "core2duo", "coreduo", "host", "kvm32", "kvm64", "max", "pentium", "pentium2", "pentium3", "phenom", "qemu32",
    "qemu64", "x86-64-v2", "x86-64-v2-AES", "x86-64-v3", "x86-64-v4",
)


@rule("proxmox")
def proxmox_cpu_type(spec: StackSpec) -> Iterator[Problem]:
    cpu = spec.proxmox.cpu_type
    if cpu in PROXMOX_CPU_TYPES or cpu.startswith("custom-"):
        return
    same = [known for known in PROXMOX_CPU_TYPES if known.lower() == cpu.lower()]
    if same:
        yield Problem("proxmox.cpuType", f"{cpu} is written {same[0]} (the provider compares CPU models case-sensitively)")
    else:
        yield Problem("proxmox.cpuType", f"{cpu} is not a CPU model the Proxmox provider is known to accept (e.g. host, "
                                         "x86-64-v2-AES, or custom-<name>): its preview refuses it if it does not",
                      severity="warning")


@rule("timezone", "nodes")
def windows_time_zone_exists(spec: StackSpec) -> Iterator[Problem]:
    """The Windows nodes take the Windows time zone CLDR matches to `timezone` (vocab/time_zones.py)."""
    if spec.nodes.windows and windows_time_zone(spec.timezone) is None:
        yield Problem("timezone", f"{spec.timezone} has no Windows time zone in CLDR's windowsZones, which the Windows "
                                  "nodes would need: give the IANA zone of a city with the same civil time "
                                  "(e.g. Asia/Hong_Kong, Europe/Berlin, America/New_York)")


@rule("access")
def ssh_keys_not_placeholders(spec: StackSpec) -> Iterator[Problem]:
    placeholder = PLACEHOLDER_SSH_KEY.split()[1]
    for index, key in enumerate(spec.access.ssh_public_keys):
        if key.split()[1:2] == [placeholder]:
            yield Problem(f"access.sshPublicKeys[{index}]", "is the placeholder tools.init writes when it finds no key: "
                                                            "give your own public key (the nodeSshPrivateKey secret's)")


@rule("cluster", "nodes")
def windows_kube_proxy_image(spec: StackSpec) -> Iterator[Problem]:
    minor = compat.kubernetes_minor(spec.cluster.kubernetes_version)
    if spec.nodes.windows and minor in compat.KUBERNETES and minor not in compat.WINDOWS_KUBE_PROXY_CONFIRMED:
        image = compat.WINDOWS[spec.nodes.windows[0].version].kube_proxy_image
        if image is not None:
            yield Problem("cluster.kubernetesVersion",
                          f"the Windows kube-proxy image {image.format(version=spec.cluster.kubernetes_version)} could "
                          f"not be confirmed to exist for Kubernetes {minor} (config/compat.py "
                          "WINDOWS_KUBE_PROXY_CONFIRMED); check that the tag exists before `pulumi up`", "warning")


# Names and addresses no public CA may certify: the CA/Browser Forum's Baseline Requirements forbid certificates for
# internal names and reserved IP addresses (section 4.2.2), so such an HTTPS endpoint's certificate is the site's own
# CA's. The names: single labels, and domains reserved for private or special use (ICANN's .internal, 2024; RFC 6762
# .local; RFC 8375 home.arpa; RFC 2606 .test, .example, .invalid, .localhost), and the ones sites commonly use
# without registering them (.lan, .home, .corp, .intranet, .private, .localdomain).
_PRIVATE_SUFFIXES = ("internal", "local", "home.arpa", "test", "example", "invalid", "localhost", "lan", "home", "corp",
                     "intranet", "private", "localdomain")
_SHARED_ADDRESS_SPACE = IPv4Network("100.64.0.0/10")   # RFC 6598, not is_private in Python's ipaddress


def private_host(host: str) -> bool:
    """Whether `host` (an address or a DNS name) is one no public CA can certify."""
    try:
        address = IPv4Address(host)
    except ValueError:
        name = host.lower().rstrip(".")
        return "." not in name or any(name == s or name.endswith("." + s) for s in _PRIVATE_SUFFIXES)
    return address.is_private or address in _SHARED_ADDRESS_SPACE


@rule("backup", "observability", "tracing", "registry", "tls")
def private_endpoints_have_a_ca(spec: StackSpec) -> Iterator[Problem]:
    """An HTTPS endpoint of a private name or address is checked against the CA the stack gives for it: the system's
    CAs cannot have issued its certificate, and skipping the check is not offered."""
    for endpoint in endpoints(spec):
        if endpoint.tls and endpoint.ca_certificate is None and private_host(endpoint.host):
            yield Problem(f"{endpoint.key}.caCertificate", f"{endpoint.host} is a private name or address, which no "
                                                           "public CA certifies: give the PEM certificate of the CA that "
                                                           "signed its HTTPS certificate")


@rule("observability", "storage")
def prometheus_volume(spec: StackSpec) -> Iterator[Problem]:
    """Prometheus's TSDB needs a POSIX block file system ("Non-POSIX compliant filesystems are not supported ... NFS
    filesystems ... are not supported", prometheus docs/storage.md): a Longhorn volume, or the node's disk."""
    metrics = spec.observability.metrics if spec.observability is not None else None
    if metrics is not None and (spec.storage is None or spec.storage.longhorn is None):
        yield Problem("observability.metrics", f"Prometheus keeps its {metrics.retention} of metrics on its node's disk "
                                               "(emptyDir), lost whenever its pod moves: add storage.longhorn for a "
                                               "volume", "warning")
