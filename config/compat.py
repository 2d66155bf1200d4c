"""The compatibility matrix: which Kubernetes versions, kubeadm config APIs, Linux distributions and
Windows Server builds this program supports, and the pinned versions and images that go with each.

Every fact here carries its upstream source in a comment. Validation (config.model) and the
renderers read these tables; nothing else in the program hard-codes a version.

Facts are as of AS_OF. Versions are bare ("1.35.9", "2.3.5"); whoever builds a download URL or an
image tag adds the "v" prefix that upstream uses there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

# The day the tables below were last researched; a reader can tell how stale a pin may be.
AS_OF = date(2026, 12, 2)

KUBEADM_V1BETA3 = "kubeadm.k8s.io/v1beta3"
KUBEADM_V1BETA4 = "kubeadm.k8s.io/v1beta4"

# v1beta3 first shipped in kubeadm 1.22 (github.com/kubernetes/kubernetes/pull/101129, "Introduce a new
# kubeadm API v1beta3"). v1beta4 was enabled in 1.31 (github.com/kubernetes/kubernetes/pull/125029,
# "kubeadm: enabled the v1beta4 API ... v1beta3 is now marked as deprecated"). v1beta3 was removed in
# 1.36: github.com/kubernetes/kubernetes/pull/136016 (merged; "removed the v1beta3 API which was
# deprecated since v1.31. The 1.35 kubeadm binary can be used to migrate to v1beta4"), confirmed by
# github.com/kubernetes-sigs/image-builder/pull/2154 ("The kubeadm.k8s.io/v1beta3 API was removed in
# kubeadm 1.36"). So 1.35 is the last minor that reads v1beta3.
_KUBEADM_API_RANGES: dict[str, tuple[tuple[int, int], tuple[int, int] | None]] = {
    KUBEADM_V1BETA3: ((1, 22), (1, 35)),
    KUBEADM_V1BETA4: ((1, 31), None),
}

# KEP-5573 flipped the kubelet's failCgroupV1 default to true in 1.35, so a 1.35+ kubelet exits on a
# cgroup v1 host unless failCgroupV1: false is set. Sources: github.com/kubernetes/enhancements/issues/5573
# ("beta - v1.35 ... [KEP-5573] Set failCgroupV1 to true kubernetes#134298"); the kubeadm preflight
# warning quoted in github.com/kubernetes/minikube/issues/22315 ("To explicitly enable cgroups v1
# support for kubelet v1.35 or newer, you must set the kubelet configuration option 'FailCgroupV1' to
# 'false'"); github.com/k0sproject/k0s/pull/7264 ("1.35+ kubelet actually fails to start by default with v1").
_FAIL_CGROUP_V1_DEFAULT_SINCE = (1, 35)

_MINOR = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")


@dataclass(frozen=True)
class KubernetesMinor:
    minor: str                 # "1.34"
    patch: str                 # pinned patch release, "1.34.2"
    kubeadm_api: str           # "kubeadm.k8s.io/v1beta4"
    end_of_life: date          # upstream maintenance end
    refuses_cgroup_v1: bool    # kubelet fails to start on a cgroup v1 host by default
    pause_image: str           # sandbox image kubeadm expects for this minor
    containerd: str            # pinned containerd release used on Linux and Windows nodes
    runc: str                  # runc release installed with that containerd on Linux nodes
    api_server_args: tuple[tuple[str, str], ...] = ()  # extra kube-apiserver flags this minor needs


@dataclass(frozen=True)
class LinuxDistro:
    key: str                   # "ubuntu22"
    family: str                # "debian" (apt) or "rhel" (dnf/yum)
    package_manager: str       # "apt", "dnf" or "yum"
    cgroup_v2: bool            # unified hierarchy by default
    end_of_life: date
    max_kubernetes_minor: str | None  # last minor usable on it, None when no limit


@dataclass(frozen=True)
class WindowsBuild:
    key: str                   # "win2022"
    build: str                 # "10.0.20348"
    ltsc_tag: str              # "ltsc2022": the image tag suffix that matches this kernel
    upstream_supported: bool   # listed as supported by Kubernetes' Windows docs
    calico_images: bool        # Calico builds its Windows images (node-windows, cni-windows) for it
    # Every *_image field is None when upstream publishes no image that runs on this build;
    # config.rules turns that into a validation error.
    pause_image: str | None
    kube_proxy_image: str | None   # format string with {version}: a bare patch, "1.35.9"
    windows_exporter_image: str | None
    fluent_bit_image: str | None


def _minor_tuple(version: str) -> tuple[int, int]:
    match = _MINOR.match(version.strip())
    if match is None:
        raise ValueError(f"not a Kubernetes version: {version!r}")
    return int(match.group(1)), int(match.group(2))


def kubernetes_minor(version: str) -> str:
    """The minor release a version belongs to: "1.34.2" and "v1.34.2" give "1.34"."""
    major, minor = _minor_tuple(version)
    return f"{major}.{minor}"


def patch_number(version: str) -> int:
    """The patch of a full version: "1.36.4" gives 4."""
    match = _MINOR.match(version.strip())
    if match is None or match.group(3) is None:
        raise ValueError(f"not a full Kubernetes version: {version!r}")
    return int(match.group(3))


def supported_versions() -> list[str]:
    """The minors in KUBERNETES, oldest first (numeric order, so 1.9 sorts before 1.10)."""
    return sorted(KUBERNETES, key=_minor_tuple)


def accepted_kubeadm_apis(minor: str) -> tuple[str, ...]:
    """The kubeadm config API versions that kubeadm of this minor reads."""
    wanted = _minor_tuple(minor)
    return tuple(
        api for api, (first, last) in _KUBEADM_API_RANGES.items()
        if first <= wanted and (last is None or wanted <= last)
    )


def kubelet_refuses_cgroup_v1(minor: str) -> bool:
    """Whether the kubelet of this minor exits on a cgroup v1 host unless failCgroupV1 is false."""
    return _minor_tuple(minor) >= _FAIL_CGROUP_V1_DEFAULT_SINCE


# --- Kubernetes ------------------------------------------------------------------------------------
#
# Maintained minors on AS_OF: 1.35, 1.36, 1.37. 1.34 reached end of life on 2026-10-27
# (kubernetes.io/releases/1.34) and is left out; 1.38 was not yet released (no page for it in the
# stored docs). End-of-life dates come from kubernetes.io/releases/<minor>.
#
# Patches: the newest release each series page shows. The pages also schedule 1.35.10 / 1.36.6 /
# 1.37.2 for 2026-10-13 and monthly patches after that; no copy of those releases was found, so the
# pins below are the newest confirmed ones and should be bumped when the mirror has newer tags.
#
# Pause: kubeadm pins the sandbox image in cmd/kubeadm/app/constants (PauseVersion). 1.35 keeps
# 3.10.1 (bumped for 1.34 by github.com/kubernetes/kubernetes/pull/130713; a kubeadm v1.35.8
# constants.go fixture in public code shows PauseVersion = "3.10.1"). 3.10.2 adds Windows Server 2025
# (github.com/containerd/containerd/pull/13156 citing the kubernetes build/pause CHANGELOG "3.10.2" and
# kubernetes/kubernetes#138195); github.com/kubeclipper/kubeclipper/pull/947: "k8s 1.36 uses
# pause:3.10.2, not 3.10.1", carried to 1.37.
#
# containerd: containerd's RELEASES.md "Kubernetes support" table lists 1.35 -> "2.2.0+, 2.1.5+,
# 1.7.28+" and 1.36 -> "2.3.0+, 2.2.0+" (no 1.x: Kubernetes drops containerd 1.x; the kubelet's
# fallback for runtimes without the RuntimeConfig RPC was deferred from 1.36 to 1.37 "aligning with the
# end of containerd v1.7 support", github.com/kubernetes/kubernetes/pull/136846 via
# github.com/deckhouse/deckhouse/pull/20186). The release table in the same file: 2.1 EOL 2026-07-03,
# 2.2 EOL 2026-11-06, 2.3 LTS 2026-04-30 .. 2028-04-30. On AS_OF only 2.3 (and 2.4, non-LTS) are
# maintained, so every minor pins 2.3: 2.3.5 (github.com/moby/moby/pull/53589, security fixes
# CVE-2026-53495). 2.3.0-2.3.3 fail RunPodSandbox with a digest-pinned sandbox image
# (github.com/kubernetes/kops/pull/18683), which 2.3.4+ fixes. The 1.35 row predates 2.3; 2.2 -> 2.3
# is a supported adjacent upgrade (RELEASES.md "Upgrade path"). No 1.37 row was found: unconfirmed.
#
# No CNI plugins pin: Linux nodes take them from the kubernetes-cni package that comes with the pinned
# kubelet from pkgs.k8s.io (render/linux_node.py), Windows nodes need none (Calico installs its own).
_CONTAINERD = "2.3.5"
# runc 1.5.1: containerd moved to it on main and cherry-picked it to release/2.3 for a Kubernetes bug
# (github.com/containerd/containerd/pull/13791, 2026-07-14, "/cherry-pick release/2.3"), so 2.3.5 ships
# it; containerd docs/RUNC.md asks for a runc at least that new.
_RUNC = "1.5.1"

# --- Downloads pinned by SHA-256 ----------------------------------------------------------------------
#
# What a Linux node's scripts download (render/scripts/lib/prepare-helpers.sh stage_runtime), by exact URL, with the
# SHA-256 the file must have and where that digest was read. A file is checked against its pin, never against a
# checksum fetched from the server beside it. A URL pinned to None has no digest yet: no authoritative copy was found
# (there is no network here to take one from the release itself), so its published checksum is checked as before and
# the node's log says so; tests/config/test_compat.py fails for any download that is neither pinned nor on its reviewed list
# (KNOWN_UNPINNED).
# Pin one: take the digest from the release's own checksum file on a trusted machine (or kops' pkg/assets/assetdata,
# which records them), and write it with its source.
RELEASE_ARCHES: tuple[str, ...] = ("amd64", "arm64")


@dataclass(frozen=True)
class PinnedDigest:
    sha256: str
    evidence: str


def containerd_archive_url(version: str, arch: str) -> str:
    # The static build: the dynamic one needs glibc 2.35 for containerd 2.2 and later, which Rocky 9 (2.34) lacks
    # (render/linux_node.py).
    return (f"https://github.com/containerd/containerd/releases/download/v{version}/"
            f"containerd-static-{version}-linux-{arch}.tar.gz")


def containerd_unit_url(version: str) -> str:
    return f"https://raw.githubusercontent.com/containerd/containerd/v{version}/containerd.service"


def runc_url(version: str, arch: str) -> str:
    return f"https://github.com/opencontainers/runc/releases/download/v{version}/runc.{arch}"


_KOPS_RUNC = ("kubernetes/kops pkg/assets/assetdata/runc-1.5.yaml @17f068050b09 ('This file is generated by "
              "generate-asset-hashes.sh' from the release's checksums), section '# runc 1.5.1'")
DOWNLOADS: dict[str, PinnedDigest | None] = {
    # containerd 2.3.5's static archives: kubespray's checksums.yml stops at 2.3.4, kops records only the dynamic ones.
    containerd_archive_url(_CONTAINERD, "amd64"): None,
    containerd_archive_url(_CONTAINERD, "arm64"): None,
    # The unit file is a file of the tag, so its digest is its content's: containerd.service is git blob aa853937cad2
    # at v2.3.4 and on main (unchanged since e0459262b, 2024-12-08, "Remove After=local-fs.target"), and release/2.3,
    # which v2.3.5 was tagged from, never changed it (containerd/containerd mirror: `git log -- containerd.service`).
    containerd_unit_url(_CONTAINERD): PinnedDigest(
        "1941362cbaa89dd591b99c32b050d82c583d3cd2e5fa63085d7017457ec5fca8",
        "sha256 of `git show v2.3.4:containerd.service` in containerd/containerd; the same blob at v2.3.5 (above)"),
    runc_url(_RUNC, "amd64"): PinnedDigest("177df879d50c913eb205e898d5c1c05a18f574053c0ce5524c471208eaf06f6f", _KOPS_RUNC),
    runc_url(_RUNC, "arm64"): PinnedDigest("ca70e7dbd6616ca782a59b5d3ac86909123fdaa9fa3f89dcf29051c70eee7ce9", _KOPS_RUNC),
}


def runtime_downloads(containerd: str, runc: str) -> dict[str, PinnedDigest | None]:
    """Every file stage_runtime may download for this containerd and runc, on either architecture, with its pin (None:
    none; tests/config/test_compat.py requires every download of the table's versions to be an entry of DOWNLOADS)."""
    urls = [containerd_unit_url(containerd), *(containerd_archive_url(containerd, a) for a in RELEASE_ARCHES),
            *(runc_url(runc, a) for a in RELEASE_ARCHES)]
    return {url: DOWNLOADS.get(url) for url in urls}

# Calico's native v3 CRD chart (render/network.py CALICO_CRDS_CHART) ships MutatingAdmissionPolicies.
# Their API is GA and served by default from 1.36 (KEP-3962 kep.yaml: "beta: v1.34", "stable: v1.36");
# on 1.35 it is beta and off: "enable the MutatingAdmissionPolicy feature gate (which is off by default)
# and set --runtime-config=admissionregistration.k8s.io/v1beta1=true on the kube-apiserver"
# (kubernetes.io/docs/reference/access-authn-authz/mutating-admission-policy, "FEATURE STATE:
# Kubernetes v1.34 [beta]"). The gate is only read by kube-apiserver (kep.yaml "components:
# kube-apiserver"), so nothing else changes.
_MUTATING_ADMISSION_POLICY_BETA = (
    ("feature-gates", "MutatingAdmissionPolicy=true"),
    ("runtime-config", "admissionregistration.k8s.io/v1beta1=true"),
)

KUBERNETES: dict[str, KubernetesMinor] = {
    "1.35": KubernetesMinor(
        minor="1.35",
        patch="1.35.9",  # kubernetes.io/releases/1.35: "1.35.9 (Released on 2026-09-15)"
        kubeadm_api=KUBEADM_V1BETA4,  # v1beta3 still read, but deprecated since 1.31 (see above)
        end_of_life=date(2027, 2, 28),  # kubernetes.io/releases/1.35: End Of Life Date 2027-02-28
        refuses_cgroup_v1=kubelet_refuses_cgroup_v1("1.35"),
        pause_image="registry.k8s.io/pause:3.10.1",
        containerd=_CONTAINERD,
        runc=_RUNC,
        api_server_args=_MUTATING_ADMISSION_POLICY_BETA,
    ),
    "1.36": KubernetesMinor(
        minor="1.36",
        patch="1.36.4",  # kubernetes.io/it/releases/1.36: "1.36.4 (Released on 2026-08-11)"
        kubeadm_api=KUBEADM_V1BETA4,
        end_of_life=date(2027, 6, 28),  # kubernetes.io/releases/1.36: End Of Life Date 2027-06-28
        refuses_cgroup_v1=kubelet_refuses_cgroup_v1("1.36"),
        pause_image="registry.k8s.io/pause:3.10.2",
        containerd=_CONTAINERD,
        runc=_RUNC,
    ),
    "1.37": KubernetesMinor(
        minor="1.37",
        patch="1.37.1",  # kubernetes.io/releases/1.37: "1.37.1 (Released on 2026-09-15)"
        kubeadm_api=KUBEADM_V1BETA4,
        end_of_life=date(2027, 10, 28),  # kubernetes.io/releases/1.37: End Of Life Date 2027-10-28
        refuses_cgroup_v1=kubelet_refuses_cgroup_v1("1.37"),
        pause_image="registry.k8s.io/pause:3.10.2",
        containerd=_CONTAINERD,
        runc=_RUNC,
    ),
}

# --- Linux distributions ---------------------------------------------------------------------------

DISTROS: dict[str, LinuxDistro] = {
    "ubuntu22": LinuxDistro(
        key="ubuntu22",
        family="debian",
        package_manager="apt",
        # systemd switched to the unified hierarchy in Ubuntu 21.10
        # (lists.ubuntu.com/archives/ubuntu-devel/2021-August/041598.html), so 22.04 boots cgroup v2.
        cgroup_v2=True,
        # Standard support ends "April 2027" (ubuntu.com/about/release-cycle, quoted in
        # github.com/python-pillow/docker-images/pull/275); Canonical gives a month, not a day, so
        # the last day of that month is used.
        end_of_life=date(2027, 4, 30),
        max_kubernetes_minor=None,
    ),
    "rocky9": LinuxDistro(
        key="rocky9",
        family="rhel",
        package_manager="dnf",
        # "RHEL 9 mounts cgroup-v2 by default" (docs.redhat.com, RHEL 9 "Mounting cgroups-v1").
        cgroup_v2=True,
        end_of_life=date(2032, 5, 31),  # endoflife-date/endoflife.date products/rockylinux.md: eol 2032-05-31
        max_kubernetes_minor=None,
    ),
    "centos7": LinuxDistro(
        key="centos7",
        family="rhel",
        package_manager="yum",
        # Kernel 3.10 and systemd 219: no cgroup v2 (github.com/systemd/systemd/issues/23109, "cgroups
        # v2 are (officially) supported in the RHEL 8.4 kernel").
        cgroup_v2=False,
        # "end of updates 2024-06-30" (github.com/adoptium/infrastructure wiki, "End of support date
        # for OS distributions", citing wiki.centos.org/About/Product).
        end_of_life=date(2024, 6, 30),
        # The last minor whose kubelet still starts on cgroup v1 by default; that minor (1.34) is
        # itself past end of life, so no maintained minor runs on CentOS 7.
        max_kubernetes_minor="1.34",
    ),
}

# --- Windows Server builds -------------------------------------------------------------------------
#
# Upstream support: kubernetes.io/docs/concepts/windows/intro/ now reads "Windows nodes are supported
# provided that the operating system is Windows Server 2022 or Windows Server 2025"; the leftover
# Windows Server 2019 sentence was removed (github.com/kubernetes/website/issues/55058,
# github.com/kubernetes/website/pull/55103, 2026-03).
#
# Pause: registry.k8s.io/pause is a manifest list with one Windows entry per OS version. 1809
# (= ltsc2019) was added in 3.4, ltsc2022 in 3.6, and neither was removed through 3.10.1
# (kubernetes/kubernetes build/pause/CHANGELOG.md); ltsc2025 arrived in 3.10.2
# (github.com/containerd/containerd/pull/13156, github.com/kubernetes/kubernetes/pull/136960). Whether
# 3.10.2 still carries 1809 was not confirmed, so Windows Server 2019 stays on 3.10.1.
#
# kube-proxy: kubernetes-sigs/sig-windows-tools hostprocess/calico/kube-proxy/kube-proxy.yml uses
# sigwindowstools/kube-proxy:<KUBE_PROXY_VERSION>-calico-hostprocess, built per Kubernetes version by
# hostprocess/calico/build.sh (-t $repository/kube-proxy:$proxyVersion-calico-hostprocess, proxyVersion
# like "v1.22.2"). HostProcess containers do not inherit the host/image OS version matching rules
# (github.com/microsoft/windows-host-process-containers-base-image README), so one tag serves every
# build. sig-windows-tools calls these images samples, "discouraged and ... planned to be
# decommissioned" (github.com/kubernetes-sigs/sig-windows-tools/issues/353, 2024-01); that a tag exists
# for each pinned patch was not confirmed.
_KUBE_PROXY_HOSTPROCESS = "docker.io/sigwindowstools/kube-proxy:v{version}-calico-hostprocess"
# The minors whose tag of that image was seen to exist. None of the matrix's: tags were seen in use up to
# v1.34.6-calico-hostprocess (public deployment code in the search index, 2026-12); config.rules warns.
WINDOWS_KUBE_PROXY_CONFIRMED: tuple[str, ...] = ()

# windows_exporter: "One image works on every Windows version that supports HostProcess containers"
# (prometheus-community/windows_exporter docs/kubernetes/kubernetes.md). 0.31.8 is the newest patch of
# the 0.31 line: prometheus-community/helm-charts release prometheus-windows-exporter-0.12.8 "Update
# dependency prometheus-community/windows_exporter to v0.31.8 (#7129)", and kube-prometheus-stack 91.x
# pins that subchart line (Chart.yaml `prometheus-windows-exporter ... version: "0.12.*"`), whose rules
# and dashboards read 0.31's metric names. 0.32.0 renames metrics and removes collectors
# (github.com/prometheus-community/windows_exporter/releases/tag/v0.32.0, "Breaking Changes"), so it waits
# for a kube-prometheus-stack that moves to it. Image tags carry no "v" (the chart's appVersion, e.g. 0.30.8).
_WINDOWS_EXPORTER = "ghcr.io/prometheus-community/windows-exporter:0.31.8"

# Fluent Bit, one version on both operating systems: 5.2.1, the image of the pinned fluent-bit chart
# 0.59.0 (CHARTS below). The chart's default image is cr.fluentbit.io/fluent/fluent-bit:<appVersion>; the
# same images are on Docker Hub (org.opencontainers.image.url "https://hub.docker.com/r/fluent/fluent-bit"
# in fluent/fluent-bit dockerfiles), which our Harbor mirror proxies. On Windows Fluent Bit publishes one
# tag per Windows Server release, windows-<year>-<version>, for 2022 and 2025 from 5.1 on
# (github.com/fluent/fluent-bit-docs/pull/2665, 2026-08-06: "a tag table covering windows-2022,
# windows-2025"; Windows Server 2019 builds were dropped, fluent/fluent-bit#10137). windows-2022-5.0.3 was
# confirmed published by a maintainer (fluent/fluent-bit#11707); windows-2022-5.2.1 itself was not seen,
# so check it with `docker manifest inspect` before a first deploy (docs/testing.md, "What cannot be verified here").
FLUENT_BIT_VERSION = "5.2.1"
FLUENT_BIT_LINUX_IMAGE = f"docker.io/fluent/fluent-bit:{FLUENT_BIT_VERSION}"

# Calico for Windows: the Windows images of Calico 3.33 (calico/node-windows, calico/cni-windows, run by
# the operator as HostProcess DaemonSets) are built for "WINDOWS_VERSIONS ?= ltsc2019 ltsc2022" only
# (projectcalico/calico metadata.mk, "The Windows versions used as base for Calico Windows images").
# A Windows Server 2025 node therefore has no Calico image to run, whatever Kubernetes supports.

WINDOWS: dict[str, WindowsBuild] = {
    "win2019": WindowsBuild(
        key="win2019",
        # "Windows 10, Server 2019 | 1809 | 10.0.17763" (Siemens-Healthineers/K2s os-support table).
        build="10.0.17763",
        ltsc_tag="ltsc2019",
        upstream_supported=False,
        calico_images=True,
        pause_image="registry.k8s.io/pause:3.10.1",
        kube_proxy_image=_KUBE_PROXY_HOSTPROCESS,
        windows_exporter_image=_WINDOWS_EXPORTER,
        # Fluent Bit stopped building windows-2019 tags after 4.0 (issue 10137 above); the last line
        # still published is 4.0.x: New Relic's Windows 2019 image is built FROM the official
        # fluent/fluent-bit windows-2019 image at 4.0.3 (github.com/newrelic/newrelic-fluent-bit-output/pull/205,
        # 2025-10-21). Pinned there; it receives no more fixes, another reason 2019 needs an explicit
        # override (windows.allowUnsupportedVersions).
        fluent_bit_image="docker.io/fluent/fluent-bit:windows-2019-4.0.3",
    ),
    "win2022": WindowsBuild(
        key="win2022",
        # ghcr.io/containerd/windows/nanoserver:ltsc2022 is "windows/10.0.20348.1850/amd64".
        build="10.0.20348",
        ltsc_tag="ltsc2022",
        upstream_supported=True,
        calico_images=True,
        pause_image="registry.k8s.io/pause:3.10.2",
        kube_proxy_image=_KUBE_PROXY_HOSTPROCESS,
        windows_exporter_image=_WINDOWS_EXPORTER,
        fluent_bit_image=f"docker.io/fluent/fluent-bit:windows-2022-{FLUENT_BIT_VERSION}",
    ),
    "win2025": WindowsBuild(
        key="win2025",
        # Windows Server 2025 is "the server version of Windows 24H2 LTSC"
        # (gitlab.com/gitlab-org/gitlab-runner/-/issues/38316); build 26100 is from the brief and
        # learn.microsoft.com's Windows Server release information, not confirmed by search.
        build="10.0.26100",
        ltsc_tag="ltsc2025",
        upstream_supported=True,
        calico_images=False,
        pause_image="registry.k8s.io/pause:3.10.2",
        kube_proxy_image=_KUBE_PROXY_HOSTPROCESS,
        windows_exporter_image=_WINDOWS_EXPORTER,
        fluent_bit_image=f"docker.io/fluent/fluent-bit:windows-2025-{FLUENT_BIT_VERSION}",
    ),
}

# --- Control-plane virtual IP -----------------------------------------------------------------------

# kube-vip v1.2.4, the newest release found as of 2026-12-02: kube-vip/helm-charts PR #113
# (2026-09-16, "kube-vip: update to v1.2.4", links https://github.com/kube-vip/kube-vip/releases/tag/v1.2.4);
# v1.2.3 is the chart's current appVersion (helm-charts PR #112, merged 2026-08-24). Image repository
# ghcr.io/kube-vip/kube-vip from kube-vip's manifest generator (pkg/kubevip/config_generator.go).
KUBE_VIP_IMAGE = "ghcr.io/kube-vip/kube-vip:v1.2.4"


# --- Packer plugins (images/) ------------------------------------------------------------------------
#
# Packer takes its plugin pins only from each template's required_plugins block, so they are written
# there; these are the values, and tests/images/test_images.py keeps the templates equal to them.
# proxmox 1.2.1: hashicorp/packer-plugin-proxmox pull request #284 (release 1.2.1; boot_iso since 1.2.0,
# #279). hyperv 1.1.4: hashicorp/packer-plugin-hyperv pull request #139 (release 1.1.4).
PACKER_PLUGINS: dict[str, tuple[str, str]] = {
    "proxmox": ("github.com/hashicorp/proxmox", "1.2.1"),
    "hyperv": ("github.com/hashicorp/hyperv", "1.1.4"),
}


# --- Sample workloads --------------------------------------------------------------------------------
#
# Why these two images, and what they serve: render/workloads.py, the "Images" comment above WIN_HTTP_PORT.
SAMPLE_WINDOWS_IMAGE = "mcr.microsoft.com/dotnet/samples:aspnetapp-10.0-nanoserver-ltsc2022"
SAMPLE_LINUX_IMAGE = "docker.io/springcommunity/spring-petclinic-rest:3.2.1"


# --- Helm charts -----------------------------------------------------------------------------------
#
# Every chart the program installs, pinned. `evidence` says where the version was seen to exist (a chart
# index entry or a release tag of the chart's own repository; "third-party" where only downstream users of
# the release were found), `values_source` which file's keys the values renderer (render/<module>.py) uses.
# Chart versions are spelled as each chart index spells them ("v3.33.0" for Calico, "4.13.5" elsewhere).


@dataclass(frozen=True)
class HelmChart:
    chart: str
    repo: str
    version: str
    evidence: str
    values_source: str
    # A chart whose repository index lives on a branch (it can change under the same version) is installed from its
    # released archive at a commit instead, with the archive's SHA-256 as that index lists it at that commit.
    archive: str | None = None
    archive_sha256: str | None = None


# Calico 3.33 is tested against Kubernetes 1.35, 1.36 and 1.37 (tigera/docs
# calico_versioned_docs/version-3.33/_includes/partials/_system-requirements.mdx, "Supported versions");
# 3.32 stops at 1.36. The chart repository and the "v"-prefixed chart version come from the install guide
# (calico_versioned_docs/version-3.33/getting-started/kubernetes/helm.mdx: `helm repo add projectcalico
# https://docs.tigera.io/calico/charts`, `--version $[releaseTitle]`). v3.33.1 (2026-11-16) exists; the
# vendored Installation schema (tests/fixtures/schemas) is 3.33.0's, so the bump waits for its schema.
CALICO_VERSION = "v3.33.0"
_CALICO_EVIDENCE = ("github.com/projectcalico/calico/releases/tag/v3.33.0 (2026-10-01): assets "
                    "tigera-operator-v3.33.0.tgz and projectcalico.org.v3-v3.33.0.tgz")

CHARTS: dict[str, HelmChart] = {
    "calico-crds": HelmChart(
        chart="projectcalico.org.v3", repo="https://docs.tigera.io/calico/charts", version=CALICO_VERSION,
        evidence=_CALICO_EVIDENCE, values_source="none: the CRD chart is rendered with its defaults"),
    "tigera-operator": HelmChart(
        chart="tigera-operator", repo="https://docs.tigera.io/calico/charts", version=CALICO_VERSION,
        evidence=_CALICO_EVIDENCE,
        values_source="projectcalico/calico charts/tigera-operator/values.yaml (release-v3.33)"),
    # kubeVersion: ">=1.19.0-0" only (charts/kube-prometheus-stack/Chart.yaml); no compatibility matrix
    # is published (prometheus-community/helm-charts#4520). Newer 91.x releases (91.9.0, 2026-10-06) were
    # seen deployed downstream only.
    "kube-prometheus-stack": HelmChart(
        chart="kube-prometheus-stack", repo="https://prometheus-community.github.io/helm-charts", version="91.5.0",
        evidence="third-party: release page github.com/prometheus-community/helm-charts/releases/tag/"
                 "kube-prometheus-stack-91.5.0 (2026-09-22) as linked by changelog digests; not seen first-hand",
        values_source="prometheus-community/helm-charts charts/kube-prometheus-stack/values.yaml "
                      "(windowsMonitoring, prometheus-windows-exporter: commit 6e3607554b0e)"),
    # Fluent Bit v5.2.1; the chart announces its deprecation once Fluent Bit 5.3.0 ships, in favour of the
    # fluent-bit-collector/-aggregator charts.
    "fluent-bit": HelmChart(
        chart="fluent-bit", repo="https://fluent.github.io/helm-charts", version="0.59.0",
        evidence='github.com/fluent/helm-charts/releases/tag/fluent-bit-0.59.0: "Update Fluent Bit OCI image to v5.2.1"',
        values_source="fluent/helm-charts charts/fluent-bit/values.yaml (keys documented inline) and README values table"),
    # 3.23.1 is reported downstream (sighupio/module-policy#140, 2026-09-15) but is not in any first-party
    # copy found; 3.23.0 is. Bump when the chart index shows 3.23.1.
    "gatekeeper": HelmChart(
        chart="gatekeeper", repo="https://open-policy-agent.github.io/gatekeeper/charts", version="3.23.0",
        evidence='open-policy-agent.github.io/gatekeeper/charts/index.yaml: "version: 3.23.0", appVersion v3.23.0, '
                 "created 2026-07-09",
        values_source="open-policy-agent/gatekeeper charts/gatekeeper/values.yaml and README parameters table"),
    # README compatibility table: "v1.20.3 | 1.21+"; no kubeVersion upper bound.
    "csi-driver-smb": HelmChart(
        chart="csi-driver-smb", repo="https://raw.githubusercontent.com/kubernetes-csi/csi-driver-smb/master/charts",
        version="1.20.3",
        evidence='kubernetes-csi/csi-driver-smb charts/index.yaml @59dce96e11522a46354d6970393b00b1c2a57351: '
                 '"version: 1.20.3" (charts/v1.20.3/csi-driver-smb-1.20.3.tgz, "digest: 6dee977f...")',
        archive="https://raw.githubusercontent.com/kubernetes-csi/csi-driver-smb/59dce96e11522a46354d6970393b00b1c2a57351/"
                "charts/v1.20.3/csi-driver-smb-1.20.3.tgz",
        archive_sha256="6dee977f6ce13a8b90a4c41b0d253f01bb3ad5d9e7db3d029477fd98ff571179",
        values_source="kubernetes-csi/csi-driver-smb charts/v1.20.3/csi-driver-smb/values.yaml and charts/README.md"),
    # Its csi-provisioner v6.3.0 needs Kubernetes 1.34+ (longhorn/longhorn#13576), which every supported
    # minor satisfies.
    "csi-driver-nfs": HelmChart(
        chart="csi-driver-nfs", repo="https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts",
        version="4.13.5",
        evidence='kubernetes-csi/csi-driver-nfs charts/index.yaml @66f8c2a2a1e115b4a81126865dacfd23c9b2e9c4: '
                 '"version: 4.13.5", created 2026-10-08 (charts/v4.13.5/csi-driver-nfs-4.13.5.tgz, '
                 '"digest: aace8754...")',
        archive="https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/66f8c2a2a1e115b4a81126865dacfd23c9b2e9c4/"
                "charts/v4.13.5/csi-driver-nfs-4.13.5.tgz",
        archive_sha256="aace8754451ecbd87e090ec29e6cbffcf88dbd9980cecb165da8b9d0880f7fac",
        values_source="kubernetes-csi/csi-driver-nfs charts/v4.13.5/csi-driver-nfs/values.yaml and charts/README.md"),
    # "Ensure that your cluster is running Kubernetes v1.34 or later before installing Longhorn v1.13.0"
    # (same file, Installation); no upper bound. "install the Longhorn chart in the longhorn-system
    # namespace only" (chart/README.md).
    "longhorn": HelmChart(
        chart="longhorn", repo="https://charts.longhorn.io", version="1.13.0",
        evidence="longhorn/longhorn CHANGELOG/CHANGELOG-1.13.0.md (release v1.13.0, 2026-09-29)",
        values_source="longhorn/longhorn chart/values.yaml @347f5ba38a2a (longhornUI has no resources key)"),
    # Envoy Gateway, the Gateway API implementation that replaces the retired ingress-nginx
    # (render/workloads.py). v1.9.3 is the newest release found; its chart is published as an OCI
    # artifact whose version carries the "v" (`helm install eg oci://docker.io/envoyproxy/gateway-helm
    # --version v1.x.y -n envoy-gateway-system --create-namespace`, the install guide; renovate updates of
    # docker.io/envoyproxy/gateway-helm to v1.7.1 in rackerlabs/understack#1832). Its own crds subchart
    # carries Gateway API's experimental channel only (charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml,
    # "channel: experimental"), and Helm never upgrades a chart's CRDs; so it is installed with
    # `crds.enabled: false` ("Set to false when these resources are managed separately", values.tmpl.yaml)
    # and the CRDs come from gateway-crds-helm below. Supported Kubernetes: ENVOY_GATEWAY.
    "envoy-gateway": HelmChart(
        chart="gateway-helm", repo="oci://docker.io/envoyproxy", version="v1.9.3",
        evidence='envoyproxy/gateway site/content/en/news/releases/notes/v1.9.3.md @5e0b0da4acc3: title "v1.9.3", '
                 "publishdate 2026-10-03",
        values_source="envoyproxy/gateway charts/gateway-helm/values.yaml and templates/envoy-gateway-deployment.yaml "
                      "(deployment.replicas, deployment.pod.affinity, crds.enabled)"),
    # The CRDs of that release, rendered locally and applied as plain objects like Calico's (components/
    # workloads.py), so a pin bump upgrades them: Gateway API's standard channel (`crds.gatewayAPI.enabled`,
    # `crds.gatewayAPI.channel: standard`, templates/standard-gatewayapi-crds.yaml, bundle v1.6.1) and Envoy
    # Gateway's own (`crds.envoyGateway.enabled`). The chart's README: "make sure that you don't install the CRDs
    # again when installing the Envoy Gateway Helm chart, by using --set crds.enabled=false".
    "envoy-gateway-crds": HelmChart(
        chart="gateway-crds-helm", repo="oci://docker.io/envoyproxy", version="v1.9.3",
        evidence="envoyproxy/gateway charts/gateway-crds-helm at v1.9.0 (39763b1c07; release/v1.9 charts/ unchanged "
                 "since), released with every Envoy Gateway release as gateway-helm is; v1.9.3 as for gateway-helm",
        values_source="envoyproxy/gateway charts/gateway-crds-helm/values.yaml (crds.gatewayAPI.enabled, "
                      "crds.gatewayAPI.channel, crds.envoyGateway.enabled)"),
    # MetalLB, the LoadBalancer implementation (config `loadBalancer`, render/load_balancer.py): layer 2 mode, in
    # which a speaker on one Linux node answers ARP for each address (no router to configure; a site with BGP
    # routers could move to BGP mode later). Chosen over kube-vip's service load balancing because the pool
    # and its announcement are Kubernetes objects (IPAddressPool, L2Advertisement) with CRD schemas to validate
    # against, and the chart places its controller and speakers on Linux nodes by itself.
    # `helm repo add metallb https://metallb.github.io/metallb` (website/content/installation/_index.md).
    "metallb": HelmChart(
        chart="metallb", repo="https://metallb.github.io/metallb", version="0.16.1",
        evidence="metallb/metallb tag v0.16.1 (791dfcc63ced, 2026-05-27) charts/metallb/Chart.yaml: version 0.16.1, "
                 'appVersion v0.16.1, kubeVersion ">= 1.19.0-0"',
        values_source="metallb/metallb v0.16.1 charts/metallb/values.yaml (frrk8s.enabled, speaker.frr.enabled) and "
                      'templates/controller.yaml, speaker.yaml (nodeSelector "kubernetes.io/os": linux, fixed)'),
    # cert-manager (config `tls`, render/tls.py). Installed as its chart README says: `helm install cert-manager
    # oci://quay.io/jetstack/charts/cert-manager --namespace cert-manager --create-namespace --version
    # {{RELEASE_VERSION}} --set crds.enabled=true` (deploy/charts/cert-manager/README.template.md); its CRDs are
    # chart templates when crds.enabled (kept on uninstall: crds.keep, default true), so a pin bump upgrades them.
    "cert-manager": HelmChart(
        chart="cert-manager", repo="oci://quay.io/jetstack/charts", version="v1.21.1",
        evidence="cert-manager/cert-manager tag v1.21.1 (24e33194fb39, 2026-07-29)",
        values_source="cert-manager/cert-manager v1.21.1 deploy/charts/cert-manager/values.yaml (crds.enabled, "
                      "crds.keep, config; nodeSelector kubernetes.io/os: linux by default on the controller, webhook, "
                      "cainjector and startupapicheck) and pkg/apis/config/controller/v1alpha1/types.go "
                      "(gatewayAPI.enabled)"),
    # approver-policy (config `tls`, render/tls.py): with cert-manager's own approver off (`disableAutoApproval`), it
    # approves a CertificateRequest only when a CertificateRequestPolicy the requester may `use` allows it. v0.27.0 is
    # the newest tag (the repository's main at 81ac7e0, 2026-08-22, has none newer); its go.mod requires
    # github.com/cert-manager/cert-manager v1.21.1, the pin above. The chart is published as an OCI artifact whose
    # version is the tag (make/00_mod.mk: helm_chart_image_name quay.io/jetstack/charts/cert-manager-approver-policy,
    # helm_chart_version $(VERSION)); deploy_namespace cert-manager, as the docs install it.
    "approver-policy": HelmChart(
        chart="cert-manager-approver-policy", repo="oci://quay.io/jetstack/charts", version="v0.27.0",
        evidence="cert-manager/approver-policy tag v0.27.0 (a64e01b52645, 2026-07-30): make/00_mod.mk, go.mod",
        values_source="cert-manager/approver-policy v0.27.0 deploy/charts/approver-policy/values.yaml (crds.enabled, "
                      "crds.keep, app.approveSignerNames; nodeSelector kubernetes.io/os: linux by default) and "
                      "templates/clusterrole.yaml (signers approve limited to approveSignerNames)"),
    # metrics-server, the resource metrics API (config `resourceMetrics`, render/resource_metrics.py). README
    # "Compatibility Matrix": "0.8.x | metrics.k8s.io/v1beta1 | 1.31+" (0.9.x: 1.34+), so every supported minor.
    # Chart 3.13.1 is the newest (tag metrics-server-helm-chart-3.13.1, 842dcc8, 2026-06-11); app v0.9.0 was tagged
    # on 2026-07-13 but no chart ships it yet, and the chart's image tag is its appVersion. It installs no CRD.
    "metrics-server": HelmChart(
        chart="metrics-server", repo="https://kubernetes-sigs.github.io/metrics-server/", version="3.13.1",
        evidence="kubernetes-sigs/metrics-server tag metrics-server-helm-chart-3.13.1 (842dcc8, 2026-06-11) "
                 "charts/metrics-server/Chart.yaml: version 3.13.1, appVersion 0.8.1; gh-pages index.yaml lists 3.13.1",
        values_source="kubernetes-sigs/metrics-server charts/metrics-server/values.yaml @3.13.1 (defaultArgs, args, "
                      "nodeSelector {} by default, replicas, podDisruptionBudget, apiService)"),
    # KEDA (config `customMetrics`, render/custom_metrics.py says why KEDA and not prometheus-adapter). v2.20.2 is the
    # newest release (no 2.21 tag yet; keda-docs content/docs/2.21/operate/cluster.md still reads "| v2.21 | TBD |").
    # `helm repo add kedacore https://kedacore.github.io/charts`, `--namespace keda` (keda/README.md).
    "keda": HelmChart(
        chart="keda", repo="https://kedacore.github.io/charts", version="2.20.2",
        evidence="kedacore/charts tag v2.20.2 (cbb9bb8ce080) keda/Chart.yaml: version 2.20.2, appVersion 2.20.2, "
                 'kubeVersion ">=v1.23.0-0"; kedacore/keda tag v2.20.2 (68a5b5028f35, 2026-07-31)',
        values_source="kedacore/charts v2.20.2 keda/values.yaml (crds.install, crds.additionalAnnotations) and "
                      "templates/ (nodeSelector kubernetes.io/os: linux written by the templates themselves)"),
    # Velero (config `backup`, render/backup.py). Chart 12.1.0 is the newest for Velero 1.18.1 (12.0.0 was 1.18.0); since
    # 12.0.0 its CRD upgrade job runs the velero image itself (`/velero install --crds-only --apply`,
    # templates/upgrade-crds/upgrade-crds.yaml), so no kubectl image is pulled. `helm repo add vmware-tanzu
    # https://vmware-tanzu.github.io/helm-charts`.
    "velero": HelmChart(
        chart="velero", repo="https://vmware-tanzu.github.io/helm-charts", version="12.1.0",
        evidence="vmware-tanzu/helm-charts tag velero-12.1.0 (73466ca9) charts/velero/Chart.yaml: version 12.1.0, "
                 'appVersion 1.18.1, kubeVersion ">=1.16.0-0"; gh-pages index.yaml entry created 2026-06-25',
        values_source="vmware-tanzu/helm-charts velero-12.1.0 charts/velero/values.yaml (initContainers, configuration, "
                      "credentials.existingSecret, deployNodeAgent, nodeAgent, serviceAccount.server.name, snapshotsEnabled) "
                      "and templates (no OS selector of their own; no Windows node agent)"),
    # Argo Rollouts (config `progressiveDelivery`, render/progressive_delivery.py says why). Chart 2.41.0 is the newest
    # (2026-06-05) and ships controller v1.9.0; v1.9.1 (2026-07-06) has no chart yet, and its Rollout CRD is identical to
    # v1.9.0's (manifests/crds/rollout-crd.yaml at both tags), which is the schema vendored in tests/fixtures/schemas.
    # `helm repo add argo https://argoproj.github.io/argo-helm`.
    "argo-rollouts": HelmChart(
        chart="argo-rollouts", repo="https://argoproj.github.io/argo-helm", version="2.41.0",
        evidence="argoproj/argo-helm charts/argo-rollouts/Chart.yaml: version 2.41.0, appVersion v1.9.0; gh-pages "
                 "index.yaml entry created 2026-06-05",
        values_source="argoproj/argo-helm argo-rollouts-2.41.0 charts/argo-rollouts/values.yaml (installCRDs, keepCRDs, "
                      "controller.nodeSelector {} by default, dashboard.enabled) and templates/crds (keep policy)"),
    # The OpenTelemetry Collector (config `tracing`, render/tracing.py): chart 0.170.0 (2026-08-14), appVersion 0.158.0,
    # the collector image's tag. The image repository has no default in the chart; the k8s distribution is the one its
    # README installs (`--set image.repository=".../opentelemetry-collector-k8s" --set command.name="otelcol-k8s"`).
    "opentelemetry-collector": HelmChart(
        chart="opentelemetry-collector", repo="https://open-telemetry.github.io/opentelemetry-helm-charts",
        version="0.170.0",
        evidence="open-telemetry/opentelemetry-helm-charts tag opentelemetry-collector-0.170.0 (2026-08-14) "
                 "charts/opentelemetry-collector/Chart.yaml: version 0.170.0, appVersion 0.158.0",
        values_source="open-telemetry/opentelemetry-helm-charts opentelemetry-collector-0.170.0 "
                      "charts/opentelemetry-collector/values.yaml (mode, image.repository, command.name, config, ports, "
                      "fullnameOverride, extraVolumes, nodeSelector {} by default)"),
}

OTEL_COLLECTOR_IMAGE_REPOSITORY = "ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-k8s"
OTEL_COLLECTOR_COMMAND = "otelcol-k8s"
# The OpenTelemetry Java agent, as the OpenTelemetry Operator injects it: its autoinstrumentation image, `FROM busybox`
# with the agent at /javaagent.jar (autoinstrumentation/java/Dockerfile). 2.30.0 is the operator's own pin
# (versions.txt, 2026-08); 2.31.0 was set in autoinstrumentation/java/version.txt but its image was not seen published.
OTEL_JAVA_AGENT_IMAGE = "ghcr.io/open-telemetry/opentelemetry-operator/autoinstrumentation-java:2.30.0"

# The Kubernetes minors Argo Rollouts 1.9 is tested on: its e2e matrix (.github/workflows/testing.yaml at v1.9.1) runs
# 1.32, 1.33, 1.34 and 1.35; docs/installation.md points there instead of listing versions. config.rules warns on others.
ARGO_ROLLOUTS_TESTED_KUBERNETES: tuple[str, ...] = ("1.32", "1.33", "1.34", "1.35")

# Velero's own images. The server and the Linux node agent come from the chart (image.tag v1.18.1); the Windows node
# agent, which the chart does not deploy, is declared from the same multi-platform image, as `velero install
# --use-node-agent-windows` does (pkg/install/daemonset.go at v1.18.1). Velero "is built and tested with
# windows/amd64/ltsc2022 container only" (site/content/docs/v1.18/backup-restore-windows.md; Makefile
# BUILD_WINDOWS_VERSION ?= ltsc2022), and a process-isolated container needs its host's build: the Windows node agent
# runs on Windows Server 2022 nodes only, and config.rules refuses file-system backups with nodes of another build.
VELERO_VERSION = "v1.18.1"     # vmware-tanzu/velero tag v1.18.1 (26ef8fa7df68, 2026-05-12)
VELERO_IMAGE = f"docker.io/velero/velero:{VELERO_VERSION}"
VELERO_WINDOWS_BUILDS: tuple[str, ...] = ("win2022",)
# The AWS (S3) object store plugin for Velero 1.18: "| v1.14.x | v1.18.x |" (velero-plugin-for-aws README at tag
# v1.14.0, compatibility); Velero's upgrade-to-1.18.md installs velero/velero-plugin-for-aws:v1.14.0. The repository
# moved to velero-io/velero-plugin-for-aws, where v1.14.0 is released (2a52b1296d4e, 2026-03-06) and v1.14.2 is the
# newest patch of the line (5463822fd77b, 2026-06-16: Go and dependency CVE fixes, EBS KMS on restore); its push.yml
# publishes the image to Docker Hub on every tag (hack/docker-push.sh).
VELERO_AWS_PLUGIN_IMAGE = "docker.io/velero/velero-plugin-for-aws:v1.14.2"
# Velero README "Velero compatibility matrix": "| 1.18 | 1.18-latest | 1.33.7, 1.34.1, and 1.35.0 |" (tested);
# newer minors are "expected" to work, untested: config.rules warns.
VELERO_TESTED_KUBERNETES: tuple[str, ...] = ("1.33", "1.34", "1.35")
# rclone uploads the encrypted etcd snapshots off-site from the control-plane nodes (render/etcd_backup.py).
# v1.75.0 (tag 9ee9d0a0cafd, 2026-07-31); v1.75.1 was seen only on its release page. Image tags carry no "v"
# (docs/content/install.md "Docker installation": version tags such as ":1.49.1";
# .github/workflows/build_publish_docker_image.yml, type=semver {{version}}).
RCLONE_IMAGE = "docker.io/rclone/rclone:1.75.0"

# The Kubernetes minors the pinned KEDA was tested on: keda-docs content/docs/2.20/operate/cluster.md, "Kubernetes
# Compatibility": "| v2.20 | v1.33 - v1.35 |", under an "N-2" policy ("KEDA will provide support for running on N-2
# at least"). Newer minors are untested, not known broken (KEDA uses only the stable autoscaling/v2 and aggregated
# metrics APIs): config.rules warns on them instead of refusing.
KEDA_TESTED_KUBERNETES: tuple[str, ...] = ("1.33", "1.34", "1.35")

# What the pinned Envoy Gateway supports (envoyproxy/gateway site/content/en/news/releases/matrix.md at v1.9.0,
# the v1.9 row: Gateway API v1.6.1, Kubernetes "v1.33, v1.34, v1.35, v1.36", end of life 2027/02/14).
# config.rules refuses a stack with the samples (which install it) on a Kubernetes minor outside it.
@dataclass(frozen=True)
class EnvoyGatewayRelease:
    version: str
    gateway_api: str
    kubernetes: tuple[str, ...]


ENVOY_GATEWAY = EnvoyGatewayRelease(version="v1.9.3", gateway_api="v1.6.1",
                                    kubernetes=("1.33", "1.34", "1.35", "1.36"))

