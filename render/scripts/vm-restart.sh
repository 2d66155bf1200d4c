# On the Proxmox node that runs the VM (render/maintenance.py): restart it through Proxmox, which applies
# its pending configuration. The guest is shut down cleanly (ACPI, as `qm shutdown`) within the timeout;
# a guest that does not stop in time fails the step and stays as it is, drained.
#@ include lib/strict.sh
#@ inputs VMID SHUTDOWN_TIMEOUT

command -v qm >/dev/null || die "qm not found: this step runs on the Proxmox node that holds VM $VMID"
status="$(qm status "$VMID")" || die "no VM $VMID on $(hostname)"
if [[ $status != "status: running" ]]; then
  die "VM $VMID is not running ($status): start it from Proxmox, then run the update again"
fi
echo "pending configuration of VM $VMID:"
qm pending "$VMID" | grep -E '^(new|del) ' || echo "  (none)"
qm reboot "$VMID" --timeout "$SHUTDOWN_TIMEOUT"
echo "VM $VMID restarted with its pending configuration applied"
