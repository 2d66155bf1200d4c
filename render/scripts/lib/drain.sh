# cordon_and_drain TIMEOUT PURPOSE AFTERWARDS [FLAG...]: cordon and drain $NODE the one way this program drains:
# `kubectl drain --ignore-daemonsets --delete-emptydir-data --timeout=Ns`
# (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_drain/), PodDisruptionBudgets
# respected. There is deliberately no fallback to --disable-eviction: it "will bypass checking
# PodDisruptionBudgets", which are what protects replicated storage (Longhorn) and quorum workloads from
# losing a member while another node is down. A drain that fails stops the script, saying AFTERWARDS.
## kubectl cordon: https://kubernetes.io/docs/reference/kubectl/generated/kubectl_cordon/; drain's
## --timeout is "the length of time to wait before giving up, zero means infinite" (kubectl drain docs).
## A budget that allows no disruption makes the API server refuse the eviction with "Cannot evict pod as it
## would violate the pod's disruption budget." (HTTP 429, pkg/registry/core/pod/storage/eviction.go), which
## kubectl drain prints for each retry until its timeout: that text names the cause when the drain fails.
cordon_and_drain() {
  local timeout=$1 purpose=$2 afterwards=$3
  shift 3
  kubectl cordon "$NODE" --request-timeout=60s
  # kubectl's output, kept to name the cause of a failure; removed on every exit (a signal exits through it).
  DRAIN_LOG=$(mktemp)
  trap 'rm -f -- "$DRAIN_LOG"' EXIT
  trap 'exit 1' HUP INT TERM
  if ! kubectl drain "$NODE" --ignore-daemonsets --delete-emptydir-data --timeout="${timeout}s" "$@" 2>&1 | tee "$DRAIN_LOG"; then
    # The last eviction kubectl retried is what it was waiting for when it gave up.
    if grep -F "(will retry after" "$DRAIN_LOG" | tail -n 1 | grep -qi "disruption budget"; then
      die "draining $NODE$purpose is blocked by a PodDisruptionBudget (the evictions above): it allows no" \
        "further disruption now, so the run stops here (steps under way finish, nothing new starts: no later" \
        "wave). Let the budget's pods become Ready elsewhere, or correct the budget, then run the same" \
        "pulumi up again; $afterwards"
    fi
    die "draining $NODE$purpose did not finish within ${timeout}s or was refused (see above); $afterwards"
  fi
  rm -f -- "$DRAIN_LOG"
  trap - EXIT HUP INT TERM
}
