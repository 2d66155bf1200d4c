# issue_client_kubeconfig DIR CN DAYS SERVER USER: a client certificate for CN from the cluster CA ($PKI_DIR/ca.crt and
# ca.key), as kubeadm issues admin.conf's, valid DAYS days, and a kubeconfig for SERVER that embeds the CA, the
# certificate and its key under the user name USER: DIR/client.key, DIR/client.crt, DIR/kubeconfig. The key is new
# each time (P-256); the certificate may only authenticate a client (no CA, digitalSignature, clientAuth) and carries
# no organization, so it is in no group: what it may do is what a binding to its user name grants, and deleting that
# binding takes it back (a certificate cannot be revoked).
issue_client_kubeconfig() {
  local dir=$1 cn=$2 days=$3 server=$4 user=$5
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/client.key" 2>/dev/null
  openssl req -new -key "$dir/client.key" -subj "/CN=$cn" -out "$dir/client.csr"
  printf '%s\n' 'basicConstraints = critical, CA:FALSE' 'keyUsage = critical, digitalSignature' \
    'extendedKeyUsage = clientAuth' >"$dir/extensions"
  openssl x509 -req -in "$dir/client.csr" -CA "$PKI_DIR/ca.crt" -CAkey "$PKI_DIR/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days "$days" -extfile "$dir/extensions" \
    -out "$dir/client.crt" 2>/dev/null
  ## kubectl writes the kubeconfig, the CA and the key pair embedded in it.
  kubectl config --kubeconfig "$dir/kubeconfig" set-cluster cluster --server="$server" \
    --certificate-authority="$PKI_DIR/ca.crt" --embed-certs=true >/dev/null
  kubectl config --kubeconfig "$dir/kubeconfig" set-credentials "$user" --client-certificate="$dir/client.crt" \
    --client-key="$dir/client.key" --embed-certs=true >/dev/null
  kubectl config --kubeconfig "$dir/kubeconfig" set-context "$user" --cluster=cluster --user="$user" >/dev/null
  kubectl config --kubeconfig "$dir/kubeconfig" use-context "$user" >/dev/null
}
