"""Runs __main__.py under Pulumi's mock engine, as the CLI would, and records every resource it declares.

The recording keeps what a real engine would see: type, name, parent, dependencies, inputs with secrets
marked, options (protect, deleteBeforeReplace, ignoreChanges, retainOnDelete, replaceOnChanges, aliases)
and the stack outputs. Each registration goes through tools/mock/engine.py against the state of an earlier run
(none: a new stack), so ids, outputs, replacements and deletes are what the engine and the providers
would produce (tools/mock/providers.py), and the recording carries the plan. Both the offline synth tool and
the tests use it, so what the tests check is what synth shows.
"""
from __future__ import annotations

import base64
import copy
import hashlib
import json
import runpy
import sys
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.loader import PROJECT, SECRET_KEYS, RawConfig
from config.secret_keys import OPTIONAL_SECRET_KEYS, SECRETS
from tools.mock import engine, sdk
from tools.mock.engine import (  # noqa: F401
    KEY_RING_SUFFIX,
    STAND_IN_JOIN_LINE,
    STAND_IN_KUBECONFIG,
    STAND_IN_STDOUT,
    Deployment,
    Entry,
    PendingCreate,
    Plan,
    Registration,
    Secret,
    Unknown,
)

ROOT = Path(__file__).resolve().parents[2]


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        sig = value.get(sdk.SIG_KEY)
        if sig == sdk.SECRET_SIG:
            return Secret(_decode(value.get("value")))
        if sig == sdk.RESOURCE_SIG:
            return value.get("urn")
        if sig in sdk.ASSET_SIGS:
            return {k: v for k, v in value.items() if k != sdk.SIG_KEY}
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if value == sdk.UNKNOWN:
        return Unknown()
    return value


@dataclass
class Resource:
    urn: str
    type: str
    name: str
    parent: str
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    inputs: dict[str, Any]
    custom: bool
    protect: bool
    delete_before_replace: bool
    ignore_changes: list[str]
    additional_secret_outputs: list[str]
    provider: str
    aliases: list[dict[str, Any]] = field(default_factory=list)
    custom_timeouts: dict[str, str] = field(default_factory=dict)   # create/update/delete, as given
    retain_on_delete: bool = False
    replace_on_changes: list[str] = field(default_factory=list)
    remote: bool = False        # a provider's component (a multi-language one, such as kubernetes' helm.sh/v4 Chart)
    # What the engine made of it (tools/mock/engine.py): its id (None while unknown, in a preview) and its step.
    id: str | None = None
    op: str = "create"


@dataclass
class Recording:
    resources: list[Resource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)
    # The program's module globals, for tests that inspect its Python objects (e.g. Output.is_known()).
    program: dict[str, Any] = field(default_factory=dict)
    # The engine's plan for this run (every step, deletes included) and the state the run leaves.
    plan: Plan = field(default_factory=Plan)
    state: dict[str, Entry] = field(default_factory=dict)
    # Objects that exist outside the state after this run (an interrupted create's), by resource name.
    outside: set[str] = field(default_factory=set)

    def by_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_]

    def named(self, name: str) -> Resource:
        matches = [r for r in self.resources if r.name == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} resources named {name!r}")
        return matches[0]

    def by_urn(self) -> dict[str, Resource]:
        return {r.urn: r for r in self.resources}

    def waits_for(self, urn: str) -> set[str]:
        """Every resource `urn` waits for, directly or through others (its dependency closure)."""
        by_urn = self.by_urn()
        seen: set[str] = set()
        pending = list(by_urn[urn].dependencies)
        while pending:
            dep = pending.pop()
            if dep not in seen and dep in by_urn:
                seen.add(dep)
                pending.extend(by_urn[dep].dependencies)
        return seen


def fingerprint(value: Any) -> str:
    """A comparable stand-in for a value json cannot hold; a secret compares by a digest, never in clear."""
    if isinstance(value, Secret):
        digest = hashlib.sha256(json.dumps(value.value, default=fingerprint, sort_keys=True).encode()).hexdigest()
        return f"secret:{digest}"
    return repr(value)


def without_ignored(inputs: dict[str, Any], ignore_changes: list[str]) -> dict[str, Any]:
    """The inputs a preview compares: those under an `ignore_changes` path are left out, as the engine does."""
    return engine.apply_ignore_changes(inputs, {}, ignore_changes)


def changed_resources(before: Recording, after: Recording) -> set[str]:
    """Names of the resources a second program run adds, removes or declares with other inputs (inputs under
    `ignore_changes` excepted, as in a preview)."""
    def fingerprints(recording: Recording) -> dict[str, str]:
        return {r.urn: json.dumps(without_ignored(r.inputs, r.ignore_changes), default=fingerprint, sort_keys=True)
                for r in recording.resources}

    old, new = fingerprints(before), fingerprints(after)
    return {urn.split("::")[-1] for urn in old.keys() | new.keys() if old.get(urn) != new.get(urn)}


def _to_rpc(value: Any) -> Any:
    """A decoded value (Secret and Unknown wrappers) as the SDK reads it from the engine."""
    if isinstance(value, Secret):
        return sdk.wrap_secret(_to_rpc(value.value))
    if isinstance(value, Unknown):
        return sdk.UNKNOWN
    if isinstance(value, dict):
        return {k: _to_rpc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_rpc(v) for v in value]
    return value


class RecordingMonitor(sdk.MockMonitor):
    """A MockMonitor whose registrations go through the engine model (tools/mock/engine.py) and are recorded with
    everything the program asked for, not only what the provider returned."""

    def __init__(self, recording: Recording, deployment: Deployment):
        super().__init__(_NoMocks())
        self.recording = recording
        self.deployment = deployment

    def _alias_urns(self, request) -> list[str]:
        urns = list(request.aliasURNs)
        for alias in request.aliases:
            if alias.HasField("urn"):
                urns.append(alias.urn)
            elif alias.HasField("spec"):
                spec = alias.spec
                parent = "" if spec.noParent else (spec.parentUrn or request.parent)
                urns.append(self.make_urn(parent, spec.type or request.type, spec.name or request.name))
        return urns

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return sdk.register_response(urn)
        sdk.ensure_event_loop()
        inputs = _decode(sdk.message_to_dict(request.object))
        property_dependencies = {k: list(v.urns) for k, v in request.propertyDependencies.items()}
        entry = self.deployment.register(Registration(
            urn=urn, type=request.type, name=request.name, parent=request.parent, custom=request.custom,
            inputs=inputs, dependencies=list(request.dependencies), property_dependencies=property_dependencies,
            provider=request.provider, protect=request.protect, retain_on_delete=request.retainOnDelete,
            delete_before_replace=request.deleteBeforeReplace, ignore_changes=list(request.ignoreChanges),
            replace_on_changes=list(request.replaceOnChanges), aliases=self._alias_urns(request)))
        self.recording.resources.append(
            Resource(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                dependencies=list(request.dependencies),
                property_dependencies=property_dependencies,
                inputs=inputs,
                custom=request.custom,
                protect=request.protect,
                delete_before_replace=request.deleteBeforeReplace,
                ignore_changes=list(request.ignoreChanges),
                additional_secret_outputs=list(request.additionalSecretOutputs),
                provider=request.provider,
                aliases=[sdk.message_to_dict(a) for a in request.aliases],
                custom_timeouts={k: v for k, v in sdk.message_to_dict(request.customTimeouts).items() if v},
                retain_on_delete=request.retainOnDelete,
                replace_on_changes=list(request.replaceOnChanges),
                remote=request.remote,
                id=entry.id,
                op=self.deployment.plan.steps[-1].op,
            )
        )
        outputs = _to_rpc(entry.outputs)
        self.resources[urn] = sdk.ResourceRegistration(urn, entry.id or "", outputs)
        return sdk.register_response(urn, entry.id or "", sdk.serialize(outputs))


class _NoMocks(sdk.Mocks):
    """Registrations never reach it (RecordingMonitor answers them); invokes return nothing."""

    def new_resource(self, args: sdk.MockResourceArgs):  # pragma: no cover - never called
        raise AssertionError("registrations go through RecordingMonitor")

    def call(self, args: sdk.MockCallArgs):
        return ({}, None)


class _LogCollector:
    def __init__(self, recording: Recording):
        self.recording = recording

    def _add(self, severity: str, message: str, *_: Any, **__: Any) -> None:
        self.recording.logs.append((severity, message))

    def debug(self, message, *a, **k):
        pass

    def info(self, message, *a, **k):
        self._add("info", message)

    def warning(self, message, *a, **k):
        self._add("warning", message)

    def error(self, message, *a, **k):
        self._add("error", message)


def carries(value: Any, text: str) -> bool:
    """Whether a string inside `value` (secrets unwrapped, dicts and lists walked) contains `text`."""
    value = getattr(value, "value", value)
    if isinstance(value, dict):
        return any(carries(item, text) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(carries(item, text) for item in value)
    return isinstance(value, str) and text in value


def placeholder(key: str, text: str | None = None) -> str:
    """An obviously fake value of the secret `key`, in the form its kind must have (config.secret_keys format_problem):
    `text` (default FAKE-<key>-offline-placeholder), inside a token's, key's or certificate's shape where it has one."""
    text = text or f"FAKE-{key}-offline-placeholder"
    kind = SECRETS[key].kind
    if kind == "proxmox-token":
        return f"{text}@pve!offline=00000000-0000-4000-8000-000000000000"
    if kind == "ssh-private-key":
        def field(value: bytes) -> bytes:
            return len(value).to_bytes(4, "big") + value
        body = b"openssh-key-v1\0" + field(b"none") + field(b"none") + field(b"") + (1).to_bytes(4, "big") + field(text.encode())
        return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{base64.b64encode(body).decode()}\n-----END OPENSSH PRIVATE KEY-----\n"
    if kind == "pem-certificate":
        return f"-----BEGIN CERTIFICATE-----\n{text}\n-----END CERTIFICATE-----\n"
    if kind == "pem-private-key":
        return f"-----BEGIN PRIVATE KEY-----\n{text}\n-----END PRIVATE KEY-----\n"
    return text


def placeholder_secrets(overrides: Mapping[str, str] | None = None,
                        keys: Collection[str] | None = None) -> dict[str, str]:
    """A clearly fake value for each secret key the stack sets: `keys`, or every one but those set only for an
    operation (a rotation); overrides given explicitly are set too."""
    chosen = keys if keys is not None else [key for key in SECRET_KEYS if key not in OPTIONAL_SECRET_KEYS]
    values = {key: placeholder(key) for key in chosen}
    values.update(overrides or {})
    return values


def dynamic_checks() -> dict[str, Callable[[dict, dict], list[str]]]:
    """The checks of this program's dynamic providers, which the engine runs on every registration (a
    preview refuses the run when one fails)."""
    from components.guards import DYNAMIC_CHECKS
    return DYNAMIC_CHECKS


# Runs of a new stack kept for reuse, by their inputs, the most recently used last (reuse_new_stack_runs).
_NEW_STACK_RUNS: OrderedDict[str, Recording] = OrderedDict()
_REUSE = False
# How many: a kept recording holds some 15 to 20 MB for hk-prod's 7 nodes, its run's objects included (through its module
# globals, Recording.program). Eight catch two thirds of the repeats `make test` makes in one process.
NEW_STACK_RUNS_KEPT = 8


def reuse_new_stack_runs(enabled: bool) -> None:
    """Whether run_program answers a run of a new stack it has made recently, with the same inputs, with a copy of
    that run's recording instead of running the program again. The program reads nothing but its configuration, its
    secrets and its code (a run of a new stack has no state, no fault and no target), so the same inputs declare the
    same resources; only the order of the engine's steps, which follows the event loop, may differ between two runs,
    as it does between any two. For a process that runs the program many times with unchanged code (the tests, where
    tests/conftest.py turns it off for a test that patches anything); each copy is the caller's own, its module
    globals (Recording.program) shared. Off by default."""
    global _REUSE
    _REUSE = enabled


def _copy(recording: Recording) -> Recording:
    return copy.deepcopy(recording, {id(recording.program): recording.program})


def run_program(
    raw: RawConfig,
    secrets: Mapping[str, str] | None = None,
    stack: str = "hk-prod",
    preview: bool = False,
    state: Mapping[str, Entry] | None = None,
    replace: tuple[str, ...] = (),
    fail: tuple[str, ...] = (),
    secret_keys: Collection[str] | None = None,
    gone: tuple[str, ...] = (),
    interrupt: tuple[str, ...] = (),
    pending: Sequence[PendingCreate] = (),
    outside: Collection[str] = (),
    fail_delete: tuple[str, ...] = (),
    target: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    source_positions: bool = False,
) -> Recording:
    """Run __main__.py with the given config under the mock engine; return what it declared.

    state: what an earlier run left (Recording.state; None for a new stack). replace: resource names given
    with `--replace`. fail: names of resources whose step (create, update, replacement or delete) fails in
    this run; what depends on a failed step is skipped, and the state keeps the old resources. gone: names of
    resources whose object was deleted outside Pulumi (their delete fails where the provider's does). interrupt: names
    whose create is under way when the CLI is interrupted (the run stops there; Recording.pending and .outside say
    what it left); pending, outside: what an earlier run left so. fail_delete: names whose delete fails inside a
    delete-before-replace cascade (`fail` fails the replacement's create). target, exclude: names given with
    `--target` / `--exclude`. source_positions: run_declarations. secret_keys: the
    secrets the stack sets (None: every one), as `pulumi config set --secret` would have; reading another fails
    as pulumi.Config.require_secret does."""
    key = None
    if _REUSE and state is None and not any((replace, fail, gone, interrupt, pending, outside, fail_delete, target,
                                             exclude)):
        key = json.dumps([raw.values, sorted(raw.secure_keys), secrets, None if secret_keys is None else
                          sorted(secret_keys), stack, preview, source_positions], sort_keys=True, default=repr)
        if key in _NEW_STACK_RUNS:
            _NEW_STACK_RUNS.move_to_end(key)
            return _copy(_NEW_STACK_RUNS[key])
    secret_values = placeholder_secrets(secrets, secret_keys)
    config = {f"{PROJECT}:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in raw.values.items() if k not in SECRET_KEYS}
    config.update({f"{PROJECT}:{k}": v for k, v in secret_values.items()})
    sdk.set_config(config, [f"{PROJECT}:{k}" for k in secret_values])
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    recording = run_declarations(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"), stack,
                                 preview, state=state, replace=replace, fail=fail, gone=gone, interrupt=interrupt,
                                 pending=pending, outside=outside, fail_delete=fail_delete, target=target,
                                 exclude=exclude, source_positions=source_positions)
    if key is not None:
        _NEW_STACK_RUNS[key] = recording
        while len(_NEW_STACK_RUNS) > NEW_STACK_RUNS_KEPT:
            _NEW_STACK_RUNS.popitem(last=False)
        return _copy(recording)
    return recording


def run_declarations(declare: Callable[[], dict[str, Any] | None], stack: str = "hk-prod", preview: bool = False,
                     state: Mapping[str, Entry] | None = None, replace: tuple[str, ...] = (),
                     fail: tuple[str, ...] = (), gone: tuple[str, ...] = (), interrupt: tuple[str, ...] = (),
                     pending: Sequence[PendingCreate] = (), outside: Collection[str] = (),
                     fail_delete: tuple[str, ...] = (), target: tuple[str, ...] = (),
                     exclude: tuple[str, ...] = (), source_positions: bool = False) -> Recording:
    """Run `declare` (a program, or a few components under test) under the mock engine and record it.
    source_positions: whether the SDK computes each registration's source position, as under the CLI (tools.bench
    measures with it; nothing the mock engine models reads it: tools/mock/sdk.py)."""
    recording = Recording()
    targets = {urn for urn, entry in (state or {}).items() if entry.name in replace}
    deployment = Deployment(state, preview=preview, replace=targets, check=dynamic_checks(), fail=fail, gone=gone,
                            interrupt=interrupt, pending=pending, outside=outside, fail_delete=fail_delete,
                            target=target, exclude=exclude)
    monitor = RecordingMonitor(recording, deployment)
    sdk.set_mocks(_NoMocks(), project=PROJECT, stack=stack, preview=preview, monitor=monitor,
                  logger=_LogCollector(recording))

    async def program() -> None:
        recording.program = declare() or {}
        # Stack outputs: the mock engine registered the root stack before the program ran, so read
        # what the program exported from the stack itself.
        for key, value in sdk.root_stack_outputs().items():
            output = sdk.output_state(value)
            known, secret = await output.is_known(), await output.is_secret()
            resolved = await output.future(with_unknowns=True) if known else None
            recording.outputs[key] = Secret(resolved) if secret else (resolved if known else Unknown())

    sdk.source_positions(source_positions)
    try:
        sdk.run(program)
    except BaseException:
        sdk.cancel_pending()
        raise
    finally:
        sdk.source_positions(True)
        # The root stack resource belongs to this run only; the next run starts a new stack.
        sdk.reset_root_stack()
    recording.plan = deployment.finish()
    recording.state = deployment.state
    recording.outside = set(deployment.outside)
    return recording
