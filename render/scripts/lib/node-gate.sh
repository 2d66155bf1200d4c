# exit_unless_node_present WHAT [required]: exit 0 when there is nothing to do for $NODE: no control plane
# here (admin.conf gone; with "required" that is an error instead, for a step that needs the control
# plane), or no such Node. `kubectl get node NAME --ignore-not-found -o name` prints nothing and exits 0
# while the node is absent (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_get/), so API
# errors and "not there" are told apart.
exit_unless_node_present() {
  local what=$1 control_plane=${2:-optional} output
  if [[ ! -f $KUBECONFIG ]]; then
    [[ $control_plane != required ]] || die "$KUBECONFIG is missing: cannot $what $NODE without the control plane"
    echo "warning: $KUBECONFIG is missing, the control plane is gone; nothing to $what" >&2
    exit 0
  fi
  if ! output="$(kubectl get node "$NODE" --ignore-not-found -o name --request-timeout=30s 2>&1)"; then
    echo "$output" >&2
    die "cannot ask the API server whether node $NODE exists"
  fi
  if [[ $output != *"node/$NODE"* ]]; then
    echo "node $NODE is not in the cluster, nothing to $what"
    exit 0
  fi
}

# node_runs_target KUBELET RUNTIME: whether $NODE's kubelet reports version KUBELET and its container runtime
# RUNTIME, as the
# kubelet records them in .status.nodeInfo (kubeletVersion "v1.36.4"; containerRuntimeVersion
# "containerd://2.3.5", the CRI runtime's name and version); RUNNING is set to what it reports, for messages.
node_runs_target() {
  local kubelet=$1 wanted=$2 runtime
  RUNNING="$(kubectl get node "$NODE" --request-timeout=30s \
    -o jsonpath='{.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}' || true)"
  runtime="${RUNNING#* }"
  runtime="${runtime#containerd://}"
  [[ ${RUNNING%% *} == "$kubelet" && ${runtime#v} == "$wanted" ]]
}
