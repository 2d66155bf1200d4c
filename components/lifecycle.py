"""What a node's lifecycle flags (`retire`, `lost`: config.model.NodeSpec) do to the resources declared for
it. A delete runs the inputs and options the state holds (tools/engine.py), so each flag takes effect in
one `pulumi up` and the node's removal from the stack in the next.
"""
from __future__ import annotations

import pulumi

from config.model import NodeSpec

# Every input of a command:remote:Command (pulumi-command v1.2.1 CommandInputs and ResourceInputs).
COMMAND_INPUTS = ["create", "update", "delete", "connection", "stdin", "triggers", "environment", "logging",
                  "addPreviousOutputInEnv"]


def dialling_node(node: NodeSpec) -> dict:
    """Options of a command that reaches the node itself (over SSH, or through its Hyper-V host into the
    guest). For a lost node it is frozen: no input change can update or replace it, so no run dials the
    machine; and its removal drops it from the state without running its delete (`retainOnDelete`, read
    from the state by the engine's DeleteStep), since there is nothing left to reset."""
    if not node.lost:
        return {}
    return {"ignore_changes": list(COMMAND_INPUTS), "retain_on_delete": True}


def command_options(node: NodeSpec, *, retain: bool = True, **options) -> pulumi.ResourceOptions:
    """ResourceOptions for a command that reaches `node`, frozen when the node is lost (dialling_node);
    `retain=False` keeps the delete of a command that runs elsewhere (a Hyper-V host removing the VM)."""
    frozen = dialling_node(node)
    if frozen:
        options["ignore_changes"] = sorted({*(options.get("ignore_changes") or []), *frozen["ignore_changes"]})
        if retain:
            options["retain_on_delete"] = True
    return pulumi.ResourceOptions(**options)
