# On the first control-plane node: wait (bounded) until the Node $NODE exists, then until it is Ready, so
# that what depends on a node (its labels, the workloads that need its OS) starts only on a working node.
# `kubectl wait --for=condition=Ready node/NAME --timeout=..` blocks until the condition holds or fails
# after the timeout (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_wait/). Ready needs
# the node's CNI, which Calico installs: on a Windows node after its first image pulls, hence the longer
# READY_TIMEOUT.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE TIMEOUT ATTEMPTS POLL_SECONDS READY_TIMEOUT
#@ include lib/admin-kubeconfig.sh

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
last=""
registered=""
# `kubectl get node NAME --ignore-not-found -o name` prints nothing and exits 0 while the node is absent
# (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_get/): API errors and "not yet" differ.
for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do
  if output="$(kubectl get node "$NODE" --ignore-not-found -o name --request-timeout=10s 2>&1)"; then
    if [[ $output == *"node/$NODE"* ]]; then
      registered=yes
      break
    fi
    last="not registered yet"
  else
    last=$output
  fi
  sleep "$POLL_SECONDS"
done
if [[ -z $registered ]]; then
  echo "last answer: $last" >&2
  die "node $NODE did not register within ${TIMEOUT}s"
fi
echo "node $NODE is registered"
kubectl wait --for=condition=Ready "node/$NODE" --timeout="${READY_TIMEOUT}s" >/dev/null \
  || die "node $NODE registered but did not become Ready within ${READY_TIMEOUT}s (is its CNI running?)"
echo "node $NODE is Ready"
