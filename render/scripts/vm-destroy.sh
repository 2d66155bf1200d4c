# On a Proxmox node, as the delete of a lost Linux node's machine (render/maintenance.py render_vm_destroy): its VM
# destroyed if it exists on this Proxmox node, and nothing done if it is gone from the cluster, which the provider's
# own delete refuses (docs/lifecycle.md, "A node that is dead for good"). One on another Proxmox node is refused (the
# step fails and says where), and a VM of that id that is not the node's (another name) is never touched.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs VMID NAME STOP_TIMEOUT ATTEMPTS POLL_SECONDS
command -v qm >/dev/null || die "qm not found: this step runs on a Proxmox node"
## /etc/pve is the cluster file system (pmxcfs): every node's VM configurations, as qm reads them.
shopt -s nullglob
configs=("$ROOT"/etc/pve/nodes/*/qemu-server/"$VMID".conf)
if ((${#configs[@]} == 0)); then
  echo "VM $VMID ($NAME) is already gone: nothing to destroy"
  exit 0
fi
config="${configs[0]}"
holder="${config#"$ROOT"/etc/pve/nodes/}"
holder="${holder%%/*}"
## Proxmox names a node by its host name without the domain (PVE::INotify nodename).
here="$(uname -n)"
here="${here%%.*}"
[[ $holder == "$here" ]] \
  || die "VM $VMID is on Proxmox node $holder, not on $here: migrate it back or destroy it there (qm destroy $VMID --purge 1)"
grep -qx "name: $NAME" "$config" || die "VM $VMID is not $NAME ($(grep -m1 '^name:' "$config" || echo 'no name')): it is left alone"
## qm destroy refuses a running VM. For one HA manages, qm stop only asks the HA manager, so wait until it is stopped.
if [[ "$(qm status "$VMID")" != "status: stopped" ]]; then
  qm stop "$VMID"
  for ((attempt = 1; ; attempt++)); do
    [[ "$(qm status "$VMID")" == "status: stopped" ]] && break
    ((attempt < ATTEMPTS)) || die "VM $VMID did not stop within ${STOP_TIMEOUT}s: stop it (ha-manager, qm stop), then run pulumi up again"
    sleep "$POLL_SECONDS"
  done
fi
qm destroy "$VMID" --purge 1 --destroy-unreferenced-disks 1
echo "VM $VMID ($NAME) destroyed"
