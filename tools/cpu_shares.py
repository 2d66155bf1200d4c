"""Where a run's CPU goes, by sampling: the program's own code, the Pulumi SDK and the provider SDKs' classes it calls,
imports, the mock engine, and the process's other threads (the categories are the caller's: tools.bench's
CPU_CATEGORIES). tools.bench reports it next to its floors (#40, item 7): a
ratio to the bare program says how far a run is from the SDK's registration alone, this says how much of the
difference the program's own code could ever remove.

A thread samples the main thread's stack (sys._current_frames) every millisecond it gets the interpreter lock, and
weighs each sample by the main thread's CPU time since the one before (its POSIX thread CPU clock), so a sample taken
while the main thread waits weighs nothing. The sample goes to the category of the frame nearest its leaf that has
one (`Categories`): the standard library and other libraries have none, so a YAML dump that a renderer calls is the
renderer's, and the event loop's own work is the SDK's that runs it. A sample with an import on its stack is the
imports' (a module being loaded). The CPU the process spent outside the main thread and the sampler (the SDK's thread pool, where the mock
engine answers each registration) is reported as its own category.
"""
from __future__ import annotations

import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType

IMPORTS = "imports"
OTHER_THREADS = "other threads"
UNATTRIBUTED = "unattributed"   # no frame of the stack has a category
# The sampler asks for the lock this often; it gets it when the main thread gives it up (at the latest after
# sys.getswitchinterval(), 5 ms by default), so that is the effective period.
INTERVAL_SECONDS = 0.001

# A code object's category: a name, or None for a frame that passes the sample up to its caller.
Categories = Callable[[CodeType], "str | None"]


def by_path(prefixes: list[tuple[str, str]]) -> Categories:
    """Categories by the code's file: the category of the first prefix (an absolute path) that the file starts with."""
    def category(code: CodeType) -> str | None:
        for prefix, name in prefixes:
            if code.co_filename.startswith(prefix):
                return name
        return None
    return category


def _is_import(code: CodeType) -> bool:
    # A module being loaded. Not every importlib frame: a `from x import y` of a loaded module, which the SDK runs
    # inside functions it calls per resource, passes through _handle_fromlist and is its caller's work.
    return code.co_name == "_find_and_load" and code.co_filename.startswith("<frozen importlib.")


@contextmanager
def sampled(categories: Categories) -> Iterator[defaultdict[str, float]]:
    """Sample the main thread while the block runs (it must run on the main thread). Yields the shares: once the block
    is left, CPU seconds by category, OTHER_THREADS and UNATTRIBUTED included. The sampler's own CPU is in none."""
    main = threading.main_thread()
    if threading.current_thread() is not main:
        raise RuntimeError("sampled() measures the main thread and must be entered on it")
    main_clock = time.pthread_getcpuclockid(main.ident)    # type: ignore[arg-type]  # the main thread has an ident
    shares: defaultdict[str, float] = defaultdict(float)
    cache: dict[CodeType, tuple[bool, str | None]] = {}
    stop = threading.Event()
    sampler_cpu = [0.0]

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

    def run() -> None:
        last = time.clock_gettime(main_clock)
        while not stop.wait(INTERVAL_SECONDS):
            frame = sys._current_frames().get(main.ident)   # type: ignore[arg-type]
            now = time.clock_gettime(main_clock)
            if now > last:
                shares[classify(frame)] += now - last
                last = now
        sampler_cpu[0] = time.thread_time()

    process_start, main_start = time.process_time(), time.clock_gettime(main_clock)
    thread = threading.Thread(target=run, name="cpu-shares", daemon=True)
    thread.start()
    try:
        yield shares
    finally:
        stop.set()
        thread.join()
        main_cpu = time.clock_gettime(main_clock) - main_start
        # What the main thread spent after the last sample goes unattributed rather than to a stack it did not run.
        shares[UNATTRIBUTED] += max(0.0, main_cpu - sum(shares.values()))
        shares[OTHER_THREADS] += max(0.0, time.process_time() - process_start - main_cpu - sampler_cpu[0])

