"""Renders the cloud-init user-data that turns a freshly cloned Proxmox VM (Ubuntu 22.04, Rocky 9 or
CentOS 7) into a node ready for ``kubeadm init`` / ``kubeadm join``.

This module owns two pure functions and their input dataclasses:

* ``render_prepare_script`` returns ``prepare-k8s-node.sh``: an idempotent bash script that holds
  *all* node state (swap, kernel modules, sysctls, SELinux, host firewall, chrony, storage clients,
  qemu-guest-agent, containerd + runc + registry mirrors, pinned kubeadm/kubelet/kubectl). It is
  the single place that converges a node, so it can be re-run by hand or by automation and a second
  run changes nothing.
* ``render_user_data`` returns the ``#cloud-config`` document. Cloud-init only does what it has
  modules for and what is identity rather than state: admin user + keys + sudo, hostname/fqdn,
  timezone, password SSH off. It embeds the script with ``write_files`` and runs it from
  ``runcmd``; a failing script makes ``cloud-init status`` report an error.

Values (versions, images) are passed in by the caller from ``config.compat``; nothing here imports
it and nothing here hard-codes a Kubernetes, containerd or runc version.

Design choices, with their sources:

* containerd is installed from the upstream *static* release tarball on every distro, not from
  Docker's ``containerd.io`` package. The release notes say the dynamic tarball needs a recent glibc
  (2.35 for 2.2.x, 2.31 for 2.0.x) and that the static one is for distributions without it (Rocky 9
  has 2.34, CentOS 7 has 2.17); Docker's repository does not carry every containerd patch and no
  longer publishes for EL7, so only the tarball gives the *exact* ``containerd_version`` pinned in
  ``config.compat`` - the same one the Windows nodes run - on all three distros.
  Sources: https://github.com/containerd/containerd/releases/tag/v2.2.0 ("Which file should I
  download?"), https://github.com/containerd/containerd/blob/main/docs/getting-started.md
  ("Option 1: From the official binaries": tarball under /usr/local, containerd.service in
  /usr/local/lib/systemd/system, runc from opencontainers/runc releases in /usr/local/sbin).
* runc is the opencontainers release binary at ``LinuxNodeInit.runc_version``, pinned in
  ``config.compat`` next to the containerd release it ships with (containerd docs/RUNC.md recommends
  a runc at least as new as the one in the release's ``script/setup/runc-version``). Every download
  is checked against the ``.sha256sum`` published next to it.
* Downloads cross the border from Hong Kong: they are retried with back-off, and skipped entirely
  when the wanted version is already installed, so re-runs cost no traffic.
* The CNI plugins come from the ``kubernetes-cni`` package that kubelet/kubeadm from pkgs.k8s.io
  still depend on (kubernetes/release issue #4156, open in late 2025); Calico adds its own.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Iterable

import yaml
from render.checks import DNS_LABEL, HTTP_ENDPOINT, POSIX_USER, REGISTRY_HOST, is_host

PREPARE_SCRIPT_PATH = "/usr/local/sbin/prepare-k8s-node.sh"
CONTAINERD_CONFIG_PATH = "/etc/containerd/config.toml"
CONTAINERD_CERTS_DIR = "/etc/containerd/certs.d"
MANAGED_MARKER = "# managed by prepare-k8s-node.sh"

# Neighbour-table garbage-collection thresholds from the project's design notes (4096/8192/16384).
# Kernel defaults are 128/512/1024; gc_thresh3 is the hard limit of entries. Meaning of the knobs:
# https://www.kernel.org/doc/Documentation/networking/ip-sysctl.rst (neigh/default/gc_thresh1..3).
NEIGHBOUR_GC_THRESHOLDS = (4096, 8192, 16384)

_HEREDOC_END = "__PREPARE_K8S_NODE_EOF__"


@dataclass(frozen=True)
class RegistryMirror:
    upstream: str          # "docker.io", "registry.k8s.io", "mcr.microsoft.com", "ghcr.io"
    endpoint: str          # e.g. "https://harbor.hk.example.internal/v2/dockerhub"
    override_path: bool    # containerd hosts.toml override_path (true for Harbor proxy-cache projects)


@dataclass(frozen=True)
class LinuxNodeInit:
    hostname: str
    fqdn: str | None
    distro: str                    # "ubuntu22" | "rocky9" | "centos7"
    package_manager: str           # "apt" | "dnf" | "yum"   (comes from config.compat.DISTROS)
    kubernetes_version: str        # "1.34.2"  (full patch)
    containerd_version: str        # from config.compat.KUBERNETES[minor].containerd
    sandbox_image: str             # from config.compat (pause image)
    admin_user: str
    ssh_authorized_keys: tuple[str, ...]
    ntp_servers: tuple[str, ...]
    registry_mirrors: tuple[RegistryMirror, ...]
    runc_version: str              # from config.compat.KUBERNETES[minor].runc
    timezone: str = "Asia/Hong_Kong"


@dataclass(frozen=True)
class _DistroFacts:
    family: str                 # "debian" | "rhel"
    package_manager: str
    chrony_conf: str            # compiled-in chrony.conf location of the distro's chrony build
    chrony_service: str
    chrony_driftfile: str
    packages: tuple[str, ...]   # distro packages the node needs (kube packages come later)


# chrony.conf: Ubuntu's chronyd reads /etc/chrony/chrony.conf
# (https://manpages.ubuntu.com/manpages/jammy/en/man8/chronyd.8.html), RHEL/CentOS read
# /etc/chrony.conf (chrony.conf(5), https://manpath.be/c7/5/chrony.conf). Service unit is
# chrony.service on Ubuntu, chronyd.service on the RHEL family.
# Longhorn needs open-iscsi with iscsid running and an NFSv4 client for RWX volumes
# (https://longhorn.io/docs/latest/deploy/install/#installation-requirements).
_DISTROS: dict[str, _DistroFacts] = {
    "ubuntu22": _DistroFacts(
        family="debian", package_manager="apt",
        chrony_conf="/etc/chrony/chrony.conf", chrony_service="chrony",
        chrony_driftfile="/var/lib/chrony/chrony.drift",
        packages=("ca-certificates", "curl", "gpg", "tar", "chrony", "open-iscsi", "nfs-common",
                  "qemu-guest-agent"),
    ),
    "rocky9": _DistroFacts(
        family="rhel", package_manager="dnf",
        chrony_conf="/etc/chrony.conf", chrony_service="chronyd",
        chrony_driftfile="/var/lib/chrony/drift",
        packages=("ca-certificates", "tar", "chrony", "iscsi-initiator-utils", "nfs-utils",
                  "qemu-guest-agent"),
    ),
    "centos7": _DistroFacts(
        family="rhel", package_manager="yum",
        chrony_conf="/etc/chrony.conf", chrony_service="chronyd",
        chrony_driftfile="/var/lib/chrony/drift",
        packages=("ca-certificates", "curl", "tar", "chrony", "iscsi-initiator-utils", "nfs-utils",
                  "qemu-guest-agent"),
    ),
}

_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_FQDN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$")
_IMAGE = re.compile(r"^[A-Za-z0-9./:_@-]+$")


def _validate(node: LinuxNodeInit) -> _DistroFacts:
    """Rejects input that would render a broken or injectable script; returns the distro facts."""
    facts = _DISTROS.get(node.distro)
    if facts is None:
        raise ValueError(f"unsupported distro {node.distro!r}; expected one of {sorted(_DISTROS)}")
    if node.package_manager != facts.package_manager:
        raise ValueError(f"{node.distro} uses {facts.package_manager}, not {node.package_manager!r}")
    if not DNS_LABEL.match(node.hostname):
        raise ValueError(f"hostname {node.hostname!r} is not a lowercase DNS label")
    if node.fqdn is not None and not (_FQDN.match(node.fqdn) and node.fqdn.split(".")[0] == node.hostname):
        raise ValueError(f"fqdn {node.fqdn!r} must be a lowercase FQDN starting with {node.hostname!r}")
    for label, version in (("kubernetes_version", node.kubernetes_version),
                           ("containerd_version", node.containerd_version),
                           ("runc_version", node.runc_version)):
        if not _VERSION.match(version):
            raise ValueError(f"{label} {version!r} must be a full MAJOR.MINOR.PATCH version")
    _containerd_major(node.containerd_version)
    if not _IMAGE.match(node.sandbox_image):
        raise ValueError(f"sandbox_image {node.sandbox_image!r} is not an image reference")
    if not POSIX_USER.match(node.admin_user) or node.admin_user == "root":
        raise ValueError(f"admin_user {node.admin_user!r} is not a valid non-root user name")
    if not node.ssh_authorized_keys:
        raise ValueError("at least one ssh_authorized_key is required: password SSH is disabled")
    for key in node.ssh_authorized_keys:
        if not key.strip() or "\n" in key or "\r" in key:
            raise ValueError("ssh_authorized_keys entries must be single, non-empty lines")
    if not node.ntp_servers:
        raise ValueError("at least one ntp_server is required")
    for server in node.ntp_servers:
        if not is_host(server):
            raise ValueError(f"ntp server {server!r} is not a host name or address")
    if "/" not in node.timezone and node.timezone != "UTC":
        raise ValueError(f"timezone {node.timezone!r} is not an IANA zone name")
    for mirror in node.registry_mirrors:
        if not REGISTRY_HOST.match(mirror.upstream):
            raise ValueError(f"registry upstream {mirror.upstream!r} is not a registry host")
        if not HTTP_ENDPOINT.match(mirror.endpoint):
            raise ValueError(f"mirror endpoint {mirror.endpoint!r} is not an http(s) URL")
    return facts


def _containerd_major(containerd_version: str) -> int:
    major = int(containerd_version.split(".", 1)[0])
    if major not in (1, 2):
        raise ValueError(f"containerd {containerd_version}: only the 1.x and 2.x config formats are known")
    return major


def _kubernetes_minor(kubernetes_version: str) -> str:
    major, minor, _patch = kubernetes_version.split(".")
    return f"v{major}.{minor}"


def _toml_string(value: str) -> str:
    """Basic TOML string; the validators above already exclude quotes, backslashes and newlines."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def containerd_config_toml(node: LinuxNodeInit) -> str:
    """The complete /etc/containerd/config.toml for the pinned containerd major.

    Only keys that differ from containerd's defaults are written; containerd merges them onto its
    built-in defaults. Table names per major, from containerd docs/cri/config.md
    (https://github.com/containerd/containerd/blob/main/docs/cri/config.md, "Config versions",
    "Cgroup Driver", "Full configuration") and docs/hosts.md ("CRI"):
    2.x: ``version = 3``, ``[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    SystemdCgroup``, ``[plugins.'io.containerd.cri.v1.images'.pinned_images] sandbox`` and
    ``[plugins.'io.containerd.cri.v1.images'.registry] config_path``;
    1.x: ``version = 2``, everything under ``[plugins."io.containerd.grpc.v1.cri"]`` with
    ``sandbox_image`` and ``registry.config_path``.
    """
    sandbox = _toml_string(node.sandbox_image)
    certs_dir = _toml_string(CONTAINERD_CERTS_DIR)
    if _containerd_major(node.containerd_version) == 2:
        return (
            f"{MANAGED_MARKER}; containerd {node.containerd_version} uses config version 3\n"
            "version = 3\n"
            "\n"
            "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n"
            f"  sandbox = {sandbox}\n"
            "\n"
            "[plugins.'io.containerd.cri.v1.images'.registry]\n"
            f"  config_path = {certs_dir}\n"
            "\n"
            "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n"
            "  default_runtime_name = \"runc\"\n"
            "\n"
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
            "  runtime_type = \"io.containerd.runc.v2\"\n"
            "\n"
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n"
            "  BinaryName = \"/usr/local/sbin/runc\"\n"
            "  SystemdCgroup = true\n"
        )
    return (
        f"{MANAGED_MARKER}; containerd {node.containerd_version} uses config version 2\n"
        "version = 2\n"
        "\n"
        "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
        f"  sandbox_image = {sandbox}\n"
        "\n"
        "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n"
        f"  config_path = {certs_dir}\n"
        "\n"
        "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
        "  default_runtime_name = \"runc\"\n"
        "\n"
        "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
        "  runtime_type = \"io.containerd.runc.v2\"\n"
        "\n"
        "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
        "  BinaryName = \"/usr/local/sbin/runc\"\n"
        "  SystemdCgroup = true\n"
    )


def _upstream_server(upstream: str) -> str:
    # Docker Hub's registry API lives on registry-1.docker.io, which is what containerd's own
    # "Setup a Local Mirror for Docker" example uses as server (docs/hosts.md).
    if upstream == "docker.io":
        return "https://registry-1.docker.io"
    return f"https://{upstream}"


def registry_hosts_toml(upstream: str, mirrors: Iterable[RegistryMirror]) -> str:
    """One certs.d/<upstream>/hosts.toml: mirrors are tried in order, then ``server`` as fallback.

    Fields from containerd docs/hosts.md (https://github.com/containerd/containerd/blob/main/docs/hosts.md):
    ``server`` (fallback after all hosts), ``[host."<url>"]`` with ``capabilities`` - a private
    mirror may pull and resolve - and ``override_path`` (API root is the URL path, as with Harbor
    proxy-cache project URLs such as https://harbor/v2/<project>).
    """
    lines = [f"{MANAGED_MARKER}; mirrors for {upstream}", f"server = {_toml_string(_upstream_server(upstream))}"]
    for mirror in mirrors:
        lines += [
            "",
            f"[host.{_toml_string(mirror.endpoint)}]",
            '  capabilities = ["pull", "resolve"]',
        ]
        if mirror.override_path:
            lines.append("  override_path = true")
    return "\n".join(lines) + "\n"


def _mirrors_by_upstream(mirrors: Iterable[RegistryMirror]) -> dict[str, list[RegistryMirror]]:
    grouped: dict[str, list[RegistryMirror]] = {}
    for mirror in mirrors:
        grouped.setdefault(mirror.upstream, []).append(mirror)
    return grouped


def _chrony_conf(node: LinuxNodeInit, facts: _DistroFacts) -> str:
    servers = "\n".join(f"server {server} iburst" for server in node.ntp_servers)
    # makestep: step the clock on the first updates after boot instead of slewing for hours, so a
    # cloned VM with a stale clock does not fail TLS checks during kubeadm join.
    return (
        f"{MANAGED_MARKER}\n"
        f"{servers}\n"
        f"driftfile {facts.chrony_driftfile}\n"
        "makestep 1.0 3\n"
        "rtcsync\n"
    )


def _sysctl_conf() -> str:
    gc1, gc2, gc3 = NEIGHBOUR_GC_THRESHOLDS
    # bridge-nf-call-*: kubeadm install docs, "Letting iptables see bridged traffic";
    # ip_forward: required by kubeadm's preflight and by the pod network.
    return (
        f"{MANAGED_MARKER}\n"
        "net.bridge.bridge-nf-call-iptables = 1\n"
        "net.bridge.bridge-nf-call-ip6tables = 1\n"
        "net.ipv4.ip_forward = 1\n"
        f"net.ipv4.neigh.default.gc_thresh1 = {gc1}\n"
        f"net.ipv4.neigh.default.gc_thresh2 = {gc2}\n"
        f"net.ipv4.neigh.default.gc_thresh3 = {gc3}\n"
        f"net.ipv6.neigh.default.gc_thresh1 = {gc1}\n"
        f"net.ipv6.neigh.default.gc_thresh2 = {gc2}\n"
        f"net.ipv6.neigh.default.gc_thresh3 = {gc3}\n"
    )


def _kubernetes_repo_file(node: LinuxNodeInit, facts: _DistroFacts) -> tuple[str, str]:
    """(path, content) of the per-minor pkgs.k8s.io repository definition.

    Formats from https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/install-kubeadm/
    (Debian-based: keyring in /etc/apt/keyrings + sources list; Red Hat-based: repo file whose
    ``exclude`` keeps `yum update` from upgrading the kube packages).
    """
    minor = _kubernetes_minor(node.kubernetes_version)
    base = f"https://pkgs.k8s.io/core:/stable:/{minor}"
    if facts.family == "debian":
        return (
            "/etc/apt/sources.list.d/kubernetes.list",
            f"{MANAGED_MARKER}\n"
            f"deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] {base}/deb/ /\n",
        )
    return (
        "/etc/yum.repos.d/kubernetes.repo",
        f"{MANAGED_MARKER}\n"
        "[kubernetes]\n"
        "name=Kubernetes\n"
        f"baseurl={base}/rpm/\n"
        "enabled=1\n"
        "gpgcheck=1\n"
        f"gpgkey={base}/rpm/repodata/repomd.xml.key\n"
        "exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni\n",
    )


def _heredoc(content: str) -> str:
    if _HEREDOC_END in content:
        raise ValueError("file content collides with the heredoc delimiter")
    if not content.endswith("\n"):
        content += "\n"
    return f"<<'{_HEREDOC_END}'\n{content}{_HEREDOC_END}"


def _registry_hosts_function(node: LinuxNodeInit) -> str:
    grouped = _mirrors_by_upstream(node.registry_mirrors)
    writes = []
    for upstream, mirrors in grouped.items():
        writes.append(
            f'  put_file "${{certs_dir}}/{upstream}/hosts.toml" 0644 {_heredoc(registry_hosts_toml(upstream, mirrors))}\n'
        )
    # A space-separated string, not an array: bash 4.2 (CentOS 7) treats "${empty[*]}" as unbound.
    wanted = " ".join(grouped)
    return (
        "# write_registry_hosts DIR: one hosts.toml per mirrored upstream registry, and removal of the\n"
        "# hosts.toml files this script wrote earlier for upstreams that are no longer mirrored.\n"
        "# containerd re-reads this directory on every pull; no restart is needed (docs/hosts.md).\n"
        "write_registry_hosts() {\n"
        '  local certs_dir="$1" hosts_file upstream first_line\n'
        f"  local wanted={shlex.quote(' ' + wanted + ' ')}\n"
        '  mkdir -p "${certs_dir}"\n'
        + "".join(writes)
        + '  for hosts_file in "${certs_dir}"/*/hosts.toml; do\n'
        '    [[ -f "${hosts_file}" ]] || continue\n'
        '    first_line=""\n'
        '    read -r first_line <"${hosts_file}" || true\n'
        '    [[ "${first_line}" == "${MANAGED_MARK}"* ]] || continue\n'
        '    upstream="$(basename "$(dirname "${hosts_file}")")"\n'
        '    if [[ "${wanted}" != *" ${upstream} "* ]]; then\n'
        '      log "removing mirror config for ${upstream}"\n'
        '      rm -f "${hosts_file}"\n'
        '      rmdir --ignore-fail-on-non-empty "$(dirname "${hosts_file}")"\n'
        "    fi\n"
        "  done\n"
        "}\n"
    )


def render_upgrade_script(node: LinuxNodeInit, first_control_plane: bool) -> str:
    """The node's side of a rolling upgrade to ``node.kubernetes_version`` (bash, idempotent): the
    preparation's helpers and package syntax, entered at ``upgrade_node``. It names only what an upgrade
    needs (distro, version, repository), so other node settings never re-run it."""
    facts = _validate(node)
    repo_path, repo_content = _kubernetes_repo_file(node, facts)
    q = shlex.quote
    header = f"""#!/usr/bin/env bash
# upgrade-k8s-node.sh - moves this node to Kubernetes {node.kubernetes_version} (kubeadm upgrade).
# Rendered by render/cloud_init.py for {node.hostname} ({node.distro}); change the renderer, not this copy.
set -Eeuo pipefail
umask 022

readonly ENTRY_POINT=upgrade_node
readonly NODE_HOSTNAME={q(node.hostname)}
readonly PKG_MANAGER={q(facts.package_manager)}
readonly K8S_VERSION={q(node.kubernetes_version)}
readonly KUBERNETES_REPO_FILE={q(repo_path)}
readonly UPGRADE_FIRST_CONTROL_PLANE={int(first_control_plane)}
"""
    body = (_HELPERS + _UPGRADE_BODY + _ENTRY).replace("@@KUBERNETES_REPO@@", _heredoc(repo_content))
    return header + body


def render_prepare_script(node: LinuxNodeInit, install_kubernetes: bool = True) -> str:
    """The idempotent node-preparation script (bash, ``set -euo pipefail``), logging to stdout.

    ``install_kubernetes=False`` renders the converge that later runs over SSH: everything but the
    kubelet/kubeadm/kubectl installation, and no Kubernetes version in its text. A node keeps the
    version it was created with until the upgrade chain moves it (components/upgrade.py), so a version
    change in the stack re-runs nothing on the nodes by itself.
    """
    facts = _validate(node)
    minor = _kubernetes_minor(node.kubernetes_version)
    repo_path, repo_content = _kubernetes_repo_file(node, facts)
    if not install_kubernetes:
        minor, repo_content = "", ""
    q = shlex.quote
    header = f"""#!/usr/bin/env bash
# prepare-k8s-node.sh - converges this VM into a node ready for `kubeadm init` / `kubeadm join`.
# Rendered by render/cloud_init.py for {node.hostname} ({node.distro}); change the renderer, not this copy.
# Idempotent: every step looks at the current state first, so a second run changes nothing.
# Exits non-zero on the first failure, which cloud-init reports as an error.
set -Eeuo pipefail
umask 022

readonly NODE_HOSTNAME={q(node.hostname)}
readonly NODE_DISTRO={q(node.distro)}
readonly OS_FAMILY={q(facts.family)}
readonly PKG_MANAGER={q(facts.package_manager)}
readonly ENTRY_POINT=main
readonly INSTALL_KUBERNETES={int(install_kubernetes)}
readonly K8S_VERSION={q(node.kubernetes_version if install_kubernetes else "")}
readonly K8S_MINOR={q(minor)}
readonly CONTAINERD_VERSION={q(node.containerd_version)}
readonly RUNC_VERSION={q(node.runc_version)}
readonly -a DISTRO_PACKAGES=({" ".join(q(p) for p in facts.packages)})
readonly CHRONY_CONF={q(facts.chrony_conf)}
readonly CHRONY_SERVICE={q(facts.chrony_service)}
readonly CONTAINERD_CONFIG={q(CONTAINERD_CONFIG_PATH)}
readonly CONTAINERD_CERTS_DIR={q(CONTAINERD_CERTS_DIR)}
readonly KUBERNETES_REPO_FILE={q(repo_path)}
readonly MANAGED_MARK={q(MANAGED_MARKER)}
"""
    body = _SCRIPT_BODY
    files = {
        "@@MODULES_LOAD@@": _heredoc(f"{MANAGED_MARKER}\noverlay\nbr_netfilter\n"),
        "@@SYSCTL@@": _heredoc(_sysctl_conf()),
        "@@CHRONY_CONF@@": _heredoc(_chrony_conf(node, facts)),
        "@@NM_CALICO@@": _heredoc(
            f"{MANAGED_MARKER}\n[keyfile]\n"
            "unmanaged-devices=interface-name:cali*;interface-name:tunl*;interface-name:vxlan.calico;"
            "interface-name:vxlan-v6.calico;interface-name:wireguard.cali;interface-name:wg-v6.cali\n"
        ),
        "@@CONTAINERD_CONFIG@@": _heredoc(containerd_config_toml(node)),
        "@@KUBERNETES_REPO@@": _heredoc(repo_content),
        "@@REGISTRY_HOSTS_FUNCTION@@": _registry_hosts_function(node),
    }
    for placeholder, text in files.items():
        if placeholder not in body:
            raise AssertionError(f"script template lost {placeholder}")
        body = body.replace(placeholder, text)
    return header + body


# The body is plain bash. File contents are spliced in at the @@...@@ markers as quoted heredocs,
# so nothing in them is expanded by the shell.
_HELPERS = r"""
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
      if ((APT_INDEX_FRESH == 0)); then
        apt_get update
        APT_INDEX_FRESH=1
      fi
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
"""

# What an upgrade runs after the helpers, entered at upgrade_node (render_upgrade_script).
_UPGRADE_BODY = r"""
# The node's side of a rolling upgrade, in the kubeadm upgrade guide's order
# (https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-upgrade/): kubeadm first (the
# repository of the new minor, unhold, the pinned version, hold again), then `kubeadm upgrade apply
# vX.Y.Z -y` on the first control-plane node or `kubeadm upgrade node` on every other node, then kubelet
# and kubectl, `systemctl daemon-reload` and a kubelet restart. The chain around it
# (components/upgrade.py) drains the node before and uncordons it after, one node at a time.
# upgrade_kube_packages PACKAGE...: moves the named packages to K8S_VERSION; a package already there is left.
upgrade_kube_packages() {
  local package
  local -a stale=()
  for package in "$@"; do
    [[ "$(installed_kube_version "${package}")" == "${K8S_VERSION}" ]] || stale+=("${package}")
  done
  ((${#stale[@]} > 0)) || return 0
  put_file "${KUBERNETES_REPO_FILE}" 0644 @@KUBERNETES_REPO@@
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

upgrade_node() {
  [[ "${EUID}" -eq 0 ]] || die "run as root"
  log "upgrading ${NODE_HOSTNAME} to Kubernetes ${K8S_VERSION}"
  upgrade_kube_packages kubeadm
  if ((UPGRADE_FIRST_CONTROL_PLANE)); then
    # Re-running after a failure later in this function must not apply the same upgrade twice.
    if [[ "$(cluster_kubernetes_version)" == "v${K8S_VERSION}" ]]; then
      log "the cluster configuration is already at v${K8S_VERSION}"
    else
      kubeadm upgrade apply "v${K8S_VERSION}" --yes
    fi
  else
    kubeadm upgrade node
  fi
  upgrade_kube_packages kubelet kubectl
  # The kubelet reports the version it runs on its Node (the node's own credentials may read it); a
  # run that stopped between the package and the restart restarts it here.
  if [[ "$(running_kubelet_version)" != "v${K8S_VERSION}" ]]; then
    systemctl daemon-reload
    systemctl restart kubelet
  fi
  log "${NODE_HOSTNAME} runs kubelet ${K8S_VERSION}"
}

"""

_ENTRY = r"""
# Sourcing the script (tests do) defines the functions without running anything.
# Run the entry point (main, or upgrade_node) when executed, as a file (cloud-init) or as `bash -c`
# (the steps over SSH, where BASH_SOURCE is empty: hence the default); not when sourced.
if [[ "${BASH_SOURCE[0]:-$0}" == "$0" ]]; then
  "${ENTRY_POINT}" "$@"
fi
"""

_SCRIPT_BODY = _HELPERS + r"""
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
      if ((APT_INDEX_FRESH == 0)); then
        apt_get update
        APT_INDEX_FRESH=1
      fi
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
  put_file /etc/modules-load.d/k8s.conf 0644 @@MODULES_LOAD@@
  for module in overlay br_netfilter; do
    if [[ ! -d "/sys/module/${module}" ]]; then
      log "loading kernel module ${module}"
      modprobe "${module}"
    fi
  done
  put_file /etc/sysctl.d/99-kubernetes.conf 0644 @@SYSCTL@@
  while read -r key _ value; do
    [[ -n "${key}" && "${key}" != \#* ]] || continue
    if [[ "$(sysctl -n "${key}")" != "${value}" ]]; then
      log "sysctl ${key}=${value}"
      sysctl -q -w "${key}=${value}"
    fi
  done </etc/sysctl.d/99-kubernetes.conf
}

# selinux_config_permissive FILE: SELINUX=enforcing -> permissive in an /etc/selinux/config file.
selinux_config_permissive() {
  if grep -q '^SELINUX=enforcing$' "$1"; then
    sed -i 's/^SELINUX=enforcing$/SELINUX=permissive/' "$1"
    log "SELinux set to permissive in $1"
  fi
}

# kubeadm install docs (Red Hat-based distributions): "Set SELinux to permissive mode ... This is
# required to allow containers to access the host filesystem; for example, some cluster network
# plugins require that."
configure_selinux() {
  if [[ "${OS_FAMILY}" != rhel ]]; then
    return 0
  fi
  if command -v getenforce >/dev/null && [[ "$(getenforce)" == Enforcing ]]; then
    log "switching SELinux to permissive now"
    setenforce 0
  fi
  if [[ -f /etc/selinux/config ]]; then
    selinux_config_permissive /etc/selinux/config
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
  if command -v ufw >/dev/null && ufw status | grep -q '^Status: active'; then
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
  put_file /etc/NetworkManager/conf.d/calico.conf 0644 @@NM_CALICO@@
  if ((CHANGED)); then
    systemctl reload NetworkManager
  fi
}

configure_chrony() {
  put_file "${CHRONY_CONF}" 0644 @@CHRONY_CONF@@
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

release_arch() {
  case "$(uname -m)" in
    x86_64) echo amd64 ;;
    aarch64) echo arm64 ;;
    *) die "unsupported architecture $(uname -m)" ;;
  esac
}

installed_containerd_version() {
  if [[ -x /usr/local/bin/containerd ]]; then
    # "containerd github.com/containerd/containerd/v2 v2.1.4 <commit>"
    /usr/local/bin/containerd --version | awk '{ print $3 }'
  fi
}

installed_runc_version() {
  if [[ -x /usr/local/sbin/runc ]]; then
    /usr/local/sbin/runc --version | awk 'NR == 1 { print "v" $3 }'
  fi
}

install_containerd() {
  local arch workdir tarball
  arch="$(release_arch)"
  if [[ "$(installed_containerd_version)" != "v${CONTAINERD_VERSION}" ]]; then
    workdir="$(mktemp -d)"
    tarball="containerd-static-${CONTAINERD_VERSION}-linux-${arch}.tar.gz"
    log "installing containerd ${CONTAINERD_VERSION} (static release build)"
    fetch "https://github.com/containerd/containerd/releases/download/v${CONTAINERD_VERSION}/${tarball}" \
      "${workdir}/${tarball}"
    fetch "https://github.com/containerd/containerd/releases/download/v${CONTAINERD_VERSION}/${tarball}.sha256sum" \
      "${workdir}/${tarball}.sha256sum"
    (cd "${workdir}" && sha256sum -c "${tarball}.sha256sum")
    if systemctl is-active --quiet containerd; then
      systemctl stop containerd
    fi
    tar -C /usr/local -xzf "${workdir}/${tarball}"
    fetch "https://raw.githubusercontent.com/containerd/containerd/v${CONTAINERD_VERSION}/containerd.service" \
      "${workdir}/containerd.service"
    put_file /usr/local/lib/systemd/system/containerd.service 0644 <"${workdir}/containerd.service"
    systemctl daemon-reload
    rm -rf "${workdir}"
  fi
  [[ -f /usr/local/lib/systemd/system/containerd.service ]] || die "containerd.service is missing"

  if [[ "$(installed_runc_version)" != "v${RUNC_VERSION}" ]]; then
    workdir="$(mktemp -d)"
    log "installing runc ${RUNC_VERSION}"
    fetch "https://github.com/opencontainers/runc/releases/download/v${RUNC_VERSION}/runc.${arch}" \
      "${workdir}/runc.${arch}"
    fetch "https://github.com/opencontainers/runc/releases/download/v${RUNC_VERSION}/runc.sha256sum" \
      "${workdir}/runc.sha256sum"
    # runc.sha256sum lists every architecture; check only the binary that was downloaded.
    (cd "${workdir}" && grep -E "[ *]runc[.]${arch}\$" runc.sha256sum | sha256sum -c -)
    install -m 0755 "${workdir}/runc.${arch}" /usr/local/sbin/runc
    rm -rf "${workdir}"
  fi
}

@@REGISTRY_HOSTS_FUNCTION@@
# write_containerd_config PATH: sets CHANGED like put_file.
write_containerd_config() {
  put_file "$1" 0644 @@CONTAINERD_CONFIG@@
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


# (installed_kube_version and the pinning syntax: see _HELPERS)
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
  put_file "${KUBERNETES_REPO_FILE}" 0644 @@KUBERNETES_REPO@@
  if ((CHANGED)); then
    APT_INDEX_FRESH=0
  fi

  for package in kubelet kubeadm kubectl; do
    installed="$(installed_kube_version "${package}")"
    if [[ -z "${installed}" ]]; then
      missing+=("${package}")
    elif [[ "${installed}" != "${K8S_VERSION}" ]]; then
      die "${package} ${installed} is installed, ${K8S_VERSION} wanted: upgrade through the kubeadm upgrade procedure"
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

# The kubelet restarts every few seconds until kubeadm init/join configures it; that is expected
# (kubeadm install docs). Enabled only: kubeadm starts it.
enable_kubelet() {
  if ! systemctl is-enabled --quiet kubelet; then
    systemctl enable kubelet
  fi
}

main() {
  [[ "${EUID}" -eq 0 ]] || die "run as root"
  log "preparing ${NODE_HOSTNAME} (${NODE_DISTRO}) for Kubernetes with containerd ${CONTAINERD_VERSION}"
  install_base_packages
  start_guest_agent
  disable_swap
  configure_kernel
  configure_selinux
  disable_host_firewall
  configure_networkmanager
  configure_chrony
  configure_storage_clients
  install_containerd
  configure_containerd
  if ((INSTALL_KUBERNETES)); then
    install_kubernetes_packages
  else
    log "kubelet, kubeadm and kubectl stay at the installed $(installed_kube_version kubelet) (upgrades: the upgrade chain)"
  fi
  enable_kubelet
  log "node is ready for kubeadm init/join"
}

""" + _ENTRY


# libyaml's emitter when PyYAML has it (its wheels do): the same output, several times faster per node.
class _LiteralDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Emits multi-line strings as literal blocks so the embedded script stays readable."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.nodes.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _represent_str)


def render_user_data(node: LinuxNodeInit) -> str:
    """The ``#cloud-config`` user-data for a Proxmox ``cicustom`` user snippet.

    Proxmox ignores its own ciuser/sshkeys when a user snippet is given, so the admin user is
    created here. Module keys from https://cloudinit.readthedocs.io/en/latest/reference/modules.html
    (Users and Groups: ``users`` with ``sudo``/``lock_passwd``/``ssh_authorized_keys``; Set
    Hostname: ``hostname``/``fqdn``/``prefer_fqdn_over_hostname``; Update Etc Hosts:
    ``manage_etc_hosts``; Timezone; Set Passwords: ``ssh_pwauth``; SSH: ``disable_root``;
    Write Files; Runcmd). The result is checked with ``cloud-init schema`` in the tests.
    """
    _validate(node)
    script = render_prepare_script(node)
    config: dict[str, object] = {"hostname": node.hostname}
    if node.fqdn:
        config["fqdn"] = node.fqdn
    config.update({
        # The short name is the Kubernetes node name; keep it even when an FQDN is set.
        "prefer_fqdn_over_hostname": False,
        "manage_etc_hosts": True,
        "timezone": node.timezone,
        "ssh_pwauth": False,
        "disable_root": True,
        "users": [{
            "name": node.admin_user,
            "shell": "/bin/bash",
            "lock_passwd": True,
            "sudo": "ALL=(ALL) NOPASSWD:ALL",
            "ssh_authorized_keys": list(node.ssh_authorized_keys),
        }],
        "write_files": [{
            "path": PREPARE_SCRIPT_PATH,
            "owner": "root:root",
            "permissions": "0755",
            "content": script,
        }],
        "runcmd": [[PREPARE_SCRIPT_PATH]],
    })
    body = yaml.dump(config, Dumper=_LiteralDumper, sort_keys=False, default_flow_style=False,
                     width=4096, allow_unicode=False)
    return "#cloud-config\n" + body
