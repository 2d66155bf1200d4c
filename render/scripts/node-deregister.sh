# On the first control-plane node: the last step of removing a node, after `kubeadm reset` ran on it. For
# a control-plane node ($ETCD_POD set) its etcd member is removed by name if reset could not remove it (a
# node that was already dead, or a reset that failed half-way), never below quorum; then the Node object
# is deleted (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_delete/). A second run finds
# neither and does nothing.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE ETCD_POD
#@ include lib/admin-kubeconfig.sh
#@ include lib/etcd.sh

if [[ ! -f $KUBECONFIG ]]; then
  echo "warning: $KUBECONFIG is missing, the control plane is gone; nothing to deregister" >&2
  exit 0
fi
# (kubeadm reset removes the member itself; this is for a reset that could not.)
if [[ -n $ETCD_POD ]]; then
  remove_member "$NODE"
fi
kubectl delete node "$NODE" --ignore-not-found --request-timeout=60s
echo "node $NODE deregistered"
