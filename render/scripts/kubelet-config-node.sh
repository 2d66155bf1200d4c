# On a Linux node: bring its kubelet to the cluster's kubelet configuration (the kubelet-config ConfigMap, which
# kubelet-config-sync.sh keeps), restart it, check that it stays up, and with serverTLSBootstrap wait until it holds a
# serving certificate from the cluster CA. `kubeadm upgrade node phase kubelet-config` downloads the ConfigMap into
# /var/lib/kubelet/config.yaml (kubeadm "Reconfiguring a kubeadm cluster", "Reflecting the kubelet changes"; the
# phase writes config.yaml: cmd/kubeadm/app/cmd/phases/upgrade/node/kubeletconfig.go). A kubelet restart stops no
# Pod, so the node is not drained. The kubelet keeps an issued certificate as
# /var/lib/kubelet/pki/kubelet-server-current.pem (pkg/kubelet/certificate/kubelet.go, the "kubelet-server" store).
# With protectKernelDefaults the kubelet exits at start unless the kernel settings are its defaults (pkg/kubelet/cm/
# container_manager_linux.go setupKernelTunables): they are checked before the restart (the node's preparation
# writes them, render/cloud_init.py), so a wrong one stops here instead of in a kubelet that keeps restarting.
# Idempotent: $applied records the settings (by digest) the kubelet was last restarted with and, when on, certified
# under; a node whose record matches is left alone. A run that stopped after the download but before the restart, or
# a setting switched off and on again, finds no matching record and restarts.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE_NAME MACHINE SETTINGS_DIGEST WANTED_LINES[] ABSENT_KEYS[] KERNEL_SETTINGS[] SERVER_TLS_BOOTSTRAP ATTEMPTS POLL_SECONDS TIMEOUT SETTLE_SECONDS

config="$ROOT/var/lib/kubelet/config.yaml"
certificate="$ROOT/var/lib/kubelet/pki/kubelet-server-current.pem"
applied="$ROOT/var/lib/kubelet/hybrid-cluster-kubelet-config"
[[ -f $config ]] || die "$config is missing: ${NODE_NAME} has not joined the cluster"

# matches: the node's file holds every wanted line and none of the managed keys the stack leaves out.
matches() {
  local line key
  for line in "${WANTED_LINES[@]}"; do
    grep -qxF -- "$line" "$config" || return 1
  done
  for key in "${ABSENT_KEYS[@]}"; do
    ! grep -q "^${key}:" "$config" || return 1
  done
}

# A certificate that is there and not expired (openssl: the node preparation installs it, render/cloud_init.py).
certified() {
  [[ -s $certificate ]] && openssl x509 -in "$certificate" -noout -checkend 0 >/dev/null 2>&1
}

check_kernel() {
  local setting key wanted actual
  for setting in "${KERNEL_SETTINGS[@]}"; do
    key=${setting%%=*} wanted=${setting#*=}
    actual="$(sysctl -n "$key")"
    [[ $actual == "$wanted" ]] \
      || die "${NODE_NAME}: kernel setting $key is $actual, the kubelet's protectKernelDefaults needs $wanted (the node's preparation writes it in /etc/sysctl.d/zz-kubernetes.conf): not restarting the kubelet"
  done
}

restarts() {
  systemctl show kubelet --property=NRestarts --value
}

echo "${NODE_NAME} (machine ${MACHINE}): kubelet settings ${SETTINGS_DIGEST}"
if [[ "$(cat "$applied" 2>/dev/null || true)" == "$SETTINGS_DIGEST" ]] && matches \
  && { ((!SERVER_TLS_BOOTSTRAP)) || certified; }; then
  echo "${NODE_NAME} already runs with them"
  exit 0
fi
if ! matches; then
  kubeadm upgrade node phase kubelet-config
  matches || die "the cluster's kubelet-config does not have the stack's settings after the download: its sync step on the first control-plane node must run first"
fi
check_kernel
rm -f "$applied"
# Also when only the certificate is missing: a kubelet whose request predates the approver may be waiting out its retry
# backoff, and a restart makes it ask again at once.
systemctl restart kubelet
before="$(restarts)"
sleep "$SETTLE_SECONDS"
if ! systemctl is-active --quiet kubelet || [[ "$(restarts)" != "$before" ]]; then
  die "the kubelet of ${NODE_NAME} did not stay up after its restart: \`journalctl -u kubelet\` on the node says why"
fi
echo "restarted the kubelet"
if ((SERVER_TLS_BOOTSTRAP)); then
  for ((attempt = 1; ; attempt++)); do
    if certified; then
      echo "${NODE_NAME} serves a certificate from the cluster CA"
      break
    fi
    ((attempt < ATTEMPTS)) || die "${NODE_NAME} has no approved serving certificate after ${TIMEOUT}s: \`journalctl -u hybrid-cluster-kubelet-serving-approver\` on a control-plane node says why its request is pending (\`kubectl get csr --field-selector spec.signerName=kubernetes.io/kubelet-serving\` lists them)"
    sleep "$POLL_SECONDS"
  done
fi
echo "$SETTINGS_DIGEST" >"$applied"
