"""The rolling upgrade: every node moved to `cluster.kubernetesVersion` and to the containerd and runc that
config/compat.py pins for it, in the waves plan.rollout lays out.

Order, as the kubeadm upgrade guide and the version-skew policy want it
(https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-upgrade/,
https://kubernetes.io/releases/version-skew-policy/: no kubelet newer than its API servers): the first
control-plane node (`kubeadm upgrade apply`), the other control-plane nodes (`kubeadm upgrade node`), one at
a time, then the workers in waves bounded per zone and OS by `rollout.maxUnavailable`. Each node is three
steps (a Windows node four): drain (on the first control-plane node; quorum checked for a control-plane
node; PodDisruptionBudgets honoured), the node's own upgrade (the runtime, staged before anything stops and
swapped with the kubelet stopped; on Windows its own step first; packages or binaries, kubeadm, kubelet
restart), uncordon once it is Ready at the new version on the new runtime. Every node of a wave waits for
every node of the wave before to be uncordoned, through that wave's gate (components/cluster/waves.py), so the graph is
as deep as the waves, not the nodes, and its edges grow with the nodes, not their square. A
runtime pin change alone runs the same waves. A node that fails stays cordoned and the run is cancelled (Pulumi
starts nothing new after a failed step): steps already under way on its wave's other nodes finish, the rest
(possibly leaving some of them cordoned) and every later wave wait for the next `up`, which resumes them.

The steps have no `create`: a new cluster or a new node is already at the stack's version (first boot
installs it), so creating the steps runs nothing and costs no time. They run as `update`, whose text
names the target version and the node's machine: a version change (which the version pin admits only
forwards, one minor at a time) re-runs every node's steps in wave order, and a machine replaced under an
older image re-runs only its own node's steps. Every step is idempotent, so a re-run after a failure
continues where the waves stopped. Nothing here is created on a node, so there is nothing to delete:
removing a node removes its steps without running anything.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import pulumi
import pulumi_command as command

from plan.cluster import ClusterPlan
from render import kubeadm, linux_node, node_steps, windows_bootstrap
from render.shell import bash_command

from ..machines.nodes import HypervWindowsNode, Machines, ProxmoxLinuxNode, node_step
from .bootstrap import ControlPlaneAccess
from .waves import roll


class MachineRender(Protocol):
    """A step's script renderer with everything bound but the machine it runs for."""

    def __call__(self, *, machine: str) -> str: ...


def for_machine(render: MachineRender, encode: Callable[[str], str],
                 machine_id: pulumi.Output[str]) -> pulumi.Output[str]:
    """The step's command, rendered for the machine it belongs to (its scripts' MACHINE input): a replaced
    machine changes the text, and so re-runs its own node's steps. Rendering is pure: nothing is declared
    inside the apply."""
    # Rendered once now as well: its input checks fail at declaration, also in a preview, where the id of a
    # machine still to be created is unknown and the apply does not run.
    render(machine="unnamed")
    return machine_id.apply(lambda identity: encode(render(machine=identity)))


class KubernetesUpgrade(pulumi.ComponentResource):
    def __init__(self, name: str, cluster: ClusterPlan, machines: Machines, access: ControlPlaneAccess,
                 node_ready: Mapping[str, pulumi.Resource], after: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:KubernetesUpgrade", name, None, opts)
        version, runtime = cluster.kubernetes_version, cluster.runtime
        machines_by_name: dict[str, ProxmoxLinuxNode | HypervWindowsNode] = {m.node.name: m for m in machines.linux_nodes}
        machines_by_name.update({m.node.name: m for m in machines.windows_nodes})
        control_plane = {m.node.name for m in machines.linux_nodes if m.role == "control-plane"}
        plan = cluster.rollout

        self.steps: list[command.remote.Command] = []

        def node_upgrade(wave_index: int, name_in_wave: str, previous: list[pulumi.Resource]) -> pulumi.Resource:
            machine = machines_by_name[name_in_wave]
            node = machine.node
            prefix = f"{name}-{node.name}"
            is_control_plane = node.name in control_plane
            etcd_pod = access.etcd_pod if is_control_plane else None
            if isinstance(machine, ProxmoxLinuxNode):
                upgrade_script = functools.partial(
                    linux_node.render_upgrade_script, machine.node.init,
                    wave_index == 0, etcd_pod=kubeadm.etcd_pod(node.name) if is_control_plane else None)
            else:
                upgrade_script = functools.partial(
                    windows_bootstrap.render_upgrade, machine.node.params)
            reach = node_step(machine)
            encode, connection, stdin = reach.encode, reach.connection, reach.stdin
            drain = command.remote.Command(
                f"{prefix}-drain-for-upgrade",
                connection=access.connection,
                update=for_machine(functools.partial(node_steps.render_upgrade_drain, node.name, version,
                                                      runtime, etcd_pod=etcd_pod), bash_command, machine.instance),
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=previous),
            )
            before_upgrade: command.remote.Command = drain
            if isinstance(machine, HypervWindowsNode):
                # Windows: the runtime is its own step, before the Kubernetes binaries (on Linux the node's
                # upgrade script does both).
                before_upgrade = command.remote.Command(
                    f"{prefix}-runtime-upgrade",
                    connection=connection,
                    update=for_machine(functools.partial(windows_bootstrap.render_runtime_upgrade,
                                                          machine.node.params),
                                        encode, machine.instance),
                    stdin=stdin,
                    logging=command.remote.Logging.STDOUT_AND_STDERR,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[drain]),
                )
                self.steps.append(before_upgrade)
            upgrade = command.remote.Command(
                f"{prefix}-node-upgrade",
                connection=connection,
                update=for_machine(upgrade_script, encode, machine.instance),
                stdin=stdin,
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[before_upgrade]),
            )
            uncordon = command.remote.Command(
                f"{prefix}-uncordon-after-upgrade",
                connection=access.connection,
                update=for_machine(functools.partial(node_steps.render_upgrade_uncordon, node.name, version,
                                                      runtime), bash_command, machine.instance),
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[upgrade]),
            )
            self.steps += [drain, upgrade, uncordon]
            return uncordon

        # Nothing is upgraded while a node is still joining: the first wave starts after every node is Ready. Nor before
        # the cluster's kubelet configuration is the stack's and its serving certificates can be approved (`after`): an
        # upgrade restarts kubelets with the configuration it downloads, and `kubeadm upgrade apply` uploads the one it
        # read, which must not race the kubelet-config step.
        start_after: list[pulumi.Resource] = [*node_ready.values(), access.kubelet_config, *after]
        # What must follow a finished upgrade (Windows kube-proxy's image follows the version).
        self.done: list[pulumi.Resource] = roll(name, plan, start_after, node_upgrade, self)
        self.waves = plan.waves
        self.register_outputs({"version": version, "runtime": runtime, "waves": plan.waves})
