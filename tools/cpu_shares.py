"""Where a run's CPU goes, by sampling: the program's own code, the Pulumi SDK and the provider SDKs' classes it calls,
imports, the mock engine, and the process's other threads (the categories are the caller's: tools.bench's
CPU_CATEGORIES). tools.bench reports it next to its floors (#40, item 7): a ratio to the bare program says how far a
run is from the SDK's registration alone, this says how much of a run is the program's own code.

How it samples. The process's CPU-time interval timer (setitimer ITIMER_PROF) raises SIGPROF as the process spends
CPU: every 4 ms here, the kernel's tick, whatever shorter interval is asked for, and less often on a loaded machine.
Python runs the handler on the main thread at its next check point (a function's entry, a loop's jump back, the
return from a call into C), with the frame running there. The sample weighs the main thread's CPU time since the one
before (time.thread_time, the handler's own time left out) and goes to that frame's stack. Two biases follow, both
measured by an independent review of this module with synthetic programs of known split:
- CPU moves toward the next check point: a leaf of straight-line arithmetic is counted in its caller's loop.
- The timer also runs on the other threads' CPU. A tick earned while the main thread waits is taken when it wakes,
  with the main thread's CPU from before the wait, and goes to where it waits. In a run, that is the event loop's
  wake-up, counted as the SDK's: 2.9 percent of the main thread's CPU at 300 nodes, 5.0 at 30.
A first version sampled from a thread, which runs only when the main thread gives up the interpreter lock: at 3 nodes,
where the main thread waits for the engine every few milliseconds, nearly every sample fell on a wait, and the
program's share read 0 in three runs of five. Checked against py-spy 0.4.3 (`record --gil`, which reads the stacks
from outside the process; installed by hand, not a requirement) on a 300-node run of tools.bench, its samples
classified the same way: the program's own code 9.0 and 9.2 percent in two runs here against 9.8 there, imports 3.8
and 4.2 against 4.3.

A sample goes to the category of the frame nearest its leaf that has one (`Categories`): the standard library and
other libraries have none, so a YAML dump that a renderer calls is the renderer's, and the event loop's own work is
the SDK's that runs it. A sample with a module being loaded on its stack is the imports'. The CPU the process spent
outside the main thread (the SDK's thread pool, where the mock engine answers each registration) is a category of its
own, and what the main thread spent after the last sample is unattributed.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, FrameType

IMPORTS = "imports"
OTHER_THREADS = "other threads"
UNATTRIBUTED = "unattributed"   # no frame of the stack has a category
INTERVAL_SECONDS = 0.001         # of the process's CPU time, between two samples: asked for, not granted (above)

# A code object's category: a name, or None for a frame that passes the sample up to its caller.
Categories = Callable[[CodeType], "str | None"]


def by_path(prefixes: list[tuple[str, str]]) -> Categories:
    """Categories by the code's file: the category of the first prefix (a directory with its trailing slash, or a file)
    that the file starts with. Both sides are compared as real paths, because Python names a file by the path it was
    reached through: a virtualenv or a checkout behind a symbolic link has other names than the real ones."""
    real = [(_real(prefix) + ("/" if prefix.endswith("/") else ""), name) for prefix, name in prefixes]

    def category(code: CodeType) -> str | None:
        filename = _real(code.co_filename)
        for prefix, name in real:
            if filename.startswith(prefix):
                return name
        return None
    return category


def _real(path: str) -> str:
    # Names that are not absolute paths (<string>, <frozen ...>) are kept as they are: they are in no directory.
    return os.path.realpath(path) if os.path.isabs(path) else path


# A module being loaded: importlib's loading of a module, and the execution of its code, which Pulumi's lazy modules
# (pulumi/_utils.py _LazyModule) and importlib.util.LazyLoader start without _find_and_load. Not every importlib
# frame: a `from x import y` of a loaded module, which the SDK runs inside functions it calls per resource, passes
# through _handle_fromlist and is its caller's work.
_LOADING = frozenset({"_find_and_load", "exec_module"})


def _is_import(code: CodeType) -> bool:
    return code.co_name in _LOADING and code.co_filename.startswith("<frozen importlib.")


@dataclass
class Shares:
    """What sampled() measured: CPU seconds by category, OTHER_THREADS and UNATTRIBUTED included (filled when the
    block is left); the samples taken (counted as they are); and the sampler's own CPU, which is in no category."""
    seconds: dict[str, float] = field(default_factory=dict)
    samples: int = 0
    sampler_seconds: float = 0.0


@contextmanager
def sampled(categories: Categories) -> Iterator[Shares]:
    """Sample the main thread while the block runs (on the main thread, which alone may set a signal handler). The
    process's SIGPROF handler and CPU-time timer are put back after, the timer with what it had left."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("sampled() measures the main thread and must be entered on it")
    shares = Shares()
    samples: defaultdict[str, float] = defaultdict(float)
    cache: dict[CodeType, tuple[bool, str | None]] = {}
    last = [0.0]                     # the main thread's CPU time when the previous sample was taken
    busy: list[bool] = []            # not empty while a sample is taken

    def classify(frame: FrameType | None) -> str:
        found: str | None = None
        while frame is not None:
            code = frame.f_code
            known = cache.get(code)
            if known is None:
                known = cache[code] = (_is_import(code), categories(code))
            if known[0]:
                return IMPORTS
            if found is None:
                found = known[1]
            frame = frame.f_back
        return found or UNATTRIBUTED

    def sample(signum: int, frame: FrameType | None) -> None:
        if busy:
            # A tick during a sample (the handler has check points too): its time is the running sample's.
            return
        busy.append(True)
        try:
            now = time.thread_time()
            samples[classify(frame)] += now - last[0]
            shares.samples += 1
            last[0] = time.thread_time()
            shares.sampler_seconds += last[0] - now
        finally:
            busy.clear()

    process_start = time.process_time()
    main_start = last[0] = time.thread_time()
    previous = signal.signal(signal.SIGPROF, sample)
    previous_timer = signal.setitimer(signal.ITIMER_PROF, INTERVAL_SECONDS, INTERVAL_SECONDS)
    try:
        yield shares
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        # Ignoring first discards a SIGPROF still pending, which the default action (when there was no handler
        # before) would end the process with.
        signal.signal(signal.SIGPROF, signal.SIG_IGN)
        signal.signal(signal.SIGPROF, previous)
        signal.setitimer(signal.ITIMER_PROF, *previous_timer)
        main_cpu = time.thread_time() - main_start
        other = time.process_time() - process_start - main_cpu
        shares.seconds.update(samples)
        # What the main thread spent after the last sample goes unattributed rather than to a stack it did not run.
        shares.seconds[UNATTRIBUTED] = shares.seconds.get(UNATTRIBUTED, 0.0) + max(
            0.0, main_cpu - shares.sampler_seconds - sum(samples.values()))
        shares.seconds[OTHER_THREADS] = max(0.0, other)
