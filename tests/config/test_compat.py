"""Structural checks on the compatibility matrix in config.compat: the tables agree with the rules
they encode (kubeadm API lifetimes, the cgroup v1 cut-off, Windows tag naming), and every image
reference is one a registry mirror can resolve and pin."""
from __future__ import annotations

import re
import sys
from dataclasses import fields
from pathlib import Path

import pytest

# The repository has no installed package or root conftest; make `config` importable when pytest
# is run as `.venv/bin/pytest tests/config/test_compat.py` from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from config import compat

# registry host (has a dot or a port), repository path, and a tag; no digest-only or bare names.
IMAGE_REF = re.compile(r"^(?P<host>[a-z0-9.-]+\.[a-z]{2,}(?::\d+)?)/(?P<path>[a-z0-9._/-]+):(?P<tag>[\w][\w.-]{0,127})$")
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")


def _minor_tuple(minor: str) -> tuple[int, int]:
    major, minor_number = minor.split(".")
    return int(major), int(minor_number)


def _image_refs() -> list[tuple[str, str]]:
    refs = []
    for minor, release in compat.KUBERNETES.items():
        refs.append((f"KUBERNETES[{minor}].pause_image", release.pause_image))
    for key, build in compat.WINDOWS.items():
        for field in fields(build):
            value = getattr(build, field.name)
            if field.name.endswith("_image") and value is not None:
                # format strings are checked with a real patch filled in
                refs.append((f"WINDOWS[{key}].{field.name}", value.format(version="1.35.9")))
    return refs


@pytest.mark.parametrize(("where", "ref"), _image_refs())
def test_image_references_are_fully_qualified_and_pinned(where, ref):
    match = IMAGE_REF.match(ref)
    assert match, f"{where}: {ref!r} is not registry/path:tag"
    assert match.group("tag") != "latest", f"{where} floats on :latest"
    assert "{" not in ref and "}" not in ref, f"{where} left a placeholder unformatted"


def test_table_keys_match_their_entries():
    assert all(key == release.minor for key, release in compat.KUBERNETES.items())
    assert all(key == distro.key for key, distro in compat.DISTROS.items())
    assert all(key == build.key for key, build in compat.WINDOWS.items())


@pytest.mark.parametrize("minor", sorted(compat.KUBERNETES))
def test_release_fields_are_consistent(minor):
    release = compat.KUBERNETES[minor]
    assert compat.kubernetes_minor(release.patch) == minor
    assert SEMVER.match(release.patch), release.patch
    assert SEMVER.match(release.containerd), release.containerd
    assert release.kubeadm_api in compat.accepted_kubeadm_apis(minor)
    assert release.refuses_cgroup_v1 == compat.kubelet_refuses_cgroup_v1(minor)


def test_every_minor_uses_the_newest_kubeadm_api_it_reads():
    # v1beta4 exists from 1.31; writing v1beta3 where v1beta4 is available only postpones a migration.
    for minor, release in compat.KUBERNETES.items():
        accepted = compat.accepted_kubeadm_apis(minor)
        assert release.kubeadm_api == accepted[-1], (minor, accepted)


def test_kubeadm_api_lifetimes():
    assert compat.accepted_kubeadm_apis("1.30") == (compat.KUBEADM_V1BETA3,)
    assert compat.accepted_kubeadm_apis("1.31") == (compat.KUBEADM_V1BETA3, compat.KUBEADM_V1BETA4)
    assert compat.accepted_kubeadm_apis("1.35") == (compat.KUBEADM_V1BETA3, compat.KUBEADM_V1BETA4)
    assert compat.accepted_kubeadm_apis("1.36") == (compat.KUBEADM_V1BETA4,)
    assert compat.accepted_kubeadm_apis("1.21") == ()


def test_containerd_1x_is_not_pinned_where_kubernetes_dropped_it():
    for minor, release in compat.KUBERNETES.items():
        if _minor_tuple(minor) >= (1, 36):
            assert int(release.containerd.split(".")[0]) >= 2, (minor, release.containerd)


def test_supported_minors_are_maintained_and_consecutive():
    minors = compat.supported_versions()
    assert minors, "no Kubernetes minor is supported"
    for minor in minors:
        assert compat.KUBERNETES[minor].end_of_life > compat.AS_OF, f"{minor} is past end of life"
    numbers = [_minor_tuple(m) for m in minors]
    for older, newer in zip(numbers, numbers[1:], strict=False):
        assert newer == (older[0], older[1] + 1), f"gap between {older} and {newer}"


def test_pause_image_never_goes_backwards_between_minors():
    tags = [tuple(int(p) for p in compat.KUBERNETES[m].pause_image.rsplit(":", 1)[1].split("."))
            for m in compat.supported_versions()]
    assert tags == sorted(tags)


def test_package_manager_matches_family():
    allowed = {"debian": {"apt"}, "rhel": {"dnf", "yum"}}
    for key, distro in compat.DISTROS.items():
        assert distro.package_manager in allowed[distro.family], key


def test_cgroup_v1_distros_are_capped_just_below_the_refusing_kubelet():
    for key, distro in compat.DISTROS.items():
        if distro.cgroup_v2:
            assert distro.max_kubernetes_minor is None, key
            continue
        cap = distro.max_kubernetes_minor
        assert cap is not None, f"{key} runs cgroup v1 but has no Kubernetes cap"
        assert not compat.kubelet_refuses_cgroup_v1(cap)
        major, minor = _minor_tuple(cap)
        assert compat.kubelet_refuses_cgroup_v1(f"{major}.{minor + 1}")


@pytest.mark.parametrize("key", sorted(compat.WINDOWS))
def test_windows_build_naming_agrees(key):
    build = compat.WINDOWS[key]
    year = key.removeprefix("win")
    assert build.ltsc_tag == f"ltsc{year}"
    assert re.match(r"^10\.0\.\d{5}$", build.build), build.build
    if build.fluent_bit_image is not None:
        # Fluent Bit's Windows images are per Server release; the tag must name this one.
        assert f":windows-{year}-" in build.fluent_bit_image


def test_windows_builds_are_ordered_like_their_releases():
    by_year = sorted(compat.WINDOWS.values(), key=lambda b: b.ltsc_tag)
    builds = [int(b.build.rsplit(".", 1)[1]) for b in by_year]
    assert builds == sorted(builds) and len(set(builds)) == len(builds)


def test_kube_proxy_image_is_a_template_over_the_patch():
    for key, build in compat.WINDOWS.items():
        if build.kube_proxy_image is not None:
            assert "{version}" in build.kube_proxy_image, key
            for release in compat.KUBERNETES.values():
                assert release.patch in build.kube_proxy_image.format(version=release.patch)


def test_an_upstream_supported_build_has_every_image():
    for key, build in compat.WINDOWS.items():
        if build.upstream_supported:
            missing = [f.name for f in fields(build) if f.name.endswith("_image") and getattr(build, f.name) is None]
            assert not missing, (key, missing)


@pytest.mark.parametrize(("version", "minor"), [
    ("1.34.2", "1.34"),
    ("v1.35.9", "1.35"),
    ("1.36", "1.36"),
    (" 1.37.1 ", "1.37"),
    ("1.100.0", "1.100"),
])
def test_kubernetes_minor(version, minor):
    assert compat.kubernetes_minor(version) == minor


@pytest.mark.parametrize("version", ["", "1", "latest", "1.35.x", "1.35.0-rc.1", "v"])
def test_kubernetes_minor_rejects_non_versions(version):
    with pytest.raises(ValueError):
        compat.kubernetes_minor(version)


def test_supported_versions_sorts_numerically(monkeypatch):
    release = next(iter(compat.KUBERNETES.values()))
    monkeypatch.setattr(compat, "KUBERNETES", {"1.10": release, "1.9": release, "1.100": release})
    assert compat.supported_versions() == ["1.9", "1.10", "1.100"]


def test_supported_versions_lists_the_table():
    assert set(compat.supported_versions()) == set(compat.KUBERNETES)


def test_only_1_35_needs_the_mutating_admission_policy_beta_for_calicos_v3_crds():
    # GA (admissionregistration.k8s.io/v1, served by default) from 1.36; beta and off by default in 1.35.
    assert dict(compat.KUBERNETES["1.35"].api_server_args) == {
        "feature-gates": "MutatingAdmissionPolicy=true",
        "runtime-config": "admissionregistration.k8s.io/v1beta1=true",
    }
    assert all(not compat.KUBERNETES[m].api_server_args for m in compat.KUBERNETES if m != "1.35")


# --- Helm charts: one home, each pin with its evidence --------------------------------------------------------


@pytest.mark.parametrize("key", sorted(compat.CHARTS))
def test_every_chart_pin_records_where_it_was_seen_and_where_its_values_keys_come_from(key):
    chart = compat.CHARTS[key]
    assert chart.repo.startswith(("https://", "oci://"))
    # Calico, Envoy Gateway and cert-manager spell their chart versions with a "v" (Calico's install guide:
    # --version $[releaseTitle]; Envoy Gateway's OCI tags, e.g. v1.7.1; cert-manager's --version
    # {{RELEASE_VERSION}}, its release tag); the others as their chart index does, bare.
    v_prefixed = chart.repo in ("https://docs.tigera.io/calico/charts", "oci://docker.io/envoyproxy",
                                "oci://quay.io/jetstack/charts")
    pattern = r"v\d+\.\d+\.\d+" if v_prefixed else r"\d+\.\d+\.\d+"
    assert re.fullmatch(pattern, chart.version), chart.version
    assert chart.evidence.strip() and chart.values_source.strip()
    # Released versions only: a chart whose index lives on a branch is installed from its archive at a commit, with
    # the archive's SHA-256 recorded as that commit's index lists it (#37 item 7).
    if re.search(r"/(master|main)/", chart.repo):
        assert chart.archive and re.search(r"/[0-9a-f]{40}/charts/v?" + re.escape(chart.version) + "/", chart.archive)
        assert chart.archive.endswith(f"{chart.chart}-{chart.version}.tgz")
        assert chart.archive_sha256 and re.fullmatch(r"[0-9a-f]{64}", chart.archive_sha256)
        assert chart.archive_sha256[:8] in chart.evidence
    assert (chart.archive is None) == (chart.archive_sha256 is None)


def test_both_calico_charts_are_one_calico_release():
    assert compat.CHARTS["calico-crds"].version == compat.CHARTS["tigera-operator"].version == compat.CALICO_VERSION


def test_gatekeeper_is_recent_enough_for_rego_v1_templates():
    # Rego v1 in templates needs Gatekeeper 3.19 or later.
    major, minor, _ = (int(x) for x in compat.CHARTS["gatekeeper"].version.split("."))
    assert (major, minor) >= (3, 19)


def test_no_renderer_pins_a_chart_or_an_image_tag_of_its_own():
    """Versions live in config/compat.py only: the render modules hold no chart dict with a version and no
    component image tag, so a bump is one edit in one file."""
    import render
    offenders = []
    for path in sorted(Path(render.__file__).parent.glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r'"version":\s*"v?\d+\.\d+', code) or re.search(r"_VERSION\s*=\s*\"v?\d", code):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert offenders == []


# Downloads config/compat.py cannot pin yet, each reviewed: no authoritative SHA-256 was found offline (docs/security.md,
# "Downloads"). A download leaves this list when its digest is pinned; nothing joins it silently.
KNOWN_UNPINNED = {
    compat.containerd_archive_url("2.3.5", "amd64"),
    compat.containerd_archive_url("2.3.5", "arm64"),
}


@pytest.mark.parametrize("minor", sorted(compat.KUBERNETES))
def test_every_download_of_a_supported_minor_is_pinned_or_a_reviewed_exception(minor):
    release = compat.KUBERNETES[minor]
    downloads = compat.runtime_downloads(release.containerd, release.runc)
    assert set(downloads) <= set(compat.DOWNLOADS), "a download config/compat.py has no entry for"
    unpinned = {url for url, pin in downloads.items() if pin is None}
    assert unpinned <= KNOWN_UNPINNED, f"downloads with no SHA-256 pinned: {sorted(unpinned - KNOWN_UNPINNED)}"
    # The unit file has no checksum published beside it: it must be pinned.
    assert downloads[compat.containerd_unit_url(release.containerd)] is not None


def test_every_pin_is_a_sha256_with_its_source():
    assert {url for url, pin in compat.DOWNLOADS.items() if pin is None} == KNOWN_UNPINNED
    for url, pin in compat.DOWNLOADS.items():
        assert url.startswith("https://")
        if pin is not None:
            assert re.fullmatch(r"[0-9a-f]{64}", pin.sha256) and len(pin.evidence) > 20, url
