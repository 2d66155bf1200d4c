"""Renders what makes a Linux node and keeps it: the cloud-init user-data that turns a freshly cloned Proxmox VM (Ubuntu
22.04, Rocky 9 or CentOS 7) into a node ready for ``kubeadm init`` / ``kubeadm join``, the script that converges it,
and its side of a rolling upgrade.

Owns ``LinuxNodeInit``, the render functions below and the files the scripts write (containerd config, hosts.toml,
chrony, sysctl, the kube package repository); the scripts are render/scripts/prepare-k8s-node.sh and upgrade-k8s-node.sh
(render/script_files.py). Versions and images come from the caller (``config.compat``); nothing here imports it or
hard-codes a Kubernetes, containerd or runc version.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from render import yaml_text
from render.containerd import (
    LINUX_CERTS_DIR,
    MANAGED_MARKER,
    MIRROR_CA_DIR,
    RegistryMirror,
    containerd_major,
    linux_config_toml,
    registry_ca_files,
    registry_hosts_files,
)
from render.host_keys import HostKeyPair, cloud_init_ssh_keys
from render.script_files import render_script
from render.security import POD_GUARD_TABLE, sysctl_lines
from vocab.checks import DNS_LABEL, HTTP_ENDPOINT, POSIX_USER, REGISTRY_HOST, check_image, check_machine, check_version, is_host

PREPARE_SCRIPT_PATH = "/usr/local/sbin/prepare-k8s-node.sh"
CONTAINERD_CONFIG_PATH = "/etc/containerd/config.toml"

# Neighbour-table garbage-collection thresholds from the project's design notes (4096/8192/16384).
# Kernel defaults are 128/512/1024; gc_thresh3 is the hard limit of entries. Meaning of the knobs:
# https://www.kernel.org/doc/Documentation/networking/ip-sysctl.rst (neigh/default/gc_thresh1..3).
NEIGHBOUR_GC_THRESHOLDS = (4096, 8192, 16384)


@dataclass(frozen=True)
class LinuxNodeInit:
    hostname: str
    fqdn: str | None
    distro: str                    # "ubuntu22" | "rocky9" | "centos7"
    package_manager: str           # "apt" | "dnf" | "yum"   (comes from config.compat.DISTROS)
    kubernetes_version: str        # "1.34.2"  (full patch)
    # containerd comes from the upstream *static* release tarball on every distro, not Docker's containerd.io package:
    # the dynamic tarball needs a recent glibc (2.35 for 2.2.x, 2.31 for 2.0.x), the static one is for distributions
    # without it (Rocky 9 has 2.34, CentOS 7 2.17), and Docker's repository does not carry every containerd patch and
    # no longer publishes for EL7, so only the tarball gives the exact pinned version - the one the Windows nodes
    # run - on all three distros. Sources:
    # https://github.com/containerd/containerd/releases/tag/v2.2.0 ("Which file should I download?"),
    # https://github.com/containerd/containerd/blob/main/docs/getting-started.md ("Option 1: From the official
    # binaries": tarball under /usr/local, containerd.service in /usr/local/lib/systemd/system, runc from
    # opencontainers/runc releases in /usr/local/sbin).
    containerd_version: str        # from config.compat.KUBERNETES[minor].containerd
    sandbox_image: str             # from config.compat (pause image)
    admin_user: str
    ssh_authorized_keys: tuple[str, ...]
    ntp_servers: tuple[str, ...]
    registry_mirrors: tuple[RegistryMirror, ...]
    # The opencontainers/runc release binary, pinned next to the containerd release it ships with (containerd
    # docs/RUNC.md recommends a runc at least as new as the release's script/setup/runc-version).
    runc_version: str              # from config.compat.KUBERNETES[minor].runc
    timezone: str                  # IANA name (the stack's `timezone`)
    selinux: str = "enforcing"     # "enforcing" | "permissive": the RHEL family's mode (security.selinux)
    pod_guard: str = ""            # render.security.pod_guard_rules, "" with security.networkPolicy off
    # (URL, SHA-256) of every runtime download config.compat pins (compat.DOWNLOADS, via compat.runtime_downloads); one
    # with no pin yet (the containerd archives: none was found offline) is checked against the .sha256sum published
    # beside it, and the script says so. Downloads may cross a slow, distant link (the reference site's crosses a
    # border): they are retried with back-off, and skipped when the wanted version is already installed, so re-runs
    # cost no traffic.
    runtime_sha256: tuple[tuple[str, str], ...] = ()


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
        # gnupg2: the etcd snapshots are encrypted with gpg (render/etcd_backup.py); BaseOS ships it, usually
        # installed already (dnf's signature checks use it). openssl: the kubelet-config step checks the serving
        # certificate with it and the serving approver reads requests with it; Debian's ca-certificates depends on
        # it, RHEL's does not.
        packages=("ca-certificates", "tar", "chrony", "iscsi-initiator-utils", "nfs-utils",
                  "qemu-guest-agent", "gnupg2", "openssl"),
    ),
    "centos7": _DistroFacts(
        family="rhel", package_manager="yum",
        chrony_conf="/etc/chrony.conf", chrony_service="chronyd",
        chrony_driftfile="/var/lib/chrony/drift",
        packages=("ca-certificates", "curl", "tar", "chrony", "iscsi-initiator-utils", "nfs-utils",
                  "qemu-guest-agent"),
    ),
}

_FQDN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$")


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
        check_version(version, label)
    containerd_major(node.containerd_version)
    check_image(node.sandbox_image, "sandbox_image")
    if node.selinux not in ("enforcing", "permissive"):
        raise ValueError(f"selinux {node.selinux!r} is neither enforcing nor permissive")
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


def _kubernetes_minor(kubernetes_version: str) -> str:
    major, minor, _patch = kubernetes_version.split(".")
    return f"v{major}.{minor}"


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
        # The kubelet runs with protectKernelDefaults and exits at start unless these are set (render/security.py).
        + "".join(f"{line}\n" for line in sysctl_lines())
    )


def _kubernetes_repo_file(node: LinuxNodeInit, facts: _DistroFacts) -> tuple[str, str]:
    """(path, content) of the per-minor pkgs.k8s.io repository definition.

    The CNI plugins come from its ``kubernetes-cni`` package, which kubelet/kubeadm from pkgs.k8s.io still depend on
    (kubernetes/release issue #4156, open in late 2025); Calico adds its own.

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


def _text(content: str) -> str:
    """A file's content as a script input: whole lines, so put_text writes what a heredoc would."""
    return content if content.endswith("\n") else content + "\n"


def render_authorized_keys(node: LinuxNodeInit) -> str:
    """The admin user's authorized_keys as the stack lists them (render/scripts/authorized-keys.sh), run over
    SSH on the node: keys added or removed later reach every node through it."""
    _validate(node)
    return render_script("authorized-keys.sh", ADMIN_USER=node.admin_user,
                         KEYS_TEXT="".join(f"{key}\n" for key in node.ssh_authorized_keys))


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _runtime_sha256(node: LinuxNodeInit) -> list[str]:
    """The RUNTIME_SHA256 lines of lib/prepare-helpers.sh: "URL DIGEST"."""
    for url, digest in node.runtime_sha256:
        if not url.startswith("https://") or " " in url or not _SHA256.match(digest):
            raise ValueError(f"runtime pin {url!r} {digest!r}: an https URL and a lower-case hex SHA-256")
    return [f"{url} {digest}" for url, digest in node.runtime_sha256]


def render_upgrade_script(node: LinuxNodeInit, first_control_plane: bool, machine: str = "unnamed",
                          etcd_pod: str | None = None) -> str:
    """The node's side of a rolling upgrade to ``node.kubernetes_version`` and the pinned containerd and runc
    (render/scripts/upgrade-k8s-node.sh, bash, idempotent): the preparation's helpers and package syntax,
    entered at ``upgrade_node``. It names only what an upgrade needs (distro, versions, repository), so
    other node settings never re-run it.
    ``etcd_pod``: a control-plane node's own etcd Pod, through which quorum is checked right before kubeadm
    restarts the member."""
    facts = _validate(node)
    check_machine(machine)
    if etcd_pod is not None and not DNS_LABEL.match(etcd_pod):
        raise ValueError(f"etcd pod {etcd_pod!r} is not a Pod name")
    repo_path, repo_content = _kubernetes_repo_file(node, facts)
    return render_script(
        "upgrade-k8s-node.sh", MACHINE=machine,
        NODE_HOSTNAME=node.hostname, PKG_MANAGER=facts.package_manager, K8S_VERSION=node.kubernetes_version,
        CONTAINERD_VERSION=node.containerd_version, RUNC_VERSION=node.runc_version,
        RUNTIME_SHA256=_runtime_sha256(node), KUBERNETES_REPO_FILE=repo_path, KUBERNETES_REPO_TEXT=_text(repo_content),
        UPGRADE_FIRST_CONTROL_PLANE=int(first_control_plane), ETCD_POD=etcd_pod or "")


def render_prepare_script(node: LinuxNodeInit, install_kubernetes: bool = True) -> str:
    """The idempotent node-preparation script (render/scripts/prepare-k8s-node.sh, bash, ``set -euo
    pipefail``), logging to stdout. It holds *all* node state (swap, kernel modules, sysctls, SELinux, host
    firewall, chrony, storage clients, qemu-guest-agent, containerd + runc + registry mirrors, pinned
    kubeadm/kubelet/kubectl) and is the single place that converges a node: re-run by hand or by automation,
    a second run changes nothing.

    ``install_kubernetes=False`` renders the converge that later runs over SSH: everything but the
    kubelet/kubeadm/kubectl and containerd/runc installations, and neither version in its text. A node
    keeps the versions it was created with until the upgrade chain moves them (components/cluster/upgrade.py),
    so a version or runtime pin change in the stack re-runs nothing on the nodes by itself.
    """
    facts = _validate(node)
    repo_path, repo_content = _kubernetes_repo_file(node, facts)
    minor = _kubernetes_minor(node.kubernetes_version)
    if not install_kubernetes:
        minor, repo_content = "", ""
    hosts, cas = registry_hosts_files(node.registry_mirrors), registry_ca_files(node.registry_mirrors)
    return render_script(
        "prepare-k8s-node.sh",
        NODE_HOSTNAME=node.hostname, NODE_TIMEZONE=node.timezone, NODE_DISTRO=node.distro, OS_FAMILY=facts.family,
        SELINUX_MODE=node.selinux,
        POD_GUARD_TABLE=POD_GUARD_TABLE, POD_GUARD_TEXT=_text(node.pod_guard) if node.pod_guard else "",
        PKG_MANAGER=facts.package_manager, INSTALL_KUBERNETES=int(install_kubernetes),
        K8S_VERSION=node.kubernetes_version if install_kubernetes else "", K8S_MINOR=minor,
        # The converge leaves the runtime as installed too: the upgrade chain moves it behind a drain.
        CONTAINERD_VERSION=node.containerd_version if install_kubernetes else "",
        RUNC_VERSION=node.runc_version if install_kubernetes else "",
        RUNTIME_SHA256=_runtime_sha256(node) if install_kubernetes else [],
        DISTRO_PACKAGES=list(facts.packages), CHRONY_CONF=facts.chrony_conf,
        CHRONY_SERVICE=facts.chrony_service, CONTAINERD_CONFIG=CONTAINERD_CONFIG_PATH,
        CONTAINERD_CERTS_DIR=LINUX_CERTS_DIR, KUBERNETES_REPO_FILE=repo_path,
        MANAGED_MARK=MANAGED_MARKER, SYSCTL_TEXT=_text(_sysctl_conf()),
        CHRONY_CONF_TEXT=_text(_chrony_conf(node, facts)),
        CONTAINERD_CONFIG_TEXT=_text(linux_config_toml(node.sandbox_image, node.containerd_version)),
        KUBERNETES_REPO_TEXT=_text(repo_content) if repo_content else "",
        MIRRORED_REGISTRIES=list(hosts),
        REGISTRY_HOSTS_TEXTS=[_text(text) for text in hosts.values()],
        MIRROR_CA_DIR=MIRROR_CA_DIR, MIRROR_CA_NAMES=list(cas), MIRROR_CA_TEXTS=list(cas.values()))


# libyaml's emitter when PyYAML has it (its wheels do): the same output, several times faster per node.
class _LiteralDumper(yaml_text.SAFE_DUMPER):  # type: ignore[misc]  # mypy types no base chosen at run time
    """Emits multi-line strings as literal blocks so the embedded script stays readable."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.nodes.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_LiteralDumper.add_representer(str, _represent_str)


def render_user_data(node: LinuxNodeInit, host_key: HostKeyPair | None = None) -> str:
    """The ``#cloud-config`` user-data for a Proxmox ``cicustom`` user snippet.

    Cloud-init does only what it has modules for and what is identity rather than state (admin user + keys + sudo,
    hostname/fqdn, timezone, password SSH off); the rest is the preparation script, embedded with ``write_files`` and
    run from ``runcmd``, so a failing script makes ``cloud-init status`` report an error.

    Proxmox ignores its own ciuser/sshkeys when a user snippet is given, so the admin user is
    created here. Module keys from https://cloudinit.readthedocs.io/en/latest/reference/modules.html
    (Users and Groups: ``users`` with ``sudo``/``lock_passwd``/``ssh_authorized_keys``; Set
    Hostname: ``hostname``/``fqdn``/``prefer_fqdn_over_hostname``; Update Etc Hosts:
    ``manage_etc_hosts``; Timezone; Set Passwords: ``ssh_pwauth``; SSH: ``disable_root``;
    Write Files; Runcmd; SSH: ``ssh_keys``, the node's own host key, render/host_keys.py). The result is checked
    with ``cloud-init schema`` in the tests.
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
        **({"ssh_keys": cloud_init_ssh_keys(host_key)} if host_key is not None else {}),
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
