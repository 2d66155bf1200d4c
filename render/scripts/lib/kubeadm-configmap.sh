# A document kubeadm keeps in a kube-system ConfigMap (kubeadm-config's ClusterConfiguration, kubelet-config's
# kubelet), edited as kubeadm's "Reconfiguring a kubeadm cluster" edits it: read, changed by the including script,
# written back with a server-side apply of that one key under this program's field manager, then read back by kubeadm
# itself in a dry run. A document kubeadm cannot read is put back as it was, so no later join or upgrade meets it.

# read_kubeadm_document CONFIGMAP KEY FILE: the document, or the step stops.
read_kubeadm_document() {
  kubectl -n kube-system get configmap "$1" -o go-template="{{index .data \"$2\"}}" >"$3" \
    || die "could not read the $1 ConfigMap"
  [[ -s $3 ]] || die "the $1 ConfigMap has no $2 document"
}

# apply_kubeadm_document CONFIGMAP KEY FILE FIELD_MANAGER
apply_kubeadm_document() {
  kubectl -n kube-system create configmap "$1" --from-file="$2=$3" --dry-run=client -o yaml \
    | kubectl apply --server-side --force-conflicts --field-manager="$4" -f - >/dev/null
}

# write_kubeadm_document CONFIGMAP KEY WANTED CURRENT FIELD_MANAGER CHECK...: WANTED written, then CHECK (a kubeadm
# dry run that reads the ConfigMap) run; when kubeadm refuses it, CURRENT is written back and the step stops with
# kubeadm's last words.
write_kubeadm_document() {
  local configmap=$1 key=$2 wanted=$3 current=$4 manager=$5 output
  shift 5
  output="$(mktemp)"
  apply_kubeadm_document "$configmap" "$key" "$wanted" "$manager" || die "could not write the $configmap ConfigMap"
  if ! "$@" >"$output" 2>&1; then
    tail -n 40 "$output" >&2
    rm -f "$output"
    apply_kubeadm_document "$configmap" "$key" "$current" "$manager" \
      || die "kubeadm cannot read the edited $configmap, and putting the old one back failed: restore it from the output above by hand"
    die "kubeadm cannot read the edited $configmap (output above); the old document is back"
  fi
  rm -f "$output"
}

# check_kubeadm_document CONFIGMAP CHECK...: a document already as wanted is still read by kubeadm (CHECK) before the
# step reports success: an earlier run may have written it and stopped before its own check.
check_kubeadm_document() {
  local configmap=$1 output
  shift
  output="$(mktemp)"
  if ! "$@" >"$output" 2>&1; then
    tail -n 40 "$output" >&2
    rm -f "$output"
    die "kubeadm cannot read the $configmap ConfigMap (output above): restore its previous document by hand"
  fi
  rm -f "$output"
}
