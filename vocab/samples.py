"""The sample workloads' sizes, which both the renderer (render/workloads.py, their pods) and the configuration check
(config.rules, whether the namespace quotas hold them at their peak) need.

Sizing: requests are what the scheduler and the namespace quota count; limits leave headroom for a garbage-collected
runtime under load. Sized for samples, not measured.
"""
from __future__ import annotations

from decimal import Decimal

from vocab.namespaces import parse_quantity

WIN_RESOURCES = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
LINUX_RESOURCES = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "768Mi"}}
RESOURCES = {"windows": WIN_RESOURCES, "linux": LINUX_RESOURCES}
# A Deployment's surge during a rolling update (render/workloads.py: maxSurge 1, maxUnavailable 0).
SURGE = 1
QUOTA_KEYS = ("pods", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")


def footprint(per_pod: dict[str, dict[str, str]], pods: int) -> dict[str, Decimal]:
    """What ``pods`` pods of one container sized ``per_pod`` hold against a ResourceQuota, by quota key."""
    totals = {"pods": Decimal(pods)}
    for kind in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            totals[f"{kind}.{resource}"] = parse_quantity(per_pod[kind][resource]) * pods
    return totals


def peak_pods(replicas: int, max_replicas: int | None, blue_green: bool) -> int:
    """The most pods a sample runs at once: its autoscaler's maximum (or its replicas without one), plus a rolling
    update's surge, or twice that many at a blue-green promotion (both versions at full size, before the switch)."""
    top = max_replicas if max_replicas is not None else replicas
    return 2 * top if blue_green else top + SURGE
