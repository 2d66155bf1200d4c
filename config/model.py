"""The typed model of one stack's configuration: one pydantic model per top-level config key.

Structure (types, ranges, unknown keys) lives here; rules that relate one part of the stack to another
live in config.rules. Secrets never appear in these models: config.secrets reads them as Outputs.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from vocab import checks
from vocab.checks import DNS_LABEL
from vocab.namespaces import NamespaceParams

# Kubernetes object names and our VM names share the DNS-1123 label rule (vocab/checks.py).
DNS1123_LABEL = DNS_LABEL


# Values are validated strictly (config.loader): `cpu: true` is not 1 and `insecure: "yes"` is not
# true. Addresses are the exception: stack files write them as text, and these read the text.
def _from_text(kind: type[IPv4Network] | type[IPv4Address], example: str, invalid: str) -> Callable[[object], object]:
    def parse(value: object) -> object:
        if isinstance(value, kind):
            return value
        if not isinstance(value, str):
            raise ValueError(f"must be written as text, e.g. {example}")
        try:
            return kind(value)
        except ValueError:
            raise ValueError(invalid) from None
    return parse


IPv4Net = Annotated[IPv4Network, BeforeValidator(_from_text(
    IPv4Network, "10.30.30.0/24", "is not an IPv4 network address/prefix (host bits must be zero)"))]
IPv4Addr = Annotated[IPv4Address, BeforeValidator(_from_text(IPv4Address, "10.30.30.11", "is not an IPv4 address"))]


def _must_be(accepts: Callable[[str], bool], description: str) -> Callable[[str], str]:
    """The check of a string the renderers accept (`accepts`, from vocab.checks), for an AfterValidator. The
    message says what is expected and never repeats the value: it could be a credential typed into the wrong key."""
    def check(value: str) -> str:
        if not accepts(value):
            raise ValueError(f"must be {description}")
        return value
    return check


def _matches(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: bool(pattern.match(value))


# Names the stack gives its own things (cluster, zones, nodes, hosts, namespaces) are DNS-1123 labels:
# they become Kubernetes names, label values and resource names. Problem messages may name a value
# only once it has passed a type like this one, never free text.
Label = Annotated[str, AfterValidator(_must_be(_matches(DNS1123_LABEL), "a DNS-1123 label: 1-63 lower-case letters, digits or '-'"))]
# An IPv4 address or a host name, as NTP, log, NFS and KMS servers are written.
Host = Annotated[str, AfterValidator(_must_be(checks.is_host, "an IPv4 address or an ASCII host name"))]
DnsSubdomain = Annotated[str, AfterValidator(_must_be(
    _matches(checks.DNS_SUBDOMAIN), "a lower-case DNS name (letters, digits, '-', '.')"))]
PosixUser = Annotated[str, AfterValidator(_must_be(
    _matches(checks.POSIX_USER), "a user name of lower-case letters, digits, '_' or '-' (at most 32)"))]
WindowsUser = Annotated[str, AfterValidator(_must_be(
    lambda v: bool(re.match(r'^[^"/\\\[\]:;|=,+*?<>@\x00-\x1f]{1,20}$', v)) and v == v.strip(),
    "a Windows user name (at most 20 characters, none of \" / \\ [ ] : ; | = , + * ? < > @)"))]
WindowsPath = Annotated[str, AfterValidator(_must_be(
    _matches(checks.WINDOWS_PATH), "an absolute Windows path (C:\\... or \\\\server\\share)"))]
# Hyper-V switch and adapter names reach -Name parameters, which treat some characters as wildcards.
HypervName = Annotated[str, Field(max_length=256), AfterValidator(_must_be(
    lambda v: checks.is_plain_text(v) and not checks.WILDCARD_CHARS & set(v),
    "a name without surrounding spaces, control or wildcard characters (* ? [ ] `)"))]
NetbiosName = Annotated[str, AfterValidator(_must_be(
    _matches(checks.NETBIOS_NAME), "a NetBIOS name: 1-15 letters, digits or '-', not only digits"))]
RegistryHost = Annotated[str, AfterValidator(_must_be(
    _matches(checks.REGISTRY_HOST), "a registry host as image names write it, e.g. docker.io (no port)"))]
HttpEndpoint = Annotated[str, AfterValidator(_must_be(
    _matches(checks.HTTP_ENDPOINT), "an http(s) URL of a host, optional port and path, without user:password@ or query"))]
HttpsEndpoint = Annotated[str, AfterValidator(_must_be(
    lambda v: v.startswith("https://") and bool(checks.HTTP_ENDPOINT.match(v)),
    "an https URL of a host, optional port and path, without user:password@ or query"))]
LokiTenant = Annotated[str, AfterValidator(_must_be(
    _matches(checks.LOKI_TENANT), "a Loki tenant ID (up to 150 of letters, digits and ! - _ . * ' ( ))"))]
# Proxmox storage IDs (pve-storage-id in PVE::JSONSchema: a letter, then letters, digits, '-', '_', '.').
ProxmoxId = Annotated[str, AfterValidator(_must_be(
    _matches(re.compile(r"^[a-z][a-z0-9_.-]*[a-z0-9]$")),
    "a Proxmox ID (lower-case letters, digits, '-', '_', '.'; starting with a letter)"))]

# Host names the sample Gateway listener and HTTPRoutes answer to.
RouteHost = Annotated[str, AfterValidator(_must_be(
    _matches(checks.ROUTE_HOST), "a fully qualified lower-case DNS name, optionally *.-prefixed"))]

DistroKey = Literal["ubuntu22", "rocky9", "centos7"]
WindowsKey = Literal["win2019", "win2022", "win2025"]


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
    dns_domain: DnsSubdomain = "cluster.local"
    node_cidr_mask_size: Annotated[int, Field(ge=16, le=28)] = 24
    node_port_range: Annotated[str, Field(pattern=r"^\d{1,5}-\d{1,5}$")] = "30000-32767"
    # The API server's virtual IP (kube-vip) for a highly available control plane; with a single
    # control-plane node the API is that node's address.
    api_vip: IPv4Addr | None = None
    api_port: Annotated[int, Field(ge=1, le=65535)] = 6443
    # A label for a certificate renewal round (e.g. "2027-10"): setting or changing it renews the
    # kubeadm certificates on every control-plane node, one at a time, and re-reads admin.conf.
    certificate_renewal: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")] | None = None

    @property
    def node_ports(self) -> tuple[int, int]:
        low, high = (int(part) for part in self.node_port_range.split("-"))
        return low, high

    @field_validator("node_port_range")
    @classmethod
    def _ordered_range(cls, value: str) -> str:
        low, high = (int(part) for part in value.split("-"))
        if not 1 <= low <= high <= 65535:
            raise ValueError("is not a port range low-high within 1-65535")
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
    # Absent: the network is untagged (a flat network); the VMs' NICs carry no VLAN on either hypervisor.
    vlan_id: Annotated[int, Field(ge=1, le=4094)] | None = None
    cidr: IPv4Net
    gateway: IPv4Addr | None = None
    # The Proxmox Linux bridge already bound to this VLAN (e.g. vmbr30 on eno1.30), so VM NICs on it
    # carry no tag of their own.
    proxmox_bridge: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$")] | None = None


class NetworkSpec(Spec):
    underlay_mtu: Annotated[int, Field(ge=576, le=9216)] = 1500
    # Absent: the nodes use the node network for everything (no second NIC, no managementIp).
    management: VlanSpec | None = None
    nodes: VlanSpec
    storage: VlanSpec | None = None
    dns_servers: Annotated[list[IPv4Addr], Field(min_length=1)]
    search_domain: DnsSubdomain | None = None


class ProxmoxNodeSpec(Spec):
    name: DnsSubdomain
    zone: Label
    address: IPv4Addr  # where the provider's SSH session uploads snippets


class TemplateSpec(Spec):
    distro: DistroKey
    vm_id: Annotated[int, Field(ge=100, le=999999999)]
    node: DnsSubdomain  # the Proxmox node holding the template: cloning from local storage stays on that node


class DatastoreSpec(Spec):
    vm_disks: ProxmoxId = "local-zfs"
    cloud_init: ProxmoxId = "local-zfs"
    snippets: ProxmoxId = "local"  # must have the "snippets" content type enabled


class ProxmoxSpec(Spec):
    endpoint: HttpsEndpoint
    insecure: bool = False
    ssh_user: PosixUser = "root"
    nodes: Annotated[list[ProxmoxNodeSpec], Field(min_length=1)]
    templates: Annotated[list[TemplateSpec], Field(min_length=1)]
    datastores: DatastoreSpec = DatastoreSpec()


class NicOffloadSpec(Spec):
    # Our design notes saw packet loss with Large Send Offload on the vSwitch uplink under VXLAN.
    disable_lso: bool = False
    adapters: list[HypervName] = []


HostKey = Annotated[str, Field(pattern=r"^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+$")]


class HypervHostSpec(Spec):
    name: Label
    zone: Label
    address: IPv4Addr
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    user: WindowsUser = "Administrator"
    # The host's SSH public host key ("ssh-ed25519 AAAA..."): when set, a connection to anything else is
    # refused, so the guest password and join tokens sent to this host cannot be intercepted.
    host_key: HostKey | None = None
    switch_name: HypervName
    vm_folder: WindowsPath
    golden_images: dict[WindowsKey, WindowsPath]
    nic_offload: NicOffloadSpec = NicOffloadSpec()


class HypervSpec(Spec):
    # How Pulumi authenticates to every Hyper-V host's OpenSSH server; the matching secret is
    # hypervSshPrivateKey or hypervSshPassword.
    auth: Literal["privateKey", "password"] = "privateKey"
    hosts: list[HypervHostSpec] = []


class BastionSpec(Spec):
    host: Host
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    user: PosixUser
    host_key: HostKey | None = None


def _not_root(user: str) -> str:
    if user == "root":
        raise ValueError("must not be root (cloud-init creates this user; root logins stay disabled)")
    return user


# One line of an authorized_keys file: type, base64 key, optional comment.
PublicKey = Annotated[str, AfterValidator(_must_be(
    _matches(re.compile(r"^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( [^\r\n]*)?$")),
    "an OpenSSH public key line (ssh-ed25519 AAAA... comment)"))]


class AccessSpec(Spec):
    # Not root: cloud-init creates this user, with sudo, and root logins stay disabled.
    admin_user: Annotated[PosixUser, AfterValidator(_not_root)] = "ops"
    ssh_public_keys: Annotated[list[PublicKey], Field(min_length=1)]
    bastion: BastionSpec | None = None



# Upper bounds catch a typo (an extra digit, GB written as MB), not a platform limit: 1 TiB of memory and
# 64 TiB of disk (the VHDX format's maximum) are far above any node this program builds.
MAX_MEMORY_MB = 1024 * 1024
MAX_DISK_GB = 64 * 1024


class NodeSpec(Spec):
    name: Label
    zone: Label
    cpu: Annotated[int, Field(ge=1, le=256)]
    memory_mb: Annotated[int, Field(ge=1024, le=MAX_MEMORY_MB)]
    disk_gb: Annotated[int, Field(ge=20, le=MAX_DISK_GB)]
    ip: IPv4Addr
    # Removal takes two `pulumi up` runs, because a delete runs what the state holds (README, Day-2:
    # removing a node). `retire: true` first: the node stays, and a control-plane VM loses its protection,
    # so the next run may delete it. `lost: true` first for a machine that is gone or unreachable: the node
    # is taken out of service and its steps stop dialling it, so its removal runs nothing on it.
    retire: bool = False
    lost: bool = False

    @property
    def removable(self) -> bool:
        return self.retire or self.lost


class LinuxNodeSpec(NodeSpec):
    proxmox_node: DnsSubdomain
    vm_id: Annotated[int, Field(ge=100, le=999999999)]
    distro: DistroKey = "ubuntu22"
    management_ip: IPv4Addr | None = None


class WindowsNodeSpec(NodeSpec):
    hyperv_host: Label
    version: WindowsKey
    computer_name: NetbiosName | None = None  # defaults to the node name; NetBIOS allows 15 characters
    # Generation 2 VMs take at most 240 virtual processors on Windows Server 2016-2022 hosts (Hyper-V's
    # supported guest table, "64 for Generation 1 VMs and 240 for Generation 2 VMs").
    cpu: Annotated[int, Field(ge=1, le=240)]

    @field_validator("memory_mb")
    @classmethod
    def _hyperv_memory_unit(cls, value: int) -> int:
        # Hyper-V assigns startup memory in 2 MB units (render/hyperv.py refuses an odd size).
        if value % 2:
            raise ValueError("must be an even number of MB (Hyper-V assigns memory in 2 MB units)")
        return value

    @property
    def netbios_name(self) -> str:
        return self.computer_name or self.name


class NodesSpec(Spec):
    control_plane: Annotated[list[LinuxNodeSpec], Field(min_length=1)]
    linux: list[LinuxNodeSpec] = []
    windows: list[WindowsNodeSpec] = []


class RegistryMirrorSpec(Spec):
    upstream: RegistryHost  # registry host as images name it: docker.io, registry.k8s.io, ...
    endpoint: HttpEndpoint
    # Harbor proxy-cache projects serve under /v2/<project>/, so containerd must not append /v2.
    override_path: bool = False


class RegistrySpec(Spec):
    mirrors: list[RegistryMirrorSpec] = []


class SmbStorageSpec(Spec):
    # The share both operating systems mount (StorageClass shared-files); needs the secrets smbUsername
    # and smbPassword.
    source: Annotated[str, Field(pattern=r"^\\\\[^\\]+\\[^\\]+")]
    # cifs mount modes and owner on Linux nodes (Windows nodes ignore mount options).
    dir_mode: Annotated[str, Field(pattern=r"^0[0-7]{3}$")] = "0770"
    file_mode: Annotated[str, Field(pattern=r"^0[0-7]{3}$")] = "0660"
    uid: Annotated[int, Field(ge=0)] | None = None
    gid: Annotated[int, Field(ge=0)] | None = None


class NfsStorageSpec(Spec):
    # An NFS export Linux pods mount (StorageClass nfs-files).
    server: Host
    path: Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]*$")]


class LonghornSpec(Spec):
    # Replicas of each volume, each in a different zone; absent: as many as the zones allow, at most 3.
    replicas: Annotated[int, Field(ge=1, le=3)] | None = None


class StorageSpec(Spec):
    # Each backend is optional: a section left out installs nothing for it.
    smb: SmbStorageSpec | None = None
    nfs: NfsStorageSpec | None = None
    longhorn: LonghornSpec | None = None
    reclaim_policy: Literal["Retain", "Delete"] = "Retain"
    allow_expansion: bool = True
    # The StorageClass a claim without one gets: one of the enabled backends' classes, or none.
    default_class: Literal["shared-files", "nfs-files", "longhorn"] | None = None


class WindowsActivationSpec(Spec):
    """How each Windows guest is activated, applied by its converge step (render/hyperv.py).

    kms: the edition's public KMS client key (GVLK) and this KMS host; avma: the edition's public AVMA
    key, activated by the Hyper-V host itself (Datacenter hosts only); none: the guest keeps whatever
    its golden image carries. Neither key is a secret (Microsoft publishes both); a MAK would be, and
    is not supported here.
    """

    mode: Literal["kms", "avma", "none"] = "none"
    # A DNS name or an IPv4 address, as slmgr /skms takes it.
    kms_host: Host | None = None
    # 1688 is the KMS default port (https://learn.microsoft.com/windows-server/get-started/kms-create-host).
    kms_port: Annotated[int, Field(ge=1, le=65535)] = 1688

    @model_validator(mode="after")
    def _kms_host_with_kms_only(self) -> WindowsActivationSpec:
        if self.mode == "kms" and self.kms_host is None:
            raise ValueError("kmsHost is required with mode: kms")
        if self.mode != "kms" and self.kms_host is not None:
            raise ValueError(f"kmsHost is only used with mode: kms (mode is {self.mode})")
        return self


class WindowsSpec(Spec):
    # netsh int ipv4 set dynamicport: start at least 1025, at least 255 ports
    # (https://learn.microsoft.com/en-us/troubleshoot/windows-server/networking/default-dynamic-port-range-tcpip-chang).
    # The default is aks-engine's 33000-65535 ("Update the range to [33000, 65535] to avoid that it conflicts
    # with NodePort range (30000 - 32767)", parts/k8s/windowsconfigfunc.ps1 Adjust-DynamicPortRange, v0.79.0):
    # above the NodePorts and clear of every port the node's own agents listen on (config.rules).
    dynamic_port_start: Annotated[int, Field(ge=1025, le=65535)] = 33000
    dynamic_port_count: Annotated[int, Field(ge=255, le=64511)] = 32536
    # Windows versions upstream Kubernetes no longer supports, accepted anyway (with a warning) for a
    # legacy build that cannot move yet. Empty by default: an unsupported version is an error.
    allow_unsupported_versions: list[WindowsKey] = []
    activation: WindowsActivationSpec = WindowsActivationSpec()


class LogOutputSpec(Spec):
    # The one place both Linux and Windows Fluent Bit ship to. A full DNS name or an address: Windows
    # pods treat any dotted name as fully qualified, so a partial in-cluster name would not resolve there.
    kind: Literal["loki", "elasticsearch", "forward"]
    host: Host
    port: Annotated[int, Field(ge=1, le=65535)]
    tls: bool = False
    tenant: LokiTenant | None = None   # loki only
    # elasticsearch only; Elasticsearch index names are lower case (docs "Create index API": "Lowercase only").
    index_prefix: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,99}$")] = "kubernetes"


class MetricsSpec(Spec):
    # kube-prometheus-stack: Prometheus, Alertmanager, Grafana (needs the secret grafanaAdminPassword),
    # node-exporter, and windows_exporter on Windows nodes.
    retention: Annotated[str, Field(pattern=r"^\d+[dhw]$")] = "15d"


class ObservabilitySpec(Spec):
    # Each part is optional: metrics absent installs no monitoring stack, logs absent no Fluent Bit.
    metrics: MetricsSpec | None = None
    logs: LogOutputSpec | None = None


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

    def params(self) -> NamespaceParams:
        """The namespace as the renderer and the shared checks take it (vocab.namespaces)."""
        return NamespaceParams(
            name=self.name, os=self.os, cpu_requests=self.cpu_requests, memory_requests=self.memory_requests,
            cpu_limits=self.cpu_limits, memory_limits=self.memory_limits, pods=self.pods,
            default_cpu_request=self.default_cpu_request, default_memory_request=self.default_memory_request,
            default_cpu_limit=self.default_cpu_limit, default_memory_limit=self.default_memory_limit,
            pod_security=self.pod_security)


# Sized for the sample workloads at the peak of a rollout (replicas + 1 pods, render.workloads.peak_footprint)
# with room to spare; real workloads bring their own numbers.
DEFAULT_NAMESPACES = [
    NamespaceSpec(name="win-prod", os="windows", pods=20, default_cpu_request="250m", default_memory_request="256Mi",
                  default_cpu_limit="1", default_memory_limit="1Gi"),
    NamespaceSpec(name="linux-prod", os="linux", pods=30),
]


class WorkloadsSpec(Spec):
    """The sample api-win / api-linux applications and their Gateway, which prove a new cluster end to end:
    deployed when the section is present."""
    # Host name the sample Gateway listener and HTTPRoutes answer to; None answers any host.
    sample_host: RouteHost | None = None
    # The application namespaces (from `namespaces`) the samples run in.
    windows_namespace: Label = "win-prod"
    linux_namespace: Label = "linux-prod"


class EtcdBackupSpec(Spec):
    # Where every control-plane node writes its etcd snapshots: an NFS export (each node in its own
    # sub-directory), mounted only while a snapshot is copied.
    nfs_server: Host
    nfs_path: Annotated[str, Field(pattern=r"^/[A-Za-z0-9._/-]*$")]
    # A systemd OnCalendar expression (systemd.time(7)), e.g. "*-*-* 00/6:00:00" for every six hours.
    schedule: Annotated[str, Field(pattern=r"^[A-Za-z0-9*:/,.~ -]{1,64}$")] = "*-*-* 00/6:00:00"
    # Snapshots kept per node; older ones are deleted after each new one is stored.
    keep: Annotated[int, Field(ge=1, le=1000)] = 28
    # An alert fires when a control-plane node's last stored snapshot is older than this: twice the
    # schedule's period (12 for the default six-hourly schedule), so one missed run alerts.
    alert_after_hours: Annotated[int, Field(ge=1, le=24 * 90)] = 12


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
    ntp_servers: Annotated[list[Host], Field(min_length=1)]
    # The optional subsystems: a section left out turns its subsystem off (nothing installed, no secret needed).
    storage: StorageSpec | None = None
    windows: WindowsSpec = WindowsSpec()
    observability: ObservabilitySpec | None = None
    # Gatekeeper and its placement constraints.
    policy: PolicySpec | None = None
    workloads: WorkloadsSpec | None = None
    # The application namespaces, with their quotas, container defaults and Pod Security levels.
    namespaces: Annotated[list[NamespaceSpec], Field(min_length=1)] = DEFAULT_NAMESPACES
    # Scheduled etcd snapshots (None: none are taken, which a production stack should not do).
    etcd_backup: EtcdBackupSpec | None = None

    @property
    def linux_nodes(self) -> list[LinuxNodeSpec]:
        return [*self.nodes.control_plane, *self.nodes.linux]
