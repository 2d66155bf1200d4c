"""Migrates a stack's state written by an earlier release of this program (state format 1) to the shape
this release writes (components/version_pin.py STATE_FORMAT), so that the first run of this release
replaces nothing on the nodes:

    pulumi stack export --file before.json
    python -m tools.migrate_state before.json after.json
    pulumi stack import --file after.json
    pulumi preview            # the nodes' steps show no replacement

What changes, and why each is safe, is what the program now declares for the same machines:
- every per-node step of a Linux node was keyed on the VM's id (its VMID, the same for every instance) and
  is now keyed on the MAC of the VM's first NIC: their `triggers` get that MAC (read from the VM's own
  state), instead of replacing (and so resetting and deregistering) every node's membership at once;
- `kubeadm init` is no longer keyed on the first node's VM and has no delete (a replacement would reset the
  node holding the cluster): its `triggers` and `delete` go;
- the Kubernetes provider gets its `clusterIdentifier` (the cluster's name), so it is not replaced in the first
  preview. The step that read admin.conf for it is replaced in that run by the provider's own credential
  (cluster.providerCredential), issued on the first control-plane node; the provider is updated to it (its objects
  show as updates in that preview: DiffUnavailable), and the old step's delete runs nothing;
- the version pin records the state format, which its check requires from now on.

Only plain inputs and outputs are touched; secrets (ciphertext in an export) are carried as they are.
Windows nodes need nothing: their steps were already keyed on the converge command's id.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

from components.version_pin import STATE_FORMAT, STATE_FORMAT_KEY

VM = "proxmoxve:index/vmLegacy:VmLegacy"
COMMAND = "command:remote:Command"
PIN = "pulumi-python:dynamic/hybrid:KubernetesVersionPin"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def _name(resource: dict) -> str:
    return resource["urn"].rsplit("::", 1)[-1]


def _both(resource: dict) -> list[dict]:
    """A resource's inputs and outputs: pulumi-command and dynamic providers echo their inputs as outputs."""
    return [part for part in (resource.get("inputs"), resource.get("outputs")) if isinstance(part, dict)]


def _first_mac(vm: dict) -> str | None:
    devices = (vm.get("outputs") or {}).get("networkDevices") or []
    mac = devices[0].get("macAddress") if devices and isinstance(devices[0], dict) else None
    return mac.lower() if isinstance(mac, str) and mac else None


def migrate(deployment: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(migrated deployment, what was changed). `deployment` is `pulumi stack export` output (or its
    `deployment` member)."""
    document = copy.deepcopy(deployment)
    resources = (document.get("deployment") or document).get("resources") or []
    changes: list[str] = []
    pins = [r for r in resources if r.get("type") == PIN and _name(r).endswith("-kubernetes-version")]
    if not pins:
        raise ValueError("no Kubernetes version pin in this state: not a stack of this program")
    pin = pins[0]
    if (pin.get("inputs") or {}).get(STATE_FORMAT_KEY) == STATE_FORMAT:
        return document, []
    cluster = _name(pin)[: -len("-kubernetes-version")]

    macs: dict[str, str] = {}
    for vm in (r for r in resources if r.get("type") == VM):
        mac = _first_mac(vm)
        if mac is None:
            raise ValueError(f"{_name(vm)}: no MAC address for its first NIC in the state; run `pulumi refresh` first")
        macs[str(vm.get("id"))] = mac

    for resource in resources:
        name = _name(resource)
        if resource.get("type") == COMMAND and name == f"{cluster}-kubeadm-init":
            for part in _both(resource):
                part.pop("triggers", None)
                part.pop("delete", None)
            changes.append(f"{name}: no triggers, no delete (kubeadm init is never re-run or reset by Pulumi)")
        elif resource.get("type") == COMMAND:
            for part in _both(resource):
                triggers = part.get("triggers")
                if isinstance(triggers, list) and len(triggers) == 1 and str(triggers[0]) in macs:
                    part["triggers"] = [macs[str(triggers[0])]]
                    if part is resource.get("inputs"):
                        changes.append(f"{name}: keyed on its VM's first MAC instead of its VMID")
        elif resource.get("type") == K8S_PROVIDER:
            for part in _both(resource):
                part["clusterIdentifier"] = cluster
            changes.append(f"{name}: clusterIdentifier {cluster}")
    for part in _both(pin):
        part[STATE_FORMAT_KEY] = STATE_FORMAT
    changes.append(f"{_name(pin)}: state format {STATE_FORMAT}")
    return document, changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.migrate_state", description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path, help="`pulumi stack export --file` output")
    parser.add_argument("out", type=Path, help="where to write the migrated state, for `pulumi stack import --file`")
    args = parser.parse_args(argv)
    try:
        migrated, changes = migrate(json.loads(args.export.read_text()))
    except ValueError as error:
        print(f"{args.export}: {error}; nothing written", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(migrated, indent=4) + "\n")
    print("\n".join(changes) if changes else "already migrated: nothing changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
