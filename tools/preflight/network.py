"""The preflight's checks of the site's network: read from one Proxmox node (every node address free unless it is the
stack's own, the gateway answering, each DNS server resolving a public and the stack's internal names, each NTP server
answering, each endpoint the stack names presenting a certificate it trusts) and from one Hyper-V host (the Windows
nodes' addresses, the gateway and DNS from the Windows side). The addresses are probed on the node network itself; DNS,
NTP and the endpoints are reached through the Proxmox node's own routes, which may not be the node network's. What to ask comes from the
stack here; the probes (render/preflight.py) only ask, and this module judges their answers."""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from typing import Any

from config.endpoints import endpoints, url_host_port
from config.model import ProxmoxNodeSpec, StackSpec
from render.preflight import DNS_PORT, TlsTarget, network_probe
from tools.preflight import ssh
from tools.preflight.results import FAIL, PASS, WARN, Result
from vocab.checks import is_ip_address

# A public name every site must resolve: the Windows nodes download Kubernetes' binaries from dl.k8s.io
# (render/windows_bootstrap.py).
PUBLIC_NAME = "dl.k8s.io"
# Farther than this from an NTP server, a Proxmox node's own clock is worth a look (kubeadm's certificates and etcd
# depend on the nodes' clocks, which come from the same servers).
NTP_OFFSET_WARN_SECONDS = 1.0
# `ip neigh` states after a datagram (iproute2): something answered just now; an entry left from before, which may be a
# machine that is gone (STALE, DELAY, PROBE); or nothing answered.
_NEIGH_ANSWERED = {"REACHABLE", "PERMANENT"}
_NEIGH_UNCONFIRMED = {"STALE", "DELAY", "PROBE"}
# Get-NetNeighbor's states of an address something answered for (MSFT_NetNeighbor: Incomplete and Unreachable mean
# no answer).
_NETNEIGHBOR_ANSWERED = {"Reachable", "Stale", "Delay", "Probe", "Permanent"}
# arping -D counts replies and requests from the address (iputils arping.c recv_pack: "Unicast reply from", "Broadcast
# request from" ...): either means a machine has it.
_REPLY = re.compile(r"(?:reply|request) from (\S+) \[([0-9A-Fa-f:]{17})\]", re.I)
_OFFSET = re.compile(r"System clock wrong by (-?[0-9.]+) seconds")


def tls_targets(spec: StackSpec) -> list[TlsTarget]:
    """Every endpoint outside the cluster the stack names (config/endpoints.py), with the CA it trusts for each."""
    targets = []
    for endpoint in endpoints(spec):
        # containerd adds a mirror's CA to the system's pool; the other clients trust the configured CA alone (Fluent
        # Bit's tls.ca_file, the collector's ca_file without include_system_ca_certs_pool), and so does this check.
        trust = ("pool" if endpoint.key.startswith("registry.mirrors") else "only") if endpoint.tls else "tcp"
        targets.append(TlsTarget(endpoint.key, endpoint.host, endpoint.host, endpoint.port,
                                 endpoint.ca_certificate or "", trust))
    # One handshake per endpoint, whichever keys name it.
    return list({(t.host, t.port, t.ca, t.trust): t for t in targets}.values())


def dns_names(spec: StackSpec) -> list[str]:
    """The public name, then every host name (not an address) the stack names, in the order the stack names them."""
    names = [PUBLIC_NAME, *spec.ntp_servers, *(t.host for t in tls_targets(spec))]
    proxmox = url_host_port(spec.proxmox.endpoint)[0]
    names.append(proxmox)
    if spec.etcd_backup is not None:
        names.append(spec.etcd_backup.nfs_server)
    if spec.access.bastion is not None:
        names.append(spec.access.bastion.host)
    return [n for n in dict.fromkeys(names) if n and not is_ip_address(n)]


def node_addresses(spec: StackSpec) -> dict[str, str]:
    """Every address the stack gives a machine, and whose it is."""
    owners = {str(n.ip): n.name for n in (*spec.linux_nodes, *spec.nodes.windows)}
    if spec.cluster.api_vip is not None:
        owners[str(spec.cluster.api_vip)] = "the API VIP"
    return owners


def probe_interface(spec: StackSpec) -> str:
    """The Proxmox node's interface on the node network: its bridge, or the bridge's VLAN interface (`vmbr0.30`) when
    the bridge is VLAN-aware and the network tagged; "" when the stack names no bridge."""
    vlan = spec.network.nodes
    if vlan.proxmox_bridge is None:
        return ""
    if vlan.proxmox_vlan_aware and vlan.vlan_id is not None:
        return f"{vlan.proxmox_bridge}.{vlan.vlan_id}"
    return vlan.proxmox_bridge


def proxmox_network_probe(spec: StackSpec, dns_port: int = DNS_PORT) -> str:
    gateway = str(spec.network.nodes.gateway)
    return network_probe(probe_interface(spec), [*node_addresses(spec), gateway],
                         [str(s) for s in spec.network.dns_servers], dns_names(spec), list(spec.ntp_servers),
                         tls_targets(spec), dns_port=dns_port)


def run_from_proxmox(spec: StackSpec, node: ProxmoxNodeSpec, endpoint: ssh.Endpoint, bastion: ssh.Endpoint | None,
                     run: Callable[..., ssh.Completed] = ssh.run, dns_port: int = DNS_PORT) -> list[list[str]] | str:
    """The probe's lines, split on tabs; or why it could not run."""
    try:
        done = run(endpoint, proxmox_network_probe(spec, dns_port), timeout=120, bastion=bastion)
    except ssh.SshError as error:
        return str(error)
    if done.status != 0:
        return f"the probe failed ({done.status}): {(done.stderr or done.stdout).strip()[-300:]}"
    return [line.split("\t") for line in done.stdout.splitlines() if "\t" in line]


def arping_answer(rc: int, output: str) -> tuple[str, str]:
    """What `arping -D` printed, judged: ("used", MAC), ("free", "") or ("error", why). Its exit status alone does not
    tell: it is 0 on an interface that cannot ARP too (iputils arping.c finish())."""
    reply = _REPLY.search(output)
    if reply:
        return "used", reply.group(2).lower()
    if rc == 0 and re.search(r"Received 0 response", output):
        return "free", ""
    return "error", output.replace("|", " ").strip()[-200:] or f"exit {rc}"


def neigh_answer(output: str) -> tuple[str, str]:
    """`ip -j neigh show to ADDRESS dev IFACE` after a datagram, judged like arping_answer."""
    try:
        entries = json.loads(output.replace("|", " ") or "[]")
    except ValueError:
        return "error", output[-200:]
    for entry in entries:
        states = set(entry.get("state") or [])
        if states & _NEIGH_ANSWERED and entry.get("lladdr"):
            return "used", str(entry["lladdr"]).lower()
        if states & _NEIGH_UNCONFIRMED:
            return "unconfirmed", str(entry.get("lladdr", "")).lower()
        if states & {"INCOMPLETE", "FAILED"}:
            return "free", ""
    return "error", "the kernel did not try to resolve it (not on this interface's network?)"


def judge_proxmox(spec: StackSpec, node: str, lines: list[list[str]] | str, existing: set[str],
                  unknown: Collection[str] = ()) -> list[Result]:
    """The Proxmox node's answers, judged. `existing`: the stack's machines that exist already (their addresses are in
    use by design: a second run); `unknown`: those whose existence could not be read."""
    host = f"network, from {node}"
    if isinstance(lines, str):
        return [Result(host, "network probe", WARN, f"not run: {lines}",
                       "if the SSH check of this node above failed, fix it; if it passed, run the preflight again")]
    results: list[Result] = []
    owners = node_addresses(spec)
    gateway = str(spec.network.nodes.gateway)
    answers: dict[str, tuple[str, str]] = {}
    for fields in lines:
        kind = fields[0]
        if kind == "iface" and fields[2] == "missing":
            results.append(Result(host, f"interface {fields[1]}", WARN, "not on this node: the addresses are not "
                                                                         "checked from here",
                                  "the Hyper-V host's check covers the Windows nodes; make the interface (a VLAN "
                                  "interface on the bridge) to check from here"))
        elif kind == "tool":
            tool = {"dns": ("perl's Net::DNS", "apt install libnet-dns-perl"), "ntp": ("chronyd", "apt install chrony")}
            if fields[1] in tool:
                results.append(Result(host, f"{fields[1]} checks", WARN, f"not run: {tool[fields[1]][0]} is missing",
                                      tool[fields[1]][1]))
        elif kind == "arping":
            answers[fields[1]] = arping_answer(int(fields[2]), fields[3] if len(fields) > 3 else "")
        elif kind == "neigh":
            answers[fields[1]] = neigh_answer(fields[2] if len(fields) > 2 else "")
        elif kind == "local":
            answers[fields[1]] = ("local", "")
    if answers:
        results += _addresses(host, answers, owners, gateway, existing, unknown)
    results += _dns(host, [f for f in lines if f[0] == "dns"])
    results += _ntp(host, [f for f in lines if f[0] == "ntp"])
    results += _endpoints(host, tls_targets(spec), [f for f in lines if f[0] in ("tls", "tcp")])
    return results


def _addresses(host: str, answers: dict[str, tuple[str, str]], owners: dict[str, str], gateway: str,
               existing: set[str], unknown: Collection[str]) -> list[Result]:
    results = []
    state, mac = answers.get(gateway, ("error", "not probed"))
    # The gateway is the positive control: if it does not answer, "free" means nothing on this interface.
    trusted = state in ("used", "local")
    if state == "local":
        results.append(Result(host, f"gateway {gateway}", PASS, "is this Proxmox node"))
    elif trusted:
        results.append(Result(host, f"gateway {gateway}", PASS, f"answers ({mac})"))
    else:
        results.append(Result(host, f"gateway {gateway}", FAIL, "does not answer ARP" if state == "free" else mac,
                              "check network.nodes.gateway and the bridge's uplink (and its VLAN)"))
    for address, owner in owners.items():
        state, mac = answers.get(address, ("error", "not probed"))
        check = f"address {address} ({owner})"
        if state == "local":
            results.append(Result(host, check, FAIL, "configured on this Proxmox node",
                                  f"give {owner} another address, or take it off the node"))
        elif state == "used" and owner in existing:
            results.append(Result(host, check, PASS, f"in use by {owner}, which exists ({mac})"))
        elif state == "used" and owner in unknown:
            results.append(Result(host, check, WARN, f"in use by {mac}; whether {owner}'s VM exists was not read",
                                  "see its Hyper-V host's checks"))
        elif state == "used":
            results.append(Result(host, check, FAIL, f"in use by {mac}, and {owner} does not exist yet",
                                  f"give {owner} a free address, or find the machine with MAC {mac} (`ip neigh`)"))
        elif state == "free" and trusted:
            results.append(Result(host, check, PASS, "free"))
        elif state == "free":
            results.append(Result(host, check, WARN, "no answer, but neither does the gateway: not conclusive",
                                  "fix the gateway check first"))
        elif state == "unconfirmed":
            results.append(Result(host, check, WARN, f"the node remembers {mac or 'a machine'} there, which did not "
                                                     "answer again in time", "run the preflight again in a minute"))
        else:
            results.append(Result(host, check, WARN, f"not checked: {mac}", "install iputils-arping on the node"))
    return results


def _dns(host: str, lines: list[list[str]]) -> list[Result]:
    results = []
    for _, server, name, answer in (f + [""] * (4 - len(f)) for f in lines):
        check = f"DNS {server}: {name}"
        words = answer.split()
        if words[:1] == ["NOERROR"] and len(words) > 1:
            results.append(Result(host, check, PASS, ", ".join(words[1:])))
        elif words[:1] == ["ERROR"] or not words:
            results.append(Result(host, check, FAIL, f"no answer: {' '.join(words[1:])}",
                                  "check network.dnsServers and that the node network reaches the server (UDP 53)"))
        elif words[0] in ("NXDOMAIN", "NOERROR"):
            results.append(Result(host, check, FAIL, f"{words[0]}, no address",
                                  f"add {name} to the DNS server, or fix the stack key that names it"
                                  if name != PUBLIC_NAME else
                                  "the server must resolve public names (the Windows nodes download from dl.k8s.io)"))
        else:
            results.append(Result(host, check, FAIL, f"the server answered {words[0]}",
                                  "check the server: it must resolve recursively for the node network (REFUSED), and "
                                  "reach its own upstream servers (SERVFAIL)"))
    return results


def _ntp(host: str, lines: list[list[str]]) -> list[Result]:
    results = []
    for _, server, rc, *rest in lines:
        output = rest[0] if rest else ""
        offset = _OFFSET.search(output)
        check = f"NTP {server}"
        if rc == "0" and offset:
            seconds = float(offset.group(1))
            if abs(seconds) > NTP_OFFSET_WARN_SECONDS:
                results.append(Result(host, check, WARN, f"answers; this node's clock is {seconds:+.3f} s from it",
                                      "check the Proxmox node's own time sync (`chronyc sources`)"))
            else:
                results.append(Result(host, check, PASS, f"answers ({seconds:+.3f} s from this node)"))
        else:
            results.append(Result(host, check, FAIL, "no usable answer (silent, or not synchronised itself)",
                                  "check ntpServers and that the node network reaches it (UDP 123)"))
    return results


def _endpoints(host: str, targets: list[TlsTarget], lines: list[list[str]]) -> list[Result]:
    results = []
    found = {int(f[1]): f for f in lines}
    for i, target in enumerate(targets):
        check = f"{target.what} {target.host}:{target.port}"
        fields = found.get(i)
        if fields is None:
            results.append(Result(host, check, WARN, "not probed", ""))
        elif fields[0] == "tcp":
            results.append(Result(host, check, PASS if fields[2] == "0" else FAIL,
                                  "accepts connections (no TLS)" if fields[2] == "0" else "does not accept connections",
                                  "check the host, the port and the firewall between"))
        elif fields[2] == "0":
            results.append(Result(host, check, PASS, "certificate trusted" + (" (the stack's CA)" if target.ca else "")))
        else:
            detail = fields[3] if len(fields) > 3 else ""
            if fields[2] == "124":        # timeout(1): the handshake never finished
                detail = "no TLS answer in 10 s"
            unreachable = fields[2] == "124" or ("connect" in detail.lower() and "verif" not in detail.lower())
            results.append(Result(host, check, FAIL, detail.replace("|", "; ")[:300] or f"exit {fields[2]}",
                                  "check the host, the port and the firewall between" if unreachable else
                                  f"give {target.what} the CA that signed its certificate (caCertificate), or a "
                                  "certificate for this name"))
    return results


def judge_hyperv(spec: StackSpec, name: str, report: dict[str, Any], existing: set[str],
                 unknown: Collection[str] = ()) -> list[Result]:
    """The Hyper-V host's view: the Windows nodes' addresses (when this host is on their network), the gateway, DNS.
    `unknown`: the stack's machines whose existence could not be read (an address of theirs in use is a warning)."""
    host = f"network, from {name}"
    results: list[Result] = []
    gateway = str(spec.network.nodes.gateway)
    seen = report.get("addresses") or {}
    part = seen.get(gateway) or {}
    trusted = bool(part.get("onLink")) and part.get("state") in _NETNEIGHBOR_ANSWERED
    for address, owner in [(gateway, None), *((str(n.ip), n.name) for n in spec.nodes.windows)]:
        part = seen.get(address) or {}
        check = f"gateway {address}" if owner is None else f"address {address} ({owner})"
        state = part.get("state")
        if "error" in part:
            results.append(Result(host, check, WARN, f"not checked: {part['error']}", "read the error; run it again"))
        elif not part.get("onLink"):
            results.append(Result(host, check, WARN, "not on a network of this host: not checked from here",
                                  "the Proxmox node's check covers it"))
        elif state in _NETNEIGHBOR_ANSWERED:
            mac = str(part.get("mac") or "").lower()
            if owner is None or owner in existing:
                results.append(Result(host, check, PASS, f"answers ({mac})"))
            elif owner in unknown:
                results.append(Result(host, check, WARN, f"in use by {mac}; whether {owner}'s VM exists was not read",
                                      "see the VMs check of the host"))
            else:
                results.append(Result(host, check, FAIL, f"in use by {mac}, and {owner} does not exist yet",
                                      f"give {owner} a free address, or find the machine with MAC {mac}"))
        elif owner is None:
            results.append(Result(host, check, FAIL, "does not answer", "check network.nodes.gateway"))
        elif state is None:
            results.append(Result(host, check, WARN, "no neighbour entry: Windows did not try to resolve it",
                                  "run the preflight again"))
        elif trusted:
            results.append(Result(host, check, PASS, "free"))
        else:
            results.append(Result(host, check, WARN, "no answer, but neither does the gateway: not conclusive",
                                  "fix the gateway check first"))
    for entry in report.get("dns") or []:
        check = f"DNS {entry.get('server')}: {entry.get('name')}"
        answer = entry.get("answer") or {}
        if answer.get("addresses"):
            results.append(Result(host, check, PASS, ", ".join(answer["addresses"])))
        else:
            results.append(Result(host, check, FAIL, str(answer.get("error") or "no address"),
                                  "check network.dnsServers, and that this host reaches them"))
    return results
