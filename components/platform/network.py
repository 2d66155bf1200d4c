"""The cluster network layer: Calico through the Tigera operator (VXLAN, with the Windows HNS dataplane when
the stack has Windows nodes), and kube-proxy for Windows once the Windows nodes have joined. ClusterNetwork
exposes `windows_prerequisites`, what a Windows node's join must wait for.

Order, as the operator needs it: Calico's CRDs; the FelixConfiguration and IPAMConfiguration we own (the
operator creates FelixConfiguration "default" itself if it runs first, and pulumi-kubernetes will not
adopt an existing object); the operator; the Installation, awaited until the operator reports it Ready.
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from config import compat
from plan.platform import WindowsKubeProxyPlan
from render import network

from .k8s import crd_chart, helm_release, kubernetes_object, resource_name


class ClusterNetwork(pulumi.ComponentResource):
    def __init__(self, name: str, params: network.CalicoParams, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:ClusterNetwork", name, None, opts)
        self.child_prefix = name
        self.crds = crds = crd_chart(f"{name}-calico-crds", compat.CHARTS["calico-crds"], network.CALICO_CHARTS_NAMESPACE,
                                     provider=provider, parent=self)
        owned = [
            kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider, parent=self, depends_on=[crds])
            for obj in network.calico_settings(params)
        ]
        operator = helm_release(f"{name}-tigera-operator", compat.CHARTS["tigera-operator"], network.CALICO_CHARTS_NAMESPACE,
                                network.tigera_operator_values(params), provider=provider, parent=self,
                                depends_on=[crds, *owned])
        self.installation = kubernetes_object(f"{name}-installation", network.installation(params),
                                              provider=provider, parent=self, depends_on=[operator, *owned])
        # A Windows node joins only once Calico can give it a network: the Installation is Ready (awaited
        # through its pulumi.com/waitFor annotation) with strict affinity and the VXLAN settings in place.
        self.windows_prerequisites: list[pulumi.Resource] = [self.installation, *owned]
        # Cluster DNS survives a wave (network.dns_disruption_budget): once pods run (Calico is up).
        if params.dns_budget:
            budget = network.dns_disruption_budget()
            kubernetes_object(f"{name}-{resource_name(budget)}", budget, provider=provider, parent=self,
                              depends_on=[self.installation])

        self.register_outputs({"calico": compat.CALICO_VERSION, "windows": params.windows})


class WindowsKubeProxy(pulumi.ComponentResource):
    """kube-proxy for Windows (kubeadm's kube-proxy is Linux-only), declared once the Windows nodes it
    serves have joined: pulumi-kubernetes awaits a DaemonSet's rollout, which only means something when
    the nodes exist, and the joins themselves need only Calico (`ClusterNetwork.windows_prerequisites`),
    so waiting here closes no cycle. A stack without Windows nodes gets no DaemonSet at all."""

    def __init__(self, name: str, plan: WindowsKubeProxyPlan | None, provider: pulumi.ProviderResource,
                 cluster_network: ClusterNetwork, windows_nodes_ready: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:WindowsKubeProxy", name, None, opts)
        self.resources: list[pulumi.CustomResource] = []
        if plan is not None:
            # One DaemonSet for every build: HostProcess images do not depend on the build (config.compat).
            for obj in network.windows_kube_proxy(plan.kubernetes_version, plan.image_template, plan.cluster_cidr):
                child = f"{name}-{resource_name(obj)}"
                self.resources.append(kubernetes_object(
                    child, obj, provider=provider, parent=self,
                    depends_on=[cluster_network.installation, *windows_nodes_ready, *self.resources],
                    # Declared under ClusterNetwork before it waited for the Windows nodes: the alias keeps
                    # the objects in place instead of replacing them.
                    aliases=[pulumi.Alias(name=f"{cluster_network.child_prefix}-{resource_name(obj)}",
                                          parent=cluster_network)]))
        self.register_outputs({"objects": [r.urn for r in self.resources]})
