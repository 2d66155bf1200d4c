"""The scripts' one templating mechanism: bash and PowerShell live as real files under render/scripts/,
and a renderer turns a file into the text a remote command runs.

A script file is a script. Two kinds of directive line, each a comment to bash and to PowerShell, are all
the templating there is; nothing is ever substituted inside a line:

* ``#@ inputs NAME LIST[] ...`` (once, in an entry script): replaced by one assignment per name, in the
  order given, from the values the renderer passes. ``[]`` marks a list (a bash array, a PowerShell
  array). The names passed must be exactly the names declared, so a script and its renderer cannot drift.
* ``#@ include lib/NAME.sh`` (any number): replaced by that file, indented as the directive is, so a
  fragment shared by several scripts (strict mode, the drain, the log helpers) is written once.

A comment line that starts with ``##`` is a note for the reader of the file: it is dropped from the
rendered script. The PowerShell reaches Hyper-V hosts as one encoded SSH command of bounded length
(render.hyperv.MAX_SSH_COMMAND_CHARS), so the sources and reasons behind its code are written as notes
next to that code instead of travelling with every command; ``#`` comments travel. A note is never a
linter directive (those stay ``# shellcheck ...``).

Values are quoted for the target language by this module alone: single quotes for bash, single-quoted
literals (ps_quote) for PowerShell; integers and booleans are written as literals. Pure: no Pulumi.
"""
from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SCRIPTS_DIR = Path(__file__).parent / "scripts"
_REPOSITORY_SCRIPTS = SCRIPTS_DIR

_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)#@ (?P<verb>\S+)(?: (?P<args>.*))?$")
_INPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[\])?$")
_INCLUDE = re.compile(r"^lib/[a-z0-9-]+\.(sh|ps1)$")
_NOTE = re.compile(r"^[ \t]*##")

# PowerShell ends a single-quoted string at ' and at the typographic quotes U+2018, U+2019, U+201A and
# U+201B; inside the string each is written twice. Source: PowerShell/PowerShell
# src/System.Management.Automation/engine/parser/CharTraits.cs (IsSingleQuote); the same five characters
# are doubled by ansible/ansible lib/ansible/plugins/shell/powershell.py (_escape).
_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def ps_quote(value: str) -> str:
    """A PowerShell single-quoted literal whose value is exactly ``value`` (one line)."""
    if _CONTROL_CHARS.search(value):
        raise ValueError(f"control character in PowerShell string value {value!r}")
    return "'" + "".join(ch * 2 if ch in _SINGLE_QUOTES else ch for ch in value) + "'"


def ps_array(values: Sequence[str]) -> str:
    return "@(" + ", ".join(ps_quote(v) for v in values) + ")"


def _ps_value(value: object) -> str:
    if isinstance(value, bool):
        return "$true" if value else "$false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if "\n" in value:
            # A multi-line text (a config file) as lines joined with LF: no control character in a literal.
            return "(" + ps_array(value.split("\n")) + " -join \"`n\")"
        return ps_quote(value)
    raise TypeError(f"no PowerShell literal for {type(value).__name__}")


def _bash_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if "\0" in value:
            raise ValueError("NUL character in a bash value")
        # Always single-quoted (shlex.quote leaves "safe" words bare): every text input reads the same.
        return "'" + value.replace("'", "'\"'\"'") + "'"
    raise TypeError(f"no bash literal for {type(value).__name__}")


def _assignment(language: str, name: str, is_list: bool, value: object) -> str:
    items = value if isinstance(value, (list, tuple)) else None
    if is_list != (items is not None):
        raise TypeError(f"input {name} must be {'a list' if is_list else 'a single value'}")
    if language == "bash":
        if items is not None:
            assignment = f"{name}=(" + " ".join(_bash_value(v) for v in items) + ")"
        else:
            assignment = f"{name}={_bash_value(value)}"
        if re.search(r"[$`]", assignment):
            # A value is literal text (a config file, a program to install): its $ are meant unexpanded.
            return "# shellcheck disable=SC2016 # literal text, not expanded here\n" + assignment
        return assignment
    if items is not None:
        return f"${name} = @(" + ", ".join(_ps_value(v) for v in items) + ")"
    return f"${name} = {_ps_value(value)}"


def _language(name: str) -> str:
    if name.endswith(".sh"):
        return "bash"
    if name.endswith(".ps1"):
        return "powershell"
    raise ValueError(f"script {name!r} is neither .sh nor .ps1")


def _lines(name: str) -> tuple[str, ...]:
    """A script file's lines (read on every call: the compiled templates below are what is kept)."""
    return tuple((SCRIPTS_DIR / name).read_text().splitlines())


@dataclass(frozen=True)
class _Inputs:
    """Where the entry script's ``#@ inputs`` line stood: its indentation and the names it declares."""
    indent: str
    args: tuple[str, ...]


def _expand(name: str, language: str, seen: tuple[str, ...], indent: str) -> list[str | _Inputs]:
    if name in seen:
        raise ValueError(f"script include cycle: {' -> '.join(seen + (name,))}")
    out: list[str | _Inputs] = []
    for line in _lines(name):
        if _NOTE.match(line):
            continue
        match = _DIRECTIVE.match(line)
        if not match:
            out.append(indent + line if line else line)
            continue
        verb, args, inner = match["verb"], (match["args"] or "").split(), indent + match["indent"]
        if verb == "include":
            if len(args) != 1 or not _INCLUDE.match(args[0]) or _language(args[0]) != language:
                raise ValueError(f"{name}: bad include {line.strip()!r}")
            included = _expand(args[0], language, seen + (name,), inner)
            if any(isinstance(item, _Inputs) for item in included):
                raise ValueError(f"{args[0]}: a shared fragment declares no inputs")
            out.extend(included)
        elif verb == "inputs":
            if seen or any(isinstance(item, _Inputs) for item in out):
                raise ValueError(f"{name}: one #@ inputs line, in the entry script only")
            if not all(_INPUT_NAME.match(arg) for arg in args):
                raise ValueError(f"{name}: bad input names {args!r}")
            out.append(_Inputs(inner, tuple(args)))
        else:
            raise ValueError(f"{name}: unknown directive {line.strip()!r}")
    return out


def _compile(name: str) -> tuple[str | _Inputs, ...]:
    """The script with its includes expanded and its notes dropped, each run of plain lines joined into one
    text: every node renders the same files, so the repository's own are compiled once per process (another
    folder, a test's, every time)."""
    if SCRIPTS_DIR == _REPOSITORY_SCRIPTS:
        return _repository_template(name)
    return _template(name)


def _template(name: str) -> tuple[str | _Inputs, ...]:
    return _joined(_expand(name, _language(name), (), ""))


_repository_template = functools.cache(_template)


def _joined(items: list[str | _Inputs]) -> tuple[str | _Inputs, ...]:
    out: list[str | _Inputs] = []
    run: list[str] = []
    for item in items:
        if isinstance(item, str):
            run.append(item)
            continue
        if run:
            out.append("\n".join(run))
            run = []
        out.append(item)
    if run:
        out.append("\n".join(run))
    return tuple(out)


def _fill(name: str, inputs: Mapping[str, object] | None) -> tuple[str, bool]:
    """The compiled script with its inputs assigned (None: the lint form's placeholders), and whether it
    declares inputs."""
    language = _language(name)
    parts: list[str] = []
    had_inputs = False
    for item in _compile(name):
        if isinstance(item, str):
            parts.append(item)
            continue
        had_inputs = True
        names = [arg.removesuffix("[]") for arg in item.args]
        values: dict[str, object]
        if inputs is None:
            # The raw-file lint form: every input assigned a placeholder of the right shape.
            values = {arg.removesuffix("[]"): (["x"] if arg.endswith("[]") else "x") for arg in item.args}
        else:
            values = dict(inputs)
        if sorted(names) != sorted(values):
            missing, extra = set(names) - set(values), set(values) - set(names)
            raise ValueError(f"{name}: inputs do not match its #@ inputs line "
                             f"(missing {sorted(missing)}, not declared {sorted(extra)})")
        parts += [item.indent + _assignment(language, input_name, arg.endswith("[]"), values[input_name])
                  for arg, input_name in zip(item.args, names, strict=True)]
    return "\n".join(parts) + "\n", had_inputs


def render_script(name: str, **inputs: object) -> str:
    """The script ``render/scripts/<name>`` with its includes expanded and its inputs assigned."""
    text, had_inputs = _fill(name, inputs)
    if inputs and not had_inputs:
        raise ValueError(f"{name} declares no inputs but was given {sorted(inputs)}")
    return text


def lint_form(name: str) -> str:
    """The script with its includes expanded and each input set to a placeholder: what the linters read
    to check the file as written, independent of any stack."""
    return _fill(name, None)[0]


def revision(*names: str) -> str:
    """A short digest of the named scripts as written (includes expanded): an input that changes whenever
    one of them does, for a step that must run again when another step's script changes."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + lint_form(name).encode() + b"\0")
    return digest.hexdigest()[:16]


def entry_scripts() -> list[str]:
    """Every script under render/scripts/ that a renderer runs (the shared fragments are under lib/)."""
    return sorted(str(path.relative_to(SCRIPTS_DIR)) for path in SCRIPTS_DIR.glob("*.*")
                  if path.suffix in (".sh", ".ps1"))


def fragments() -> list[str]:
    return sorted(str(path.relative_to(SCRIPTS_DIR)) for path in (SCRIPTS_DIR / "lib").glob("*.*")
                  if path.suffix in (".sh", ".ps1"))
