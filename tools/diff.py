"""What `pulumi preview` would show between two synth outputs of a stack, or for `pulumi up --replace` of one
resource: the program runs under the engine model (tools/mock/engine.py) against the state the first output stands
for, so the plan is the engine's: its guards' refusals, protected resources, replacements and what they replace,
retained deletes (+- replaced, ~ updated, + created, - deleted or retained). Secrets are compared by the keyed
markers synth writes, never printed. It exits 1 where `pulumi preview` would fail.

    python -m tools.diff build/before build/after
    python -m tools.diff build/hk-prod --replace hk-prod-hk-lnx-2-vm
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.mock.engine import diff_paths

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


def _stack(folder: Path) -> tuple[str, Any]:
    """The stack name and configuration a synth output was rendered from, checked against what the program declares."""
    from config.loader import RawConfig
    from tools.synth import STACK_FILE

    stack_path = folder / STACK_FILE
    if not stack_path.is_file():
        raise SystemExit(f"{folder}: no {STACK_FILE} (render it with this version of `python -m tools.synth`)")
    stack = json.loads(stack_path.read_text())
    return stack["stack"], RawConfig(values=stack["config"], secure_keys=frozenset())


def _built(folder: Path, secrets: dict[str, str] | None):
    """The state a synth output stands for: the program run under the engine model from an empty stack."""
    from tools.mock.program import run_program

    stack, raw = _stack(folder)
    built = run_program(raw, secrets, stack=stack)
    if {r.urn for r in built.resources} != {r["urn"] for r in load(folder)}:
        raise SystemExit(f"{folder}: the program declares other resources than this output holds; render it again")
    return stack, raw, built


def preview_lines(steps: list, errors: list[str]) -> list[str]:
    """A plan as `pulumi preview` lists it: what is replaced, updated, created, deleted, and what is dropped from the
    state without its delete running (retainOnDelete); then the counts and the errors that fail the run."""
    lines = []
    for step in steps:
        if step.op == "replace":
            lines.append(f"+- replace  {step.type}  {step.name}  [{', '.join(step.why)}]")
        elif step.op == "update":
            lines.append(f"~ update  {step.type}  {step.name}  [{', '.join(step.why)}]")
        elif step.op == "create":
            lines.append(f"+ create  {step.type}  {step.name}")
        elif step.op == "delete":
            lines.append(f"- delete  {step.type}  {step.name}")
        elif step.op == "retain":
            lines.append(f"- retain  {step.type}  {step.name}  (leaves the state; its delete does not run)")
    counts = {op: sum(1 for s in steps if s.op == op) for op in ("replace", "update", "create", "delete", "retain")}
    lines += ["", f"Resources: {counts['replace']} to replace, {counts['update']} to update, {counts['create']} to create, "
                  f"{counts['delete']} to delete, {counts['retain']} to retain, "
                  f"{sum(1 for s in steps if s.op == 'same')} unchanged"]
    lines += [f"error: {e}" for e in errors]
    return lines


def replace_plan(folder: Path, name: str, secrets: dict[str, str] | None = None) -> tuple[str, bool]:
    """The preview of `pulumi up --replace <name>` against the stack a synth output was rendered from, and whether
    it fails (a protected resource, a guard's refusal)."""
    from tools.mock.program import run_program

    stack, raw, built = _built(folder, secrets)
    if name not in {r.name for r in built.resources}:
        raise SystemExit(f"{folder}: no resource named {name!r}")
    preview = run_program(raw, secrets, stack=stack, state=built.state, replace=(name,), preview=True)
    return "\n".join(preview_lines(preview.plan.steps, preview.plan.errors)) + "\n", bool(preview.plan.errors)


def change_plan(before: Path, after: Path, secrets: dict[str, str] | None = None) -> tuple[str, bool]:
    """The preview of `after`'s configuration against the stack `before` stands for, as the engine model plans it: the
    program's guards run (a refusal fails it), a protected resource's delete or replacement is refused, a retained
    delete shows as retained. A secret the two renders were given differently (their keyed markers differ) shows as
    an update of what it reaches; the engine model sees placeholders, so what such a change replaces needs the values
    (--secret)."""
    from tools.mock.program import run_program

    stack, _, built = _built(before, secrets)
    after_stack, after_raw = _stack(after)
    if after_stack != stack:
        raise SystemExit(f"{after}: rendered for stack {after_stack}, {before} for {stack}: compare renders of one stack")
    preview = run_program(after_raw, secrets, stack=stack, state=built.state, preview=True)
    lines = preview_lines(preview.plan.steps, preview.plan.errors)
    shown = {s.name for s in preview.plan.steps if s.op != "same"}
    secret_only = []
    for resource, paths in plan(load(before), load(after)).updates:
        hidden = [p for p in paths if _is_secret_path(resource, p)]
        if resource["name"] not in shown and hidden:
            secret_only.append(f"~ update  {resource['type']}  {resource['name']}  [{', '.join(f'{p} (secret)' for p in hidden)}]")
    if secret_only:
        lines = secret_only + lines
    return "\n".join(lines) + "\n", bool(preview.plan.errors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.diff", description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="synth output before the change (with --replace: the synth output)")
    parser.add_argument("new", type=Path, nargs="?", help="synth output after the change")
    parser.add_argument("--replace", metavar="NAME", help="plan `pulumi up --replace` of this resource instead")
    parser.add_argument("--secret", action="append", default=[], metavar="KEY=VALUE",
                        help="a secret value the synth was given (both renders)")
    args = parser.parse_args(argv)
    secrets = dict(item.partition("=")[::2] for item in args.secret)
    if args.replace:
        if args.new is not None:
            parser.error("--replace takes one synth output")
        text, failed = replace_plan(args.old, args.replace, secrets)
    elif args.new is None:
        parser.error("two synth outputs are needed (or one with --replace NAME)")
    else:
        text, failed = change_plan(args.old, args.new, secrets)
    sys.stdout.write(text)
    # As `pulumi preview` does: a refusal (a guard's check, a protected resource) fails it.
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
