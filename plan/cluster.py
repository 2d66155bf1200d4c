"""The node side's plan: one plan per node (what it is, where it runs, its steps' inputs and versions), the
machines' access (the Proxmox API and nodes, the Hyper-V hosts, the bastion) and the cluster's own (kubeadm, the
control plane's files, the rolling order, the lanes). The components of the machines and bootstrap layers take
these and never the stack's configuration."""
from __future__ import annotations

from dataclasses import dataclass

from config.model import DEFAULT_MTU, LinuxNodeSpec, StackSpec, WindowsNodeSpec
from render import etcd_backup, hyperv, kubeadm, security, windows_activation, windows_bootstrap
from render.kubelet_config import KubeletSettings
from render.linux_node import LinuxNodeInit

from .nodes import (
    ControlPlaneSettingsPlan,
    Role,
    api_endpoint,
    cluster_params,
    etcd_backup_params,
    guest_activation,
    hyperv_vm,
    kube_vip_manifest,
    linux_node_init,
    node_params,
    node_summary,
    replica_store,
    windows_params,
)
from .release import kubernetes_release
from .rollout import Rollout, lanes, rollout, session_lanes
from .security import control_plane_hardening, encryption_key, kubelet_config_settings


@dataclass(frozen=True)
class Nic:
    """One NIC of a Linux node's VM: its Proxmox bridge (and VLAN tag on a VLAN-aware bridge), its MTU when it is not
    Proxmox's default, and the address cloud-init gives it (with the gateway on the node network's NIC only)."""
    bridge: str | None
    vlan_id: int | None
    mtu: int | None
    address: str
    gateway: str | None


@dataclass(frozen=True)
class ProxmoxVm:
    """Where a Linux node runs and how its VM is made: the clone of its distro's template on its Proxmox node."""
    proxmox_node: str
    vm_id: int
    template_vm_id: int
    template_node: str
    description: str
    tags: list[str]
    cpu: int
    cpu_type: str
    memory_mb: int
    disk_gb: int
    vm_disks: str
    cloud_init: str
    snippets: str
    snippet_file: str
    nics: tuple[Nic, ...]
    dns_servers: list[str]
    search_domain: str | None


@dataclass(frozen=True)
class LinuxNodePlan:
    """One Linux node: what it is (name, role, address; zone and distro in its summary), its lifecycle flags (`retire`,
    `lost`; `protected` while it is a control-plane member being kept), its VM, and the inputs of its steps
    (preparation and upgrade, its kubeadm node parameters)."""
    name: str
    role: Role
    ip: str
    lost: bool
    retire: bool
    protected: bool
    vm: ProxmoxVm
    init: LinuxNodeInit
    kubeadm: kubeadm.NodeParams
    # The Longhorn namespace whose replicas its removal moves first (plan.nodes.replica_store).
    replica_store: str | None
    summary: dict[str, str]


@dataclass(frozen=True)
class WindowsNodePlan:
    """One Windows node: what it is, its lifecycle flags, its Hyper-V host and VM, its guest's activation, and the
    inputs of its steps (windows_bootstrap's parameters, its kubeadm node parameters)."""
    name: str
    ip: str
    lost: bool
    retire: bool
    hyperv_host: str
    cpu: int
    memory_mb: int
    disk_gb: int
    admin_password_version: int
    vm: hyperv.HypervVm
    activation: windows_activation.WindowsActivation | None
    params: windows_bootstrap.WindowsNodeParams
    kubeadm: kubeadm.NodeParams
    summary: dict[str, str]


NodePlan = LinuxNodePlan | WindowsNodePlan


@dataclass(frozen=True)
class SshHost:
    """A host the program reaches over SSH, pinned to its host key when the stack gives one."""
    name: str
    address: str
    user: str
    port: int
    host_key: str | None


@dataclass(frozen=True)
class Bastion:
    """access.bastion: every SSH connection goes through it."""
    host: str
    port: int
    user: str
    host_key: str | None


@dataclass(frozen=True)
class HypervHostPlan:
    """A Hyper-V host that runs Windows nodes, and the NIC offloads its VMs need off."""
    ssh: SshHost
    disable_lso: bool
    offload_adapters: tuple[str, ...]


@dataclass(frozen=True)
class MachinesPlan:
    """Every machine, and how the program reaches them: the Proxmox API and nodes, the Hyper-V hosts in use, the nodes'
    admin user, the bastion; the lanes that bound clones per Proxmox node and copies per Hyper-V host."""
    cluster_name: str
    proxmox_endpoint: str
    proxmox_insecure: bool
    proxmox_ssh_user: str
    proxmox_nodes: tuple[SshHost, ...]
    admin_user: str
    bastion: Bastion | None
    hyperv_hosts: tuple[HypervHostPlan, ...]
    linux: tuple[LinuxNodePlan, ...]
    windows: tuple[WindowsNodePlan, ...]
    # Each node's predecessor in its lane (plan.rollout.lanes), None at a lane's head.
    clone_after: dict[str, str | None]
    copy_after: dict[str, str | None]


@dataclass(frozen=True)
class ClusterPlan:
    """The cluster kubeadm makes of the machines, and the operations that roll through its nodes."""
    name: str
    kubernetes_version: str
    # Linux and Windows nodes run the same containerd release (config/compat.py).
    runtime: str
    api_endpoint: str
    params: kubeadm.ClusterParams
    kube_vip: bool
    kube_vip_init: str | None
    kube_vip_join: str | None
    # The control plane's files, the key Secrets are written with, its static Pods' components (init writes them;
    # components/cluster/control_plane.py keeps them).
    control_plane: ControlPlaneSettingsPlan
    kubelet: KubeletSettings
    certificate_renewal: str | None
    provider_credential: str
    # Per control-plane node, its snapshot schedule (`etcdBackup`), and whether it uploads off-site.
    etcd_backups: dict[str, etcd_backup.EtcdBackupParams]
    etcd_offsite: bool
    machines: MachinesPlan
    rollout: Rollout
    linux_rollout: Rollout
    session_lanes: dict[str, str | None]


def _linux_node(spec: StackSpec, node: LinuxNodeSpec, role: Role, protected: frozenset[str]) -> LinuxNodePlan:
    network, datastores = spec.network, spec.proxmox.datastores
    # One per distro and Proxmox node (config.rules), and one there for every node's distro.
    template = next(t for t in spec.proxmox.templates if (t.distro, t.node) == (node.distro, node.proxmox_node))
    vlans = [(network.nodes, node.ip, network.nodes.gateway)]
    if node.management_ip is not None and network.management is not None:
        # No gateway on the second NIC: the default route stays on the node network.
        vlans.append((network.management, node.management_ip, None))
    nics = tuple(
        # On a VLAN-aware bridge the NIC carries the tag (Proxmox's per-NIC `tag`); else the bridge is the VLAN. The
        # node network's NIC takes a jumbo-frame underlay's MTU (components/machines/nodes.py says why at creation only).
        Nic(bridge=vlan.proxmox_bridge, vlan_id=vlan.vlan_id if vlan.proxmox_vlan_aware else None,
            mtu=network.underlay_mtu if index == 0 and network.underlay_mtu != DEFAULT_MTU else None,
            address=f"{address}/{vlan.cidr.prefixlen}", gateway=str(gateway) if gateway else None)
        for index, (vlan, address, gateway) in enumerate(vlans))
    cluster = spec.cluster.name
    control_plane = role == "control-plane"
    return LinuxNodePlan(
        name=node.name, role=role, ip=str(node.ip), lost=node.lost,
        retire=node.retire, protected=node.name in protected,
        vm=ProxmoxVm(
            proxmox_node=node.proxmox_node, vm_id=node.vm_id, template_vm_id=template.vm_id, template_node=template.node,
            description=f"{cluster} Kubernetes {role} ({node.distro}), managed by Pulumi",
            # Proxmox stores tags sorted: sorted here too, or every preview shows a diff.
            tags=sorted({cluster, role, node.zone, node.distro}),
            cpu=node.cpu, cpu_type=spec.proxmox.cpu_type, memory_mb=node.memory_mb, disk_gb=node.disk_gb,
            vm_disks=datastores.vm_disks, cloud_init=datastores.cloud_init, snippets=datastores.snippets,
            snippet_file=f"{cluster}-{node.name}-user-data.yaml", nics=nics,
            dns_servers=[str(s) for s in network.dns_servers], search_domain=network.search_domain),
        init=linux_node_init(spec, node),
        kubeadm=node_params(spec, node, control_plane),
        replica_store=replica_store(spec, control_plane),
        summary=node_summary(node, role),
    )


def _windows_node(spec: StackSpec, node: WindowsNodeSpec) -> WindowsNodePlan:
    host = next(h for h in spec.hyperv.hosts if h.name == node.hyperv_host)
    return WindowsNodePlan(
        name=node.name, ip=str(node.ip), lost=node.lost, retire=node.retire,
        hyperv_host=node.hyperv_host, cpu=node.cpu, memory_mb=node.memory_mb, disk_gb=node.disk_gb,
        admin_password_version=node.admin_password_version, vm=hyperv_vm(spec, node, host),
        activation=guest_activation(spec, node), params=windows_params(spec, node), kubeadm=node_params(spec, node),
        summary=node_summary(node, "worker"),
    )


def machines_plan(spec: StackSpec) -> MachinesPlan:
    protected = spec.nodes.protected
    pools: tuple[tuple[Role, list[LinuxNodeSpec]], ...] = (("control-plane", spec.nodes.control_plane),
                                                           ("worker", spec.nodes.linux))
    linux = tuple(_linux_node(spec, node, role, protected) for role, pool in pools for node in pool)
    windows = tuple(_windows_node(spec, node) for node in spec.nodes.windows)
    # Lanes per Proxmox node: a clone (and its snippet upload) waits for the one `clonesPerProxmoxNode` before it on the
    # same node, so no more than that many run at once there.
    clone_after: dict[str, str | None] = {}
    for proxmox_node in spec.proxmox.nodes:
        clone_after.update(lanes([n.name for n in linux if n.vm.proxmox_node == proxmox_node.name],
                                 spec.provisioning.clones_per_proxmox_node))
    hosts_in_use = {node.hyperv_host for node in windows}
    # Lanes per Hyper-V host: a VM (its golden VHDX copy) waits for the one `copiesPerHypervHost` before it.
    copy_after: dict[str, str | None] = {}
    for host_name in sorted(hosts_in_use):
        copy_after.update(lanes([n.name for n in windows if n.hyperv_host == host_name],
                                spec.provisioning.copies_per_hyperv_host))
    bastion = spec.access.bastion
    return MachinesPlan(
        cluster_name=spec.cluster.name, proxmox_endpoint=spec.proxmox.endpoint, proxmox_insecure=spec.proxmox.insecure,
        proxmox_ssh_user=spec.proxmox.ssh_user,
        proxmox_nodes=tuple(SshHost(n.name, str(n.address), spec.proxmox.ssh_user, 22, n.host_key)
                            for n in spec.proxmox.nodes),
        admin_user=spec.access.admin_user,
        bastion=Bastion(bastion.host, bastion.port, bastion.user, bastion.host_key) if bastion is not None else None,
        hyperv_hosts=tuple(HypervHostPlan(SshHost(h.name, str(h.address), h.user, h.port, h.host_key),
                                          h.nic_offload.disable_lso, tuple(h.nic_offload.adapters))
                           for h in spec.hyperv.hosts if h.name in hosts_in_use),
        linux=linux, windows=windows, clone_after=clone_after, copy_after=copy_after,
    )


def cluster_plan(spec: StackSpec) -> ClusterPlan:
    params = cluster_params(spec)
    offsite = spec.backup is not None and spec.backup.offsite is not None
    etcd_backups = ({n.name: etcd_backup_params(spec, n.name) for n in spec.nodes.control_plane}
                    if spec.etcd_backup is not None else {})
    return ClusterPlan(
        name=spec.cluster.name, kubernetes_version=spec.cluster.kubernetes_version,
        runtime=kubernetes_release(spec).containerd, api_endpoint=api_endpoint(spec), params=params,
        kube_vip=spec.cluster.api_vip is not None,
        kube_vip_init=kube_vip_manifest(spec, first_control_plane=True),
        kube_vip_join=kube_vip_manifest(spec, first_control_plane=False),
        control_plane=ControlPlaneSettingsPlan(encryption_key(spec),
                                               security.control_plane_files(control_plane_hardening(spec)),
                                               kubeadm.control_plane_components(params)),
        kubelet=kubelet_config_settings(spec),
        certificate_renewal=spec.cluster.certificate_renewal, provider_credential=spec.cluster.provider_credential,
        etcd_backups=etcd_backups, etcd_offsite=offsite, machines=machines_plan(spec),
        rollout=rollout(spec), linux_rollout=rollout(spec, windows=False), session_lanes=session_lanes(spec),
    )

