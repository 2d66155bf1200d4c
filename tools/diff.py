"""What `pulumi preview` would show between two synth outputs of a stack: creates, updates with the input
paths that changed, deletes. Secrets are compared by the keyed markers synth writes, never printed.

    python -m tools.diff build/before build/after
    python -m tools.diff build/hk-prod --replace hk-prod-hk-lnx-2-vm

With --replace, one synth output is enough: the program runs again under the engine model
(tools/engine.py) against the state that output stands for, with `pulumi up --replace` of that resource,
and the plan lists everything that runs again (+- replaced, ~ updated, - deleted, + created).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.engine import diff_paths

SECRET_PREFIX = "[secret"


@dataclass
class Plan:
    creates: list[dict] = field(default_factory=list)
    updates: list[tuple[dict, list[str]]] = field(default_factory=list)
    deletes: list[dict] = field(default_factory=list)
    unchanged: int = 0

    @property
    def changed_names(self) -> set[str]:
        return {r["name"] for r in self.creates + self.deletes} | {r["name"] for r, _ in self.updates}


# Dotted paths (list items as [i]) where two input trees differ; a secret shows as its path only.
changed_paths = diff_paths


def plan(before: list[dict], after: list[dict]) -> Plan:
    old = {r["urn"]: r for r in before}
    new = {r["urn"]: r for r in after}
    result = Plan()
    for urn in sorted(new.keys() - old.keys()):
        result.creates.append(new[urn])
    for urn in sorted(old.keys() - new.keys()):
        result.deletes.append(old[urn])
    for urn in sorted(old.keys() & new.keys()):
        # Changes under ignore_changes are not part of a plan (the engine keeps the old value).
        ignored = new[urn].get("ignoreChanges", [])
        paths = [p for p in changed_paths(old[urn]["inputs"], new[urn]["inputs"])
                 if not any(p == i or p.startswith((f"{i}.", f"{i}[")) for i in ignored)]
        if paths:
            result.updates.append((new[urn], paths))
        else:
            result.unchanged += 1
    return result


def _is_secret_path(resource: dict, path: str) -> bool:
    value: Any = resource["inputs"]
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        try:
            value = value[int(part[1:-1])] if part.startswith("[") else value[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return False
    return isinstance(value, str) and value.startswith(SECRET_PREFIX)


def render(result: Plan) -> str:
    lines = []
    for r in result.creates:
        lines.append(f"+ create  {r['type']}  {r['name']}")
    for r, paths in result.updates:
        shown = [f"{p} (secret)" if _is_secret_path(r, p) else p for p in paths]
        lines.append(f"~ update  {r['type']}  {r['name']}  [{', '.join(shown)}]")
    for r in result.deletes:
        lines.append(f"- delete  {r['type']}  {r['name']}")
    lines.append("")
    lines.append(f"Resources: {len(result.creates)} to create, {len(result.updates)} to update, "
                 f"{len(result.deletes)} to delete, {result.unchanged} unchanged")
    return "\n".join(lines) + "\n"


def load(folder: Path) -> list[dict]:
    path = folder / "resources.json"
    if not path.is_file():
        raise SystemExit(f"{folder}: no resources.json (run `python -m tools.synth --out {folder}` first)")
    return json.loads(path.read_text())


def replace_plan(folder: Path, name: str, secrets: dict[str, str] | None = None) -> str:
    """The preview of `pulumi up --replace <name>` against the stack a synth output was rendered from."""
    from config.loader import RawConfig
    from tools.mockrun import run_program
    from tools.synth import STACK_FILE

    stack_path = folder / STACK_FILE
    if not stack_path.is_file():
        raise SystemExit(f"{folder}: no {STACK_FILE} (render it with this version of `python -m tools.synth`)")
    stack = json.loads(stack_path.read_text())
    raw = RawConfig(values=stack["config"], secure_keys=frozenset())
    built = run_program(raw, secrets, stack=stack["stack"])
    recorded = {r["urn"] for r in load(folder)}
    if {r.urn for r in built.resources} != recorded:
        raise SystemExit(f"{folder}: the program declares other resources than this output holds; render it again")
    if name not in {r.name for r in built.resources}:
        raise SystemExit(f"{folder}: no resource named {name!r}")
    preview = run_program(raw, secrets, stack=stack["stack"], state=built.state, replace=(name,), preview=True)
    lines = []
    for step in preview.plan.steps:
        if step.op == "replace":
            lines.append(f"+- replace  {step.type}  {step.name}  [{', '.join(step.why)}]")
        elif step.op == "update":
            lines.append(f"~ update  {step.type}  {step.name}  [{', '.join(step.why)}]")
        elif step.op == "create":
            lines.append(f"+ create  {step.type}  {step.name}")
        elif step.op in ("delete", "retain"):
            lines.append(f"- delete  {step.type}  {step.name}" + ("  (retained: its delete does not run)"
                                                                  if step.op == "retain" else ""))
    counts = {op: sum(1 for s in preview.plan.steps if s.op == op) for op in ("replace", "update", "create", "delete")}
    lines += ["", f"Resources: {counts['replace']} to replace, {counts['update']} to update, {counts['create']} to create, "
                  f"{counts['delete']} to delete, {sum(1 for s in preview.plan.steps if s.op == 'same')} unchanged"]
    lines += [f"error: {e}" for e in preview.plan.errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.diff", description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="synth output before the change (with --replace: the synth output)")
    parser.add_argument("new", type=Path, nargs="?", help="synth output after the change")
    parser.add_argument("--replace", metavar="NAME", help="plan `pulumi up --replace` of this resource instead")
    parser.add_argument("--secret", action="append", default=[], metavar="KEY=VALUE",
                        help="with --replace: a secret value the synth was given")
    args = parser.parse_args(argv)
    if args.replace:
        if args.new is not None:
            parser.error("--replace takes one synth output")
        secrets = dict(item.partition("=")[::2] for item in args.secret)
        sys.stdout.write(replace_plan(args.old, args.replace, secrets))
        return 0
    if args.new is None:
        parser.error("two synth outputs are needed (or one with --replace NAME)")
    sys.stdout.write(render(plan(load(args.old), load(args.new))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
