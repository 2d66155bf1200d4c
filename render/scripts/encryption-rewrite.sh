# On the first control-plane node, once every API server writes with the target key (encryption-writer.sh): every
# Secret rewritten, so that it is stored with that key, as kubernetes.io "Encrypting Confidential Data at Rest"
# says ("kubectl get secrets --all-namespaces -o json | kubectl replace -f -"; "It is safe to run that command more
# than once"). Namespace by namespace, each retried on a conflicting write. The key is then recorded as the one
# every Secret is written with, which the next change of key starts from.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs TARGET ATTEMPTS POLL_SECONDS
#@ include lib/admin-kubeconfig.sh
#@ include lib/encryption.sh

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
valid_key_name "$TARGET" || die "not an encryption key name: $TARGET"
# Done when the key is recorded and no other change of key is pending (one stopped half-way leaves Secrets written
# with its key, which this rewrite moves to the target).
if [[ -s $ENCRYPTION_CURRENT && "$(cat "$ENCRYPTION_CURRENT")" == "$TARGET" ]] \
  && { [[ ! -s $ENCRYPTION_PENDING ]] || ! grep -qvxF -- "$TARGET" "$ENCRYPTION_PENDING"; }; then
  echo "every Secret is already written with $TARGET"
  exit 0
fi
namespaces="$(kubectl get namespaces -o name)" || die "could not list the namespaces"
total=0
while IFS= read -r namespace; do
  namespace=${namespace#namespace/}
  [[ -n $namespace ]] || continue
  # `kubectl replace` refuses an empty list.
  names="$(kubectl -n "$namespace" get secrets -o name)" || die "could not list the Secrets of $namespace"
  [[ -n $names ]] || continue
  for ((attempt = 1; ; attempt++)); do
    if count="$(kubectl -n "$namespace" get secrets -o json | kubectl replace -f - -o name | wc -l)"; then
      total=$((total + count))
      break
    fi
    ((attempt < ATTEMPTS)) || die "could not rewrite the Secrets of $namespace after $ATTEMPTS attempts"
    sleep "$POLL_SECONDS"
  done
done <<<"$namespaces"
before=""
[[ ! -s $ENCRYPTION_CURRENT ]] || before="$(cat "$ENCRYPTION_CURRENT")"
if [[ -n $before && $before != "$TARGET" ]]; then
  printf '%s' "$before" >"$ENCRYPTION_PREVIOUS"
  chmod 0600 "$ENCRYPTION_PREVIOUS"
fi
printf '%s' "$TARGET" >"$ENCRYPTION_CURRENT"
chmod 0600 "$ENCRYPTION_CURRENT"
# Every API server writes with the target (the writer steps came first) and every Secret is stored with it: no key
# pending before this one can be in use.
: >"$ENCRYPTION_PENDING"
chmod 0600 "$ENCRYPTION_PENDING"
echo "rewrote $total Secrets with $TARGET"
