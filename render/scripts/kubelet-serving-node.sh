# On a Linux node: bring its kubelet to the cluster's kubelet configuration (the kubelet-config ConfigMap, which
# kubelet-config-sync.sh keeps), restart it, and with serverTLSBootstrap wait until it holds a serving certificate
# from the cluster CA. `kubeadm upgrade node phase kubelet-config` downloads the ConfigMap into
# /var/lib/kubelet/config.yaml (kubeadm "Reconfiguring a kubeadm cluster", "Reflecting the kubelet changes"; the
# phase writes config.yaml: cmd/kubeadm/app/cmd/phases/upgrade/node/kubeletconfig.go). A kubelet restart stops no
# Pod, so the node is not drained. The kubelet keeps an issued certificate as
# /var/lib/kubelet/pki/kubelet-server-current.pem (pkg/kubelet/certificate/kubelet.go, the "kubelet-server" store).
# Idempotent: $APPLIED records the setting the kubelet was last restarted with and, when on, certified under; a node
# whose record matches is left alone. A run that stopped after the download but before the restart, or a setting
# switched off and on again, finds no matching record and restarts.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE_NAME SERVER_TLS_BOOTSTRAP MACHINE ATTEMPTS POLL_SECONDS TIMEOUT

config="$ROOT/var/lib/kubelet/config.yaml"
certificate="$ROOT/var/lib/kubelet/pki/kubelet-server-current.pem"
applied="$ROOT/var/lib/kubelet/hybrid-cluster-server-tls-bootstrap"
[[ -f $config ]] || die "$config is missing: ${NODE_NAME} has not joined the cluster"

setting() {
  if grep -qx 'serverTLSBootstrap: true' "$config"; then echo 1; else echo 0; fi
}

# A certificate that is there and not expired (openssl is in every supported distribution's base image).
certified() {
  [[ -s $certificate ]] && openssl x509 -in "$certificate" -noout -checkend 0 >/dev/null 2>&1
}

wanted=off
((SERVER_TLS_BOOTSTRAP)) && wanted=on
echo "${NODE_NAME} (machine ${MACHINE}): kubelet serving certificates from the cluster CA: ${wanted}"
if [[ "$(cat "$applied" 2>/dev/null || true)" == "$SERVER_TLS_BOOTSTRAP" ]] && (($(setting) == SERVER_TLS_BOOTSTRAP)) \
  && { ((!SERVER_TLS_BOOTSTRAP)) || certified; }; then
  echo "${NODE_NAME} already runs with it"
  exit 0
fi
if (($(setting) != SERVER_TLS_BOOTSTRAP)); then
  kubeadm upgrade node phase kubelet-config
  (($(setting) == SERVER_TLS_BOOTSTRAP)) \
    || die "the cluster's kubelet-config does not have serverTLSBootstrap as wanted after the download: its sync step on the first control-plane node must run first"
fi
rm -f "$applied"
# Also when only the certificate is missing: a kubelet whose request predates the approver may be waiting out its retry
# backoff, and a restart makes it ask again at once.
systemctl restart kubelet
echo "restarted the kubelet"
if ((SERVER_TLS_BOOTSTRAP)); then
  for ((attempt = 1; ; attempt++)); do
    if certified; then
      echo "${NODE_NAME} serves a certificate from the cluster CA"
      break
    fi
    ((attempt < ATTEMPTS)) || die "${NODE_NAME} has no approved serving certificate after ${TIMEOUT}s: is kubelet-csr-approver running, and what does \`kubectl get csr --field-selector spec.signerName=kubernetes.io/kubelet-serving\` say (a denied request names the check that failed)?"
    sleep "$POLL_SECONDS"
  done
fi
echo "$SERVER_TLS_BOOTSTRAP" >"$applied"
