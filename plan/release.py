"""What config/compat.py pins for this stack: the release row of its Kubernetes minor and the row of each
Windows build. The one place the matrix is looked up by the stack's version."""
from __future__ import annotations

from config import compat
from config.model import StackSpec, WindowsKey


def kubernetes_release(spec: StackSpec) -> compat.KubernetesMinor:
    """The matrix row of the stack's Kubernetes minor (config.rules refused a minor without one)."""
    return compat.KUBERNETES[compat.kubernetes_minor(spec.cluster.kubernetes_version)]


def windows_release(version: WindowsKey) -> compat.WindowsBuild:
    """The matrix row of a Windows build, with every image it needs (config.rules refused a build the
    matrix does not complete)."""
    release = compat.WINDOWS[version]
    if None in (release.pause_image, release.kube_proxy_image, release.windows_exporter_image, release.fluent_bit_image):
        raise ValueError(f"{version} has no complete matrix row (config.rules refuses such a stack)")
    return release
