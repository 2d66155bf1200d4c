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
  install -D -m "${mode}" "${staged}" "${path}" || { rm -f "${staged}"; return 1; }
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

# --- the container runtime (containerd and runc), shared by the preparation and the upgrade ------------------
# Pinned to CONTAINERD_VERSION and RUNC_VERSION (config/compat.py). A change is made in two phases, so that a
# failure never leaves a node without a runtime: stage_runtime downloads and verifies everything first, with
# nothing stopped; swap_runtime then stops containerd, keeps the binaries it replaces, installs the staged
# ones and checks them, and on any failure puts the old ones back and starts containerd again. Running
# containers survive: their runc shims outlive a containerd restart, and replacing a running executable's
# file does not touch the process.
# Where the runtime lives (containerd's getting-started guide: /usr/local/bin, /usr/local/sbin/runc, the unit in
# /usr/local/lib/systemd/system). Tests point them at a scratch directory; on a node the variable is unset.
RUNTIME_BIN="${HYBRID_CLUSTER_TEST_ROOT:-}/usr/local/bin"
RUNC_PATH="${HYBRID_CLUSTER_TEST_ROOT:-}/usr/local/sbin/runc"
CONTAINERD_UNIT="${HYBRID_CLUSTER_TEST_ROOT:-}/usr/local/lib/systemd/system/containerd.service"

release_arch() {
  case "$(uname -m)" in
    x86_64) echo amd64 ;;
    aarch64) echo arm64 ;;
    *) die "unsupported architecture $(uname -m)" ;;
  esac
}

installed_containerd_version() {
  if [[ -x "${RUNTIME_BIN}"/containerd ]]; then
    # "containerd github.com/containerd/containerd/v2 v2.1.4 <commit>"
    "${RUNTIME_BIN}"/containerd --version | awk '{ print $3 }'
  fi
}

installed_runc_version() {
  if [[ -x "${RUNC_PATH}" ]]; then
    "${RUNC_PATH}" --version | awk 'NR == 1 { print "v" $3 }'
  fi
}

runtime_outdated() {
  [[ "$(installed_containerd_version)" != "v${CONTAINERD_VERSION}" || "$(installed_runc_version)" != "v${RUNC_VERSION}" ]]
}

# pinned_sha256 URL: the SHA-256 config/compat.py pins for URL (RUNTIME_SHA256 lines "URL DIGEST"), or nothing.
pinned_sha256() {
  local entry
  for entry in "${RUNTIME_SHA256[@]}"; do
    if [[ "${entry%% *}" == "$1" ]]; then
      echo "${entry#* }"
      return 0
    fi
  done
}

# fetch_checked URL DEST [CHECKSUM_URL]: URL downloaded to DEST and its SHA-256 checked against its pin; a URL with no
# pin (config/compat.py DOWNLOADS) is checked against CHECKSUM_URL's line for its file name, published beside it.
fetch_checked() {
  local url=$1 dest=$2 checksums=${3:-} pinned actual
  fetch "${url}" "${dest}"
  actual="$(sha256sum <"${dest}")"
  actual="${actual%% *}"
  pinned="$(pinned_sha256 "${url}")"
  if [[ -n "${pinned}" ]]; then
    [[ "${actual}" == "${pinned}" ]] || die "${url} has SHA-256 ${actual}, not the ${pinned} config/compat.py pins"
    return 0
  fi
  [[ -n "${checksums}" ]] || die "no SHA-256 pinned for ${url} in config/compat.py"
  log "no SHA-256 pinned for ${url##*/}: checking the checksum published beside it"
  fetch "${checksums}" "${dest}.published"
  grep -Eq "^${actual} [ *]([^ ]*/)?${url##*/}\$" "${dest}.published" \
    || die "${url} does not match its published checksum"
  rm -f "${dest}.published"
}

RUNTIME_STAGE=""
# stage_runtime: the pinned containerd (static release build, its unit file) and runc, downloaded and checked by
# fetch_checked (against its pinned SHA-256, or for a URL with none the checksum published beside it) into
# RUNTIME_STAGE; nothing on the node is touched.
stage_runtime() {
  local arch tarball base
  arch="$(release_arch)"
  RUNTIME_STAGE="$(mktemp -d)"
  base="https://github.com/containerd/containerd/releases/download/v${CONTAINERD_VERSION}"
  tarball="containerd-static-${CONTAINERD_VERSION}-linux-${arch}.tar.gz"
  log "downloading containerd ${CONTAINERD_VERSION} (static release build) and runc ${RUNC_VERSION}"
  fetch_checked "${base}/${tarball}" "${RUNTIME_STAGE}/${tarball}" "${base}/${tarball}.sha256sum"
  mkdir -p "${RUNTIME_STAGE}/root"
  tar -C "${RUNTIME_STAGE}/root" -xzf "${RUNTIME_STAGE}/${tarball}"
  fetch_checked "https://raw.githubusercontent.com/containerd/containerd/v${CONTAINERD_VERSION}/containerd.service" \
    "${RUNTIME_STAGE}/containerd.service"
  # runc.sha256sum lists every architecture.
  fetch_checked "https://github.com/opencontainers/runc/releases/download/v${RUNC_VERSION}/runc.${arch}" \
    "${RUNTIME_STAGE}/runc.${arch}" "https://github.com/opencontainers/runc/releases/download/v${RUNC_VERSION}/runc.sha256sum"
  install -m 0755 "${RUNTIME_STAGE}/runc.${arch}" "${RUNTIME_STAGE}/runc"
}

# replace_executable SOURCE DEST: SOURCE's copy put at DEST by a rename. A running executable's file cannot
# be opened for writing (ETXTBSY: running shims hold containerd-shim-runc-v2, running containers runc), but it
# can be replaced: the rename gives DEST a new inode and the running processes keep the old one.
replace_executable() {
  install -m 0755 "$1" "$2.new" && mv -f "$2.new" "$2"
}

# restore_runtime BACKUP WAS_ACTIVE: the binaries kept in BACKUP back in place, containerd started again if it ran.
restore_runtime() {
  local backup="$1" was_active="$2" file
  log "putting containerd $(cat "${backup}/version" 2>/dev/null || echo '(none)') back"
  for file in "${backup}"/bin/*; do
    [[ -e "${file}" ]] || continue
    replace_executable "${file}" "${RUNTIME_BIN}/${file##*/}" || log "could not put ${file##*/} back"
  done
  if [[ -f "${backup}/runc" ]]; then
    replace_executable "${backup}/runc" "${RUNC_PATH}" || log "could not put runc back"
  fi
  if [[ -f "${backup}/containerd.service" ]]; then
    put_file "${CONTAINERD_UNIT}" 0644 <"${backup}/containerd.service"
    systemctl daemon-reload || log "systemctl daemon-reload failed"
  fi
  if ((was_active)); then
    systemctl start containerd || log "containerd did not start again"
  fi
}

# install_staged_runtime: every staged binary in its place; fails on the first that cannot be placed.
install_staged_runtime() {
  local file
  for file in "${RUNTIME_STAGE}"/root/bin/*; do
    replace_executable "${file}" "${RUNTIME_BIN}/${file##*/}" || return 1
  done
  replace_executable "${RUNTIME_STAGE}/runc" "${RUNC_PATH}"
}

# cri_serving: whether containerd's CRI plugin loaded. containerd starts, and systemd reports it started, with a
# plugin that failed to load (a bad [plugins."io.containerd.cri.v1.runtime"] section, a missing snapshotter): the
# daemon runs without it and the kubelet cannot reach it. `ctr plugins ls` (from the same release) lists every
# plugin with STATUS ok, or error/skip where it failed (containerd cmd/ctr/commands/plugins/plugins.go); the CRI
# is TYPE io.containerd.grpc.v1, ID cri.
cri_serving() {
  "${RUNTIME_BIN}"/ctr plugins ls 2>/dev/null \
    | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { found = 1; ok = ($NF == "ok") } END { exit !(found && ok) }'
}

# wait_for_cri: up to a minute for containerd to answer with its CRI loaded (it answers within seconds of its start).
wait_for_cri() {
  local attempt
  for ((attempt = 0; attempt < 30; attempt++)); do
    cri_serving && return 0
    sleep 2
  done
  return 1
}

# swap_runtime: the staged runtime in place of the installed one (see above); dies, with the old one
# running again, if anything fails, the new one's CRI not loading included.
swap_runtime() {
  local backup was_active=0 name
  [[ -n "${RUNTIME_STAGE}" ]] || die "swap_runtime before stage_runtime"
  backup="$(mktemp -d)"
  installed_containerd_version >"${backup}/version"
  mkdir -p "${backup}/bin"
  for name in "${RUNTIME_STAGE}"/root/bin/*; do
    if [[ -e "${RUNTIME_BIN}/${name##*/}" ]]; then
      cp -a "${RUNTIME_BIN}/${name##*/}" "${backup}/bin/"
    fi
  done
  if [[ -x "${RUNC_PATH}" ]]; then
    cp -a "${RUNC_PATH}" "${backup}/runc"
  fi
  if [[ -f "${CONTAINERD_UNIT}" ]]; then
    cp -a "${CONTAINERD_UNIT}" "${backup}/containerd.service"
  fi
  if systemctl is-active --quiet containerd; then
    was_active=1
    systemctl stop containerd
  fi
  # From here on every command is checked: nothing may stop the script with the runtime half-swapped.
  if ! { mkdir -p "${RUNTIME_BIN}" "${RUNC_PATH%/*}" \
    && install_staged_runtime \
    && [[ "$(installed_containerd_version)" == "v${CONTAINERD_VERSION}" ]] \
    && [[ "$(installed_runc_version)" == "v${RUNC_VERSION}" ]] \
    && put_file "${CONTAINERD_UNIT}" 0644 <"${RUNTIME_STAGE}/containerd.service" \
    && systemctl daemon-reload; }; then
    restore_runtime "${backup}" "${was_active}"
    die "containerd ${CONTAINERD_VERSION} / runc ${RUNC_VERSION} did not install; the previous runtime is back"
  fi
  if ((was_active)) && ! systemctl start containerd; then
    restore_runtime "${backup}" "${was_active}"
    die "containerd ${CONTAINERD_VERSION} did not start; the previous runtime is back"
  fi
  if ((was_active)) && ! wait_for_cri; then
    # It runs: stopped first, or restore_runtime's start would leave the new binaries running.
    systemctl stop containerd || log "systemctl stop containerd failed"
    restore_runtime "${backup}" "${was_active}"
    die "containerd ${CONTAINERD_VERSION} started without its CRI plugin (ctr plugins ls); the previous runtime is back"
  fi
  rm -rf "${RUNTIME_STAGE}" "${backup}"
  RUNTIME_STAGE=""
  log "installed containerd ${CONTAINERD_VERSION} and runc ${RUNC_VERSION}"
}
