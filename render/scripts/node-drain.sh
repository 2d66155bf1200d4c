# On the first control-plane node: cordon and drain the Node $NODE, if it exists: the first step of
# removing a node (render/linux_bootstrap.py render_drain gives upstream's order). A node already gone, or
# a control plane already gone, is a no-op. For a control-plane node ($ETCD_POD set) the removal is
# refused, before anything is cordoned, unless the other etcd members keep quorum.
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
