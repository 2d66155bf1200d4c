"""The Python SDK's dependency cycle check, answered without walking the graph where the construction order
already proves there is no cycle.

Every dependency the SDK registers (depends_on, or an input Output of another resource) first asks whether the
dependency can already reach the new dependent (pulumi/runtime/resource_cycle_breaker.py declare_dependency,
called from rpc.py _add_dependency): a depth-first walk of everything the dependency depends on, one nested
generator per level. A rolling upgrade's later steps depend, through the waves, on every node, so these walks
grew with the square of the node count (the larger part of the evaluation at 300 nodes, tools.bench) and their
recursion outgrew Python's limit.

A resource can name as a dependency only an object that exists, so dependencies normally point to resources
constructed earlier. While every recorded dependency does (`_in_order`), a path from a dependency back to its
dependent would climb from an earlier resource to a later one, which no edge does: the answer is "no cycle"
without a walk. A stack transformation (pulumi.runtime.register_stack_transformation, run synchronously in
every Resource constructor) numbers the resources as they are constructed. The first dependency against that
order (possible through an Output of a later resource) is checked by a walk, like every one after it, so every
answer, and every cycle error, is the one the SDK would give. tests/tuning/test_cycle_check.py compares the answers with the
SDK's on random graphs. install() checks at run time that the SDK's cycle check is the one this was written against
(its source's SHA-256, and rpc calling the function it replaces); any other SDK keeps its own check, with a warning:
slower on a large fleet, never wrong.
"""
from __future__ import annotations

import hashlib
import inspect
import itertools
from typing import Any

import pulumi
from pulumi.runtime import resource_cycle_breaker as _breaker
from pulumi.runtime import rpc as _rpc

# pulumi/runtime/resource_cycle_breaker.py as pinned in requirements.txt (pulumi==3.272.0): the functions this calls
# (_deps, _add_dep) and replaces (declare_dependency). A new SDK is read again before this changes.
CYCLE_BREAKER_SHA256 = "58bcb372e5e36ee03b06ca0eaf28dcea9696777d5c047b9ebf9bcfe98595c516"
_SEQUENCE = "_hybrid_cluster_constructed"
_SDK_DECLARE = _breaker.declare_dependency
_numbers = itertools.count()
_in_order = True


def _number(args: pulumi.ResourceTransformationArgs) -> None:
    """Stack transformation: stamps each resource with its construction number and changes nothing."""
    setattr(args.resource, _SEQUENCE, next(_numbers))


def _reaches(start: Any, target: Any) -> bool:
    """Whether `target` is `start` or among what `start` transitively depends on: the SDK's _reachable, walked
    with an explicit stack."""
    seen = {start}
    stack = [start]
    while stack:
        current = stack.pop()
        if current is target:
            return True
        for dependency in _breaker._deps(current):
            if dependency not in seen:
                seen.add(dependency)
                stack.append(dependency)
    return False


def declare_dependency(from_resource: Any, to_resource: Any) -> bool:
    """resource_cycle_breaker.declare_dependency with the same answer and effect: records from_resource ->
    to_resource and returns True, or returns False when to_resource already reaches from_resource."""
    global _in_order
    later, earlier = getattr(from_resource, _SEQUENCE, None), getattr(to_resource, _SEQUENCE, None)
    if _in_order and later is not None and earlier is not None and later > earlier:
        _breaker._add_dep(from_resource, to_resource)
        return True
    if _reaches(to_resource, from_resource):
        return False
    _breaker._add_dep(from_resource, to_resource)
    _in_order = False   # recorded against construction order: from now on every answer walks, as the SDK's
    return True


def in_order() -> bool:
    """Whether every dependency recorded in this run points to an earlier resource (the fast answers hold)."""
    return _in_order


def sdk_matches() -> bool:
    """Whether the running SDK's cycle check is the one this was written against."""
    try:
        source = inspect.getsource(_breaker)
    except (OSError, TypeError):
        return False
    return (hashlib.sha256(source.encode()).hexdigest() == CYCLE_BREAKER_SHA256
            and _rpc.declare_dependency in (_SDK_DECLARE, declare_dependency))


def uninstall() -> None:
    """The SDK's own cycle check again, for whatever runs in this process next (in_order() still tells how the run
    went; install() starts over)."""
    if _rpc.declare_dependency is declare_dependency:
        _rpc.declare_dependency = _SDK_DECLARE


def install() -> bool:
    """For this program run: number the resources from here on, and route the SDK's dependency registration
    through declare_dependency. Call it before the program declares its first resource. With an SDK other than the
    one read, nothing changes (the SDK's own check runs) and the run says so; returns whether it was installed."""
    global _in_order
    if not sdk_matches():
        pulumi.log.warn("this Pulumi SDK's dependency cycle check is not the one tuning/cycle_check.py was written "
                        "against: its own check runs (correct, slower on a large fleet)")
        return False
    if _rpc.declare_dependency is not declare_dependency:
        _rpc.declare_dependency = declare_dependency
    _in_order = True
    pulumi.runtime.register_stack_transformation(_number)
    return True
