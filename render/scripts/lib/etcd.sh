# etcdctl runs inside the etcd static Pod $ETCD_POD of the first control-plane node (kubeadm names it
# etcd-<node name> and mounts /etc/kubernetes/pki/etcd into it; etcd's image ships etcdctl), with the
# etcd CA and server certificate kubeadm generates, as upstream's etcd operations show
# (https://kubernetes.io/docs/tasks/administer-cluster/configure-upgrade-etcd/). kubeadm names each
# stacked member after its node (kubernetes cmd/kubeadm/app/phases/etcd/local.go: "--name" = node name).
# `member list` prints "ID, STATUS, NAME, PEER ADDRS, CLIENT ADDRS, IS LEARNER", fields separated by
# ", " and several addresses of one field by "," (etcd etcdctl/ctlv3/command/printer_simple.go); an
# added but unstarted member has an empty name.
# Quorum: a cluster of n voting members needs n/2+1 of them (https://etcd.io/docs/v3.5/faq/ "What is
# failure tolerance?"). Removing a member leaves n-1, so the other members that answer a health check
# must number at least (n-1)/2+1, or the removal would leave a cluster that cannot commit. Taking a member
# down for a while (a restart) leaves the cluster at n, so the others must number n/2+1: one more for an
# even n.
etcd_ctl() {
  local endpoint=$1
  shift
  kubectl -n kube-system exec "$ETCD_POD" --request-timeout=60s -- etcdctl \
    --endpoints="$endpoint" --cacert=/etc/kubernetes/pki/etcd/ca.crt \
    --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key "$@"
}

etcd_members() {
  etcd_ctl https://127.0.0.1:2379 member list || die "cannot list the etcd members through $ETCD_POD"
}

# etcd_census TARGET: sets VOTERS (voting members, TARGET included if it is one), OTHERS (voting members
# other than TARGET) and HEALTHY (those of them that answer a health check).
etcd_census() {
  local target=$1 members name clients learner endpoint
  members="$(etcd_members)"
  VOTERS=0 OTHERS=0 HEALTHY=0
  while IFS= read -r line; do
    [[ -n $line ]] || continue
    IFS=$'\x1f' read -r _ _ name _ clients learner <<<"${line//, /$'\x1f'}"
    # A learner does not vote (https://etcd.io/docs/v3.5/learning/design-learner/).
    [[ $learner == true ]] && continue
    VOTERS=$((VOTERS + 1))
    [[ $name == "$target" ]] && continue
    OTHERS=$((OTHERS + 1))
    endpoint=${clients%%,*}
    if [[ -n $endpoint ]] && etcd_ctl "$endpoint" endpoint health >/dev/null 2>&1; then
      HEALTHY=$((HEALTHY + 1))
    fi
  done <<<"$members"
}

# check_quorum_without NAME: fail unless the cluster keeps a healthy quorum once member NAME is removed:
# the OTHERS members that remain need OTHERS/2+1 of them healthy.
check_quorum_without() {
  local target=$1 needed
  etcd_census "$target"
  ((OTHERS >= 1)) || die "refusing: $target is the last etcd member; removing it destroys the cluster"
  needed=$((OTHERS / 2 + 1))
  if ((HEALTHY < needed)); then
    die "refusing to remove $target: of the $OTHERS etcd members that would remain only $HEALTHY answer; \
quorum needs $needed. Repair the unhealthy members first"
  fi
  echo "etcd quorum holds without $target: $HEALTHY of $OTHERS remaining members healthy (quorum $needed)"
}

# check_quorum_during_outage NAME: fail unless the cluster keeps quorum while member NAME is down for a
# while (a restart, an upgrade): the cluster still has all VOTERS members, so it needs VOTERS/2+1 of them
# up, NAME counted down. The only member of a one-member cluster is allowed: its restart is downtime of
# the API, not a loss of quorum (and nothing could be checked with it down).
check_quorum_during_outage() {
  local target=$1 needed
  etcd_census "$target"
  if ((VOTERS <= 1 && OTHERS == 0)); then
    echo "$target is the only etcd member: the API is down while it restarts"
    return 0
  fi
  needed=$((VOTERS / 2 + 1))
  if ((HEALTHY < needed)); then
    die "refusing to take $target down: the $VOTERS etcd members need $needed up, and only $HEALTHY others \
answer. Repair the unhealthy members first"
  fi
  echo "etcd quorum holds while $target is down: $HEALTHY of $VOTERS members healthy besides it (quorum $needed)"
}

# check_quorum_if_control_plane NAME [removal|outage]: the quorum check for a control-plane node ($ETCD_POD
# set); a worker ($ETCD_POD empty) holds no etcd member, so there is nothing to check.
check_quorum_if_control_plane() {
  if [[ -n $ETCD_POD ]]; then
    if [[ ${2:-removal} == outage ]]; then
      check_quorum_during_outage "$1"
    else
      check_quorum_without "$1"
    fi
  fi
}

# member_id NAME: the ID of the etcd member NAME, or nothing.
member_id() {
  local target=$1 id name
  while IFS= read -r line; do
    IFS=$'\x1f' read -r id _ name _ <<<"${line//, /$'\x1f'}"
    if [[ $name == "$target" ]]; then
      echo "$id"
      return 0
    fi
  done <<<"$(etcd_members)"
}

# remove_member NODE: NODE's etcd member removed by name, once the others are checked to keep quorum without
# it (check_quorum_without); a node without a member is left alone. Says what it did.
remove_member() {
  local id
  id="$(member_id "$1")"
  if [[ -z $id ]]; then
    echo "etcd member $1 is already gone"
    return 0
  fi
  check_quorum_without "$1"
  etcd_ctl https://127.0.0.1:2379 member remove "$id" >/dev/null || die "could not remove etcd member $1 ($id)"
  echo "removed the etcd member of $1 ($id)"
}
