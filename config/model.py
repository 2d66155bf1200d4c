"""The typed model of one stack's configuration: one pydantic model per top-level config key.

Structure (types, ranges, unknown keys) lives here; rules that relate one part of the stack to another
live in config.rules. Secrets never appear in these models: config.secrets reads them as Outputs.
"""
from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from render.checks import DNS_LABEL

# Kubernetes object names and our VM names share the DNS-1123 label rule (render/checks.py).
DNS1123_LABEL = DNS_LABEL



def _text(value: object) -> object:
    # pydantic's lax mode would read `podCidr: 1` or `ip: true` as an integer address.
    if not isinstance(value, (str, IPv4Address, IPv4Network)):
        raise ValueError("must be written as text, e.g. 10.30.30.0/24 or 10.30.30.11")
    return value


IPv4Net = Annotated[IPv4Network, BeforeValidator(_text)]
IPv4Addr = Annotated[IPv4Address, BeforeValidator(_text)]

DistroKey = Literal["ubuntu22", "rocky9", "centos7"]
WindowsKey = Literal["win2019", "win2022", "win2025"]
Label = Annotated[str, Field(min_length=1, max_length=63)]


class Spec(BaseModel):
    """Base of every config model: camelCase keys as in Pulumi stack files, nothing unknown accepted."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class ClusterSpec(Spec):
    name: Label
    kubernetes_version: Annotated[str, Field(pattern=r"^1\.\d+\.\d+$")]
    pod_cidr: IPv4Net
    service_cidr: IPv4Net
    dns_domain: str = "cluster.local"
    node_cidr_mask_size: Annotated[int, Field(ge=16, le=28)] = 24
    node_port_range: Annotated[str, Field(pattern=r"^\d{1,5}-\d{1,5}$")] = "30000-32767"
    # The API server's virtual IP (kube-vip) for a highly available control plane; with a single
    # control-plane node the API is that node's address.
    api_vip: IPv4Addr | None = None
    api_port: Annotated[int, Field(ge=1, le=65535)] = 6443
    # A label for a certificate renewal round (e.g. "2027-10"): setting or changing it renews the
    # kubeadm certificates on every control-plane node, one at a time, and re-reads admin.conf.
    certificate_renewal: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")] | None = None

    @field_validator("name", "dns_domain")
    @classmethod
    def _dns_name(cls, value: str) -> str:
        if not all(DNS1123_LABEL.match(part) for part in value.split(".")):
            raise ValueError(f"{value!r} is not a DNS-1123 name (lower-case letters, digits, '-')")
        return value

    @property
    def node_ports(self) -> tuple[int, int]:
        low, high = (int(part) for part in self.node_port_range.split("-"))
        return low, high

    @field_validator("node_port_range")
    @classmethod
    def _ordered_range(cls, value: str) -> str:
        low, high = (int(part) for part in value.split("-"))
        if not 1 <= low <= high <= 65535:
            raise ValueError(f"{value!r} is not a port range low-high within 1-65535")
        return value


class CalicoSpec(Spec):
    # Field values are those of the Tigera operator's Installation API (calicoNetwork.bgp,
    # ipPools[].encapsulation): tests/fixtures/schemas/operator.tigera.io_v1_Installation.json.
    encapsulation: Literal["VXLAN", "VXLANCrossSubnet", "IPIP", "IPIPCrossSubnet", "None"] = "VXLAN"
    bgp: Literal["Enabled", "Disabled"] = "Disabled"
    mtu: Annotated[int, Field(ge=576, le=9000)] = 1450
    vxlan_port: Annotated[int, Field(ge=1, le=65535)] = 4789
    vxlan_vni: Annotated[int, Field(ge=1, le=16777215)] = 4096
    block_size: Annotated[int, Field(ge=20, le=32)] = 26


class VlanSpec(Spec):
    vlan_id: Annotated[int, Field(ge=1, le=4094)]
    cidr: IPv4Net
    gateway: IPv4Addr | None = None
    # The Proxmox Linux bridge already bound to this VLAN (e.g. vmbr30 on eno1.30), so VM NICs on it
    # carry no tag of their own.
    proxmox_bridge: str | None = None


class NetworkSpec(Spec):
    underlay_mtu: Annotated[int, Field(ge=576, le=9216)] = 1500
    management: VlanSpec
    nodes: VlanSpec
    storage: VlanSpec | None = None
    dns_servers: Annotated[list[IPv4Addr], Field(min_length=1)]
    search_domain: str | None = None


class ProxmoxNodeSpec(Spec):
    name: Label
    zone: str
    address: IPv4Addr  # where the provider's SSH session uploads snippets


class TemplateSpec(Spec):
    distro: DistroKey
    vm_id: Annotated[int, Field(ge=100, le=999999999)]
    node: str  # the Proxmox node holding the template: cloning from local storage stays on that node


class DatastoreSpec(Spec):
    vm_disks: str = "local-zfs"
    cloud_init: str = "local-zfs"
    snippets: str = "local"  # must have the "snippets" content type enabled


class ProxmoxSpec(Spec):
    endpoint: Annotated[str, Field(pattern=r"^https://")]
    insecure: bool = False
    ssh_user: str = "root"
    nodes: Annotated[list[ProxmoxNodeSpec], Field(min_length=1)]
    templates: Annotated[list[TemplateSpec], Field(min_length=1)]
    datastores: DatastoreSpec = DatastoreSpec()


class NicOffloadSpec(Spec):
    # Our design notes saw packet loss with Large Send Offload on the vSwitch uplink under VXLAN.
    disable_lso: bool = False
    adapters: list[str] = []


HostKey = Annotated[str, Field(pattern=r"^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+$")]


class HypervHostSpec(Spec):
    name: Label
    zone: str
    address: IPv4Addr
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    user: str = "Administrator"
    # The host's SSH public host key ("ssh-ed25519 AAAA..."): when set, a connection to anything else is
    # refused, so the guest password and join tokens sent to this host cannot be intercepted.
    host_key: HostKey | None = None
    switch_name: str
    vm_folder: str
    golden_images: dict[WindowsKey, str]
    nic_offload: NicOffloadSpec = NicOffloadSpec()


class HypervSpec(Spec):
    # How Pulumi authenticates to every Hyper-V host's OpenSSH server; the matching secret is
    # hypervSshPrivateKey or hypervSshPassword.
    auth: Literal["privateKey", "password"] = "privateKey"
    hosts: list[HypervHostSpec] = []


class BastionSpec(Spec):
    host: str
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    user: str
    host_key: HostKey | None = None


class AccessSpec(Spec):
    admin_user: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")] = "ops"
    ssh_public_keys: Annotated[list[str], Field(min_length=1)]
    bastion: BastionSpec | None = None

    @field_validator("ssh_public_keys")
    @classmethod
    def _public_keys(cls, keys: list[str]) -> list[str]:
        for key in keys:
            if not re.match(r"^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$", key):
                raise ValueError(f"not an OpenSSH public key: {key[:24]!r}...")
        return keys


class NodeSpec(Spec):
    name: Label
    zone: str
    cpu: Annotated[int, Field(ge=1, le=256)]
    memory_mb: Annotated[int, Field(ge=1024)]
    disk_gb: Annotated[int, Field(ge=20)]
    ip: IPv4Addr


class LinuxNodeSpec(NodeSpec):
    proxmox_node: str
    vm_id: Annotated[int, Field(ge=100, le=999999999)]
    distro: DistroKey = "ubuntu22"
    management_ip: IPv4Addr | None = None


class WindowsNodeSpec(NodeSpec):
    hyperv_host: str
    version: WindowsKey
    computer_name: str | None = None  # defaults to the node name; NetBIOS allows 15 characters

    @property
    def netbios_name(self) -> str:
        return self.computer_name or self.name


class NodesSpec(Spec):
    control_plane: Annotated[list[LinuxNodeSpec], Field(min_length=1)]
    linux: list[LinuxNodeSpec] = []
    windows: list[WindowsNodeSpec] = []


class RegistryMirrorSpec(Spec):
    upstream: str  # registry host as images name it: docker.io, registry.k8s.io, ...
    endpoint: Annotated[str, Field(pattern=r"^https?://")]
    # Harbor proxy-cache projects serve under /v2/<project>/, so containerd must not append /v2.
    override_path: bool = False


class RegistrySpec(Spec):
    mirrors: list[RegistryMirrorSpec] = []


class StorageSpec(Spec):
    smb_source: Annotated[str, Field(pattern=r"^\\\\[^\\]+\\[^\\]+")]
    nfs_server: IPv4Addr | str
    nfs_path: Annotated[str, Field(pattern=r"^/")]
    # cifs mount modes and owner on Linux nodes (Windows nodes ignore mount options).
    smb_dir_mode: Annotated[str, Field(pattern=r"^0[0-7]{3}$")] = "0770"
    smb_file_mode: Annotated[str, Field(pattern=r"^0[0-7]{3}$")] = "0660"
    smb_uid: Annotated[int, Field(ge=0)] | None = None
    smb_gid: Annotated[int, Field(ge=0)] | None = None
    reclaim_policy: Literal["Retain", "Delete"] = "Retain"
    allow_expansion: bool = True
    default_class: Literal["shared-files", "nfs-files", "longhorn"] | None = "longhorn"
    # Longhorn keeps each replica in a different zone, so there can be at most one per zone.
    longhorn_replicas: Annotated[int, Field(ge=1, le=3)] = 2


class WindowsActivationSpec(Spec):
    """How each Windows guest is activated, applied by its converge step (render/hyperv.py).

    kms: the edition's public KMS client key (GVLK) and this KMS host; avma: the edition's public AVMA
    key, activated by the Hyper-V host itself (Datacenter hosts only); none: the guest keeps whatever
    its golden image carries. Neither key is a secret (Microsoft publishes both); a MAK would be, and
    is not supported here.
    """

    mode: Literal["kms", "avma", "none"] = "none"
    # A DNS name or an IPv4 address, as slmgr /skms takes it.
    kms_host: Annotated[str, Field(pattern=r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")] | None = None
    # 1688 is the KMS default port (https://learn.microsoft.com/windows-server/get-started/kms-create-host).
    kms_port: Annotated[int, Field(ge=1, le=65535)] = 1688

    @model_validator(mode="after")
    def _kms_host_with_kms_only(self) -> "WindowsActivationSpec":
        if self.mode == "kms" and self.kms_host is None:
            raise ValueError("kmsHost is required with mode: kms")
        if self.mode != "kms" and self.kms_host is not None:
            raise ValueError(f"kmsHost is only used with mode: kms (mode is {self.mode})")
        return self


class WindowsSpec(Spec):
    # netsh int ipv4 set dynamicport: start at least 1025, at least 255 ports
    # (https://learn.microsoft.com/en-us/troubleshoot/windows-server/networking/default-dynamic-port-range-tcpip-chang).
    dynamic_port_start: Annotated[int, Field(ge=1025, le=65535)] = 49152
    dynamic_port_count: Annotated[int, Field(ge=255, le=64511)] = 16384
    # Windows versions upstream Kubernetes no longer supports, accepted anyway (with a warning) for a
    # legacy build that cannot move yet. Empty by default: an unsupported version is an error.
    allow_unsupported_versions: list[WindowsKey] = []
    activation: WindowsActivationSpec = WindowsActivationSpec()


class LogOutputSpec(Spec):
    # The one place both Linux and Windows Fluent Bit ship to. A full DNS name or an address: Windows
    # pods treat any dotted name as fully qualified, so a partial in-cluster name would not resolve there.
    kind: Literal["loki", "elasticsearch", "forward"]
    host: str
    port: Annotated[int, Field(ge=1, le=65535)]
    tls: bool = False
    tenant: str | None = None          # loki only
    index_prefix: str = "kubernetes"   # elasticsearch only


class ObservabilitySpec(Spec):
    log_output: LogOutputSpec
    metrics_retention: Annotated[str, Field(pattern=r"^\d+[dhw]$")] = "15d"


class PolicySpec(Spec):
    # What Gatekeeper does with a workload that breaks the placement rules: dryrun (audit only), warn
    # (admit with a warning) or deny.
    enforcement_action: Literal["dryrun", "warn", "deny"] = "deny"
    namespaces: Annotated[list[Label], Field(min_length=1)] = ["win-prod", "linux-prod"]


# A Kubernetes quantity such as "4", "250m", "8Gi" (k8s.io/apimachinery resource.Quantity, decimal and
# binary suffixes); render.scheduling checks how the quantities relate.
Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")]


class NamespaceSpec(Spec):
    """One application namespace: its name says the OS its pods run on (win-* or linux-*), its quota
    and container defaults bound what runs there, its Pod Security level what may."""
    name: Label
    os: Literal["windows", "linux"]
    cpu_requests: Quantity = "4"
    memory_requests: Quantity = "8Gi"
    cpu_limits: Quantity = "12"
    memory_limits: Quantity = "16Gi"
    pods: Annotated[int, Field(ge=1, le=10000)] = 20
    default_cpu_request: Quantity = "100m"
    default_memory_request: Quantity = "128Mi"
    default_cpu_limit: Quantity = "1"
    default_memory_limit: Quantity = "512Mi"
    pod_security: Literal["restricted", "baseline", "privileged"] = "restricted"


# Sized for the sample workloads at the peak of a rollout (replicas + 1 pods, render.workloads.peak_footprint)
# with room to spare; real workloads bring their own numbers.
DEFAULT_NAMESPACES = [
    NamespaceSpec(name="win-prod", os="windows", pods=20, default_cpu_request="250m", default_memory_request="256Mi",
                  default_cpu_limit="1", default_memory_limit="1Gi"),
    NamespaceSpec(name="linux-prod", os="linux", pods=30),
]


class WorkloadsSpec(Spec):
    # The sample api-win / api-linux applications and their ingress: on by default, to prove a new
    # cluster end to end; switch off for a cluster that only runs real workloads.
    samples: bool = True
    # Host name the sample Ingresses answer to; None answers any host.
    sample_host: str | None = None
    # The application namespaces (from `namespaces`) the samples run in.
    windows_namespace: Label = "win-prod"
    linux_namespace: Label = "linux-prod"


class EtcdBackupSpec(Spec):
    # Where every control-plane node writes its etcd snapshots: an NFS export (each node in its own
    # sub-directory), mounted only while a snapshot is copied.
    nfs_server: IPv4Addr | Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")]
    nfs_path: Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]*$")]
    # A systemd OnCalendar expression (systemd.time(7)), e.g. "*-*-* 00/6:00:00" for every six hours.
    schedule: Annotated[str, Field(pattern=r"^[A-Za-z0-9*:/,.~ -]{1,64}$")] = "*-*-* 00/6:00:00"
    # Snapshots kept per node; older ones are deleted after each new one is stored.
    keep: Annotated[int, Field(ge=1, le=1000)] = 28


class StackSpec(Spec):
    """The whole stack: each field is one `hybrid-cluster:<key>` entry of the stack file."""

    cluster: ClusterSpec
    calico: CalicoSpec = CalicoSpec()
    network: NetworkSpec
    zones: Annotated[list[Label], Field(min_length=1)]
    proxmox: ProxmoxSpec
    hyperv: HypervSpec = HypervSpec()
    access: AccessSpec
    nodes: NodesSpec
    registry: RegistrySpec = RegistrySpec()
    ntp_servers: Annotated[list[str], Field(min_length=1)]
    storage: StorageSpec
    windows: WindowsSpec = WindowsSpec()
    observability: ObservabilitySpec
    policy: PolicySpec = PolicySpec()
    workloads: WorkloadsSpec = WorkloadsSpec()
    # The application namespaces, with their quotas, container defaults and Pod Security levels.
    namespaces: Annotated[list[NamespaceSpec], Field(min_length=1)] = DEFAULT_NAMESPACES
    # Scheduled etcd snapshots (None: none are taken, which a production stack should not do).
    etcd_backup: EtcdBackupSpec | None = None

    @property
    def linux_nodes(self) -> list[LinuxNodeSpec]:
        return [*self.nodes.control_plane, *self.nodes.linux]
