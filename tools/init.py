"""Starter stack file: writes Pulumi.<stack>.yaml for your own site from a few flags (as `clusterctl generate
cluster` or `k0sctl init` do), in the minimal working shape of examples/lab/Pulumi.lab.yaml, and checks it with
the program's own validator (config.loader) before writing anything.

    python -m tools.init --stack mylab --network 192.168.1.0/24 --proxmox pve=192.168.1.10 --hyperv hv=192.168.1.20 \\
        --host-key pve='ssh-ed25519 AAAA...' --host-key hv='ssh-ed25519 AAAA...'

Each host key is read on the host's own console (docs/security.md, "Host keys"), not over the network.

It owns only the first version of the file; after that the file is yours to edit. An invalid flag, or a stack
the validator refuses, exits with status 2 and writes nothing; an existing file is kept unless --force.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import TypeAdapter, ValidationError

from config import compat
from config.loader import PROJECT, LoadedStack, SpecError, from_stack_file, load
from config.model import READ_HOST_KEY, DnsSubdomain, HostKey, Label, PublicKey, StackSpec
from config.secret_keys import required_secrets

ROOT = Path(__file__).resolve().parent.parent
# (cpu, memoryMb, diskGb) as in examples/lab; kubeadm's minimum for a control plane is 2 CPUs and 1700 MB, and
# Hyper-V assigns memory in 2 MB units (an even memoryMb).
SIZES = {"cp": (2, 4096, 40), "lnx": (4, 8192, 60), "win": (4, 8192, 80)}
FIRST_VM_ID = 201
T = TypeVar("T")


class Quoted(str):
    """Text written in double quotes, as the docs write versions ("1.36.4": unquoted 1.36 would be a number)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(Quoted, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style='"'))


class FlagError(Exception):
    """A flag value that cannot make a stack; the message names the flag and what a valid value looks like."""


def default_kubernetes_version() -> str:
    """The pinned patch of the newest supported minor that every pinned component also supports (the samples'
    Envoy Gateway lags behind the newest minor: on it, adding the workloads section later would be refused)."""
    minors = compat.supported_versions()
    usable = [minor for minor in minors if minor in compat.ENVOY_GATEWAY.kubernetes] or minors
    return compat.KUBERNETES[usable[-1]].patch


def _valid(annotation: Any, value: str) -> bool:
    try:
        TypeAdapter(annotation).validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


def _arg(parse: Callable[[str], T], expected: str) -> Callable[[str], T]:
    """An argparse type: argparse names the flag, the message says what a valid value looks like."""
    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {expected}") from None
    return convert


def _checked(annotation: Any) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not _valid(annotation, text):
            raise ValueError(text)
        return text
    return parse


def _int_in(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not low <= int(text) <= high:
            raise ValueError(text)
        return int(text)
    return parse


def _host(name_type: Any) -> Callable[[str], tuple[str, IPv4Address]]:
    def parse(text: str) -> tuple[str, IPv4Address]:
        name, sep, address = text.partition("=")
        if not sep or not _valid(name_type, name):
            raise ValueError(text)
        return name, IPv4Address(address)
    return parse


def _host_key(text: str) -> tuple[str, str]:
    name, sep, key = text.partition("=")
    key = " ".join(key.split()[:2])   # a .pub file's line: its comment dropped
    if not sep or not name or not _valid(HostKey, key):
        raise ValueError(text)
    return name, key


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.init", description="Write a starting Pulumi.<stack>.yaml for your own "
                                "site, checked by the program's validator before it is written.")
    address = _arg(IPv4Address, "an IPv4 address, e.g. 192.168.1.1")
    p.add_argument("--stack", required=True, metavar="NAME", type=_arg(_checked(Label), "a DNS-1123 label, e.g. mylab"),
                   help="stack name, also the cluster name and the node name prefix (a DNS-1123 label)")
    p.add_argument("--network", required=True, metavar="CIDR",
                   type=_arg(IPv4Network, "an IPv4 network with zero host bits, e.g. 192.168.1.0/24"),
                   help="the node network, e.g. 192.168.1.0/24")
    p.add_argument("--gateway", metavar="IP", type=address, help="the node network's gateway (default: its first host)")
    p.add_argument("--dns", action="append", metavar="IP", type=address, help="a DNS server, repeatable (default: the gateway)")
    p.add_argument("--vlan-id", metavar="N", type=_arg(_int_in(1, 4094), "a VLAN id 1-4094"),
                   help="the node network's VLAN, tagged on the Hyper-V NICs (default: untagged)")
    p.add_argument("--proxmox-bridge", default="vmbr0", metavar="BRIDGE",
                   help="the Proxmox bridge of the node network, already bound to the VLAN if any (default vmbr0)")
    p.add_argument("--proxmox", action="append", required=True, metavar="NAME=ADDRESS",
                   type=_arg(_host(DnsSubdomain), "NAME=ADDRESS, e.g. pve=192.168.1.10"),
                   help="a Proxmox node, repeatable; the first one's address is the API endpoint")
    p.add_argument("--hyperv", action="append", default=[], metavar="NAME=ADDRESS",
                   type=_arg(_host(Label), "NAME=ADDRESS with a DNS-1123 label as NAME, e.g. hv=192.168.1.20"),
                   help="a Hyper-V host, repeatable; needed only with Windows workers")
    p.add_argument("--host-key", action="append", default=[], metavar="NAME=KEY",
                   type=_arg(_host_key, "NAME='ssh-ed25519 AAAA...' (the host's ed25519 or ECDSA key, without comment)"),
                   help=f"the SSH host key of a Proxmox node or Hyper-V host, repeatable, read on its console with "
                        f"`{READ_HOST_KEY['linux']}` (Windows: `{READ_HOST_KEY['windows']}`); every connection to it is "
                        "pinned to it")
    p.add_argument("--unpinned-host-keys", action="store_true",
                   help="a lab only: hosts without --host-key are accepted whatever key they present "
                        "(security.pinHostKeys: false; synth warns)")
    p.add_argument("--switch", default="External", metavar="NAME", help="the Hyper-V external switch name (default External)")
    p.add_argument("--vm-folder", metavar="PATH", help="where the Hyper-V hosts keep the VMs (default D:\\Hyper-V\\<stack>)")
    p.add_argument("--golden-image", default="D:\\golden\\ws2022-sysprep.vhdx", metavar="PATH",
                   help="the sysprepped Windows Server 2022 VHDX on each Hyper-V host (default %(default)s)")
    p.add_argument("--template-vmid", default=9000, metavar="N", type=_arg(_int_in(100, 999999999), "a VM id of at least 100"),
                   help="the ubuntu22 template's VM id on the first Proxmox node, +1 on each further node (default 9000)")
    p.add_argument("--control-planes", default=1, metavar="N", type=int, choices=(1, 3), help="control-plane nodes, 1 or 3 (default 1)")
    p.add_argument("--linux-workers", default=1, metavar="N", type=_arg(_int_in(1, 500), "a count of at least 1"),
                   help="Linux workers, at least 1: CoreDNS and the operators run there (default 1)")
    p.add_argument("--windows-workers", default=1, metavar="N", type=_arg(_int_in(0, 500), "a count of 0 or more"),
                   help="Windows workers; 0 needs no Hyper-V host (default 1)")
    p.add_argument("--first-ip", metavar="IP", type=address,
                   help="the first node address, the others follow (default: network address +50)")
    p.add_argument("--api-vip", metavar="IP", type=address, help="the API server's virtual IP; required with 3 control planes")
    p.add_argument("--ssh-public-key", metavar="FILE", type=Path, default=Path("~/.ssh/id_ed25519.pub"),
                   help="public key file for the nodes' admin user (default ~/.ssh/id_ed25519.pub; it must exist)")
    p.add_argument("--kubernetes-version", metavar="VERSION", default=default_kubernetes_version(),
                   help=f"Kubernetes version (default %(default)s; supported minors: {', '.join(compat.supported_versions())})")
    p.add_argument("--zone", default="site", metavar="NAME", type=_arg(_checked(Label), "a DNS-1123 label, e.g. site"),
                   help="the one zone every host and node is in (default site)")
    p.add_argument("--output", metavar="PATH", type=Path, help="the file to write (default Pulumi.<stack>.yaml at the repository root)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    return p


def _inside(flag: str, address: IPv4Address, network: IPv4Network) -> IPv4Address:
    if address not in network or address in (network.network_address, network.broadcast_address):
        hosts = f"{network.network_address + 1}-{network.broadcast_address - 1}"
        raise FlagError(f"{flag}: {address} is not a host address of --network {network} (valid: {hosts})")
    return address


def _public_key(path: Path) -> str:
    """The key line of the file. Never prints the file: it could be a private key. No file: refused, as a stack without
    a key of the operator's cannot be signed in to (config.rules refuses the placeholder earlier releases wrote)."""
    path = path.expanduser()
    if not path.is_file():
        raise FlagError(f"--ssh-public-key: {path} does not exist; make a key pair (ssh-keygen -t ed25519) or give the "
                        "public key file of the private key you will set as the nodeSshPrivateKey secret")
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    if len(lines) != 1 or not _valid(PublicKey, lines[0]):
        raise FlagError(f"--ssh-public-key: {path} is not a public key file of one line (ssh-ed25519 AAAA... comment), "
                        "e.g. ~/.ssh/id_ed25519.pub")
    return lines[0]


def document(args: argparse.Namespace, key: str) -> dict[str, Any]:
    """The stack file as data: the sections examples/lab has, nothing optional."""
    stack, zone, network = args.stack, args.zone, args.network
    if network.prefixlen > 29:
        raise FlagError(f"--network: {network} has too few addresses for a cluster; use a /29 or larger, e.g. 192.168.1.0/24")
    gateway = _inside("--gateway", args.gateway or network.network_address + 1, network)
    if args.control_planes > 1 and args.api_vip is None:
        raise FlagError(f"--api-vip: {args.control_planes} control planes need a virtual IP for the API server, "
                        f"a free host address of {network}, e.g. {network.network_address + 10}")
    if args.windows_workers and not args.hyperv:
        raise FlagError("--hyperv: Windows workers need a Hyper-V host, e.g. --hyperv hv=192.168.1.20; or --windows-workers 0")
    vip = _inside("--api-vip", args.api_vip, network) if args.api_vip is not None else None
    dns = args.dns or [gateway]
    taken = {gateway, *dns, *(address for _, address in args.proxmox + args.hyperv), *([vip] if vip else [])}
    if args.first_ip is None and network.num_addresses <= 52:
        raise FlagError(f"--first-ip: {network} is too small for the default (network address +50); give one, e.g. "
                        f"{network.network_address + 2}")
    first = _inside("--first-ip", args.first_ip or network.network_address + 50, network)
    count = args.control_planes + args.linux_workers + args.windows_workers
    candidates = (IPv4Address(i) for i in range(int(first), int(network.broadcast_address)))
    free = list(islice((a for a in candidates if a not in taken), count))
    if len(free) < count:
        raise FlagError(f"--first-ip: from {first} to the end of {network} there are only {len(free)} free addresses "
                        f"for {count} nodes; use a lower --first-ip or a larger --network")
    ips = iter(str(a) for a in free)
    templates = [{"distro": "ubuntu22", "vmId": args.template_vmid + i, "node": name} for i, (name, _) in enumerate(args.proxmox)]
    template_ids = {t["vmId"] for t in templates}
    vm_ids = (i for i in range(FIRST_VM_ID, 10**9) if i not in template_ids)

    def linux(role: str, n: int, index: int) -> dict[str, Any]:
        cpu, memory, disk = SIZES[role]
        return {"name": f"{stack}-{role}-{n}", "zone": zone, "proxmoxNode": args.proxmox[index % len(args.proxmox)][0],
                "vmId": next(vm_ids), "cpu": cpu, "memoryMb": memory, "diskGb": disk, "ip": next(ips)}

    control_plane = [linux("cp", n + 1, n) for n in range(args.control_planes)]
    workers = [linux("lnx", n + 1, args.control_planes + n) for n in range(args.linux_workers)]
    windows = []
    for n in range(args.windows_workers):
        cpu, memory, disk = SIZES["win"]
        node: dict[str, Any] = {"name": f"{stack}-win-{n + 1}", "zone": zone, "hypervHost": args.hyperv[n % len(args.hyperv)][0],
                                "version": "win2022", "cpu": cpu, "memoryMb": memory, "diskGb": disk, "ip": next(ips)}
        if len(node["name"]) > 15:  # NetBIOS names have at most 15 characters
            node["computerName"] = f"{stack[:15 - len(f'-win-{n + 1}')].rstrip('-')}-win-{n + 1}"
        windows.append(node)
    nodes_network: dict[str, Any] = {"cidr": str(network), "gateway": str(gateway), "proxmoxBridge": args.proxmox_bridge}
    if args.vlan_id is not None:
        nodes_network = {"vlanId": args.vlan_id, **nodes_network}
    cluster: dict[str, Any] = {"name": stack, "kubernetesVersion": Quoted(args.kubernetes_version),
                               "podCidr": "10.244.0.0/16", "serviceCidr": "10.96.0.0/12"}
    if vip is not None:
        cluster["apiVip"] = str(vip)
    host_keys = dict(args.host_key)
    hosts = [*args.proxmox, *args.hyperv]
    unknown = sorted(set(host_keys) - {name for name, _ in hosts})
    if unknown:
        raise FlagError(f"--host-key: {', '.join(unknown)} is not a --proxmox or --hyperv host")
    if not args.unpinned_host_keys:
        for name, address in hosts:
            if name not in host_keys:
                raise FlagError(f"--host-key: none for {name} ({address}); every SSH connection to it is pinned to its host "
                                f"key: on its console run `{READ_HOST_KEY['linux']}` (Windows: "
                                f"`{READ_HOST_KEY['windows']}`), compare the fingerprint "
                                f"with `ssh-keyscan -t ed25519 {address} | ssh-keygen -lf -`, then add "
                                f"--host-key {name}='ssh-ed25519 AAAA...'; or, for a lab, --unpinned-host-keys")

    def keyed(name: str) -> dict[str, str]:
        return {"hostKey": host_keys[name]} if name in host_keys else {}

    sections: dict[str, Any] = {
        "cluster": cluster,
        "network": {"nodes": nodes_network, "dnsServers": [str(a) for a in dns]},
        "zones": [zone],
        "proxmox": {"endpoint": f"https://{args.proxmox[0][1]}:8006/",
                    "nodes": [{"name": name, "zone": zone, "address": str(a), **keyed(name)} for name, a in args.proxmox],
                    "templates": templates,
                    "datastores": {"vmDisks": "local-lvm", "cloudInit": "local-lvm", "snippets": "local"}},
    }
    if args.hyperv:
        folder = args.vm_folder or f"D:\\Hyper-V\\{stack}"
        sections["hyperv"] = {"hosts": [{"name": name, "zone": zone, "address": str(a), **keyed(name), "switchName": args.switch,
                                         "vmFolder": folder, "goldenImages": {"win2022": args.golden_image}}
                                        for name, a in args.hyperv]}
    sections["access"] = {"sshPublicKeys": [key]}
    sections["nodes"] = {"controlPlane": control_plane, "linux": workers, **({"windows": windows} if windows else {})}
    sections["ntpServers"] = ["pool.ntp.org"]
    if args.unpinned_host_keys:
        sections["security"] = {"pinHostKeys": False}
    return {"config": {f"{PROJECT}:{name}": value for name, value in sections.items()}}


def validate(stack: str, text: str) -> LoadedStack:
    """The file's text as the program will read it (config.loader); raises SpecError."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"Pulumi.{stack}.yaml"
        path.write_text(text)
        return load(from_stack_file(path))


def schema_modeline(output: Path) -> str:
    """The comment editors with yaml-language-server read to validate the file against the stack schema."""
    schema = os.path.relpath(ROOT / "schema" / "stack.schema.json", output.resolve().parent)
    return f"# yaml-language-server: $schema={Path(schema).as_posix()}\n"


def header(spec: StackSpec, secrets: list[str]) -> str:
    nodes, vlan = spec.nodes, spec.network.nodes
    api = f"API VIP {spec.cluster.api_vip}" if spec.cluster.api_vip else "no API VIP: the API is its address"
    lines = [
        f"{spec.cluster.name}: a starting stack written by `python -m tools.init`, in the minimal shape of examples/lab.",
        f"{len(spec.proxmox.nodes)} Proxmox node(s), {len(spec.hyperv.hosts)} Hyper-V host(s), node network {vlan.cidr} "
        f"({'VLAN ' + str(vlan.vlan_id) if vlan.vlan_id else 'untagged'}), Kubernetes {spec.cluster.kubernetes_version};",
        f"{len(nodes.control_plane)} control-plane node(s) ({api}), {len(nodes.linux)} Linux and {len(nodes.windows)} "
        f"Windows worker(s), one zone ({spec.zones[0]}).",
        "",
        "No optional subsystem is on: storage, observability, policy, workloads, registry mirrors, etcdBackup.",
        "Turn one on by adding its section: examples/ and Pulumi.hk-prod.yaml show each (docs/configuration.md).",
        "",
        f"Secrets this stack needs: {', '.join(secrets)}",
        f"  set each with: pulumi config set --secret --stack {spec.cluster.name} KEY",
    ]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:  # argparse's own errors (status 2) and --help (0)
        return exit_.code if isinstance(exit_.code, int) else 2
    output: Path = args.output or ROOT / f"Pulumi.{args.stack}.yaml"
    try:
        if output.exists() and not args.force:
            raise FlagError(f"--output: {output} exists; choose another --output, or --force to overwrite it")
        if not output.parent.is_dir():
            raise FlagError(f"--output: {output.parent} is not a folder")
        key = _public_key(args.ssh_public_key)
        data = document(args, key)
    except FlagError as error:
        print(f"python -m tools.init: error: {error}; nothing written", file=sys.stderr)
        return 2
    if args.vlan_id is not None and args.proxmox_bridge == "vmbr0":
        print(f"warning: --vlan-id {args.vlan_id}: the Linux VMs' NICs carry no tag of their own; --proxmox-bridge must be a "
              f"bridge already on VLAN {args.vlan_id} (e.g. vmbr{args.vlan_id} on eno1.{args.vlan_id}), not vmbr0", file=sys.stderr)
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=4096)
    try:
        loaded = validate(args.stack, body)
    except SpecError as error:
        print("these flags describe an invalid stack; nothing written:", file=sys.stderr)
        for problem in error.problems:
            print(f"  error: {problem}", file=sys.stderr)
        return 2
    for warning in loaded.warnings:
        print(f"  warning: {warning}", file=sys.stderr)
    secrets = required_secrets(loaded.spec)
    with output.open("w" if args.force else "x") as handle:
        handle.write(schema_modeline(output) + header(loaded.spec, secrets) + body)

    stack = args.stack
    print(f"wrote {output}")
    print("next:")
    print(f"  pulumi stack init {stack}      # once; the file above is kept")
    for secret in secrets:
        print(f"  pulumi config set --secret --stack {stack} {secret}")
    if output.resolve() == (ROOT / f"Pulumi.{stack}.yaml").resolve():
        print(f"  make synth STACK={stack}")
    else:
        print(f"  python -m tools.synth --stack-file {output} --out build/{stack}   # pulumi reads it as {ROOT}/Pulumi.{stack}.yaml")
    print(f"  pulumi preview --stack {stack}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
