# On the first control-plane node: cordon and drain the Node $NODE, if it exists: the first step of
# removing a node. A node already gone, or a control plane already gone, is a no-op. For a control-plane
# node ($ETCD_POD set) the removal is refused, before anything is cordoned, unless the other etcd members
# keep quorum. With Longhorn, its replicas move to other nodes first. A drain that times out or is refused fails the
# delete and leaves the node cordoned.
## Upstream's "Remove the node" order is drain, `kubeadm reset`, then `kubectl delete node`
## (https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/create-cluster-kubeadm/#remove-the-node);
## this program runs them as linux-reset.sh on the node and node-deregister.sh here. reset needs the Node
## and the kubeadm-config to remove the node's stacked etcd member (its remove-etcd-member phase,
## https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_reset/kubeadm_reset_phase_remove-etcd-member/),
## hence the drain first and the Node object last.
#@ include lib/strict.sh
#@ include lib/test-root.sh
## A node taken out of service (`lost: true`, node-mark-lost.sh) has had its pods deleted by the taint, and
## eviction would only wait on a machine that is gone: it is cordoned and left to the deregistration, which
## deletes the Node (and checks quorum before removing an etcd member). A node that is merely NotReady is
## drained, but without waiting on pods its kubelet can no longer confirm gone: kubectl drain
## `--skip-wait-for-delete-timeout`, "If pod DeletionTimestamp older than N seconds, skip waiting for the pod"
## (kubectl drain reference).
#@ inputs NODE TIMEOUT ETCD_POD SKIP_WAIT_SECONDS OUT_OF_SERVICE_TAINT LONGHORN_NAMESPACE LONGHORN_ATTEMPTS POLL_SECONDS
#@ include lib/admin-kubeconfig.sh
#@ include lib/node-gate.sh
#@ include lib/etcd.sh
#@ include lib/drain.sh
#@ include lib/longhorn-evict.sh

exit_unless_node_present drain
taints="$(kubectl get node "$NODE" -o jsonpath='{.spec.taints[*].key}' --request-timeout=30s)"
if [[ " $taints " == *" ${OUT_OF_SERVICE_TAINT%%=*} "* ]]; then
  kubectl cordon "$NODE" --request-timeout=60s
  echo "node $NODE is out of service (lost): its pods were deleted by the taint; not draining it"
  exit 0
fi
check_quorum_if_control_plane "$NODE"
## Before the drain, while the node still runs its longhorn-manager: the drain would stop it.
evict_longhorn_replicas
ready="$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' --request-timeout=30s)"
## An empty array expands under `set -u` only as ${skip[@]+...} on bash before 4.4 (CentOS 7 ships 4.2).
skip=()
if [[ $ready != True ]]; then
  echo "node $NODE is not Ready: pods its kubelet cannot confirm gone are not waited for after ${SKIP_WAIT_SECONDS}s"
  skip=("--skip-wait-for-delete-timeout=$SKIP_WAIT_SECONDS")
fi
cordon_and_drain "$TIMEOUT" "" \
  "it stays cordoned. Eviction is not bypassed: resolve the blocking pod or PodDisruptionBudget and run the delete again" \
  ${skip[@]+"${skip[@]}"}
echo "node $NODE drained"
