# On the first control-plane node, before a node's VM restart (render/maintenance.py): record the node's
# boot id, cordon and drain it (for a control-plane node, only if the etcd members without it keep
# quorum). A re-run after a failure keeps the boot id recorded first, so a restart that already happened
# is not waited for twice.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE SETTINGS ETCD_POD TIMEOUT MARK_ANNOTATION MARK_JSONPATH
#@ include lib/admin-kubeconfig.sh
#@ include lib/etcd.sh
#@ include lib/drain.sh

[[ -s $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
marked="$(kubectl get node "$NODE" -o jsonpath="$MARK_JSONPATH" --request-timeout=30s)"
if [[ $marked != "$SETTINGS boot="* ]]; then
  boot_id="$(kubectl get node "$NODE" -o jsonpath='{.status.nodeInfo.bootID}' --request-timeout=30s)"
  [[ -n $boot_id ]] || die "node $NODE reports no boot id"
fi
check_quorum_if_control_plane "$NODE"
if [[ $marked != "$SETTINGS boot="* ]]; then
  kubectl annotate node "$NODE" --overwrite "$MARK_ANNOTATION=$SETTINGS boot=$boot_id" --request-timeout=60s >/dev/null
fi
cordon_and_drain "$TIMEOUT" " for its VM restart" \
  "it stays cordoned and its VM was not restarted. Resolve the blocking pod or PodDisruptionBudget and run the update again"
echo "node $NODE is drained for the restart that applies $SETTINGS"
