"""Copies policy/gatekeeper/lib/placement.rego into the `libs` of every ConstraintTemplate under
policy/gatekeeper, as gatekeeper-library generates its templates from their sources: the library is
written once and each template stays a complete file Gatekeeper (or gator) reads on its own.

  python -m tools.rego_libs          rewrite stale templates (exit 0)
  python -m tools.rego_libs --check  list stale templates (exit 1 if any)

Each template ends with its Rego source's `libs:` block; everything before it is left as it is.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "policy" / "gatekeeper"
LIB = Path("lib") / "placement.rego"
LIBS_KEY = "            libs:\n              - |\n"
INDENT = " " * 16


def _block(lib: str) -> str:
    return LIBS_KEY + "".join((INDENT + line if line.strip() else "") + "\n" for line in lib.rstrip("\n").split("\n"))


def _rewritten(template: str, lib: str) -> str:
    if LIBS_KEY not in template:
        raise ValueError("the template has no libs block at its end")
    return template[: template.index(LIBS_KEY)] + _block(lib)


def stale_templates(root: Path = ROOT) -> list[Path]:
    lib = (root / LIB).read_text()
    return [path for path in sorted(root.glob("*/template.yaml")) if _rewritten(path.read_text(), lib) != path.read_text()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.rego_libs", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list stale templates")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    stale = stale_templates(args.root)
    for path in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {path}")
        if not args.check:
            path.write_text(_rewritten(path.read_text(), (args.root / LIB).read_text()))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
