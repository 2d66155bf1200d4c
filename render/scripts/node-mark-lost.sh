# On the first control-plane node, for a node the stack declares lost (a machine that is gone or cannot be
# reached): refuse while its Node is Ready, else cordon it and take it out of service with the
# non-graceful node shutdown taint, which deletes its pods and detaches their volumes so that they start
# elsewhere. The node's removal then has nothing to drain and dials nothing. A Node already gone is a no-op.
## `kubectl taint nodes <node> node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`: "This taint triggers
## pods on the node to be forcefully deleted if there are no matching tolerations on the pods. Persistent
## volumes attached to the shutdown node will be detached", and "Before applying the out-of-service taint,
## you must verify that a node is already in shutdown or power-off state" (Kubernetes blog, "Kubernetes
## 1.28: Non-Graceful Node Shutdown Moves to GA"; https://kubernetes.io/docs/concepts/cluster-administration/node-shutdown/).
## A Ready Node cannot be in that state, so it is refused; a NotReady one the operator has declared lost.
#@ include lib/strict.sh
#@ include lib/test-root.sh
## A lost control-plane node's etcd member ($ETCD_POD set: the first control-plane node's etcd Pod) is removed
## here too, quorum checked: etcd refuses to add a member while a voting member is unreachable (the
## replacement that usually joins in the removal run), and the member could never leave by itself.
#@ inputs NODE OUT_OF_SERVICE_TAINT ETCD_POD
#@ include lib/admin-kubeconfig.sh
#@ include lib/node-gate.sh
#@ include lib/etcd.sh

exit_unless_node_present "take out of service" required
ready="$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' --request-timeout=30s)"
if [[ $ready == True ]]; then
  die "node $NODE is Ready: 'lost: true' is for a machine that is gone or cannot be reached. Shut the machine \
down (or remove the flag) and run the update again; nothing was changed"
fi
kubectl cordon "$NODE" --request-timeout=60s
kubectl taint node "$NODE" "$OUT_OF_SERVICE_TAINT" --overwrite --request-timeout=60s
echo "node $NODE is out of service: its pods are deleted and their volumes detached"
if [[ -n $ETCD_POD ]]; then
  remove_member "$NODE"
fi
echo "remove $NODE from the stack next"
