# Node cleanup: the delete script of init and of every join; a clean node runs it as a no-op.
## `kubeadm reset -f` (https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/) runs
## only when kubeadm state exists. reset's page lists what it leaves behind, and this script removes:
## /etc/cni/net.d ("Cleanup of CNI configuration"), kube-proxy's iptables/nftables/IPVS rules ("Cleanup
## of network traffic rules") and $HOME/.kube ("Cleanup of $HOME/.kube"). Calico's node state and links
## go as kubespray's reset removes them (kubernetes-sigs/kubespray roles/reset/tasks/main.yml:
## /var/lib/calico, /run/calico, /var/lib/cni, `ipvsadm -C`, the kube-ipvs0 link; PR #9103: the
## vxlan.calico link). The init/join logs (they may hold tokens) and the kube-vip manifest go too.
## A control-plane node ($ETCD_POD, its own etcd Pod): kubeadm reset removes its etcd member, so quorum is
## checked again right before, through the node's admin.conf (the drain checked it minutes earlier).
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NODE ETCD_POD
LOG="$ROOT/var/log/kubeadm-reset.log"
#@ include lib/log-helpers.sh
#@ include lib/admin-kubeconfig.sh
#@ include lib/etcd.sh
has_kubeadm_state() {
  local path
  local -a manifests=()
  for path in "$ROOT/etc/kubernetes/kubelet.conf" "$ROOT/etc/kubernetes/bootstrap-kubelet.conf" \
    "$ROOT/etc/kubernetes/admin.conf" "$ROOT/etc/kubernetes/pki" "$ROOT/var/lib/kubelet/config.yaml" \
    "$ROOT/var/lib/etcd/member"; do
    if [[ -e $path ]]; then
      return 0
    fi
  done
  shopt -s nullglob
  manifests=("$ROOT/etc/kubernetes/manifests"/*)
  shopt -u nullglob
  ((${#manifests[@]} > 0))
}

# remove_contents DIR: empty DIR but keep it (the kubelet package owns /etc/cni/net.d's parent).
remove_contents() {
  local -a entries=()
  [[ -d $1 ]] || return 0
  shopt -s nullglob dotglob
  entries=("$1"/*)
  shopt -u nullglob dotglob
  if ((${#entries[@]} > 0)); then
    rm -rf -- "${entries[@]}"
  fi
}

remove_links() {
  local links name
  command -v ip >/dev/null || return 0
  links="$(ip -o link show)"
  while read -r _ name _; do
    name=${name%:}
    name=${name%%@*}
    case "$name" in
      vxlan.calico | vxlan-v6.calico | kube-ipvs0 | cali*)
        if ! ip link delete "$name" 2>/dev/null && ip link show "$name" >/dev/null 2>&1; then
          die "could not delete link $name"
        fi
        echo "deleted link $name"
        ;;
      tunl0)
        ## tunl0 is the ipip module's fallback device and may refuse deletion (projectcalico/calico
        ## issue #1375).
        if ip link delete tunl0 2>/dev/null; then
          echo "deleted link tunl0"
        else
          ip link set tunl0 down
          echo "tunl0 belongs to the ipip module and cannot be deleted; set it down"
        fi
        ;;
    esac
  done <<<"$links"
}

# clean_iptables SAVE RESTORE: rewrite the tables without kube-proxy's and Calico's chains and rules.
## kube-proxy's chains are named KUBE-, Calico's cali-, and Calico's rules carry cali: comments.
clean_iptables() {
  local save=$1 restore=$2 rules
  local pattern='KUBE-|cali-|cali:'
  command -v "$save" >/dev/null && command -v "$restore" >/dev/null || return 0
  rules="$("$save")"
  grep -q -E -e "$pattern" <<<"$rules" || return 0
  grep -v -E -e "$pattern" <<<"$rules" | "$restore"
  echo "removed kube-proxy and Calico rules ($save)"
}

## kube-proxy's nftables mode keeps everything in table kube-proxy of families ip and ip6
## (kubeProxyTable in kubernetes pkg/proxy/nftables/proxier.go).
clean_nftables() {
  local family
  command -v nft >/dev/null || return 0
  for family in ip ip6; do
    if nft list table "$family" kube-proxy >/dev/null 2>&1; then
      nft delete table "$family" kube-proxy
      echo "deleted nftables table $family kube-proxy"
    fi
  done
}

if has_kubeadm_state; then
  command -v kubeadm >/dev/null || die "this node has kubeadm state but kubeadm is not installed"
  if [[ -n $ETCD_POD && -f $KUBECONFIG ]]; then
    check_quorum_without "$NODE"
  fi
  fresh_log "$LOG"
  echo "kubeadm reset: running (output in $LOG)"
  if ! kubeadm reset -f >>"$LOG" 2>&1; then
    show_log_tail "$LOG"
    die "kubeadm reset -f failed"
  fi
else
  echo "kubeadm reset: no kubeadm state on this node, skipped"
fi

rm -f -- "$ROOT/etc/kubernetes/manifests/kube-vip.yaml"
rm -rf -- "$ROOT/etc/kubernetes/kubeadm"
# The control plane's own files, which kubeadm does not know: the Secrets encryption keys above all
# (lib/encryption.sh, lib/control-plane-files.sh, lib/static-pod-restart.sh).
rm -rf -- "$ROOT/etc/kubernetes/encryption" "$ROOT/etc/kubernetes/hardening" "$ROOT/etc/kubernetes/manifests-parked"
rm -f -- "$ROOT/var/log/kubeadm-init.log" "$ROOT/var/log/kubeadm-join.log" \
  "$ROOT/var/log/kubeadm-join-credentials.log"
remove_contents "$ROOT/etc/cni/net.d"
rm -rf -- "$ROOT/var/lib/calico" "$ROOT/var/run/calico" "$ROOT/run/calico" "$ROOT/var/lib/cni"
rm -rf -- "$ROOT/root/.kube"
remove_links
for tables in iptables ip6tables iptables-legacy ip6tables-legacy; do
  clean_iptables "$tables-save" "$tables-restore"
done
clean_nftables
# ipvsadm fails when the ip_vs module is not loaded, which is the normal case here.
if [[ -e $ROOT/proc/net/ip_vs ]] && command -v ipvsadm >/dev/null; then
  ipvsadm --clear
fi
echo "node cleanup: done"
