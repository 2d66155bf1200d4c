# On the first control-plane node: print a fresh `kubeadm join` command on one line, for a worker
# or (CONTROL_PLANE=true) a control-plane node, which then gets three more lines: the Secrets encryption key
# ring and the files its API server reads (linux-join.sh read_control_plane_files). Every step that can fail runs before the single printf;
# kubeadm's other output goes to a root-only log. The certificate key never reaches a command line (where
# /proc/<pid>/cmdline and audit logs would show it).
## Worker: `kubeadm token create --ttl TTL --print-join-command`. Control plane: a new key from `kubeadm
## certs certificate-key`, the control-plane certificates re-uploaded under it by `kubeadm init phase
## upload-certs`, then the worker line with `--control-plane --certificate-key KEY` appended by bash.
## Flags: https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_token_create/,
## .../kubeadm_init_phase_upload-certs/ and .../kubeadm_certs_certificate-key/.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs CONTROL_PLANE TTL DESCRIPTION KUBEADM_API
ADMIN_CONF="$ROOT/etc/kubernetes/admin.conf"
LOG="$ROOT/var/log/kubeadm-join-credentials.log"
#@ include lib/log-helpers.sh
#@ include lib/encryption.sh
HARDENING_DIR="$ROOT/etc/kubernetes/hardening"

# fail STEP: stop with the redacted end of the log; nothing has been printed on stdout yet.
fail() {
  echo "error: $1 failed" >&2
  show_log_tail "$LOG"
  exit 1
}

# trim_join_line: kubeadm's template leaves a trailing space; the join script splits on blanks anyway.
trim_join_line() {
  while [[ $join_line == *[[:space:]] ]]; do
    join_line=${join_line%?}
  done
}

[[ -f $ADMIN_CONF ]] || die "$ADMIN_CONF is missing: kubeadm init has not completed on this node"
fresh_log "$LOG"

if [[ $CONTROL_PLANE == true ]]; then
  certificate_key="$(kubeadm certs certificate-key 2>>"$LOG")" || fail "kubeadm certs certificate-key"
  [[ $certificate_key =~ ^[0-9a-f]{64}$ ]] || die "kubeadm certs certificate-key did not print a 64-digit hex key"
  mkdir -p "$ROOT/run"
  upload_dir="$(mktemp -d "$ROOT/run/hybrid-cluster-upload-certs.XXXXXX")"
  trap 'rm -rf "$upload_dir"' EXIT
  upload_config="$upload_dir/upload-certs.yaml"
  # printf is a bash builtin: the key goes to the 0600 file (umask 077) and to no process's arguments.
  ## upload-certs reads the key from the InitConfiguration's certificateKey (kubeadm v1beta3/v1beta4);
  ## --config may be combined with --upload-certs, --kubeconfig and --skip-* (isAllowedFlag in kubernetes
  ## cmd/kubeadm/app/apis/kubeadm/validation/validation.go).
  printf 'apiVersion: %s\nkind: InitConfiguration\ncertificateKey: "%s"\n' "$KUBEADM_API" "$certificate_key" >"$upload_config"
  kubeadm init phase upload-certs --kubeconfig "$ADMIN_CONF" --upload-certs --config "$upload_config" \
    --skip-certificate-key-print >>"$LOG" 2>&1 \
    || fail "kubeadm init phase upload-certs"
fi
## token create prints the command on one line (kubernetes cmd/kubeadm/app/cmd/token.go strips the
## template's backslash-newline continuations and tabs before Fprintln); the checks below still insist.
join_line="$(kubeadm token create --kubeconfig "$ADMIN_CONF" --ttl "$TTL" --description "$DESCRIPTION" \
  --print-join-command 2>>"$LOG")" || fail "kubeadm token create"
[[ $join_line != *"--control-plane"* ]] || die "kubeadm token create printed a control-plane join command"
if [[ $CONTROL_PLANE == true ]]; then
  trim_join_line
  join_line="$join_line --control-plane --certificate-key $certificate_key"
fi

trim_join_line
[[ $join_line != *$'\n'* ]] || die "kubeadm token create printed more than one line"
[[ $join_line == "kubeadm join "* && $join_line == *" --token "* \
  && $join_line == *" --discovery-token-ca-cert-hash sha256:"* ]] \
  || die "kubeadm token create printed something that is not a join command"
if [[ $CONTROL_PLANE == true ]]; then
  [[ $join_line == *" --control-plane "* && $join_line == *" --certificate-key "* ]] \
    || die "kubeadm token create printed a join command without --control-plane --certificate-key"
fi

if [[ $CONTROL_PLANE == true ]]; then
  target=identity
  [[ ! -s $ENCRYPTION_TARGET ]] || target="$(cat "$ENCRYPTION_TARGET")"
  valid_key_name "$target" || die "$ENCRYPTION_TARGET does not name an encryption key"
  ring="$(key_ring_text "$target")"
  files=-
  if compgen -G "$HARDENING_DIR/*.yaml" >/dev/null; then
    files="$(cd "$HARDENING_DIR" && tar -cz --owner=0 --group=0 --sort=name ./*.yaml | base64 -w 0)" \
      || die "could not pack $HARDENING_DIR"
  fi
fi

printf '%s\n' "$join_line"
if [[ $CONTROL_PLANE == true ]]; then
  printf '%s\nfiles %s\n' "$ring" "$files"
fi
