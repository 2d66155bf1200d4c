# cordon_and_drain TIMEOUT PURPOSE AFTERWARDS [FLAG...]: cordon and drain $NODE the one way this program drains:
# `kubectl drain --ignore-daemonsets --delete-emptydir-data --timeout=Ns`
# (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_drain/), PodDisruptionBudgets
# respected. There is deliberately no fallback to --disable-eviction: it "will bypass checking
# PodDisruptionBudgets", which are what protects replicated storage (Longhorn) and quorum workloads from
# losing a member while another node is down. A drain that fails stops the script, saying AFTERWARDS.
## kubectl cordon: https://kubernetes.io/docs/reference/kubectl/generated/kubectl_cordon/; drain's
## --timeout is "the length of time to wait before giving up, zero means infinite" (kubectl drain docs).
cordon_and_drain() {
  local timeout=$1 purpose=$2 afterwards=$3
  shift 3
  kubectl cordon "$NODE" --request-timeout=60s
  if ! kubectl drain "$NODE" --ignore-daemonsets --delete-emptydir-data --timeout="${timeout}s" "$@"; then
    die "draining $NODE$purpose did not finish within ${timeout}s or was refused (see above); $afterwards"
  fi
}
