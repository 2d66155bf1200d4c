"""containerd as both operating systems configure it: the config.toml of a Linux and of a Windows node, the
registry mirrors' hosts.toml files (the same text on both), and the release the Windows preparation
downloads. Pure: the node renderers (render/linux_node.py for Linux, render/windows_bootstrap.py for Windows)
embed the text.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

# The first line of every file the node scripts own: prepare-k8s-node.sh on Linux and
# windows-containerd.ps1 on Windows remove a stale hosts.toml only when it starts with it.
MANAGED_MARKER = "# managed by prepare-k8s-node.sh"
# Where each OS's containerd reads the registry hosts (containerd docs/hosts.md, config_path). On Windows
# next to the CNI directories, on the system drive, so containerd's config names no path under
# %ProgramFiles% (whose value the renderer cannot know).
LINUX_CERTS_DIR = "/etc/containerd/certs.d"
WINDOWS_CERTS_DIR = r"C:\etc\containerd\certs.d"


@dataclass(frozen=True)
class RegistryMirror:
    upstream: str          # "docker.io", "registry.k8s.io", "mcr.microsoft.com", "ghcr.io"
    endpoint: str          # e.g. "https://harbor.hk.example.internal/v2/dockerhub"
    override_path: bool    # containerd hosts.toml override_path (true for Harbor proxy-cache projects)
    ca_certificate: str | None = None   # PEM of the CA of the mirror's certificate, when not a public one


# The mirrors' CAs, each distinct one once (a site's mirrors usually share one), in a folder of certs.d that no
# registry is named after, each named by its SHA-256; a mirror's hosts.toml names its CA relative to itself, as
# containerd takes a relative `ca` path from the hosts.toml's directory (core/remotes/docker/config/hosts.go
# makeAbsPath), so the same text serves both OSes. Each starts with MANAGED_MARKER, which PEM readers skip (Go
# encoding/pem Decode finds the first BEGIN line).
MIRROR_CA_DIR = "_mirror-cas"


def mirror_ca_name(ca_certificate: str) -> str:
    return hashlib.sha256(ca_certificate.strip().encode()).hexdigest()[:16] + ".crt"


def containerd_major(containerd_version: str) -> int:
    major = int(containerd_version.split(".", 1)[0])
    if major not in (1, 2):
        raise ValueError(f"containerd {containerd_version}: only the 1.x and 2.x config formats are known")
    return major


def _toml_string(value: str) -> str:
    """Basic TOML string; the validators above already exclude quotes, backslashes and newlines."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def linux_config_toml(sandbox_image: str, containerd_version: str) -> str:
    """A Linux node's complete /etc/containerd/config.toml for the containerd major of ``containerd_version``.

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
    sandbox = _toml_string(sandbox_image)
    certs_dir = _toml_string(LINUX_CERTS_DIR)
    if containerd_major(containerd_version) == 2:
        return (
            # The major, not the release: a runtime pin change must not rewrite (and restart) every node's
            # containerd at once; the upgrade chain moves the binaries node by node.
            f"{MANAGED_MARKER}; containerd 2.x uses config version 3\n"
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
        f"{MANAGED_MARKER}; containerd 1.x uses config version 2\n"
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
        if mirror.ca_certificate:
            lines.append(f"  ca = {_toml_string(f'../{MIRROR_CA_DIR}/{mirror_ca_name(mirror.ca_certificate)}')}")
    return "\n".join(lines) + "\n"


def registry_hosts_files(mirrors: Iterable[RegistryMirror]) -> dict[str, str]:
    """certs.d/<upstream>/hosts.toml per mirrored upstream, in the order the upstreams first appear: the
    same text on both operating systems."""
    grouped: dict[str, list[RegistryMirror]] = {}
    for mirror in mirrors:
        grouped.setdefault(mirror.upstream, []).append(mirror)
    return {upstream: registry_hosts_toml(upstream, group) for upstream, group in grouped.items()}


def registry_ca_files(mirrors: Iterable[RegistryMirror]) -> dict[str, str]:
    """MIRROR_CA_DIR's files: each distinct CA of the mirrors, by mirror_ca_name, in the order the mirrors name them."""
    return {mirror_ca_name(m.ca_certificate): f"{MANAGED_MARKER}; a registry mirror's CA\n{m.ca_certificate.strip()}\n"
            for m in mirrors if m.ca_certificate}


def windows_config_toml(pause_image: str, cni_bin_dir: str, cni_conf_dir: str) -> str:
    """A Windows node's $env:ProgramFiles\\containerd\\config.toml for containerd 2.x.

    Only non-default keys; containerd merges them onto its built-in defaults. Config version 3 table
    names from containerd docs/cri/config.md ("Config versions", "Full configuration"):
    ``[plugins.'io.containerd.cri.v1.images'.pinned_images] sandbox``,
    ``[plugins.'io.containerd.cri.v1.images'.registry] config_path`` (docs/hosts.md) and
    ``[plugins.'io.containerd.cri.v1.runtime'.cni] conf_dir``. The CNI binary directory is
    ``bin_dirs``: ``bin_dir`` is deprecated since containerd 2.1 in favour of the list
    (containerd/containerd#11311; deprecation warning quoted in gardener/gardener#13826).
    Windows paths are TOML literal strings ('...'), which keep backslashes as they are.
    """
    return (
        # The major only: a runtime pin change must not rewrite (and restart) containerd on every node at once.
        "# managed by render/windows_bootstrap.py; containerd 2.x uses config version 3\n"
        "version = 3\n"
        "\n"
        "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n"
        f"  sandbox = '{pause_image}'\n"
        "\n"
        "[plugins.'io.containerd.cri.v1.images'.registry]\n"
        f"  config_path = '{WINDOWS_CERTS_DIR}'\n"
        "\n"
        "[plugins.'io.containerd.cri.v1.runtime'.cni]\n"
        f"  bin_dirs = ['{cni_bin_dir}']\n"
        f"  conf_dir = '{cni_conf_dir}'\n"
    )


def windows_release_url(version: str) -> str:
    """The Windows release tarball of containerd ``version`` (a .sha256sum file sits beside it)."""
    return (f"https://github.com/containerd/containerd/releases/download/v{version}/"
            f"containerd-{version}-windows-amd64.tar.gz")
