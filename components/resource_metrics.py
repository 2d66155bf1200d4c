"""The resource metrics API (config `resourceMetrics`): kubelet serving certificates from the cluster CA on every node,
kubelet-csr-approver approving them, and metrics-server reading the kubelets of both operating systems with them.

The cluster's kubelet configuration (the kubelet-config ConfigMap) is set before any join (components/bootstrap.py),
so a new node joins with it. The nodes that joined before get it here, in the waves plan.rollout lays out: each node's
kubelet downloads the configuration, restarts and, when serving certificates are on, waits until its certificate is
approved. A kubelet restart stops no Pod, so nothing is drained; the waves only bound how many kubelets restart at
once. The steps follow the upgrade's and the restarts' waves (one restart at a time per node) and the approver (a
restarted kubelet waits for it). Their text carries the setting and the node's machine: switching the setting runs
every node's step in waves; a replaced machine runs its own again. Creating a step runs it too (an existing cluster
meets the steps for the first time that way); on a node that joined with the setting it finds everything in place
and restarts nothing. Nothing is left behind to delete.

Switched off, the approver and metrics-server are removed, and the steps (which stay) take every kubelet back to its
self-signed certificate first: Pulumi deletes what left the program only after its updates, and a kubelet left
asking for certificates with no approver would lose its serving certificate when the approved one expires.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import pulumi
import pulumi_command as command

from config import compat
from config.model import StackSpec
from plan.nodes import windows_params
from plan.platform import ResourceMetricsPlan
from plan.rollout import stack_waves
from render import resource_metrics, windows_bootstrap

from .k8s import helm_release
from .machines import HypervWindowsNode, Machines, ProxmoxLinuxNode, node_step
from .upgrade import for_machine
from .waves import after_wave


class KubeletServing(pulumi.ComponentResource):
    def __init__(self, name: str, spec: StackSpec, machines: Machines, after: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:KubeletServing", name, None, opts)
        enabled = spec.resource_metrics.enabled
        by_name: dict[str, ProxmoxLinuxNode | HypervWindowsNode] = {m.node.name: m for m in machines.linux_nodes}
        by_name.update({m.node.name: m for m in machines.windows_nodes})
        previous: list[pulumi.Resource] = list(after)
        self.steps: list[command.remote.Command] = []
        waves = stack_waves(spec)
        for wave_index, wave in enumerate(waves):
            done: list[pulumi.Resource] = []
            for node_name in wave:
                machine = by_name[node_name]
                if isinstance(machine, ProxmoxLinuxNode):
                    render = functools.partial(resource_metrics.render_kubelet_serving_node, node_name, enabled)
                else:
                    render = functools.partial(windows_bootstrap.render_kubelet_serving,
                                               windows_params(spec, machine.node), enabled)
                reach = node_step(machine)
                text = for_machine(render, reach.encode, machine.instance)
                step = command.remote.Command(
                    f"{name}-{node_name}",
                    connection=reach.connection,
                    create=text,
                    update=text,
                    stdin=reach.stdin,
                    logging=command.remote.Logging.STDOUT_AND_STDERR,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=previous),
                )
                self.steps.append(step)
                done.append(step)
            previous = after_wave(name, wave_index, done, spec, self)
        # What needs every kubelet serving as configured (metrics-server reads them all).
        self.done: list[pulumi.Resource] = previous
        self.register_outputs({"serverTLSBootstrap": enabled, "waves": waves})


class KubeletCsrApprover(pulumi.ComponentResource):
    """kubelet-csr-approver, which the kubelets' serving certificate requests wait for."""

    def __init__(self, name: str, plan: ResourceMetricsPlan, provider: pulumi.ProviderResource,
                 linux_ready: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:KubeletCsrApprover", name, None, opts)
        self.release = helm_release(f"{name}-kubelet-csr-approver", compat.CHARTS["kubelet-csr-approver"],
                                    resource_metrics.NAMESPACE, resource_metrics.csr_approver_values(plan.node_prefixes),
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

