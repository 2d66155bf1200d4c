# On the first control-plane node: cordon and drain the Node $NODE, if it exists: the first step of
# removing a node. A node already gone, or a control plane already gone, is a no-op. For a control-plane
# node ($ETCD_POD set) the removal is refused, before anything is cordoned, unless the other etcd members
# keep quorum. A drain that times out or is refused fails the delete and leaves the node cordoned.
## Upstream's "Remove the node" order is drain, `kubeadm reset`, then `kubectl delete node`
## (https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/create-cluster-kubeadm/#remove-the-node);
## this program runs them as linux-reset.sh on the node and node-deregister.sh here. reset needs the Node
## and the kubeadm-config to remove the node's stacked etcd member (its remove-etcd-member phase,
## https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_reset/kubeadm_reset_phase_remove-etcd-member/),
## hence the drain first and the Node object last.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE TIMEOUT ETCD_POD
#@ include lib/admin-kubeconfig.sh
#@ include lib/node-gate.sh
#@ include lib/etcd.sh
#@ include lib/drain.sh

exit_unless_node_present drain
check_quorum_if_control_plane "$NODE"
cordon_and_drain "$TIMEOUT" "" \
  "it stays cordoned. Eviction is not bypassed: resolve the blocking pod or PodDisruptionBudget and run the delete again"
echo "node $NODE drained"
