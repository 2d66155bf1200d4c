"""render/availability.py: the budget and spread a cluster service gets where every wave leaves it a node, against the
Kubernetes schemas."""
from __future__ import annotations

import kubernetes_validate
import pytest

from render import availability, custom_metrics, network, tls

K8S = "1.36.0"


def test_every_budget_the_program_declares_is_one_that_lets_a_drain_evict_unready_pods():
    budgets = [network.dns_disruption_budget(), tls.approver_policy_disruption_budget(),
               *custom_metrics.keda_disruption_budgets()]
    for budget in budgets:
        kubernetes_validate.validate(budget, K8S, strict=True)
        spec = budget["spec"]
        assert spec["minAvailable"] == 1 and spec["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
        assert spec["selector"]["matchLabels"]
    keys = [(b["metadata"]["namespace"], b["metadata"]["name"]) for b in budgets]
    assert len(set(keys)) == len(keys)


def test_a_budget_or_spread_without_labels_is_refused():
    with pytest.raises(ValueError, match="every pod"):
        availability.disruption_budget("x", "kube-system", {})
    with pytest.raises(ValueError):
        availability.host_spread({})


def test_the_spread_is_preferred_over_hosts():
    affinity = availability.host_spread({"app": "x"})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
           "spec": {"affinity": affinity, "containers": [{"name": "x", "image": "x:1"}]}}
    kubernetes_validate.validate(pod, K8S, strict=True)
    [term] = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
