"""tuning/unknowns.py: the SDK's answers and reads on random values, no cyclic garbage where the SDK leaves some,
the SDK function it replaces pinned, and the program run with it in place and the SDK's back afterwards."""
from __future__ import annotations

import ast
import gc
import hashlib
import inspect
import pathlib
import random
from typing import Any

import pulumi
import pytest
from pulumi.runtime import rpc

from tuning import unknowns


def test_the_sdk_code_relied_on_is_the_one_read():
    source = inspect.getsource(unknowns.REPLACEMENT.sdk)
    assert hashlib.sha256(source.encode()).hexdigest() == unknowns.CONTAINS_UNKNOWNS_SHA256
    # Every caller reads the name from the rpc module when it calls: no module of the SDK imports rpc's function
    # by name (output.py's own contains_unknowns calls rpc.contains_unknowns).
    assert "rpc.contains_unknowns(val)" in inspect.getsource(pulumi.output.contains_unknowns)
    package = pathlib.Path(pulumi.__file__).parent
    imported = [(str(path.relative_to(package)), node.module) for path in package.rglob("*.py")
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("rpc")
                and any(alias.name == "contains_unknowns" for alias in node.names)]
    assert imported == []


class Logged(dict):
    """A dict subclass (as the providers' output types are) that logs each item read."""
    reads: list[Any] = []

    def __getitem__(self, key):
        Logged.reads.append(key)
        return super().__getitem__(key)


def _value(rng: random.Random, depth: int, pool: list) -> Any:
    roll = rng.random()
    if pool and roll < 0.08:
        return rng.choice(pool)                                      # shared, or a cycle back to an ancestor
    if depth == 0 or roll < 0.35:
        # A tuple is not searched (the SDK's looks into dicts and lists only), even with an unknown inside.
        return rng.choice([1, "text", None, 2.5, True, pulumi.UNKNOWN if rng.random() < 0.1 else 0, (1, 2),
                           (1, pulumi.UNKNOWN)])
    container: Any = rng.choice([{}, Logged(), []])
    pool.append(container)
    for index in range(rng.randint(0, 5)):
        item = _value(rng, depth - 1, pool)
        if isinstance(container, list):
            container.append(item)
        else:
            container[f"k{index}"] = item
    return container


@pytest.mark.parametrize("seed", range(200))
def test_same_answers_and_reads_as_the_sdk(seed):
    value = _value(random.Random(seed), 5, [])
    Logged.reads = []
    expected = unknowns.REPLACEMENT.sdk(value)
    sdk_reads, Logged.reads = Logged.reads, []
    assert unknowns.contains_unknowns(value) is expected
    assert Logged.reads == sdk_reads


def _cyclic_garbage(call) -> int:
    gc.collect()
    gc.disable()
    try:
        for _ in range(50):
            call({"a": [1, {"b": 2}], "c": "d"})
        return gc.collect()
    finally:
        gc.enable()


def test_no_cyclic_garbage_where_the_sdk_leaves_some():
    assert _cyclic_garbage(unknowns.REPLACEMENT.sdk) >= 50          # the reason for the module
    assert _cyclic_garbage(unknowns.contains_unknowns) == 0


def test_installed_for_the_program_run_and_the_sdks_back_afterwards(monkeypatch):
    from tools import bench
    calls = []
    ours = unknowns.contains_unknowns
    monkeypatch.setattr(unknowns.REPLACEMENT, "ours", lambda value: (calls.append(1), ours(value))[1])
    recording = bench.run_program(bench.raw(bench.generate_stack(3)), stack=bench.CLUSTER)
    assert recording.resources and len(calls) > len(recording.resources)
    assert rpc.contains_unknowns is unknowns.REPLACEMENT.sdk

