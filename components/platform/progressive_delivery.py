"""Progressive delivery (config `progressiveDelivery`): the Argo Rollouts controller on Linux nodes. The samples'
Rollouts, preview Services and preview routes are declared with the samples (components/platform/workloads.py), after `ready`.
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from config import compat
from render import progressive_delivery

from .k8s import helm_release


class ProgressiveDelivery(pulumi.ComponentResource):
    def __init__(self, name: str, provider: pulumi.ProviderResource, linux_ready: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:ProgressiveDelivery", name, None, opts)
        controller = helm_release(f"{name}-argo-rollouts", compat.CHARTS["argo-rollouts"], progressive_delivery.NAMESPACE,
                                  progressive_delivery.rollouts_values(), provider=provider, parent=self,
                                  depends_on=list(linux_ready))
        # What a Rollout waits for: the controller and its CRDs (chart templates).
        self.ready: list[pulumi.Resource] = [controller]
        self.register_outputs({"version": compat.CHARTS["argo-rollouts"].version})
