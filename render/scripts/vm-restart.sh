# On the Proxmox node that runs the VM (render/maintenance.py): restart it through Proxmox, which applies
# its pending configuration, when the drain step decided so: its output arrives on standard input and ends
# with "restart-needed: yes" or "restart-needed: no". The guest is shut down cleanly (ACPI, as
# `qm shutdown`) within the timeout; a guest that does not stop in time fails the step and stays as it is,
# drained.
#@ include lib/strict.sh
#@ inputs VMID SETTINGS SHUTDOWN_TIMEOUT

decision="$(grep -E '^restart-needed: (yes|no)$' | tail -n 1)" || true
case "$decision" in
  "restart-needed: no")
    echo "VM $VMID: the drain step found the node running with $SETTINGS, no restart"
    exit 0
    ;;
  "restart-needed: yes") ;;
  *) die "no restart decision from the drain step on standard input: VM $VMID is not restarted" ;;
esac
command -v qm >/dev/null || die "qm not found: this step runs on the Proxmox node that holds VM $VMID"
status="$(qm status "$VMID")" || die "no VM $VMID on $(hostname)"
if [[ $status != "status: running" ]]; then
  die "VM $VMID is not running ($status): start it from Proxmox, then run the update again"
fi
echo "pending configuration of VM $VMID:"
qm pending "$VMID" | grep -E '^(new|del) ' || echo "  (none)"
qm reboot "$VMID" --timeout "$SHUTDOWN_TIMEOUT"
echo "VM $VMID restarted to apply $SETTINGS"
