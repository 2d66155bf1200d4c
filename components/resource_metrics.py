"""The resource metrics API (config `resourceMetrics`): kubelet-csr-approver approving the kubelets' serving
certificates from the cluster CA, and metrics-server reading the kubelets of both operating systems with them. The
kubelets ask for those certificates through their configuration (serverTLSBootstrap), which components/
kubelet_config.py rolls onto the nodes that joined before, after the approver.

Switched off, the approver and metrics-server are removed, and the kubelet steps (which stay) take every kubelet back
to its self-signed certificate first: Pulumi deletes what left the program only after its updates, and a kubelet left
asking for certificates with no approver would lose its serving certificate when the approved one expires.
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from config import compat
from plan.platform import ResourceMetricsPlan
from render import resource_metrics

from .k8s import helm_release


class KubeletCsrApprover(pulumi.ComponentResource):
    """kubelet-csr-approver, which the kubelets' serving certificate requests wait for."""

    def __init__(self, name: str, plan: ResourceMetricsPlan, provider: pulumi.ProviderResource,
                 linux_ready: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:KubeletCsrApprover", name, None, opts)
        self.release = helm_release(f"{name}-kubelet-csr-approver", compat.CHARTS["kubelet-csr-approver"],
                                    resource_metrics.NAMESPACE, resource_metrics.csr_approver_values(plan.nodes),
                                    provider=provider, parent=self, depends_on=list(linux_ready))
        self.register_outputs({"version": compat.CHARTS["kubelet-csr-approver"].version})


class MetricsServer(pulumi.ComponentResource):
    """metrics-server, once every kubelet serves a certificate it can verify."""

    def __init__(self, name: str, plan: ResourceMetricsPlan, provider: pulumi.ProviderResource,
                 kubelets_serving: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:MetricsServer", name, None, opts)
        self.release = helm_release(f"{name}-metrics-server", compat.CHARTS["metrics-server"], resource_metrics.NAMESPACE,
                                    resource_metrics.metrics_server_values(plan.linux_workers), provider=provider, parent=self,
                                    depends_on=list(kubelets_serving))
        self.register_outputs({"version": compat.CHARTS["metrics-server"].version})

