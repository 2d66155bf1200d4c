# `kubeadm init` on the first control-plane node; a node with admin.conf is left alone. Steps: wait for
# cloud-init's node preparation, write the kubeadm config (0600), the files the API server reads (its audit,
# admission and authentication configurations, and the Secrets encryption configuration with a key made here) and
# the kube-vip manifest, run kubeadm init with its output in a root-only log, switch kube-vip to admin.conf, wait
# until the API answers.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs INIT_CONFIG_TEXT KUBE_VIP_TEXT KUBE_VIP_AFTER_INIT_TEXT API_READY_TIMEOUT ATTEMPTS POLL_SECONDS CLOUD_INIT_TIMEOUT PREPARE_SCRIPT HARDENING_PATHS[] HARDENING_TEXTS[] ENCRYPTION_KEY
ADMIN_CONF="$ROOT/etc/kubernetes/admin.conf"
INIT_CONFIG="$ROOT/etc/kubernetes/kubeadm/init.yaml"
STAGING_DIR="$ROOT/etc/kubernetes/kubeadm"
KUBE_VIP_MANIFEST="$ROOT/etc/kubernetes/manifests/kube-vip.yaml"
LOG="$ROOT/var/log/kubeadm-init.log"
#@ include lib/log-helpers.sh
#@ include lib/put-file.sh
#@ include lib/wait-for-cloud-init.sh
#@ include lib/refuse-control-plane-state.sh
#@ include lib/encryption.sh
#@ include lib/control-plane-files.sh

# kube-vip needed super-admin.conf while init ran; admin.conf has the rights it needs from now on.
finish_kube_vip() {
  if [[ -n $KUBE_VIP_AFTER_INIT_TEXT ]]; then
    printf '%s\n' "$KUBE_VIP_AFTER_INIT_TEXT" | put_file "$KUBE_VIP_MANIFEST" 0600
  fi
}

## admin.conf's server is the control-plane endpoint, so /readyz through it proves the endpoint
## (kube-vip's address) serves the API (https://kubernetes.io/docs/reference/using-api/health-checks/).
wait_for_api() {
  local attempt
  for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do
    if kubectl --kubeconfig "$ADMIN_CONF" --request-timeout=5s get --raw=/readyz >/dev/null 2>&1; then
      return 0
    fi
    sleep "$POLL_SECONDS"
  done
  die "the API server did not answer /readyz through the control-plane endpoint within ${API_READY_TIMEOUT}s"
}

if [[ -f $ADMIN_CONF ]]; then
  echo "kubeadm init: already initialised ($ADMIN_CONF exists), nothing to do"
  finish_kube_vip
  exit 0
fi

# Without admin.conf but with a control plane's state, this is a broken or hand-edited node, not a new
# one: init would fail its preflight and the reset below would then wipe the PKI and etcd data.
refuse_if_control_plane_state "$ADMIN_CONF"
wait_for_cloud_init
printf '%s\n' "$INIT_CONFIG_TEXT" | put_file "$INIT_CONFIG" 0600
write_control_plane_files
# The first key, made here; its name is recorded as the one every Secret is written with (there are none yet).
make_encryption_key "$ENCRYPTION_KEY"
WRITER_KEY=$ENCRYPTION_KEY TARGET_KEY=$ENCRYPTION_KEY READ_KEYS=()
write_encryption_config write
printf '%s' "$ENCRYPTION_KEY" >"$ENCRYPTION_CURRENT"
printf '%s' "$ENCRYPTION_KEY" >"$ENCRYPTION_TARGET"
# kube-vip's documented order puts its manifest in place before init (https://kube-vip.io/docs/installation/static/).
## init's preflight checks only the control-plane manifests it writes itself (join's wants an empty
## manifests directory: linux-join.sh).
if [[ -n $KUBE_VIP_TEXT ]]; then
  printf '%s\n' "$KUBE_VIP_TEXT" | put_file "$KUBE_VIP_MANIFEST" 0600
fi

fresh_log "$LOG"
## --upload-certs and every --skip-* flag may be combined with --config (isAllowedFlag in kubernetes
## cmd/kubeadm/app/apis/kubeadm/validation/validation.go); the flags:
## https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-init/.
## A failed init is reset: init writes admin.conf early (its kubeconfig phase), so without the reset the
## guard above would report a half-initialised node as done on the next run.
echo "kubeadm init: running (output in $LOG, readable by root only)"
if ! kubeadm init --config "$INIT_CONFIG" --upload-certs --skip-token-print --skip-certificate-key-print \
    >>"$LOG" 2>&1; then
  echo "error: kubeadm init failed" >&2
  show_log_tail "$LOG"
  echo "resetting the node so that the next run starts from a clean state" >&2
  kubeadm reset -f >>"$LOG" 2>&1 || echo "warning: kubeadm reset failed as well" >&2
  exit 1
fi
finish_kube_vip
record_running_files
own_etcd_data
wait_for_api
echo "kubeadm init: done, the API server answers through the control-plane endpoint"
