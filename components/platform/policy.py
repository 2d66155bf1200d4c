"""The policy layer: OPA Gatekeeper on Linux nodes, the placement ConstraintTemplates written in
policy/gatekeeper/, and their constraints on the configured namespaces. Each constraint waits until its
template reports its CRD created (the "no matches for kind" race), RuntimeClasses are synced into
data.inventory for the Rego that follows runtimeClassName.
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from config.compat import CHARTS
from plan.platform import PolicyPlan
from render import policy

from .k8s import helm_release, kubernetes_object, resource_name


class Policy(pulumi.ComponentResource):
    def __init__(self, name: str, plan: PolicyPlan, provider: pulumi.ProviderResource,
                 namespaces: Sequence[pulumi.Resource], linux_ready: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:Policy", name, None, opts)

        def declare(obj: dict, depends_on: Sequence[pulumi.Resource]) -> pulumi.CustomResource:
            return kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider, parent=self,
                                     depends_on=list(depends_on))

        gatekeeper = helm_release(f"{name}-gatekeeper", CHARTS["gatekeeper"], policy.GATEKEEPER_NAMESPACE,
                                  policy.gatekeeper_values(plan.budget), provider=provider, parent=self,
                                  depends_on=list(linux_ready))
        sync = declare(policy.sync_config(), [gatekeeper])
        templates = {t["spec"]["crd"]["spec"]["names"]["kind"]: declare(t, [gatekeeper]) for t in policy.templates()}
        self.constraints = [
            declare(c, [templates[c["kind"]], *namespaces])
            for c in policy.constraints(plan.enforcement_action, plan.namespaces)
        ]
        # What a workload waits for before its first pod is checked (it still probes admission itself:
        # data.inventory fills asynchronously, render/policy.py render_admission_probe).
        self.declared = [sync, *templates.values(), *self.constraints]
        self.register_outputs({"enforcement_action": plan.enforcement_action,
                               "templates": sorted(templates)})
