# On one control-plane node, as root: renewal round $LABEL of its kubeadm certificates, then its
# control-plane static Pods restarted one at a time (manifest moved out, the kubelet stops the Pod, moved
# back after the kubelet's rescan), each awaited before the next. With $ETCD_POD set (several
# control-plane nodes) nothing starts unless the other etcd members keep quorum while this one restarts.
# The round's label is recorded when everything is back, so the same round never runs twice here.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE LABEL ETCD_POD COMPONENTS[] RESCAN_SECONDS API_READY_TIMEOUT ATTEMPTS POLL_SECONDS
#@ include lib/admin-kubeconfig.sh
#@ include lib/etcd.sh
MARKER="$ROOT/etc/kubernetes/pki/.hybrid-cluster-certificate-renewal"
#@ include lib/static-pod-restart.sh

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: $NODE is not a control-plane node"
if [[ -f $MARKER && "$(cat "$MARKER")" == "$LABEL" ]]; then
  echo "certificates of $NODE already renewed in round $LABEL"
  exit 0
fi
check_quorum_if_control_plane "$NODE" outage
kubeadm certs renew all >/dev/null
echo "renewed the kubeadm certificates of $NODE"
for component in "${COMPONENTS[@]}"; do
  # The earlier restarts took minutes: etcd's quorum is checked again right before its member goes down.
  if [[ $component == etcd && ! -f $PARKED/$component.yaml ]]; then
    check_quorum_if_control_plane "$NODE" outage
  fi
  restart_static_pod "$component"
  echo "restarted $component on $NODE with its renewed certificate"
done
printf '%s' "$LABEL" >"$MARKER"
echo "certificates of $NODE renewed in round $LABEL"
