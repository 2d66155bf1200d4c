"""The known_hosts lines of a stack's Proxmox nodes, for the one SSH client the program cannot pin itself.

The Proxmox provider uploads snippets over SSH with a client of its own that has no host-key setting: it checks the
server against ~/.ssh/known_hosts of the account running Pulumi, refuses a key that changed, and silently adds a host it
has never seen (bpg/terraform-provider-proxmox v0.111.1 proxmox/ssh/client.go; its `ssh` block has no host-key field,
fwprovider/provider.go). Seeded with the stack's pinned keys for exactly the addresses it dials (`proxmox.nodes[].address`,
port 22), it refuses any other server too.

    python -m tools.known_hosts --stack hk-prod >> ~/.ssh/known_hosts        # once, on every machine that runs Pulumi
    python -m tools.known_hosts --stack hk-prod --check ~/.ssh/known_hosts   # exit 1 unless the file pins them all

--check also fails when the file holds another key for one of those addresses: the client accepts any line that
matches the key the server presents (github.com/skeema/knownhosts), so a stale or trusted-on-first-use line defeats the pin.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import sys
from pathlib import Path

from config.model import StackSpec
from tools.synth import add_stack_arguments, read_stack


def lines(spec: StackSpec) -> list[str]:
    """`<address> <type> <base64>` for every Proxmox node with a pinned key, in the stack's order."""
    return [f"{node.address} {node.host_key}" for node in spec.proxmox.nodes if node.host_key is not None]


def unpinned(spec: StackSpec) -> list[str]:
    return [node.name for node in spec.proxmox.nodes if node.host_key is None]


def _hosts_match(pattern: str, address: str) -> bool:
    """One host field entry against an address: plain, or hashed as OpenSSH's HashKnownHosts writes it,
    `|1|<base64 salt>|<base64 HMAC-SHA1(salt, host)>` (openssh-portable hostfile.c, host_hash)."""
    if pattern.startswith("|1|"):
        _, _, salt, digest = pattern.split("|", 3)
        try:
            mac = hmac.new(base64.b64decode(salt), address.encode(), hashlib.sha1).digest()
            return hmac.compare_digest(mac, base64.b64decode(digest))
        except (ValueError, TypeError):
            return False
    return pattern == address


def check(spec: StackSpec, text: str) -> list[str]:
    """What keeps a known_hosts file (its text) from pinning every Proxmox node of the stack; empty when it does."""
    problems = []
    lines = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and not fields[0].startswith(("#", "@")):
            lines.append((fields[0].split(","), f"{fields[1]} {fields[2]}"))
    for node in spec.proxmox.nodes:
        if node.host_key is None:
            continue
        found = {key for hosts, key in lines if any(_hosts_match(h, str(node.address)) for h in hosts)}
        if node.host_key not in found:
            problems.append(f"{node.address} ({node.name}): its pinned key is missing; add `{node.address} {node.host_key}`")
        if found - {node.host_key}:
            problems.append(f"{node.address} ({node.name}): {len(found - {node.host_key})} other key(s) for it, which the "
                            f"provider would accept as well; remove them: ssh-keygen -R {node.address}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.known_hosts", description=__doc__.split("\n\n")[0])
    add_stack_arguments(p)
    p.add_argument("--check", metavar="FILE", type=Path, help="check FILE (e.g. ~/.ssh/known_hosts) instead of printing")
    args = p.parse_args(argv)
    spec = read_stack(p, args)
    if spec is None:
        return 2
    for name in unpinned(spec):
        print(f"warning: Proxmox node {name} has no hostKey (security.pinHostKeys: false): the provider trusts it on "
              "first use", file=sys.stderr)
    if args.check is None:
        print("\n".join(lines(spec)))
        return 0
    text = args.check.expanduser().read_text() if args.check.expanduser().exists() else ""
    missing = check(spec, text)
    for line in missing:
        print(f"{args.check}: {line}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
