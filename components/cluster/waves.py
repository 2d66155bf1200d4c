"""The gate between two waves of a rolling operation (the upgrade, the VM-setting restarts, the kubelet-serving
steps): one resource that waits for every node of a wave and that every node of the next wave waits for.

Without it each node of a wave named every node of the wave before as a dependency: waves are a share of the
fleet (plan.rollout), so the declared edges grew with the square of the node count (34,000 at 300 nodes, 105,000
at 600), and the SDK pays for each one when it registers a resource (an Output per `depends_on` entry, its URN
awaited, a cycle check: pulumi/runtime/_depends_on.py, rpc.py _add_dependency). Measured with tools.bench's
stacks on this machine, 600 nodes took 24-28 s of CPU before and 19-21 s with the gates. Through a gate a wave
of n nodes after one of m costs n + m edges.

The gate is a remote Command with no command at all. pulumi-command v1.2.1
(provider/pkg/provider/remote/commandController.go) dials only to run one: Create with no `create` assigns the id
and returns, Update with neither `update` nor `create` runs nothing, Delete with no `delete` returns. It still
takes part in the order: the engine answers a registration only once its step is done (a Same step too), and the
SDK registers a resource only once what it depends on has been answered, so the next wave starts after the whole
wave before, and a failed node leaves its gate, and every later wave, for the next `up`. Its connection names the
first control-plane node without credentials: nothing is ever sent over it, and no key or password rotation
touches it.

Every wave has its gate, a wave of one node too (each control-plane node), numbered by its place in the order:
only the number of waves decides which gates exist, so a change that adds waves (a node that opens one, a
smaller `rollout.maxUnavailable`, or a removal the wave planner answers with a different split) creates the
highest-numbered gates and one that removes waves deletes them, all without running anything. Their names hold
`--wave-`, which no step named after a node can: a node name is a DNS label and cannot start with '-'.
`pulumi up --target` on a stack that does not yet have a wave's gate must target the gate too (the engine refuses
to create a resource that depends on an untargeted new one).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import pulumi
import pulumi_command as command

from plan.rollout import Rollout

GATE_MARK = "--wave-"


def gate_name(name: str, wave_index: int) -> str:
    return f"{name}{GATE_MARK}{wave_index}"


def after_wave(name: str, wave_index: int, done: Sequence[pulumi.Resource], gate_host: str,
               parent: pulumi.Resource, former: tuple[str, str] | None = None) -> list[pulumi.Resource]:
    """What the next wave waits for: the gate `<name>--wave-<index>` after the wave's steps. `former`: the chain's
    earlier name and parent URN, when it was renamed, which the gate keeps as an alias."""
    aliases = [pulumi.Alias(name=gate_name(former[0], wave_index), parent=former[1])] if former else None
    return [command.remote.Command(
        gate_name(name, wave_index),
        connection=command.remote.ConnectionArgs(host=gate_host),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(done), aliases=aliases),
    )]


# One node's steps in a rolling chain: given the wave's index, the node's name and what its first step must wait for
# (the gate of the wave before, or what the chain starts after), it declares the steps and returns the last.
NodeSteps = Callable[[int, str, list[pulumi.Resource]], pulumi.Resource]


def roll(name: str, plan: Rollout, start_after: Sequence[pulumi.Resource], node_steps: NodeSteps,
         parent: pulumi.Resource, former: tuple[str, str] | None = None) -> list[pulumi.Resource]:
    """The one rolling mechanism: every node of a wave after the gate of the wave before (the first wave after
    `start_after`), a gate after each wave, and what the chain's end is (the last gate) returned for what must follow.
    A node's failed step leaves its wave's gate, and so every later wave, for the next `up` (see the module's
    docstring). The upgrade, the VM-setting restarts and the kubelet configuration each supply their `node_steps`."""
    previous: list[pulumi.Resource] = list(start_after)
    for wave_index, wave in enumerate(plan.waves):
        done = [node_steps(wave_index, node_name, previous) for node_name in wave]
        previous = after_wave(name, wave_index, done, plan.gate_host, parent, former=former)
    return previous
