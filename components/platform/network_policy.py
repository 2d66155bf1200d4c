"""The network policies of config `security.networkPolicy` (render/network_policy.py): the infrastructure tier every
pod's traffic meets first, once Calico serves its policy kinds, and the application namespaces' ingress policies once
each namespace exists. Removing the section (or `enabled: false`) deletes them, which opens what they closed."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi

from plan.security import NetworkPolicyPlan
from render import network_policy

from .k8s import kubernetes_object, resource_name


class NetworkPolicies(pulumi.ComponentResource):
    def __init__(self, name: str, plan: NetworkPolicyPlan, provider: pulumi.ProviderResource,
                 calico: Sequence[pulumi.Resource], namespaces: Mapping[str, pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:NetworkPolicies", name, None, opts)
        params = plan.params()
        tier, *policies = network_policy.infrastructure_policies(params)
        # After Calico's CRDs and its Installation; the tier before its policies: a policy naming a tier that does not
        # exist is not enforced.
        self.tier = kubernetes_object(f"{name}-{resource_name(tier)}", tier, provider=provider, parent=self,
                                      depends_on=list(calico))
        self.policies = [kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider, parent=self,
                                           depends_on=[*calico, self.tier]) for obj in policies]
        self.policies += [
            kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider, parent=self,
                              depends_on=[namespaces[obj["metadata"]["namespace"]]])
            for obj in network_policy.application_policies(params)]
        self.register_outputs({"protected": list(plan.protected_networks),
                               "allowed": [flow.name for flow in plan.allowed]})
