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
answer, and every cycle error, is the one the SDK would give. tests/test_cycle_check.py pins the SDK code this
relies on and compares the answers with the SDK's on random graphs.
"""
from __future__ import annotations

import itertools
from typing import Any

import pulumi
from pulumi.runtime import resource_cycle_breaker as _breaker
from pulumi.runtime import rpc as _rpc

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


def install() -> None:
    """For this program run: number the resources from here on, and route the SDK's dependency registration
    through declare_dependency. Call it before the program declares its first resource. Refuses an SDK that no
    longer calls the function this replaces (a pin bump must look again: tests/test_cycle_check.py)."""
    global _in_order
    if _rpc.declare_dependency is not declare_dependency:
        if _rpc.declare_dependency is not _SDK_DECLARE:
            raise RuntimeError("pulumi.runtime.rpc.declare_dependency is not the SDK's resource_cycle_breaker function "
                               "this program replaces (components/cycle_check.py): check the new SDK's cycle check")
        _rpc.declare_dependency = declare_dependency
    _in_order = True
    pulumi.runtime.register_stack_transformation(_number)
