# On one control-plane node: the files its API server reads (lib/control-plane-files.sh), and its Secrets
# encryption configuration for the first phase of a change of key, in which every node reads the target key and none
# writes with it yet (lib/encryption.sh, `read`). The key ring comes on stdin from encryption-keys.sh. Nothing
# restarts here: the running API server keeps what it read until control-plane-node.sh restarts it, after the
# cluster's ClusterConfiguration names these files. Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE HARDENING_PATHS[] HARDENING_TEXTS[]
#@ include lib/encryption.sh
#@ include lib/control-plane-files.sh

# A manifest an interrupted restart left parked is put back by the restart steps that follow.
[[ -f $ROOT/etc/kubernetes/manifests/kube-apiserver.yaml || -f $ROOT/etc/kubernetes/manifests-parked/kube-apiserver.yaml ]] \
  || die "$NODE runs no API server (no kube-apiserver manifest)"
read_key_ring
before="$(running_files_digest)"
write_control_plane_files
write_encryption_config read
own_etcd_data
if [[ "$(running_files_digest)" != "$before" ]]; then
  echo "$NODE: wrote the API server's files (Secrets written with $WRITER_KEY, $TARGET_KEY readable)"
else
  echo "$NODE: the API server's files are as wanted"
fi
