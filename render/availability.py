"""What keeps a cluster service up through a wave of drains (#39 item 4): its replicas spread over hosts, and a
disruption budget of one that a drain can always satisfy. plan/platform.py survives_every_wave decides where a budget
may exist at all: only where every wave of the stack's rolling operations leaves the service a node, since a budget
whose pods have nowhere to go blocks that drain for good.

This module owns those two shapes; each renderer applies them to its service, through its chart's values where the
chart renders every field below, or as an object of its own where it does not. Pure: plain values in, dicts out.

Design decisions, with their sources:

* minAvailable 1 (policy/v1 PodDisruptionBudget): a drain evicts one pod, waits for it to run elsewhere, then the next.
* ``unhealthyPodEvictionPolicy: AlwaysAllow`` (GA in Kubernetes 1.31, the field description in the v1.36 schema):
  under the default IfHealthyBudget, a pod that is running but not Ready may be evicted only while the budget is
  met, so two crash-looping replicas would hold a drain forever; AlwaysAllow evicts them.
* A soft anti-affinity over ``kubernetes.io/hostname`` (preferred, weight 100): two replicas on one node would both
  go in one drain; a hard rule would leave a replica Pending on a one-node pool.
* Two PodDisruptionBudgets must never select one pod: the eviction API refuses to evict it ("This pod has more than
  one PodDisruptionBudget, which the eviction subresource does not support", kubernetes pkg/registry/core/pod/
  storage/eviction.go), so a service whose chart renders a budget of its own gets no second one here.
"""
from __future__ import annotations

from typing import Any

from vocab.checks import DNS_LABEL, require

HOSTNAME_KEY = "kubernetes.io/hostname"
REPLICAS = 2                     # a service with a budget: one to evict, one to serve
MIN_AVAILABLE = 1
UNHEALTHY_POD_EVICTION = "AlwaysAllow"


def budget_fields() -> dict[str, Any]:
    """The budget's spec fields other than its selector, for a chart that renders them from values."""
    return {"minAvailable": MIN_AVAILABLE, "unhealthyPodEvictionPolicy": UNHEALTHY_POD_EVICTION}


def disruption_budget(name: str, namespace: str, match_labels: dict[str, str]) -> dict[str, Any]:
    """A PodDisruptionBudget of one for the pods ``match_labels`` selects, declared by this program."""
    require(bool(DNS_LABEL.match(namespace)), f"namespace {namespace!r} is not a DNS-1123 label")
    require(bool(match_labels), f"{name}: a budget with an empty selector would select every pod in {namespace}")
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
            "spec": {**budget_fields(), "selector": {"matchLabels": dict(match_labels)}}}


def host_spread(match_labels: dict[str, str]) -> dict[str, Any]:
    """An affinity that prefers one replica per node for the pods ``match_labels`` selects."""
    require(bool(match_labels), "a spread needs the service's labels")
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100,
        "podAffinityTerm": {"topologyKey": HOSTNAME_KEY, "labelSelector": {"matchLabels": dict(match_labels)}}}]}}
