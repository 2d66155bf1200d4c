"""The scripts of the reboot chain (components/maintenance.py): a Linux node whose VM settings changed in a
way that takes effect only at a restart is drained, its VM restarted by Proxmox, and uncordoned once the
node is back, one node at a time.

Why Proxmox restarts it, not the guest: the VMs are declared with reboot_after_update off
(components/machines.py), so a changed CPU count or memory size is stored by the provider as a *pending*
change; a reboot from inside the guest keeps the running QEMU process and its old configuration, while
`qm reboot` "Reboot[s] the VM by shutting it down, and starting it again. Applies pending changes" (qm(1),
pve-docs; PVE shuts the guest down cleanly, as `qm shutdown`, then starts it).

The node's `status.nodeInfo.bootID` (the kernel's boot id the kubelet reports) tells the uncordon step
that the node really restarted: the drain records it in MAINTENANCE_ANNOTATION, the uncordon waits for a
different one. Pure: no Pulumi, no config imports.
"""
from __future__ import annotations

import re

from render.linux_bootstrap import (
    _FAIL_LOUDLY,
    POLL_SECONDS,
    _attempts,
    _check_timeout,
    _cordon_and_drain,
    _kubectl_on_first_control_plane,
    _quorum_check,
)

# The annotation the chain leaves on a Node it cordoned: "<settings> boot=<bootID before the restart>".
# The uncordon lifts only a cordon the chain set, never one an operator set for reasons of their own.
MAINTENANCE_ANNOTATION = "hybrid-cluster.io/maintenance"
_MARK_JSONPATH = "{.metadata.annotations." + MAINTENANCE_ANNOTATION.replace(".", "\\.") + "}"
_BOOT_ID_JSONPATH = "{.status.nodeInfo.bootID}"
# What the drain records: letters, digits and = , . - only (it is a label of the settings, not free text).
_SETTINGS = re.compile(r"^[a-z0-9=,.-]{1,200}$")


def settings_label(cpu: int, memory_mb: int, disk_gb: int) -> str:
    """The settings a restart applies, as the chain's steps carry them: a change re-runs that node's steps."""
    return f"cpu={cpu},memory={memory_mb},disk={disk_gb}"


def _check_settings(settings: str) -> None:
    if not _SETTINGS.match(settings):
        raise ValueError(f"settings label {settings!r} must be 1-200 of a-z 0-9 = , . -")


def render_maintenance_drain(node_name: str, settings: str, etcd_pod: str | None = None,
                             timeout_seconds: int = 600) -> str:
    """On the first control-plane node, before a node's VM restart: record the node's boot id, cordon and
    drain it (for a control-plane node, only if the etcd members without it keep quorum). A re-run after a
    failure keeps the boot id recorded first, so a restart that already happened is not waited for twice."""
    _check_settings(settings)
    return "\n".join([
        *_kubectl_on_first_control_plane(node_name, timeout_seconds, etcd_pod),
        f'SETTINGS="{settings}"',
        f"""
[[ -s $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
marked="$(kubectl get node "$NODE" -o jsonpath='{_MARK_JSONPATH}' --request-timeout=30s)"
if [[ $marked != "$SETTINGS boot="* ]]; then
  boot_id="$(kubectl get node "$NODE" -o jsonpath='{_BOOT_ID_JSONPATH}' --request-timeout=30s)"
  [[ -n $boot_id ]] || die "node $NODE reports no boot id"
fi""",
        *_quorum_check(etcd_pod),
        f"""if [[ $marked != "$SETTINGS boot="* ]]; then
  kubectl annotate node "$NODE" --overwrite "{MAINTENANCE_ANNOTATION}=$SETTINGS boot=$boot_id" --request-timeout=60s >/dev/null
fi""",
        _cordon_and_drain(timeout_seconds, " for its VM restart",
                          "it stays cordoned and its VM was not restarted. Resolve the blocking pod or "
                          "PodDisruptionBudget and run the update again"),
        'echo "node $NODE is drained for the restart that applies $SETTINGS"',
    ]) + "\n"


def render_vm_restart(vm_id: int, shutdown_timeout_seconds: int = 600) -> str:
    """On the Proxmox node that runs the VM: restart it through Proxmox, which applies its pending
    configuration. The guest is shut down cleanly (ACPI, as `qm shutdown`) within the timeout; a guest that
    does not stop in time fails the step and stays as it is, drained."""
    if not isinstance(vm_id, int) or not 100 <= vm_id <= 999_999_999:
        raise ValueError(f"vm id {vm_id!r} must be 100-999999999 (Proxmox VMIDs)")
    _check_timeout(shutdown_timeout_seconds)
    return "\n".join([
        _FAIL_LOUDLY,
        f"VMID={vm_id}",
        f"""
command -v qm >/dev/null || die "qm not found: this step runs on the Proxmox node that holds VM $VMID"
status="$(qm status "$VMID")" || die "no VM $VMID on $(hostname)"
if [[ $status != "status: running" ]]; then
  die "VM $VMID is not running ($status): start it from Proxmox, then run the update again"
fi
echo "pending configuration of VM $VMID:"
qm pending "$VMID" | grep -E '^(new|del) ' || echo "  (none)"
qm reboot "$VMID" --timeout {shutdown_timeout_seconds}
echo "VM $VMID restarted with its pending configuration applied"
""",
    ])


def render_maintenance_uncordon(node_name: str, timeout_seconds: int = 900) -> str:
    """On the first control-plane node, after the VM restart: wait until the Node reports a boot id other
    than the one the drain recorded and is Ready, then lift the chain's cordon (and only that one). A node
    that does not come back stops the chain here, cordoned: no further node is drained."""
    return "\n".join([
        *_kubectl_on_first_control_plane(node_name, timeout_seconds),
        f"""
marked="$(kubectl get node "$NODE" -o jsonpath='{_MARK_JSONPATH}' --request-timeout=30s || true)"
if [[ -z $marked ]]; then
  echo "node $NODE carries no restart mark: the chain did not cordon it, so its scheduling is left as it is"
  exit 0
fi
before="${{marked##* boot=}}"
for ((attempt = 1; attempt <= {_attempts(timeout_seconds)}; attempt++)); do
  boot_id="$(kubectl get node "$NODE" -o jsonpath='{_BOOT_ID_JSONPATH}' --request-timeout=10s || true)"
  [[ -n $boot_id && $boot_id != "$before" ]] && break
  sleep {POLL_SECONDS}
done
[[ -n $boot_id && $boot_id != "$before" ]] || die "node $NODE has not restarted {timeout_seconds}s after its VM restart (boot id unchanged); it stays cordoned"
kubectl wait --for=condition=Ready "node/$NODE" --timeout={timeout_seconds}s >/dev/null \\
  || die "node $NODE restarted but is not Ready; it stays cordoned"
kubectl uncordon "$NODE" --request-timeout=60s
kubectl annotate node "$NODE" "{MAINTENANCE_ANNOTATION}-" --request-timeout=60s >/dev/null
echo "node $NODE restarted with its new settings and is schedulable again"
""",
    ])
