# On the first control-plane node, before a node's upgrade: unless the Node's kubelet already runs
# $TARGET on containerd $RUNTIME (and no earlier run of the chain left it cordoned), mark it with the
# upgrade annotation, cordon and drain it. For a control-plane node ($ETCD_POD set) the etcd quorum without it is checked first: its
# etcd member restarts when kubeadm upgrades the static Pods.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE TARGET RUNTIME TIMEOUT ETCD_POD MARK_ANNOTATION MARK_JSONPATH MACHINE
#@ include lib/admin-kubeconfig.sh
#@ include lib/node-gate.sh
#@ include lib/etcd.sh
#@ include lib/drain.sh

echo "upgrade chain of $NODE (machine $MACHINE)"
exit_unless_node_present upgrade required
current=0
node_runs_target "$TARGET" "$RUNTIME" && current=1
marked="$(kubectl get node "$NODE" -o jsonpath="$MARK_JSONPATH" --request-timeout=30s)"
if ((current)) && [[ -z $marked ]]; then
  echo "node $NODE already runs kubelet $TARGET on containerd $RUNTIME, nothing to drain"
  exit 0
fi
check_quorum_if_control_plane "$NODE" outage
kubectl annotate node "$NODE" --overwrite "$MARK_ANNOTATION=$TARGET" --request-timeout=60s >/dev/null
cordon_and_drain "$TIMEOUT" " for its upgrade to $TARGET" \
  "it stays cordoned and nothing was upgraded. Resolve the blocking pod or PodDisruptionBudget and run the update again"
echo "node $NODE is drained for its upgrade to $TARGET"
