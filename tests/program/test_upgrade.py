"""The rolling upgrade as the program declares it (components/cluster/upgrade.py): its waves, the steps' commands,
what a version change touches, and that creating the steps runs nothing."""
from __future__ import annotations

import pytest

from render.hyperv import script_from_ssh_command
from render.shell import script_from_bash_command
from tests.conftest import hk_prod_values, raw_config
from tests.validators import bash_input
from tools.mock.program import Recording, Secret, changed_resources, run_program

# Control plane one at a time (the first node runs `kubeadm upgrade apply`), then the workers in waves, zone
# by zone (Pulumi.hk-prod.yaml: zones [hk-1, hk-2], rollout defaults: 20% of each zone's OS pool, at least 1).
WAVES = [["hk-cp-1"], ["hk-cp-2"], ["hk-cp-3"], ["hk-lnx-1", "hk-win-1"], ["hk-lnx-3", "hk-win-3"],
         ["hk-lnx-2", "hk-win-2"], ["hk-lnx-4"]]
ORDER = [node for wave in WAVES for node in wave]
STEPS = ("drain-for-upgrade", "node-upgrade", "uncordon-after-upgrade")


def steps_of(node: str) -> tuple[str, ...]:
    """A node's steps in order: a Windows node moves its runtime in a step of its own before the binaries."""
    if node.startswith("hk-win"):
        return ("drain-for-upgrade", "runtime-upgrade", "node-upgrade", "uncordon-after-upgrade")
    return STEPS


@pytest.fixture
def hk(hk_recording) -> Recording:
    return hk_recording


def step(recording: Recording, node: str, name: str):
    return recording.named(f"hk-prod-upgrade-{node}-{name}")


def instance(recording: Recording, node: str) -> str:
    """The machine instance a node's steps are keyed on: a Linux VM's first MAC, a Windows VM converge's id."""
    vm = recording.named(f"hk-prod-{node}-vm")
    if node.startswith("hk-win"):
        return vm.id
    return recording.state[vm.urn].outputs["networkDevices"][0]["macAddress"].lower()


def update_text(resource, node: str, recording: Recording) -> str:
    command = resource.inputs["update"]
    text = script_from_bash_command(command) or script_from_ssh_command(command)
    assert text, resource.name
    # The script names its machine instance (an input), so a new instance re-runs its own node's steps.
    machine = instance(recording, node)
    if script_from_bash_command(command):
        assert bash_input(text, "MACHINE") == machine, resource.name
    else:
        assert f"$Machine = '{machine}'" in text.splitlines(), resource.name
    return text


def test_waves_in_the_upgrade_guides_order(hk):
    from plan.rollout import stack_waves
    from tests.conftest import hk_prod_spec
    assert stack_waves(hk_prod_spec()) == WAVES
    upgrade_urns = {r.urn for r in hk.resources if r.name.startswith("hk-prod-upgrade-")}
    for index, wave in enumerate(WAVES):
        for node in wave:
            steps = [step(hk, node, name) for name in steps_of(node)]
            for earlier, later in zip(steps, steps[1:], strict=False):
                # Each of a node's steps waits for the one before it, and no other upgrade step.
                assert upgrade_urns & set(later.dependencies) == {earlier.urn}, later.name
            # A node's drain waits for the wave before's gate, and nothing else of the upgrade.
            before = {hk.named(f"hk-prod-upgrade--wave-{index - 1}").urn} if index else set()
            assert upgrade_urns & set(steps[0].dependencies) == before, node
        # The wave's gate (components/cluster/waves.py) waits for every node of the wave to be uncordoned, and runs nothing.
        gate = hk.named(f"hk-prod-upgrade--wave-{index}")
        assert set(gate.dependencies) == {step(hk, node, "uncordon-after-upgrade").urn for node in wave}
        # Its connection (the SDK marks every connection secret) has no credentials: nothing is ever sent over it.
        connection = gate.inputs["connection"].value
        assert set(gate.inputs) == {"connection"} and connection["host"] == "10.30.30.11"
        assert not {"privateKey", "password", "proxy", "hostKey"} & set(connection), connection
    # The first wave starts once every node has joined and is Ready.
    first = step(hk, "hk-cp-1", "drain-for-upgrade")
    for node in ORDER:
        ready = "hk-prod-kubeadm-hk-cp-1-ready" if node == "hk-cp-1" else (
            f"hk-prod-kubeadm-windows-{node}-drain" if node.startswith("hk-win") else f"hk-prod-kubeadm-{node}-drain")
        assert hk.named(ready).urn in first.dependencies, node


def test_creating_the_chain_runs_nothing_and_a_version_change_runs_it(hk):
    for node in ORDER:
        for name in steps_of(node):
            inputs = step(hk, node, name).inputs
            assert "create" not in inputs and "delete" not in inputs, (node, name)
            text = update_text(step(hk, node, name), node, hk)
            assert ("1.36.4" in text) == (name != "runtime-upgrade"), (node, name)
            # The steps name the runtime too, so a runtime pin change runs the chain as well (a Windows
            # node's Kubernetes step does not: its runtime step before it moves containerd).
            windows_binaries = node.startswith("hk-win") and name == "node-upgrade"
            assert ("2.3.5" in text) != windows_binaries, (node, name)


def test_drain_and_uncordon_run_on_the_first_control_plane_node_and_the_upgrade_on_the_node(hk):
    cp1 = hk.named("hk-prod-kubeadm-init").inputs["connection"].value["host"]
    for node in ORDER:
        assert step(hk, node, "drain-for-upgrade").inputs["connection"].value["host"] == cp1
        assert step(hk, node, "uncordon-after-upgrade").inputs["connection"].value["host"] == cp1
    assert step(hk, "hk-lnx-2", "node-upgrade").inputs["connection"].value["host"] == "10.30.30.22"
    # Windows nodes are reached through their Hyper-V host, with the guest password on stdin, secret.
    windows = step(hk, "hk-win-2", "node-upgrade")
    assert windows.inputs["connection"].value["host"] == hk.named("hk-prod-hk-win-2-vm").inputs["connection"].value["host"]
    assert isinstance(windows.inputs["stdin"], Secret)


def test_the_first_node_applies_the_upgrade_and_the_others_follow_it(hk):
    assert bash_input(update_text(step(hk, "hk-cp-1", "node-upgrade"), "hk-cp-1", hk), "UPGRADE_FIRST_CONTROL_PLANE") == "1"
    for node in ("hk-cp-2", "hk-cp-3", "hk-lnx-1", "hk-lnx-4"):
        assert bash_input(update_text(step(hk, node, "node-upgrade"), node, hk), "UPGRADE_FIRST_CONTROL_PLANE") == "0", node
    assert "@('upgrade', 'node')" in update_text(step(hk, "hk-win-1", "node-upgrade"), "hk-win-1", hk)
    # A control-plane node's drain checks etcd quorum without it; a worker's does not.
    # Only a control-plane node's drain names an etcd pod, so only it checks quorum (lib/etcd.sh).
    assert bash_input(update_text(step(hk, "hk-cp-2", "drain-for-upgrade"), "hk-cp-2", hk), "ETCD_POD") == "etcd-hk-cp-1"
    assert bash_input(update_text(step(hk, "hk-lnx-1", "drain-for-upgrade"), "hk-lnx-1", hk), "ETCD_POD") == ""


def test_a_patch_upgrade_touches_only_the_pin_the_chain_windows_kube_proxy_and_the_expiry_report(hk):
    values = hk_prod_values()
    values["cluster"]["kubernetesVersion"] = "1.36.3"
    before, after = run_program(raw_config(values)), hk
    chain = {f"hk-prod-upgrade-{node}-{name}" for node in ORDER for name in STEPS}
    # Plus the certificate expiry report, read again after the upgrade renewed the certificates; not the provider's
    # credential, which is its own (components/cluster/bootstrap.py).
    assert changed_resources(before, after) == chain | {
        "hk-prod-kubernetes-version", "hk-prod-kubernetes-version-upgraded",
        "hk-prod-windows-kube-proxy-daemonset-kube-system-kube-proxy-windows",
        *(f"hk-prod-certificates-{n}-check" for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3"))}
    # Windows kube-proxy's new image rolls out only after the last node's upgrade.
    proxy = after.named("hk-prod-windows-kube-proxy-daemonset-kube-system-kube-proxy-windows").urn
    assert step(after, ORDER[-1], "uncordon-after-upgrade").urn in after.waits_for(proxy)


def test_nodes_keep_the_version_they_were_created_with_until_the_chain_moves_them(hk):
    # The SSH converge (the preparation's update) names no version; its create, which installs the version
    # for a new instance, is ignored on updates (not on a replacement: tests/program/test_lifecycle.py). kubeadm
    # init and the Windows binaries step ignore later changes the same way.
    prepare = hk.named("hk-prod-hk-lnx-1-prepare")
    converge = script_from_bash_command(prepare.inputs["update"])
    assert "1.36.4" not in converge and bash_input(converge, "INSTALL_KUBERNETES") == "0"
    first = script_from_bash_command(prepare.inputs["create"])
    assert bash_input(first, "K8S_VERSION") == "1.36.4" and bash_input(first, "INSTALL_KUBERNETES") == "1"
    assert prepare.ignore_changes == ["create"]
    # init also ignores its connection: a new instance of the node (a new host key) must never run it again.
    assert hk.named("hk-prod-kubeadm-init").ignore_changes == ["create", "connection"]
    binaries = hk.named("hk-prod-kubeadm-windows-hk-win-1-prepare-kubernetes")
    assert binaries.ignore_changes == ["create"]
    # Its update installs nothing: a rotated credential must not move a running kubelet (back).
    update = script_from_ssh_command(binaries.inputs["update"])
    assert "the upgrade chain moves them" in update and "1.36.4" not in update and "Invoke-" not in update


# --- the container runtime ------------------------------------------------------------------------

def with_runtime(monkeypatch, containerd: str, runc: str) -> None:
    """The matrix with another containerd/runc pin for the stack's minor, as a release of this program would ship it."""
    import dataclasses

    from config import compat

    minor = compat.kubernetes_minor(hk_prod_values()["cluster"]["kubernetesVersion"])
    release = dataclasses.replace(compat.KUBERNETES[minor], containerd=containerd, runc=runc)
    monkeypatch.setitem(compat.KUBERNETES, minor, release)


def test_a_runtime_pin_change_runs_only_the_chain_behind_its_drains(hk, monkeypatch):
    with_runtime(monkeypatch, "2.3.6", "1.5.2")
    after = run_program(raw_config(hk_prod_values()))
    chain = {f"hk-prod-upgrade-{node}-{name}" for node in ORDER for name in steps_of(node)
             if not (node.startswith("hk-win") and name == "node-upgrade")}
    touched = changed_resources(hk, after)
    # The chain (a Windows node's Kubernetes step names no runtime), and nothing that runs on every node at
    # once: no preparation, no containerd configuration, no join, no machine.
    assert touched == chain, sorted(touched ^ chain)
    linux = update_text(step(after, "hk-lnx-2", "node-upgrade"), "hk-lnx-2", after)
    assert bash_input(linux, "CONTAINERD_VERSION") == "2.3.6" and bash_input(linux, "RUNC_VERSION") == "1.5.2"
    windows = update_text(step(after, "hk-win-2", "runtime-upgrade"), "hk-win-2", after)
    assert "$Version = '2.3.6'" in windows.splitlines()
    assert bash_input(update_text(step(after, "hk-win-2", "drain-for-upgrade"), "hk-win-2", after), "RUNTIME") == "2.3.6"
    # A node created later installs the new pin at once (the creates carry it; updates ignore them).
    prepare = after.named("hk-prod-hk-lnx-1-prepare")
    assert bash_input(script_from_bash_command(prepare.inputs["create"]), "CONTAINERD_VERSION") == "2.3.6"
    assert bash_input(script_from_bash_command(prepare.inputs["update"]), "CONTAINERD_VERSION") == ""
    binaries = after.named("hk-prod-kubeadm-windows-hk-win-1-prepare-containerd-binaries")
    assert binaries.ignore_changes == ["create"]
    create = script_from_ssh_command(binaries.inputs["create"]).splitlines()
    assert "$Version = '2.3.6'" in create and "$KeepMemberVersion = 1" in create
    assert "2.3.6" not in script_from_ssh_command(binaries.inputs["update"])
    # The chain's runtime step moves the drained member.
    assert "$KeepMemberVersion = 0" in windows.splitlines()


# --- certificates ---------------------------------------------------------------------------------

def test_without_a_renewal_round_nothing_renews_and_the_expiry_is_reported_after_the_upgrades(hk):
    assert not [r for r in hk.resources if r.name.endswith("-certificate-renewal")]
    check = hk.named("hk-prod-certificates-hk-cp-2-check")
    assert step(hk, ORDER[-1], "uncordon-after-upgrade").urn in hk.waits_for(check.urn)
    assert check.inputs["triggers"][-1] == "1.36.4"
    assert "kubeadm certs check-expiration" in script_from_bash_command(check.inputs["create"])
    assert "certificateExpiry" in hk.outputs


def test_a_renewal_round_renews_each_control_plane_node_in_turn_and_the_provider_waits_for_it(hk):
    values = hk_prod_values()
    values["cluster"]["certificateRenewal"] = "2027-10"
    renewed = run_program(raw_config(values))
    rounds = [renewed.named(f"hk-prod-kubeadm-{node}-certificate-renewal") for node in ("hk-cp-1", "hk-cp-2", "hk-cp-3")]
    for earlier, later in zip(rounds, rounds[1:], strict=False):
        assert earlier.urn in later.dependencies
    for node, renewal in zip(("hk-cp-1", "hk-cp-2", "hk-cp-3"), rounds, strict=False):
        script = script_from_bash_command(renewal.inputs["create"])
        assert bash_input(script, "NODE") == node and bash_input(script, "LABEL") == "2027-10"
        assert bash_input(script, "ETCD_POD") == f"etcd-{node}" and "check_quorum_without" in script
    # The provider's credential is its own (not renewed), but nothing applies a Kubernetes object during the round.
    read = renewed.named("hk-prod-kubeadm-kubeconfig")
    assert rounds[-1].urn in read.dependencies and "2027-10" not in read.inputs["triggers"]
    # Only the renewal and the report change.
    touched = changed_resources(hk, renewed)
    assert {r.name for r in rounds} | {"hk-prod-certificates-hk-cp-3-check"} <= touched
    assert "hk-prod-kubeadm-kubeconfig" not in touched
    assert not [name for name in touched if "-join" in name or name.endswith(("-vm", "-prepare", "-init"))]


def test_a_machine_id_that_would_break_a_script_is_refused():
    from render import node_steps

    for machine in ("", "a\nb", " padded", "x" * 201):
        with pytest.raises(ValueError, match="machine id"):
            node_steps.render_upgrade_drain("hk-lnx-1", "1.36.4", "2.3.5", machine=machine)


# --- the version record --------------------------------------------------------------------------

def test_the_version_record_moves_only_after_the_chain_succeeded():
    values = hk_prod_values()
    values["cluster"]["kubernetesVersion"] = "1.35.9"
    built = run_program(raw_config(values))
    record = built.named("hk-prod-kubernetes-version-upgraded")
    last_gate = built.named(f"hk-prod-upgrade--wave-{len(WAVES) - 1}")
    assert last_gate.urn in record.dependencies
    assert {step(built, node, "uncordon-after-upgrade").urn for node in WAVES[-1]} <= set(last_gate.dependencies)
    assert built.outputs["kubernetesVersion"] == "1.35.9"

    # The upgrade to 1.36 fails on hk-lnx-2: the run is cancelled (step_executor.go cancelDueToError), so
    # what was under way finishes and nothing new starts: the wave after it (hk-lnx-4) and the record are not
    # reached. How far the other node of its wave (hk-win-2) got depends on timing (here, on the order the
    # program's registrations arrive in), so each of its steps runs in this run or in the resumed one.
    failed = run_program(raw_config(hk_prod_values()), state=built.state,
                         fail=("hk-prod-upgrade-hk-lnx-2-node-upgrade",))
    assert failed.plan.failed == ["hk-prod-upgrade-hk-lnx-2-node-upgrade"]
    assert "hk-prod-kubernetes-version-upgraded" in failed.plan.skipped
    assert "hk-prod-upgrade-hk-lnx-4-drain-for-upgrade" in failed.plan.skipped
    assert "hk-prod-upgrade-hk-lnx-2-uncordon-after-upgrade" in failed.plan.skipped
    assert failed.state[record.urn].inputs["kubernetesVersion"] == "1.35.9"
    assert failed.state[failed.named("hk-prod-kubernetes-version").urn].inputs["kubernetesVersion"] == "1.36.4"

    # The next minor must wait: measured from the record, 1.37 skips 1.36 on the nodes still at 1.35.
    skipping = hk_prod_values()
    skipping["cluster"]["kubernetesVersion"] = "1.37.1"
    del skipping["workloads"]  # Envoy Gateway v1.9 stops at 1.36
    refused = run_program(raw_config(skipping), state=failed.state, preview=True).plan.errors
    assert any(e.startswith("hk-prod-kubernetes-version-upgraded:") and "upgrade to 1.36 first" in e for e in refused)

    # Running 1.36.4 again finishes the chain where it stopped and moves the record.
    resumed = run_program(raw_config(hk_prod_values()), state=failed.state)
    assert not resumed.plan.errors and resumed.plan.of("hk-prod-kubernetes-version-upgraded") == ["update"]
    assert resumed.plan.of("hk-prod-upgrade-hk-lnx-2-node-upgrade") == ["update"]
    assert resumed.plan.of("hk-prod-upgrade-hk-lnx-4-node-upgrade") == ["update"]
    assert resumed.plan.of("hk-prod-upgrade-hk-cp-1-node-upgrade") == ["same"]
    for name in STEPS:   # (its runtime step names only the containerd pin, which a patch leaves)
        step_name = f"hk-prod-upgrade-hk-win-2-{name}"
        # Exactly once across the two runs: skipped (or never reached) in the failed one means run when resumed.
        assert (failed.plan.of(step_name) == ["update"]) != (resumed.plan.of(step_name) == ["update"]), step_name
    # Zone hk-1's nodes were all upgraded before hk-2's first wave failed: resuming touches none of them.
    for node in ("hk-lnx-1", "hk-lnx-3", "hk-win-1", "hk-win-3"):
        assert all(resumed.plan.of(f"hk-prod-upgrade-{node}-{name}") == ["same"] for name in steps_of(node)), node
    assert failed.plan.of("hk-prod-upgrade-hk-lnx-3-uncordon-after-upgrade") == ["update"]


def test_a_node_named_like_a_gate_does_not_meet_one():
    """A node may be called `wave-1` (a DNS label); the gates between waves hold `--wave-`, which no step named
    after a node can (components/cluster/waves.py), so the run registers every URN once."""
    values = hk_prod_values()
    next(n for n in values["nodes"]["linux"] if n["name"] == "hk-lnx-4")["name"] = "wave-1"
    recording = run_program(raw_config(values))
    assert not recording.plan.errors
    assert recording.named("hk-prod-kubelet-config-wave-1") and recording.named("hk-prod-kubelet-config--wave-1")
    assert len({r.urn for r in recording.resources}) == len(recording.resources)
