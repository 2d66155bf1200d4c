#!/usr/bin/env bash
# upgrade-k8s-node.sh - moves this node to Kubernetes $K8S_VERSION (kubeadm upgrade) and to containerd
# $CONTAINERD_VERSION with runc $RUNC_VERSION.
# Rendered from render/scripts/upgrade-k8s-node.sh by render/cloud_init.py; change that file, not this copy.
# It names only what an upgrade needs (distro, versions, repository), so other node settings never re-run it.
set -Eeuo pipefail
umask 022

#@ inputs MACHINE NODE_HOSTNAME PKG_MANAGER K8S_VERSION CONTAINERD_VERSION RUNC_VERSION RUNTIME_SHA256[] KUBERNETES_REPO_FILE KUBERNETES_REPO_TEXT UPGRADE_FIRST_CONTROL_PLANE ETCD_POD
readonly MACHINE NODE_HOSTNAME PKG_MANAGER K8S_VERSION CONTAINERD_VERSION RUNC_VERSION RUNTIME_SHA256 KUBERNETES_REPO_FILE KUBERNETES_REPO_TEXT \
  UPGRADE_FIRST_CONTROL_PLANE ETCD_POD
readonly ENTRY_POINT=upgrade_node
ADMIN_CONF=/etc/kubernetes/admin.conf
KUBE_VIP_MANIFEST=/etc/kubernetes/manifests/kube-vip.yaml

#@ include lib/prepare-helpers.sh
#@ include lib/etcd.sh
# The node's side of a rolling upgrade, in the kubeadm upgrade guide's order
# (https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-upgrade/): kubeadm first (the
# repository of the new minor, unhold, the pinned version, hold again), then `kubeadm upgrade apply
# vX.Y.Z -y` on the first control-plane node or `kubeadm upgrade node` on every other node, then kubelet
# and kubectl, `systemctl daemon-reload` and a kubelet restart. A container runtime pin change
# (config/compat.py) rides the same drain: the new containerd and runc are downloaded and verified before
# anything stops, then swapped in with the kubelet stopped, and a failure puts the old runtime back
# (lib/prepare-helpers.sh). The chain around it (components/upgrade.py) drains the node before and
# uncordons it after.
# upgrade_kube_packages PACKAGE...: moves the named packages to K8S_VERSION; a package already there is left.
upgrade_kube_packages() {
  local package
  local -a stale=()
  for package in "$@"; do
    [[ "$(installed_kube_version "${package}")" == "${K8S_VERSION}" ]] || stale+=("${package}")
  done
  ((${#stale[@]} > 0)) || return 0
  put_text "${KUBERNETES_REPO_FILE}" 0644 "${KUBERNETES_REPO_TEXT}"
  if ((CHANGED)); then
    APT_INDEX_FRESH=0
  fi
  log "upgrading ${stale[*]} to ${K8S_VERSION}"
  case "${PKG_MANAGER}" in
    apt)
      # A held package is not changed by `apt-get -y install` ("Held packages were changed and -y was
      # used without --allow-change-held-packages"): unhold, install, hold again, as the guide does.
      for package in "${stale[@]}"; do
        if apt-mark showhold "${package}" | grep -qx "${package}"; then
          apt-mark unhold "${package}"
        fi
      done
      install_kube_version "${stale[@]}"
      for package in "${stale[@]}"; do
        if ! apt-mark showhold "${package}" | grep -qx "${package}"; then
          apt-mark hold "${package}"
        fi
      done
      ;;
    *) install_kube_version "${stale[@]}" ;;
  esac
}

# The version kubeadm last uploaded for the whole cluster (kubeadm-config ClusterConfiguration).
cluster_kubernetes_version() {
  kubectl --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=30s -n kube-system \
    get configmap kubeadm-config -o jsonpath='{.data.ClusterConfiguration}' \
    | sed -n 's/^kubernetesVersion: *//p'
}

running_kubelet_version() {
  kubectl --kubeconfig=/etc/kubernetes/kubelet.conf --request-timeout=30s \
    get node "${NODE_HOSTNAME}" -o jsonpath='{.status.nodeInfo.kubeletVersion}' 2>/dev/null || true
}

# restart_kube_vip: kube-vip reads admin.conf only when it starts, and `kubeadm upgrade` has just renewed
# it: the static Pod is moved out for the kubelet's rescan (fileCheckFrequency 20 s), back in, and awaited
# Ready, or the API VIP goes once the old certificate expires (aws/eks-anywhere#5219). A node without
# kube-vip (a single control-plane node) has nothing to restart.
restart_kube_vip() {
  local parked="${KUBE_VIP_MANIFEST%/manifests/*}/kube-vip.yaml.parked" attempt ready=""
  [[ -f "${KUBE_VIP_MANIFEST}" || -f "${parked}" ]] || return 0
  [[ -f "${parked}" ]] || mv "${KUBE_VIP_MANIFEST}" "${parked}"
  sleep 30
  mv "${parked}" "${KUBE_VIP_MANIFEST}"
  for attempt in $(seq 1 60); do
    ready="$(kubectl --kubeconfig="${ADMIN_CONF}" --request-timeout=10s -n kube-system get pod \
      "kube-vip-${NODE_HOSTNAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)"
    [[ "${ready}" == True ]] && break
    sleep 5
  done
  [[ "${ready}" == True ]] || die "kube-vip on ${NODE_HOSTNAME} is not Ready 300s after its restart"
  log "restarted kube-vip on ${NODE_HOSTNAME} with the renewed admin.conf"
}

# check_quorum_before_restart: on a control-plane node ($ETCD_POD set), kubeadm upgrade is about to restart
# its etcd member; the drain checked quorum up to ten minutes ago, so it is checked again right now.
check_quorum_before_restart() {
  [[ -n "${ETCD_POD}" ]] || return 0
  KUBECONFIG="${ADMIN_CONF}" check_quorum_during_outage "${NODE_HOSTNAME}"
}

kubernetes_current() {
  [[ "$(running_kubelet_version)" == "v${K8S_VERSION}" && "$(installed_kube_version kubeadm)" == "${K8S_VERSION}" ]] \
    && { ((UPGRADE_FIRST_CONTROL_PLANE == 0)) || [[ "$(cluster_kubernetes_version)" == "v${K8S_VERSION}" ]]; }
}

# upgrade_runtime: the staged containerd and runc swapped in with the kubelet stopped (nothing restarts
# containers meanwhile); whatever happens, the kubelet is started again, on the old runtime if the swap
# failed (swap_runtime puts it back and dies).
upgrade_runtime() {
  local kubelet_was_active=0
  if systemctl is-active --quiet kubelet; then
    kubelet_was_active=1
    systemctl stop kubelet
    trap 'systemctl start kubelet' EXIT
  fi
  swap_runtime
  trap - EXIT
  if ((kubelet_was_active)); then
    systemctl start kubelet
  fi
}

upgrade_node() {
  [[ "${EUID}" -eq 0 ]] || die "run as root"
  local kubernetes=1 runtime=1
  # A node whose kubelet already runs the target finished every step below (the kubelet restarts last), so
  # a run caused by anything else (a rotated SSH key, new script text) changes nothing: no `kubeadm upgrade
  # node`, which would rewrite the kubelet configuration and renew certificates again.
  if kubernetes_current; then
    kubernetes=0
  fi
  if ! runtime_outdated; then
    runtime=0
  fi
  if ((kubernetes == 0 && runtime == 0)); then
    log "${NODE_HOSTNAME} (machine ${MACHINE}) already runs Kubernetes ${K8S_VERSION} on containerd ${CONTAINERD_VERSION}, nothing to upgrade"
    return 0
  fi
  if ((runtime)); then
    # Everything the runtime change needs is on the node before anything stops.
    stage_runtime
  fi
  if ((kubernetes)); then
    log "upgrading ${NODE_HOSTNAME} (machine ${MACHINE}) to Kubernetes ${K8S_VERSION}"
    upgrade_kube_packages kubeadm
    if ((UPGRADE_FIRST_CONTROL_PLANE)); then
      # Re-running after a failure later in this function must not apply the same upgrade twice.
      if [[ "$(cluster_kubernetes_version)" == "v${K8S_VERSION}" ]]; then
        log "the cluster configuration is already at v${K8S_VERSION}"
      else
        # `kubeadm upgrade plan` first, as the upgrade guide does: it checks that the cluster can be upgraded
        # to this version and fails otherwise, before anything changes.
        kubeadm upgrade plan "v${K8S_VERSION}" || die "kubeadm upgrade plan refused v${K8S_VERSION} (see above); nothing was upgraded"
        check_quorum_before_restart
        kubeadm upgrade apply "v${K8S_VERSION}" --yes
      fi
    else
      check_quorum_before_restart
      kubeadm upgrade node
    fi
    restart_kube_vip
    upgrade_kube_packages kubelet kubectl
  fi
  if ((runtime)); then
    log "moving ${NODE_HOSTNAME} to containerd ${CONTAINERD_VERSION} and runc ${RUNC_VERSION}"
    upgrade_runtime
  fi
  # The kubelet reports the version it runs on its Node (the node's own credentials may read it); a
  # run that stopped between the package and the restart restarts it here.
  if [[ "$(running_kubelet_version)" != "v${K8S_VERSION}" ]]; then
    systemctl daemon-reload
    systemctl restart kubelet
  fi
  log "${NODE_HOSTNAME} runs kubelet ${K8S_VERSION} on containerd ${CONTAINERD_VERSION}"
}

#@ include lib/run-entry-point.sh
