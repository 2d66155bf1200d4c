"""The platform layers as declared by the program: cluster network, scheduling, workloads."""
from __future__ import annotations

import json

import pytest

from tests.conftest import hk_prod_values, raw_config
from tests.crd_schema import SCHEMA_DIR, validate_custom_resource
from tools.mockrun import Recording, run_program
from tools.synth import plain

INSTALLATION_SCHEMA = SCHEMA_DIR / "operator.tigera.io_v1_Installation.json"


@pytest.fixture(scope="module")
def hk() -> Recording:
    return run_program(raw_config(hk_prod_values()))


def closure(recording: Recording, urn: str) -> set[str]:
    by_urn = recording.by_urn()
    seen: set[str] = set()
    stack = list(by_urn[urn].dependencies)
    while stack:
        dep = stack.pop()
        if dep not in seen and dep in by_urn:
            seen.add(dep)
            stack.extend(by_urn[dep].dependencies)
    return seen


def changed(before: Recording, after: Recording) -> set[str]:
    old = {r.urn: json.dumps(plain(r.inputs), sort_keys=True) for r in before.resources}
    new = {r.urn: json.dumps(plain(r.inputs), sort_keys=True) for r in after.resources}
    return {urn.split("::")[-1] for urn in old.keys() | new.keys() if old.get(urn) != new.get(urn)}


def test_installation_as_declared_passes_the_strict_crd_schema(hk):
    installation = plain(hk.named("hk-prod-network-installation").inputs)
    assert installation["apiVersion"] == "operator.tigera.io/v1" and installation["kind"] == "Installation"
    validate_custom_resource(installation, INSTALLATION_SCHEMA)
    spec = installation["spec"]
    assert spec["calicoNetwork"]["mtu"] == 1450 and spec["calicoNetwork"]["bgp"] == "Disabled"
    assert spec["calicoNetwork"]["windowsDataplane"] == "HNS"
    assert spec["serviceCIDRs"] == ["10.96.0.0/12"]
    assert "kubernetesProvider" not in spec


def test_calico_comes_up_in_the_order_the_operator_needs(hk):
    crds = hk.named("hk-prod-network-calico-crds").urn
    felix = hk.named("hk-prod-network-felixconfiguration-default").urn
    ipam = hk.named("hk-prod-network-ipamconfiguration-default").urn
    operator = hk.named("hk-prod-network-tigera-operator")
    installation = hk.named("hk-prod-network-installation")
    assert {crds, felix, ipam} <= set(operator.dependencies)
    assert operator.urn in installation.dependencies
    values = operator.inputs["values"]
    assert values["installation"]["enabled"] is False
    assert values["kubernetesServiceEndpoint"]["host"] == "10.30.30.10"


def test_windows_joins_wait_for_calico_and_linux_joins_do_not(hk):
    installation = hk.named("hk-prod-network-installation").urn
    for node in ("hk-win-1", "hk-win-2", "hk-win-3"):
        assert installation in closure(hk, hk.named(f"hk-prod-kubeadm-windows-{node}-join").urn)
    for node in ("hk-cp-2", "hk-lnx-1"):
        assert installation not in closure(hk, hk.named(f"hk-prod-kubeadm-{node}-join").urn)


def test_windows_kube_proxy_follows_calico(hk):
    daemonset = hk.named("hk-prod-network-daemonset-kube-system-kube-proxy-windows")
    assert hk.named("hk-prod-network-installation").urn in closure(hk, daemonset.urn)
    assert daemonset.inputs["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "windows"}


def test_mtu_change_touches_only_calico(hk):
    values = hk_prod_values()
    values["calico"]["mtu"] = 1400
    assert changed(hk, run_program(raw_config(values))) == {"hk-prod-network-installation"}
