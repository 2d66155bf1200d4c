# On the first control-plane node, after the VM restart (render/maintenance.py): wait until the Node
# reports a boot id other than the one the drain recorded and is Ready, then lift the chain's cordon (and
# only that one) and record $SETTINGS as what the node runs with. A node that does not come back stops the
# chain here, cordoned: no further node is drained.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE SETTINGS TIMEOUT ATTEMPTS POLL_SECONDS MARK_ANNOTATION MARK_JSONPATH APPLIED_ANNOTATION
#@ include lib/admin-kubeconfig.sh

marked="$(kubectl get node "$NODE" -o jsonpath="$MARK_JSONPATH" --request-timeout=30s || true)"
if [[ -z $marked ]]; then
  echo "node $NODE carries no restart mark: the chain did not cordon it, so its scheduling is left as it is"
  exit 0
fi
before="${marked##* boot=}"
for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do
  boot_id="$(kubectl get node "$NODE" -o jsonpath='{.status.nodeInfo.bootID}' --request-timeout=10s || true)"
  [[ -n $boot_id && $boot_id != "$before" ]] && break
  sleep "$POLL_SECONDS"
done
[[ -n $boot_id && $boot_id != "$before" ]] \
  || die "node $NODE has not restarted ${TIMEOUT}s after its VM restart (boot id unchanged); it stays cordoned"
kubectl wait --for=condition=Ready "node/$NODE" --timeout="${TIMEOUT}s" >/dev/null \
  || die "node $NODE restarted but is not Ready; it stays cordoned"
kubectl uncordon "$NODE" --request-timeout=60s
kubectl annotate node "$NODE" --overwrite "$APPLIED_ANNOTATION=$SETTINGS" "$MARK_ANNOTATION-" \
  --request-timeout=60s >/dev/null
echo "node $NODE restarted with $SETTINGS and is schedulable again"
