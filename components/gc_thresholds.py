"""The Python cyclic garbage collector's thresholds for this program's run.

A Pulumi program keeps nearly everything it allocates until the run ends: every resource holds an Output, with
four futures, per property (pulumi/runtime/rpc.py transfer_properties), about forty objects' worth per resource,
and the SDK keeps each Output's future in a set until it resolves (pulumi/output.py Output._track). At 300 nodes
the heap grows to some 600 MiB of such live objects. CPython's collector (3.11-3.13, and again from 3.15:
python/cpython GH-148726) runs a young collection every 700 net allocations, a middle one every 10 young
ones, and a full one, which walks every tracked object, every 10 middle ones once the objects that survived
since the last full one are a quarter of all long-lived objects (Modules/gcmodule.c,
gc_collect_generations: `long_lived_pending < long_lived_total / 4`). On a heap that only grows, that is a
full walk every time it grows by a quarter, and the walks find almost nothing to free. Measured with tools.bench
at 300 nodes (Python 3.11): the collector was half of the evaluation's CPU (18.5 s with the defaults, 9.7 s
with these thresholds; 16 full collections freed 4,931 objects in all), at 1% more peak memory.

So: a young collection every 100,000 net allocations, a middle one every 50 young ones, and a full one only
after 100 middle ones (some 5 x 10^8 net allocations: in practice not during a run). Garbage that is cyclic and
long-lived stays until the process ends; the language host's process ends with the deployment
(pulumi/pulumi sdk/python/cmd/pulumi-language-python-exec runs the program in it). Python 3.14's incremental
collector reads the first value the same way, the second as how slowly it scans the old generation (higher:
slower) and ignores the third (Doc/whatsnew/3.13.rst as retargeted to 3.14, python/cpython#125453); only
3.11 was measured here.
"""
from __future__ import annotations

import gc

THRESHOLDS = (100_000, 50, 100)


def install() -> None:
    """For the rest of this process: the collector thresholds above. Call it before the first resource."""
    gc.set_threshold(*THRESHOLDS)
