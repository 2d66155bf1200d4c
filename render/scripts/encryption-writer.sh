# On one control-plane node, one node at a time and only after every control-plane node reads the target key
# (control-plane-files.sh and control-plane-node.sh): its API server writes Secrets with the target key and still
# reads the old one (lib/encryption.sh, `write`), restarted when its configuration changed. The key ring comes on
# stdin from encryption-keys.sh. Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE RESCAN_SECONDS API_READY_TIMEOUT ATTEMPTS POLL_SECONDS
#@ include lib/admin-kubeconfig.sh
#@ include lib/encryption.sh
#@ include lib/control-plane-files.sh
#@ include lib/static-pod-restart.sh

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: $NODE is not a control-plane node"
read_key_ring
write_encryption_config write
if running_files_current; then
  echo "$NODE: its API server already writes Secrets with $TARGET_KEY"
  exit 0
fi
restart_static_pod kube-apiserver
record_running_files
echo "$NODE: its API server now writes Secrets with $TARGET_KEY (and reads $WRITER_KEY)"
