"""tuning/source_positions.py: the SDK's stack trace message at every registration of a program run and in the
corners (a traceback limit, too few constructors, a file name that is empty or relative), the SDK functions it
replaces pinned, and where it is installed."""
from __future__ import annotations

import hashlib
import inspect
import pathlib
import sys

import pytest
from pulumi.runtime import resource as sdk_resource

from tools import bench
from tools.mock import sdk as mock_sdk
from tuning import source_positions


def test_the_sdk_code_relied_on_is_the_one_read():
    source = "".join(inspect.getsource(f) for f in (sdk_resource._get_stack_trace, sdk_resource._get_source_position_for_frame))
    assert hashlib.sha256(source.encode()).hexdigest() == source_positions.STACK_TRACE_SHA256
    # Both registration paths call the module's name when they run.
    assert "stack_trace = _get_stack_trace()" in inspect.getsource(sdk_resource.register_resource)
    assert "stack_trace = _get_stack_trace()" in inspect.getsource(sdk_resource.read_resource)


def _both():
    """Both messages, computed from the same frame (the caller's), serialized."""
    return (source_positions.REPLACEMENT.sdk().SerializeToString(deterministic=True),
            source_positions.stack_trace().SerializeToString(deterministic=True))


class Resource:
    def __init__(self, then):
        self.result = then()


class Custom(Resource):
    def __init__(self, then):
        super().__init__(then)


class Concrete(Custom):
    def __init__(self, then):
        self._internal_init(then)      # the providers' generated classes go through _internal_init

    def _internal_init(self, then):
        super().__init__(then)


def _nested(depth, then):
    return then() if depth == 0 else _nested(depth - 1, then)


@pytest.mark.parametrize("limit", [None, -1, 0, True, *range(1, 12), 30])
@pytest.mark.parametrize("depth", [0, 3, 12])
def test_same_message_as_the_sdk(monkeypatch, limit, depth):
    if limit is None:
        monkeypatch.delattr(sys, "tracebacklimit", raising=False)
    else:
        monkeypatch.setattr(sys, "tracebacklimit", limit, raising=False)
    if limit is not None and limit <= 0:
        # No frame to look at: the SDK's own function answers, as it would (it fails on its unset loop variable).
        with pytest.raises(UnboundLocalError):
            source_positions.REPLACEMENT.sdk()
        with pytest.raises(UnboundLocalError):
            source_positions.stack_trace()
        return
    expected, ours = _nested(depth, lambda: Concrete(_both).result)
    assert ours == expected
    if limit is None:
        assert len(sdk_resource.source_pb2.StackTrace.FromString(ours).frames) > depth


def test_too_few_constructors_and_file_names_without_a_uri():
    assert _both()[0] == _both()[1]                                            # no constructor on the stack
    for filename in ("relative.py", "", "<string>"):
        namespace = {"Concrete": Concrete, "_both": _both}
        exec(compile("def call():\n    return Concrete(_both).result\n", filename, "exec"), namespace)
        expected, ours = namespace["call"]()
        assert ours == expected, filename


def test_a_failure_of_the_moment_is_not_remembered(monkeypatch):
    filename = "/srv/program/transient.py"
    monkeypatch.setattr(source_positions, "_uris", {})

    def interrupted(_self):
        raise RecursionError
    with monkeypatch.context() as patch:
        patch.setattr(pathlib.PurePath, "as_uri", interrupted)
        assert source_positions._uri(filename) is None            # this frame: none, as the SDK's catch gives
    assert source_positions._uri(filename) == "file:///srv/program/transient.py"
    assert source_positions._uri("relative.py") is None and source_positions._uris["relative.py"] is None


def test_same_message_at_every_registration_of_a_program_run(monkeypatch):
    compared = []

    def both():
        expected, ours = _both()
        compared.append(ours == expected)
        return sdk_resource.source_pb2.StackTrace.FromString(expected)

    # The run computes source positions (as under the CLI) through `both`, so install() leaves it in place; the
    # mock engine puts `both` back after the run, and monkeypatch the SDK's own after the test.
    monkeypatch.setattr(mock_sdk, "_STACK_TRACE", both)
    monkeypatch.setattr(sdk_resource, "_get_stack_trace", sdk_resource._get_stack_trace)
    recording = bench.run_program(bench.raw(bench.generate_stack(3)), stack=bench.CLUSTER, source_positions=True)
    assert len(compared) == len(recording.resources) and all(compared)
    assert sdk_resource._get_stack_trace is both


def test_installed_where_the_sdks_function_is_in_place_and_the_sdks_back_afterwards(monkeypatch):
    installed = []
    real_install = source_positions.REPLACEMENT.install

    def install():
        installed.append(real_install())
        return installed[-1]

    # Asking for monkeypatch also keeps these runs from being answered by earlier identical ones (tests/conftest.py).
    monkeypatch.setattr(source_positions.REPLACEMENT, "install", install)
    bench.run_program(bench.raw(bench.generate_stack(3)), stack=bench.CLUSTER, source_positions=True)
    bench.run_program(bench.raw(bench.generate_stack(3)), stack="other", source_positions=False)
    # Under the CLI's function it is installed; under the mock engine's stand-in that computes nothing, it is not.
    assert installed == [True, False]
    assert sdk_resource._get_stack_trace is source_positions.REPLACEMENT.sdk

