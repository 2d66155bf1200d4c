# evict_longhorn_replicas: with Longhorn in the stack ($LONGHORN_NAMESPACE set), move every Longhorn replica off $NODE
# before it is drained for good, and wait until none is left there ($LONGHORN_ATTEMPTS pauses of $POLL_SECONDS). Safe
# to run again: the request is the same patch, and the wait resumes. A node without Longhorn, or a cluster without
# it, has nothing to move.
## Facts (longhorn/longhorn-manager master 5ddaa369, the branch of v1.13.0; webhook and CRD byte-identical at
## v1.13.0-dev-20260712 and v1.12.1; notes: /work/notes/longhorn-eviction-facts.md):
## - nodes.longhorn.io v1beta2 is named after the Kubernetes node (datastore CreateDefaultNode); the node webhook
##   accepts evictionRequested only with allowScheduling false ("need to disable scheduling on node %v for node
##   eviction", webhook/resources/node/validator.go), so both go in one merge patch, as the 1.13.0 docs'
##   graceful-node-removal page writes it. The webhook may answer "please retry later" while disks sync: retried.
## - Replicas carry the label longhornnode=<node> (types.LonghornNodeKey, set on every write by labelNode), which is
##   how Longhorn itself lists a node's replicas; none left is the end of the eviction (the disks' scheduledReplica
##   counts read empty on a disk that is not Ready, so they are not trusted).
## - A failed replica (spec.failedAt) keeps the label: eviction does not remove it, its stale timeout does (volume
##   controller, staleReplicaTimeout, default 2880 min), so the diagnostics show failedAt and say what to do.
## - Only the node's own longhorn-manager marks its replicas for eviction, and eviction is cancelled on a node that
##   is down (node_controller.go shouldEvictReplica): a NotReady node holding replicas is refused, not waited on.
## - Detached volumes are attached for the rebuild when another disk can take the replica (volume_eviction_controller,
##   since 1.5; with the candidate check since 1.8). Where none can (space, anti-affinity), the replica just stays:
##   the timeout and the volume's Scheduled condition say so.
## - allowScheduling false also lets longhorn-manager delete its node object once the Kubernetes Node is gone (the
##   delete webhook refuses it while scheduling is allowed or replicas remain).
longhorn_replicas() {
  kubectl -n "$LONGHORN_NAMESPACE" get replicas.longhorn.io -l "longhornnode=$NODE" --request-timeout=30s \
    --no-headers -o custom-columns=REPLICA:.metadata.name,VOLUME:.spec.volumeName,FAILED:.spec.failedAt,STATE:.status.currentState
}

node_ready() {
  kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' --request-timeout=30s
}

evict_longhorn_replicas() {
  [[ -n $LONGHORN_NAMESPACE ]] || return 0
  local found remaining attempt ready failures=0
  found="$(kubectl get crd nodes.longhorn.io --ignore-not-found -o name --request-timeout=30s)" \
    || die "cannot ask the API server whether Longhorn is installed"
  if [[ -z $found ]]; then
    echo "Longhorn is not installed: no replicas to move off $NODE"
    return 0
  fi
  found="$(kubectl -n "$LONGHORN_NAMESPACE" get nodes.longhorn.io "$NODE" --ignore-not-found -o name --request-timeout=30s)" \
    || die "cannot read Longhorn's node $NODE"
  if [[ -z $found ]]; then
    echo "Longhorn has no node $NODE: no replicas to move"
    return 0
  fi
  remaining="$(longhorn_replicas)" || die "cannot list Longhorn's replicas on $NODE"
  ready="$(node_ready)" || die "cannot read whether node $NODE is Ready"
  if [[ -n $remaining && $ready != True ]]; then
    printf '%s\n' "$remaining" >&2
    die "node $NODE is not Ready and holds the Longhorn replicas above: Longhorn moves replicas only off a running" \
      "node. Bring the node back and run pulumi up again, or, if its machine is gone for good, declare it lost:" \
      "true first (its volumes then rebuild from their other replicas; a volume with no other replica is lost)"
  fi
  for attempt in 1 2 3 4 5; do
    if kubectl -n "$LONGHORN_NAMESPACE" patch nodes.longhorn.io "$NODE" --type=merge --request-timeout=30s \
        -p '{"spec":{"allowScheduling":false,"evictionRequested":true}}'; then
      break
    fi
    ((attempt < 5)) || die "Longhorn refused to evict $NODE's replicas (above); nothing was drained"
    sleep "$POLL_SECONDS"
  done
  ## Every minute the node must still be Ready (Longhorn cancels the eviction of a node that goes down); every five,
  ## a line says how many replicas are left; three failed listings in a row stop the wait.
  for ((attempt = 0; attempt < LONGHORN_ATTEMPTS; attempt++)); do
    if ! remaining="$(longhorn_replicas)"; then
      ((++failures < 3)) || die "cannot list Longhorn's replicas on $NODE (three times in a row); nothing was drained." \
        "Run pulumi up again: the eviction stays requested and the wait resumes"
      sleep "$POLL_SECONDS"
      continue
    fi
    failures=0
    if [[ -z $remaining ]]; then
      echo "no Longhorn replica is left on $NODE"
      return 0
    fi
    if ((attempt % (60 / POLL_SECONDS) == 0)); then
      ready="$(node_ready)" || ready="unknown"
      [[ $ready == True ]] || die "node $NODE is no longer Ready (Ready: $ready) while Longhorn moves its replicas:" \
        "Longhorn cancels the eviction of a node that is down. Bring it back and run pulumi up again"
    fi
    if ((attempt % (300 / POLL_SECONDS) == 0)); then
      echo "$(printf '%s\n' "$remaining" | awk 'END {print NR}') Longhorn replicas still on $NODE after $((attempt * POLL_SECONDS))s"
    fi
    sleep "$POLL_SECONDS"
  done
  echo "Longhorn replicas still on $NODE (replica, volume, failed at, state), and each volume's scheduling:" >&2
  printf '%s\n' "$remaining" >&2
  local volume
  for volume in $(printf '%s\n' "$remaining" | awk '!seen[$2]++ {print $2}'); do
    kubectl -n "$LONGHORN_NAMESPACE" get volumes.longhorn.io "$volume" --request-timeout=30s \
      -o jsonpath='{.metadata.name}: {.status.robustness} {.status.conditions[?(@.type=="Scheduled")].message}{"\n"}' >&2 || true
  done
  die "Longhorn did not move every replica off $NODE within $((LONGHORN_ATTEMPTS * POLL_SECONDS))s; nothing was" \
    "drained. Give the volumes room on the other Linux workers (space, one replica per node and zone). A replica" \
    "with a failed-at time is a failed copy Longhorn keeps until its stale timeout: once its volume is healthy" \
    "on other nodes, delete it (kubectl -n $LONGHORN_NAMESPACE delete replicas.longhorn.io NAME). Then run pulumi up" \
    "again: the eviction stays requested and the wait resumes"
}
