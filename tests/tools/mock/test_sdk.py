"""tools/mock/sdk.py against the installed Pulumi SDK: every internal the mock engine uses exists and behaves as
the mock engine assumes. An SDK upgrade that moves one fails here, naming it."""
from __future__ import annotations

import pulumi
import pytest
from google.protobuf import json_format

from tools.mock import sdk


class _Logger:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def _log(self, message: str, *_: object, **__: object) -> None:
        self.lines.append(message)

    debug = info = warning = warn = error = _log


class _EchoMocks(sdk.Mocks):
    def new_resource(self, args: sdk.MockResourceArgs):
        return (f"{args.name}-id", args.inputs)

    def call(self, args: sdk.MockCallArgs):
        return ({}, None)


def test_the_wire_signatures_are_the_ones_the_sdk_writes():
    secret = sdk.wrap_secret("s3cret")
    assert secret[sdk.SIG_KEY] == sdk.SECRET_SIG and secret["value"] == "s3cret"
    # serialize keeps a secret and an unknown in the form the decoder (tools/mock/program.py _decode) reads.
    wire = json_format.MessageToDict(sdk.serialize({"password": secret, "later": sdk.UNKNOWN, "plain": 1}))
    assert wire["password"][sdk.SIG_KEY] == sdk.SECRET_SIG and wire["password"]["value"] == "s3cret"
    assert wire["later"] == sdk.UNKNOWN and wire["plain"] == 1
    assert len(set(sdk.ASSET_SIGS) | {sdk.SECRET_SIG, sdk.RESOURCE_SIG}) == 4


def test_serialize_writes_what_the_sdks_serializer_writes_for_every_registration_of_a_run(hk_recording):
    """The mock engine's direct serializer against the SDK's, on a sample of every shape and on the outputs the
    engine model returns for each resource of hk-prod (the secrets, unknowns and nested values a real run has)."""
    from tools.mock.program import _to_rpc

    sample = {"top-none": None, "nested": {"none": None, "int": 1, "list": [None, 1, True, "u", {"q": None}]},
              "float": 2.5, "later": sdk.UNKNOWN, "secret": sdk.wrap_secret({"k": None, "v": "x"}), "empty": {},
              "none-list": []}
    assert sdk.serialize(sample) == sdk.serialize_with_sdk(sample)
    assert len(hk_recording.state) > 300
    for urn, entry in hk_recording.state.items():
        outputs = _to_rpc(entry.outputs)
        assert sdk.serialize(outputs) == sdk.serialize_with_sdk(outputs), urn


def test_a_registration_record_and_response_carry_urn_id_and_outputs():
    record = sdk.ResourceRegistration("urn:x", "id-1", {"a": 1})
    assert (record.urn, record.id, record.state) == ("urn:x", "id-1", {"a": 1})
    response = sdk.register_response("urn:x", "id-1", sdk.serialize({"a": 1}))
    assert (response.urn, response.id) == ("urn:x", "id-1")
    assert json_format.MessageToDict(response.object) == {"a": 1}
    assert sdk.register_response("urn:stack").urn == "urn:stack"


def test_the_mock_monitor_offers_what_the_recording_monitor_overrides_and_calls():
    for name in ("RegisterResource", "make_urn", "resources"):
        assert hasattr(sdk.MockMonitor(_EchoMocks()), name), name
    assert callable(sdk.Mocks.new_resource) and callable(sdk.Mocks.call)


def test_config_mocks_a_run_and_the_root_stack_outputs():
    sdk.set_config({"proj:greeting": "hello", "proj:token": "t0ken"}, ["proj:token"])
    assert pulumi.Config("proj").get("greeting") == "hello"
    assert pulumi.Config("proj").get_secret("token") is not None
    mocks = _EchoMocks()
    sdk.set_mocks(mocks, project="proj", stack="dev", preview=False, monitor=sdk.MockMonitor(mocks), logger=_Logger())

    async def program() -> None:
        pulumi.export("answer", 42)
        pulumi.export("hidden", pulumi.Output.secret("x"))
        exported = sdk.root_stack_outputs()
        assert set(exported) == {"answer", "hidden"}
        assert await sdk.output_state(exported["hidden"]).is_secret()
        assert await sdk.output_state(exported["answer"]).future() == 42

    try:
        sdk.run(program)
    finally:
        sdk.reset_root_stack()
        sdk.set_config({}, [])
    with pytest.raises(RuntimeError, match="no root stack"):
        sdk.root_stack_outputs()


def test_leaving_source_positions_out_changes_nothing_the_engine_model_records():
    """The tests' runs skip the SDK's stack walk (sdk.source_positions); what the mock engine records is the same, and
    the SDK's own function is back after the run."""
    from pulumi.runtime import resource as sdk_resource

    from tools import render_digest

    original = sdk_resource._get_stack_trace
    runs = [render_digest.record("lab", source_positions=flag) for flag in (True, False)]
    assert sdk_resource._get_stack_trace is original
    with_positions, without = (render_digest.digests(run) for run in runs)
    assert len(with_positions) > 100 and with_positions == without
    # The same steps (their order follows the event loop, which timing moves).
    assert sorted((s.op, s.urn) for s in runs[0].plan.steps) == sorted((s.op, s.urn) for s in runs[1].plan.steps)


def test_the_switch_holds_for_the_run_only_even_when_the_program_raises():
    from pulumi.runtime import resource as sdk_resource

    from tools.mock.program import run_declarations

    original = sdk_resource._get_stack_trace
    seen: list[object] = []

    def declare(fail: bool):
        def program() -> None:
            seen.append(sdk_resource._get_stack_trace)
            if fail:
                raise RuntimeError("the program failed")
        return program

    run_declarations(declare(False), stack="dev", source_positions=True)
    run_declarations(declare(False), stack="dev")
    with pytest.raises(RuntimeError, match="the program failed"):
        run_declarations(declare(True), stack="dev")
    assert seen[0] is original                      # with source positions: the SDK's own walk
    assert seen[1] is not original and seen[2] is not original
    assert len(seen[1]().frames) == 0               # without: no stack walked, an empty trace
    assert sdk_resource._get_stack_trace is original


def test_after_a_failed_run_a_future_nobody_read_is_not_reported_when_collected_and_other_reports_are(caplog):
    """The error of a failed run leaves run_declarations once; a future that carries it and that nobody read reports
    nothing when it is collected later (why: tools/mock/sdk.py NEVER_RETRIEVED). Any other report of the loop still
    reaches asyncio's default handler."""
    import gc
    import logging

    from tools.mock.program import run_declarations

    def program() -> None:
        raise RuntimeError("the program failed")

    with pytest.raises(RuntimeError, match="the program failed"):
        run_declarations(program, stack="dev")
    loop = sdk._ensure_event_loop()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        future = loop.create_future()
        future.set_exception(ValueError("set, never read"))
        del future
        gc.collect()
        assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
        loop.call_exception_handler({"message": "a callback failed", "exception": RuntimeError("boom")})
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == ["a callback failed"]
