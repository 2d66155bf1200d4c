"""Runs __main__.py under Pulumi's mock engine, as the CLI would, and records every resource it declares.

The recording keeps what a real engine would see: type, name, parent, dependencies, inputs with secrets
marked, options (protect, deleteBeforeReplace, ignoreChanges, aliases) and the stack outputs. Both the offline synth
tool and the tests use it, so what the tests check is what synth shows.
"""
from __future__ import annotations

import copy
import hashlib
import json
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import pulumi
from google.protobuf import json_format
from pulumi.runtime import config as runtime_config
from pulumi.runtime import mocks, rpc
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from config.loader import PROJECT, SECRET_KEYS, RawConfig

ROOT = Path(__file__).resolve().parent.parent


class Secret:
    """A value the program declared secret; printed only as [secret]."""

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return "Secret([secret])"


class Unknown:
    """A value not known until the resource it comes from is created (preview)."""

    def __repr__(self) -> str:
        return "Unknown"


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        sig = value.get(rpc._special_sig_key)
        if sig == rpc._special_secret_sig:
            return Secret(_decode(value.get("value")))
        if sig == rpc._special_resource_sig:
            return value.get("urn")
        if sig == rpc._special_asset_sig or sig == rpc._special_archive_sig:
            return {k: v for k, v in value.items() if k != rpc._special_sig_key}
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if value == rpc.UNKNOWN:
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


@dataclass
class Recording:
    resources: list[Resource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)
    # The program's module globals, for tests that inspect its Python objects (e.g. Output.is_known()).
    program: dict[str, Any] = field(default_factory=dict)

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
    kept = copy.deepcopy(inputs)
    for path in ignore_changes:
        *parents, leaf = path.split(".")
        node: Any = kept
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return kept


def changed_resources(before: Recording, after: Recording) -> set[str]:
    """Names of the resources a second program run adds, removes or declares with other inputs (inputs under
    `ignore_changes` excepted, as in a preview)."""
    def fingerprints(recording: Recording) -> dict[str, str]:
        return {r.urn: json.dumps(without_ignored(r.inputs, r.ignore_changes), default=fingerprint, sort_keys=True)
                for r in recording.resources}

    old, new = fingerprints(before), fingerprints(after)
    return {urn.split("::")[-1] for urn in old.keys() | new.keys() if old.get(urn) != new.get(urn)}


class RecordingMonitor(mocks.MockMonitor):
    """A MockMonitor that also keeps what the program asked for, not only what the mocks returned."""

    def __init__(self, mock: mocks.Mocks, recording: Recording):
        super().__init__(mock)
        self.recording = recording

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        self.recording.resources.append(
            Resource(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                dependencies=list(request.dependencies),
                property_dependencies={k: list(v.urns) for k, v in request.propertyDependencies.items()},
                inputs=_decode(json_format.MessageToDict(request.object)),
                custom=request.custom,
                protect=request.protect,
                delete_before_replace=request.deleteBeforeReplace,
                ignore_changes=list(request.ignoreChanges),
                additional_secret_outputs=list(request.additionalSecretOutputs),
                provider=request.provider,
                aliases=[json_format.MessageToDict(a) for a in request.aliases],
                custom_timeouts={k: v for k, v in json_format.MessageToDict(request.customTimeouts).items() if v},
            )
        )
        return response


# What the commands whose stdout later resources read would print, with obviously fake secrets (the
# token is the example token of the kubeadm docs). Keyed by the end of the command's resource name.
STAND_IN_JOIN_LINE = (
    "kubeadm join 10.30.30.10:6443 --token abcdef.0123456789abcdef "
    "--discovery-token-ca-cert-hash sha256:" + "0" * 64
)
STAND_IN_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster: {certificate-authority-data: RkFLRS1DQQ==, server: 'https://10.30.30.11:6443'}
  name: offline
contexts:
- context: {cluster: offline, user: offline-admin}
  name: offline
current-context: offline
users:
- name: offline-admin
  user: {client-certificate-data: RkFLRS1DRVJU, client-key-data: RkFLRS1LRVk=}
"""
STAND_IN_STDOUT = {"-join-credentials": STAND_IN_JOIN_LINE, "-kubeconfig": STAND_IN_KUBECONFIG}


class OfflineMocks(mocks.Mocks):
    """Provider stand-ins: each resource's outputs are its inputs plus an id, as after a clean create,
    and the stdout of the commands that later resources read (STAND_IN_STDOUT).

    In preview mode nothing is added, so every output not given as an input stays unknown, as in a
    real `pulumi preview` of a new stack.
    """

    def __init__(self, preview: bool):
        self.preview = preview

    def new_resource(self, args: mocks.MockResourceArgs):
        if self.preview:
            return (None, {})
        state = dict(args.inputs)
        if args.typ == "command:remote:Command":
            stdout = next((text for suffix, text in STAND_IN_STDOUT.items() if args.name.endswith(suffix)), "")
            state.setdefault("stdout", stdout)
            state.setdefault("stderr", "")
        return (f"{args.name}-id", state)

    def call(self, args: mocks.MockCallArgs):
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


def placeholder_secrets(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every secret key with a clearly fake value unless overridden."""
    values = {key: f"FAKE-{key}-offline-placeholder" for key in SECRET_KEYS}
    values.update(overrides or {})
    return values


def run_program(
    raw: RawConfig,
    secrets: Mapping[str, str] | None = None,
    stack: str = "hk-prod",
    preview: bool = False,
) -> Recording:
    """Run __main__.py with the given config under the mock engine; return what it declared."""
    secret_values = placeholder_secrets(secrets)
    config = {f"{PROJECT}:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in raw.values.items() if k not in SECRET_KEYS}
    config.update({f"{PROJECT}:{k}": v for k, v in secret_values.items()})
    runtime_config.set_all_config(config, [f"{PROJECT}:{k}" for k in secret_values])
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return run_declarations(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"), stack, preview)


def run_declarations(declare: Callable[[], dict[str, Any] | None], stack: str = "hk-prod", preview: bool = False) -> Recording:
    """Run `declare` (a program, or a few components under test) under the mock engine and record it."""
    recording = Recording()
    monitor = RecordingMonitor(OfflineMocks(preview), recording)
    mocks.set_mocks(OfflineMocks(preview), project=PROJECT, stack=stack, preview=preview,
                    monitor=monitor, logger=_LogCollector(recording))  # type: ignore[arg-type]

    async def program() -> None:
        recording.program = declare() or {}
        # Stack outputs: the mock engine registered the root stack before the program ran, so read
        # what the program exported from the stack itself.
        stack_resource = pulumi.runtime.settings.get_root_resource()
        for key, value in stack_resource.outputs.items():  # type: ignore[union-attr]
            output = pulumi.Output.from_input(value)
            known, secret = await output.is_known(), await output.is_secret()
            resolved = await output.future(with_unknowns=True) if known else None
            recording.outputs[key] = Secret(resolved) if secret else (resolved if known else Unknown())

    try:
        _sync_await(run_pulumi_func(program))
    finally:
        # The root stack resource belongs to this run only; the next run starts a new stack.
        pulumi.runtime.settings.ROOT.set(None)
    return recording
