# On the first control-plane node: take back every Kubernetes provider credential (provider-credential.sh) but the one
# bound by $KEEP, by deleting the other ClusterRoleBindings labelled hybrid-cluster.io/provider-credential: their
# certificates still authenticate until they expire, but may do nothing. Runs once the provider has moved to $KEEP's
# credential (it depends on the provider), and again whenever its connection changes: deleting what is already gone
# is nothing.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs KEEP
#@ include lib/admin-kubeconfig.sh

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: cannot revoke the provider's old credentials"
bindings="$(kubectl get clusterrolebindings -l hybrid-cluster.io/provider-credential=true -o name --request-timeout=30s)" \
  || die "cannot list the provider credentials' bindings"
for binding in $bindings; do
  [[ $binding != "clusterrolebinding.rbac.authorization.k8s.io/$KEEP" ]] || continue
  kubectl delete "$binding" --ignore-not-found --request-timeout=30s
  echo "revoked the Kubernetes provider credential bound by ${binding#*/}"
done
echo "the Kubernetes provider's credential is $KEEP's alone"
