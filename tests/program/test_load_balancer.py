"""The LoadBalancer implementation (config `loadBalancer`, MetalLB in layer 2 mode): the pool and announcement
against their upstream CRD schemas, the chart's values, the address rules at their key paths, and the program:
MetalLB only with the section, the samples' Gateway on a LoadBalancer address with it and on NodePort 30080
without it."""
from __future__ import annotations

import pytest

from render import load_balancer, workloads
from tests.conftest import hk_prod_spec, hk_prod_values, problems, raw_config
from tests.crd_schema import CustomResourceInvalid, validate_custom_resource
from tools.mock.program import run_program
from tools.synth import plain


def test_pool_and_announcement_pass_their_crd_schemas_strictly():
    pool = load_balancer.address_pool(("10.30.30.200-10.30.30.220", "10.30.30.192/29"))
    validate_custom_resource(pool, "metallb.io_v1beta1_IPAddressPool.json")
    validate_custom_resource(load_balancer.l2_advertisement(), "metallb.io_v1beta1_L2Advertisement.json")
    assert pool["spec"]["addresses"] == ["10.30.30.200-10.30.30.220", "10.30.30.192/29"]
    # Strict: a misspelt field (the API server would prune it) is an error.
    with pytest.raises(CustomResourceInvalid):
        validate_custom_resource({**pool, "spec": {**pool["spec"], "autoassign": True}}, "metallb.io_v1beta1_IPAddressPool.json")


def test_layer_2_only_and_placement_left_to_the_chart():
    values = load_balancer.metallb_values()
    assert values == {"frrk8s": {"enabled": False}, "speaker": {"frr": {"enabled": False}}}
    # The chart writes nodeSelector kubernetes.io/os: linux itself; a value would duplicate the key.
    assert "nodeSelector" not in repr(values)
    assert load_balancer.l2_advertisement()["spec"]["nodeSelectors"] == [{"matchLabels": {"kubernetes.io/os": "linux"}}]


@pytest.mark.parametrize("addresses, path, fragment", [
    (["10.40.0.1-10.40.0.9"], "loadBalancer.addresses[0]", "not inside network.nodes"),
    (["10.30.30.20-10.30.30.30"], "loadBalancer.addresses[0]", "10.30.30.21 (nodes.linux[0].ip)"),
    (["10.30.30.5-10.30.30.10"], "loadBalancer.addresses[0]", "cluster.apiVip"),
    (["10.30.30.250-10.30.30.255"], "loadBalancer.addresses[0]", "broadcast"),
    (["10.30.30.200-10.30.30.220", "10.30.30.210/31"], "loadBalancer.addresses[1]", "overlaps loadBalancer.addresses[0]"),
    (["10.30.30.220-10.30.30.200"], "loadBalancer.addresses[0]", "first-last"),
    (["10.30.30.201/24"], "loadBalancer.addresses[0]", "first-last"),
    ([], "loadBalancer.addresses", "at least 1"),
])
def test_bad_ranges_are_refused_at_their_key_path(addresses, path, fragment):
    values = hk_prod_values()
    values["loadBalancer"] = {"addresses": addresses}
    found = problems(values)
    assert any(p.startswith(f"{path}: ") and fragment in p for p in found), found


def test_hk_prod_pool_is_valid():
    assert hk_prod_spec().load_balancer.addresses == ["10.30.30.200-10.30.30.220"]


def test_the_program_installs_metallb_and_puts_the_gateway_on_a_load_balancer_address(hk_recording):
    release = hk_recording.named("hk-prod-load-balancer-metallb")
    pool = hk_recording.named("hk-prod-load-balancer-ipaddresspool-metallb-system-hybrid-cluster")
    assert release.urn in pool.dependencies
    proxy = plain(hk_recording.named("hk-prod-samples-envoyproxy-envoy-gateway-system-hybrid-samples").inputs)
    service = proxy["spec"]["provider"]["kubernetes"]["envoyService"]
    assert service == {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}
    gateway = hk_recording.named("hk-prod-samples-gateway-envoy-gateway-system-samples")
    assert pool.urn in hk_recording.waits_for(gateway.urn)


def test_without_the_section_no_metallb_and_the_gateway_stays_on_its_node_port():
    values = hk_prod_values()
    del values["loadBalancer"]
    recording = run_program(raw_config(values))
    assert not [r for r in recording.resources if "load-balancer" in r.name]
    proxy = plain(recording.named("hk-prod-samples-envoyproxy-envoy-gateway-system-hybrid-samples").inputs)
    service = proxy["spec"]["provider"]["kubernetes"]["envoyService"]
    assert service["type"] == "NodePort"
    assert service["patch"]["value"]["spec"]["ports"][0]["nodePort"] == workloads.GATEWAY_HTTP_NODE_PORT
