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

# wait_static_pod_ready COMPONENT: polled for up to $API_READY_TIMEOUT seconds, or the step stops.
wait_static_pod_ready() {
  local attempt
  for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do
    if static_pod_ready "$1" 2>/dev/null; then
      return 0
    fi
    sleep "$POLL_SECONDS"
  done
  static_pod_ready "$1" || die "$1 on $NODE is not Ready ${API_READY_TIMEOUT}s after its restart"
}

# unpark_static_pods: a manifest an interrupted run left parked goes back and its Pod is awaited, before anything
# restarts another; a parked copy of a manifest that is in place again (kubeadm wrote one since) is dropped.
unpark_static_pods() {
  local parked name
  for parked in "$PARKED"/*.yaml; do
    [[ -f $parked ]] || continue
    name=${parked##*/}
    if [[ -f $MANIFESTS/$name ]]; then
      rm -f "$parked"
      echo "$NODE: dropped a parked copy of $name, which is in place"
      continue
    fi
    mv "$parked" "$MANIFESTS/$name"
    echo "$NODE: put back $name, which an interrupted run had left outside the manifests"
    wait_static_pod_ready "${name%.yaml}"
  done
}

restart_static_pod() {
  local component=$1 manifest="$MANIFESTS/$1.yaml"
  mkdir -p "$PARKED"
  [[ -f $manifest || -f $PARKED/$component.yaml ]] || die "no static Pod manifest for $component on $NODE"
  # A manifest in place is the one to run, whatever an interrupted run left parked.
  [[ ! -f $manifest ]] || mv "$manifest" "$PARKED/$component.yaml"
  sleep "$RESCAN_SECONDS"
  mv "$PARKED/$component.yaml" "$manifest"
  wait_static_pod_ready "$component"
  rmdir "$PARKED" 2>/dev/null || true
}
