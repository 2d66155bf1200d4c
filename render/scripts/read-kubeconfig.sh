# As root on the first control-plane node (render/linux_bootstrap.py render_read_kubeconfig): the Kubernetes provider's
# credential, printed as a kubeconfig and nothing else (the command's stdout is a secret Output). Not admin.conf, whose
# client certificate every renewal round and every upgrade renews (which would leave the provider's configuration
# unknown in those previews): the token of a ServiceAccount of its own, in a token Secret made here, which neither
# touches. Each run makes a new token and revokes the one before (deleting its Secret): a rotation is a replacement
# of this step (docs/lifecycle.md, "Rotating credentials").
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NAMESPACE ACCOUNT SECRET BINDING ATTEMPTS POLL_SECONDS
ADMIN_CONF="$ROOT/etc/kubernetes/admin.conf"

[[ -s $ADMIN_CONF ]] || die "$ADMIN_CONF is missing or empty: kubeadm init has not completed on this node"
export KUBECONFIG="$ADMIN_CONF"
kubectl -n "$NAMESPACE" delete secret "$SECRET" --ignore-not-found >&2
kubectl apply -f - >&2 <<MANIFEST
apiVersion: v1
kind: ServiceAccount
metadata:
  name: $ACCOUNT
  namespace: $NAMESPACE
automountServiceAccountToken: false
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: $BINDING
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: $ACCOUNT
  namespace: $NAMESPACE
---
apiVersion: v1
kind: Secret
metadata:
  name: $SECRET
  namespace: $NAMESPACE
  annotations:
    kubernetes.io/service-account.name: $ACCOUNT
type: kubernetes.io/service-account-token
MANIFEST
## The token controller fills the Secret's token shortly after it is made.
token=""
for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do
  token="$(kubectl -n "$NAMESPACE" get secret "$SECRET" -o 'jsonpath={.data.token}')"
  [[ -z $token ]] || break
  sleep "$POLL_SECONDS"
done
[[ -n $token ]] || die "the token controller did not fill $NAMESPACE/$SECRET"
server="$(kubectl config view --raw -o 'jsonpath={.clusters[0].cluster.server}')"
authority="$(kubectl config view --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')"
[[ -n $server && -n $authority ]] || die "no server or certificate authority in $ADMIN_CONF"
printf '%s\n' "apiVersion: v1" "kind: Config" "clusters:" "- name: kubernetes" "  cluster:" \
  "    server: $server" "    certificate-authority-data: $authority" "users:" "- name: $ACCOUNT" "  user:" \
  "    token: $(printf '%s' "$token" | base64 -d)" "contexts:" "- name: $ACCOUNT" "  context:" \
  "    cluster: kubernetes" "    user: $ACCOUNT" "current-context: $ACCOUNT"
