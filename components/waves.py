"""The gate between two waves of a rolling operation (the upgrade, the VM-setting restarts, the kubelet-serving
steps): one resource that waits for every node of a wave and that every node of the next wave waits for.

Without it each node of a wave named every node of the wave before as a dependency: waves are a share of the
fleet (plan.rollout), so the declared edges grew with the square of the node count (34,000 at 300 nodes, 105,000
at 600), and the SDK pays for each one when it registers a resource (an Output per `depends_on` entry, its URN
awaited, a cycle check: pulumi/runtime/_depends_on.py, rpc.py _add_dependency), which made evaluation
superlinear. Through a gate a wave of n nodes after one of m costs n + m edges.

The gate is a remote Command with no command at all. pulumi-command v1.2.1
(provider/pkg/provider/remote/commandController.go) dials only to run one: Create with no `create` assigns the id
and returns, Update with neither `update` nor `create` runs nothing, Delete with no `delete` returns. It still
takes part in the order: the engine answers a registration only once its step is done, and the SDK registers a
resource only once what it depends on has been answered, so the next wave starts after the whole wave before,
and a failed node leaves its gate, and every later wave, for the next `up`. Its connection names the first
control-plane node without credentials: nothing is ever sent over it, and no key or password rotation touches it.
Every wave has its gate, a wave of one node too (each control-plane node): a node added to a wave, or a wave
growing from one node to two, then changes no gate, only what the wave's gate waits for.
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_command as command

from config.model import StackSpec


def after_wave(name: str, wave_index: int, done: Sequence[pulumi.Resource], spec: StackSpec,
               parent: pulumi.Resource) -> list[pulumi.Resource]:
    """What the next wave waits for: the gate `<name>-wave-<index>` after the wave's steps."""
    return [command.remote.Command(
        f"{name}-wave-{wave_index}",
        connection=command.remote.ConnectionArgs(host=str(spec.nodes.control_plane[0].ip)),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(done)),
    )]
