"""What a node's lifecycle flags (`retire`, `lost`: plan.cluster.NodePlan) do to the resources declared for
it. A delete runs the inputs and options the state holds (tools/mock/engine.py), so each flag takes effect in
one `pulumi up` and the node's removal from the stack in the next.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import pulumi

from plan.cluster import NodePlan

# Every input of a command:remote:Command (pulumi-command v1.2.1 CommandInputs and ResourceInputs).
COMMAND_INPUTS = ["create", "update", "delete", "connection", "stdin", "triggers", "environment", "logging",
                  "addPreviousOutputInEnv"]


def dialling_node(node: NodePlan) -> dict:
    """Options of a command that reaches the node itself (over SSH, or through its Hyper-V host into the
    guest). For a lost node it is frozen: no input change can update or replace it, so no run dials the
    machine; and its removal drops it from the state without running its delete (`retainOnDelete`, read
    from the state by the engine's DeleteStep), since there is nothing left to reset."""
    if not node.lost:
        return {}
    return {"ignore_changes": list(COMMAND_INPUTS), "retain_on_delete": True}


def command_options(node: NodePlan, *, retain: bool = True, **options) -> pulumi.ResourceOptions:
    """ResourceOptions for a command that reaches `node`, frozen when the node is lost (dialling_node);
    `retain=False` keeps the delete of a command that runs elsewhere (a Hyper-V host removing the VM)."""
    frozen = dialling_node(node)
    if frozen:
        options["ignore_changes"] = sorted({*(options.get("ignore_changes") or []), *frozen["ignore_changes"]})
        if retain:
            options["retain_on_delete"] = True
    return pulumi.ResourceOptions(**options)


class MemberLocks(pulumi.ComponentResource):
    """One lock per control-plane member: a component that depends on every resource of the member whose delete runs
    something on it or disrupts it (its VM, label patch, drain, join, deregistration, serving approver, snapshot timer:
    `holds`), protected unless the member is being removed (`retire`, `lost`: config.model NodesSpec.protected).

    Why a lock and not `protect` on those resources: the engine deletes dependents first (step_generator.go
    ScheduleDeletes), so a protected VM is refused only after the drain, reset and deregistration ran. The lock depends
    on all of them, so a removal deletes it first; DeleteStep.Apply refuses a protected resource before anything
    (`if !s.replacing && s.old.Protect ...`, a preview too, a component too), and deployment_executor.go performPostSteps
    then leaves out everything it depends on, transitively (`erroredDeps`). That holds where the machines guard's check
    does not run: under `--exclude` (the lock, or anything it depends on, excluded: none of it is deleted) and `--target`
    (deleting a targeted drain also condemns the lock, which depends on it: "delete untargeted resource", unless
    `--target-dependents` targets the lock, which refuses). Being protected, it is never replaced: it has no inputs,
    and its dependencies are plain `dependsOn`, which replace nothing (calculateDependentReplacements). So a member's
    rebuild, renewal or upgrade replaces its steps freely. Pulumi sources: pulumi/pulumi 1b594989 pkg/resource/deploy
    (step.go, step_generator.go, deployment_executor.go)."""

    def __init__(self, name: str, members: Sequence[str], protected: Collection[str],
                 holds: Mapping[str, Sequence[pulumi.Resource]], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:lifecycle:MemberLocks", name, None, opts)
        self.locks = {member: MemberLock(f"{name}-{member}", opts=pulumi.ResourceOptions(
            parent=self, protect=member in protected, depends_on=list(holds.get(member, ())))) for member in members}
        self.register_outputs({"protected": sorted(m for m in members if m in protected)})


class MemberLock(pulumi.ComponentResource):
    """What the engine refuses to delete while its member is protected (MemberLocks)."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:lifecycle:MemberLock", name, None, opts)
        self.register_outputs({})
