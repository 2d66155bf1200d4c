"""tools/cpu_shares.py: each sample goes to the nearest frame with a category, a module being loaded to imports,
the CPU of other threads to its own category, and a waiting main thread weighs nothing."""
from __future__ import annotations

import sys
import threading
import time

import pytest

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
    assert ours["ours"] >= 0.8 * BUSY_SECONDS and ours["theirs"] == 0, ours
    assert theirs["theirs"] >= 0.8 * BUSY_SECONDS and theirs["ours"] < 0.1 * BUSY_SECONDS, theirs


def test_a_module_being_loaded_is_imports_whoever_runs_it(tmp_path, monkeypatch):
    (tmp_path / "slow_module_for_cpu_shares.py").write_text(
        "import time\nend = time.thread_time() + 0.3\nwhile time.thread_time() < end:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    categories = cpu_shares.by_path([(str(tmp_path), "ours")])
    with cpu_shares.sampled(categories) as shares:
        import slow_module_for_cpu_shares  # noqa: F401
    sys.modules.pop("slow_module_for_cpu_shares")
    assert shares[cpu_shares.IMPORTS] >= 0.8 * BUSY_SECONDS and shares["ours"] == 0, shares


def test_other_threads_cpu_is_their_own_and_a_waiting_main_thread_weighs_nothing():
    worker = threading.Thread(target=LIBRARY["burn"], args=(BUSY_SECONDS,))
    with cpu_shares.sampled(CATEGORIES) as shares:
        worker.start()
        worker.join()        # the main thread waits: its stack is OURS-free and costs no CPU
    assert shares[cpu_shares.OTHER_THREADS] >= 0.8 * BUSY_SECONDS, shares
    assert sum(v for k, v in shares.items() if k != cpu_shares.OTHER_THREADS) < 0.2 * BUSY_SECONDS, shares


def test_the_shares_add_up_to_the_main_threads_cpu_without_the_samplers():
    start = time.thread_time()
    with cpu_shares.sampled(CATEGORIES) as shares:
        OURS["work"](LIBRARY["burn"], BUSY_SECONDS)
    main = time.thread_time() - start
    assert sum(v for k, v in shares.items() if k != cpu_shares.OTHER_THREADS) == pytest.approx(main, rel=0.05)


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
