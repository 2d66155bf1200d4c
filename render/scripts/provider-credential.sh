# On the first control-plane node: the Kubernetes provider's own credential. A client certificate for the user
# $USER_NAME from the cluster CA, valid $VALIDITY_DAYS days, bound to cluster-admin by the ClusterRoleBinding $BINDING
# (labelled hybrid-cluster.io/provider-credential), proved to work, then printed as a kubeconfig: the only output on
# stdout (a secret Output), after two comment lines: until when it is valid, and its user. Nothing is written outside a
# temporary directory removed on exit. Unlike admin.conf, which kubeadm renews in every renewal round and upgrade,
# this changes only when the stack names a new credential (cluster.providerCredential), so the provider's
# configuration stays known in those previews.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs USER_NAME BINDING VALIDITY_DAYS ATTEMPTS POLL_SECONDS
#@ include lib/admin-kubeconfig.sh
#@ include lib/client-identity.sh
PKI_DIR="$ROOT/etc/kubernetes/pki"

[[ -s $KUBECONFIG ]] || die "$KUBECONFIG is missing or empty: kubeadm init has not completed on this node"
work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT
server="$(kubectl config view --raw -o 'jsonpath={.clusters[0].cluster.server}')"
[[ $server == https://* ]] || die "no API server address in $KUBECONFIG"
issue_client_kubeconfig "$work" "$USER_NAME" "$VALIDITY_DAYS" "$server" pulumi
## `kubectl create clusterrolebinding --dry-run=client -o yaml` writes the object; `kubectl label --local` labels it
## without the API server; apply creates or keeps it (https://kubernetes.io/docs/reference/kubectl/generated/).
## velero.io/exclude-from-backup: a restore of the cluster's objects must not bring back a binding revoked since.
binding="$(kubectl create clusterrolebinding "$BINDING" --clusterrole=cluster-admin --user="$USER_NAME" \
  --dry-run=client -o yaml | kubectl label --local -f - hybrid-cluster.io/provider-credential=true \
  velero.io/exclude-from-backup=true -o yaml)"
for attempt in 1 2 3; do
  printf '%s\n' "$binding" | kubectl apply --request-timeout=30s -f - >&2 && break
  ((attempt < 3)) || die "cannot apply the binding $BINDING of the new credential; the provider keeps the one it had"
  sleep "$POLL_SECONDS"
done
## The API server's authorizer learns the binding from its informer: asked again until it answers yes.
allowed=""
for ((attempt = 0; attempt < ATTEMPTS; attempt++)); do
  allowed="$(kubectl --kubeconfig "$work/kubeconfig" auth can-i '*' '*' --all-namespaces --request-timeout=30s \
    2>/dev/null || true)"
  [[ $allowed == yes ]] && break
  sleep "$POLL_SECONDS"
done
[[ $allowed == yes ]] || die "the new credential $USER_NAME is refused by the API server or not allowed to act as" \
  "cluster-admin ($((ATTEMPTS * POLL_SECONDS))s after its binding $BINDING): nothing uses it; the provider keeps the" \
  "one it had"
echo "issued the Kubernetes provider's credential $USER_NAME, bound by $BINDING" >&2
echo "# valid until $(openssl x509 -in "$work/client.crt" -noout -enddate | cut -d= -f2)"
echo "# user $USER_NAME"
cat -- "$work/kubeconfig"
