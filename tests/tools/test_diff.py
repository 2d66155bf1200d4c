"""tools.diff on real synth outputs: a preview-like plan between two renders of a stack."""
from __future__ import annotations

import copy

import yaml

from tests.conftest import HK_PROD
from tools import diff, synth


def synth_with(tmp_path, name, mutate=None, secrets=()):
    document = yaml.safe_load(HK_PROD.read_text())
    if mutate:
        mutate(document["config"])
    stack_file = tmp_path / f"Pulumi.{name}.yaml"
    stack_file.write_text(yaml.safe_dump(document))
    out = tmp_path / name
    args = ["--stack", "hk-prod", "--stack-file", str(stack_file), "--out", str(out)]
    for item in secrets:
        args += ["--secret", item]
    assert synth.main(args) == 0
    return out


def test_update_create_delete_and_secret_changes(tmp_path, capsys):
    before = synth_with(tmp_path, "before", secrets=["smbPassword=one"])

    def change(config):
        config["hybrid-cluster:nodes"]["linux"][0]["memoryMb"] = 65536
        removed = config["hybrid-cluster:nodes"]["linux"].pop(3)
        assert removed["name"] == "hk-lnx-4"
        added = copy.deepcopy(config["hybrid-cluster:nodes"]["linux"][0])
        added.update(name="hk-lnx-9", vmId=329, ip="10.30.30.29")
        config["hybrid-cluster:nodes"]["linux"].append(added)

    after = synth_with(tmp_path, "after", change, secrets=["smbPassword=two"])
    result = diff.plan(diff.load(before), diff.load(after))
    updates = {r["name"]: paths for r, paths in result.updates}
    assert updates["hk-prod-hk-lnx-1-vm"] == ["memory.dedicated"]
    assert "hk-prod-hk-lnx-9-vm" in {r["name"] for r in result.creates}
    assert "hk-prod-hk-lnx-4-vm" in {r["name"] for r in result.deletes}

    assert diff.main([str(before), str(after)]) == 0
    printed = capsys.readouterr().out
    assert "~ update  proxmoxve:index/vmLegacy:VmLegacy  hk-prod-hk-lnx-1-vm  [memory.dedicated]" in printed
    assert "one" not in printed.split() and "two" not in printed.split()
    assert "Resources:" in printed


def test_secret_values_are_compared_not_shown(tmp_path):
    before = synth_with(tmp_path, "a", secrets=["windowsAdminPassword=first-password"])
    after = synth_with(tmp_path, "b", secrets=["windowsAdminPassword=second-password"])
    result = diff.plan(diff.load(before), diff.load(after))
    text = diff.render(result)
    assert "first-password" not in text and "second-password" not in text
    updates = {r["name"]: paths for r, paths in result.updates}
    assert "stdin (secret)" in text
    assert updates["hk-prod-hk-win-1-vm"] == ["stdin"]


def test_identical_renders_plan_nothing(tmp_path):
    first, second = synth_with(tmp_path, "x"), synth_with(tmp_path, "y")
    result = diff.plan(diff.load(first), diff.load(second))
    assert not result.creates and not result.updates and not result.deletes and result.unchanged > 100


def test_replace_plans_everything_a_replaced_vm_runs_again(tmp_path, capsys):
    out = synth_with(tmp_path, "one")
    assert diff.main([str(out), "--replace", "hk-prod-hk-lnx-2-vm"]) == 0
    lines = capsys.readouterr().out.splitlines()
    replaced = {line.split()[3] for line in lines if line.startswith("+- replace")}
    updated = {line.split()[3] for line in lines if line.startswith("~ update")}
    assert "hk-prod-hk-lnx-2-vm" in replaced
    # Its own steps run again (membership replaced: drain, reset and deregistration for the old instance) ...
    for step in ("cloud-init", "prepare", "authorized-keys"):
        assert f"hk-prod-hk-lnx-2-{step}" in replaced
    for step in ("registration", "join-credentials", "join", "drain"):
        assert f"hk-prod-kubeadm-hk-lnx-2-{step}" in replaced
    assert {f"hk-prod-upgrade-hk-lnx-2-{s}" for s in ("drain-for-upgrade", "node-upgrade", "uncordon-after-upgrade")} <= updated
    # ... and nothing of any other node.
    assert all("hk-lnx-2" in name for name in replaced | updated), sorted(replaced | updated)
    assert lines[-1].startswith("Resources: ")


def test_replace_of_an_unknown_resource_or_a_stale_output_is_refused(tmp_path):
    out = synth_with(tmp_path, "one")
    import pytest
    with pytest.raises(SystemExit, match="no resource named"):
        diff.replace_plan(out, "hk-prod-nope")
    other = synth_with(tmp_path, "other")
    import json
    document = json.loads((other / "stack.json").read_text())
    (other / "stack.json").write_text(json.dumps({**document, "stack": "hk-other"}))
    with pytest.raises(SystemExit, match="compare renders of one stack"):
        diff.change_plan(out, other)
    (out / "stack.json").unlink()
    with pytest.raises(SystemExit, match="no stack.json"):
        diff.replace_plan(out, "hk-prod-hk-lnx-2-vm")


def test_two_renders_are_planned_by_the_engine_with_the_programs_guards(tmp_path, capsys):
    """Removing a lost node shows its retained steps as retained; renaming the cluster and removing a control-plane node
    without `retire` are refused as the preview would (exit 1, the refusal printed)."""
    def lose(config):
        next(n for n in config["hybrid-cluster:nodes"]["linux"] if n["name"] == "hk-lnx-4")["lost"] = True

    def remove(config):
        config["hybrid-cluster:nodes"]["linux"] = [n for n in config["hybrid-cluster:nodes"]["linux"]
                                                   if n["name"] != "hk-lnx-4"]

    lost = synth_with(tmp_path, "lost", lose)
    removed = synth_with(tmp_path, "removed", lambda c: (lose(c), remove(c)))
    assert diff.main([str(lost), str(removed)]) == 0
    printed = capsys.readouterr().out
    assert "- retain  proxmoxve:index/vmLegacy:VmLegacy  hk-prod-hk-lnx-4-vm  (leaves the state" in printed
    assert "- delete  command:remote:Command  hk-prod-hk-lnx-4-vm-destroy" in printed
    assert "- delete  command:remote:Command  hk-prod-kubeadm-hk-lnx-4-join\n" not in printed   # frozen: retained
    assert "- retain  command:remote:Command  hk-prod-kubeadm-hk-lnx-4-join" in printed

    renamed = synth_with(tmp_path, "renamed", lambda c: c["hybrid-cluster:cluster"].update(name="hk-next"))
    assert diff.main([str(lost), str(renamed)]) == 1
    printed = capsys.readouterr().out
    assert "error: cluster-identity: cluster.name changes from hk-prod to hk-next" in printed
    assert "- delete" not in printed


def test_replacing_a_protected_resource_fails_with_the_refusal(tmp_path, capsys):
    out = synth_with(tmp_path, "one")
    assert diff.main([str(out), "--replace", "hk-prod-hk-cp-2-vm"]) == 1
    printed = capsys.readouterr().out
    assert "error: hk-prod-hk-cp-2-vm: unable to replace resource as it is currently marked for protection" in printed
