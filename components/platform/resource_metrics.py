"""The resource metrics API (config `resourceMetrics`): the approver of the kubelets' serving certificates from the
cluster CA, on every control-plane node, and metrics-server reading the kubelets of both operating systems with them.
The kubelets ask for those certificates through their configuration (serverTLSBootstrap), which components/
kubelet_config.py rolls onto the nodes that joined before, after the approver.

Switched off, the approver and metrics-server are removed, and the kubelet steps (which stay) take every kubelet back
to its self-signed certificate first: Pulumi deletes what left the program only after its updates, and a kubelet left
asking for certificates with no approver would lose its serving certificate when the approved one expires.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_command as command

from config import compat
from plan.platform import ResourceMetricsPlan
from render import resource_metrics, serving_approver
from render.shell import bash_command

from ..machines.lifecycle import command_options
from ..machines.nodes import Machines
from .k8s import helm_release, kubernetes_object


class KubeletServingApprover(pulumi.ComponentResource):
    """The approver of kubelet serving certificates (render/serving_approver.py): its role, and on each control-plane
    node the program, its timer and the node inventory, rewritten when a node joins or leaves the stack."""

    def __init__(self, name: str, plan: ResourceMetricsPlan, provider: pulumi.ProviderResource, machines: Machines,
                 node_ready: Mapping[str, pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:KubeletServingApprover", name, None, opts)
        role, binding = serving_approver.rbac_objects()
        rbac = [kubernetes_object(f"{name}-role", role, provider=provider, parent=self),
                kubernetes_object(f"{name}-binding", binding, provider=provider, parent=self)]
        install = bash_command(serving_approver.render_install(plan.nodes))
        self.by_node: dict[str, command.remote.Command] = {}
        for machine in (m for m in machines.linux_nodes if m.role == "control-plane"):
            self.by_node[machine.node.name] = (command.remote.Command(
                f"{name}-{machine.node.name}",
                connection=machine.connection,
                create=install,
                update=install,
                delete=bash_command(serving_approver.render_remove()),
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                # A new instance of the machine gets the approver again.
                triggers=[machine.instance],
                # Its first run proves the role: after the binding, and after the node is Ready.
                opts=command_options(machine.node, parent=self,
                                     depends_on=[node_ready[machine.node.name], *rbac], delete_before_replace=True),
            ))
        self.nodes = list(self.by_node.values())
        self.register_outputs({"nodes": [n.urn for n in self.nodes]})


class MetricsServer(pulumi.ComponentResource):
    """metrics-server, once every kubelet serves a certificate it can verify."""

    def __init__(self, name: str, plan: ResourceMetricsPlan, provider: pulumi.ProviderResource,
                 kubelets_serving: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:MetricsServer", name, None, opts)
        self.release = helm_release(f"{name}-metrics-server", compat.CHARTS["metrics-server"], resource_metrics.NAMESPACE,
                                    resource_metrics.metrics_server_values(plan.budget), provider=provider, parent=self,
                                    depends_on=list(kubelets_serving))
        self.register_outputs({"version": compat.CHARTS["metrics-server"].version})

