"""The benchmark's own logic: generated stacks are valid, the critical path is right, radii are minimal."""
from __future__ import annotations

import pytest

from config.loader import load
from tools import bench
from tools.mockrun import Recording, Resource


@pytest.mark.parametrize("nodes", [3, 30, 300])
def test_generated_stacks_are_valid(nodes):
    spec = load(bench.raw(bench.generate_stack(nodes))).spec
    assert len(spec.linux_nodes) + len(spec.nodes.windows) == nodes
    assert spec.nodes.windows and spec.nodes.linux
    assert {n.zone for n in spec.linux_nodes} == {"hk-1", "hk-2"}


def _resource(name: str, deps: list[str], type_: str = "command:remote:Command") -> Resource:
    return Resource(urn=name, type=type_, name=name, parent="", dependencies=deps, property_dependencies={},
                    inputs={}, custom=True, protect=False, delete_before_replace=False, ignore_changes=[],
                    additional_secret_outputs=[], provider="")


def test_critical_path_follows_the_heaviest_chain():
    recording = Recording(resources=[
        _resource("a-vm", []), _resource("b-init", ["a-vm"]), _resource("c-join", ["b-init"]),
        _resource("d-join-credentials", ["a-vm"]),
    ])
    chain = bench.critical_path(recording)
    assert chain.names == ["a-vm", "b-init", "c-join"]
    assert chain.seconds == 600 + 240 + 120
    assert bench.serial_seconds(recording) == chain.seconds + 5


def test_every_single_change_touches_only_its_minimal_set():
    for row in bench.blast_radius(10):
        assert row["equal"], row


@pytest.mark.slow
def test_critical_path_does_not_grow_with_node_count():
    small = bench.critical_path(bench.run_program(bench.raw(bench.generate_stack(3)), stack=bench.CLUSTER))
    large = bench.critical_path(bench.run_program(bench.raw(bench.generate_stack(60)), stack=bench.CLUSTER))
    assert large.seconds <= small.seconds * 1.10


@pytest.mark.slow
def test_a_large_stack_declares_despite_chains_deeper_than_pythons_default_recursion():
    """The serial upgrade and reboot chains are about six steps per node deep; 300 nodes is past what the
    SDK's recursive cycle check survives at the default recursion limit (between 200 and 300 nodes)."""
    import sys
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1000)   # what a fresh interpreter starts with
        recording = bench.run_program(bench.raw(bench.generate_stack(300)), stack=bench.CLUSTER)
    finally:
        sys.setrecursionlimit(limit)
    assert len([r for r in recording.resources if r.name.endswith("-vm-restart")]) > 100
