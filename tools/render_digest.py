"""A digest per resource of what the program declares for hk-prod and every example (its URN, inputs and options, as
tools.synth writes them to resources.json), stored in tests/fixtures/render-digests/: tests/tools/test_render_digests.py
fails when a resource appears, goes or declares anything else, and names it. A change meant to move no resource (a
refactoring) passes as it is; a change that moves some shows which, and the digests are written again with:

    python -m tools.render_digest
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from config.loader import from_stack_file, load
from config.secret_keys import required_secrets
from tools.mock.program import ROOT, Recording, run_program
from tools.synth import find_stack_file, resource_record, secret_marker

FOLDER = ROOT / "tests" / "fixtures" / "render-digests"
# Secrets are shown by a digest keyed with this constant, not with the machine's synth key: the digests are the same on
# every machine, and a secret's value (a placeholder here) still moves its resource's digest.
_MARKER_KEY = b"tools.render_digest"


def stacks() -> list[str]:
    """hk-prod and every example stack (examples/*/Pulumi.<stack>.yaml)."""
    return ["hk-prod", *sorted(path.name.removeprefix("Pulumi.").removesuffix(".yaml")
                               for path in (ROOT / "examples").glob("*/Pulumi.*.yaml"))]


def record(stack: str, secrets: dict[str, str] | None = None, source_positions: bool = False) -> Recording:
    """The stack's program, run as tools.synth runs it: `secrets` as given, placeholders for the others it needs."""
    raw = from_stack_file(find_stack_file(stack))
    return run_program(raw, secrets or {}, stack=stack, secret_keys=required_secrets(load(raw).spec),
                       source_positions=source_positions)


def digests(recording: Recording) -> dict[str, str]:
    """URN -> SHA-256 of its resources.json record."""
    marker = secret_marker(_MARKER_KEY)
    return {r.urn: hashlib.sha256(json.dumps(resource_record(r, marker), sort_keys=True).encode()).hexdigest()
            for r in sorted(recording.resources, key=lambda r: r.urn)}


def path_of(stack: str) -> Path:
    return FOLDER / f"{stack}.json"


def differences(stored: dict[str, str], now: dict[str, str]) -> list[str]:
    """One line per resource that appeared, went, or declares something else."""
    return ([f"new: {urn}" for urn in sorted(now.keys() - stored.keys())]
            + [f"gone: {urn}" for urn in sorted(stored.keys() - now.keys())]
            + [f"changed: {urn}" for urn in sorted(now.keys() & stored.keys()) if now[urn] != stored[urn]])


def main() -> int:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for stack in stacks():
        now = digests(record(stack))
        path = path_of(stack)
        stored = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{stack}: {len(now)} resources; {len(differences(stored, now))} differ from the digests stored before")
    return 0


if __name__ == "__main__":
    sys.exit(main())
