"""The scripts of the reboot chain (components/cluster/restarts.py): a Linux node whose VM settings changed in a
way that takes effect only at a restart is drained, its VM restarted by Proxmox, and uncordoned once the
node is back, one node at a time.

Why Proxmox restarts it, not the guest: the VMs are declared with reboot_after_update off
(components/machines/nodes.py), so a changed CPU count or memory size is stored by the provider as a *pending*
change; a reboot from inside the guest keeps the running QEMU process and its old configuration, while
`qm reboot` "Reboot[s] the VM by shutting it down, and starting it again. Applies pending changes" (qm(1),
pve-docs; PVE shuts the guest down cleanly, as `qm shutdown`, then starts it).

The node's `status.nodeInfo.bootID` (the kernel's boot id the kubelet reports) tells the uncordon step
that the node really restarted: the drain records it in MAINTENANCE_ANNOTATION, the uncordon waits for a
different one.

Every step decides from the node's state, as the upgrade chain does from the kubelet version, not from the
fact that Pulumi runs it: Pulumi runs a step's update whenever its command text changes, which a new
release of these scripts does for every node at once. The uncordon records the settings a restart applied
in APPLIED_ANNOTATION; the drain drains nothing and decides "no restart" when the node already runs with
the wanted settings (recorded, or for a node the chain never restarted, read from the capacity its kubelet
reports), and the VM restart step reads that decision on its standard input (the drain step's output).
Pure: no Pulumi, no config imports.
"""
from __future__ import annotations

import re

from render.node_steps import POLL_SECONDS, annotation_jsonpath, poll_attempts
from render.script_files import render_script, revision
from vocab.checks import check_node_name, check_timeout, check_vm_id

# The annotation the chain leaves on a Node it cordoned: "<settings> boot=<bootID before the restart>".
# The uncordon lifts only a cordon the chain set, never one an operator set for reasons of their own.
MAINTENANCE_ANNOTATION = "hybrid-cluster.io/maintenance"
# The settings the chain's last restart of a Node applied, "<settings>" (written by the uncordon).
APPLIED_ANNOTATION = "hybrid-cluster.io/restarted-with"
# The VM restart acts on the drain's last output (its standard input). A new release that changed only the
# restart or uncordon script would run that step on an old decision; the drain carries their revision, so
# any change to the chain's scripts runs the drain first and the decision is always fresh.
_LATER_STEPS = ("vm-restart.sh", "node-restart-uncordon.sh")
_MARK_JSONPATH = annotation_jsonpath(MAINTENANCE_ANNOTATION)
_APPLIED_JSONPATH = annotation_jsonpath(APPLIED_ANNOTATION)
# What the drain records: letters, digits and = , . - only (it is a label of the settings, not free text).
_SETTINGS = re.compile(r"^[a-z0-9=,.-]{1,200}$")


def settings_label(cpu: int, memory_mb: int, disk_gb: int) -> str:
    """The settings a restart applies, as the chain's steps carry them: a change re-runs that node's steps."""
    return f"cpu={cpu},memory={memory_mb},disk={disk_gb}"


def _check_settings(settings: str) -> None:
    if not _SETTINGS.match(settings):
        raise ValueError(f"settings label {settings!r} must be 1-200 of a-z 0-9 = , . -")


def render_maintenance_drain(node_name: str, cpu: int, memory_mb: int, disk_gb: int, etcd_pod: str | None = None,
                             timeout_seconds: int = 600, restart_connection: str = "") -> str:
    """On the first control-plane node, before a node's VM restart: unless the node already runs with these
    settings, record its boot id, cordon and drain it (for a control-plane node, only if the etcd members
    without it keep quorum). Its last output line is the restart decision the VM restart step reads. A
    re-run after a failure keeps the boot id recorded first, so a restart that already happened is not
    waited for, or done, twice. ``restart_connection``: a digest of how the restart step reaches its Proxmox
    node, for the same reason as the later steps' revision: a new key or bastion runs the restart step
    again, and it must not act on a decision made in an earlier run."""
    if not re.fullmatch(r"[0-9a-f]{0,64}", restart_connection):
        raise ValueError("restart_connection must be a hex digest")
    for what, value in (("cpu", cpu), ("memory_mb", memory_mb), ("disk_gb", disk_gb)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{what} {value!r} must be a positive integer")
    check_node_name(node_name)
    check_timeout(timeout_seconds)
    if etcd_pod is not None:
        check_node_name(etcd_pod)
    return render_script("node-restart-drain.sh", NODE=node_name, SETTINGS=settings_label(cpu, memory_mb, disk_gb),
                         CPU=cpu, MEMORY_MB=memory_mb, DISK_GB=disk_gb, ETCD_POD=etcd_pod or "",
                         TIMEOUT=timeout_seconds, MARK_ANNOTATION=MAINTENANCE_ANNOTATION,
                         MARK_JSONPATH=_MARK_JSONPATH, APPLIED_JSONPATH=_APPLIED_JSONPATH,
                         LATER_STEPS=revision(*_LATER_STEPS) + (f"+{restart_connection}" if restart_connection else ""))


def render_vm_restart(vm_id: int, settings: str, shutdown_timeout_seconds: int = 600) -> str:
    """On the Proxmox node that runs the VM: restart it through Proxmox, which applies its pending
    configuration, if the drain step's output (on standard input) says so. The guest is shut down cleanly
    (ACPI, as `qm shutdown`) within the timeout; a guest that does not stop in time fails the step and
    stays as it is, drained."""
    check_vm_id(vm_id)
    _check_settings(settings)
    check_timeout(shutdown_timeout_seconds)
    return render_script("vm-restart.sh", VMID=vm_id, SETTINGS=settings, SHUTDOWN_TIMEOUT=shutdown_timeout_seconds)


def render_vm_destroy(vm_id: int, name: str, stop_timeout_seconds: int = 300) -> str:
    """On the Proxmox node of a lost Linux node's VM: destroy the VM if it still exists there, succeed if it is gone
    (the provider's delete fails then), refuse one on another Proxmox node or of that id with another name
    (render/scripts/vm-destroy.sh)."""
    check_vm_id(vm_id)
    check_node_name(name)
    check_timeout(stop_timeout_seconds)
    return render_script("vm-destroy.sh", VMID=vm_id, NAME=name, STOP_TIMEOUT=stop_timeout_seconds,
                         ATTEMPTS=poll_attempts(stop_timeout_seconds), POLL_SECONDS=POLL_SECONDS)


def render_maintenance_uncordon(node_name: str, settings: str, timeout_seconds: int = 900) -> str:
    """On the first control-plane node, after the VM restart: wait until the Node reports a boot id other
    than the one the drain recorded and is Ready, then lift the chain's cordon (and only that one) and
    record the settings as applied. A node that does not come back stops the chain here, cordoned: no
    further node is drained."""
    check_node_name(node_name)
    _check_settings(settings)
    check_timeout(timeout_seconds)
    return render_script("node-restart-uncordon.sh", NODE=node_name, SETTINGS=settings, TIMEOUT=timeout_seconds,
                         ATTEMPTS=poll_attempts(timeout_seconds), POLL_SECONDS=POLL_SECONDS,
                         MARK_ANNOTATION=MAINTENANCE_ANNOTATION, MARK_JSONPATH=_MARK_JSONPATH,
                         APPLIED_ANNOTATION=APPLIED_ANNOTATION)
