"""The LoadBalancer implementation (config `loadBalancer`): MetalLB on Linux nodes, its address pool and the
pool's layer 2 announcement (render/load_balancer.py says how Windows backends are reached)."""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from config.compat import CHARTS
from plan.platform import LoadBalancerPlan
from render import load_balancer, scheduling

from .k8s import helm_release, kubernetes_object, resource_name


class LoadBalancer(pulumi.ComponentResource):
    def __init__(self, name: str, plan: LoadBalancerPlan, provider: pulumi.ProviderResource,
                 linux_ready: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:LoadBalancer", name, None, opts)
        # The speakers run with hostNetwork and NET_RAW: a privileged namespace.
        namespace = kubernetes_object(f"{name}-namespace-{load_balancer.METALLB_NAMESPACE}",
                                      scheduling.system_namespace(load_balancer.METALLB_NAMESPACE),
                                      provider=provider, parent=self)
        # The chart's CRDs are templates of its crds subchart (charts/metallb/charts/crds/templates), which Helm
        # upgrades with the release, unlike a crds/ folder.
        chart = helm_release(f"{name}-metallb", CHARTS["metallb"], load_balancer.METALLB_NAMESPACE,
                             load_balancer.metallb_values(), provider=provider, parent=self,
                             depends_on=[namespace, *linux_ready])
        # The pool and its announcement are the chart's CRDs (and its webhook checks them): after the chart.
        pool = load_balancer.address_pool(plan.addresses)
        self.pool = kubernetes_object(f"{name}-{resource_name(pool)}", pool, provider=provider, parent=self,
                                      depends_on=[chart])
        advertisement = load_balancer.l2_advertisement()
        self.advertisement = kubernetes_object(f"{name}-{resource_name(advertisement)}", advertisement,
                                               provider=provider, parent=self, depends_on=[chart])
        self.ready: list[pulumi.Resource] = [self.pool, self.advertisement]
        self.register_outputs({"addresses": list(plan.addresses)})
