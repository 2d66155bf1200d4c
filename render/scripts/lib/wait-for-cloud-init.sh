# `cloud-init status --wait`: 0 done, 1 error, 2 done with recoverable errors (cloud-init >= 23.4):
# https://docs.cloud-init.io/en/latest/reference/cli.html#status. The preparation script
# ($PREPARE_SCRIPT) runs from runcmd and exits non-zero on any failure, which cloud-init reports as
# an error (1), so 2 is a warning here. Uses the inputs CLOUD_INIT_TIMEOUT and PREPARE_SCRIPT.
wait_for_cloud_init() {
  local rc=0
  timeout "$CLOUD_INIT_TIMEOUT" cloud-init status --wait >/dev/null || rc=$?
  case "$rc" in
    0) ;;
    2) echo "warning: cloud-init finished with recoverable errors (see /var/log/cloud-init.log)" >&2 ;;
    124) die "cloud-init did not finish within ${CLOUD_INIT_TIMEOUT}s" ;;
    *) die "cloud-init failed (status $rc): $PREPARE_SCRIPT did not complete, see /var/log/cloud-init-output.log" ;;
  esac
  command -v kubeadm >/dev/null || die "kubeadm is not installed: $PREPARE_SCRIPT did not run"
}
