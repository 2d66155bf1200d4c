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
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from . import rules
from .model import StackSpec
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
# from hybrid-cluster: keys (components/machines.py, components/bootstrap.py), so a key there would be
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


def _message(error: ErrorDetails) -> str:
    # A ValueError raised by our own validators (config.model) is the message; pydantic's prefix is noise.
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
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
            problems.append(Problem(key, f"unknown key (known: {', '.join(sorted(aliases))})"))
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
                problems.append(Problem(alias, "is required"))
            else:
                sections[name] = field.get_default(call_default_factory=True)
            continue
        try:
            # Strict: no bool/str/float coercion (`cpu: true`, `insecure: "yes"` are errors, not 1 and true).
            sections[name] = TypeAdapter(field.annotation).validate_python(_decode(raw.values[alias]), strict=True)
        except ValidationError as error:
            problems += [Problem(_path(alias, e["loc"]), _message(e)) for e in error.errors()]

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


def read_stack_document(path: str | os.PathLike[str]) -> Any:
    """A stack file's YAML, or SpecError with every duplicate key or the syntax error at file:line.
    Messages quote no line of the file: the line could hold a secret."""
    name = Path(path).name
    loader = _StackFileLoader(Path(path).read_text())
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
