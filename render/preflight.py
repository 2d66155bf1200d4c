"""The preflight's probes (tools/preflight): the scripts it runs on a Proxmox node and a Hyper-V host, rendered from
plain values, and the exec strings that carry them. Each probe reads only and prints what it found for the tool to
judge: key=value lines on a Proxmox node, tab-separated lines for the network, one JSON line on a Hyper-V host.
Pure: no Pulumi."""
from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from render.hyperv import ssh_command
from render.script_files import render_script

DNS_PORT = 53


@dataclass(frozen=True)
class TlsTarget:
    """An endpoint a node must reach, checked as its client checks it: `trust` "pool" is the system's CAs plus `ca`,
    any of them an anchor (containerd's mirrors); "only" is `ca` alone when it is given (Fluent Bit's tls.ca_file,
    the collector's ca_file), the system's when not; "tcp" is a plain connection (TLS off)."""
    what: str          # the stack key it comes from, for the report
    name: str          # the host name (or address) the certificate must carry
    host: str
    port: int
    ca: str = ""       # PEM; "" for none
    trust: str = "only"


def bash_command(script: str) -> str:
    """The exec string for a bash probe, whatever the user's login shell: `bash -c '<script>'`, as the SSH user (not
    render.shell.bash_command, which runs its script as root under sudo: the probes read what that user may do)."""
    return "bash -c " + shlex.quote(script)


def proxmox_node_probe(store: str, file_name: str) -> str:
    return bash_command(render_script("preflight-proxmox-node.sh", STORE=store, FILE=file_name))


def network_probe(iface: str, addresses: Sequence[str], dns_servers: Sequence[str], dns_names: Sequence[str],
                  ntp_servers: Sequence[str], targets: Sequence[TlsTarget], dns_port: int = DNS_PORT) -> str:
    return bash_command(render_script(
        "preflight-site-network.sh", IFACE=iface, ADDRESSES=list(addresses), DNS_PORT=dns_port,
        DNS_SERVERS=list(dns_servers), DNS_NAMES=list(dns_names), NTP_SERVERS=list(ntp_servers),
        TLS_NAMES=[t.name for t in targets], TLS_HOSTS=[t.host for t in targets], TLS_PORTS=[t.port for t in targets],
        TLS_CAS=[t.ca for t in targets], TLS_MODES=[t.trust for t in targets]))


def hyperv_host_probe(switch_name: str, vm_folder: str, golden: dict[str, str], mount_images: bool,
                      vm_names: Sequence[str], addresses: Sequence[str] = (), gateway: str = "",
                      dns_servers: Sequence[str] = (), dns_names: Sequence[str] = ()) -> str:
    return ssh_command(render_script(
        "preflight-hyperv-host.ps1", SwitchName=switch_name, VmFolder=vm_folder, GoldenKeys=list(golden),
        GoldenPaths=list(golden.values()), MountImages=mount_images, VmNames=list(vm_names),
        Addresses=list(addresses), Gateway=gateway, DnsServers=list(dns_servers), DnsNames=list(dns_names)))
