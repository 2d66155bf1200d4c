"""The Pulumi Python SDK internals the mock engine (tools/mock/program.py) and its tests rely on, in one place.

The SDK's public API has no way to record a whole program's registrations against a model of the engine,
so the mock engine uses a few of its internals: the mock monitor and its registration record, the wire
format of secrets, unknowns and resource references, property serialization, the runtime configuration
and the root stack resource. Each is reached only through this module, and tests/tools/mock/test_sdk.py checks every
one against the installed SDK (pulumi==3.272.0, requirements.txt), so an SDK upgrade that moves one breaks
here, in one place, with a test naming it.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import config as _config
from pulumi.runtime import mocks as _mocks
from pulumi.runtime import resource as _resource
from pulumi.runtime import rpc as _rpc
from pulumi.runtime import settings as _settings
from pulumi.runtime.proto import resource_pb2 as _resource_pb2
from pulumi.runtime.stack import run_pulumi_func as _run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from tuning import source_positions as _source_positions

# The wire format of special values (pulumi/sdk/python/lib/pulumi/runtime/rpc.py): an object with the
# signature key is a secret, a resource reference, an asset or an archive; UNKNOWN is a computed value.
SIG_KEY: str = _rpc._special_sig_key
SECRET_SIG: str = _rpc._special_secret_sig
RESOURCE_SIG: str = _rpc._special_resource_sig
ASSET_SIGS: tuple[str, str] = (_rpc._special_asset_sig, _rpc._special_archive_sig)
UNKNOWN: str = _rpc.UNKNOWN

# The mock monitor to extend, the mocks interface, and what they exchange.
MockMonitor = _mocks.MockMonitor
Mocks = _mocks.Mocks
MockResourceArgs = _mocks.MockResourceArgs
MockCallArgs = _mocks.MockCallArgs
ResourceRegistration = _mocks.MockMonitor.ResourceRegistration


def wrap_secret(value: Any) -> Any:
    """A value as the engine sends a secret to the SDK."""
    return _rpc.wrap_rpc_secret(value)


def message_to_dict(message: Any) -> Any:
    """A protobuf message (a registration's object, aliases, timeouts) as plain data."""
    return json_format.MessageToDict(message)


def serialize(outputs: Mapping[str, Any]) -> struct_pb2.Struct:
    """Resource outputs in the engine's wire format (secrets and unknowns kept). The engine model's values are
    plain data, with secrets and unknowns already in their wire form, so the struct is built directly, as the
    SDK's serialize_properties builds it from such data: a top-level None left out, every number a double.
    Going through that asynchronous serializer instead cost a third of the mock engine's time at 300 nodes;
    tests/tools/mock/test_sdk.py compares the two on every registration of a run."""
    struct = struct_pb2.Struct()
    struct.update({key: value for key, value in outputs.items() if value is not None})
    return struct


def serialize_with_sdk(outputs: Mapping[str, Any]) -> struct_pb2.Struct:
    """The same through the SDK's own serializer (what serialize must agree with)."""
    return sync_await(_rpc.serialize_properties(dict(outputs), {}))


def register_response(urn: str, resource_id: str = "", outputs: struct_pb2.Struct | None = None) -> Any:
    """The monitor's answer to a RegisterResource request."""
    if outputs is None:
        return _resource_pb2.RegisterResourceResponse(urn=urn)
    return _resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=outputs)


def ensure_event_loop() -> None:
    """A registration answered on the SDK's thread pool needs an event loop of its own."""
    _mocks._ensure_event_loop()


def set_mocks(mocks: Any, *, project: str, stack: str, preview: bool, monitor: Any, logger: Any) -> None:
    """Point the SDK at a monitor (and a log collector) instead of a real engine."""
    _mocks.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor, logger=logger)


def set_config(values: Mapping[str, str], secret_keys: list[str]) -> None:
    """The stack configuration the program's pulumi.Config reads, as the CLI would pass it."""
    _config.set_all_config(dict(values), secret_keys)


def root_stack_outputs() -> Mapping[str, Any]:
    """What the program exported (pulumi.export) on the root stack resource of the current run."""
    root = _settings.get_root_resource()
    if root is None:
        raise RuntimeError("no root stack resource: the program has not run under set_mocks")
    outputs: Mapping[str, Any] = root.outputs  # type: ignore[attr-defined]  # the Stack component's attribute
    return outputs


def reset_root_stack() -> None:
    """Forget the current run's root stack resource, so the next run starts a new stack."""
    _settings.ROOT.set(None)


def run(program: Callable[[], Awaitable[None]]) -> None:
    """Run an async program to completion under the current mocks, as the CLI's language host would."""
    sync_await(_run_pulumi_func(program))


def cancel_pending() -> None:
    """Cancel what a stopped run left on the SDK's event loop (registrations still in flight or waiting for their
    dependencies). The CLI's process ends with a failed run; the mock engine's goes on to the next run, which
    would otherwise pump those tasks into its own deployment."""
    loop = _ensure_event_loop()
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    # The SDK keeps a failed Output for the end of the run (pulumi/output.py Output._track), in a set that outlives
    # the run: the next run's wait_for_rpcs would raise its error again.
    with _settings.SETTINGS.lock:
        _settings.SETTINGS.outputs.clear()
    loop.set_exception_handler(_unreported_errors_of_failed_runs)


# Why a failed run's futures are not reported when they are collected: a registration that fails sets its error on
# every future of the resource's properties (pulumi/runtime/rpc.py transfer_properties), and on whatever waited for
# them; asyncio reports each such future that nobody read when the garbage collector frees it, with its formatted
# traceback ("Future exception was never retrieved", CPython 3.11 Lib/asyncio/futures.py Future.__del__; the C
# futures do the same). The CLI's language host ends with the failed run, so it never reaches that point. The mock
# engine's process goes on: the error already left run_declarations, and its copies were formatted again, some
# seventeen thousand after a test of malformed secrets, inside whatever later test the collector happened to run in
# (20 to 45 s of it). The loop's other reports still reach its default handler.
NEVER_RETRIEVED = ("Future exception was never retrieved", "Task exception was never retrieved")


def _unreported_errors_of_failed_runs(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    if context.get("message") not in NEVER_RETRIEVED:
        loop.default_exception_handler(context)


# At every registration the SDK walks the Python stack to send the resource's source position to the engine
# (runtime/resource.py: register_resource calls _get_stack_trace, which runs traceback.extract_stack and makes a URI of
# every frame's file). The engine only shows it; nothing the mock engine models reads it, and it was a fifth of a
# test's time. The tests' runs leave it out; tools.bench keeps it, since a real run pays it (through the program's
# equivalent, tuning/source_positions.py, which installs itself only over the SDK's own function, and took it when
# imported above, before any swap here).
_STACK_TRACE = _source_positions.REPLACEMENT.sdk


def _no_stack_trace() -> Any:
    return _resource.source_pb2.StackTrace()


def source_positions(enabled: bool) -> None:
    """Whether registrations carry their source position, as with the CLI (True) or not (False)."""
    _resource._get_stack_trace = _STACK_TRACE if enabled else _no_stack_trace


def sync_await(awaitable: Awaitable[Any]) -> Any:
    """The result of an awaitable, from synchronous code (the SDK's own helper)."""
    return _sync_await(awaitable)


def output_state(value: Any) -> pulumi.Output[Any]:
    """Any exported value as an Output, to ask whether it is known or secret."""
    return pulumi.Output.from_input(value)
