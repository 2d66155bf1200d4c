"""Autoscaling on Prometheus metrics (config `customMetrics`): KEDA, its operator, metrics server and admission webhook
on Linux nodes (render/custom_metrics.py says why KEDA). The samples' ScaledObject and the PodMonitor of their Gateway
are declared with the samples (components/platform/workloads.py), after `ready`.
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from config import compat
from plan.platform import CustomMetricsPlan
from render import custom_metrics

from .k8s import helm_release, kubernetes_object, resource_name


class CustomMetrics(pulumi.ComponentResource):
    def __init__(self, name: str, plan: CustomMetricsPlan, provider: pulumi.ProviderResource,
                 after: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:CustomMetrics", name, None, opts)
        # `after`: Linux nodes Ready, metrics-server (the cpu trigger) and Prometheus (the prometheus trigger).
        keda = helm_release(f"{name}-keda", compat.CHARTS["keda"], custom_metrics.KEDA_NAMESPACE,
                            custom_metrics.keda_values(plan.budget), provider=provider, parent=self,
                            depends_on=list(after))
        if plan.budget:
            for budget in custom_metrics.keda_disruption_budgets():
                kubernetes_object(f"{name}-{resource_name(budget)}", budget, provider=provider, parent=self,
                                  depends_on=[keda])
        # What a ScaledObject waits for: KEDA's CRDs and its webhook, both part of the release.
        self.ready: list[pulumi.Resource] = [keda]
        self.register_outputs({"version": compat.CHARTS["keda"].version})
