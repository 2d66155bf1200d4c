"""The engine model itself (tools/engine.py), on small graphs of real pulumi-command resources: each rule it
follows from the engine's source, so a program test built on it can trust it."""
from __future__ import annotations

import pulumi
import pulumi_command as command

from tools.mockrun import Recording, run_declarations

CONNECTION = command.remote.ConnectionArgs(host="10.0.0.1", user="ops")


def declare(create_text: str = "v1", triggers: list | None = None, *, ignore: list[str] | None = None,
            dbr: bool = True, protect: bool = False, retain: bool = False, dependent: str = "property",
            keep_dependent: bool = True):
    def program():
        root = command.remote.Command("root", connection=CONNECTION, create=create_text, triggers=triggers,
                                      delete="reset",
                                      opts=pulumi.ResourceOptions(ignore_changes=ignore, delete_before_replace=dbr,
                                                                  protect=protect, retain_on_delete=retain))
        if keep_dependent:
            if dependent == "property":
                command.remote.Command("child", connection=CONNECTION, create="c", triggers=[root.id], delete="undo")
            else:
                command.remote.Command("child", connection=CONNECTION, create="c", delete="undo",
                                       opts=pulumi.ResourceOptions(depends_on=[root]))
    return program


def run(program, state=None, **kwargs) -> Recording:
    return run_declarations(program, state=state, **kwargs)


def test_ignore_changes_hold_on_update_and_not_on_a_replacement():
    first = run(declare("v1", ["a"], ignore=["create"]))
    updated = run(declare("v2", ["a"], ignore=["create"]), first.state)
    assert updated.plan.of("root") == ["same"]
    assert updated.state[updated.named("root").urn].inputs["create"] == "v1"
    # step_generator.go: a replacement is checked again from the program's own inputs.
    replaced = run(declare("v2", ["b"], ignore=["create"]), updated.state)
    assert "replace" in replaced.plan.of("root")
    assert replaced.state[replaced.named("root").urn].inputs["create"] == "v2"


def test_a_command_gets_a_new_id_per_create_and_keeps_it_on_update():
    first = run(declare("v1", ["a"]))
    updated = run(declare("v2", ["a"]), first.state)
    replaced = run(declare("v2", ["b"]), updated.state)
    ids = [r.named("root").id for r in (first, updated, replaced)]
    assert ids[0] == ids[1] != ids[2] and ids[0].startswith("root") and len(ids[0]) == len("root") + 8


def test_delete_before_replace_replaces_dependents_through_property_dependencies_only():
    first = run(declare("v1", ["a"]))
    replaced = run(declare("v1", ["b"]), first.state, preview=True)
    assert replaced.plan.of("child") == ["delete-replaced", "replace"]
    # The dependent goes first, then the replaced resource.
    order = [s.name for s in replaced.plan.steps if s.op == "delete-replaced"]
    assert order == ["child", "root"]
    plain = run(declare("v1", ["a"], dependent="depends_on"))
    replaced = run(declare("v1", ["b"], dependent="depends_on"), plain.state, preview=True)
    assert replaced.plan.of("child") == ["same"]
    # Create before replace: no dependent replacement; the old resource goes at the end of the run.
    cbr = run(declare("v1", ["a"], dbr=False))
    replaced = run(declare("v1", ["b"], dbr=False), cbr.state)
    assert replaced.plan.of("root") == ["replace", "delete-replaced"]
    # The child is replaced when it re-registers, because its trigger (the new root's id) changed; its old
    # instance goes at the end too, before the old root (dependents first).
    assert replaced.plan.of("child") == ["replace", "delete-replaced"]
    ends = [s.name for s in replaced.plan.steps if s.op == "delete-replaced"]
    assert ends == ["child", "root"]


def test_a_protected_resource_cannot_be_deleted_even_in_a_preview_and_a_retained_one_runs_nothing():
    protected = run(declare(protect=True, keep_dependent=False))
    gone = run(lambda: None, protected.state, preview=True)
    assert any("protected" in e for e in gone.plan.errors)
    retained = run(declare(retain=True, keep_dependent=False))
    gone = run(lambda: None, retained.state)
    assert gone.plan.of("root") == ["retain"] and not gone.plan.errors


def test_a_failed_delete_cancels_the_later_batches_and_a_failed_update_its_dependents():
    built = run(declare())
    gone = run(lambda: None, built.state, fail=("child",))
    assert gone.plan.failed == ["child"] and gone.plan.skipped == ["root"]
    assert {e.name for e in gone.state.values()} == {"root", "child"}
    failed = run(declare("v2", ["a"]), built.state, fail=("root",))
    assert failed.plan.failed == ["root"] and "child" in failed.plan.skipped


def test_a_second_registration_of_one_urn_fails_the_run():
    """step_generator.go generateURN: the engine refuses a URN it has already seen in the deployment."""
    import pytest

    def program():
        command.remote.Command("twice", connection=CONNECTION, create="a")
        command.remote.Command("twice", connection=CONNECTION, create="b")

    with pytest.raises(Exception, match="Duplicate resource URN .*twice'; try giving it a unique name"):
        run(program)
    # The mock engine's process goes on: nothing of the failed run reaches the next one.
    after = run(lambda: command.remote.Command("once", connection=CONNECTION, create="a"))
    assert [r.name for r in after.resources] == ["once"] and not after.plan.errors
