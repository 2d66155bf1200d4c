# On one control-plane node, one node at a time: its control-plane static Pods rewritten by kubeadm from the
# cluster's ClusterConfiguration (kubeadm-config-sync.sh), and its API server restarted when only the files it reads
# changed (control-plane-files.sh). `kubeadm upgrade node phase control-plane` compares each new manifest with the
# running one and leaves an equal one alone; it backs up and replaces one that differs, waits for the kubelet to
# restart the component, and rolls back on failure (cmd/kubeadm/app/phases/upgrade/staticpods.go). Certificates are
# not renewed here (that is cluster.certificateRenewal) and etcd is not touched (--certificate-renewal=false,
# --etcd-upgrade=false: kubernetes.io kubeadm_upgrade_node_phase_control-plane reference). The marker records the files the
# running API server has read, so a run interrupted between the files and the restart restarts it next time.
# $COMPONENTS_DIGEST and $FILES_DIGEST name what the stack wants, so this step runs again when either changes.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE COMPONENTS_DIGEST FILES_DIGEST RESCAN_SECONDS API_READY_TIMEOUT ATTEMPTS POLL_SECONDS
#@ include lib/admin-kubeconfig.sh
#@ include lib/encryption.sh
#@ include lib/control-plane-files.sh
#@ include lib/static-pod-restart.sh
LOG="$ROOT/var/log/kubeadm-control-plane.log"
#@ include lib/log-helpers.sh

# The API server's manifest alone decides whether kubeadm restarted it: a change of the controller manager's or the
# scheduler's flags rewrites only theirs, and the API server must still be restarted for files it has not read.
api_server_manifest_digest() {
  sha256sum <"$MANIFESTS/kube-apiserver.yaml" | cut -d ' ' -f 1
}

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: $NODE is not a control-plane node"
[[ -d $HARDENING_DIR && -f $ENCRYPTION_CONFIG ]] \
  || die "the API server's files are missing on $NODE: its control-plane-files step must run first"
echo "$NODE: control-plane settings $COMPONENTS_DIGEST, files $FILES_DIGEST"
unpark_static_pods
[[ -f $MANIFESTS/kube-apiserver.yaml ]] || die "$NODE runs no API server (no kube-apiserver manifest)"
before="$(api_server_manifest_digest)"
fresh_log "$LOG"
if ! kubeadm upgrade node phase control-plane --certificate-renewal=false --etcd-upgrade=false >>"$LOG" 2>&1; then
  show_log_tail "$LOG"
  die "kubeadm could not bring the control plane of $NODE to the cluster's ClusterConfiguration (it rolls a failed component back; log above)"
fi
if [[ "$(api_server_manifest_digest)" != "$before" ]]; then
  echo "$NODE: kubeadm rewrote the API server's manifest; it restarted and read the files"
elif ! running_files_current; then
  restart_static_pod kube-apiserver
  echo "$NODE: restarted kube-apiserver for its changed files"
else
  echo "$NODE: the control plane already runs the stack's settings"
fi
record_running_files
