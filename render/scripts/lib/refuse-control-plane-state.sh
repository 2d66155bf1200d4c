# refuse_if_control_plane_state GUARD: the guard file (admin.conf, kubelet.conf) is missing, so this run
# would init or join; if control-plane state is present all the same, stop before kubeadm fails its
# preflight and the failure path's reset wipes the PKI and etcd data of a member that still runs.
refuse_if_control_plane_state() {
  local state
  for state in "$ROOT/etc/kubernetes/pki/ca.crt" "$ROOT/etc/kubernetes/manifests/kube-apiserver.yaml" \
      "$ROOT/var/lib/etcd/member"; do
    if [[ -e $state ]]; then
      die "$1 is missing but $state exists: this node holds control-plane state. Nothing was changed. \
Restore $1 (e.g. kubeadm init phase kubeconfig) or, if the node is really to be rebuilt, run kubeadm reset by hand."
    fi
  done
}
