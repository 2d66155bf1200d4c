"""The cluster's kubelet configuration on every node that joined before it changed (render/kubelet_config.py): the keys
this program manages in the kubelet-config ConfigMap (serverTLSBootstrap for resourceMetrics, the hardening of config
`security`), rolled onto each node's kubelet in the waves plan.rollout lays out.

The ConfigMap itself follows the stack before any join (components/cluster/bootstrap.py), so a new node joins with it. The
nodes that joined before get it here: each node's kubelet downloads the configuration, restarts, is checked to stay
up (protectKernelDefaults stops a kubelet whose kernel settings are wrong) and, with serving certificates on, waits
until its certificate is approved. A kubelet restart stops no Pod, so nothing is drained; the waves only bound how many
kubelets restart at once. The steps follow the upgrade's and the restarts' waves (one restart at a time per node) and
the approver (a restarted kubelet waits for it). Their text carries the settings (by digest) and the node's machine:
changing a setting runs every node's step in waves; a replaced machine runs its own again. Creating a step runs it
too (an existing cluster meets the steps for the first time that way); on a node that joined with the settings it
finds everything in place and restarts nothing. Nothing is left behind to delete.

The steps were named `<cluster>-kubelet-serving-<node>` when they carried serverTLSBootstrap alone; the aliases keep
them (and their gates) in place instead of replacing them.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import pulumi
import pulumi_command as command

from plan.cluster import ClusterPlan
from render import kubelet_config, windows_bootstrap

from ..machines.nodes import HypervWindowsNode, Machines, ProxmoxLinuxNode, node_step
from .upgrade import for_machine
from .waves import roll

_FORMER_TYPE = "hybrid:bootstrap:KubeletServing"


class KubeletConfig(pulumi.ComponentResource):
    def __init__(self, name: str, former_name: str, cluster: ClusterPlan, machines: Machines, after: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        former_parent = f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{_FORMER_TYPE}::{former_name}"
        super().__init__("hybrid:bootstrap:KubeletConfig", name, None, pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(name=former_name, type_=_FORMER_TYPE)])))
        settings = cluster.kubelet
        by_name: dict[str, ProxmoxLinuxNode | HypervWindowsNode] = {m.node.name: m for m in machines.linux_nodes}
        by_name.update({m.node.name: m for m in machines.windows_nodes})
        self.steps: list[command.remote.Command] = []
        plan = cluster.rollout

        def node_config(wave_index: int, node_name: str, previous: list[pulumi.Resource]) -> pulumi.Resource:
            machine = by_name[node_name]
            if isinstance(machine, ProxmoxLinuxNode):
                render = functools.partial(kubelet_config.render_kubelet_config_node, node_name, settings)
            else:
                render = functools.partial(windows_bootstrap.render_kubelet_config,
                                           machine.node.params, settings)
            reach = node_step(machine)
            text = for_machine(render, reach.encode, machine.instance)
            step = command.remote.Command(
                f"{name}-{node_name}",
                connection=reach.connection,
                create=text,
                update=text,
                stdin=reach.stdin,
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=previous, aliases=[
                    pulumi.Alias(name=f"{former_name}-{node_name}", parent=former_parent)]),
            )
            self.steps.append(step)
            return step

        end = roll(name, plan, after, node_config, self, former=(former_name, former_parent))
        # What needs every kubelet running as configured (metrics-server reads them all; the API servers verify them).
        self.done: list[pulumi.Resource] = end
        self.register_outputs({"settings": kubelet_config.settings_digest(settings), "waves": plan.waves})
