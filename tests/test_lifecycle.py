"""The machine lifecycle as the engine runs it (tools/engine.py against the state of an earlier run): a
rebuilt, replaced or lost node runs its own steps again and nothing on other nodes, and ends up at the
stack's current Kubernetes version."""
from __future__ import annotations

import pytest

from render.hyperv import script_from_ssh_command
from render.shell import script_from_bash_command
from tests.conftest import hk_prod_values, raw_config
from tests.validators import bash_input
from tools.engine import without
from tools.mockrun import Recording, run_program

NODE_STEPS_LINUX = ["cloud-init", "prepare"]
JOIN_STEPS = ["registration", "join-credentials", "join", "drain"]
UPGRADE_STEPS = ["drain-for-upgrade", "node-upgrade", "uncordon-after-upgrade"]


def up(values: dict, state=None, **kwargs) -> Recording:
    run = run_program(raw_config(values), state=state, **kwargs)
    assert not run.plan.errors, run.plan.errors
    return run


@pytest.fixture(scope="module")
def built() -> Recording:
    return up(hk_prod_values())


def node_resources(node: str, windows: bool = False) -> set[str]:
    """Every resource of one node that must run again for a new machine instance."""
    names = {f"hk-prod-{node}-vm", f"hk-prod-scheduling-node-{node}"}
    join_prefix = "hk-prod-kubeadm-windows" if windows else "hk-prod-kubeadm"
    names |= {f"{join_prefix}-{node}-{step}" for step in JOIN_STEPS}
    names |= {f"hk-prod-upgrade-{node}-{step}" for step in UPGRADE_STEPS}
    if windows:
        names |= {f"hk-prod-{node}-activation"} | {
            f"{join_prefix}-{node}-prepare-{step}"
            for step in ("containers-feature", "host-settings", "containerd", "kubernetes")}
    else:
        names |= {f"hk-prod-{node}-{step}" for step in NODE_STEPS_LINUX}
    return names


def assert_node_rebuilt(run: Recording, node: str, windows: bool = False) -> None:
    expected = node_resources(node, windows)
    assert run.plan.changed == expected - ({f"hk-prod-{node}-activation"} if windows else set()) or \
        run.plan.changed == expected, sorted(run.plan.changed ^ expected)
    join_prefix = "hk-prod-kubeadm-windows" if windows else "hk-prod-kubeadm"
    # Membership steps are replaced (their reset and deregistration run for the old instance), the label
    # patch is applied again (replaced or updated), the upgrade steps run (their text names the instance).
    for step in JOIN_STEPS:
        assert "replace" in run.plan.of(f"{join_prefix}-{node}-{step}"), step
    assert set(run.plan.of(f"hk-prod-scheduling-node-{node}")) & {"replace", "update"}
    for step in UPGRADE_STEPS:
        assert run.plan.of(f"hk-prod-upgrade-{node}-{step}") == ["update"], step


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
        assert new.outputs["macAddresses"] != old.outputs["macAddresses"]   # what changes with the instance
        join = run.named("hk-prod-kubeadm-hk-lnx-2-join")
        assert join.id != built.named("hk-prod-kubeadm-hk-lnx-2-join").id   # a command's id is new per create


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
