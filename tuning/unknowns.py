"""The Python SDK's test for unknown values inside a value, without the reference cycle each of its calls leaves
for the cyclic garbage collector.

pulumi/runtime/rpc.py contains_unknowns defines its recursive helper `impl` anew at every call: the helper's closure
cell holds the helper, a cycle of six objects (function, cell, annotation alias and tuples) that reference counting
cannot free. The SDK calls it several times for every Output it makes and resolves (output.py _OutputData,
Output.future; rpc.py serialize_property; invoke.py): 49 times per resource in tools.bench's 300-node run, which
left 2.1 million cyclic objects (gc.DEBUG_SAVEALL: all but 40 of the run's cyclic garbage), and a young collection of
2 s to free them once the run's thresholds were put back (gc.callbacks).

contains_unknowns below is the SDK's function with its helper defined once, at module level: the same checks in the
same order, the same items read (a dict subclass's __getitem__ included), the same answers, and no garbage.
Every caller in the SDK reads the function from the rpc module at call time (output.py calls rpc.contains_unknowns;
rpc.py and invoke.py call the module's name), so REPLACEMENT replaces that name, where the SDK's function is the one
read here (its source's SHA-256); any other SDK keeps its own, with a warning (equivalent.py).
tests/tuning/test_unknowns.py compares the answers and the reads on random values.
"""
from __future__ import annotations

from typing import Any

from pulumi.runtime import known_types
from pulumi.runtime import rpc as _rpc

from .equivalent import Equivalent

# inspect.getsource(pulumi.runtime.rpc.contains_unknowns) of the SDK pinned in requirements.txt (pulumi==3.272.0).
CONTAINS_UNKNOWNS_SHA256 = "1f1f335b6f48b96055607dbb5be2e53b1163e35ec88704c89a41271070017cc8"


def _contains(val: Any, seen_ids: set[int]) -> bool:
    # The SDK's impl, line for line.
    if known_types.is_unknown(val):
        return True
    val_id = id(val)
    if val_id in seen_ids:
        return False
    seen_ids.add(val_id)
    if isinstance(val, dict):
        return any(_contains(val[k], seen_ids) for k in val)
    if isinstance(val, list):
        return any(_contains(x, seen_ids) for x in val)
    return False


def contains_unknowns(val: Any) -> bool:
    """rpc.contains_unknowns: whether `val`, or any dict value or list item reachable from it, is unknown."""
    return _contains(val, set())


REPLACEMENT = Equivalent(_rpc, "contains_unknowns", contains_unknowns, (_rpc.contains_unknowns,),
                         CONTAINS_UNKNOWNS_SHA256, "more work for the garbage collector")
