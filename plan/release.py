"""What config/compat.py pins for this stack: the release row of its Kubernetes minor and the row of each
Windows build. The one place the matrix is looked up by the stack's version."""
from __future__ import annotations

from dataclasses import dataclass

from config import compat
from config.model import StackSpec, WindowsKey


def kubernetes_release(spec: StackSpec) -> compat.KubernetesMinor:
    """The matrix row of the stack's Kubernetes minor (config.rules refused a minor without one)."""
    return compat.KUBERNETES[compat.kubernetes_minor(spec.cluster.kubernetes_version)]


@dataclass(frozen=True)
class WindowsRelease:
    """A Windows build's matrix row (compat.WindowsBuild) once every image it needs is known to be there:
    the images are str here, where the matrix has None for an image upstream does not publish."""
    key: str
    build: str
    ltsc_tag: str
    pause_image: str
    kube_proxy_image: str
    windows_exporter_image: str
    fluent_bit_image: str


def windows_release(version: WindowsKey) -> WindowsRelease:
    """The matrix row of a Windows build, with every image it needs (config.rules refused a build the
    matrix does not complete)."""
    release = compat.WINDOWS[version]
    if (release.pause_image is None or release.kube_proxy_image is None or release.windows_exporter_image is None
            or release.fluent_bit_image is None):
        raise ValueError(f"{version} has no complete matrix row (config.rules refuses such a stack)")
    return WindowsRelease(key=release.key, build=release.build, ltsc_tag=release.ltsc_tag, pause_image=release.pause_image,
                          kube_proxy_image=release.kube_proxy_image, windows_exporter_image=release.windows_exporter_image,
                          fluent_bit_image=release.fluent_bit_image)
