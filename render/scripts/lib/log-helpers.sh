# kubeadm prints bootstrap tokens ("[a-z0-9]{6}.[a-z0-9]{16}", kubeadm token create docs:
# https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_token_create/) and
# certificate keys ("a hex encoded string that is an AES key of size 32 bytes", i.e. 64 hex digits:
# https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_init_phase_upload-certs/).
# pulumi-command puts a failed command's output into its error message, so a log is only ever shown
# through this filter.

# fresh_log PATH: an empty log only root can read; kubeadm's output goes there, never to stdout.
fresh_log() {
  mkdir -p "$(dirname "$1")"
  install -m 0600 /dev/null "$1"
}

# show_log_tail PATH: the end of a log on stderr, with anything shaped like a bootstrap token or a
# 32-byte hex key blanked out.
show_log_tail() {
  echo "--- last 40 lines of $1 (tokens and keys redacted) ---" >&2
  tail -n 40 "$1" \
    | sed -E -e 's/[a-z0-9]{6}\.[a-z0-9]{16}/<redacted-token>/g' -e 's/[0-9A-Fa-f]{64}/<redacted-key>/g' >&2 \
    || true
}
