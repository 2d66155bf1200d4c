"""tools/cpu_shares.py: each sample goes to the nearest frame with a category, a module being loaded to imports,
the CPU of other threads to its own category (and only theirs), a waiting main thread weighs nothing, nothing is
lost or counted twice, and the process's handler and timer are put back.

The timer ticks less often on a loaded machine (its docstring), so the work below goes on until enough samples are
taken, and shares are compared with the CPU the samples cover (the tail after the last one is unattributed)."""
from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
import time

import pytest

from tools import cpu_shares

BUSY_SECONDS = 0.3
ENOUGH = 40                      # samples; the work goes on until there are as many


def _code(filename: str, source: str) -> dict:
    """Functions compiled as if from `filename`, as the sampler sees a module's code."""
    scope: dict = {"time": time}
    exec(compile(source, filename, "exec"), scope)
    return scope


LIBRARY = _code("/lib/somewhere/helper.py", """
def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
""")
OURS = _code("/ours/app.py", """
def work(burn, more):
    while more():
        burn(0.01)

def call(other, burn, more):
    other(burn, more)
""")
THEIRS = _code("/theirs/sdk.py", """
def work(burn, more):
    while more():
        burn(0.01)
""")
CATEGORIES = cpu_shares.by_path([("/ours/", "ours"), ("/theirs/", "theirs")])


def _more(shares: cpu_shares.Shares):
    """Go on for BUSY_SECONDS of CPU, and then until ENOUGH samples are taken."""
    end = time.thread_time() + BUSY_SECONDS
    return lambda: shares.samples < ENOUGH or time.thread_time() < end


def _sampled_fraction(shares: cpu_shares.Shares, name: str) -> float:
    covered = sum(v for k, v in shares.seconds.items() if k not in (cpu_shares.OTHER_THREADS, cpu_shares.UNATTRIBUTED))
    return shares.seconds.get(name, 0.0) / covered


def test_by_path_takes_the_first_prefix_a_file_starts_with():
    first = cpu_shares.by_path([("/a/b/", "inner"), ("/a/", "outer")])
    assert first(OURS["work"].__code__) is None
    assert [first(compile("", name, "exec")) for name in ("/a/b/x.py", "/a/x.py", "/ab/x.py")] == \
        ["inner", "outer", None]


def test_a_library_the_code_calls_is_the_codes_and_a_category_nearer_the_leaf_wins():
    with cpu_shares.sampled(CATEGORIES) as ours:
        OURS["work"](LIBRARY["burn"], _more(ours))
    with cpu_shares.sampled(CATEGORIES) as theirs:
        OURS["call"](THEIRS["work"], LIBRARY["burn"], _more(theirs))
    assert _sampled_fraction(ours, "ours") >= 0.9 and "theirs" not in ours.seconds, ours
    assert _sampled_fraction(theirs, "theirs") >= 0.9 and _sampled_fraction(theirs, "ours") < 0.1, theirs
    # All of it the main thread's: none in the other threads' share, which holds neither its CPU nor the sampler's.
    assert ours.seconds[cpu_shares.OTHER_THREADS] < 0.05 * BUSY_SECONDS, ours


def _slow_module(directory, name: str) -> None:
    """A module whose code runs until the sampler in `probe_for_cpu_shares.shares` has taken enough samples."""
    (directory / "probe_for_cpu_shares.py").write_text("shares = None\n")
    (directory / f"{name}.py").write_text(
        "import time\nimport probe_for_cpu_shares as probe\nend = time.thread_time() + 0.3\n"
        f"while probe.shares.samples < {ENOUGH} or time.thread_time() < end:\n    pass\nX = 1\n")


def test_a_module_being_loaded_is_imports_whoever_runs_it(tmp_path, monkeypatch):
    _slow_module(tmp_path, "slow_module_for_cpu_shares")
    monkeypatch.syspath_prepend(str(tmp_path))
    import probe_for_cpu_shares as probe
    categories = cpu_shares.by_path([(f"{tmp_path}/", "ours")])
    with cpu_shares.sampled(categories) as shares:
        probe.shares = shares
        import slow_module_for_cpu_shares  # noqa: F401
    for name in ("slow_module_for_cpu_shares", "probe_for_cpu_shares"):
        sys.modules.pop(name)
    assert _sampled_fraction(shares, cpu_shares.IMPORTS) >= 0.9 and "ours" not in shares.seconds, shares


def test_a_lazily_loaded_module_is_imports_when_its_first_use_loads_it(tmp_path, monkeypatch):
    """As Pulumi's provider packages load their submodules (pulumi/_utils.py _LazyModule, after importlib.util's
    LazyLoader): the module's code runs at its first attribute access, through exec_module, not _find_and_load."""
    _slow_module(tmp_path, "lazy_module_for_cpu_shares")
    monkeypatch.syspath_prepend(str(tmp_path))
    import probe_for_cpu_shares as probe
    spec = importlib.util.spec_from_file_location("lazy_module_for_cpu_shares", tmp_path / "lazy_module_for_cpu_shares.py")
    assert spec is not None and spec.loader is not None
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)                       # nothing runs yet
    categories = cpu_shares.by_path([(f"{tmp_path}/", "ours")])
    with cpu_shares.sampled(categories) as shares:
        probe.shares = shares
        assert module.X == 1
    sys.modules.pop("probe_for_cpu_shares")
    assert _sampled_fraction(shares, cpu_shares.IMPORTS) >= 0.9 and "ours" not in shares.seconds, shares


def test_importing_a_name_from_a_loaded_module_is_the_callers_work():
    """`from x import y` inside a function, as the SDK does per resource, passes through importlib's
    _handle_fromlist: that is not a module being loaded."""
    code = _code("/ours/fromlist.py", """
def work(more):
    while more():
        from json import loads  # noqa: F401  (a package: CPython calls _handle_fromlist for it)
""")
    with cpu_shares.sampled(CATEGORIES) as shares:
        code["work"](_more(shares))
    assert _sampled_fraction(shares, "ours") >= 0.9 and cpu_shares.IMPORTS not in shares.seconds, shares


def test_a_file_reached_through_a_symbolic_link_is_in_its_real_directory(tmp_path):
    """A virtualenv or a checkout behind a link: Python names its files by the linked path, the prefixes may be real."""
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    through_link = compile("", str(tmp_path / "link" / "module.py"), "exec")
    assert cpu_shares.by_path([(f"{tmp_path / 'real'}/", "real")])(through_link) == "real"
    assert cpu_shares.by_path([(f"{tmp_path / 'link'}/", "link")])(compile("", str(tmp_path / "real" / "m.py"), "exec")) \
        == "link"


def test_other_threads_cpu_is_their_own_and_a_waiting_main_thread_weighs_nothing():
    worker = threading.Thread(target=LIBRARY["burn"], args=(BUSY_SECONDS,))
    with cpu_shares.sampled(CATEGORIES) as shares:
        worker.start()
        worker.join()        # the main thread waits: its stack is OURS-free and costs no CPU
    assert shares.seconds[cpu_shares.OTHER_THREADS] >= 0.8 * BUSY_SECONDS, shares
    assert sum(v for k, v in shares.seconds.items() if k != cpu_shares.OTHER_THREADS) < 0.2 * BUSY_SECONDS, shares


def test_a_sample_weighs_the_main_threads_cpu_not_the_tick():
    """Ticks earned by another thread interrupt the main thread's waits: each such sample holds what little the main
    thread spent, not a tick's worth."""
    worker = threading.Thread(target=LIBRARY["burn"], args=(BUSY_SECONDS,))
    poll = _code("/ours/poll.py", """
def wait(alive):
    while alive():
        time.sleep(0.0005)
""")
    start = time.thread_time()
    with cpu_shares.sampled(CATEGORIES) as shares:
        worker.start()
        poll["wait"](worker.is_alive)
    main = time.thread_time() - start
    worker.join()
    work = sum(v for k, v in shares.seconds.items() if k != cpu_shares.OTHER_THREADS)
    assert shares.samples > 10 and work + shares.sampler_seconds == pytest.approx(main, abs=0.002), (main, shares)


def test_the_shares_add_up_to_the_main_threads_cpu_without_the_samplers_own():
    """A sampler slow to classify each new frame (5 ms of CPU each, about 0.1 s for pytest's stack, so that ticks fall
    inside a sample too): the main thread's CPU holds that time, the shares hold all of the rest and nothing else."""
    calls = []

    def slow(code):
        calls.append(code)
        LIBRARY["burn"](0.005)
        return CATEGORIES(code)
    start = time.thread_time()
    with cpu_shares.sampled(slow) as shares:
        OURS["work"](LIBRARY["burn"], _more(shares))
    main = time.thread_time() - start
    classifying = 0.005 * len(calls)
    work = sum(v for k, v in shares.seconds.items() if k != cpu_shares.OTHER_THREADS)
    assert classifying > 0.05 and min(shares.seconds.values()) >= 0, shares
    assert 0.9 * classifying <= main - work <= classifying + 0.02, (main, work, classifying, shares)
    assert work + shares.sampler_seconds == pytest.approx(main, abs=0.002), (main, shares)


def test_what_the_main_thread_spends_after_the_last_sample_is_unattributed_not_lost():
    start = time.thread_time()
    with cpu_shares.sampled(CATEGORIES) as shares:
        OURS["work"](LIBRARY["burn"], _more(shares))
        signal.setitimer(signal.ITIMER_PROF, 0)          # no sample after this: 50 ms of tail
        LIBRARY["burn"](0.05)
    main = time.thread_time() - start
    assert shares.seconds[cpu_shares.UNATTRIBUTED] >= 0.05, shares
    work = sum(v for k, v in shares.seconds.items() if k != cpu_shares.OTHER_THREADS)
    assert work + shares.sampler_seconds == pytest.approx(main, abs=0.002), (main, shares)


def test_the_processs_handler_and_timer_are_put_back():
    def sentinel(signum, frame):
        pass
    assert signal.getsignal(signal.SIGPROF) is signal.SIG_DFL and signal.getitimer(signal.ITIMER_PROF) == (0, 0)
    with cpu_shares.sampled(CATEGORIES):
        assert signal.getsignal(signal.SIGPROF) is not signal.SIG_DFL
    assert signal.getsignal(signal.SIGPROF) is signal.SIG_DFL and signal.getitimer(signal.ITIMER_PROF) == (0, 0)
    signal.signal(signal.SIGPROF, sentinel)
    signal.setitimer(signal.ITIMER_PROF, 100, 100)
    try:
        with cpu_shares.sampled(CATEGORIES):
            pass
        assert signal.getsignal(signal.SIGPROF) is sentinel
        remaining, interval = signal.getitimer(signal.ITIMER_PROF)
        assert interval == 100 and 99 < remaining <= 100.1          # rounded up to the kernel's tick
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)


def test_it_must_be_entered_on_the_main_thread():
    errors: list[BaseException] = []

    def enter() -> None:
        try:
            with cpu_shares.sampled(CATEGORIES):
                pass
        except RuntimeError as error:
            errors.append(error)
    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "main thread" in str(errors[0])
