"""Admission policies the API server evaluates itself (built-in ValidatingAdmissionPolicies, no webhook to go down):
pods may not mount NFS exports inline outside the namespaces that need it (render/security.py says why). Declared
once the cluster's API answers; nothing runs on a node."""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from render import security

from .k8s import kubernetes_object, resource_name


class AdmissionPolicies(pulumi.ComponentResource):
    def __init__(self, name: str, inline_nfs_namespaces: Sequence[str], provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:AdmissionPolicies", name, None, opts)
        policy, binding = security.inline_nfs_policy(tuple(inline_nfs_namespaces))
        declared = kubernetes_object(f"{name}-{resource_name(policy)}", policy, provider=provider, parent=self)
        # The binding after its policy: a binding naming a missing policy matches nothing.
        kubernetes_object(f"{name}-{resource_name(binding)}", binding, provider=provider, parent=self,
                          depends_on=[declared])
        self.register_outputs({"inlineNfsNamespaces": list(inline_nfs_namespaces)})
