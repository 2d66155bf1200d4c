"""The restarts: Linux nodes whose VM settings (CPU, memory, disk) changed are restarted by Proxmox to apply
them, in the waves plan.rollout lays out (control-plane nodes one at a time, only while etcd keeps quorum,
then the Linux workers in waves), each node behind a drain.

The VMs are declared with reboot_after_update off (components/machines/nodes.py), so the provider stores such a
change as pending and restarts nothing; these steps apply it, after the upgrade's waves (an upgrade and a
restart never drain at once). Each node is three steps: drain (on the first control-plane node), the VM
restart (`qm reboot` on the Proxmox node that runs it), uncordon once the node is back with a new boot id
and Ready. A node that fails stays cordoned and the run is cancelled: steps under way finish, nothing new starts
(other nodes of its wave may be left cordoned), and the next `up` resumes.

Like the upgrade chain, the steps have no `create`: a new node boots with its settings, so creating the
chain restarts nothing. Their `update` text carries the node's settings, so changing one node's CPU,
memory or disk re-runs that node's steps only; every other node's steps are unchanged and stay as they are.
When a new release of the scripts changes every step's text, every node's steps run, and each finds its
node already running with its settings: no drain, no restart (render/maintenance.py).
Nothing is left on a node or host, so there is nothing to delete. Windows nodes are not part of it: the
Hyper-V converge applies a change that needs the VM off only with an operator (components/machines/nodes.py).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import pulumi
import pulumi_command as command

from plan.cluster import ClusterPlan, LinuxNodePlan
from render import maintenance
from render.shell import bash_command

from ..machines.connections import connection_digest
from ..machines.nodes import Machines
from .bootstrap import ControlPlaneAccess
from .waves import roll


def _drain_command(node: LinuxNodePlan, etcd_pod: str | None, restart_connection: str) -> str:
    """The drain step's command for a node, once the digest of its restart's connection is known."""
    vm = node.vm
    return bash_command(maintenance.render_maintenance_drain(node.name, vm.cpu, vm.memory_mb, vm.disk_gb,
                                                             etcd_pod=etcd_pod, restart_connection=restart_connection))


class LinuxNodeRestarts(pulumi.ComponentResource):
    def __init__(self, name: str, cluster: ClusterPlan, machines: Machines, access: ControlPlaneAccess,
                 proxmox_connections: dict[str, command.remote.ConnectionArgs], after: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:machines:LinuxNodeRestarts", name, None, opts)
        by_name = {m.node.name: m for m in machines.linux_nodes}
        control_plane = {m.node.name for m in machines.linux_nodes if m.role == "control-plane"}

        self.steps: list[command.remote.Command] = []

        def node_restart(wave_index: int, node_name: str, previous: list[pulumi.Resource]) -> pulumi.Resource:
            machine = by_name[node_name]
            node = machine.node
            vm = node.vm
            prefix = f"{name}-{node.name}"
            settings = maintenance.settings_label(vm.cpu, vm.memory_mb, vm.disk_gb)
            etcd_pod = access.etcd_pod if node.name in control_plane else None
            # The restart acts on the drain's decision, so whatever runs the restart again (a new Proxmox key,
            # a bastion) must run the drain again too: it carries a digest of the restart's connection.
            restart_connection = proxmox_connections[vm.proxmox_node]
            maintenance.render_maintenance_drain(node.name, vm.cpu, vm.memory_mb, vm.disk_gb, etcd_pod=etcd_pod,
                                                 restart_connection="0" * 16)   # checked now, in a preview too
            drain = command.remote.Command(
                f"{prefix}-drain-for-restart",
                connection=access.connection,
                update=connection_digest(restart_connection).apply(functools.partial(_drain_command, node, etcd_pod)),
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                # After the VM update that stored the new settings as pending, and after the wave before.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[*previous, machine.vm]),
            )
            restart = command.remote.Command(
                f"{prefix}-vm-restart",
                connection=restart_connection,
                update=bash_command(maintenance.render_vm_restart(vm.vm_id, settings)),
                # The drain's output ends with its decision: a node already running with these settings
                # (a run caused only by new script text) is neither drained nor restarted.
                stdin=drain.stdout,
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[drain]),
            )
            uncordon = command.remote.Command(
                f"{prefix}-uncordon-after-restart",
                connection=access.connection,
                update=bash_command(maintenance.render_maintenance_uncordon(node.name, settings)),
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[restart]),
            )
            self.steps += [drain, restart, uncordon]
            return uncordon

        self.done: list[pulumi.Resource] = roll(name, cluster.linux_rollout, after, node_restart, self)
        self.register_outputs({"order": [s.urn for s in self.steps[1::3]]})
