"""The platform layers' renderer inputs: Calico, storage, logs and metrics, scheduling by Windows build,
and the sample workloads."""
from __future__ import annotations

from config import compat
from config.model import StackSpec, WindowsKey
from render import logging, network, storage, windows_bootstrap, workloads

from .release import windows_release

# The sample image is built for Windows Server 2022 (ltsc2022), so it needs that build's RuntimeClass.
SAMPLE_WINDOWS_VERSION: WindowsKey = "win2022"


def calico_params(spec: StackSpec) -> network.CalicoParams:
    return network.CalicoParams(
        pod_cidr=str(spec.cluster.pod_cidr),
        service_cidr=str(spec.cluster.service_cidr),
        mtu=spec.calico.mtu,
        block_size=spec.calico.block_size,
        encapsulation=spec.calico.encapsulation,
        bgp=spec.calico.bgp,
        vxlan_port=spec.calico.vxlan_port,
        vxlan_vni=spec.calico.vxlan_vni,
        windows=bool(spec.nodes.windows),
        # The API server by address: Calico must reach it before cluster DNS (which needs Calico) runs.
        api_host=str(spec.cluster.api_vip or spec.nodes.control_plane[0].ip),
        api_port=spec.cluster.api_port,
        windows_cni_bin_dir=windows_bootstrap.CALICO_WINDOWS_CNI_BIN_DIR,
        windows_cni_conf_dir=windows_bootstrap.CALICO_WINDOWS_CNI_CONF_DIR,
        windows_cni_log_dir=network.CALICO_WINDOWS_CNI_LOG_DIR,
    )


def log_output(spec: StackSpec) -> logging.LogOutput:
    out = spec.observability.log_output
    return logging.LogOutput(kind=out.kind, host=out.host, port=out.port, tls=out.tls, tenant=out.tenant,
                             index_prefix=out.index_prefix, cluster_domain=spec.cluster.dns_domain)


def storage_params(spec: StackSpec) -> storage.StorageParams:
    s = spec.storage
    return storage.StorageParams(
        smb_source=s.smb_source, nfs_server=str(s.nfs_server), nfs_path=s.nfs_path,
        smb_dir_mode=s.smb_dir_mode, smb_file_mode=s.smb_file_mode, smb_uid=s.smb_uid, smb_gid=s.smb_gid,
        reclaim_policy=s.reclaim_policy, allow_expansion=s.allow_expansion, default_class=s.default_class,
        longhorn_replicas=s.longhorn_replicas, zones=tuple(spec.zones),
    )


def windows_builds(spec: StackSpec) -> dict[str, str]:
    """The stack's Windows builds: matrix key -> build number ("win2022" -> "10.0.20348")."""
    return {n.version: windows_release(n.version).build for n in spec.nodes.windows}


def windows_image(spec: StackSpec, field: str) -> str:
    """An image every Windows build shares (HostProcess images do not depend on the build, config.compat):
    the first Windows node's row's. Only for a stack with Windows nodes."""
    if not spec.nodes.windows:
        raise ValueError(f"the stack has no Windows node to take a {field} for")
    return str(getattr(windows_release(spec.nodes.windows[0].version), field))


def fluent_bit_windows_builds(spec: StackSpec) -> dict[str, tuple[str, str]]:
    """Per Windows build, its build number and the Fluent Bit image built for it (process isolation)."""
    return {n.version: (windows_release(n.version).build, str(windows_release(n.version).fluent_bit_image))
            for n in spec.nodes.windows}


def sample_params(spec: StackSpec) -> workloads.SampleParams:
    return workloads.SampleParams(
        win_namespace=spec.workloads.windows_namespace, linux_namespace=spec.workloads.linux_namespace,
        win_runtime_class=SAMPLE_WINDOWS_VERSION,
        win_image=compat.SAMPLE_WINDOWS_IMAGE, linux_image=compat.SAMPLE_LINUX_IMAGE,
        linux_distros=tuple(sorted({n.distro for n in spec.nodes.linux})), host=spec.workloads.sample_host,
    )
