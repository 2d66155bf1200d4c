"""Runtime adjustments of the Python process that evaluates the program (not components: they declare nothing):
the SDK's dependency cycle check answered without a walk where construction order proves there is no cycle
(cycle_check), the cyclic garbage collector's thresholds (gc_thresholds), and two SDK functions replaced by
equivalents that leave out work whose result the SDK drops: the reference cycle of each test for unknown values
(unknowns) and the source lines read for each registration's stack trace (source_positions). Each is applied only
to a fleet large enough for it to pay (MIN_NODES, measured: docs/benchmarks.md), and only where it meets what it was
written for;
and the process is put back as the SDK and Python had it once every resource of the run is registered, for an
Automation API host that runs the program inline and goes on (`restore_when_registered`).
"""
from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field

import pulumi

from . import cycle_check, gc_thresholds, source_positions, unknowns

# The fleet size (nodes) from which each adjustment is applied: below it, what it saves is within the noise of a run.
# Measured with farm-bench (paired runs of tools.bench's generated stacks under the mock engine, median CPU, this
# session's 2-core machine): the thresholds alone 0.95 of the CPU without either at 3 nodes, both 0.92 at 3 and 0.87
# at 30; the cycle check alone 1.01 at 3 and 1.00 at 10 (no gain), 0.95 at 30, and half the evaluation at 300
# (docs/benchmarks.md). So the thresholds always, the cycle check from 30 nodes. The two equivalents do less of the
# same work at every size (their savings grow with the Outputs and the stack depth of each registration): always.
MIN_NODES = {"gc_thresholds": 0, "cycle_check": 30, "unknowns": 0, "source_positions": 0}


@dataclass
class Applied:
    """What install() changed, so that restore() can put it back."""
    thresholds: tuple[int, ...] | None = None   # the collector's thresholds before, when they were changed
    cycle_check: bool = False
    unknowns: bool = False
    source_positions: bool = False
    resources: list[pulumi.Resource] = field(default_factory=list)

    def changed(self) -> bool:
        return self.thresholds is not None or self.cycle_check or self.unknowns or self.source_positions


def install(nodes: int) -> Applied:
    """For this run of the program: each adjustment its fleet pays for. Call it before the first resource."""
    applied = Applied()
    if nodes >= MIN_NODES["gc_thresholds"] and gc_thresholds.GENERATIONAL:
        applied.thresholds = gc.get_threshold()
        gc_thresholds.install()
    if nodes >= MIN_NODES["cycle_check"]:
        applied.cycle_check = cycle_check.install()
    if nodes >= MIN_NODES["unknowns"]:
        applied.unknowns = unknowns.REPLACEMENT.install()
    if nodes >= MIN_NODES["source_positions"]:
        applied.source_positions = source_positions.REPLACEMENT.install()
    if applied.changed():
        # Every resource of the run, to know when the last one is registered (a stack transformation runs in each
        # Resource constructor and changes nothing).
        pulumi.runtime.register_stack_transformation(_recorder(applied))
    return applied


def _recorder(applied: Applied) -> Callable[[pulumi.ResourceTransformationArgs], None]:
    def record(args: pulumi.ResourceTransformationArgs) -> None:
        applied.resources.append(args.resource)
    return record


def restore(applied: Applied) -> None:
    """Put back what install() changed."""
    if applied.cycle_check:
        cycle_check.uninstall()
    if applied.unknowns:
        unknowns.REPLACEMENT.uninstall()
    if applied.source_positions:
        source_positions.REPLACEMENT.uninstall()
    if applied.thresholds is not None:
        gc.set_threshold(*applied.thresholds)


def restore_when_registered(applied: Applied) -> None:
    """restore() once every resource declared so far has its URN, that is once the SDK has registered it: the SDK
    declares a resource's dependencies (where the cycle check answers) before it sends the registration, and the
    collector matters while the registrations build up. Call it after the last resource. The SDK awaits this
    Output before the run ends. A run that fails before then leaves the process as install() set it."""
    if not applied.changed():
        return
    pulumi.Output.all(*[r.urn for r in applied.resources]).apply(lambda _: restore(applied))
