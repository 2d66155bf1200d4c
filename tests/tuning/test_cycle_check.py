"""tuning/cycle_check.py: the same answers as the SDK's cycle check, on random graphs, with and without
dependencies against construction order; the SDK code it relies on, pinned; and the program's graph recorded in
construction order (so every answer took the fast path)."""
from __future__ import annotations

import hashlib
import inspect
import random

import pulumi
import pytest
from pulumi.runtime import resource_cycle_breaker as breaker
from pulumi.runtime import rpc

from tuning import cycle_check

# The SDK file whose functions cycle_check calls (_deps, _add_dep) and replaces (declare_dependency), as pinned in
# requirements.txt: a new SDK fails here until someone has read its cycle check again (the program itself falls back
# to the SDK's check at run time).
CYCLE_BREAKER_SHA256 = cycle_check.CYCLE_BREAKER_SHA256


def test_the_sdk_code_relied_on_is_the_one_read():
    source = inspect.getsource(breaker)
    assert hashlib.sha256(source.encode()).hexdigest() == CYCLE_BREAKER_SHA256
    # rpc imports the function by name: the name rpc calls is the one install() replaces.
    assert "from .resource_cycle_breaker import declare_dependency" in inspect.getsource(rpc)
    assert "declare_dependency(from_resource, res)" in inspect.getsource(rpc._add_dependency)
    # Legacy stack transformations run in the Resource constructor, synchronously, with the resource.
    constructor = inspect.getsource(pulumi.Resource.__init__)
    assert "ResourceTransformationArgs(" in constructor and "resource=self" in constructor
    assert callable(pulumi.runtime.register_stack_transformation)


class Node:
    def __init__(self, number: int | None):
        if number is not None:
            setattr(self, cycle_check._SEQUENCE, number)


def _sdk_declare(graph_from, graph_to) -> bool:
    return breaker.declare_dependency(graph_from, graph_to)


@pytest.mark.parametrize("seed", range(60))
def test_same_answers_and_edges_as_the_sdk(seed):
    rng = random.Random(seed)
    size = rng.randint(2, 40)
    against_order = rng.choice([0.0, 0.0, 0.05, 0.3])
    ours = [Node(i if rng.random() > 0.02 else None) for i in range(size)]
    theirs = [Node(None) for _ in range(size)]
    cycle_check._in_order = True
    try:
        for _ in range(size * 3):
            a, b = rng.randrange(size), rng.randrange(size)
            if rng.random() >= against_order and a < b:
                a, b = b, a        # mostly a later resource depending on an earlier one
            expected = _sdk_declare(theirs[a], theirs[b])
            assert cycle_check.declare_dependency(ours[a], ours[b]) == expected, (seed, a, b)
        for i in range(size):
            assert {ours.index(d) for d in breaker._deps(ours[i])} == {theirs.index(d) for d in breaker._deps(theirs[i])}
    finally:
        cycle_check._in_order = True


def test_a_cycle_is_still_refused():
    first, second, third = Node(0), Node(1), Node(2)
    cycle_check._in_order = True
    assert cycle_check.declare_dependency(second, first) and cycle_check.declare_dependency(third, second)
    assert not cycle_check.declare_dependency(first, third)      # against construction order: walked, found
    assert not cycle_check.declare_dependency(first, first)
    assert cycle_check.in_order()                                # nothing against the order was recorded


def test_the_programs_graph_is_recorded_in_construction_order(monkeypatch):
    from tools import bench
    answered = []
    ours = cycle_check.declare_dependency
    monkeypatch.setattr(cycle_check, "declare_dependency", lambda a, b: (answered.append(1), ours(a, b))[1])
    # A fleet the check pays for (tuning.MIN_NODES).
    recording = bench.run_program(bench.raw(bench.generate_stack(30)), stack=bench.CLUSTER)
    assert len(answered) > len(recording.resources)   # every dependency of the run went through it
    # __main__.py installed the check, every answer it gave in that run took the fast path, and the SDK's own check
    # is back once the run's resources were registered (tuning.restore_when_registered).
    assert recording.resources and cycle_check.in_order()
    assert rpc.declare_dependency is breaker.declare_dependency


def test_an_sdk_other_than_the_one_read_keeps_its_own_check_with_a_warning(monkeypatch):
    """Checked at run time, not only here: a different resource_cycle_breaker leaves rpc's function as it is."""
    warnings = []
    monkeypatch.setattr(cycle_check, "CYCLE_BREAKER_SHA256", "0" * 64)
    monkeypatch.setattr(rpc, "declare_dependency", breaker.declare_dependency)
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    assert cycle_check.install() is False
    assert rpc.declare_dependency is breaker.declare_dependency
    assert warnings and "its own check runs" in warnings[0]
    # And an rpc that no longer calls the function this replaces is not patched either.
    monkeypatch.setattr(cycle_check, "CYCLE_BREAKER_SHA256", CYCLE_BREAKER_SHA256)
    other = object()
    monkeypatch.setattr(rpc, "declare_dependency", other)
    assert cycle_check.install() is False and rpc.declare_dependency is other
