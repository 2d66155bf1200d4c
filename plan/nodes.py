"""Per-node and cluster-wide renderer inputs: kubeadm's cluster and node parameters, a Linux node's
preparation, a Windows node's VM, preparation and activation, and the facts about each node that later
layers and the stack outputs use."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from config import compat
from config.model import HypervHostSpec, LinuxNodeSpec, StackSpec, WindowsNodeSpec
from render import etcd_backup, hyperv, kubeadm, linux_bootstrap, storage, windows_activation, windows_bootstrap
from render.containerd import RegistryMirror
from render.linux_node import LinuxNodeInit
from vocab import windows_pods
from vocab.cluster import LINUX_CRI_SOCKET, WINDOWS_CRI_SOCKET
from vocab.labels import DISTRO_LABEL, WINDOWS_TAINT_EFFECT, WINDOWS_TAINT_KEY, WINDOWS_TAINT_VALUE, ZONE_LABEL
from vocab.time_zones import windows_time_zone

from .platform import api_host, object_store
from .release import kubernetes_release, windows_release
from .security import cluster_hardening_fields, pod_guard, pod_guard_targets

Role = Literal["control-plane", "worker"]

# Every Windows node registers with this taint, so no pod lands there without tolerating it.
WINDOWS_TAINT = kubeadm.Taint(key=WINDOWS_TAINT_KEY, value=WINDOWS_TAINT_VALUE, effect=WINDOWS_TAINT_EFFECT)

def api_endpoint(spec: StackSpec) -> str:
    """host:port of the API server."""
    return f"{api_host(spec)}:{spec.cluster.api_port}"


def cluster_params(spec: StackSpec) -> kubeadm.ClusterParams:
    release = kubernetes_release(spec)
    control_plane = spec.nodes.control_plane
    sans = [str(spec.cluster.api_vip)] if spec.cluster.api_vip else []
    sans += [str(n.ip) for n in control_plane] + [n.name for n in control_plane]
    return kubeadm.ClusterParams(
        kubeadm_api=release.kubeadm_api,
        cluster_name=spec.cluster.name,
        kubernetes_version=spec.cluster.kubernetes_version,
        control_plane_endpoint=api_endpoint(spec),
        pod_subnet=str(spec.cluster.pod_cidr),
        service_subnet=str(spec.cluster.service_cidr),
        dns_domain=spec.cluster.dns_domain,
        node_cidr_mask_size=spec.cluster.node_cidr_mask_size,
        service_node_port_range=spec.cluster.node_port_range,
        cert_sans=tuple(sans),
        sandbox_image=release.pause_image,
        api_server_args=release.api_server_args,
        server_tls_bootstrap=spec.resource_metrics.enabled,
        **cluster_hardening_fields(spec),  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class ControlPlaneSettingsPlan:
    """What the control-plane nodes are brought to (components/cluster/control_plane.py): the key Secrets are written with,
    the hardening files, and the static Pods' ClusterConfiguration components."""
    encryption_key: str
    files: dict[str, str]
    components: dict[str, Any]


def node_params(spec: StackSpec, node: LinuxNodeSpec | WindowsNodeSpec, control_plane: bool = False) -> kubeadm.NodeParams:
    windows = isinstance(node, WindowsNodeSpec)
    return kubeadm.NodeParams(
        name=node.name,
        advertise_address=str(node.ip),
        cri_socket=WINDOWS_CRI_SOCKET if windows else LINUX_CRI_SOCKET,
        labels={ZONE_LABEL: node.zone, DISTRO_LABEL: node.version if isinstance(node, WindowsNodeSpec) else node.distro},
        taints=(WINDOWS_TAINT,) if windows else None,
        control_plane=control_plane,
        # Linux nodes take further blocks when one is full; a Windows node has one (render.network).
        max_pods=windows_pods.windows_max_pods(spec.calico.block_size) if windows else None,
    )


def windows_params(spec: StackSpec, node: WindowsNodeSpec) -> windows_bootstrap.WindowsNodeParams:
    release = kubernetes_release(spec)
    guard_sources, guard_ports = pod_guard_targets(spec)
    return windows_bootstrap.WindowsNodeParams(
        vm_name=node.name,
        computer_name=node.netbios_name,
        kubernetes_version=spec.cluster.kubernetes_version,
        containerd_version=release.containerd,
        pause_image=windows_release(node.version).pause_image,
        ntp_servers=tuple(spec.ntp_servers),
        dynamic_port_start=spec.windows.dynamic_port_start,
        dynamic_port_count=spec.windows.dynamic_port_count,
        registry_mirrors=tuple((m.upstream, m.endpoint, m.override_path, m.ca_certificate) for m in spec.registry.mirrors),
        cni_bin_dir=windows_bootstrap.DEFAULT_CNI_BIN_DIR,
        cni_conf_dir=windows_bootstrap.DEFAULT_CNI_CONF_DIR,
        node_firewall_sources=(str(spec.network.nodes.cidr), str(spec.cluster.pod_cidr)),
        pod_guard_sources=guard_sources,
        pod_guard_ports=guard_ports,
        search_domain=spec.network.search_domain or "",
        # config.rules refuses a `timezone` CLDR maps to no Windows zone when the stack has Windows nodes.
        time_zone=windows_time_zone(spec.timezone) or "",
    )


def kube_vip_manifest(spec: StackSpec, first_control_plane: bool) -> str | None:
    if spec.cluster.api_vip is None:
        return None
    return linux_bootstrap.render_kube_vip_manifest(
        vip=str(spec.cluster.api_vip), port=spec.cluster.api_port, image=compat.KUBE_VIP_IMAGE,
        interface=None, first_control_plane=first_control_plane,
    )


def replica_store(spec: StackSpec, control_plane: bool) -> str | None:
    """The Longhorn namespace whose replicas a Linux node's removal moves elsewhere before its drain; None without
    Longhorn, and on a control-plane node (Longhorn's pods run on the Linux workers only: render/storage.py)."""
    if control_plane or spec.storage is None or spec.storage.longhorn is None:
        return None
    return storage.LONGHORN_NAMESPACE


def node_summary(node: LinuxNodeSpec | WindowsNodeSpec, role: Role) -> dict[str, str]:
    """The facts about a node that later layers and the stack outputs use."""
    windows = isinstance(node, WindowsNodeSpec)
    return {
        "name": node.name,
        "role": role,
        "os": "windows" if windows else "linux",
        "distro": node.version if isinstance(node, WindowsNodeSpec) else node.distro,
        "zone": node.zone,
        "ip": str(node.ip),
    }


def linux_node_init(spec: StackSpec, node: LinuxNodeSpec) -> LinuxNodeInit:
    release = kubernetes_release(spec)
    distro = compat.DISTROS[node.distro]
    domain = spec.network.search_domain
    return LinuxNodeInit(
        hostname=node.name,
        fqdn=f"{node.name}.{domain}" if domain else None,
        distro=node.distro,
        package_manager=distro.package_manager,
        kubernetes_version=spec.cluster.kubernetes_version,
        containerd_version=release.containerd,
        runc_version=release.runc,
        sandbox_image=release.pause_image,
        admin_user=spec.access.admin_user,
        ssh_authorized_keys=tuple(spec.access.ssh_public_keys),
        ntp_servers=tuple(spec.ntp_servers),
        timezone=spec.timezone,
        registry_mirrors=tuple(
            RegistryMirror(upstream=m.upstream, endpoint=m.endpoint, override_path=m.override_path,
                           ca_certificate=m.ca_certificate)
            for m in spec.registry.mirrors
        ),
        selinux=spec.security.selinux,
        pod_guard=pod_guard(spec),
        runtime_sha256=tuple((url, pin.sha256) for url, pin in
                             compat.runtime_downloads(release.containerd, release.runc).items() if pin is not None),
    )


def hyperv_vm(spec: StackSpec, node: WindowsNodeSpec, host: HypervHostSpec) -> hyperv.HypervVm:
    return hyperv.HypervVm(
        vm_name=node.name,
        computer_name=node.netbios_name,
        vm_folder=host.vm_folder,
        golden_vhdx=host.golden_images[node.version],
        switch_name=host.switch_name,
        vlan_id=spec.network.nodes.vlan_id if spec.network.nodes.hyperv_vlan_tagged else None,
        cpu_count=node.cpu,
        memory_mb=node.memory_mb,
        disk_gb=node.disk_gb,
        ip_address=str(node.ip),
        prefix_length=spec.network.nodes.cidr.prefixlen,
        gateway=str(spec.network.nodes.gateway),
        dns_servers=tuple(str(s) for s in spec.network.dns_servers),
    )


def guest_activation(spec: StackSpec, node: WindowsNodeSpec) -> windows_activation.WindowsActivation | None:
    activation = spec.windows.activation
    if activation.mode == "none":
        return None
    return windows_activation.WindowsActivation(
        vm_name=node.name, windows_version=node.version, mode=activation.mode,
        kms_host=activation.kms_host or "", kms_port=activation.kms_port,
    )


def etcd_backup_params(spec: StackSpec, node_name: str) -> etcd_backup.EtcdBackupParams:
    """The snapshot schedule (`etcdBackup`) of one control-plane node, uploading off-site with `backup.offsite`."""
    backup = spec.etcd_backup
    if backup is None:
        raise ValueError("etcd_backup_params needs a stack with etcdBackup")
    offsite = spec.backup.offsite if spec.backup is not None else None
    return etcd_backup.EtcdBackupParams(
        node_name=node_name, nfs_server=str(backup.nfs_server), nfs_path=backup.nfs_path, schedule=backup.schedule,
        keep=backup.keep, recipient_keys=tuple(backup.recipient_keys),
        offsite=etcd_backup.EtcdOffsite(store=object_store(spec, offsite), image=compat.RCLONE_IMAGE)
        if offsite is not None else None)
