# On the first control-plane node, before a node's VM restart (render/maintenance.py): unless the node
# already runs with $SETTINGS, record its boot id, cordon and drain it (for a control-plane node, only if
# the etcd members without it keep quorum). A re-run after a failure keeps the boot id recorded first, so a
# restart that already happened is not waited for, or done, twice. The last line of the output is the
# decision the VM restart step reads on its standard input: "restart-needed: yes" or "restart-needed: no".
# $LATER_STEPS is the revision of the restart and uncordon scripts (render/maintenance.py says why).
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE SETTINGS CPU MEMORY_MB DISK_GB ETCD_POD TIMEOUT MARK_ANNOTATION MARK_JSONPATH APPLIED_JSONPATH LATER_STEPS
#@ include lib/admin-kubeconfig.sh
#@ include lib/etcd.sh
#@ include lib/drain.sh

node_field() {
  kubectl get node "$NODE" -o jsonpath="$1" --request-timeout=30s
}

# kibibytes QUANTITY: a capacity as the kubelet reports it ("8148296Ki", or plain bytes, which is how some
# kubelets report ephemeral-storage: kubernetes/kubernetes#133927) in KiB; fails on any other form.
kibibytes() {
  if [[ $1 =~ ^([0-9]+)Ki$ ]]; then
    echo "${BASH_REMATCH[1]}"
  elif [[ $1 =~ ^[0-9]+$ ]]; then
    echo $(($1 / 1024))
  else
    return 1
  fi
}

# runs_with_settings: the chain records on the Node the settings its last restart applied, and a change
# that only rewrites this script (a new release of it) must not restart every node. A node the chain has
# never restarted runs with the settings its VM was created with; it is compared by the capacity its
# kubelet reports: the CPU count exactly, memory and the root file system within what the kernel and the
# other partitions take (at most 10% and 15%; a smaller change is applied at the node's next restart).
runs_with_settings() {
  local applied cpu memory storage
  applied="$(node_field "$APPLIED_JSONPATH")"
  if [[ -n $applied ]]; then
    [[ $applied == "$SETTINGS" ]]
    return
  fi
  read -r cpu memory storage < <(node_field \
    '{.status.capacity.cpu} {.status.capacity.memory} {.status.capacity.ephemeral-storage}{"\n"}') || return 1
  [[ ${cpu:-} == "$CPU" ]] || return 1
  memory="$(kibibytes "${memory:-}")" || return 1
  storage="$(kibibytes "${storage:-}")" || return 1
  ((memory <= MEMORY_MB * 1024 && memory * 10 >= MEMORY_MB * 1024 * 9)) || return 1
  ((storage <= DISK_GB * 1048576 && storage * 100 >= DISK_GB * 1048576 * 85))
}

[[ -s $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
echo "restart chain of $NODE (later steps at revision $LATER_STEPS)"
marked="$(node_field "$MARK_JSONPATH")"
if [[ -z $marked ]] && runs_with_settings; then
  echo "node $NODE already runs with $SETTINGS: no drain, no restart"
  echo "restart-needed: no"
  exit 0
fi
boot_id="$(node_field '{.status.nodeInfo.bootID}')"
[[ -n $boot_id ]] || die "node $NODE reports no boot id"
check_quorum_if_control_plane "$NODE" outage
if [[ $marked != "$SETTINGS boot="* ]]; then
  kubectl annotate node "$NODE" --overwrite "$MARK_ANNOTATION=$SETTINGS boot=$boot_id" --request-timeout=60s >/dev/null
  marked="$SETTINGS boot=$boot_id"
fi
cordon_and_drain "$TIMEOUT" " for its VM restart" \
  "it stays cordoned and its VM was not restarted. Resolve the blocking pod or PodDisruptionBudget and run the update again"
if [[ $boot_id != "${marked##* boot=}" ]]; then
  echo "node $NODE was restarted after an earlier run of this step drained it: no second restart"
  echo "restart-needed: no"
  exit 0
fi
# The drain took up to $TIMEOUT seconds: the restart follows this line at once, so quorum is checked again.
check_quorum_if_control_plane "$NODE" outage
echo "node $NODE is drained for the restart that applies $SETTINGS"
echo "restart-needed: yes"
