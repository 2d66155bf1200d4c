"""Turns a stack's raw configuration (from the Pulumi runtime or a stack file) into a validated StackSpec,
or into the full list of problems, each at its key path, before any resource is declared.
"""
from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from . import rules
from .model import PATTERN_HELP, StackSpec
from .rules import Problem
from .secret_keys import SECRET_KEYS

PROJECT = "hybrid-cluster"

__all__ = ["PROJECT", "SECRET_KEYS", "LoadedStack", "RawConfig", "SpecError", "load"]


class SpecError(Exception):
    """The stack configuration is invalid; `problems` holds every error found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("invalid stack configuration:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class RawConfig:
    """The project's config entries by key (without the `hybrid-cluster:` prefix), and the problems found
    in the stack's other entries (config namespaces this program does not read)."""

    values: Mapping[str, Any]
    secure_keys: frozenset[str]
    problems: tuple[Problem, ...] = ()


# Config namespaces a stack may carry besides the project's: Pulumi's own. Provider namespaces
# (proxmoxve:, kubernetes:, command:) are not read: the program configures every provider explicitly
# from hybrid-cluster: keys (components/machines/nodes.py, components/cluster/bootstrap.py), so a key there would be
# ignored while looking as if it applied.
OTHER_NAMESPACES = frozenset({"pulumi"})
# Key names that say "credential": such a value must never sit in a stack file in clear.
_SECRET_LOOKING = re.compile(r"(?i)(password|passwd|token|secret|private.?key|credential|kubeconfig|api.?key)")


def _foreign_entry(full_key: str, secure: bool) -> Problem | None:
    """The problem with a config entry outside the project's namespace, if any. Never names its value."""
    namespace, sep, key = full_key.partition(":")
    if not sep:
        return Problem(full_key, f"config keys are namespace:key, e.g. {PROJECT}:{full_key}")
    if namespace in OTHER_NAMESPACES:
        if _SECRET_LOOKING.search(key) and not secure:
            return Problem(full_key, f"looks like a credential but is not a secret: `pulumi config set --secret {full_key}`")
        return None
    close = difflib.get_close_matches(namespace, [PROJECT], n=1, cutoff=0.6)
    hint = (f"did you mean {PROJECT}:{key}?" if close else
            f"this program reads only {PROJECT}: keys (it configures its providers itself)")
    if _SECRET_LOOKING.search(key) and not secure:
        hint += "; it also looks like a credential written in clear: remove it from the stack file"
    return Problem(full_key, f"unknown config namespace {namespace!r}: {hint}")


@dataclass(frozen=True)
class LoadedStack:
    spec: StackSpec
    warnings: list[Problem]


def _field_aliases() -> dict[str, str]:
    return {field.alias or name: name for name, field in StackSpec.model_fields.items()}


def _path(prefix: str, loc: tuple[Any, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part != "[key]":
            path += f".{part}"
    return path


def _model_at(annotation: Any, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model whose field the last part of `loc` names, walking `annotation` (Optional, lists, dicts)."""
    current = annotation
    for part in loc:
        current = unwrap_annotation(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            fields = {f.alias or name: f for name, f in current.model_fields.items()}
            if part not in fields:
                return None
            current = fields[part].annotation
        elif get_origin(current) in (list, dict):
            current = get_args(current)[-1]
        else:
            return None
    current = unwrap_annotation(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def unwrap_annotation(annotation: Any) -> Any:
    """X from Annotated[X, ...] and from X | None (config.loader's messages and tools.docs walk the model with it)."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation = get_args(annotation)[0]
        elif get_origin(annotation) in (Union, UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _described(field: FieldInfo) -> str:
    """A field's description (config.model: the docstring under it) on one line."""
    return " ".join((field.description or "").split())


def _message(error: ErrorDetails, annotation: Any) -> str:
    """pydantic's error said as what a valid value looks like."""
    kind, loc = error["type"], error["loc"]
    # A ValueError raised by our own validators (config.model) is the message; pydantic's prefix is noise.
    if kind == "value_error":
        return str(error["ctx"]["error"])
    if kind == "string_pattern_mismatch" and error.get("ctx", {}).get("pattern") in PATTERN_HELP:
        return f"must be {PATTERN_HELP[error['ctx']['pattern']]}"
    model = _model_at(annotation, loc[:-1]) if loc else None
    if model is not None and kind in ("extra_forbidden", "missing"):
        fields = {f.alias or name: f for name, f in model.model_fields.items()}
        key = str(loc[-1])
        if kind == "missing":
            return "is required" + (f": {_described(fields[key])}" if key in fields and fields[key].description else "")
        camel = to_camel(key)
        if camel != key and camel in fields:
            return f"unknown key: stack files spell it {camel} (camelCase)"
        close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.6)
        return f"unknown key{f'; did you mean {close[0]}?' if close else ''} (known here: {', '.join(sorted(fields))})"
    return error["msg"]


def _decode(value: Any) -> Any:
    # The Pulumi runtime hands structured values over as JSON text.
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def load(raw: RawConfig) -> LoadedStack:
    """Validate everything at once; raise SpecError listing every error."""
    problems: list[Problem] = list(raw.problems)
    aliases = _field_aliases()
    for key in sorted(raw.values):
        if key in SECRET_KEYS:
            if key not in raw.secure_keys:
                problems.append(Problem(key, f"is a secret: set it with `pulumi config set --secret {key}`"))
        elif key not in aliases:
            camel = to_camel(key)
            close = difflib.get_close_matches(key, list(aliases), n=1, cutoff=0.6)
            hint = (f"stack files spell it {PROJECT}:{camel} (camelCase) " if camel in aliases and camel != key else
                    f"did you mean {close[0]}? " if close else "")
            problems.append(Problem(key, f"unknown key; {hint}(known: {', '.join(sorted(aliases))})"))
        elif key in raw.secure_keys:
            # Its value would be decrypted into the model and land in plain resource inputs.
            problems.append(Problem(key, "is not a secret: set it without --secret (secrets are: "
                                         f"{', '.join(SECRET_KEYS)})"))

    sections: dict[str, Any] = {}
    for alias, name in aliases.items():
        field = StackSpec.model_fields[name]
        if field.annotation is None:
            raise ValueError(f"StackSpec.{name} has no type annotation to validate {alias} with")
        if alias not in raw.values:
            if field.is_required():
                problems.append(Problem(alias, "is required" + (f": {_described(field)}" if field.description else "")))
            else:
                sections[name] = field.get_default(call_default_factory=True)
            continue
        try:
            # Strict: no bool/str/float coercion (`cpu: true`, `insecure: "yes"` are errors, not 1 and true).
            # By alias only: a snake_case spelling (pod_cidr) is an unknown key, as the CLI would keep it apart.
            # A field's own Annotated constraints (a top-level scalar such as `timezone`) are in its metadata.
            annotation: Any = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
            sections[name] = TypeAdapter(annotation).validate_python(
                _decode(raw.values[alias]), strict=True, by_alias=True, by_name=False)
        except ValidationError as error:
            problems += [Problem(_path(alias, e["loc"]), _message(e, field.annotation)) for e in error.errors()]

    parsed = {StackSpec.model_fields[name].alias or name for name in sections}
    spec = StackSpec.model_construct(**sections)
    found = rules.check(spec, parsed)
    problems += [p for p in found if p.severity == "error"]
    if problems:
        raise SpecError(problems)
    return LoadedStack(spec=StackSpec.model_validate(sections, strict=True), warnings=[p for p in found if p.severity == "warning"])


def _split(entries: Mapping[str, Any], is_secure: Callable[[str], bool]) -> RawConfig:
    """The project's entries of a stack's config, and a problem for every other entry that is wrong."""
    values: dict[str, Any] = {}
    secure: set[str] = set()
    problems: list[Problem] = []
    prefix = f"{PROJECT}:"
    for full_key in sorted(entries):
        if full_key.startswith(prefix):
            key = full_key[len(prefix):]
            values[key] = entries[full_key]
            if is_secure(full_key):
                secure.add(key)
        elif (problem := _foreign_entry(full_key, is_secure(full_key))) is not None:
            problems.append(problem)
    return RawConfig(values=values, secure_keys=frozenset(secure), problems=tuple(problems))


class _StackFileLoader(yaml.SafeLoader):
    """YAML as Pulumi stack files are read, plus what PyYAML lets pass: a key written twice in one
    mapping (the later one would silently win) is recorded with both lines."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self.duplicates: list[tuple[str, int, int]] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, (str, int, float, bool)) and key in first_line:
                self.duplicates.append((str(key), line, first_line[key]))
            first_line.setdefault(key, line)
        return super().construct_mapping(node, deep)


# Byte-order marks and what wrote them: Windows PowerShell 5.1's `>` and Out-File write UTF-16 LE with a BOM
# (about_Character_Encoding: "Out-File ... UTF-16LE" is 5.1's default, "utf8NoBOM" is PowerShell 7's).
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32 LE"), (b"\x00\x00\xfe\xff", "UTF-32 BE"), (b"\xff\xfe", "UTF-16 LE"),
         (b"\xfe\xff", "UTF-16 BE"))
_SAVE_AS_UTF8 = ("save it as UTF-8: in PowerShell, Get-Content FILE | Set-Content -Encoding utf8 FILE.new, "
                 "then replace FILE with it; in an editor, choose UTF-8 when saving")


def _stack_text(path: Path) -> str:
    """The file as UTF-8 text (a UTF-8 BOM is allowed), or SpecError naming the encoding it has instead."""
    data = path.read_bytes()
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            raise SpecError([Problem(path.name, f"is {encoding} text, not UTF-8 (what Windows PowerShell 5.1's `>` "
                                                f"writes); {_SAVE_AS_UTF8}")])
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    if b"\x00" in body:
        # UTF-16 without a byte-order mark: every other byte of ASCII text is NUL.
        raise SpecError([Problem(path.name, f"contains NUL bytes, so it is probably UTF-16 text, not UTF-8; {_SAVE_AS_UTF8}")])
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        line = body[:error.start].count(b"\n") + 1
        raise SpecError([Problem(f"{path.name}:{line}", f"is not UTF-8 text (byte 0x{body[error.start]:02x}, perhaps "
                                                        f"Windows-1252 or UTF-16); {_SAVE_AS_UTF8}")]) from None


def read_stack_document(path: str | os.PathLike[str]) -> Any:
    """A stack file's YAML, or SpecError with every duplicate key or the syntax error at file:line.
    Messages quote no line of the file: the line could hold a secret."""
    name = Path(path).name
    try:
        loader = _StackFileLoader(_stack_text(Path(path)))
    except yaml.reader.ReaderError as error:
        # PyYAML refuses control characters when it reads the stream, before any parsing.
        raise SpecError([Problem(name, f"contains a control character (0x{error.character:02x}) YAML does not allow: "
                                       "remove it, or save the file again as UTF-8 text")]) from None
    try:
        document = loader.get_single_data()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        raise SpecError([Problem(where, f"not valid YAML: {error.problem or error.context}")]) from None
    except yaml.YAMLError as error:
        raise SpecError([Problem(name, f"not valid YAML ({type(error).__name__})")]) from None
    finally:
        loader.dispose()
    if loader.duplicates:
        raise SpecError([Problem(f"{name}:{line}", f"key {key!r} is written twice (first on line {first}); "
                                                   "YAML keeps only one of them")
                         for key, line, first in sorted(loader.duplicates, key=lambda d: d[1])])
    return document


def from_stack_file(path: str | os.PathLike[str]) -> RawConfig:
    """The entries of a Pulumi.<stack>.yaml file; raises SpecError for a file that is not one."""
    document = read_stack_document(path) or {}
    name = Path(path).name
    if not isinstance(document, dict):
        raise SpecError([Problem(name, "a stack file is a mapping with a config: section")])
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise SpecError([Problem(name, "its config: section must be a mapping of namespace:key entries")])
    entries = {str(key): value for key, value in config.items()}
    return _split(entries, lambda key: isinstance(entries[key], dict) and set(entries[key]) == {"secure"})


def from_pulumi_runtime() -> RawConfig:
    """The project's entries as the Pulumi engine passed them to this program."""
    # pulumi.Config reads one key at a time; unknown keys can only be found by listing them all, which
    # the SDK offers through pulumi.runtime.config (the same maps pulumi.Config reads from).
    from pulumi.runtime import config as runtime_config

    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret_keys = set(runtime_config.get_config_secret_keys_env())
    return _split(merged, lambda key: runtime_config.is_config_secret(key) or key in secret_keys)
