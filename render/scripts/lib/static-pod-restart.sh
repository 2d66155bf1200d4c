# restart_static_pod COMPONENT: the kubelet stops the node's static Pod COMPONENT when its manifest leaves
# /etc/kubernetes/manifests and starts it again when it comes back; the manifest is parked outside for the
# kubelet's rescan ($RESCAN_SECONDS: fileCheckFrequency "Default: 20s", KubeletConfiguration, plus margin), then
# the Pod is awaited Ready. A run interrupted while the manifest was parked finds it there and puts it back.
## kubernetes.io "Certificate Management with kubeadm", "Manual certificate renewal": "temporarily remove its
## manifest file from /etc/kubernetes/manifests/ and wait for 20 seconds".
MANIFESTS="$ROOT/etc/kubernetes/manifests"
PARKED="$ROOT/etc/kubernetes/manifests-parked"

# static_pod_ready COMPONENT: the API server asked on this node itself (its /readyz, at the port kubeadm wrote into
# its manifest, the certificate checked for the name "kubernetes" that kubeadm puts in it), since its mirror Pod, read
# through the VIP from another API server, may still say Ready from before the restart: with ControlPlaneKubeletLocalMode
# the kubelet reports to this node's API server only, which was down. The other components by their mirror Pod.
static_pod_ready() {
  local port
  if [[ $1 == kube-apiserver ]]; then
    port="$(sed -n 's/^ *- --secure-port=\([0-9]\{1,5\}\)$/\1/p' "$MANIFESTS/kube-apiserver.yaml" | head -n 1)"
    [[ -n $port ]] || return 1
    [[ "$(kubectl --server "https://127.0.0.1:$port" --tls-server-name kubernetes get --raw=/readyz \
      --request-timeout=10s)" == ok ]]
    return
  fi
  kubectl -n kube-system get pod "$1-$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' \
    --request-timeout=10s | grep -qx True
}

# unpark_static_pods: a manifest an interrupted run left parked goes back, so the kubelet runs its Pod again.
unpark_static_pods() {
  local parked
  for parked in "$PARKED"/*.yaml; do
    [[ -f $parked ]] || continue
    mv "$parked" "$MANIFESTS/${parked##*/}"
    echo "$NODE: put back ${parked##*/}, which an interrupted run had left outside the manifests"
  done
}

restart_static_pod() {
  local component=$1 manifest="$MANIFESTS/$1.yaml" attempt
  mkdir -p "$PARKED"
  [[ -f $manifest || -f $PARKED/$component.yaml ]] || die "no static Pod manifest for $component on $NODE"
  [[ -f $PARKED/$component.yaml ]] || mv "$manifest" "$PARKED/$component.yaml"
  sleep "$RESCAN_SECONDS"
  mv "$PARKED/$component.yaml" "$manifest"
  for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do
    if static_pod_ready "$component" 2>/dev/null; then
      break
    fi
    sleep "$POLL_SECONDS"
  done
  static_pod_ready "$component" || die "$component on $NODE is not Ready ${API_READY_TIMEOUT}s after its restart"
  rmdir "$PARKED" 2>/dev/null || true
}
