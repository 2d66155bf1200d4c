"""tools/migrate_state.py: a state written by the previous release (per-node steps keyed on the VMID, kubeadm
init keyed and reset on delete, no cluster identifier) is refused until migrated, and once migrated the
first run replaces nothing."""
from __future__ import annotations

import copy
import json

import pytest

from render import linux_bootstrap
from render.shell import bash_command
from tests.conftest import hk_prod_values, raw_config
from tools import migrate_state
from tools.mock.engine import Entry, from_export, to_export
from tools.mock.program import run_program


@pytest.fixture
def built(hk_recording):
    return hk_recording


def format_one(state: dict[str, Entry]) -> dict[str, Entry]:
    """The state as the previous release left it for the same stack."""
    old = copy.deepcopy(state)
    by_name = {e.name: e for e in old.values()}
    vmids = {e.outputs["networkDevices"][0]["macAddress"].lower(): e.id
             for e in old.values() if e.type == "proxmoxve:index/vmLegacy:VmLegacy"}
    for entry in old.values():
        for part in (entry.inputs, entry.outputs):
            triggers = part.get("triggers")
            if isinstance(triggers, list) and len(triggers) == 1 and triggers[0] in vmids:
                part["triggers"] = [vmids[triggers[0]]]
    init = by_name["hk-prod-kubeadm-init"]
    for part in (init.inputs, init.outputs):
        part["triggers"] = [by_name["hk-prod-hk-cp-1-vm"].id]
        part["delete"] = bash_command(linux_bootstrap.render_reset("hk-cp-1"))
    # The release before read admin.conf for the provider, keyed on the init and a renewal label, with no delete, and
    # had no step revoking other credentials.
    del old[by_name["hk-prod-kubeadm-kubeconfig-revoke-others"].urn]
    read = by_name["hk-prod-kubeadm-kubeconfig"]
    for part in (read.inputs, read.outputs):
        part["triggers"] = [part["triggers"][0], ""]
        part.pop("delete", None)
    for part in (by_name["hk-prod-kubeadm-kubernetes"].inputs, by_name["hk-prod-kubeadm-kubernetes"].outputs):
        part.pop("clusterIdentifier", None)
    for part in (by_name["hk-prod-kubernetes-version"].inputs, by_name["hk-prod-kubernetes-version"].outputs):
        part.pop("stateFormat", None)
    return old


def test_an_unmigrated_state_is_refused_before_anything_runs(built):
    """Unmigrated, the first run would replace every Linux node's membership (reset and deregistration)
    and kubeadm init (a reset of the node holding the cluster): the version pin refuses it at preview."""
    old = format_one(built.state)
    preview = run_program(raw_config(hk_prod_values()), state=old, preview=True)
    assert any("tools.migrate_state" in e for e in preview.plan.errors)
    # The check bails the run (step_generator.go): nothing after it has a step, no replacement, no reset.
    assert preview.plan.of("hk-prod-kubeadm-hk-lnx-2-join") == ["skipped"]
    assert preview.plan.of("hk-prod-kubeadm-init") == ["skipped"]
    assert not [s for s in preview.plan.steps if s.op not in ("same", "skipped")]
    # What it would have done without the refusal (`--exclude` the pin, whose check then does not run):
    unguarded = run_program(raw_config(hk_prod_values()), state=old, preview=True, exclude=("hk-prod-kubernetes-version",))
    assert "replace" in unguarded.plan.of("hk-prod-kubeadm-hk-lnx-2-join")
    assert "replace" in unguarded.plan.of("hk-prod-kubeadm-init")


def test_a_migrated_state_runs_without_replacing_or_resetting_anything(built, tmp_path):
    export = tmp_path / "before.json"
    export.write_text(json.dumps(to_export(format_one(built.state))))
    out = tmp_path / "after.json"
    assert migrate_state.main([str(export), str(out)]) == 0
    migrated = from_export(json.loads(out.read_text()))
    for preview in (True, False):
        run = run_program(raw_config(hk_prod_values()), state=migrated, preview=preview)
        assert not run.plan.errors
        # Only the provider's credential: its own now, issued on the first control-plane node; the old read's
        # delete runs nothing (it had none), and the provider is updated, not replaced.
        assert {s.name for s in run.plan.steps if s.op in ("replace", "delete", "delete-replaced")} == {
            "hk-prod-kubeadm-kubeconfig"}
        assert run.plan.of("hk-prod-kubeadm-kubeconfig") == ["replace", "delete-replaced"]
        assert "delete" not in migrated[run.named("hk-prod-kubeadm-kubeconfig").urn].inputs
        assert run.plan.of("hk-prod-kubeadm-init") == ["same"]
        assert run.plan.of("hk-prod-kubeadm-kubernetes") == ["update"]
    # Migrating again changes nothing.
    again = tmp_path / "again.json"
    assert migrate_state.main([str(out), str(again)]) == 0
    assert json.loads(again.read_text()) == json.loads(out.read_text())
