"""Offline synth: renders everything a stack declares without the Pulumi CLI, providers or hardware.

    python -m tools.synth --stack hk-prod --out build/hk-prod
    python -m tools.synth --stack lab --out build/lab            (examples/lab/Pulumi.lab.yaml)
    python -m tools.synth --stack-file path/to/Pulumi.x.yaml --out DIR --secret proxmoxApiToken=...

Writes resources.json, scripts/, manifests/, helm/, graph.mmd and summary.txt (see docs/offline.md). An invalid
stack exits with status 2, its problems on stderr, and nothing written.
"""
from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from config.loader import SECRET_KEYS, SpecError, from_stack_file, load
from config.model import StackSpec
from config.secret_keys import required_secrets
from render.hyperv import script_from_ssh_command
from render.shell import script_from_bash_command
from tools.mock.program import ROOT, Recording, Resource, Secret, Unknown, run_program

COMMAND_TYPE = "command:remote:Command"
SNIPPET_TYPE = "proxmoxve:index/fileLegacy:FileLegacy"
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
# Rendered client-side by the provider into plain objects (no Helm release); synth lists it with the releases.
HELM_CHART_TYPE = "kubernetes:helm.sh/v4:Chart"


def plain(value: Any, secret: Callable[[Secret], str] = lambda _: "[secret]") -> Any:
    """A JSON-able copy with secrets and unknowns replaced by markers."""
    if isinstance(value, Secret):
        return secret(value)
    if isinstance(value, Unknown):
        return "[unknown]"
    if isinstance(value, dict):
        return {k: plain(v, secret) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, secret) for v in value]
    if isinstance(value, float) and value.is_integer():
        # The engine's wire format (protobuf Struct) has only doubles; Kubernetes wants integers back.
        return int(value)
    return value


def secret_marker(key: bytes) -> Callable[[Secret], str]:
    """`[secret:<keyed digest>]`: two synths with the same key show whether a secret changed, and nobody
    without the key can test guesses against the file."""
    def marker(value: Secret) -> str:
        digest = hmac.new(key, json.dumps(value.value, sort_keys=True, default=str).encode(), hashlib.sha256)
        return f"[secret:{digest.hexdigest()[:16]}]"
    return marker


def synth_key() -> bytes:
    """This machine's key for secret markers, made once and kept outside any output folder."""
    path = Path(os.environ.get("HYBRID_CLUSTER_SYNTH_KEY_FILE")
                or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hybrid-cluster" / "synth-key")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(32))
    return path.read_bytes()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def scripts_of(resource: Resource) -> dict[str, str]:
    """File name -> text of every script a resource runs or hands to a machine."""
    files: dict[str, str] = {}
    if resource.type == COMMAND_TYPE:
        for phase in ("create", "update", "delete"):
            command = resource.inputs.get(phase)
            if command is None:
                continue
            if isinstance(command, (Secret, Unknown)):
                files[f"{resource.name}.{phase}.txt"] = plain(command) + "\n"
            elif (script := script_from_bash_command(command)) is not None:
                files[f"{resource.name}.{phase}.sh"] = "#!/usr/bin/env bash\n" + script
            elif (script := script_from_ssh_command(command)) is not None:
                files[f"{resource.name}.{phase}.ps1"] = script
            else:
                files[f"{resource.name}.{phase}.txt"] = command
    elif resource.type == SNIPPET_TYPE and resource.inputs.get("contentType") == "snippets":
        data = (resource.inputs.get("sourceRaw") or {}).get("data")
        if isinstance(data, Secret) and isinstance(data.value, str):
            # The user-data is secret for the node's private host key (render/host_keys.py) alone: written with that
            # key replaced by a marker, and only if nothing else secret-looking is left.
            data = _PRIVATE_HOST_KEY.sub(lambda found: f"{found.group(1)}'{REDACTED_HOST_KEY}'\n", data.value)
            if "PRIVATE KEY" in data:
                raise ValueError(f"{resource.name}: secret user-data that is not only a host key; not written")
        if isinstance(data, str):
            files[f"{resource.name}.yaml"] = data
            document = yaml.safe_load(data) or {}
            for entry in document.get("write_files", []):
                path = str(entry.get("path", ""))
                if path.endswith(".sh"):
                    files[f"{resource.name}.{Path(path).name}"] = entry.get("content", "")
    return files


# A private host key in cloud-init's ssh_keys, as yaml.dump writes it: a literal block under its key.
_PRIVATE_HOST_KEY = re.compile(r"^(  (?:ed25519|ecdsa|rsa)_private: )\|-?\n(?:    .*\n)+", re.M)
REDACTED_HOST_KEY = "[secret: the private SSH host key of the node]"


def manifest_of(resource: Resource) -> dict[str, Any] | None:
    """The Kubernetes object a resource declares directly, or None."""
    if not resource.type.startswith("kubernetes:") or resource.type in (HELM_RELEASE_TYPE, HELM_CHART_TYPE):
        return None
    body = plain(resource.inputs)
    if "apiVersion" not in body or "kind" not in body:
        return None
    return body


def helm_release_of(resource: Resource) -> dict[str, Any] | None:
    if resource.type not in (HELM_RELEASE_TYPE, HELM_CHART_TYPE):
        return None
    inputs = plain(resource.inputs)
    return {
        "kind": "Release" if resource.type == HELM_RELEASE_TYPE else "Chart (rendered locally, no release)",
        "name": inputs.get("name", resource.name),
        "chart": inputs.get("chart"),
        "repository": (inputs.get("repositoryOpts") or {}).get("repo"),
        "version": inputs.get("version"),
        "namespace": inputs.get("namespace"),
        "values": inputs.get("values", {}),
    }


def mermaid(recording: Recording) -> str:
    ids = {r.urn: f"r{i}" for i, r in enumerate(recording.resources)}
    lines = ["graph TD"]
    for r in recording.resources:
        lines.append(f'  {ids[r.urn]}["{r.type.split(":")[-1]}<br/>{r.name}"]')
    for r in recording.resources:
        if r.parent in ids:
            lines.append(f"  {ids[r.parent]} -.-> {ids[r.urn]}")
        for dep in sorted(set(r.dependencies)):
            if dep in ids and dep != r.parent:
                lines.append(f"  {ids[dep]} --> {ids[r.urn]}")
    return "\n".join(lines) + "\n"


def summary(recording: Recording) -> str:
    counts = Counter(r.type for r in recording.resources)
    lines = [f"{len(recording.resources)} resources", ""]
    lines += [f"{n:5d}  {t}" for t, n in sorted(counts.items())]
    lines += ["", "Resource tree (+ create, as `pulumi preview` of a new stack):"]
    children: dict[str, list[Resource]] = {}
    for r in recording.resources:
        children.setdefault(r.parent, []).append(r)
    for siblings in children.values():
        siblings.sort(key=lambda r: r.name)

    def walk(parent: str, depth: int) -> None:
        for r in children.get(parent, []):
            flags = " [protected]" if r.protect else ""
            lines.append(f"{'  ' * depth}+ {r.type}  {r.name}{flags}")
            walk(r.urn, depth + 1)

    roots = [p for p in children if p not in {r.urn for r in recording.resources}]
    for root in roots:
        walk(root, 0)
    lines += ["", "Outputs:"]
    lines += [f"  {k}: {json.dumps(plain(v))}" for k, v in sorted(recording.outputs.items())]
    return "\n".join(lines) + "\n"


# The stack a synth output was rendered from (its non-secret configuration), so that tools.diff --replace
# can run the program again against it.
STACK_FILE = "stack.json"


def resource_record(r: Resource, marker: Callable[[Secret], str]) -> dict[str, Any]:
    """What resources.json holds of one resource: its URN, inputs and every option the program gives it (its provider by
    URN: the mock engine's provider ids are its own), secrets as `marker` shows them."""
    return {
        "urn": r.urn, "type": r.type, "name": r.name, "parent": r.parent,
        "dependencies": sorted(set(r.dependencies)), "inputs": plain(r.inputs, marker),
        "protect": r.protect, "deleteBeforeReplace": r.delete_before_replace, "ignoreChanges": r.ignore_changes,
        "propertyDependencies": {k: sorted(set(v)) for k, v in sorted(r.property_dependencies.items()) if v},
        "replaceOnChanges": r.replace_on_changes, "retainOnDelete": r.retain_on_delete,
        "provider": r.provider.rpartition("::")[0] if r.provider else "", "aliases": r.aliases,
        "additionalSecretOutputs": sorted(r.additional_secret_outputs), "customTimeouts": r.custom_timeouts,
    }


def write(recording: Recording, out: Path, stack: str = "hk-prod", config: dict[str, Any] | None = None) -> None:
    # Registration order follows the event loop; sort so two synths of one stack compare line by line.
    recording.resources.sort(key=lambda r: r.urn)
    marker = secret_marker(synth_key())
    out.mkdir(parents=True, exist_ok=True)
    resources = [resource_record(r, marker) for r in recording.resources]
    (out / "resources.json").write_text(json.dumps(resources, indent=2, sort_keys=True) + "\n")
    if config is not None:
        (out / STACK_FILE).write_text(json.dumps({"stack": stack, "config": config}, indent=2, sort_keys=True) + "\n")
    for folder in ("scripts", "manifests", "helm"):
        (out / folder).mkdir(exist_ok=True)
    for r in recording.resources:
        for file_name, text in scripts_of(r).items():
            (out / "scripts" / _safe(file_name)).write_text(text)
        if (manifest := manifest_of(r)) is not None:
            meta = manifest.get("metadata") or {}
            name = f"{manifest['kind']}-{meta.get('namespace', '_cluster')}-{meta.get('name', r.name)}"
            (out / "manifests" / f"{_safe(name)}.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
        if (release := helm_release_of(r)) is not None:
            (out / "helm" / f"{_safe(r.name)}.yaml").write_text(yaml.safe_dump(release, sort_keys=False))
    (out / "graph.mmd").write_text(mermaid(recording))
    (out / "summary.txt").write_text(summary(recording))
    (out / OUTPUT_MARKER).write_text("Written by python -m tools.synth; the next synth into this folder replaces it.\n")


# Written into every output folder. --out replaces only a folder that holds it (or an empty one), so a
# mistyped --out (".", the checkout, $HOME) can never delete anything the synth did not write.
OUTPUT_MARKER = ".hybrid-cluster-synth-output"


def unsafe_output_reason(out: Path) -> str | None:
    """Why ``out`` must not be replaced by a synth, or None when it may be."""
    target = out.resolve()
    protected = {Path("/"), Path.home().resolve(), ROOT.resolve()}
    if target in protected or ROOT.resolve().is_relative_to(target):
        return f"{out} is, or contains, the repository, the home folder or /"
    if (ROOT / ".git").resolve() in (target, *target.parents):
        return f"{out} is inside the repository's .git"
    if not target.exists():
        return None
    if not target.is_dir():
        return f"{out} exists and is not a folder"
    if any(target.iterdir()) and not (target / OUTPUT_MARKER).is_file():
        return f"{out} is not empty and was not written by tools.synth (no {OUTPUT_MARKER} in it)"
    return None


def stack_name(path: Path) -> str:
    """The stack a file configures, by Pulumi's naming: Pulumi.<stack>.yaml."""
    name = path.name
    return name[len("Pulumi."):-len(".yaml")] if name.startswith("Pulumi.") and name.endswith(".yaml") else path.stem


def find_stack_file(stack: str) -> Path:
    """Pulumi.<stack>.yaml next to Pulumi.yaml (where the CLI reads it), else the example of that name."""
    root = ROOT / f"Pulumi.{stack}.yaml"
    example = ROOT / "examples" / stack / f"Pulumi.{stack}.yaml"
    return root if root.is_file() or not example.is_file() else example


def add_stack_arguments(parser: argparse.ArgumentParser) -> None:
    """--stack and --stack-file, for the tools that read one stack (read_stack)."""
    parser.add_argument("--stack", metavar="NAME",
                        help="the stack: Pulumi.<NAME>.yaml at the repository root, else the example")
    parser.add_argument("--stack-file", metavar="PATH", type=Path, help="a stack file elsewhere")


def read_stack(parser: argparse.ArgumentParser, args: argparse.Namespace) -> StackSpec | None:
    """The stack --stack or --stack-file names; None, with its problems printed, when it is invalid."""
    if (args.stack is None) == (args.stack_file is None):
        parser.error("give --stack or --stack-file")
    try:
        return load(from_stack_file(args.stack_file or find_stack_file(args.stack))).spec
    except SpecError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.synth", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", help="stack name; its file is Pulumi.<stack>.yaml, at the root or in "
                                        "examples/<stack>/ (default hk-prod, or the --stack-file's name)")
    parser.add_argument("--stack-file", type=Path, help="a stack file to use instead of Pulumi.<stack>.yaml")
    parser.add_argument("--out", type=Path, required=True, help="output folder: created, or replaced if an earlier synth wrote it")
    parser.add_argument("--secret", action="append", default=[], metavar="KEY=VALUE",
                        help=f"a secret value; others get a fake placeholder. Keys: {', '.join(SECRET_KEYS)}")
    args = parser.parse_args(argv)

    secret_values: dict[str, str] = {}
    for item in args.secret:
        key, sep, value = item.partition("=")
        if not sep or key not in SECRET_KEYS:
            parser.error(f"--secret {key!r}: expected KEY=VALUE with KEY one of {', '.join(SECRET_KEYS)}")
        secret_values[key] = value

    if (reason := unsafe_output_reason(args.out)) is not None:
        print(f"refusing --out: {reason}; nothing written or removed", file=sys.stderr)
        return 2

    stack = args.stack or (stack_name(args.stack_file) if args.stack_file else "hk-prod")
    stack_file = args.stack_file or find_stack_file(stack)
    if not stack_file.is_file():
        parser.error(f"no stack file {stack_file}")
    try:
        raw = from_stack_file(stack_file)
        loaded = load(raw)
    except SpecError as error:
        print(f"{stack_file}: invalid configuration, nothing written:", file=sys.stderr)
        for problem in error.problems:
            print(f"  error: {problem}", file=sys.stderr)
        return 2
    for warning in loaded.warnings:
        print(f"  warning: {warning}", file=sys.stderr)

    # The secrets the stack needs get placeholders (those given are used as they are); reading any other fails,
    # as on a real stack where it was never set.
    needed = required_secrets(loaded.spec)
    print(f"secrets this stack needs (pulumi config set --secret KEY): {', '.join(needed)}", file=sys.stderr)
    recording = run_program(raw, secret_values, stack=stack, secret_keys=needed)
    # Render into a fresh folder first, so a failure never leaves a half-written output behind.
    with tempfile.TemporaryDirectory(dir=args.out.parent if args.out.parent.exists() else None) as tmp:
        staging = Path(tmp) / "out"
        write(recording, staging, stack,
              {k: v for k, v in raw.values.items() if k not in SECRET_KEYS})
        if args.out.exists():
            # Checked again right before: only ever our own output (or an empty folder) is removed.
            if (reason := unsafe_output_reason(args.out)) is not None:
                print(f"refusing --out: {reason}; nothing written or removed", file=sys.stderr)
                return 2
            shutil.rmtree(args.out)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), args.out)
    print(f"{len(recording.resources)} resources rendered into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
