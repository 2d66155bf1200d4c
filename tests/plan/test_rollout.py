"""plan.rollout: the waves rolling operations take, for any pool shape, and the rules each wave keeps."""
from __future__ import annotations

import random

import pytest

from plan.rollout import RolloutNode, RolloutPolicy, batch_size, worker_waves
from tests.conftest import hk_prod_values, raw_config
from tools.mock.program import run_program


@pytest.mark.parametrize("value, pool, expected", [
    ("20%", 100, 20), ("20%", 9, 1), ("20%", 10, 2), ("50%", 3, 1), ("100%", 4, 3), ("100%", 1, 1),
    (3, 10, 3), (5, 2, 1), (1, 1, 1), ("1%", 50, 1),
])
def test_batch_size_rounds_down_keeps_one_and_never_takes_a_whole_pool(value, pool, expected):
    assert batch_size(value, pool) == expected


@pytest.mark.parametrize("value", ["0%", "120%", "x", 0, -1, True])
def test_bad_max_unavailable_is_refused(value):
    with pytest.raises(ValueError):
        batch_size(value, 10)


def fleet(linux: dict[str, int], windows: dict[str, int]) -> list[RolloutNode]:
    nodes = [RolloutNode(f"lnx-{zone}-{i}", zone, "linux") for zone, n in linux.items() for i in range(n)]
    return nodes + [RolloutNode(f"win-{zone}-{i}", zone, "windows") for zone, n in windows.items() for i in range(n)]


def check_rules(workers: list[RolloutNode], waves: list[list[str]], policy: RolloutPolicy, zones: list[str]) -> None:
    by_name = {n.name: n for n in workers}
    assert sorted(name for wave in waves for name in wave) == sorted(by_name)        # every worker exactly once
    for wave in waves:
        down = {by_name[name] for name in wave}
        for zone in {n.zone for n in workers}:
            for os_name in ("linux", "windows"):
                pool = [n for n in workers if n.zone == zone and n.os == os_name]
                taken = [n for n in down if n.zone == zone and n.os == os_name]
                if pool:
                    assert len(taken) <= batch_size(policy.max_unavailable, len(pool))
            zone_workers = [n for n in workers if n.zone == zone]
            if len(zone_workers) > 1:
                assert not set(zone_workers) <= down, f"zone {zone} emptied by {wave}"
        for os_name in ("linux", "windows"):
            members = [n for n in workers if n.os == os_name]
            if len(members) > 1:
                assert not set(members) <= down, f"{os_name} emptied by {wave}"
        if not policy.zones_together:
            assert len({n.zone for n in down}) == 1
    if not policy.zones_together:
        # Zones in order: once a zone's waves are over, it never comes back.
        zone_sequence = [by_name[wave[0]].zone for wave in waves]
        assert zone_sequence == sorted(zone_sequence, key=zones.index)


def test_the_bench_fleet_at_300_nodes_takes_few_waves():
    zones = ["hk-1", "hk-2"]
    workers = fleet({"hk-1": 104, "hk-2": 104}, {"hk-1": 45, "hk-2": 44})
    policy = RolloutPolicy("20%")
    waves = worker_waves(workers, zones, policy)
    check_rules(workers, waves, policy, zones)
    # 104 Linux in 20s (6 waves) with 45 Windows in 9s (5 waves), per zone, zones one after the other.
    assert len(waves) == 12
    assert max(len(w) for w in waves) == 29


def test_zones_together_halves_the_waves():
    zones = ["hk-1", "hk-2"]
    workers = fleet({"hk-1": 10, "hk-2": 10}, {"hk-1": 5, "hk-2": 5})
    apart = worker_waves(workers, zones, RolloutPolicy(2))
    together = worker_waves(workers, zones, RolloutPolicy(2, zones_together=True))
    check_rules(workers, together, RolloutPolicy(2, zones_together=True), zones)
    assert len(together) * 2 == len(apart) == 10


def test_a_lab_upgrades_its_linux_and_windows_worker_in_turn():
    workers = fleet({"lab": 1}, {"lab": 1})
    assert worker_waves(workers, ["lab"], RolloutPolicy("20%")) == [["lnx-lab-0"], ["win-lab-0"]]


def test_a_single_worker_is_its_own_wave():
    assert worker_waves(fleet({"z": 1}, {}), ["z"], RolloutPolicy(5)) == [["lnx-z-0"]]


@pytest.mark.parametrize("seed", range(40))
def test_random_fleets_keep_every_rule(seed):
    rng = random.Random(seed)
    zones = [f"z{i}" for i in range(rng.randint(1, 3))]
    workers = fleet({z: rng.randint(0, 12) for z in zones}, {z: rng.randint(0, 6) for z in zones})
    if not workers:
        workers = fleet({zones[0]: 1}, {})
    policy = RolloutPolicy(rng.choice([1, 2, 3, "10%", "20%", "50%", "100%"]), zones_together=rng.random() < 0.5)
    check_rules(workers, worker_waves(workers, zones, policy), policy, zones)


def test_unknown_zone_is_refused():
    with pytest.raises(ValueError, match="not listed"):
        worker_waves(fleet({"x": 1}, {}), ["y"], RolloutPolicy(1))


# --- cluster services through a wave (#39 item 4) -----------------------------------------------------------------

def _budgets(recording):
    return {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r.inputs["spec"]
            for r in recording.by_type("kubernetes:policy/v1:PodDisruptionBudget")}


@pytest.mark.parametrize("max_unavailable", [None, 1, "50%", "100%"])
def test_cluster_dns_and_the_gateway_survive_every_wave_or_have_no_budget_to_block_it(max_unavailable):
    """CoreDNS (kubeadm's two replicas, on the control-plane and Linux nodes) and the Gateway's Envoy proxies (on Linux
    workers): each has a disruption budget of one, which a drain satisfies by moving one pod at a time, exactly when
    every wave of the stack's rolling operations leaves it a node to run on; where some wave drains all of its nodes
    (or it has one), no budget, which would block that drain for good."""
    from config.loader import load
    from plan.rollout import stack_waves
    from render.workloads import GATEWAY_NAMESPACE, gateway_proxy_labels
    values = hk_prod_values()
    if max_unavailable is not None:
        values["rollout"] = {"maxUnavailable": max_unavailable}
    spec = load(raw_config(values)).spec
    recording = run_program(raw_config(values))
    waves = [*stack_waves(spec), *stack_waves(spec, windows=False)]
    services = {
        ("kube-system", "coredns"): [n.name for n in spec.linux_nodes],
        "gateway": [n.name for n in spec.nodes.linux],
    }
    budgets = _budgets(recording)
    dns_kept = all(set(services[("kube-system", "coredns")]) - set(w) for w in waves)
    assert (("kube-system", "coredns") in budgets) == dns_kept
    if dns_kept:
        budget = budgets[("kube-system", "coredns")]
        assert budget["minAvailable"] == 1 and budget["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
        assert budget["selector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    [proxy] = [r for r in recording.resources if r.type == "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyProxy"]
    kubernetes = proxy.inputs["spec"]["provider"]["kubernetes"]
    gateway_kept = all(set(services["gateway"]) - set(w) for w in waves)
    assert ("envoyPDB" in kubernetes) == gateway_kept
    if gateway_kept:
        assert kubernetes["envoyPDB"]["minAvailable"] == 1
    spread = kubernetes["envoyDeployment"]["pod"]["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    assert all(c["labelSelector"]["matchLabels"] == gateway_proxy_labels() for c in spread)
    assert proxy.inputs["metadata"]["namespace"] == GATEWAY_NAMESPACE
    # Every other cluster service on the Linux workers has its budget exactly where the proxies have theirs.
    check_worker_services(recording, gateway_kept)
    # hk-prod as it is keeps all of them through every wave.
    if max_unavailable is None:
        assert dns_kept and gateway_kept


def _values(recording, suffix: str) -> dict:
    [release] = [r for r in recording.resources if r.type.startswith("kubernetes:helm.sh/") and r.name.endswith(suffix)]
    return release.inputs["values"]


def _spread_over_hosts(affinity: dict, labels: dict[str, str]) -> bool:
    terms = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    return any(t["podAffinityTerm"] == {"topologyKey": "kubernetes.io/hostname",
                                        "labelSelector": {"matchLabels": labels}} for t in terms)


def check_worker_services(recording, kept: bool) -> None:
    """metrics-server, the Gateway's controller, cert-manager's webhook, approver-policy, KEDA's operator, metrics
    server and webhooks, and Gatekeeper's webhook (#39 item 4): where every wave leaves the Linux workers one (`kept`),
    two replicas spread over nodes and exactly one budget of one that lets a drain evict an unready pod; elsewhere no
    budget at all (Gatekeeper's, which its chart always renders, at 0). Never two budgets over one service: the
    eviction API refuses to evict a pod two budgets select (render/availability.py)."""
    budgets = _budgets(recording)
    always_allow = {"minAvailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    # Charts whose own budget renders every field: the budget comes from their values.
    metrics = _values(recording, "-metrics-server-metrics-server")
    gateway = _values(recording, "-samples-envoy-gateway")
    webhook = _values(recording, "-tls-cert-manager").get("webhook", {})
    assert ("podDisruptionBudget" in metrics) == kept
    assert ("podDisruptionBudget" in gateway) == kept
    assert ("podDisruptionBudget" in webhook) == kept
    # Charts whose own budget cannot say unhealthyPodEvictionPolicy: theirs stays off, the program's is an object.
    approver = _values(recording, "-tls-approver-policy")
    keda = _values(recording, "-custom-metrics-keda")
    assert "podDisruptionBudget" not in approver and "podDisruptionBudget" not in keda
    own = {("cert-manager", "cert-manager-approver-policy"): {"app": "cert-manager-approver-policy"},
           **{("keda", app): {"app": app} for app in
              ("keda-operator", "keda-operator-metrics-apiserver", "keda-admission-webhooks")}}
    for key, labels in own.items():
        assert (key in budgets) == kept, key
        if kept:
            assert budgets[key] == {**always_allow, "selector": {"matchLabels": labels}}
    gatekeeper = _values(recording, "-policy-gatekeeper")
    assert gatekeeper["pdb"] == {"controllerManager": {"minAvailable": 1 if kept else 0}}
    if not kept:
        assert "replicaCount" not in approver and set(keda) == {"crds"}
        return
    assert metrics["podDisruptionBudget"] == {"enabled": True, **always_allow} and metrics["replicas"] == 2
    assert _spread_over_hosts(metrics["affinity"], {"app.kubernetes.io/name": "metrics-server"})
    assert gateway["podDisruptionBudget"] == always_allow and gateway["deployment"]["replicas"] == 2
    assert _spread_over_hosts(gateway["deployment"]["pod"]["affinity"], {"control-plane": "envoy-gateway"})
    assert webhook["podDisruptionBudget"] == {"enabled": True, **always_allow} and webhook["replicaCount"] == 2
    assert _spread_over_hosts(webhook["affinity"], {"app.kubernetes.io/component": "webhook"})
    assert approver["replicaCount"] == 2
    assert _spread_over_hosts(approver["affinity"], own[("cert-manager", "cert-manager-approver-policy")])
    for component, app in (("operator", "keda-operator"), ("metricsServer", "keda-operator-metrics-apiserver"),
                           ("webhooks", "keda-admission-webhooks")):
        assert keda[component]["replicaCount"] == 2 and _spread_over_hosts(keda[component]["affinity"], {"app": app})


def test_a_single_linux_worker_gets_no_budget_to_block_its_drain():
    """A lab with one Linux worker and every section whose services run there: no budget could be met while that
    worker drains, so none exists (Gatekeeper's chart default of 1 blocked the drain before, #39 item 4)."""
    from tests.program.test_examples import LAB, values_of
    values = values_of(LAB)
    hk = hk_prod_values()
    values["workloads"] = {"sampleHost": "samples.lab.example.com"}
    values["policy"] = hk["policy"]
    values["tls"] = {"ca": {}}
    values["observability"] = {"metrics": {}}
    values["customMetrics"] = {}
    recording = run_program(raw_config(values))
    [proxy] = [r for r in recording.resources if r.type == "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyProxy"]
    assert "envoyPDB" not in proxy.inputs["spec"]["provider"]["kubernetes"]
    check_worker_services(recording, kept=False)
    # One control-plane node and one worker: CoreDNS keeps a node through each (a wave of one each).
    assert ("kube-system", "coredns") in _budgets(recording)
