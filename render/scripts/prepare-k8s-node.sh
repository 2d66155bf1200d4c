#!/usr/bin/env bash
# prepare-k8s-node.sh - converges this VM into a node ready for `kubeadm init` / `kubeadm join`.
# Rendered from render/scripts/prepare-k8s-node.sh by render/cloud_init.py; change that file, not this copy.
# Idempotent: every step looks at the current state first, so a second run changes nothing.
# Exits non-zero on the first failure, which cloud-init reports as an error.
# The *_TEXT inputs are the files this script owns, rendered by render/cloud_init.py.
set -Eeuo pipefail
umask 022

#@ inputs NODE_HOSTNAME NODE_TIMEZONE NODE_DISTRO OS_FAMILY SELINUX_MODE POD_GUARD_TABLE POD_GUARD_TEXT PKG_MANAGER INSTALL_KUBERNETES K8S_VERSION K8S_MINOR CONTAINERD_VERSION RUNC_VERSION RUNTIME_SHA256[] DISTRO_PACKAGES[] CHRONY_CONF CHRONY_SERVICE CONTAINERD_CONFIG CONTAINERD_CERTS_DIR KUBERNETES_REPO_FILE MANAGED_MARK SYSCTL_TEXT CHRONY_CONF_TEXT CONTAINERD_CONFIG_TEXT KUBERNETES_REPO_TEXT MIRRORED_REGISTRIES[] REGISTRY_HOSTS_TEXTS[] MIRROR_CA_DIR MIRROR_CA_NAMES[] MIRROR_CA_TEXTS[]
readonly NODE_HOSTNAME NODE_TIMEZONE NODE_DISTRO OS_FAMILY SELINUX_MODE POD_GUARD_TABLE POD_GUARD_TEXT PKG_MANAGER INSTALL_KUBERNETES K8S_VERSION K8S_MINOR CONTAINERD_VERSION \
  RUNC_VERSION RUNTIME_SHA256 DISTRO_PACKAGES CHRONY_CONF CHRONY_SERVICE CONTAINERD_CONFIG CONTAINERD_CERTS_DIR KUBERNETES_REPO_FILE \
  MANAGED_MARK SYSCTL_TEXT CHRONY_CONF_TEXT CONTAINERD_CONFIG_TEXT KUBERNETES_REPO_TEXT MIRRORED_REGISTRIES \
  REGISTRY_HOSTS_TEXTS MIRROR_CA_DIR MIRROR_CA_NAMES MIRROR_CA_TEXTS
readonly ENTRY_POINT=main
readonly SYSCTL_FILE=/etc/sysctl.d/zz-kubernetes.conf

#@ include lib/prepare-helpers.sh
# ensure_packages PKG...: installs the packages that are missing, then verifies all of them
# (yum on EL7 exits 0 when a requested name does not exist, so the result is checked explicitly).
ensure_packages() {
  local name
  local -a missing=()
  for name in "$@"; do
    package_installed "${name}" || missing+=("${name}")
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  log "installing ${missing[*]}"
  case "${PKG_MANAGER}" in
    apt)
      apt_update_once
      apt_get install --no-install-recommends "${missing[@]}"
      ;;
    dnf) dnf install -y "${missing[@]}" ;;
    yum) yum install -y "${missing[@]}" ;;
    *) die "unknown package manager ${PKG_MANAGER}" ;;
  esac
  for name in "${missing[@]}"; do
    package_installed "${name}" || die "package ${name} is still missing after install"
  done
}

install_base_packages() {
  ensure_packages "${DISTRO_PACKAGES[@]}"
  # Rocky 9 ships curl as curl-minimal, which conflicts with the curl package: check the command.
  command -v curl >/dev/null || ensure_packages curl
}

start_guest_agent() {
  # Proxmox reads the VM's addresses through the agent; it needs the VM option agent=1, which
  # creates this virtio port.
  if [[ ! -e /dev/virtio-ports/org.qemu.guest_agent.0 ]]; then
    die "no qemu-guest-agent virtio port: enable the QEMU guest agent option on the Proxmox VM"
  fi
  if ! systemctl is-active --quiet qemu-guest-agent; then
    log "starting qemu-guest-agent"
    systemctl start qemu-guest-agent
  fi
}

# The node keeps its SSH host keys for good: every connection pins the key read at its first boot
# (render/host_keys.py). Proxmox derives the cloud-init instance-id from the VM's cloud-init settings (qemu-server
# src/PVE/QemuServer/Cloudinit.pm: a SHA-1 of the user and network data), so a later change to them makes the next
# boot a new instance, whose ssh module would delete the keys and generate others (cc_ssh: `ssh_deletekeys` is true
# by default; with it false, a key type already present is not generated again).
keep_host_keys() {
  put_file /etc/cloud/cloud.cfg.d/90-hybrid-cluster-host-keys.cfg 0644 <<EOF
${MANAGED_MARK}
ssh_deletekeys: false
EOF
}

# fstab_without_swap FSTAB: prints FSTAB with every uncommented swap entry commented out.
fstab_without_swap() {
  awk '!/^[[:space:]]*#/ && $3 == "swap" { print "#" $0; next } { print }' "$1"
}

# swap_files_in_fstab FSTAB: prints the paths of uncommented swap entries that name a path
# (a swap file such as Ubuntu's /swap.img, or a device node - the caller only deletes regular files).
swap_files_in_fstab() {
  awk '!/^[[:space:]]*#/ && $3 == "swap" && $1 ~ /^\// { print $1 }' "$1"
}

active_swap_count() {
  # /proc/swaps has one header line plus one line per active swap area.
  echo $(($(wc -l </proc/swaps) - 1))
}

# kubelet refuses to start with swap on unless configured otherwise (kubeadm install docs:
# "Swap disabled. You MUST disable swap in order for the kubelet to work properly").
disable_swap() {
  local swap_file
  local -a swap_files=()
  mapfile -t swap_files < <(swap_files_in_fstab /etc/fstab)
  if (($(active_swap_count) > 0)); then
    log "turning swap off"
    swapoff -a
  fi
  fstab_without_swap /etc/fstab | put_file /etc/fstab 0644
  # Length check first: bash 4.2 (CentOS 7) treats "${empty[@]}" as unbound under set -u.
  if ((${#swap_files[@]} > 0)); then
    for swap_file in "${swap_files[@]}"; do
      if [[ -f "${swap_file}" ]]; then
        log "removing swap file ${swap_file}"
        rm -f "${swap_file}"
      fi
    done
  fi
  (($(active_swap_count) == 0)) || die "swap is still active"
}

# Kernel modules and sysctls from the kubeadm install docs ("Letting iptables see bridged traffic")
# and containerd's overlayfs snapshotter.
configure_kernel() {
  local module key value
  put_file /etc/modules-load.d/k8s.conf 0644 <<EOF
${MANAGED_MARK}
overlay
br_netfilter
EOF
  for module in overlay br_netfilter; do
    if [[ ! -d "/sys/module/${module}" ]]; then
      log "loading kernel module ${module}"
      modprobe "${module}"
    fi
  done
  # Named to sort after the distributions' files and the usual site ones (99-sysctl.conf, /etc/sysctl.conf's link,
  # among them), which systemd-sysctl reads in file-name order with the last setting winning (sysctl.d(5)): at boot a
  # site's own file does not undo what the kubelet's protectKernelDefaults checks (and the kubelet's step checks the
  # values before each restart). The earlier release's name is removed.
  put_text "${SYSCTL_FILE}" 0644 "${SYSCTL_TEXT}"
  if [[ -f /etc/sysctl.d/99-kubernetes.conf ]] && grep -qxF -- "${MANAGED_MARK}" /etc/sysctl.d/99-kubernetes.conf; then
    rm -f /etc/sysctl.d/99-kubernetes.conf
    log "removed /etc/sysctl.d/99-kubernetes.conf (now ${SYSCTL_FILE})"
  fi
  while read -r key _ value; do
    [[ -n "${key}" && "${key}" != \#* ]] || continue
    if [[ "$(sysctl -n "${key}")" != "${value}" ]]; then
      log "sysctl ${key}=${value}"
      sysctl -q -w "${key}=${value}"
    fi
  done <"${SYSCTL_FILE}"
}

# selinux_config_mode FILE MODE: SELINUX=enforcing|permissive in an /etc/selinux/config file; a file that says
# disabled is left so for permissive and refused for enforcing: leaving disabled needs a relabel of every file at the
# next boot (RHEL 9 "Using SELinux", "Changing SELinux states and modes": `fixfiles -F onboot`), which a converge must
# not start by itself.
selinux_config_mode() {
  local file="$1" mode="$2" other=permissive
  [[ "${mode}" == enforcing ]] || other=enforcing
  if grep -q '^SELINUX=disabled$' "${file}"; then
    if [[ "${mode}" == permissive ]]; then
      log "SELinux is disabled in ${file}; the stack asks for permissive (security.selinux), so it is left as it is"
      return 0
    fi
    die "SELinux is disabled in ${file}: enable it with a relabel and a reboot (fixfiles -F onboot), build the template without disabling it, or set security.selinux: permissive"
  fi
  if grep -q "^SELINUX=${other}\$" "${file}"; then
    sed -i "s/^SELINUX=${other}\$/SELINUX=${mode}/" "${file}"
    log "SELinux set to ${mode} in ${file}"
  fi
}

# SELinux on the RHEL family (security.selinux): enforcing, with the container policy (container-selinux) installed,
# as the distribution ships it (Rocky 9's cloud images boot enforcing: rocky-linux/kickstarts r9
# Rocky-9-GenericCloud-Base.ks `selinux --enforcing`); permissive only when the stack relaxes it. Going from
# permissive to enforcing takes effect at once and needs no relabel (the files were labelled while permissive).
# The host's daemons are confined by the targeted policy. Containers are not labelled: containerd's enable_selinux
# stays at its default, false (containerd docs/cri/config.md), because kubeadm's static pods and the node agents read
# host files (/etc/kubernetes, /var/lib/etcd, /var/log) that container-selinux lets no container_t process read
# (kubernetes/kubeadm#279; kubernetes/kops#15487 gave them spc_t instead); pods are kept from the host by Pod
# Security, seccomp and the network policies (docs/security.md, SELinux).
# iscsid, which Longhorn's volumes attach through (configure_storage_clients), needs dac_override under the targeted
# policy on the RHEL 9 family, or attaching fails once SELinux enforces (longhorn/longhorn#5627); RKE2 ships the same
# one rule in its policy (rancher/rke2-selinux policy/centos9/rke2.te, "Longhorn ISCSID_T FIX"). A CIL module of its
# own, installed with semodule (policycoreutils) when its text changes or it is missing.
install_iscsid_selinux_module() {
  local module=hybrid_cluster_iscsid file=/etc/hybrid-cluster/selinux/hybrid_cluster_iscsid.cil
  command -v semodule >/dev/null || die "semodule (policycoreutils) is missing: the SELinux module for iscsid cannot be installed"
  put_file "${file}" 0600 <<EOF
; ${MANAGED_MARK}
(allow iscsid_t self (capability (dac_override)))
EOF
  if ((CHANGED)) || ! semodule -l | awk '{print $1}' | grep -qx "${module}"; then
    semodule -i "${file}"
    log "installed the SELinux module ${module} (iscsid may override file permissions, for Longhorn)"
  fi
}

configure_selinux() {
  if [[ "${OS_FAMILY}" != rhel ]]; then
    return 0
  fi
  ensure_packages container-selinux
  if command -v getenforce >/dev/null && [[ "$(getenforce)" != Disabled ]]; then
    install_iscsid_selinux_module
  fi
  local current=""
  command -v getenforce >/dev/null && current="$(getenforce)"
  if [[ "${SELINUX_MODE}" == enforcing && "${current}" == Permissive ]]; then
    log "switching SELinux to enforcing now"
    setenforce 1
  fi
  if [[ "${SELINUX_MODE}" == permissive && "${current}" == Enforcing ]]; then
    log "switching SELinux to permissive now (security.selinux)"
    setenforce 0
  fi
  if [[ -f /etc/selinux/config ]]; then
    selinux_config_mode /etc/selinux/config "${SELINUX_MODE}"
  fi
}

# The host firewall is turned off rather than opened port by port. Calico's requirements say a
# distribution's firewalld "or another iptables manager ... should be disabled. These may interfere
# with rules added by Calico" (https://docs.tigera.io/calico/latest/getting-started/kubernetes/requirements),
# RKE2 documents the same conflict (https://docs.rke2.io/known_issues), and Calico network policy
# plus the Proxmox firewall/VLANs are where this cluster filters traffic.
disable_host_firewall() {
  if systemctl is-enabled --quiet firewalld 2>/dev/null || systemctl is-active --quiet firewalld 2>/dev/null; then
    log "disabling firewalld"
    systemctl disable --now firewalld
  fi
  # ufw translates its status (gettext): read in the C locale, or a template in another language keeps it on.
  if command -v ufw >/dev/null && LC_ALL=C ufw status | grep -q '^Status: active'; then
    log "disabling ufw"
    ufw disable
  fi
}

# NetworkManager must not touch Calico's interfaces (Calico troubleshooting guide, "Configure
# NetworkManager": https://docs.tigera.io/calico/latest/operations/troubleshoot/troubleshooting).
configure_networkmanager() {
  if ! systemctl is-active --quiet NetworkManager; then
    return 0
  fi
  put_file /etc/NetworkManager/conf.d/calico.conf 0644 <<EOF
${MANAGED_MARK}
[keyfile]
unmanaged-devices=interface-name:cali*;interface-name:tunl*;interface-name:vxlan.calico;interface-name:vxlan-v6.calico;interface-name:wireguard.cali;interface-name:wg-v6.cali
EOF
  if ((CHANGED)); then
    systemctl reload NetworkManager
  fi
}

# configure_timezone: the stack's time zone, set again when the stack changes it (cloud-init's `timezone` sets it at
# first boot only). Compared through /etc/localtime: CentOS 7's timedatectl (systemd 219) has no `show`.
configure_timezone() {
  local zone_file="/usr/share/zoneinfo/${NODE_TIMEZONE}"
  [[ -f "${zone_file}" ]] || die "time zone ${NODE_TIMEZONE} is not in /usr/share/zoneinfo (tzdata)"
  if [[ "$(readlink -f /etc/localtime)" != "$(readlink -f "${zone_file}")" ]]; then
    log "setting the time zone to ${NODE_TIMEZONE}"
    timedatectl set-timezone "${NODE_TIMEZONE}"
  fi
}

configure_chrony() {
  put_text "${CHRONY_CONF}" 0644 "${CHRONY_CONF_TEXT}"
  if ((CHANGED)) && systemctl is-active --quiet "${CHRONY_SERVICE}"; then
    systemctl restart "${CHRONY_SERVICE}"
  fi
  if ! systemctl is-enabled --quiet "${CHRONY_SERVICE}"; then
    systemctl enable "${CHRONY_SERVICE}"
  fi
  if ! systemctl is-active --quiet "${CHRONY_SERVICE}"; then
    systemctl start "${CHRONY_SERVICE}"
  fi
}

# Longhorn: "open-iscsi is installed, and the iscsid daemon is running on all the nodes"
# (https://longhorn.io/docs/latest/deploy/install/#installation-requirements).
configure_storage_clients() {
  if ! systemctl is-enabled --quiet iscsid; then
    systemctl enable iscsid
  fi
  if ! systemctl is-active --quiet iscsid; then
    systemctl start iscsid
  fi
}

install_containerd() {
  if [[ -z "${CONTAINERD_VERSION}" ]]; then
    # The converge of a member: the runtime moves only with the upgrade chain, one drained node at a time.
    [[ -x "${RUNTIME_BIN}/containerd" ]] || die "containerd is not installed"
    log "containerd $(installed_containerd_version) and runc $(installed_runc_version) stay as installed (the upgrade chain moves them)"
  elif runtime_outdated; then
    stage_runtime
    swap_runtime
  fi
  [[ -f "${CONTAINERD_UNIT}" ]] || die "containerd.service is missing"
}

# write_registry_hosts DIR: one hosts.toml per mirrored upstream registry (MIRRORED_REGISTRIES[i] gets
# REGISTRY_HOSTS_TEXTS[i]), the mirrors' CAs in DIR/MIRROR_CA_DIR (MIRROR_CA_NAMES[i] gets MIRROR_CA_TEXTS[i]),
# and removal of the files this script wrote earlier that are no longer wanted. containerd re-reads this
# directory on every pull; no restart is needed (docs/hosts.md).
write_registry_hosts() {
  local certs_dir="$1" hosts_file upstream first_line index ca_file
  # Space-separated strings, not arrays: bash 4.2 (CentOS 7) treats "${empty[*]}" as unbound.
  local wanted=" " wanted_cas=" "
  mkdir -p "${certs_dir}"
  # The CAs before the hosts.toml files that name them, so containerd never reads a `ca` it cannot open.
  for ((index = 0; index < ${#MIRROR_CA_NAMES[@]}; index++)); do
    put_text "${certs_dir}/${MIRROR_CA_DIR}/${MIRROR_CA_NAMES[index]}" 0644 "${MIRROR_CA_TEXTS[index]}"
    wanted_cas+="${MIRROR_CA_NAMES[index]} "
  done
  for ((index = 0; index < ${#MIRRORED_REGISTRIES[@]}; index++)); do
    put_text "${certs_dir}/${MIRRORED_REGISTRIES[index]}/hosts.toml" 0644 "${REGISTRY_HOSTS_TEXTS[index]}"
    wanted+="${MIRRORED_REGISTRIES[index]} "
  done
  for hosts_file in "${certs_dir}"/*/hosts.toml; do
    [[ -f "${hosts_file}" ]] || continue
    first_line=""
    read -r first_line <"${hosts_file}" || true
    [[ "${first_line}" == "${MANAGED_MARK}"* ]] || continue
    upstream="$(basename "$(dirname "${hosts_file}")")"
    if [[ "${wanted}" != *" ${upstream} "* ]]; then
      log "removing mirror config for ${upstream}"
      rm -f "${hosts_file}"
      rmdir --ignore-fail-on-non-empty "$(dirname "${hosts_file}")"
    fi
  done
  for ca_file in "${certs_dir}/${MIRROR_CA_DIR}"/*; do
    [[ -f "${ca_file}" ]] || continue
    first_line=""
    read -r first_line <"${ca_file}" || true
    if [[ "${first_line}" == "${MANAGED_MARK}"* && "${wanted_cas}" != *" $(basename "${ca_file}") "* ]]; then
      log "removing mirror CA $(basename "${ca_file}")"
      rm -f "${ca_file}"
    fi
  done
  if [[ -d "${certs_dir}/${MIRROR_CA_DIR}" ]]; then
    rmdir --ignore-fail-on-non-empty "${certs_dir}/${MIRROR_CA_DIR}"
  fi
}
# write_containerd_config PATH: sets CHANGED like put_file.
write_containerd_config() {
  put_text "$1" 0644 "${CONTAINERD_CONFIG_TEXT}"
}

configure_containerd() {
  local config_changed
  write_containerd_config "${CONTAINERD_CONFIG}"
  config_changed="${CHANGED}"
  write_registry_hosts "${CONTAINERD_CERTS_DIR}"
  if ! systemctl is-enabled --quiet containerd; then
    systemctl enable containerd
  fi
  if ! systemctl is-active --quiet containerd; then
    systemctl start containerd
  elif ((config_changed)); then
    log "restarting containerd for the new config"
    systemctl restart containerd
  fi
  systemctl is-active --quiet containerd || die "containerd is not running"
}


# joined_cluster: kubeadm init or join has run on this node (kubeadm writes kubelet.conf).
joined_cluster() {
  [[ -e /etc/kubernetes/kubelet.conf ]]
}

# (installed_kube_version and the pinning syntax: see lib/prepare-helpers.sh)
install_kubernetes_packages() {
  local package installed workdir
  local -a missing=()
  if [[ "${PKG_MANAGER}" == apt ]]; then
    # Same signing key for every minor's repository (kubeadm install docs), so fetch it once.
    if [[ ! -s /etc/apt/keyrings/kubernetes-apt-keyring.gpg ]]; then
      log "adding the pkgs.k8s.io signing key"
      install -d -m 0755 /etc/apt/keyrings
      workdir="$(mktemp -d)"
      fetch "https://pkgs.k8s.io/core:/stable:/${K8S_MINOR}/deb/Release.key" "${workdir}/Release.key"
      gpg --dearmor --yes -o "${workdir}/kubernetes-apt-keyring.gpg" "${workdir}/Release.key"
      install -m 0644 "${workdir}/kubernetes-apt-keyring.gpg" /etc/apt/keyrings/kubernetes-apt-keyring.gpg
      rm -rf "${workdir}"
    fi
  fi
  put_text "${KUBERNETES_REPO_FILE}" 0644 "${KUBERNETES_REPO_TEXT}"
  if ((CHANGED)); then
    APT_INDEX_FRESH=0
  fi

  for package in kubelet kubeadm kubectl; do
    installed="$(installed_kube_version "${package}")"
    if [[ -z "${installed}" ]]; then
      missing+=("${package}")
    elif [[ "${installed}" != "${K8S_VERSION}" ]]; then
      # A machine re-created under an older first-boot snippet installed that snippet's version; it has not
      # joined yet, so it simply takes the stack's. A member moves only through the upgrade chain.
      ! joined_cluster \
        || die "${package} ${installed} is installed on a member, ${K8S_VERSION} wanted: upgrade through the upgrade chain"
      log "${package} ${installed} is installed on a node that has not joined yet: moving it to ${K8S_VERSION}"
      missing+=("${package}")
      if [[ "${PKG_MANAGER}" == apt ]] && apt-mark showhold "${package}" | grep -qx "${package}"; then
        apt-mark unhold "${package}"
      fi
    fi
  done
  if ((${#missing[@]} > 0)); then
    log "installing ${missing[*]} ${K8S_VERSION}"
    install_kube_version "${missing[@]}"
  fi
  if [[ "${PKG_MANAGER}" == apt ]]; then
    for package in kubelet kubeadm kubectl; do
      if ! apt-mark showhold "${package}" | grep -qx "${package}"; then
        apt-mark hold "${package}"
      fi
    done
  fi
  # dnf/yum: the repository's exclude= line is the hold; installs need --disableexcludes.
}

# The kubelet's unit and configuration readable by root only (CIS Kubernetes Benchmark 4.1.1 and 4.1.9: 600 or more
# restrictive). The packages install the unit 0644 (kubernetes/release cmd/krel/templates/latest/kubelet/kubelet.spec,
# `install -p -m 644 kubelet.service`; kubeadm.spec the same for 10-kubeadm.conf) and kubeadm writes config.yaml 0644
# at every join and upgrade (cmd/kubeadm/app/phases/kubelet/config.go), so the modes are set again before every start
# of the kubelet: kubeadm restarts it after writing, and a package upgrade is followed by a restart too.
harden_kubelet_files() {
  local files="/usr/lib/systemd/system/kubelet.service /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf /var/lib/kubelet/config.yaml"
  put_file /etc/systemd/system/kubelet.service.d/20-hybrid-cluster-modes.conf 0600 <<EOF
${MANAGED_MARK}
[Service]
ExecStartPre=-/usr/bin/chmod 0600 ${files}
EOF
  if ((CHANGED)); then
    systemctl daemon-reload
  fi
  # shellcheck disable=SC2086 # the list is the unit's, word-split on purpose
  chmod 0600 ${files} 2>/dev/null || true
}

# Pods kept off this node's SSH, etcd, RDP and WinRM ports through every address it has (POD_GUARD_TEXT, the nftables
# table POD_GUARD_TABLE, rendered by render/security.py; empty when security.networkPolicy is off). The Calico tier
# denies the node network, but a node also answers on its VXLAN tunnel address, which calico-node allocates from the
# pod pool (calico node/pkg/allocateip) and no address-based policy can name in advance, and traffic from a pod to it
# is neither masqueraded nor policed on the way in. So: an nftables table of its own, hooked on input, dropping those
# ports from the pod network. A drop is final whatever another table (iptables-nft, Calico's, kube-proxy's) accepts:
# an accept ends only its own base chain (nft(8), "VERDICT STATEMENT"). Loaded by a unit ordered before the network,
# like the distributions' nftables.service, and after it (whose /etc/nftables.conf may begin with `flush ruleset`);
# reloaded with the file's own replace idiom, which nft applies atomically, and loaded again whenever the table is
# missing (someone flushed the ruleset).
POD_GUARD_UNIT=/etc/systemd/system/hybrid-cluster-pod-guard.service
POD_GUARD_RULES=/etc/hybrid-cluster/pod-guard.nft
configure_pod_guard() {
  local changed=0
  if [[ -z "${POD_GUARD_TEXT}" ]]; then
    if [[ -f "${POD_GUARD_UNIT}" ]]; then
      if systemctl is-enabled --quiet hybrid-cluster-pod-guard.service || systemctl is-active --quiet hybrid-cluster-pod-guard.service; then
        systemctl disable --now hybrid-cluster-pod-guard.service
      fi
      rm -f "${POD_GUARD_UNIT}" "${POD_GUARD_RULES}"
      systemctl daemon-reload
      log "removed the pod guard (security.networkPolicy is off)"
    fi
    return 0
  fi
  ensure_packages nftables
  put_text "${POD_GUARD_RULES}" 0600 "${POD_GUARD_TEXT}"
  changed=${CHANGED}
  put_file "${POD_GUARD_UNIT}" 0644 <<EOF
${MANAGED_MARK}
[Unit]
Description=hybrid-cluster: pods kept off this node's administration ports (docs/security.md)
Wants=network-pre.target
Before=network-pre.target shutdown.target
After=nftables.service
Conflicts=shutdown.target
DefaultDependencies=no

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/nft -f ${POD_GUARD_RULES}
ExecReload=/usr/sbin/nft -f ${POD_GUARD_RULES}
ExecStop=-/usr/sbin/nft delete table inet ${POD_GUARD_TABLE}

[Install]
WantedBy=multi-user.target
EOF
  if ((CHANGED)); then
    systemctl daemon-reload
    changed=1
  fi
  if ! systemctl is-enabled --quiet hybrid-cluster-pod-guard.service; then
    systemctl enable hybrid-cluster-pod-guard.service
  fi
  if ((changed)) || ! systemctl is-active --quiet hybrid-cluster-pod-guard.service \
    || ! nft list table inet "${POD_GUARD_TABLE}" >/dev/null 2>&1; then
    systemctl reload-or-restart hybrid-cluster-pod-guard.service
    log "pod guard loaded from ${POD_GUARD_RULES}"
  fi
}

# The kubelet restarts every few seconds until kubeadm init/join configures it; that is expected
# (kubeadm install docs). Enabled only: kubeadm starts it.
enable_kubelet() {
  if ! systemctl is-enabled --quiet kubelet; then
    systemctl enable kubelet
  fi
}

main() {
  [[ "${EUID}" -eq 0 ]] || die "run as root"
  log "preparing ${NODE_HOSTNAME} (${NODE_DISTRO}) for Kubernetes with containerd ${CONTAINERD_VERSION:-as installed}"
  install_base_packages
  start_guest_agent
  keep_host_keys
  disable_swap
  configure_kernel
  configure_selinux
  disable_host_firewall
  configure_pod_guard
  configure_networkmanager
  configure_timezone
  configure_chrony
  configure_storage_clients
  install_containerd
  configure_containerd
  if ((INSTALL_KUBERNETES)); then
    install_kubernetes_packages
  else
    log "kubelet, kubeadm and kubectl stay at the installed $(installed_kube_version kubelet) (upgrades: the upgrade chain)"
  fi
  harden_kubelet_files
  enable_kubelet
  log "node is ready for kubeadm init/join"
}

#@ include lib/run-entry-point.sh
