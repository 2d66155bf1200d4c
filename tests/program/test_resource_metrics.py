"""The resource metrics API (config `resourceMetrics`): kubelet serving certificates from the cluster CA, their approver
on the control-plane nodes (its program is tests/render/test_serving_approver.py's) and metrics-server. Their values as
rendered and their place in the graph under the mock engine: a new cluster has them from its init, an existing one
gets them on its next `up` in waves without any node being re-created, and switching them off takes every kubelet back
first. The kubelet steps' scripts are tests/render/test_kubelet_config.py's."""
from __future__ import annotations

import copy

import pytest

from config.loader import load
from plan.nodes import cluster_params
from plan.rollout import stack_waves
from render import kubeadm, resource_metrics, serving_approver
from tests.conftest import hk_prod_values, raw_config
from tools.mock.program import Recording, run_program

# --- rendered values -------------------------------------------------------------------------------------------

def test_the_kubelet_configuration_asks_the_cluster_ca_only_when_on(hk_values):
    on = kubeadm.kubelet_config(cluster_params(load(raw_config(hk_values)).spec))
    assert on["serverTLSBootstrap"] is True
    hk_values["resourceMetrics"] = {"enabled": False}
    hk_values.pop("customMetrics")
    off = kubeadm.kubelet_config(cluster_params(load(raw_config(hk_values)).spec))
    # Off: the document a cluster without it always had, byte for byte.
    assert "serverTLSBootstrap" not in off and {k: v for k, v in on.items() if k != "serverTLSBootstrap"} == off


def test_metrics_server_verifies_kubelets_and_runs_on_linux():
    values = resource_metrics.metrics_server_values(budget=True)
    assert values["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert "insecure" not in repr(values).lower()
    assert values["replicas"] == 2 and values["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1,
                                                                     "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    # One Linux worker (the lab): no budget that would hold its drain forever.
    single = resource_metrics.metrics_server_values(budget=False)
    assert single["replicas"] == 1 and "podDisruptionBudget" not in single


def test_the_approver_knows_each_node_by_its_own_name_and_address(hk_values):
    """Each node of the stack once, with its own address: never the API VIP, the load-balancer pool or any other
    address of the node network."""
    from plan.platform import resource_metrics_plan
    spec = load(raw_config(hk_values)).spec
    plan = resource_metrics_plan(spec)
    assert plan is not None
    lines = serving_approver.inventory(plan.nodes).splitlines()
    nodes = [*spec.linux_nodes, *spec.nodes.windows]
    assert lines == sorted(f"{n.name} {n.ip}" for n in nodes)
    assert not any(line.endswith(f" {spec.cluster.api_vip}") for line in lines)
    with pytest.raises(ValueError):
        serving_approver.inventory(())
    with pytest.raises(ValueError):
        serving_approver.inventory((("Bad_Name", "10.30.30.21"),))
    with pytest.raises(ValueError, match="two addresses"):
        serving_approver.inventory((("hk-lnx-1", "10.30.30.21"), ("hk-lnx-1", "10.30.30.22")))
    # A lost node is left out: its machine is gone.
    lost = copy.deepcopy(hk_values)
    next(n for n in lost["nodes"]["linux"] if n["name"] == "hk-lnx-4")["lost"] = True
    lost_plan = resource_metrics_plan(load(raw_config(lost)).spec)
    assert lost_plan is not None and "hk-lnx-4" not in dict(lost_plan.nodes)


# --- the graph -------------------------------------------------------------------------------------------------

# The approver on each control-plane node of hk-prod, and its identity's role and binding.
APPROVERS = [f"hk-prod-kubelet-serving-approver-{node}" for node in ("hk-cp-1", "hk-cp-2", "hk-cp-3")]
APPROVER_ROLE = ["hk-prod-kubelet-serving-approver-role", "hk-prod-kubelet-serving-approver-binding"]

def _serving(recording: Recording) -> list:
    """Each node's kubelet-config step, without the gates between waves (components/cluster/waves.py)."""
    return [r for r in recording.by_type("command:remote:Command")
            if r.name.startswith("hk-prod-kubelet-config-") and not r.name.startswith("hk-prod-kubelet-config--wave-")]


def test_the_kubelets_move_in_the_stacks_waves_after_the_approver_and_the_restarts(hk_recording):
    hk = hk_recording
    spec = load(raw_config(hk_prod_values())).spec
    waves = stack_waves(spec)
    by_name = {r.name.removeprefix("hk-prod-kubelet-config-"): r for r in _serving(hk)}
    assert sorted(by_name) == sorted(n for wave in waves for n in wave)
    approvers = {hk.named(name).urn for name in APPROVERS}
    last_restart = [r for r in hk.by_type("command:remote:Command") if r.name.startswith("hk-prod-restarts-")][-1]
    for node in waves[0]:
        assert {*approvers, last_restart.urn} <= set(by_name[node].dependencies)
    steps = {r.urn for r in by_name.values()}
    gates = [hk.named(f"hk-prod-kubelet-config--wave-{index}") for index in range(len(waves))]
    for index, wave in enumerate(waves):
        # The wave's gate (components/cluster/waves.py) waits for every kubelet of the wave.
        assert set(gates[index].dependencies) == {by_name[n].urn for n in wave}
        for node in wave if index else ():
            # The gate of the wave before, and no kubelet's step (the rest is the node's own machine, whose id the
            # text names).
            assert gates[index - 1].urn in by_name[node].dependencies
            assert not set(by_name[node].dependencies) & steps
    metrics_server = hk.named("hk-prod-metrics-server-metrics-server")
    assert gates[-1].urn in metrics_server.dependencies
    # Each step runs on create too (an existing cluster meets it that way) and leaves nothing to delete.
    for step in by_name.values():
        assert step.inputs["create"] == step.inputs["update"] and not step.inputs.get("delete")


def test_every_join_waits_for_the_cluster_kubelet_configuration(hk_recording):
    sync = hk_recording.named("hk-prod-kubeadm-kubelet-config")
    credentials = [r for r in hk_recording.by_type("command:remote:Command") if r.name.endswith("-join-credentials")]
    assert len(credentials) == 9
    assert all(sync.urn in r.dependencies for r in credentials)


def _values(enabled: bool) -> dict:
    values = hk_prod_values()
    values["resourceMetrics"] = {"enabled": enabled}
    if not enabled:
        values.pop("customMetrics")
    return values


def test_an_existing_cluster_gets_serving_certificates_on_its_next_up_without_new_nodes():
    before = run_program(raw_config(_values(False)), stack="hk-prod")
    after = run_program(raw_config(_values(True)), stack="hk-prod", state=before.state)
    assert not after.plan.errors
    changed = after.plan.changed
    # No machine, join or node step is replaced or re-run: only the kubelet configuration, each kubelet's step, the
    # approver, metrics-server, KEDA and the samples' autoscalers.
    assert not after.plan.ops("replace") and not after.plan.ops("delete")
    assert all("-vm" not in n and "-join" not in n and "upgrade" not in n for n in changed), sorted(changed)
    assert after.plan.of("hk-prod-kubeadm-kubelet-config") == ["update"]
    for step in _serving(after):
        assert after.plan.of(step.name) == ["update"]
    for created in (*APPROVERS, *APPROVER_ROLE, "hk-prod-metrics-server-metrics-server",
                    "hk-prod-custom-metrics-keda", "hk-prod-samples-horizontalpodautoscaler-win-prod-api-win",
                    "hk-prod-samples-scaledobject-linux-prod-api-linux"):
        assert after.plan.of(created) == ["create"], created
    # The Deployments keep their replica counts: they were declared before and are not touched now.
    assert not any("deployment" in n for n in changed)
    # And the order the run takes: the configuration before any kubelet, the approver before the first wave.
    names = [s.name for s in after.plan.steps if s.op != "same"]
    first_step = min(names.index(s.name) for s in _serving(after))
    assert names.index("hk-prod-kubeadm-kubelet-config") < first_step
    assert max(names.index(name) for name in APPROVERS) < first_step


def test_switching_off_takes_every_kubelet_back_before_the_approver_goes():
    before = run_program(raw_config(_values(True)), stack="hk-prod")
    after = run_program(raw_config(_values(False)), stack="hk-prod", state=before.state)
    assert not after.plan.errors
    steps = [s.name for s in after.plan.steps if s.op != "same"]
    for step in _serving(after):
        assert after.plan.of(step.name) == ["update"]
    for name in (*APPROVERS, *APPROVER_ROLE):
        assert after.plan.of(name) == ["delete"], name
    last_kubelet = max(steps.index(s.name) for s in _serving(after))
    assert min(steps.index(name) for name in APPROVERS) > last_kubelet
    assert not any(n.startswith("hk-prod-metrics-server") for n in {r.name for r in after.resources})
    # No autoscaler without the metrics API; the samples' Deployments stay.
    assert not any("horizontalpodautoscaler" in r.name or "scaledobject" in r.name for r in after.resources)


def test_no_upgrade_restarts_a_kubelet_before_the_configuration_and_the_approver(hk_recording):
    """An upgrade restarts kubelets with the configuration it downloads, and `kubeadm upgrade apply` uploads the one it
    read: the first wave waits for the kubelet-config step and for the approver."""
    hk = hk_recording
    first_drain = hk.named("hk-prod-upgrade-hk-cp-1-drain-for-upgrade")
    assert {hk.named("hk-prod-kubeadm-kubelet-config").urn,
            *(hk.named(name).urn for name in APPROVERS)} <= set(first_drain.dependencies)
