"""The typed model of one stack's configuration: one pydantic model per top-level config key.

Structure (types, ranges, unknown keys) lives here; rules that relate one part of the stack to another
live in config.rules. Secrets never appear in these models: config.secrets reads them as Outputs.
"""
from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from vocab import checks
from vocab.checks import DNS_LABEL
from vocab.namespaces import NamespaceParams
from vocab.time_zones import UTC

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
# A CA certificate the stack writes in the clear (not a secret): one or more PEM certificate blocks.
PemCertificate = Annotated[str, AfterValidator(_must_be(
    lambda v: bool(re.fullmatch(r"(\s*-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\s*)+", v)),
    "PEM certificates (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)"))]
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
def _iana_zone(value: str) -> bool:
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return "/" in value or value == "UTC"


IanaZone = Annotated[str, AfterValidator(_must_be(_iana_zone, "an IANA time zone name, e.g. Asia/Hong_Kong or Etc/UTC"))]
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

# What each pattern below accepts, said as a person would with an example: config.loader reports a value
# that does not match with this text instead of the regular expression.
PATTERN_HELP: dict[str, str] = {}


def matching(pattern: str, help_text: str) -> Any:
    """A pattern constraint whose mismatch config.loader reports as 'must be <help_text>'."""
    PATTERN_HELP[pattern] = help_text
    return Field(pattern=pattern)


DistroKey = Literal["ubuntu22", "rocky9", "centos7"]
WindowsKey = Literal["win2019", "win2022", "win2025"]


class Spec(BaseModel):
    """Base of every config model: camelCase keys as in Pulumi stack files, nothing unknown accepted."""

    # use_attribute_docstrings: the string under each field is its description (the JSON Schema, the generated
    # docs/configuration.md and "is required" messages show it).
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, use_attribute_docstrings=True
    )


class ClusterSpec(Spec):
    """The cluster itself: name, Kubernetes release, address ranges and the API endpoint."""
    name: Label
    """Cluster name: prefixes every resource, VM tag and file name (a DNS-1123 label). It cannot be changed later,
    and each Helm release is named `<name>-<section>-<chart>` within Helm's 53 characters: up to 23 characters with
    the defaults (metrics-server's release), 29 with resourceMetrics off and no optional section, fewer with some (at
    most 17 with observability.metrics, whose release is the longest)."""
    kubernetes_version: Annotated[str, matching(r"^1\.\d+\.\d+$", 'a Kubernetes release MAJOR.MINOR.PATCH, quoted, e.g. "1.36.4"')]
    """Kubernetes release the nodes run, quoted (e.g. "1.36.4"); config/compat.py lists the supported ones. Changing it
    upgrades the cluster node by node."""
    pod_cidr: IPv4Net
    """Pod address range (Calico IP pool), e.g. 10.244.0.0/16; must not overlap any other network."""
    service_cidr: IPv4Net
    """Service address range, e.g. 10.96.0.0/12."""
    dns_domain: DnsSubdomain = "cluster.local"
    """Cluster DNS domain."""
    node_cidr_mask_size: Annotated[int, Field(ge=16, le=28)] = 24
    """Prefix length of each node's pod range (bounds the node count with podCidr)."""
    node_port_range: Annotated[str, matching(r"^\d{1,5}-\d{1,5}$", "a port range low-high, e.g. 30000-32767")] = "30000-32767"
    """NodePort range low-high."""
    api_vip: IPv4Addr | None = None
    """Virtual IP of the API server (kube-vip) on the node network; required with 3 control-plane nodes, absent with
    one (the API is that node's address)."""
    api_port: Annotated[int, Field(ge=1, le=65535)] = 6443
    """API server port."""
    certificate_renewal: Annotated[str, matching(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$",
                                                 'a label of letters, digits, ".", "_" or "-", e.g. "2027-10"')] | None = None
    """A label for a certificate renewal round (e.g. "2027-10"): setting or changing it renews the kubeadm certificates
    on every control-plane node, one at a time."""
    provider_credential: Annotated[str, matching(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$",
                                                 'a label of letters, digits, ".", "_" or "-", e.g. "2027-12"')] = "initial"
    """The name of Pulumi's own Kubernetes credential (a client certificate valid one year, bound to cluster-admin by a
    binding of its own). Changing it issues a new one and revokes every other once the provider has moved to it; do so
    within the year (the stack output certificateExpiry shows until when), after an etcd snapshot restore, and after
    any suspicion that the state leaked."""

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
    """Calico pod networking (VXLAN; Windows nodes require VXLAN, port 4789, VNI 4096 or more)."""
    # Field values are those of the Tigera operator's Installation API (calicoNetwork.bgp,
    # ipPools[].encapsulation): tests/fixtures/schemas/operator.tigera.io_v1_Installation.json.
    encapsulation: Literal["VXLAN", "VXLANCrossSubnet", "IPIP", "IPIPCrossSubnet", "None"] = "VXLAN"
    """Pod traffic encapsulation (Tigera operator ipPools[].encapsulation); VXLAN with Windows nodes."""
    bgp: Literal["Enabled", "Disabled"] = "Disabled"
    """Calico BGP; Disabled with VXLAN and Windows nodes."""
    mtu: Annotated[int, Field(ge=576, le=9000)] = 1450
    """Pod interface MTU: the underlay MTU minus 50 for VXLAN."""
    vxlan_port: Annotated[int, Field(ge=1, le=65535)] = 4789
    """VXLAN UDP port (4789 with Windows nodes)."""
    vxlan_vni: Annotated[int, Field(ge=1, le=16777215)] = 4096
    """VXLAN network identifier (4096 or more with Windows nodes)."""
    block_size: Annotated[int, Field(ge=20, le=32)] = 26
    """Prefix length of the IP blocks Calico gives each node; a Windows node uses one block, so this bounds its pods."""


class VlanSpec(Spec):
    """One network the VMs attach to."""
    vlan_id: Annotated[int, Field(ge=1, le=4094)] | None = None
    """VLAN tag on the Hyper-V VM NICs (unless hypervVlanTagged is false), and on the Proxmox ones with
    proxmoxVlanAware; absent: untagged (a flat network). Without proxmoxVlanAware, Proxmox NICs take the VLAN from
    proxmoxBridge."""
    cidr: IPv4Net
    """The network, e.g. 10.30.30.0/24."""
    gateway: IPv4Addr | None = None
    """Default gateway (required on the node network)."""
    proxmox_bridge: Annotated[str, matching(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$",
                                            "a Linux bridge name of at most 15 characters, e.g. vmbr0")] | None = None
    """The Proxmox bridge of this network (e.g. vmbr0, or vmbr30 bound to eno1.30); required for networks Linux nodes
    use."""
    proxmox_vlan_aware: bool = False
    """proxmoxBridge is VLAN-aware (bridge-vlan-aware yes): the Linux VMs' NICs carry vlanId themselves. false: the
    bridge is on the VLAN already (e.g. vmbr30 bound to eno1.30) and they carry no tag."""
    hyperv_vlan_tagged: bool = True
    """The Hyper-V hosts' external switches reach this VLAN through a trunk: the Windows VMs' NICs carry vlanId
    (Set-VMNetworkAdapterVlan -Access). false: the switch's uplink is an access port on the VLAN already, and they
    carry no tag."""


# Ethernet's MTU, what every NIC has unless told otherwise.
DEFAULT_MTU = 1500


class NetworkSpec(Spec):
    """The site's networks and name servers."""
    underlay_mtu: Annotated[int, Field(ge=576, le=9216)] = DEFAULT_MTU
    """MTU of the physical network and the node network's Proxmox bridge: a Linux VM's node NIC is made with it (a
    bridge with a smaller one keeps the VM from starting; an existing VM keeps the MTU it was made with, since Proxmox
    re-plugs a running VM's NIC to change it), and calico.mtu must leave VXLAN's 50 bytes under it. With Windows
    nodes calico.mtu stays at most 1450: the program does not turn on the Hyper-V NICs' jumbo frames."""
    management: VlanSpec | None = None
    """A second network for management traffic (Linux nodes with managementIp get a second NIC on it); absent:
    everything uses the node network."""
    nodes: VlanSpec
    """The network every node's address is on (and the API VIP)."""
    storage: VlanSpec | None = None
    """The storage network, if the site has one (checked for overlaps only)."""
    dns_servers: Annotated[list[IPv4Addr], Field(min_length=1)]
    """The site's DNS servers (not 127.0.0.53: that is a workstation's own resolver)."""
    search_domain: DnsSubdomain | None = None
    """DNS search domain for the nodes."""


# An OpenPGP public key, ASCII-armored, holding exactly one (version 4) key (vocab.checks.openpgp_public_key).
OpenPgpPublicKey = Annotated[str, AfterValidator(_must_be(
    checks.is_openpgp_public_key, "one ASCII-armored OpenPGP public key (-----BEGIN PGP PUBLIC KEY BLOCK----- ...), "
    "as `gpg --armor --export FINGERPRINT` prints it: exactly one version 4 key, without the AEAD feature (GnuPG 2.3 "
    "and later would encrypt to it in a format GnuPG 2.2 cannot read; remove it with `gpg --edit-key FINGERPRINT "
    "setpref 'AES256 AES192 AES SHA512 SHA384 SHA256 ZLIB BZIP2 ZIP Uncompressed' save`, docs/backup.md)"))]
# An SSH host key line to pin a connection to (vocab.checks.is_pinnable_host_key says why not RSA). The pattern is
# for editors (the JSON Schema); the check also decodes the key.
# How an operator reads a host's key where they already trust what they see (its console), on a Linux host and on
# a Windows one (Win32-OpenSSH keeps its keys in %ProgramData%\ssh): the config errors and tools.init say it.
READ_HOST_KEY = {
    "linux": "cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub",
    "windows": "(Get-Content $env:ProgramData\\ssh\\ssh_host_ed25519_key.pub).Split(' ')[0..1] -join ' '",
}
_HOST_KEY_HELP = ("the host's ed25519 (or ECDSA) public host key without comment, e.g. ssh-ed25519 AAAAC3Nza...: on a "
                  f"Linux host `{READ_HOST_KEY['linux']}`, on Windows `{READ_HOST_KEY['windows']}` (an RSA key cannot "
                  "be pinned: the connection would offer only ssh-rsa, which OpenSSH 8.8 and later refuse)")
HostKey = Annotated[str, matching(r"^(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,2}$", _HOST_KEY_HELP),
                    AfterValidator(_must_be(checks.is_pinnable_host_key, _HOST_KEY_HELP))]


class ProxmoxNodeSpec(Spec):
    """One Proxmox VE node."""
    name: DnsSubdomain
    """Node name as Proxmox knows it (pvecm nodes)."""
    zone: Label
    """The zone (rack, room or site) it is in: one of `zones`."""
    address: IPv4Addr  # where the provider's SSH session uploads snippets
    """Its address: SSH for snippet uploads goes there."""
    host_key: HostKey | None = None
    """Its SSH public host key: every command run on it refuses any other, and the guests' own host keys are read
    through it (required unless security.pinHostKeys is false; the provider's snippet uploads check it only
    through ~/.ssh/known_hosts: docs/security.md)."""


class TemplateSpec(Spec):
    """A cloud-init VM template the Linux nodes are cloned from."""
    distro: DistroKey
    """The distribution inside it (config/compat.py DISTROS)."""
    vm_id: Annotated[int, Field(ge=100, le=999999999)]
    """Its Proxmox VM id."""
    node: DnsSubdomain  # the Proxmox node holding the template: cloning from local storage stays on that node
    """The Proxmox node holding it (a full clone from local storage runs there)."""


class DatastoreSpec(Spec):
    """Proxmox storage IDs."""
    vm_disks: ProxmoxId = "local-zfs"
    """Storage for VM disks."""
    cloud_init: ProxmoxId = "local-zfs"
    """Storage for cloud-init drives."""
    snippets: ProxmoxId = "local"  # must have the "snippets" content type enabled
    """Storage for cloud-init snippets (the snippets content type must be enabled on it)."""


class ProxmoxSpec(Spec):
    """The Proxmox VE cluster the Linux nodes run on."""
    endpoint: HttpsEndpoint
    """API URL as the web UI has it, e.g. https://10.10.10.11:8006/ (without /api2/json: the provider adds it)."""
    insecure: bool = False
    """Skip TLS verification of the API (only for a self-signed certificate you cannot replace)."""
    ssh_user: PosixUser = "root"
    """SSH user on the Proxmox nodes (snippet uploads); the key is the secret proxmoxSshPrivateKey."""
    nodes: Annotated[list[ProxmoxNodeSpec], Field(min_length=1)]
    """The Proxmox nodes."""
    templates: Annotated[list[TemplateSpec], Field(min_length=1)]
    """The cloud-init templates, one per distro and Proxmox node that clones it."""
    datastores: DatastoreSpec = DatastoreSpec()
    """Where disks, cloud-init drives and snippets go."""
    cpu_type: Annotated[str, matching(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$",
                                      'a QEMU CPU model as Proxmox names it, e.g. "host" or "x86-64-v2-AES"')] = "host"
    """The Linux VMs' CPU model. `host` passes the Proxmox node's CPU through (fastest; QEMU: live migration "is unsafe"
    with it between nodes of different CPUs); with mixed hardware name a model every node has, e.g. x86-64-v2-AES
    (QEMU docs, qemu-cpu-models(7)). A change to a running VM stays pending in Proxmox (the program never lets the
    provider reboot one) until the VM restarts: a rebuild, a restart for new cpu/memory/disk, or one of your own."""


class NicOffloadSpec(Spec):
    """NIC offloads on the Hyper-V host's vSwitch uplinks."""
    # Our design notes saw packet loss with Large Send Offload on the vSwitch uplink under VXLAN.
    disable_lso: bool = False
    """Disable Large Send Offload on `adapters` (packet loss with VXLAN was seen with it on)."""
    adapters: list[HypervName] = []
    """Host network adapter names to apply it to."""


class HypervHostSpec(Spec):
    """One Hyper-V host, reached over OpenSSH."""
    name: Label
    """Host name (used in resource names and by nodes' hypervHost)."""
    zone: Label
    """The zone it is in: one of `zones`."""
    address: IPv4Addr
    """Its address (OpenSSH)."""
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    """OpenSSH port."""
    user: WindowsUser = "Administrator"
    """Windows user Pulumi signs in as (an administrator)."""
    # So the guest password and join tokens sent to this host cannot be intercepted.
    host_key: HostKey | None = None
    """The host's SSH public host key: every connection to it refuses any other (required unless
    security.pinHostKeys is false)."""
    switch_name: HypervName
    """The Hyper-V virtual switch the VMs attach to."""
    vm_folder: WindowsPath
    """Folder for VM files and disks."""
    golden_images: dict[WindowsKey, WindowsPath]
    """Sysprepped golden VHDX per Windows version, e.g. {win2022: D:\\golden\\ws2022.vhdx}."""
    nic_offload: NicOffloadSpec = NicOffloadSpec()
    """NIC offload settings of the host."""


class HypervSpec(Spec):
    """The Hyper-V hosts the Windows nodes run on (needed only with Windows nodes)."""
    auth: Literal["privateKey", "password"] = "privateKey"
    """How Pulumi signs in: privateKey (secret hypervSshPrivateKey) or password (secret hypervSshPassword)."""
    hosts: list[HypervHostSpec] = []
    """The Hyper-V hosts."""


class BastionSpec(Spec):
    """A jump host in front of the nodes."""
    host: Host
    """Its address or DNS name."""
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    """Its SSH port."""
    user: PosixUser
    """The user to sign in as (key: secret bastionSshPrivateKey)."""
    host_key: HostKey | None = None
    """Its SSH public host key: every connection through it refuses any other (required unless
    security.pinHostKeys is false)."""


def _not_root(user: str) -> str:
    if user == "root":
        raise ValueError("must not be root (cloud-init creates this user; root logins stay disabled)")
    return user


# One line of an authorized_keys file: type, base64 key, optional comment.
PublicKey = Annotated[str, AfterValidator(_must_be(
    _matches(re.compile(r"^(ssh-(ed25519|rsa)|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( [^\r\n]*)?$")),
    "an OpenSSH public key line (ssh-ed25519 AAAA... comment)"))]


class AccessSpec(Spec):
    """How people and Pulumi sign in to the Linux nodes."""
    admin_user: Annotated[PosixUser, AfterValidator(_not_root)] = "ops"
    """The admin user cloud-init creates (with sudo; not root)."""
    ssh_public_keys: Annotated[list[PublicKey], Field(min_length=1)]
    """authorized_keys lines for admin_user; the secret nodeSshPrivateKey must match one."""
    bastion: BastionSpec | None = None
    """A jump host; absent: the nodes are reached directly."""



# Upper bounds catch a typo (an extra digit, GB written as MB), not a platform limit: 1 TiB of memory and
# 64 TiB of disk (the VHDX format's maximum) are far above any node this program builds.
MAX_MEMORY_MB = 1024 * 1024
MAX_DISK_GB = 64 * 1024


class NodeSpec(Spec):
    name: Label
    """Node name: VM name, host name and Kubernetes node name (a DNS-1123 label)."""
    zone: Label
    """Its zone (topology.kubernetes.io/zone): one of `zones`."""
    cpu: Annotated[int, Field(ge=1, le=256)]
    """Virtual CPUs (a control-plane node needs 2 or more)."""
    memory_mb: Annotated[int, Field(ge=1024, le=MAX_MEMORY_MB)]
    """Memory in MB (a control-plane node needs 2048 or more)."""
    disk_gb: Annotated[int, Field(ge=20, le=MAX_DISK_GB)]
    """System disk size in GB."""
    ip: IPv4Addr
    """Its address on the node network."""
    retire: bool = False
    """First step of removing a reachable node: nothing runs on it yet (a control-plane VM loses its protection);
    remove the entry in the next run, which drains, resets and deregisters it."""
    lost: bool = False
    """First step of removing a node whose machine is gone or unreachable: taken out of service without dialling it;
    remove the entry in the next run."""

    @property
    def removable(self) -> bool:
        return self.retire or self.lost


class LinuxNodeSpec(NodeSpec):
    """A Linux node: a Proxmox VM cloned from a template."""
    proxmox_node: DnsSubdomain
    """The Proxmox node it runs on."""
    vm_id: Annotated[int, Field(ge=100, le=999999999)]
    """Its Proxmox VM id (unique)."""
    distro: DistroKey = "ubuntu22"
    """Its distribution (a template of it must be on proxmoxNode)."""
    management_ip: IPv4Addr | None = None
    """Its address on network.management (a second NIC); needs that network."""


class WindowsNodeSpec(NodeSpec):
    """A Windows node: a Hyper-V VM from a golden image."""
    hyperv_host: Label
    """The Hyper-V host it runs on."""
    version: WindowsKey
    """Windows Server version (a golden image of it must be on hypervHost)."""
    computer_name: NetbiosName | None = None  # defaults to the node name; NetBIOS allows 15 characters
    """NetBIOS computer name (at most 15 characters); default: the node name."""
    # Generation 2 VMs take at most 240 virtual processors on Windows Server 2016-2022 hosts (Hyper-V's
    # supported guest table, "64 for Generation 1 VMs and 240 for Generation 2 VMs").
    cpu: Annotated[int, Field(ge=1, le=240)]
    """Virtual CPUs."""
    admin_password_version: Annotated[int, Field(ge=1, le=10_000)] = 1
    """The generation of this node's own Administrator password (derived from windowsAdminPassword, the node's name
    and this number): raise it by one to give this node a new password at the next `up` (docs/lifecycle.md,
    "Rotating credentials")."""

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
    """The nodes, by pool."""
    control_plane: Annotated[list[LinuxNodeSpec], Field(min_length=1)]
    """Control-plane nodes: 1 (a lab) or 3 (highly available, with cluster.apiVip). The first one stays first."""
    linux: list[LinuxNodeSpec] = []
    """Linux workers (at least one: CoreDNS and the Linux-only system parts run there)."""
    windows: list[WindowsNodeSpec] = []
    """Windows workers."""

    @property
    def protected(self) -> frozenset[str]:
        """The control-plane members not being removed (no `retire`, no `lost`): their VM and their member lock are
        protected (components/machines/lifecycle.py MemberLocks; docs/lifecycle.md, "Remove a node")."""
        return frozenset(n.name for n in self.control_plane if not n.removable)


class RegistryMirrorSpec(Spec):
    """A pull-through mirror of one upstream registry."""
    upstream: RegistryHost  # registry host as images name it: docker.io, registry.k8s.io, ...
    """The registry host as image names write it, e.g. docker.io."""
    endpoint: HttpEndpoint
    """The mirror's URL, e.g. https://harbor.example/v2/dockerhub-proxy."""
    # Harbor proxy-cache projects serve under /v2/<project>/, so containerd must not append /v2.
    override_path: bool = False
    """The endpoint already includes the /v2/ path (Harbor proxy-cache projects)."""
    ca_certificate: PemCertificate | None = None
    """PEM certificate of the CA that signed the mirror's HTTPS certificate, when it is not a public one: containerd
    on every node checks the mirror against it (and only the mirror)."""


class RegistrySpec(Spec):
    """Registry mirrors both OSes' containerd pull through."""
    mirrors: list[RegistryMirrorSpec] = []
    """The mirrors; none: images come straight from their registries."""


class SmbStorageSpec(Spec):
    """An SMB share both OSes mount (StorageClass shared-files); needs the secrets smbUsername and smbPassword."""
    source: Annotated[str, matching(r"^\\\\[^\\]+\\[^\\]+", r"a UNC share path, e.g. \\10.10.10.20\k8s-share")]
    """The share, e.g. \\\\10.10.10.20\\k8s-share."""
    dir_mode: Annotated[str, matching(r"^0[0-7]{3}$", 'an octal mode, quoted, e.g. "0770"')] = "0770"
    """cifs dir_mode on Linux nodes (Windows ignores mount options)."""
    file_mode: Annotated[str, matching(r"^0[0-7]{3}$", 'an octal mode, quoted, e.g. "0770"')] = "0660"
    """cifs file_mode on Linux nodes."""
    uid: Annotated[int, Field(ge=0)] | None = None
    """cifs uid on Linux nodes; absent: the mount's default."""
    gid: Annotated[int, Field(ge=0)] | None = None
    """cifs gid on Linux nodes; absent: the mount's default."""
    version: Literal["2.1", "3.0", "3.02", "3.1.1"] = "3.0"
    """The SMB dialect Linux nodes mount new volumes with (mount.cifs vers=; SMB1 and 2.0 are left out): a server
    that speaks 3.1.1 only needs 3.1.1. Volumes made before keep the options they were made with; Windows nodes
    negotiate their own."""


class NfsStorageSpec(Spec):
    """An NFS export Linux pods mount (StorageClass nfs-files)."""
    server: Host
    """The NFS server's address or DNS name."""
    path: Annotated[str, matching(r"^/[A-Za-z0-9._/-]*$", "an absolute export path, e.g. /export/k8s")]
    """The export path."""


class LonghornSpec(Spec):
    """Longhorn block volumes on the Linux workers (StorageClass longhorn)."""
    replicas: Annotated[int, Field(ge=1, le=3)] | None = None
    """Replicas of each volume, each on its own Linux worker and in its own zone while the zones with a Linux worker
    are as many (else spread over them where possible); absent: 3, or fewer on fewer Linux workers. A change applies
    to new volumes (each volume keeps its count: change it on the volume in Longhorn's UI or API)."""


class StorageSpec(Spec):
    """Persistent storage; each backend is installed only when its section is present."""
    smb: SmbStorageSpec | None = None
    """SMB share for both OSes; absent: not installed."""
    nfs: NfsStorageSpec | None = None
    """NFS export for Linux pods; absent: not installed."""
    longhorn: LonghornSpec | None = None
    """Longhorn block storage; absent: not installed."""
    reclaim_policy: Literal["Retain", "Delete"] = "Retain"
    """What happens to a volume when its claim is deleted (every class)."""
    allow_expansion: bool = True
    """Whether claims may grow (every class)."""
    default_class: Literal["shared-files", "nfs-files", "longhorn"] | None = None
    """The class a claim without one gets: the class of a configured backend, or none."""


class WindowsActivationSpec(Spec):
    """How each Windows guest is activated, applied by its converge step (render/hyperv.py).

    kms: the edition's public KMS client key (GVLK) and this KMS host; avma: the edition's public AVMA
    key, activated by the Hyper-V host itself (Datacenter hosts only); none: the guest keeps whatever
    its golden image carries. Neither key is a secret (Microsoft publishes both); a MAK would be, and
    is not supported here.
    """

    mode: Literal["kms", "avma", "none"] = "none"
    """kms, avma or none."""
    kms_host: Host | None = None
    """The KMS host (mode kms only)."""
    # 1688 is the KMS default port (https://learn.microsoft.com/windows-server/get-started/kms-create-host).
    kms_port: Annotated[int, Field(ge=1, le=65535)] = 1688
    """The KMS port."""

    @model_validator(mode="after")
    def _kms_host_with_kms_only(self) -> WindowsActivationSpec:
        if self.mode == "kms" and self.kms_host is None:
            raise ValueError("kmsHost is required with mode: kms")
        if self.mode != "kms" and self.kms_host is not None:
            raise ValueError(f"kmsHost is only used with mode: kms (mode is {self.mode})")
        return self


class WindowsSpec(Spec):
    """Settings of every Windows node."""
    # netsh int ipv4 set dynamicport: start at least 1025, at least 255 ports
    # (https://learn.microsoft.com/en-us/troubleshoot/windows-server/networking/default-dynamic-port-range-tcpip-chang).
    # The default is aks-engine's 33000-65535 ("Update the range to [33000, 65535] to avoid that it conflicts
    # with NodePort range (30000 - 32767)", parts/k8s/windowsconfigfunc.ps1 Adjust-DynamicPortRange, v0.79.0):
    # above the NodePorts and clear of every port the node's own agents listen on (config.rules).
    dynamic_port_start: Annotated[int, Field(ge=1025, le=65535)] = 33000
    """Start of the Windows dynamic (ephemeral) port range; keep it above the NodePort range."""
    dynamic_port_count: Annotated[int, Field(ge=255, le=64511)] = 32536
    """Size of the dynamic port range."""
    allow_unsupported_versions: list[WindowsKey] = []
    """Windows versions upstream Kubernetes no longer supports, accepted anyway with a warning."""
    activation: WindowsActivationSpec = WindowsActivationSpec()
    """How each Windows guest is activated."""


def _max_unavailable(value: int | str) -> int | str:
    """A count of nodes (3) or a share of a pool ("20%"), as Kubernetes writes maxUnavailable."""
    if checks.is_max_unavailable(value):
        return value
    raise ValueError('must be a node count from 1 or a percentage from 1% to 100%, e.g. 3 or "20%"')


MaxUnavailable = Annotated[int | str, AfterValidator(_max_unavailable)]


class RolloutSpec(Spec):
    """How rolling operations (Kubernetes and container runtime upgrades, restarts that apply VM settings) move
    through the nodes: control-plane nodes one at a time, then the workers in waves."""

    # Kubespray's upgrade-cluster.yml runs its workers with `serial: 20%`; 20% keeps four fifths of every
    # pool serving and, at the bench's 300 nodes, finishes a patch upgrade in under two hours (docs/benchmarks.md).
    max_unavailable: MaxUnavailable = "20%"
    """Workers of one zone and one OS taken down at once in a wave: a count, or a percentage of that pool
    (rounded down, at least 1). Never the whole pool when it has more than one node."""
    zones: Literal["one-at-a-time", "together"] = "one-at-a-time"
    """one-at-a-time: a zone's waves finish before the next zone's start (a zone outage during an upgrade
    leaves the others untouched); together: each wave takes nodes from every zone."""


class ProvisioningSpec(Spec):
    """How much of a first build (or of many new nodes) runs at once on one host: creating 300 nodes must not
    start 100 clones on one Proxmox node or 200 SSH logins to the first control-plane node."""

    # bpg's clone.retries exists because "Proxmox errors with timeout when creating multiple clones at once"
    # (virtual_environment_vm docs); a clone holds the node's storage lock while it allocates its disk.
    clones_per_proxmox_node: Annotated[int, Field(ge=1, le=32)] = 4
    """Linux VMs cloned (with their cloud-init snippet uploaded over SSH) at once on one Proxmox node."""
    # Each Windows VM starts with a full copy of its golden VHDX on the host's VM volume.
    copies_per_hyperv_host: Annotated[int, Field(ge=1, le=16)] = 2
    """Windows VMs created (golden VHDX copied) at once on one Hyper-V host."""
    # OpenSSH's default MaxStartups 10:30:100 starts refusing logins beyond 10 unauthenticated at once
    # (sshd_config(5)); 8 leaves room for an operator's own login.
    control_plane_sessions: Annotated[int, Field(ge=1, le=9)] = 8
    """Joining nodes whose join credential or readiness wait runs at once on the first control-plane node."""


def _address_range(value: str) -> str:
    """An IPv4 range as MetalLB's IPAddressPool takes it: first-last, or a CIDR prefix (host bits zero)."""
    try:
        if "-" in value:
            first, last = (IPv4Address(part.strip()) for part in value.split("-", 1))
            if last < first:
                raise ValueError
            return f"{first}-{last}"
        return str(IPv4Network(value))
    except ValueError:
        raise ValueError("must be an IPv4 range first-last (10.30.30.200-10.30.30.220) or a prefix "
                         "(10.30.30.192/28)") from None


AddressRange = Annotated[str, AfterValidator(_address_range)]


class LoadBalancerSpec(Spec):
    """LoadBalancer Services get addresses from MetalLB in layer 2 mode (its speakers on Linux nodes answer ARP
    for them on the node network); absent: no implementation, and a LoadBalancer Service stays pending."""

    addresses: Annotated[list[AddressRange], Field(min_length=1)]
    """Ranges on the node network MetalLB may hand out, none of them a node, VIP, gateway, host or DNS address."""


class AcmeSpec(Spec):
    """An ACME CA (Let's Encrypt, or the site's own ACME server), answered by HTTP-01 through the samples' Gateway."""

    server: HttpsEndpoint
    """The ACME directory URL, e.g. https://acme-v02.api.letsencrypt.org/directory."""
    email: Annotated[str, AfterValidator(_must_be(
        lambda v: bool(re.match(r"^[^@\s]+@[^@\s]+\.[^@\s]+$", v)), "an e-mail address, e.g. ops@example.com"))]
    """The account's contact address."""
    ca_certificate: PemCertificate | None = None
    """PEM certificate of the CA that signed the ACME server's HTTPS certificate, when it is not a public one (a
    site's own ACME server)."""


class CertificateGrantSpec(Spec):
    """Names the ClusterIssuer may certify for Certificates of one namespace."""

    namespace: Label
    """The namespace the Certificates are in."""
    dns_names: Annotated[list[RouteHost], Field(min_length=1)]
    """The DNS names they may carry, each exact or `*.`-prefixed (a `*.` name is allowed as written, and it also
    admits every name under it, as approver-policy matches `*` against any text)."""


class TlsSpec(Spec):
    """cert-manager and the ClusterIssuer certificates come from; the samples' Gateway then serves HTTPS on 443 and
    redirects HTTP to it. Exactly one of `ca` and `acme`. Only the requests a policy allows are approved: the
    samples' host name in the Gateway's namespace, and what `allow` grants."""

    ca: dict[str, object] | None = None
    """An internal CA: `{}`. Its certificate and key are the secrets tlsCaCertificate and tlsCaKey (PEM)."""
    acme: AcmeSpec | None = None
    """An ACME CA, which must reach the Gateway's address on port 80 for HTTP-01."""
    allow: list[CertificateGrantSpec] = []
    """Certificates of your own the issuer may sign: per namespace, the DNS names allowed. A request for any other
    name, or from any other namespace, is never approved."""

    @model_validator(mode="after")
    def _one_issuer(self) -> TlsSpec:
        if (self.ca is None) == (self.acme is None):
            raise ValueError("give exactly one issuer: ca: {} (an internal CA, secrets tlsCaCertificate and tlsCaKey) "
                             "or acme: {server, email}")
        if self.ca:
            raise ValueError("ca takes no settings (write ca: {}): the CA's certificate and key are secrets")
        return self


class LogOutputSpec(Spec):
    """Where Fluent Bit on both OSes ships logs."""
    kind: Literal["loki", "elasticsearch", "forward"]
    """The log server: loki, elasticsearch or forward (Fluentd / Fluent Bit)."""
    host: Host
    """Its address or full DNS name (Windows pods treat a dotted name as fully qualified)."""
    port: Annotated[int, Field(ge=1, le=65535)]
    """Its port."""
    tls: bool = True
    """Ship over TLS, the server's certificate verified; false sends every log line, the audit log's included, in plain
    text (a relaxation: synth warns)."""
    ca_certificate: PemCertificate | None = None
    """PEM certificate of the CA that signed the log server's certificate, when it is not a public one (with tls)."""
    tenant: LokiTenant | None = None   # loki only
    """Loki tenant ID (loki only)."""
    # elasticsearch only; Elasticsearch index names are lower case (docs "Create index API": "Lowercase only").
    index_prefix: Annotated[str, matching(r"^[a-z0-9][a-z0-9_.-]{0,99}$", "a lower-case index prefix, e.g. kubernetes")] = "kubernetes"
    """Index prefix (elasticsearch only)."""

    @model_validator(mode="after")
    def _ca_with_tls(self) -> LogOutputSpec:
        if self.ca_certificate is not None and not self.tls:
            raise ValueError("caCertificate checks the server's TLS certificate: remove it, or ship with tls: true")
        return self


class MetricsSpec(Spec):
    """kube-prometheus-stack (Prometheus, Alertmanager, Grafana, node-exporter, windows_exporter); needs the secret
    grafanaAdminPassword."""
    retention: Annotated[str, matching(r"^\d+[dhw]$", "a number of days, hours or weeks, e.g. 15d")] = "15d"
    """How long Prometheus keeps metrics."""
    volume_gb: Annotated[int, Field(ge=5, le=16384)] = 50
    """Size of Prometheus's volume: a Longhorn volume when the stack has storage.longhorn (Prometheus's storage must
    be a POSIX block file system, not NFS or SMB); without Longhorn its data is on its node's disk and is lost when
    the pod moves (synth warns)."""


class ObservabilitySpec(Spec):
    """Metrics and logs; each part only when its section is present."""
    metrics: MetricsSpec | None = None
    """Monitoring stack; absent: not installed (and no grafanaAdminPassword needed)."""
    logs: LogOutputSpec | None = None
    """Log shipping; absent: no Fluent Bit."""


class PolicySpec(Spec):
    """OPA Gatekeeper and the placement constraints; absent: not installed."""
    enforcement_action: Literal["dryrun", "warn", "deny"] = "deny"
    """What a workload breaking the placement rules gets: dryrun (audit only), warn, or deny."""
    namespaces: Annotated[list[Label], Field(min_length=1)] = ["win-prod", "linux-prod"]
    """The namespaces the constraints apply to (declared in `namespaces`)."""


# A Kubernetes quantity such as "4", "250m", "8Gi" (k8s.io/apimachinery resource.Quantity, decimal and
# binary suffixes); render.scheduling checks how the quantities relate.
Quantity = Annotated[str, matching(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$",
                                    "a Kubernetes quantity, e.g. 500m, 2, 512Mi or 4Gi")]


class NamespaceSpec(Spec):
    """One application namespace: its name says the OS its pods run on (win-* or linux-*), its quota
    and container defaults bound what runs there, its Pod Security level what may."""
    name: Label
    """Namespace name: win-* for Windows pods, linux-* for Linux pods."""
    os: Literal["windows", "linux"]
    """The OS its pods run on."""
    cpu_requests: Quantity = "4"
    """ResourceQuota requests.cpu."""
    memory_requests: Quantity = "8Gi"
    """ResourceQuota requests.memory."""
    cpu_limits: Quantity = "12"
    """ResourceQuota limits.cpu."""
    memory_limits: Quantity = "16Gi"
    """ResourceQuota limits.memory."""
    pods: Annotated[int, Field(ge=1, le=10000)] = 20
    """ResourceQuota pods."""
    default_cpu_request: Quantity = "100m"
    """LimitRange default CPU request of a container."""
    default_memory_request: Quantity = "128Mi"
    """LimitRange default memory request of a container."""
    default_cpu_limit: Quantity = "1"
    """LimitRange default CPU limit of a container."""
    default_memory_limit: Quantity = "512Mi"
    """LimitRange default memory limit of a container."""
    pod_security: Literal["restricted", "baseline", "privileged"] = "restricted"
    """Pod Security Standard enforced."""

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
    sample_host: RouteHost | None = None
    """Host name the sample Gateway and routes answer to; absent: any host."""
    windows_namespace: Label = "win-prod"
    """The Windows namespace api-win runs in."""
    linux_namespace: Label = "linux-prod"
    """The Linux namespace api-linux runs in."""
    windows_replicas: Annotated[int, Field(ge=1, le=1000)] = 4
    """api-win replicas; with resourceMetrics the fewest its HorizontalPodAutoscaler keeps."""
    linux_replicas: Annotated[int, Field(ge=1, le=1000)] = 6
    """api-linux replicas; with resourceMetrics the fewest its HorizontalPodAutoscaler keeps."""
    windows_max_replicas: Annotated[int, Field(ge=1, le=1000)] = 8
    """The most api-win replicas its HorizontalPodAutoscaler may run (with resourceMetrics)."""
    linux_max_replicas: Annotated[int, Field(ge=1, le=1000)] = 10
    """The most api-linux replicas its HorizontalPodAutoscaler may run (with resourceMetrics)."""
    target_cpu_utilization: Annotated[int, Field(ge=10, le=100)] = 70
    """The average CPU use, in percent of the pods' CPU request, the samples' autoscalers keep."""

    @model_validator(mode="after")
    def _max_not_below_min(self) -> WorkloadsSpec:
        for os_name, low, high in (("windows", self.windows_replicas, self.windows_max_replicas),
                                   ("linux", self.linux_replicas, self.linux_max_replicas)):
            if high < low:
                raise ValueError(f"{os_name}MaxReplicas ({high}) is below {os_name}Replicas ({low}): raise it to at "
                                 f"least {low}")
        return self


class ProgressiveDeliverySpec(Spec):
    """Argo Rollouts on Linux nodes; with the samples, each sample's Deployment is taken over by a blue-green Rollout:
    a new version starts beside the old one behind its preview Service and /preview route, and goes live when promoted
    (`kubectl argo rollouts promote`) or is dropped when aborted; absent: not installed."""
    auto_promotion: bool = False
    """Promote a new version as soon as it is ready, without an operator (false: wait for `promote`)."""
    scale_down_delay_seconds: Annotated[int, Field(ge=30, le=86400)] = 30
    """How long the old version keeps running after the switch (the Gateway drops its endpoints meanwhile)."""


class TracingSpec(Spec):
    """Distributed tracing: an OpenTelemetry Collector on Linux nodes receiving OTLP from workloads of both operating
    systems (at otel-collector.opentelemetry.svc, gRPC 4317 and HTTP 4318) and exporting traces to a backend such as
    Tempo or Jaeger; with the samples, the Gateway traces every request and api-linux its own work; absent: none."""
    endpoint: Annotated[str, matching(r"^[A-Za-z0-9.-]+:[0-9]{1,5}$", "host:port of an OTLP/gRPC receiver, e.g. "
                                                                      "tempo.hk-prod.internal:4317")]
    """The backend's OTLP/gRPC receiver, host:port."""
    insecure: bool = False
    """Send without TLS (a backend inside a trusted network); false: TLS, checked against the system's CAs or caCertificate."""
    ca_certificate: PemCertificate | None = None
    """PEM certificate of the CA that signed the backend's certificate, when it is not a public one."""
    sampling_percent: Annotated[int, Field(ge=0, le=100)] = 10
    """The share of requests the samples' Gateway traces."""


class ResourceMetricsSpec(Spec):
    """The resource metrics API (`kubectl top`, CPU and memory HorizontalPodAutoscalers): metrics-server on Linux nodes
    reading the kubelets of both operating systems over TLS checked against the cluster CA. Every kubelet gets a serving
    certificate from the cluster CA (kubeadm's serverTLSBootstrap), approved by a program on the control-plane nodes for
    the requesting node's own name and address only. On unless `enabled: false`: without it no HorizontalPodAutoscaler works."""
    enabled: bool = True
    """false: no metrics-server, no approver, and kubelets serve their self-signed certificates again."""


class CustomMetricsSpec(Spec):
    """KEDA: autoscaling on metrics from the cluster's Prometheus (observability.metrics), such as request rate;
    absent: not installed. With the samples, api-linux scales on its request rate through the Gateway as well as
    on CPU."""
    requests_per_second: Annotated[int, Field(ge=1, le=1_000_000)] = 50
    """The request rate, per api-linux replica, its autoscaler keeps (measured at the Gateway over 2 minutes)."""


class ObjectLockSpec(Spec):
    """A bucket's S3 Object Lock default retention."""
    mode: Literal["governance", "compliance"]
    """governance: a key allowed s3:BypassGovernanceRetention may still delete; compliance: no one may, until the
    retention ends."""
    days: Annotated[int, Field(ge=1, le=3650)]
    """How long each object version is kept from deletion after it is written."""


class ObjectStoreSpec(Spec):
    """An S3-compatible bucket: MinIO, Ceph RGW or another store that speaks S3, reached by path-style URLs."""
    endpoint: HttpEndpoint
    """The store's URL, e.g. https://minio.hk-prod.internal:9000 (path-style requests go to it)."""
    bucket: Annotated[str, matching(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", "an S3 bucket name, e.g. velero-hk-prod")]
    """The bucket, which must exist."""
    region: Annotated[str, matching(r"^[a-z0-9-]{1,32}$", "a region name, e.g. us-east-1")] = "us-east-1"
    """The region the store signs requests for (MinIO's default is us-east-1)."""
    prefix: Label | None = None
    """A folder in the bucket for this cluster; absent: the cluster's name."""
    provider: Literal["minio", "ceph", "other"] = "minio"
    """The kind of store: Ceph RGW needs S3 checksums off (Velero's AWS plugin, known issues)."""
    ca_certificate: PemCertificate | None = None
    """PEM certificate of the CA that signed the store's HTTPS certificate, when it is not a public one."""
    object_lock: ObjectLockSpec | None = None
    """The bucket was made with S3 Object Lock and this default retention: checked from the first control-plane node
    before Velero is first installed, and again whenever the store's settings, this or its keys change (docs/backup.md,
    "Immutable buckets"). Not on recoverFrom, which this cluster only reads. Absent: not checked."""


class BackupSpec(Spec):
    """Velero: scheduled backups of the objects of every namespace but the platform's (which the program makes again)
    and, with fileSystemBackup, of pod volumes on Linux and Windows nodes, to an S3-compatible store in this site and,
    with `offsite`, to one in another site; absent: no backups. Needs the secrets backupAccessKeyId and
    backupSecretAccessKey (offsite: offsiteAccessKeyId and offsiteSecretAccessKey)."""
    primary: ObjectStoreSpec
    """The store in this site: the default backup location."""
    offsite: ObjectStoreSpec | None = None
    """A store in another site (another city): every backup is also made there, and with etcdBackup each control-plane
    node uploads its encrypted snapshots there (secrets etcdOffsiteAccessKeyId and etcdOffsiteSecretAccessKey)."""
    schedule: Annotated[str, matching(r"^(\S+ ){4}\S+$", 'a five-field cron expression, e.g. "0 2 * * *"')] = "0 2 * * *"
    """When the backups run (cron, in the stack's `timezone`)."""
    retention_days: Annotated[int, Field(ge=1, le=3650)] = 30
    """How long a backup is kept (and an etcd snapshot off-site)."""
    offsite_retention_days: Annotated[int, Field(ge=1, le=3650)] | None = None
    """How long the off-site copies of the backups are kept, when the other site keeps them longer or shorter than
    this one (e.g. 90 days for recovery); absent: retentionDays."""
    file_system_backup: bool = True
    """Back up the files of every pod volume too (Velero's node agent on Linux and Windows nodes); false: objects only."""
    offsite_etcd_schedule: str | None = None
    """No longer used: each control-plane node uploads its snapshot off-site as soon as it is stored (synth warns;
    remove the key)."""
    recover_from: ObjectStoreSpec | None = None
    """Disaster recovery into this cluster: the off-site store of the cluster it replaces, as the read-only location
    `recovery` to restore from (its prefix is that cluster's; the secrets offsiteAccessKeyId/offsiteSecretAccessKey)."""
    keep_velero_default_repository_password: bool = False
    """A cluster whose file-system backups Velero began before the stack gave it veleroRepositoryPassword: keep the
    password Velero made its repositories with, its published default, which opens them to anyone who reads the bucket
    (a relaxation: synth warns; docs/backup.md, "Repository password", says how to leave it). Velero cannot change a
    repository's password, so without this such a cluster's `up` stops at the password step."""


class EtcdBackupSpec(Spec):
    """Scheduled etcd snapshots from every control-plane node to an NFS export; absent: none are taken."""
    nfs_server: Host
    """The NFS server's address or DNS name."""
    nfs_path: Annotated[str, matching(r"^/[A-Za-z0-9._/-]*$", "an absolute export path, e.g. /export/k8s")]
    """The export (each node writes to its own sub-directory)."""
    # A systemd OnCalendar expression (systemd.time(7)), e.g. "*-*-* 00/6:00:00" for every six hours.
    schedule: Annotated[str, matching(r"^[A-Za-z0-9*:/,.~ -]{1,64}$",
                                      'a systemd OnCalendar expression, e.g. "*-*-* 00/6:00:00"')] = "*-*-* 00/6:00:00"
    """systemd OnCalendar expression (systemd.time(7))."""
    keep: Annotated[int, Field(ge=1, le=1000)] = 28
    """Snapshots kept per node."""
    alert_after_hours: Annotated[int, Field(ge=1, le=24 * 90)] = 12
    """Alert (with observability.metrics) when a node's newest snapshot is older than this; twice the schedule's
    period."""
    recipient_keys: Annotated[list[OpenPgpPublicKey], Field(min_length=1)]
    """The OpenPGP public keys every snapshot is encrypted to on its node before it leaves it (`gpg --armor --export
    FINGERPRINT`, one key each): their private keys, kept offline, are what a restore needs (docs/backup.md). Two
    keys: two custodians, or a rotation."""


PsaLevel = Literal["restricted", "baseline", "privileged"]


class SecretsEncryptionSpec(Spec):
    """Encryption of Secrets in etcd (an EncryptionConfiguration with the secretbox provider): the key is made on the
    first control-plane node, carried to the others only through Pulumi secrets, and never leaves them otherwise."""
    enabled: bool = True
    """false: Secrets are stored in etcd as plain text (a relaxation: synth warns)."""
    key_rotation: Annotated[str, matching(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$",
                                          'a label of letters, digits, ".", "_" or "-", e.g. "2027-01"')] | None = None
    """A label for a key rotation round (e.g. "2027-01"): setting or changing it makes a new key on the first
    control-plane node, rolls it to every control-plane node and rewrites every Secret with it."""


class PodSecuritySpec(Spec):
    """The cluster-wide Pod Security default (the API server's AdmissionConfiguration): it holds for every namespace
    without its own Pod Security labels, those created later by anyone included."""
    enforce: PsaLevel = "baseline"
    """Level a pod must meet to be admitted; privileged is a relaxation (synth warns)."""
    audit: PsaLevel = "restricted"
    """Level whose violations are recorded in the audit log."""
    warn: PsaLevel = "restricted"
    """Level whose violations are returned to the client as warnings."""
    exempt_namespaces: list[Label] = []
    """Further namespaces exempt from Pod Security altogether (a relaxation: synth warns for each)."""
    inline_nfs_namespaces: list[Label] = []
    """Namespaces whose pods may mount NFS exports inline (`volumes[].nfs`), which the kubelet mounts from the node's
    address, past network policy; everywhere else only through a PersistentVolumeClaim (a relaxation: synth warns)."""


class NetworkPolicySpec(Spec):
    """Calico policies that keep pods off the management network, the hypervisors, the storage and backup servers and
    the nodes' SSH, and default-deny ingress in the application namespaces."""
    enabled: bool = True
    """false: no such policies, every pod reaches everything the network lets it (a relaxation: synth warns)."""
    protected_networks: list[IPv4Net] = []
    """Further networks no ordinary pod may reach (out-of-band management, a storage network not declared in
    `network`)."""


class AuditLogSpec(Spec):
    """The API server's audit log on each control-plane node (/var/log/kubernetes/audit), rotated by the API server,
    shipped with the node logs when observability.logs is on. Secret, ConfigMap and token bodies are never recorded."""
    enabled: bool = True
    """false: no audit log (a relaxation: synth warns)."""
    max_age_days: Annotated[int, Field(ge=1, le=3650)] = 30
    """Days a rotated audit file is kept (the CIS benchmark asks for 30 or more)."""
    max_backups: Annotated[int, Field(ge=1, le=1000)] = 10
    """Rotated audit files kept (the CIS benchmark asks for 10 or more)."""
    max_size_mb: Annotated[int, Field(ge=1, le=10000)] = 100
    """Size in MB at which the audit file is rotated (the CIS benchmark asks for 100 or more)."""


class SecuritySpec(Spec):
    """How the cluster is hardened, measured against the CIS Kubernetes Benchmark (docs/security.md). Every setting
    is on by default; a stack relaxes one only by saying so here, and synth warns about each relaxation."""
    secrets_encryption: SecretsEncryptionSpec = SecretsEncryptionSpec()
    """Secrets encrypted at rest in etcd."""
    pod_security: PodSecuritySpec = PodSecuritySpec()
    """The cluster-wide Pod Security default."""
    network_policy: NetworkPolicySpec = NetworkPolicySpec()
    """What pods may reach."""
    audit_log: AuditLogSpec = AuditLogSpec()
    """The API server's audit log."""
    seccomp_default: bool = True
    """Every container without a seccomp profile runs with the runtime's default one (kubelet seccompDefault); false
    is a relaxation (synth warns)."""
    pod_pids_limit: Annotated[int, Field(ge=256, le=4_194_304)] = 16384
    """The most processes and threads one pod may run on a Linux node (kubelet podPidsLimit: the pids cgroup counts
    threads). Longhorn's instance-manager pod runs every engine and replica process of its node, so a node holding
    many Longhorn volumes needs more (longhorn/longhorn#3178, #11453: `pthread_create failed`)."""
    selinux: Literal["enforcing", "permissive"] = "enforcing"
    """SELinux on the RHEL-family nodes (Rocky, CentOS); permissive is a relaxation (synth warns)."""
    pin_host_keys: bool = True
    """Every SSH connection refuses a server other than the one pinned: the Proxmox nodes, Hyper-V hosts and bastion by
    their `hostKey`, the Linux nodes by the key the program makes for each and gives it at first boot (cloud-init).
    false lets the hosts go without `hostKey` and accepts whatever key they present (a relaxation: synth warns)."""


class StackSpec(Spec):
    """The whole stack: each field is one `hybrid-cluster:<key>` entry of the stack file."""

    cluster: ClusterSpec
    """The cluster: name, Kubernetes release, address ranges, API endpoint."""
    calico: CalicoSpec = CalicoSpec()
    """Calico pod networking."""
    network: NetworkSpec
    """The site's networks and name servers."""
    zones: Annotated[list[Label], Field(min_length=1)]
    """Failure domains (racks, rooms, sites): every host and node is in one."""
    proxmox: ProxmoxSpec
    """The Proxmox VE cluster of the Linux nodes."""
    hyperv: HypervSpec = HypervSpec()
    """The Hyper-V hosts of the Windows nodes."""
    access: AccessSpec
    """Sign-in to the Linux nodes."""
    nodes: NodesSpec
    """The nodes."""
    registry: RegistrySpec = RegistrySpec()
    """Registry mirrors."""
    ntp_servers: Annotated[list[Host], Field(min_length=1)]
    """NTP servers for every node."""
    timezone: IanaZone = UTC
    """The nodes' time zone (an IANA name, e.g. Asia/Hong_Kong): their logs' local time, when the Linux nodes' timers
    (etcdBackup.schedule) fire, and the time zone of backup.schedule. The Windows nodes take the Windows zone CLDR
    matches to it (China Standard Time for Asia/Hong_Kong). Earlier releases set Asia/Hong_Kong on every Linux node
    and left the Windows nodes' as their image had it: set it to keep that."""
    storage: StorageSpec | None = None
    """Persistent storage (optional)."""
    windows: WindowsSpec = WindowsSpec()
    """Windows node settings."""
    rollout: RolloutSpec = RolloutSpec()
    """How upgrades and restarts roll through the nodes."""
    provisioning: ProvisioningSpec = ProvisioningSpec()
    """How many nodes are created at once per host."""
    observability: ObservabilitySpec | None = None
    """Metrics and logs (optional)."""
    policy: PolicySpec | None = None
    """Gatekeeper placement policy (optional)."""
    tls: TlsSpec | None = None
    """cert-manager with a ClusterIssuer, and HTTPS for the samples' Gateway (optional)."""
    load_balancer: LoadBalancerSpec | None = None
    """Addresses for LoadBalancer Services, the samples' Gateway among them (optional; MetalLB, layer 2)."""
    workloads: WorkloadsSpec | None = None
    """The sample applications and their Gateway (optional; `{}` turns them on with defaults)."""
    resource_metrics: ResourceMetricsSpec = ResourceMetricsSpec()
    """metrics-server and CA-signed kubelet serving certificates (on unless `enabled: false`)."""
    custom_metrics: CustomMetricsSpec | None = None
    """Autoscaling on Prometheus metrics with KEDA (optional; needs observability.metrics)."""
    progressive_delivery: ProgressiveDeliverySpec | None = None
    """Blue-green releases with Argo Rollouts (optional)."""
    tracing: TracingSpec | None = None
    """Distributed tracing with an OpenTelemetry Collector (optional)."""
    namespaces: Annotated[list[NamespaceSpec], Field(min_length=1)] = DEFAULT_NAMESPACES
    """The application namespaces with their quotas, container defaults and Pod Security level."""
    etcd_backup: EtcdBackupSpec | None = None
    """Scheduled etcd snapshots (optional; a production stack should have them)."""
    backup: BackupSpec | None = None
    """Velero backups to S3-compatible stores, on-site and off-site (optional)."""
    security: SecuritySpec = SecuritySpec()
    """Hardening: encryption at rest, Pod Security, network policy, audit logging, kubelet and SELinux settings (all
    on unless relaxed here)."""

    @property
    def linux_worker_zones(self) -> list[str]:
        """The zones with a Linux worker: where Longhorn (on Linux workers only) can keep a replica."""
        return [zone for zone in self.zones if any(n.zone == zone for n in self.nodes.linux)]

    @property
    def longhorn_replicas(self) -> int:
        """Replicas of each Longhorn volume: as storage.longhorn says, else 3, or fewer on fewer Linux workers (Longhorn
        runs on them only, and keeps each replica of a volume on its own node)."""
        longhorn = self.storage.longhorn if self.storage is not None else None
        if longhorn is not None and longhorn.replicas is not None:
            return longhorn.replicas
        return max(1, min(3, len(self.nodes.linux)))

    @property
    def linux_nodes(self) -> list[LinuxNodeSpec]:
        return [*self.nodes.control_plane, *self.nodes.linux]
