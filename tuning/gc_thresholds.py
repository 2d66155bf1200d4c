"""The Python cyclic garbage collector's thresholds for this program's run.

A Pulumi program keeps nearly everything it allocates until the run ends: every resource holds an Output, with
four futures, per property (pulumi/runtime/rpc.py transfer_properties), about forty objects' worth per resource,
and the SDK keeps each Output's future in a set until it resolves (pulumi/output.py Output._track). At 300 nodes
the heap grows to some 600 MiB of such live objects. CPython's generational collector (3.11 to 3.13) runs a young
collection every 700 net allocations (2000 in 3.13), a middle one every 10 young ones, and a full one, which walks
every tracked object, every 10 middle ones once the objects that survived since the last full one are a quarter
of all long-lived objects (3.11 Modules/gcmodule.c, gc_collect_generations: `long_lived_pending <
long_lived_total / 4`). On a heap that only grows, that is a full walk every time it grows by a quarter, and the
walks find almost nothing to free. Measured with tools.bench at 300 nodes on Python 3.11: the collector was half
of the evaluation's CPU (15.8 s with the defaults, 8.4 s with these thresholds, docs/benchmarks.md), at 1% more
peak memory.

So: a young collection every 100,000 net allocations, a middle one every 50 young ones, and a full one only after
100 middle ones (some 5 x 10^8 net allocations: in practice not during a run). Cyclic garbage that reaches the
oldest generation stays until the process ends, which the language host's process does with the deployment
(pulumi/pulumi sdk/python/cmd/pulumi-language-python-exec runs the program in it); during a long `up` that is
what the resources registered so far left behind, bounded by the resources, not by the time. Only on the
generational collector: 3.14's is incremental and reads these values differently (Doc/whatsnew/3.13.rst as
retargeted to 3.14, python/cpython#125453), and CPython is moving back to the generational one (GH-148726); a
version not measured here keeps Python's defaults. Only 3.11 was measured.
"""
from __future__ import annotations

import gc
import sys

THRESHOLDS = (100_000, 50, 100)
# The collectors these thresholds were chosen for: the generational one of 3.11 to 3.13.
GENERATIONAL = sys.version_info < (3, 14)


def install() -> None:
    """For the rest of this process: the collector thresholds above, on a generational collector. Call it before
    the first resource."""
    if GENERATIONAL:
        gc.set_threshold(*THRESHOLDS)
