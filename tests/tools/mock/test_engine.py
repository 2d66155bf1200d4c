"""The engine model itself (tools/mock/engine.py), on small graphs of real pulumi-command resources: each rule it
follows from the engine's source, so a program test built on it can trust it."""
from __future__ import annotations

import pulumi
import pulumi_command as command

from tools.mock.program import Recording, run_declarations

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


def _chain_program(names_deps: dict[str, list[str]], protect: tuple[str, ...] = ()):
    """Commands named by the keys, each with `dependsOn` the earlier ones its value lists."""
    def program():
        made: dict[str, command.remote.Command] = {}
        for name, deps in names_deps.items():
            made[name] = command.remote.Command(name, connection=CONNECTION, create=name, delete="undo",
                                                opts=pulumi.ResourceOptions(depends_on=[made[d] for d in deps],
                                                                            protect=name in protect))
    return program


def test_deletes_run_in_the_engines_layers_so_a_failure_keeps_what_the_real_engine_keeps():
    """ScheduleDeletes layers from the resources with no condemned dependency up, then reverses: `lone` (no
    dependency) is in the last batch with `base`, not in the first with `top`. When `top`'s delete fails the
    run is cancelled before that batch, so `lone` stays, as in the real engine."""
    built = run(_chain_program({"base": [], "top": ["base"], "lone": []}))
    gone = run(lambda: None, built.state, fail=("top",))
    assert gone.plan.failed == ["top"] and sorted(gone.plan.skipped) == ["base", "lone"]
    assert {e.name for e in gone.state.values()} == {"base", "top", "lone"}
    whole = run(lambda: None, built.state)
    assert [s.name for s in whole.plan.steps if s.op == "delete"] == ["top", "lone", "base"]


def test_a_protected_resource_keeps_everything_it_depends_on_and_the_rest_is_deleted():
    """deployment_executor.go performPostSteps: a protected resource's refusal does not cancel the run, but every
    later batch leaves out its transitive dependencies; what depends on it is deleted first, unrelated ones too."""
    built = run(_chain_program({"base": [], "mid": ["base"], "leaf": ["mid"], "other": []}, protect=("mid",)))
    gone = run(lambda: None, built.state)
    assert any(e.startswith("mid: resource cannot be deleted") for e in gone.plan.errors)
    assert gone.plan.of("leaf") == ["delete"] and gone.plan.of("other") == ["delete"]
    assert gone.plan.of("base") == [] and "base" in gone.plan.skipped
    assert {e.name for e in gone.state.values()} == {"base", "mid"}


def test_a_dependency_on_a_component_orders_deletes_after_its_earlier_children():
    """DependenciesOf: depending on a component counts its descendants registered before the dependent. (The
    Python SDK already expands `depends_on=[component]` to its children, so this is built from entries, as a state
    written by another SDK may hold it.)"""
    from tools.mock.engine import Deployment, Entry

    def entry(name: str, parent: str = "", custom: bool = True, dependencies: tuple[str, ...] = ()) -> Entry:
        return Entry(urn=f"urn:{name}", type="command:remote:Command" if custom else "test:index:Box", name=name,
                     parent=parent and f"urn:{parent}", custom=custom, inputs={}, id=name,
                     dependencies=[f"urn:{d}" for d in dependencies])

    state = {e.urn: e for e in (entry("box", custom=False), entry("inner", parent="box"),
                                entry("user", dependencies=("box",)))}
    run_ = Deployment(state, fail=("user",))
    plan = run_.finish()
    # Without the component's children counted, `inner` would be deleted in the batch `user` failed in.
    assert plan.failed == ["user"] and plan.of("inner") == [] and "urn:inner" in run_.state
    assert [[e.name for e in batch] for batch in Deployment(state)._delete_batches(list(state.values()))] == [
        ["user"], ["inner"], ["box"]]


def test_a_new_commands_id_is_known_in_a_preview():
    """pulumi-command v1.2.1 Create returns the id it made before it looks at the preview flag."""
    preview = run(declare(), preview=True)
    assert preview.named("root").id.startswith("root") and len(preview.named("root").id) == len("root") + 8
    assert preview.named("child").id.startswith("child")


def test_a_failed_check_stops_a_preview_and_an_up_before_anything_else():
    """step_generator.go: an invalid resource bails the run in both modes (no DryRun exception): nothing registered
    after it gets a step, and no delete runs (performPostSteps is never reached)."""
    from tools.mock.engine import Deployment, Entry, Registration

    def reg(name: str, type_: str = "command:remote:Command") -> Registration:
        return Registration(urn=f"urn:{name}", type=type_, name=name, parent="", custom=True, inputs={"v": 1})

    state = {"urn:old": Entry(urn="urn:old", type="command:remote:Command", name="old", parent="", custom=True,
                              inputs={}, id="old")}
    for preview in (True, False):
        run_ = Deployment(state, preview=preview, check={"test:Guard": lambda olds, news: ["no"]})
        run_.register(reg("before"))
        run_.register(reg("guard", "test:Guard"))
        run_.register(reg("after"))
        plan = run_.finish()
        assert plan.errors == ["guard: no"] and plan.of("before") == ["create"]
        assert plan.of("after") == ["skipped"] and plan.of("old") == [] and "urn:old" in run_.state


def test_a_protected_replacement_fails_a_preview_and_stops_an_up_before_it():
    """continueStepsFromDiff: a preview shows the replacement and fails; an `up` bails before any of its steps."""
    built = run(declare("v1", ["a"], protect=True))
    preview = run(declare("v1", ["b"], protect=True), built.state, preview=True)
    assert any("marked for protection" in e for e in preview.plan.errors)
    assert "replace" in preview.plan.of("root")
    up_ = run(declare("v1", ["b"], protect=True), built.state)
    assert any("marked for protection" in e for e in up_.plan.errors)
    assert up_.plan.of("root") == ["skipped"] and up_.plan.of("child") == ["skipped"]
    assert not [s for s in up_.plan.steps if s.op in ("delete-replaced", "replace", "delete")]
    # Unprotected in the same run, it is replaced (only `new.Protect && old.Protect` refuses).
    assert "replace" in run(declare("v1", ["b"]), built.state).plan.of("root")


def test_target_and_exclude_follow_the_step_generator():
    """--target: a dependent a delete-before-replace of the target deleted is re-created though not targeted
    (step_generator.go `recreating`); an undeclared target that an untargeted resource still depends on is kept
    (getDependencySteps). --exclude: no untargeted-create error, and an excluded new resource is simply not created."""
    built = run(declare("v1", ["a"]))
    replaced = run(declare("v1", ["b"]), built.state, target=("root",))
    assert "replace" in replaced.plan.of("root") and replaced.plan.of("child") == ["delete-replaced", "replace"]
    assert {e.name for e in replaced.state.values()} >= {"root", "child"} and not replaced.plan.errors

    plain = run(declare(dependent="depends_on"))
    alone = run(lambda: command.remote.Command("child", connection=CONNECTION, create="c", delete="undo"),
                plain.state, target=("root",))
    assert alone.plan.of("root") == [] and alone.named("child").name == "child"
    assert "root" in {e.name for e in alone.state.values()}

    excluded = run(lambda: command.remote.Command("only", connection=CONNECTION, create="x"), exclude=("only",))
    assert excluded.plan.of("only") == ["skipped"] and not excluded.plan.errors and not excluded.state
