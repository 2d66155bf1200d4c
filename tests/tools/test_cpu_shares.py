"""tools/cpu_shares.py: each sample goes to the nearest frame with a category, a module being loaded to imports,
the CPU of other threads to its own category (and only theirs), and a waiting main thread weighs nothing."""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time

from tools import cpu_shares

BUSY_SECONDS = 0.3


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
def work(burn, seconds):
    burn(seconds)

def call(other, burn, seconds):
    other(burn, seconds)
""")
THEIRS = _code("/theirs/sdk.py", """
def work(burn, seconds):
    burn(seconds)
""")
CATEGORIES = cpu_shares.by_path([("/ours/", "ours"), ("/theirs/", "theirs")])


def test_by_path_takes_the_first_prefix_a_file_starts_with():
    first = cpu_shares.by_path([("/a/b/", "inner"), ("/a/", "outer")])
    assert first(OURS["work"].__code__) is None
    assert [first(compile("", name, "exec")) for name in ("/a/b/x.py", "/a/x.py", "/ab/x.py")] == \
        ["inner", "outer", None]


def test_a_library_the_code_calls_is_the_codes_and_a_category_nearer_the_leaf_wins():
    with cpu_shares.sampled(CATEGORIES) as ours:
        OURS["work"](LIBRARY["burn"], BUSY_SECONDS)
    with cpu_shares.sampled(CATEGORIES) as theirs:
        OURS["call"](THEIRS["work"], LIBRARY["burn"], BUSY_SECONDS)
    assert ours["ours"] >= 0.8 * BUSY_SECONDS and "theirs" not in ours, ours
    assert theirs["theirs"] >= 0.8 * BUSY_SECONDS and theirs.get("ours", 0) < 0.1 * BUSY_SECONDS, theirs
    # All of it the main thread's: none in the other threads' share, which holds neither its CPU nor the sampler's.
    assert ours[cpu_shares.OTHER_THREADS] < 0.05 * BUSY_SECONDS, ours


def test_a_module_being_loaded_is_imports_whoever_runs_it(tmp_path, monkeypatch):
    (tmp_path / "slow_module_for_cpu_shares.py").write_text(
        "import time\nend = time.thread_time() + 0.3\nwhile time.thread_time() < end:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    categories = cpu_shares.by_path([(str(tmp_path), "ours")])
    with cpu_shares.sampled(categories) as shares:
        import slow_module_for_cpu_shares  # noqa: F401
    sys.modules.pop("slow_module_for_cpu_shares")
    assert shares[cpu_shares.IMPORTS] >= 0.8 * BUSY_SECONDS and "ours" not in shares, shares


def test_a_lazily_loaded_module_is_imports_when_its_first_use_loads_it(tmp_path):
    """As Pulumi's provider packages load their submodules (pulumi/_utils.py _LazyModule, after importlib.util's
    LazyLoader): the module's code runs at its first attribute access, through exec_module, not _find_and_load."""
    path = tmp_path / "lazy_module_for_cpu_shares.py"
    path.write_text("import time\nend = time.thread_time() + 0.3\nwhile time.thread_time() < end:\n    pass\nX = 1\n")
    spec = importlib.util.spec_from_file_location("lazy_module_for_cpu_shares", path)
    assert spec is not None and spec.loader is not None
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)                       # nothing runs yet
    categories = cpu_shares.by_path([(f"{tmp_path}/", "ours")])
    with cpu_shares.sampled(categories) as shares:
        assert module.X == 1
    assert shares[cpu_shares.IMPORTS] >= 0.8 * BUSY_SECONDS and "ours" not in shares, shares


def test_importing_a_name_from_a_loaded_module_is_the_callers_work():
    """`from x import y` inside a function, as the SDK does per resource, passes through importlib's
    _handle_fromlist: that is not a module being loaded."""
    code = _code("/ours/fromlist.py", """
def work(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        from json import loads  # noqa: F401  (a package: CPython calls _handle_fromlist for it)
""")
    with cpu_shares.sampled(CATEGORIES) as shares:
        code["work"](BUSY_SECONDS)
    assert shares["ours"] >= 0.8 * BUSY_SECONDS and cpu_shares.IMPORTS not in shares, shares


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
    assert shares[cpu_shares.OTHER_THREADS] >= 0.8 * BUSY_SECONDS, shares
    assert sum(v for k, v in shares.items() if k != cpu_shares.OTHER_THREADS) < 0.2 * BUSY_SECONDS, shares


def test_the_samplers_own_cpu_is_in_no_share():
    """A main thread that sleeps: the sampler wakes every millisecond meanwhile, and none of that is anybody's."""
    with cpu_shares.sampled(CATEGORIES) as shares:
        time.sleep(BUSY_SECONDS)
    assert sum(shares.values()) < 0.003, shares


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
        OURS["work"](LIBRARY["burn"], BUSY_SECONDS)
    main = time.thread_time() - start
    classifying = 0.005 * len(calls)
    work = sum(v for k, v in shares.items() if k != cpu_shares.OTHER_THREADS)
    assert classifying > 0.05 and min(shares.values()) >= 0, shares
    assert 0.9 * classifying <= main - work <= classifying + 0.02, (main, work, classifying, shares)


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
