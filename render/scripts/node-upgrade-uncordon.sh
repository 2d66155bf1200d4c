# On the first control-plane node, after a node's upgrade: wait until the Node is Ready with kubelet
# $TARGET on containerd $RUNTIME, then lift the cordon the chain set (the upgrade annotation), and only that one. A node that
# does not come back stops the chain here: no further node is drained.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE TARGET RUNTIME TIMEOUT ATTEMPTS POLL_SECONDS MARK_ANNOTATION MARK_JSONPATH MACHINE
#@ include lib/admin-kubeconfig.sh
#@ include lib/node-gate.sh

echo "upgrade chain of $NODE (machine $MACHINE)"
exit_unless_node_present uncordon required
current=0
for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do
  if node_runs_target "$TARGET" "$RUNTIME"; then
    current=1
    break
  fi
  sleep "$POLL_SECONDS"
done
((current)) || die "node $NODE runs kubelet and runtime '${RUNNING:-unknown}', not $TARGET on containerd $RUNTIME," \
  "${TIMEOUT}s after its upgrade; it stays cordoned"
kubectl wait --for=condition=Ready "node/$NODE" --timeout="${TIMEOUT}s" >/dev/null \
  || die "node $NODE runs $TARGET but is not Ready; it stays cordoned"
marked="$(kubectl get node "$NODE" -o jsonpath="$MARK_JSONPATH" --request-timeout=30s)"
if [[ -n $marked ]]; then
  kubectl uncordon "$NODE" --request-timeout=60s
  kubectl annotate node "$NODE" "$MARK_ANNOTATION-" --request-timeout=60s >/dev/null
  echo "node $NODE runs kubelet $TARGET and is schedulable again"
else
  echo "node $NODE runs kubelet $TARGET; the chain did not cordon it, so its scheduling is left as it is"
fi
