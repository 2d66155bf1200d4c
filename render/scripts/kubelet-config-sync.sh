# On the first control-plane node: make the cluster's kubelet configuration say whether kubelets take their serving
# certificate from the cluster CA (serverTLSBootstrap). That configuration is the "kubelet" key of the kube-system
# ConfigMap kubelet-config, which kubeadm uploads at init and every node downloads at its join and at each
# `kubeadm upgrade node` (kubeadm "Reconfiguring a kubeadm cluster": edit the kubelet-config ConfigMap, then on each
# node `kubeadm upgrade node phase kubelet-config` and a kubelet restart, which components/resource_metrics.py
# runs in waves). kubeadm's "Enabling signed kubelet serving certificates" names the same two edits.
# The edit touches that one top-level key and nothing else kubeadm wrote. It is written with a server-side apply
# of that key alone, then checked by kubeadm itself (`kubeadm upgrade node phase kubelet-config --dry-run`
# downloads and decodes it without changing anything); a document kubeadm cannot read is put back as it was.
# Idempotent: a ConfigMap that already says what is wanted is left alone.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs SERVER_TLS_BOOTSTRAP FIELD_MANAGER
#@ include lib/admin-kubeconfig.sh

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The ConfigMap and its key are kubeadm's (constants KubeletBaseConfigurationConfigMap "kubelet-config",
# KubeletBaseConfigurationConfigMapKey "kubelet").
kubectl -n kube-system get configmap kubelet-config -o go-template='{{index .data "kubelet"}}' >"$work/current" \
  || die "could not read the kubelet-config ConfigMap"
[[ -s $work/current ]] || die "the kubelet-config ConfigMap has no kubelet document"
# kubeadm writes the document through sigs.k8s.io/yaml: one top-level key per line at column 0, booleans as
# true/false, so the key is one line.
if grep -qx 'serverTLSBootstrap: true' "$work/current"; then current=1; else current=0; fi
word() {
  if (($1)); then echo true; else echo false; fi
}
if ((current == SERVER_TLS_BOOTSTRAP)); then
  echo "kubelet-config already has serverTLSBootstrap $(word "$current")"
  exit 0
fi

grep -v '^serverTLSBootstrap:' "$work/current" >"$work/wanted" || true
if ((SERVER_TLS_BOOTSTRAP)); then
  echo 'serverTLSBootstrap: true' >>"$work/wanted"
fi

apply_document() {
  kubectl -n kube-system create configmap kubelet-config --from-file=kubelet="$1" --dry-run=client -o yaml \
    | kubectl apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - >/dev/null
}

apply_document "$work/wanted" || die "could not write the kubelet-config ConfigMap"
if ! kubeadm upgrade node phase kubelet-config --dry-run >"$work/check" 2>&1; then
  cat "$work/check" >&2
  apply_document "$work/current" || die "kubeadm cannot read the edited kubelet-config, and putting the old one back failed: restore it from the output above by hand"
  die "kubeadm cannot read the edited kubelet-config (output above); the old document is back"
fi
echo "kubelet-config now has serverTLSBootstrap $(word "$SERVER_TLS_BOOTSTRAP")"
