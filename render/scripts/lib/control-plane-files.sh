# The files every control-plane node's API server reads besides kubeadm's own (render/security.py): its audit
# policy, Pod Security admission and authentication configurations in $HARDENING_DIR, its audit log's directory, and
# the Secrets encryption configuration (lib/encryption.sh). kubeadm names them in the static Pod manifest it writes
# from the cluster's ClusterConfiguration (apiServer.extraArgs and extraVolumes), so they must be on a node before
# any `kubeadm init`, `join --control-plane` or `upgrade` writes that manifest there.
HARDENING_DIR="$ROOT/etc/kubernetes/hardening"
AUDIT_LOG_DIR="$ROOT/var/log/kubernetes/audit"
# The digest of these files as the running API server read them (written after each start this program causes).
RUNNING_MARKER="$HARDENING_DIR/.running"

# write_control_plane_files: HARDENING_PATHS[i] gets HARDENING_TEXTS[i], root-only; a file already as wanted is left
# alone.
write_control_plane_files() {
  local index path staged
  mkdir -p "$HARDENING_DIR" "$AUDIT_LOG_DIR"
  chmod 0700 "$HARDENING_DIR" "$AUDIT_LOG_DIR"
  for ((index = 0; index < ${#HARDENING_PATHS[@]}; index++)); do
    path="$ROOT${HARDENING_PATHS[index]}"
    [[ $(dirname "$path") == "$HARDENING_DIR" ]] || die "refusing to write ${HARDENING_PATHS[index]} outside $HARDENING_DIR"
    staged="$(mktemp "$HARDENING_DIR/.staged.XXXXXX")"
    printf '%s\n' "${HARDENING_TEXTS[index]}" >"$staged"
    chmod 0600 "$staged"
    if [[ -f $path ]] && cmp -s "$staged" "$path"; then
      rm -f "$staged"
    else
      mv -f "$staged" "$path"
    fi
  done
}

# running_files_digest: the digest of the files the API server reads at start.
running_files_digest() {
  local file
  for file in "$HARDENING_DIR"/*.yaml "$ENCRYPTION_CONFIG"; do
    [[ -f $file ]] || continue
    printf '%s\n' "${file#"$ROOT"}"
    cat "$file"
  done | sha256sum | cut -d ' ' -f 1
}

record_running_files() {
  mkdir -p "$HARDENING_DIR"
  running_files_digest >"$RUNNING_MARKER"
}

running_files_current() {
  [[ -f $RUNNING_MARKER && "$(cat "$RUNNING_MARKER")" == "$(running_files_digest)" ]]
}

# own_etcd_data: kubeadm's etcd data directory (--data-dir=/var/lib/etcd, created 0700 by kubeadm's
# CreateDataDirectory) owned by a dedicated `etcd` system user and group, as the CIS Kubernetes Benchmark's
# remediation asks (`chown etcd:etcd /var/lib/etcd`). kubeadm's etcd static Pod runs as root, which the owner does not
# change; the mode keeps every other user out. A node without the directory (not joined yet) is left alone.
own_etcd_data() {
  local data="$ROOT/var/lib/etcd"
  [[ -d $data ]] || return 0
  getent group etcd >/dev/null || groupadd --system etcd
  getent passwd etcd >/dev/null || useradd --system --no-create-home --home-dir /var/lib/etcd --shell /sbin/nologin -g etcd etcd
  [[ "$(stat -c '%U:%G %a' "$data")" == "etcd:etcd 700" ]] && return 0
  chown etcd:etcd "$data"
  chmod 0700 "$data"
  echo "$data is owned by etcd:etcd, mode 0700"
}
