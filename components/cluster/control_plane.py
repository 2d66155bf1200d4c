"""The control plane's settings after init (config `security`): the Secrets encryption key, the files every API
server reads (audit policy, Pod Security admission and authentication configurations), the ClusterConfiguration's
component sections, and each control-plane node's static Pods, for a cluster an earlier release built as for a new
one (whose init and joins already wrote all of it, so that every step here finds nothing to do).

ControlPlaneSettings declares the steps (remote commands running render/control_plane.py's scripts) after everything
in `after`; `done` is its last step, for what must follow.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pulumi
import pulumi_command as command

from plan.nodes import ControlPlaneSettingsPlan
from render import control_plane
from render.shell import bash_command

from ..machines.nodes import Machines
from .bootstrap import SECRET_STDOUT


class ControlPlaneSettings(pulumi.ComponentResource):
    def __init__(self, name: str, plan: ControlPlaneSettingsPlan, machines: Machines, init: pulumi.Resource,
                 after: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:ControlPlaneSettings", name, None, opts)
        # A lost node is left out: nothing may dial it. The machines guard refuses a change of key in the run that
        # removes a control-plane node (components/guards.py).
        nodes = [m for m in machines.linux_nodes if m.role == "control-plane" and not m.node.lost]
        first = nodes[0]
        target, files, components = plan.encryption_key, plan.files, plan.components

        def step(step_name: str, connection: command.remote.ConnectionArgs, script: str,
                 depends_on: Sequence[pulumi.Resource], stdin: pulumi.Output[str] | None = None,
                 triggers: list[pulumi.Input[str]] | None = None, secret_stdout: bool = False) -> command.remote.Command:
            # Each script compares before it acts, so a re-run, a new release's script text or a rotated SSH key changes
            # nothing. No `delete`: the settings stay with the cluster when a step leaves the program.
            text = bash_command(script)
            return command.remote.Command(
                step_name, connection=connection, create=text, update=text, stdin=stdin, triggers=triggers,
                logging=command.remote.Logging.STDERR if secret_stdout else command.remote.Logging.STDOUT_AND_STDERR,
                # Its previous stdout (a key ring) must never travel to sshd as PULUMI_COMMAND_STDOUT.
                add_previous_output_in_env=False if secret_stdout else None,
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=list(depends_on),
                    additional_secret_outputs=SECRET_STDOUT if secret_stdout else None,
                    # The key ring is read again only for a new key or a new script (its triggers), by a replacement,
                    # which runs with the current connection and script since the engine ignores nothing on a
                    # replacement: any update (a rotated SSH key, a new bastion) would make its stdout unknown in a
                    # preview and every step reading it show as changed, and an ignored connection alone would
                    # dial with the old key at the next change of key.
                    ignore_changes=["connection", "create", "update"] if secret_stdout else None))

        # 1. On the first control-plane node, the key the stack asks for, made once; after every rolling operation of the
        # run (`after`: upgrade, restarts, kubelet configuration, certificate renewal), so that no two of them take a node's
        # components down at once. Its stdout, a secret Output, is the key ring every other step reads on stdin
        # (render/scripts/encryption-keys.sh). A change of key (security.secretsEncryption.keyRotation, or enabled) runs
        # 1, 2, 4, 5 and 6. A new keys script prints the same ring again: the previous key stays listed until the next
        # change of key.
        keys_script = control_plane.render_encryption_keys(target)
        keys = step(f"{name}-encryption-keys", first.connection, keys_script, [init, *after], secret_stdout=True,
                    triggers=[hashlib.sha256(keys_script.encode()).hexdigest()])
        # What step 1 printed at the last change of key, so a later run that re-runs step 2 or 4 (another file changed, a
        # rebuilt node) reads that ring again: a node's configuration therefore never goes back to an older key than the one
        # it writes with (render/scripts/lib/encryption.sh, write_encryption_config), and a key asked for by a change that
        # stopped half-way stays readable on every node, through the ring's `read` lines, until a rewrite has completed.
        # Typed here: mypy infers Output.secret's type argument only with an expected type.
        key_ring: pulumi.Output[str] = pulumi.Output.secret(keys.stdout.apply(lambda text: f"{text}\n"))
        # 2. On every control-plane node at once: the files, and an encryption configuration that reads the new key without
        # writing with it. Nothing restarts. A change of the files (audit log, Pod Security) runs 2 and 4. Each node step is
        # keyed on its machine instance: a rebuilt control-plane node runs its steps again.
        file_steps = [
            step(f"{name}-{m.node.name}-files", m.connection, control_plane.render_control_plane_files(m.node.name, files),
                 [keys], stdin=key_ring, triggers=[m.instance])
            for m in nodes]
        # 3. On the first control-plane node: the ClusterConfiguration names the files. Only now, because every `kubeadm
        # upgrade` or `join --control-plane` writes manifests that name them from then on. A change of flags runs 3 and 4.
        sync = step(f"{name}-kubeadm-config", first.connection, control_plane.render_kubeadm_config_sync(components),
                    file_steps)
        previous: list[pulumi.Resource] = [sync]
        for m in nodes:
            # 4. On each control-plane node in turn: its static Pods from the ClusterConfiguration (kubeadm waits for each
            # and rolls back a failed one), or its API server restarted when only the files changed.
            # The key ring on stdin, which the step does not read: a new ring (a change of key) runs it again, so that
            # every API server reads the new key before any writes with it.
            previous = [step(f"{name}-{m.node.name}", m.connection,
                             control_plane.render_control_plane_node(m.node.name, components, files),
                             previous, stdin=key_ring, triggers=[m.instance])]
        for m in nodes:
            # 5. On each control-plane node in turn, once all of them read the new key: it writes with it.
            previous = [step(f"{name}-{m.node.name}-encryption-writer", m.connection,
                             control_plane.render_encryption_writer(m.node.name), previous, stdin=key_ring,
                             triggers=[m.instance])]
        # 6. On the first control-plane node: every Secret rewritten with the new key, recorded as done.
        # The key ring on stdin, which the step does not read: a new ring runs it again, also one that returns to the
        # key it last rewrote with after a change stopped half-way (whose key some Secrets are then written with).
        rewrite = step(f"{name}-encryption-rewrite", first.connection, control_plane.render_encryption_rewrite(target),
                       previous, stdin=key_ring)
        self.done: list[pulumi.Resource] = [rewrite]
        self.register_outputs({"encryption": target, "nodes": [m.node.name for m in nodes]})
