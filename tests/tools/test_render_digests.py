"""hk-prod and every example declare exactly what the stored digests say (tools/render_digest.py): a change meant to
move no resource moves none, and one that does names each resource it moves."""
import json

import pytest

from tools import render_digest


@pytest.mark.parametrize("stack", render_digest.stacks())
def test_every_resource_is_declared_as_the_stored_digests_say(stack):
    path = render_digest.path_of(stack)
    assert path.is_file(), f"no stored digests for {stack}: python -m tools.render_digest"
    stored = json.loads(path.read_text())
    now = render_digest.digests(render_digest.record(stack))
    assert len(now) > 100
    differences = render_digest.differences(stored, now)
    assert not differences, (
        f"{stack}: {len(differences)} resources differ from tests/fixtures/render-digests/{stack}.json; if the change "
        "is meant to move them, write the digests again (python -m tools.render_digest):\n" + "\n".join(differences[:40]))


def test_the_differences_name_each_new_gone_and_changed_resource():
    stored = {"urn:a": "1", "urn:b": "2", "urn:c": "3"}
    now = {"urn:a": "1", "urn:b": "9", "urn:d": "4"}
    assert render_digest.differences(stored, now) == ["new: urn:d", "gone: urn:c", "changed: urn:b"]
    assert render_digest.differences(now, now) == []


def test_a_secret_value_moves_its_resources_digest():
    before = render_digest.digests(render_digest.record("lab"))
    after = render_digest.digests(render_digest.record(
        "lab", {"proxmoxApiToken": "pulumi@pve!other=0b6a4c3e-9f1d-4e2a-8c7b-5d9e0f1a2b3c"}))
    changed = render_digest.differences(before, after)
    assert changed and all(line.startswith("changed: ") for line in changed)
    assert any("pulumi:providers:proxmoxve" in line for line in changed)


@pytest.mark.parametrize("option, value", [
    ("inputs", {"create": "echo other"}), ("parent", "urn:other"), ("dependencies", ["urn:other"]),
    ("protect", True), ("delete_before_replace", True), ("ignore_changes", ["create"]),
    ("additional_secret_outputs", ["stdout"]), ("provider", "urn:pulumi:s::p::pulumi:providers:command::other::1"),
    ("aliases", [{"name": "old"}]), ("custom_timeouts", {"create": "5m"}), ("retain_on_delete", True),
    ("replace_on_changes", ["create"]), ("property_dependencies", {"create": ["urn:other"]}),
])
def test_every_option_the_program_gives_a_resource_moves_its_digest(option, value):
    import dataclasses

    from tools.mock.program import Recording, Resource

    base = Resource(urn="urn:pulumi:s::p::command:remote:Command::step", type="command:remote:Command", name="step",
                    parent="urn:pulumi:s::p::pulumi:pulumi:Stack::p-s", dependencies=[], property_dependencies={},
                    inputs={"create": "echo hello"}, custom=True, protect=False, delete_before_replace=False,
                    ignore_changes=[], additional_secret_outputs=[],
                    provider="urn:pulumi:s::p::pulumi:providers:command::default::0")
    before = render_digest.digests(Recording(resources=[base]))
    after = render_digest.digests(Recording(resources=[dataclasses.replace(base, **{option: value})]))
    assert render_digest.differences(before, after) == [f"changed: {base.urn}"]
