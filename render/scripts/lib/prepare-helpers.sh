# What the node preparation (prepare-k8s-node.sh) and the node's upgrade (upgrade-k8s-node.sh) share:
# logging, idempotent file writes, downloads, and the pinned kube packages.
log() { printf '%s prepare-k8s-node: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"; }
die() { log "ERROR: $*"; exit 1; }
trap 'log "ERROR: exit $? at line ${LINENO}: ${BASH_COMMAND}"' ERR

CHANGED=0
# put_file PATH MODE <CONTENT: replaces PATH only when its content or mode differ, and sets CHANGED
# to 1 when it wrote, 0 when the file was already right. Every file this script owns goes through it.
put_file() {
  local path="$1" mode="$2" staged
  staged="$(mktemp)"
  cat >"${staged}"
  if [[ -f "${path}" ]] \
    && [[ "$(sha256sum <"${path}")" == "$(sha256sum <"${staged}")" ]] \
    && [[ "$(stat -c '%a' "${path}")" == "${mode#0}" ]]; then
    rm -f "${staged}"
    CHANGED=0
    return 0
  fi
  install -D -m "${mode}" "${staged}" "${path}"
  rm -f "${staged}"
  CHANGED=1
  log "wrote ${path}"
}

# put_text PATH MODE TEXT: put_file with TEXT (one of the script's inputs) as the content.
put_text() {
  put_file "$1" "$2" < <(printf '%s' "$3")
}

# fetch URL DEST: downloads with retries; cross-border links from Hong Kong are slow and flaky.
# (--retry-all-errors is not used: CentOS 7 ships curl 7.29, which predates it.)
fetch() {
  local url="$1" dest="$2" attempt
  for attempt in 1 2 3 4 5; do
    if curl -fsSL --connect-timeout 20 --max-time 900 -o "${dest}" "${url}"; then
      return 0
    fi
    log "download failed (attempt ${attempt}/5): ${url}"
    sleep $((attempt * 10))
  done
  die "could not download ${url}"
}

APT_INDEX_FRESH=0
# apt_update_once: refreshes the apt index the first time a run needs it (after a repository change,
# which resets APT_INDEX_FRESH, again).
apt_update_once() {
  if ((APT_INDEX_FRESH == 0)); then
    apt_get update
    APT_INDEX_FRESH=1
  fi
}

apt_get() {
  # DPkg::Lock::Timeout waits for unattended-upgrades, which often holds the dpkg lock at first boot.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y "$@"
}

package_installed() {
  if [[ "${PKG_MANAGER}" == apt ]]; then
    # shellcheck disable=SC2016 # ${db:Status-Status} is a dpkg-query field, not a shell expansion
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == installed ]]
  else
    rpm -q --quiet "$1"
  fi
}

# kubelet, kubeadm and kubectl pinned to K8S_VERSION from the community repository for its minor
# (https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/install-kubeadm/); the
# version syntax is the one the kubeadm upgrade guide uses: apt `kubeadm='1.34.x-*'`,
# yum/dnf `kubeadm-'1.34.x-*' --disableexcludes=kubernetes`
# (https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-upgrade/).
# installed_kube_version PACKAGE: upstream version ("1.34.2") of an installed package, or nothing.
installed_kube_version() {
  if ! package_installed "$1"; then
    return 0
  fi
  if [[ "${PKG_MANAGER}" == apt ]]; then
    # shellcheck disable=SC2016 # ${Version} is a dpkg-query field, not a shell expansion
    dpkg-query -W -f='${Version}' "$1" | sed 's/-[^-]*$//'
  else
    rpm -q --qf '%{VERSION}' "$1"
  fi
}

# install_kube_version PACKAGE...: installs the packages at K8S_VERSION from the kubernetes repository
# (apt refreshes its index once per run: a new patch is only in an index fetched after its release)
# and verifies each, since the package managers do not fail on every version they could not install.
install_kube_version() {
  local package
  case "${PKG_MANAGER}" in
    apt)
      apt_update_once
      apt_get install --no-install-recommends "${@/%/=${K8S_VERSION}-*}"
      ;;
    dnf | yum)
      "${PKG_MANAGER}" install -y --disableexcludes=kubernetes "${@/%/-${K8S_VERSION}-*}"
      ;;
  esac
  for package in "$@"; do
    [[ "$(installed_kube_version "${package}")" == "${K8S_VERSION}" ]] \
      || die "${package} ${K8S_VERSION} did not install"
  done
}
