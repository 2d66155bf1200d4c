"""The machine lifecycle as the engine runs it (tools/mock/engine.py against the state of an earlier run): a
rebuilt, replaced or lost node runs its own steps again and nothing on other nodes, and ends up at the
stack's current Kubernetes version."""
from __future__ import annotations

import copy
import functools

import pytest

from render.hyperv import script_from_ssh_command
from render.shell import script_from_bash_command
from tests.conftest import hk_prod_values, raw_config
from tests.validators import bash_input
from tools.mock import program as mockrun
from tools.mock.engine import without
from tools.mock.program import Recording, placeholder, run_program
from tools.mock.providers import new_host_key

NODE_STEPS_LINUX = ["host-key-install", "user-data-private", "cloud-init", "prepare", "authorized-keys"]
JOIN_STEPS = ["registration", "join-credentials", "join", "drain"]
UPGRADE_STEPS = ["drain-for-upgrade", "node-upgrade", "uncordon-after-upgrade"]


def upgrade_steps(windows: bool) -> list[str]:
    """A node's upgrade chain steps: a Windows node moves its runtime in a step of its own."""
    return UPGRADE_STEPS[:1] + ["runtime-upgrade"] + UPGRADE_STEPS[1:] if windows else UPGRADE_STEPS


def up(values: dict, state=None, **kwargs) -> Recording:
    run = run_program(raw_config(values), state=state, **kwargs)
    assert not run.plan.errors, run.plan.errors
    return run


@pytest.fixture
def built(hk_recording) -> Recording:
    return hk_recording


def node_resources(node: str, windows: bool = False) -> set[str]:
    """Every resource of one node that must run again for a new machine instance."""
    names = {f"hk-prod-{node}-vm", f"hk-prod-scheduling-node-{node}"}
    join_prefix = "hk-prod-kubeadm-windows" if windows else "hk-prod-kubeadm"
    names |= {f"{join_prefix}-{node}-{step}" for step in JOIN_STEPS}
    names |= {f"hk-prod-upgrade-{node}-{step}" for step in upgrade_steps(windows)}
    # Its kubelet configuration step names the machine too (components/cluster/kubelet_config.py).
    names.add(f"hk-prod-kubelet-config-{node}")
    if windows:
        names |= {f"hk-prod-{node}-activation"} | {
            f"{join_prefix}-{node}-prepare-{step}"
            for step in ("containers-feature", "host-settings", "containerd-binaries", "containerd", "kubernetes")}
    else:
        names |= {f"hk-prod-{node}-{step}" for step in NODE_STEPS_LINUX}
    return names


def assert_node_rebuilt(run: Recording, node: str, windows: bool = False, extra: set[str] = frozenset()) -> None:
    expected = node_resources(node, windows) | set(extra)
    assert run.plan.changed == expected - ({f"hk-prod-{node}-activation"} if windows else set()) or \
        run.plan.changed == expected, sorted(run.plan.changed ^ expected)
    join_prefix = "hk-prod-kubeadm-windows" if windows else "hk-prod-kubeadm"
    # Membership steps are replaced (their reset and deregistration run for the old instance), the label
    # patch is applied again (replaced or updated), the upgrade steps run (their text names the instance).
    for step in JOIN_STEPS:
        assert "replace" in run.plan.of(f"{join_prefix}-{node}-{step}"), step
    assert set(run.plan.of(f"hk-prod-scheduling-node-{node}")) & {"replace", "update"}
    for step in upgrade_steps(windows):
        assert run.plan.of(f"hk-prod-upgrade-{node}-{step}") == ["update"], step
    assert run.plan.of(f"hk-prod-kubelet-config-{node}") == ["update"]


def deletes_in_order(run: Recording) -> list[str]:
    return [s.name for s in run.plan.steps if s.op in ("delete", "delete-replaced", "retain")]


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
def test_replacing_a_linux_vm_reruns_that_node_and_nothing_else(built, preview):
    run = up(hk_prod_values(), built.state, replace=("hk-prod-hk-lnx-2-vm",), preview=preview)
    assert_node_rebuilt(run, "hk-lnx-2")
    # Delete before replace: the old instance is drained, reset and deregistered before its VM goes.
    order = deletes_in_order(run)
    assert order.index("hk-prod-kubeadm-hk-lnx-2-drain") < order.index("hk-prod-kubeadm-hk-lnx-2-join") \
        < order.index("hk-prod-kubeadm-hk-lnx-2-registration") < order.index("hk-prod-hk-lnx-2-vm")
    if not preview:
        old, new = (r.state[r.named("hk-prod-hk-lnx-2-vm").urn] for r in (built, run))
        assert new.id == old.id == "322"                       # the VMID, for every instance
        # What changes with the instance: the first NIC's MAC in the VM's configuration (not the agent's list,
        # whose first entry is the guest's loopback on every VM).
        assert new.outputs["networkDevices"][0]["macAddress"] != old.outputs["networkDevices"][0]["macAddress"]
        assert new.outputs["macAddresses"][0] == old.outputs["macAddresses"][0] == "00:00:00:00:00:00"
        join = run.named("hk-prod-kubeadm-hk-lnx-2-join")
        assert join.id != built.named("hk-prod-kubeadm-hk-lnx-2-join").id   # a command's id is new per create
        # The new instance booted the node's snippet, with the node's key: its install step ran again, pinned to it,
        # and found it; the connections keep their pin.
        install = run.named("hk-prod-hk-lnx-2-host-key-install")
        assert install.inputs["connection"].value["hostKey"] == key_of(run, "hk-lnx-2") == key_of(built, "hk-lnx-2")
        assert join.inputs["connection"].value["hostKey"] == key_of(run, "hk-lnx-2")


def key_of(recording: Recording, node: str) -> str:
    """The public host key the program made for a node, as the state holds it."""
    return recording.state[recording.named(f"hk-prod-{node}-host-key").urn].outputs["publicKeyOpenssh"].strip()


def test_rebuilding_a_node_with_new_keys_replaces_its_key_snippet_and_vm(built):
    """docs/lifecycle.md, "Rebuild or replace a node": --replace of the node's host key, snippet and VM. The new
    instance boots the new key from the new snippet; every connection to the node follows it, and no other node's
    changes."""
    run = up(hk_prod_values(), built.state,
             replace=("hk-prod-hk-lnx-2-host-key", "hk-prod-hk-lnx-2-user-data", "hk-prod-hk-lnx-2-vm"))
    assert "replace" in run.plan.of("hk-prod-hk-lnx-2-vm")
    assert_node_rebuilt(run, "hk-lnx-2", extra={"hk-prod-hk-lnx-2-host-key", "hk-prod-hk-lnx-2-user-data"})
    assert key_of(run, "hk-lnx-2") != key_of(built, "hk-lnx-2") and key_of(run, "hk-lnx-1") == key_of(built, "hk-lnx-1")
    for step in ("hk-prod-kubeadm-hk-lnx-2-join", "hk-prod-hk-lnx-2-prepare", "hk-prod-hk-lnx-2-host-key-install"):
        assert run.named(step).inputs["connection"].value["hostKey"] == key_of(run, "hk-lnx-2"), step
    # The new snippet gives the new instance the new key at its first boot.
    snippet = run.state[run.named("hk-prod-hk-lnx-2-user-data").urn].inputs["sourceRaw"]["data"]
    assert key_of(run, "hk-lnx-2") in str(snippet.value)


def test_a_lost_linux_vm_recreated_after_a_refresh_reruns_that_node(built):
    # `pulumi refresh` finds the VM gone (bpg vmRead sets no id) and drops it; the next `up` creates it.
    run = up(hk_prod_values(), without(built.state, ["hk-prod-hk-lnx-2-vm"]))
    assert run.plan.of("hk-prod-hk-lnx-2-vm") == ["create"]
    assert_node_rebuilt(run, "hk-lnx-2")


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
def test_replacing_a_windows_vm_reruns_that_node_and_nothing_else(built, preview):
    run = up(hk_prod_values(), built.state, replace=("hk-prod-hk-win-2-vm",), preview=preview)
    assert_node_rebuilt(run, "hk-win-2", windows=True)
    order = deletes_in_order(run)
    assert order.index("hk-prod-kubeadm-windows-hk-win-2-drain") < order.index("hk-prod-kubeadm-windows-hk-win-2-join") \
        < order.index("hk-prod-kubeadm-windows-hk-win-2-registration") < order.index("hk-prod-hk-win-2-vm")


def test_a_rebuilt_node_ends_at_the_stacks_current_kubernetes_version():
    """Created at 1.36.3, upgraded to 1.36.4 by the chain, then lost and re-created: its preparation is
    created anew with 1.36.4 (ignore_changes holds the old text on updates only), and so is a replaced
    Windows node's binaries step."""
    values = hk_prod_values()
    values["cluster"]["kubernetesVersion"] = "1.36.3"
    first = up(values)
    upgraded = up(hk_prod_values(), first.state)
    assert "hk-prod-hk-lnx-2-prepare" not in upgraded.plan.changed
    stored = script_from_bash_command(upgraded.state[upgraded.named("hk-prod-hk-lnx-2-prepare").urn].inputs["create"])
    assert bash_input(stored, "K8S_VERSION") == "1.36.3"      # the state keeps the first creation's text

    rebuilt = up(hk_prod_values(), without(upgraded.state, ["hk-prod-hk-lnx-2-vm"]))
    prepare = rebuilt.named("hk-prod-hk-lnx-2-prepare")
    assert rebuilt.plan.of(prepare.name) == ["delete-replaced", "replace"]
    created = script_from_bash_command(rebuilt.state[prepare.urn].inputs["create"])
    assert bash_input(created, "K8S_VERSION") == "1.36.4" and bash_input(created, "INSTALL_KUBERNETES") == "1"

    windows = up(hk_prod_values(), upgraded.state, replace=("hk-prod-hk-win-1-vm",))
    binaries = windows.named("hk-prod-kubeadm-windows-hk-win-1-prepare-kubernetes")
    assert "replace" in windows.plan.of(binaries.name)
    text = script_from_ssh_command(windows.state[binaries.urn].inputs["create"])
    assert "1.36.4" in text and "1.36.3" not in text


def test_the_first_control_plane_node_is_never_re_initialised(built):
    """kubeadm init is keyed on nothing: a new instance of the first node does not start a new cluster."""
    run = up(hk_prod_values(), without(built.state, ["hk-prod-hk-cp-1-vm"]))
    assert run.plan.of("hk-prod-kubeadm-init") == ["same"]


# --- removal ------------------------------------------------------------------------------------------

def hosts_dialled_by_deletes(run: Recording, before: Recording) -> dict[str, str]:
    """For each delete step that runs a command: the host it dials (from the state, as the engine does)."""
    dialled = {}
    for step in run.plan.steps:
        if step.op not in ("delete", "delete-replaced"):
            continue
        entry = before.state.get(step.urn)
        if entry is None or entry.type != "command:remote:Command" or not entry.inputs.get("delete"):
            continue
        dialled[step.name] = entry.inputs["connection"].value["host"]
    return dialled


def test_removing_a_linux_worker_drains_resets_deregisters_then_deletes_its_vm(built):
    values = hk_prod_values()
    values["nodes"]["linux"] = [n for n in values["nodes"]["linux"] if n["name"] != "hk-lnx-4"]
    run = up(values, built.state)
    order = deletes_in_order(run)
    expected = ["hk-prod-scheduling-node-hk-lnx-4", "hk-prod-kubeadm-hk-lnx-4-drain", "hk-prod-kubeadm-hk-lnx-4-join",
                "hk-prod-kubeadm-hk-lnx-4-registration", "hk-prod-hk-lnx-4-vm"]
    assert [name for name in order if name in expected] == expected
    dialled = hosts_dialled_by_deletes(run, built)
    assert dialled["hk-prod-kubeadm-hk-lnx-4-join"] == "10.30.30.24"          # kubeadm reset on the node
    assert dialled["hk-prod-kubeadm-hk-lnx-4-drain"] == "10.30.30.11"         # on the first control-plane node
    assert dialled["hk-prod-kubeadm-hk-lnx-4-registration"] == "10.30.30.11"


def test_a_linux_workers_removal_moves_its_longhorn_replicas_before_its_drain(built):
    """hk-prod has Longhorn on its Linux workers: a worker's drain, the first thing its removal runs on the cluster,
    moves the node's replicas elsewhere first and waits for that (render/scripts/lib/longhorn-evict.sh, tested with
    stubs in tests/render/test_node_steps.py). A control-plane node holds none; a stack without Longhorn moves
    nothing."""
    def evicts(recording: Recording, node: str, control_plane: bool = False) -> str:
        delete = recording.named(f"hk-prod-kubeadm-{node}-drain").inputs["delete"]
        script = script_from_bash_command(delete)
        namespace = next(line for line in script.splitlines() if line.startswith("LONGHORN_NAMESPACE="))
        assert "evict_longhorn_replicas" in script
        return namespace.partition("=")[2]

    assert evicts(built, "hk-lnx-4") == "'longhorn-system'"
    assert evicts(built, "hk-cp-2", control_plane=True) == "''"
    # The node's labels stay on it while its drain runs: its label patch leaves the state without the provider's delete
    # (which would take them off, and with them the node's Longhorn manager, which alone moves its replicas).
    removal = hk_prod_values()
    removal["nodes"]["linux"] = [n for n in removal["nodes"]["linux"] if n["name"] != "hk-lnx-4"]
    removed = up(removal, built.state)
    assert removed.plan.of("hk-prod-scheduling-node-hk-lnx-4") == ["retain"]
    assert removed.plan.of("hk-prod-kubeadm-hk-lnx-4-drain") == ["delete"]
    values = hk_prod_values()
    values["storage"].pop("longhorn")
    values["storage"].pop("defaultClass", None)
    without_longhorn = up(values)
    assert evicts(without_longhorn, "hk-lnx-4") == "''"


def test_a_failed_drain_keeps_everything_it_depends_on(built):
    """deployment_executor.go: what a failed delete depends on is not deleted in that run, so a node whose
    drain is refused (a PodDisruptionBudget) keeps its membership and its VM."""
    values = hk_prod_values()
    values["nodes"]["linux"] = [n for n in values["nodes"]["linux"] if n["name"] != "hk-lnx-4"]
    run = run_program(raw_config(values), state=built.state, fail=("hk-prod-kubeadm-hk-lnx-4-drain",))
    assert run.plan.failed == ["hk-prod-kubeadm-hk-lnx-4-drain"]
    deleted = set(deletes_in_order(run))
    for kept in ("hk-prod-kubeadm-hk-lnx-4-join", "hk-prod-kubeadm-hk-lnx-4-registration", "hk-prod-hk-lnx-4-vm",
                 "hk-prod-hk-lnx-4-prepare"):
        assert kept not in deleted and kept in run.plan.skipped, kept
    # The state keeps them for the next run.
    assert {"hk-prod-kubeadm-hk-lnx-4-join", "hk-prod-hk-lnx-4-vm"} <= {e.name for e in run.state.values()}


def _replace_control_plane(values: dict) -> dict:
    """hk-cp-3 out, hk-cp-4 in (same zone and host, a free VM id and address): three members after it."""
    plane = values["nodes"]["controlPlane"]
    plane[:] = [n for n in plane if n["name"] != "hk-cp-3"] + [
        {**next(n for n in plane if n["name"] == "hk-cp-3"), "name": "hk-cp-4", "vmId": 314, "ip": "10.30.30.14"}]
    return values


MEMBER_STEPS = [f"hk-prod-{s}" for s in ("hk-cp-3-vm", "hk-cp-3-user-data", "kubeadm-hk-cp-3-drain", "kubeadm-hk-cp-3-join",
                                          "kubeadm-hk-cp-3-registration", "scheduling-node-hk-cp-3",
                                          "kubelet-serving-approver-hk-cp-3", "etcd-backup-hk-cp-3")]


def acting_deletes(run: Recording, before: Recording) -> list[str]:
    """The deletes of a run that do something: a command with a delete script, or any other custom resource whose
    provider deletes it (a VM, a snippet, a label patch)."""
    acting = []
    for step in run.plan.steps:
        entry = before.state.get(step.urn)
        if step.op not in ("delete", "delete-replaced") or entry is None or not entry.custom:
            continue
        if entry.type != "command:remote:Command" or entry.inputs.get("delete"):
            acting.append(step.name)
    return acting


@pytest.mark.parametrize("how", [{}, {"exclude": ("hk-prod-machines",)}, {"target": ("hk-prod-kubeadm-hk-cp-3-drain",)},
                                 {"target": tuple(MEMBER_STEPS)}],
                         ids=["plain", "exclude-guard", "target-drain", "target-all-but-lock"])
def test_removing_a_control_plane_member_without_retire_runs_nothing_on_it(built, how):
    """The machines guard refuses it at preview; where its check does not run (`--exclude` it, `--target` something
    else), the member's lock does: it depends on each of the member's acting steps, is deleted first and refused
    (protected), and the engine then deletes nothing it depends on."""
    values = _replace_control_plane(hk_prod_values())
    for preview in (True, False):
        run = run_program(raw_config(values), state=built.state, preview=preview, **how)
        assert run.plan.errors, how
        assert not [name for name in acting_deletes(run, built) if "hk-cp-3" in name], (how, preview)
        if not preview:
            assert {e.name for e in run.state.values()} >= set(MEMBER_STEPS)
    locked = run_program(raw_config(values), state=built.state, exclude=("hk-prod-machines",))
    assert any(e.startswith("hk-prod-member-locks-hk-cp-3: resource cannot be deleted because it is protected")
               for e in locked.plan.errors), locked.plan.errors
    lock = built.named("hk-prod-member-locks-hk-cp-3")
    assert lock.protect and {built.named(n).urn for n in ("hk-prod-hk-cp-3-vm", "hk-prod-kubeadm-hk-cp-3-drain",
                                                          "hk-prod-scheduling-node-hk-cp-3",
                                                          "hk-prod-kubelet-serving-approver-hk-cp-3",
                                                          "hk-prod-etcd-backup-hk-cp-3")} <= set(lock.dependencies)


def test_a_control_plane_node_is_removed_only_after_a_retire_run(built):
    # Straight away: the machines guard refuses it, and the preview stops there (a check failure bails).
    refused = run_program(raw_config(_replace_control_plane(hk_prod_values())), state=built.state, preview=True)
    assert any("hk-cp-3 is a control-plane node: set retire: true" in e for e in refused.plan.errors)
    assert not deletes_in_order(refused)

    retiring = hk_prod_values()
    next(n for n in retiring["nodes"]["controlPlane"] if n["name"] == "hk-cp-3")["retire"] = True
    retired = up(retiring, built.state)
    # The retire run changes nothing on any machine: only the protection in the state and the guard's record.
    assert retired.plan.changed == {"hk-prod-machines"}
    assert not retired.state[retired.named("hk-prod-hk-cp-3-vm").urn].protect
    assert not retired.state[retired.named("hk-prod-member-locks-hk-cp-3").urn].protect

    # Not in the run that changes the Secrets encryption key: the leaving API server would keep writing with the old
    # key while the others write with the new one, which it cannot read (components/guards.py).
    rotated = _replace_control_plane(hk_prod_values())
    rotated["security"] = {"secretsEncryption": {"keyRotation": "2027-01"}}
    refused = run_program(raw_config(rotated), state=retired.state, preview=True)
    assert any("Secrets encryption key changes (key-initial to key-2027-01)" in e and "hk-cp-3" in e
               for e in refused.plan.errors), refused.plan.errors

    removed = up(_replace_control_plane(hk_prod_values()), retired.state)
    order = deletes_in_order(removed)
    expected = ["hk-prod-kubeadm-hk-cp-3-drain", "hk-prod-kubeadm-hk-cp-3-join", "hk-prod-kubeadm-hk-cp-3-registration",
                "hk-prod-hk-cp-3-vm"]
    assert [name for name in order if name in expected] == expected
    # The new member joins before the old one leaves (deletes run at the end of the run).
    steps = [s.name for s in removed.plan.steps]
    assert steps.index("hk-prod-kubeadm-hk-cp-4-join") < steps.index("hk-prod-kubeadm-hk-cp-3-drain")


@pytest.mark.parametrize("node,pool,address", [("hk-lnx-4", "linux", "10.30.30.24"),
                                               ("hk-cp-3", "controlPlane", "10.30.30.13"),
                                               ("hk-win-2", "windows", "10.30.30.52")])
def test_a_lost_node_is_removed_without_dialling_it(built, node, pool, address):
    windows = pool == "windows"
    values = hk_prod_values()
    next(n for n in values["nodes"][pool] if n["name"] == node)["lost"] = True
    marked = up(values, built.state)
    prefix = "hk-prod-kubeadm-windows" if windows else "hk-prod-kubeadm"
    # The lost run: the node is taken out of service from the first control-plane node, leaves the
    # upgrade chain, and nothing of it runs.
    lost = marked.named(f"{prefix}-{node}-lost")
    assert marked.plan.of(lost.name) == ["create"] and lost.inputs["connection"].value["host"] == "10.30.30.11"
    # Where its wave empties (hk-prod's Linux waves hold one node each; hk-win-2 shares hk-lnx-2's), one wave fewer
    # is followed by one gate fewer (components/cluster/waves.py: one per wave, numbered), a gate that never ran anything.
    gates_gone = {r.name for r in built.resources if "--wave-" in r.name} - {r.name for r in marked.resources}
    assert bool(gates_gone) == (node != "hk-win-2"), gates_gone
    assert all(marked.plan.of(gate) == ["delete"] for gate in gates_gone)
    # The machines guard records it; the serving certificate approver on each other control-plane node drops it from
    # its inventory (a lost control-plane node's own is frozen, as every step that dials it).
    approvers = {f"hk-prod-kubelet-serving-approver-{n}" for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3") if n != node}
    assert {s for s in approvers if marked.plan.of(s) != ["update"]} == set()
    assert {s.name for s in marked.plan.steps if s.op != "same"} - {lost.name, "hk-prod-machines",
                                                                   *approvers} - gates_gone == {
        f"hk-prod-upgrade-{node}-{step}" for step in upgrade_steps(windows)} | {
        f"hk-prod-restarts-{node}-{step}" for step in ("drain-for-restart", "vm-restart", "uncordon-after-restart")
        if not windows} | ({f"hk-prod-certificates-{node}-check"} if pool == "controlPlane" else set()) | {
        f"hk-prod-kubelet-config-{node}"} | ({
            f"hk-prod-control-plane-{node}{step}" for step in ("", "-files", "-encryption-writer")}
            if pool == "controlPlane" else set()) | (
        # A lost Linux node's host key install step leaves the program (a new one would dial it): deleted, it runs
        # nothing (no delete command). Its VM's destroy step is new: it runs nothing until the removal.
        {f"hk-prod-{node}-host-key-install", f"hk-prod-{node}-vm-destroy"} if not windows else set())
    if not windows:
        assert marked.plan.of(f"hk-prod-{node}-host-key-install") == ["delete"]
        assert not built.state[built.named(f"hk-prod-{node}-host-key-install").urn].inputs.get("delete")
    assert not built.state[built.named(f"hk-prod-kubelet-config-{node}").urn].inputs.get("delete")
    for step in upgrade_steps(windows):
        assert not built.state[built.named(f"hk-prod-upgrade-{node}-{step}").urn].inputs.get("delete")

    # A release or a setting change that would re-run the node's steps does not reach it now.
    changed = copy_values(values)
    changed["ntpServers"] = ["10.10.10.6"]
    changed["registry"]["mirrors"] = changed["registry"]["mirrors"][:1]
    still = up(changed, marked.state)
    assert still.plan.changed and not {n for n in still.plan.changed if f"-{node}-" in n}

    removal = copy_values(values)
    removal["nodes"][pool] = [n for n in removal["nodes"][pool] if n["name"] != node]
    if pool == "controlPlane":
        # Three members after the run: a replacement joins in the same run.
        removal["nodes"]["controlPlane"].append({**next(n for n in hk_prod_values()["nodes"]["controlPlane"]
                                                        if n["name"] == node), "name": "hk-cp-4", "vmId": 314,
                                                 "ip": "10.30.30.14"})
    removed = up(removal, marked.state)
    dialled = hosts_dialled_by_deletes(removed, marked)
    assert address not in dialled.values(), dialled
    # Node-side steps leave the state without running; the deregistration (etcd member, Node) runs on
    # the first control-plane node; the machine is deleted through its hypervisor.
    assert removed.plan.of(f"{prefix}-{node}-join") == ["retain"]
    assert dialled[f"{prefix}-{node}-registration"] == "10.30.30.11"
    if windows:
        assert removed.plan.of(f"hk-prod-{node}-vm") == ["delete"]
        assert dialled[f"hk-prod-{node}-vm"] == "10.10.10.32"    # Remove-VM on its Hyper-V host
    else:
        # The VM leaves the state without the provider's delete; its destroy step removes it on its Proxmox node, if
        # it is still there, before.
        assert removed.plan.of(f"hk-prod-{node}-vm") == ["retain"]
        assert removed.plan.of(f"hk-prod-{node}-vm-destroy") == ["delete"]
        proxmox = {n["name"]: n["address"] for n in hk_prod_values()["proxmox"]["nodes"]}
        holder = next(n for n in hk_prod_values()["nodes"][pool] if n["name"] == node)["proxmoxNode"]
        assert dialled[f"hk-prod-{node}-vm-destroy"] == proxmox[holder]
        order = deletes_in_order(removed)
        assert order.index(f"hk-prod-{node}-vm-destroy") < order.index(f"hk-prod-{node}-vm")


def test_a_lost_linux_node_whose_vm_is_already_gone_is_removed_in_one_run(built):
    """bpg's delete reads the VM first and fails for one that no longer exists (tools/mock/providers.py), as an ordinary
    removal shows; a lost node's VM leaves the state without it, and its destroy step finds nothing to do."""
    gone = ("hk-prod-hk-lnx-4-vm",)
    removal = hk_prod_values()
    removal["nodes"]["linux"] = [n for n in removal["nodes"]["linux"] if n["name"] != "hk-lnx-4"]
    ordinary = run_program(raw_config(removal), state=built.state, gone=gone)
    assert ordinary.plan.failed == ["hk-prod-hk-lnx-4-vm"]
    assert "hk-prod-hk-lnx-4-vm" in {e.name for e in ordinary.state.values()}

    marking = hk_prod_values()
    next(n for n in marking["nodes"]["linux"] if n["name"] == "hk-lnx-4")["lost"] = True
    marked = up(marking, built.state)
    removed = run_program(raw_config(removal), state=marked.state, gone=gone)
    assert not removed.plan.failed and not removed.plan.errors
    assert removed.plan.of("hk-prod-hk-lnx-4-vm") == ["retain"]
    assert not {e.name for e in removed.state.values()} & {"hk-prod-hk-lnx-4-vm", "hk-prod-hk-lnx-4-vm-destroy",
                                                            "hk-prod-vm-id-324", "hk-prod-address-10-30-30-24"}


def copy_values(values: dict) -> dict:
    import copy
    return copy.deepcopy(values)


# --- the machines guard: what one run cannot do --------------------------------------------------------

def refusals(values: dict, state) -> list[str]:
    return run_program(raw_config(values), state=state, preview=True).plan.errors


def test_renaming_a_node_onto_its_own_vm_id_or_address_is_refused_at_preview(built):
    values = hk_prod_values()
    node = next(n for n in values["nodes"]["linux"] if n["name"] == "hk-lnx-4")
    node["name"] = "hk-lnx-9"
    found = refusals(values, built.state)
    assert any("hk-lnx-9 takes VM id 324 from hk-lnx-4" in e for e in found), found
    assert any("hk-lnx-9 takes address 10.30.30.24 from hk-lnx-4" in e for e in found), found
    # With its own id and address the new node is created, and the old one removed in the same run.
    node.update(vmId=329, ip="10.30.30.29")
    assert refusals(values, built.state) == []


def test_windows_address_reuse_is_refused_too(built):
    values = hk_prod_values()
    values["nodes"]["windows"][2]["name"] = "hk-win-9"
    assert any("hk-win-9 takes address 10.30.30.53 from hk-win-3" in e for e in refusals(values, built.state))


def test_a_disk_change_with_a_cpu_or_memory_change_is_refused_and_each_alone_is_fine(built):
    both = hk_prod_values()
    both["nodes"]["linux"][0].update(memoryMb=65536, diskGb=200)
    assert any("change the disk and the CPU or memory in separate runs" in e for e in refusals(both, built.state))
    for change in ({"memoryMb": 65536}, {"cpu": 12}, {"diskGb": 200}):
        alone = hk_prod_values()
        alone["nodes"]["linux"][0].update(change)
        assert refusals(alone, built.state) == [], change
    shrink = hk_prod_values()
    shrink["nodes"]["linux"][0]["diskGb"] = 100
    assert any("a disk can only grow" in e for e in refusals(shrink, built.state))


def test_the_first_control_plane_node_cannot_change_and_an_unprepared_one_cannot_go(built):
    values = hk_prod_values()
    plane = values["nodes"]["controlPlane"]
    plane[0], plane[1] = plane[1], plane[0]
    assert any("the first control-plane node is hk-cp-1" in e for e in refusals(values, built.state))
    gone = _replace_control_plane(hk_prod_values())
    assert any("hk-cp-3 is a control-plane node: set retire: true" in e for e in refusals(gone, built.state))


def test_a_lost_node_stays_lost_until_it_is_removed(built):
    values = hk_prod_values()
    values["nodes"]["linux"][3]["lost"] = True
    marked = up(values, built.state)
    assert any("hk-lnx-4 was declared lost" in e for e in refusals(hk_prod_values(), marked.state))


def test_config_refuses_to_retire_or_lose_the_first_control_plane_node():
    from tests.conftest import problems
    for flag in ("retire", "lost"):
        values = hk_prod_values()
        values["nodes"]["controlPlane"][0][flag] = True
        assert [p for p in problems(values) if p.startswith(f"nodes.controlPlane[0].{flag}:")], flag


# --- credential rotation and truthful previews ---------------------------------------------------------

DISRUPTIVE_STEPS = ("-drain-for-upgrade", "-node-upgrade", "-drain-for-restart", "-vm-restart", "-certificate-renewal")
# Steps a rotation re-runs on every node at once: they converge to what is already there (the binaries step
# installs nothing on update: test_a_rotation_after_an_upgrade_never_moves_a_windows_kubelet_back).


def carries(resource_inputs: dict, key: str, secret_value: str) -> bool:
    return mockrun.carries(resource_inputs.get(key), secret_value)


@functools.cache
def _hk_prod_waves() -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
    from config.loader import load
    from plan.rollout import stack_waves
    spec = load(raw_config(hk_prod_values())).spec
    return tuple((operation, tuple(tuple(wave) for wave in waves))
                 for operation, waves in (("upgrade", stack_waves(spec)), ("restarts", stack_waves(spec, windows=False))))


@functools.cache
def _wave_of(step_name: str) -> tuple[str, int] | None:
    """(operation, wave index) of an upgrade or restart step of hk-prod; None for other steps."""
    for operation, waves in _hk_prod_waves():
        for index, wave in enumerate(waves):
            if any(step_name.startswith(f"hk-prod-{operation}-{node}-") for node in wave):
                return operation, index
    return None


def assert_disruptive_steps_are_serial(run: Recording) -> None:
    """Steps that can drain, upgrade or restart a node run in waves: every two of them touched by the run wait one
    for the other, unless they are of different nodes of the same wave (plan.rollout keeps such a wave within
    rollout.maxUnavailable)."""
    touched = [run.named(name) for name in run.plan.changed if name.endswith(DISRUPTIVE_STEPS)]
    closure = {r.urn: run.waits_for(r.urn) for r in touched}
    for i, a in enumerate(touched):
        for b in touched[i + 1:]:
            same_wave = _wave_of(a.name) is not None and _wave_of(a.name) == _wave_of(b.name)
            assert same_wave or a.urn in closure[b.urn] or b.urn in closure[a.urn], (a.name, b.name)


def with_stdin_readers(recording: Recording, names: set[str]) -> set[str]:
    """`names` and the commands whose stdin is another's stdout among them (unknown in a preview of its update)."""
    found, grown = set(names), True
    urns = {r.urn: r.name for r in recording.resources}
    while grown:
        grown = False
        for r in recording.resources:
            if r.name not in found and {urns.get(u) for u in r.property_dependencies.get("stdin", [])} & found:
                found.add(r.name)
                grown = True
    return found


def test_rotating_the_node_ssh_key_updates_only_what_dials_with_it_and_leaves_the_provider(built):
    from tools.mock.program import placeholder_secrets
    old_key = placeholder_secrets()["nodeSshPrivateKey"]
    carrying = {r.name for r in built.resources if r.type == "command:remote:Command"
                and carries(r.inputs, "connection", old_key) and "connection" not in r.ignore_changes}
    for preview in (True, False):
        run = up(hk_prod_values(), built.state, preview=preview,
                 secrets={"nodeSshPrivateKey": placeholder("nodeSshPrivateKey", "rotated-node-key")})
        # A preview also shows the commands reading an updated command's stdout (the VM restarts read their
        # drain's decision, the Windows joins their credentials): unknown until it runs.
        assert run.plan.changed == (with_stdin_readers(built, carrying) if preview else carrying)
        assert {op for name in run.plan.changed for op in run.plan.of(name)} == {"update"}   # nothing replaced
        # The provider's credential is not read again, so the provider and every Kubernetes object stay.
        assert run.plan.of("hk-prod-kubeadm-kubeconfig") == ["same"]
        assert run.plan.of("hk-prod-kubeadm-kubernetes") == ["same"]
        assert_disruptive_steps_are_serial(run)


def test_adding_a_bastion_updates_every_command_and_replaces_nothing(built):
    values = hk_prod_values()
    values["access"]["bastion"] = {"host": "10.10.10.2", "user": "jump", "hostKey": new_host_key("bastion", 1)}
    run = up(values, built.state, preview=True)
    # Every command that connects: the gates between waves never do (components/cluster/waves.py), so theirs has no bastion.
    commands = {r.name for r in built.resources if r.type == "command:remote:Command"
                and "connection" not in r.ignore_changes and "--wave-" not in r.name}
    assert run.plan.changed == with_stdin_readers(built, commands)
    assert not {r.name for r in run.resources if "--wave-" in r.name and "proxy" in r.inputs["connection"].value}
    assert not run.plan.ops("replace") and run.plan.of("hk-prod-kubeadm-kubernetes") == ["same"]
    assert_disruptive_steps_are_serial(run)


WINDOWS_NODES = ("hk-win-1", "hk-win-2", "hk-win-3")


def test_rotating_the_windows_password_sets_it_in_each_guest_before_anything_signs_in(built):
    from render.hyperv import node_admin_password
    from tools.mock.program import placeholder_secrets
    old = placeholder_secrets()["windowsAdminPassword"]
    run = up(hk_prod_values(), built.state, preview=True,
             secrets={"windowsAdminPassword": "rotated-password", "windowsAdminPasswordPrevious": old})
    for node in WINDOWS_NODES:
        step = run.named(f"hk-prod-{node}-guest-password")
        assert run.plan.of(step.name) == ["update"]
        # The node's new password, then those a guest may still have: its own from the previous secret, and the previous
        # secret itself (the one password nodes of earlier releases shared). The new secret never leaves.
        assert step.inputs["stdin"].value == (f"{node_admin_password('rotated-password', node, 1)}\n"
                                              f"{node_admin_password(old, node, 1)}\n{old}\n")
        # The converge, and through it every other step that signs in to the guest, waits for it.
        assert step.urn in run.named(f"hk-prod-{node}-vm").dependencies
        script = script_from_ssh_command(step.inputs["update"])
        assert "Set-LocalUser -Name 'Administrator'" in script
    old_passwords = [old, *(node_admin_password(old, node, 1) for node in WINDOWS_NODES)]
    expected = {r.name for r in built.resources if r.type == "command:remote:Command"
                and any(carries(r.inputs, "stdin", p) for p in old_passwords)}
    assert run.plan.changed == with_stdin_readers(built, expected)
    assert_disruptive_steps_are_serial(run)


def test_one_node_gets_a_new_password_and_no_other_node_is_touched(built):
    """Raising one node's adminPasswordVersion moves that guest to its next password; every step that signs in to it
    runs again, no other node's."""
    from render.hyperv import node_admin_password
    from tools.mock.program import placeholder_secrets
    secret = placeholder_secrets()["windowsAdminPassword"]
    values = hk_prod_values()
    values["nodes"]["windows"][1]["adminPasswordVersion"] = 2
    run = up(values, built.state, preview=True)
    node = values["nodes"]["windows"][1]["name"]
    step = run.named(f"hk-prod-{node}-guest-password")
    assert step.inputs["stdin"].value == (f"{node_admin_password(secret, node, 2)}\n"
                                          f"{node_admin_password(secret, node, 1)}\n")
    assert run.plan.changed and all(node in name for name in run.plan.changed), sorted(run.plan.changed)
    assert {f"hk-prod-{node}-guest-password", f"hk-prod-{node}-vm"} <= run.plan.changed
    # Every node's password is its own.
    passwords = {run.named(f"hk-prod-{n}-vm").inputs["stdin"].value for n in WINDOWS_NODES}
    assert len(passwords) == 3 and secret not in passwords


def test_a_rotation_after_an_upgrade_never_moves_a_windows_kubelet_back():
    """Built at 1.36.3, upgraded to 1.36.4, then the Windows password rotated: the binaries step runs its
    update, which installs nothing (its stored create still names 1.36.3)."""
    from tools.mock.program import placeholder_secrets
    values = hk_prod_values()
    values["cluster"]["kubernetesVersion"] = "1.36.3"
    upgraded = up(hk_prod_values(), up(values).state)
    old = placeholder_secrets()["windowsAdminPassword"]
    rotated = up(hk_prod_values(), upgraded.state, secrets={"windowsAdminPassword": "new", "windowsAdminPasswordPrevious": old})
    for node in ("hk-win-1", "hk-win-2", "hk-win-3"):
        step = rotated.named(f"hk-prod-kubeadm-windows-{node}-prepare-kubernetes")
        assert rotated.plan.of(step.name) == ["update"]
        stored = rotated.state[step.urn].inputs
        assert "1.36.3" in script_from_ssh_command(stored["create"])        # ignored: as first created
        update = script_from_ssh_command(stored["update"])
        assert "the upgrade chain moves them" in update and "Invoke-Guest" not in update


@pytest.mark.parametrize("change", ["renewal", "version"])
def test_a_renewal_round_or_a_version_change_leaves_the_providers_credential_so_its_preview_diffs(built, change):
    """The provider has a credential of its own, which kubeadm's renewals and upgrades do not touch: the preview of
    either keeps the provider's configuration known, so every Kubernetes object is diffed (no DiffUnavailable)."""
    values = hk_prod_values()
    if change == "renewal":
        values["cluster"]["certificateRenewal"] = "2027-10"
    else:
        values["cluster"]["kubernetesVersion"] = "1.36.4"
        built = up({**values, "cluster": {**values["cluster"], "kubernetesVersion": "1.36.3"}})
    run = up(values, built.state, preview=True)
    assert run.plan.of("hk-prod-kubeadm-kubeconfig") == ["same"]
    assert run.plan.of("hk-prod-kubeadm-kubernetes") == ["same"]
    assert not [w for w in run.plan.warnings if w.startswith("diff unavailable")]
    objects = [s for s in run.plan.steps if s.type.startswith("kubernetes:") and run.state[s.urn].custom]
    assert objects and not [s for s in objects if s.why == ("diff unavailable",)]


def test_a_new_provider_credential_moves_the_provider_then_revokes_the_old_one(built):
    """cluster.providerCredential: the credential step is replaced, the provider updated (not replaced:
    clusterIdentifier holds); the preview cannot diff the provider's objects (DiffUnavailable, as the real engine
    plans); the revocation of every other credential runs after the provider has moved, with the current connection."""
    values = hk_prod_values()
    values["cluster"]["providerCredential"] = "2027-12"
    preview = up(values, built.state, preview=True)
    assert preview.plan.of("hk-prod-kubeadm-kubeconfig") == ["replace", "delete-replaced"]
    assert preview.plan.of("hk-prod-kubeadm-kubernetes") == ["update"]
    objects = [s for s in preview.plan.steps if s.type.startswith("kubernetes:") and preview.state[s.urn].custom]
    assert objects and all(s.op == "update" and s.why == ("diff unavailable",) for s in objects)
    assert any(w.startswith("diff unavailable") for w in preview.plan.warnings)
    applied = up(values, built.state)
    steps = [s.name for s in applied.plan.steps]
    assert (steps.index("hk-prod-kubeadm-kubeconfig") < steps.index("hk-prod-kubeadm-kubernetes")
            < steps.index("hk-prod-kubeadm-kubeconfig-revoke-others"))
    assert applied.plan.of("hk-prod-kubeadm-kubeconfig-revoke-others") == ["replace", "delete-replaced"]
    revoke = applied.named("hk-prod-kubeadm-kubeconfig-revoke-others")
    assert applied.named("hk-prod-kubeadm-kubernetes").urn in revoke.dependencies
    assert "KEEP='hybrid-cluster:pulumi:2027-12'" in script_from_bash_command(revoke.inputs["create"])
    assert "USER_NAME='hybrid-cluster:pulumi:2027-12'" in script_from_bash_command(
        applied.named("hk-prod-kubeadm-kubeconfig").inputs["create"])
    # Neither has a delete that would dial with a connection the state keeps.
    assert not applied.named("hk-prod-kubeadm-kubeconfig").inputs.get("delete") and not revoke.inputs.get("delete")
    assert not [s for s in applied.plan.steps if s.type.startswith("kubernetes:") and s.op not in ("same",)
                and s.type != "pulumi:providers:kubernetes"]
    assert applied.outputs["certificateExpiry"]["pulumi:kubernetes-provider"] == {"client": "Dec 5 18:00:00 2027 GMT"}


def test_a_rotated_ssh_key_reaches_the_revocation_but_not_the_credential(built):
    """The credential step keeps the connection it was made with (it never dials again); the revocation follows the
    current one, so a later rotation's revocation never dials with a key the nodes no longer accept."""
    values = hk_prod_values()
    run = up(values, built.state, secrets={"nodeSshPrivateKey": placeholder("nodeSshPrivateKey", "rotated-key")})
    assert run.plan.of("hk-prod-kubeadm-kubeconfig") == ["same"]
    assert run.plan.of("hk-prod-kubeadm-kubeconfig-revoke-others") == ["update"]


def test_the_provider_model_replaces_on_an_unknown_kubeconfig_unless_the_cluster_identifier_holds(built):
    """The engine model is not kinder than pulumi-kubernetes' DiffConfig: an unknown kubeconfig replaces a
    provider that has no clusterIdentifier (and through it every object); an unchanged identifier keeps it."""
    from tools.mock import providers
    from tools.mock.engine import Unknown, contains_unknown, unwrap
    replaces = providers.kubernetes_provider_replaces({"kubeconfig": "a"}, {"kubeconfig": Unknown()}, contains_unknown, unwrap)
    assert replaces == ["kubeconfig"]
    assert providers.kubernetes_provider_replaces({"kubeconfig": "a", "clusterIdentifier": "x"},
                                                  {"kubeconfig": Unknown(), "clusterIdentifier": "x"},
                                                  contains_unknown, unwrap) == []


def test_a_stack_built_before_the_wave_gates_gets_them_and_nothing_else_runs(built):
    """The gates between waves (components/cluster/waves.py) came after stacks existed: the first `up` with them creates
    them, which dials nothing, and leaves every other resource as it was."""
    import dataclasses
    gate_urns = {urn for urn, entry in built.state.items() if "--wave-" in entry.name}
    # The state as such a stack holds it: no gates, and nothing recorded as depending on one.
    old_state = {urn: dataclasses.replace(entry, dependencies=[d for d in entry.dependencies if d not in gate_urns])
                 for urn, entry in built.state.items() if urn not in gate_urns}
    run = up(hk_prod_values(), old_state)
    gates = {r.name for r in run.resources if "--wave-" in r.name}
    assert len(gates) == 21 and run.plan.changed == gates
    assert all(run.plan.of(gate) == ["create"] for gate in gates)
    assert not any(run.named(gate).inputs.get(key) for gate in gates for key in ("create", "update", "delete"))


def test_a_node_whose_removal_failed_keeps_its_vm_id_and_address_until_its_machine_is_gone(built):
    """The machines guard records the stack as each run starts, but deletes run at its end: a removal that fails (a
    drain a PodDisruptionBudget refuses, docs/day2.md) leaves the machine running. The next run must not give its VM
    id or its address to a new node (a failed clone, or two machines on one address); once the machine is deleted,
    it may."""
    without = hk_prod_values()
    without["nodes"]["linux"] = [n for n in without["nodes"]["linux"] if n["name"] != "hk-lnx-4"]
    failed = run_program(raw_config(without), state=built.state, fail=("hk-prod-kubeadm-hk-lnx-4-drain",))
    assert failed.plan.failed == ["hk-prod-kubeadm-hk-lnx-4-drain"]
    # The reservations outlive the machine's resources in the state (they are deleted after the VM).
    kept = {e.name for e in failed.state.values()}
    assert {"hk-prod-hk-lnx-4-vm", "hk-prod-vm-id-324", "hk-prod-address-10-30-30-24"} <= kept

    def newcomer(**changes) -> dict:
        values = copy.deepcopy(without)
        values["nodes"]["linux"].append({**next(n for n in hk_prod_values()["nodes"]["linux"] if n["name"] == "hk-lnx-4"),
                                         "name": "hk-lnx-9", "vmId": 329, "ip": "10.30.30.29", **changes})
        return values

    for changes, what in (({"vmId": 324}, "VM id 324"), ({"ip": "10.30.30.24"}, "address 10.30.30.24")):
        refused = run_program(raw_config(newcomer(**changes)), state=failed.state, preview=True)
        assert any(f"hk-lnx-9 takes {what}, still held by hk-lnx-4: its removal has not finished" in e
                   for e in refused.plan.errors), refused.plan.errors
    # A new node with values of its own is not held up.
    assert not run_program(raw_config(newcomer()), state=failed.state, preview=True).plan.errors
    # The next run finishes the removal (the drain is allowed now); then the values are free.
    finished = run_program(raw_config(without), state=failed.state)
    assert not finished.plan.failed
    assert not {"hk-prod-hk-lnx-4-vm", "hk-prod-vm-id-324"} & {e.name for e in finished.state.values()}
    order = deletes_in_order(finished)
    assert order.index("hk-prod-hk-lnx-4-vm") < order.index("hk-prod-vm-id-324")
    reused = run_program(raw_config(newcomer(vmId=324, ip="10.30.30.24")), state=finished.state, preview=True)
    assert not reused.plan.errors, reused.plan.errors


def test_an_interrupted_clone_is_recovered_by_destroying_it_and_clearing_the_pending_create(built):
    """A run killed while Proxmox clones a new node's VM: the engine journals the create as pending and the VM exists
    with its fixed VMID outside the state. The next `up` warns and goes on, and its clone fails on the VMID in use;
    clearing the pending create alone does not help; destroying the VM on Proxmox and then clearing it does
    (docs/lifecycle.md, "An interrupted run")."""
    from tools.mock.engine import clear_pending_creates
    values = hk_prod_values()
    values["nodes"]["linux"].append({**next(n for n in values["nodes"]["linux"] if n["name"] == "hk-lnx-4"),
                                     "name": "hk-lnx-5", "vmId": 325, "ip": "10.30.30.25"})
    vm = "hk-prod-hk-lnx-5-vm"
    killed = run_program(raw_config(values), state=built.state, interrupt=(vm,))
    [pending] = killed.plan.pending
    assert pending.name == vm and pending.inputs["vmId"] == 325 and killed.outside == {vm}
    assert pending.urn not in killed.state and not killed.plan.failed
    # Nothing after it started, and no delete ran.
    assert not any(s.op in ("delete", "retain") for s in killed.plan.steps)

    # A preview says nothing of it; an update warns, keeps it, and its clone fails on the VMID in use.
    assert not run_program(raw_config(values), state=killed.state, pending=killed.plan.pending, outside=killed.outside,
                           preview=True).plan.warnings
    again = run_program(raw_config(values), state=killed.state, pending=killed.plan.pending, outside=killed.outside)
    assert any("1 pending operations" in w and "interrupted while creating" in w for w in again.plan.warnings)
    assert again.plan.failed == [vm] and again.plan.pending == [pending]

    cleared = clear_pending_creates(again.plan.pending)
    assert run_program(raw_config(values), state=again.state, pending=cleared, outside=killed.outside).plan.failed == [vm]
    # After `qm destroy 325 --purge 1 --destroy-unreferenced-disks 1` on its Proxmox node:
    recreated = run_program(raw_config(values), state=again.state, pending=cleared, outside=set())
    assert recreated.plan.of(vm) == ["create"] and not recreated.plan.failed and not recreated.plan.warnings
    assert recreated.plan.of("hk-prod-kubeadm-hk-lnx-5-join") == ["create"]


def test_an_aborted_rebuild_is_finished_by_the_next_up(built):
    """`--replace` of a VM deletes it first (delete_before_replace), then clones it again. When the clone fails, the
    engine keeps the VM in the state pending replacement (step.go DeleteStep pendingReplace), and the next `up`, with
    or without `--replace`, creates it without deleting anything again; its node's steps run on the new instance."""
    vm = "hk-prod-hk-lnx-4-vm"
    aborted = run_program(raw_config(hk_prod_values()), state=built.state, replace=(vm,), fail=(vm,))
    assert aborted.plan.failed == [vm] and aborted.plan.of(vm)[0] == "delete-replaced"
    urn = built.named(vm).urn
    assert aborted.state[urn].pending_replacement
    finished = run_program(raw_config(hk_prod_values()), state=aborted.state)
    assert finished.plan.of(vm) == ["replace"] and not finished.plan.failed
    assert not finished.state[urn].pending_replacement
    # The node's own steps follow the new instance (keyed on it), as after a rebuild that did not fail.
    assert finished.plan.of("hk-prod-hk-lnx-4-cloud-init") == ["replace"]


def test_a_failed_delete_inside_a_replacement_cascade_replaces_nothing(built):
    """A dependent's delete fails while `--replace` deletes what depends on the VM first: the VM is not deleted, the
    run stops, and the dependents already deleted stay pending replacement for the next run."""
    vm = "hk-prod-hk-lnx-4-vm"
    probe = run_program(raw_config(hk_prod_values()), state=built.state, replace=(vm,), preview=True)
    cascade = [s.name for s in probe.plan.steps if s.op == "delete-replaced" and s.name != vm]
    assert cascade, "the VM's replacement replaces resources that depend on it"
    failing = cascade[-1]
    run = run_program(raw_config(hk_prod_values()), state=built.state, replace=(vm,), fail_delete=(failing,))
    assert failing in run.plan.failed and vm not in {s.name for s in run.plan.steps if s.op == "delete-replaced"}
    assert not run.state[built.named(vm).urn].pending_replacement
    deleted = [s.name for s in run.plan.steps if s.op == "delete-replaced"]
    for name in deleted:
        assert run.state[built.named(name).urn].pending_replacement, name


@pytest.mark.parametrize("provider", ["MachinesGuardProvider", "MachineReservationProvider", "ClusterIdentityProvider"])
def test_the_guards_providers_are_stored_by_reference_to_a_path_that_must_not_move(provider):
    """The engine stores a dynamic provider with each resource (pulumi.dynamic serialize_provider: dill), and the
    provider process loads it from there for every later check, update and delete. These pickle by reference to
    components.guards: moving or renaming a class would break every later run on a stack that holds one (a node's
    removal included). This test names the path; change it only with a migration."""
    import base64
    import pickletools

    from pulumi.dynamic.dynamic import serialize_provider

    from components import guards
    pickled = base64.b64decode(serialize_provider(getattr(guards, provider)()))
    names = {arg for op, arg, _ in pickletools.genops(pickled) if op.name in ("SHORT_BINUNICODE", "BINUNICODE")}
    assert {"components.guards", provider} <= names
    assert len(pickled) < 512       # a reference, not the class's code


def test_renaming_the_cluster_is_refused_at_preview_and_nothing_runs(built):
    """Every resource's name holds cluster.name: the rename would create a second cluster and delete this one. The
    identity's check (its own name holds no cluster name) refuses it in a preview and an `up` alike, before any step."""
    values = hk_prod_values()
    values["cluster"]["name"] = "hk-next"
    for preview in (True, False):
        run = run_program(raw_config(values), state=built.state, preview=preview)
        assert any(e.startswith("cluster-identity: cluster.name changes from hk-prod to hk-next") and
                   "create a new stack" in e for e in run.plan.errors), run.plan.errors
        assert not [s for s in run.plan.steps if s.op not in ("same", "skipped")], preview


def test_a_run_that_leaves_the_credential_step_out_never_revokes_the_providers_own(built):
    """The revocation keeps what the provider holds, read from the credential itself: with the credential step
    excluded from a rotation run, the provider keeps its credential and nothing revokes it."""
    values = hk_prod_values()
    values["cluster"]["providerCredential"] = "2027-12"
    run = up(values, built.state, exclude=("hk-prod-kubeadm-kubeconfig",))
    assert run.plan.of("hk-prod-kubeadm-kubeconfig") == ["same"]
    assert run.plan.of("hk-prod-kubeadm-kubeconfig-revoke-others") == ["same"]
    revoke = run.state[run.named("hk-prod-kubeadm-kubeconfig-revoke-others").urn]
    assert "KEEP='hybrid-cluster:pulumi:initial'" in script_from_bash_command(revoke.inputs["create"])
