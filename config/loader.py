"""Turns a stack's raw configuration (from the Pulumi runtime or a stack file) into a validated StackSpec,
or into the full list of problems, each at its key path, before any resource is declared.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import TypeAdapter, ValidationError

from . import rules
from .model import StackSpec
from .rules import Problem

PROJECT = "hybrid-cluster"

# Secret config keys: read only as secret Outputs (config.secrets), never part of the model.
SECRET_KEYS: dict[str, str] = {
    "proxmoxApiToken": "Proxmox VE API token, USER@REALM!TOKENID=UUID",
    "proxmoxSshPrivateKey": "SSH private key of proxmox.sshUser on the Proxmox nodes (snippet uploads go over SSH)",
    "hypervSshPrivateKey": "SSH private key for the Hyper-V hosts' OpenSSH (hyperv.auth: privateKey)",
    "hypervSshPassword": "SSH password for the Hyper-V hosts' OpenSSH (hyperv.auth: password)",
    "nodeSshPrivateKey": "SSH private key matching access.sshPublicKeys, for the Linux nodes",
    "windowsAdminPassword": "local Administrator password of the golden Windows images (PowerShell Direct)",
    "bastionSshPrivateKey": "SSH private key for access.bastion (only when a bastion is configured)",
    "smbUsername": "user of the SMB share storage.smbSource",
    "smbPassword": "password of the SMB share storage.smbSource",
    "grafanaAdminPassword": "password of Grafana's admin user",
}


class SpecError(Exception):
    """The stack configuration is invalid; `problems` holds every error found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("invalid stack configuration:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class RawConfig:
    """The project's config entries by key (without the `hybrid-cluster:` prefix)."""

    values: Mapping[str, Any]
    secure_keys: frozenset[str]


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
    problems: list[Problem] = []
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
        if alias not in raw.values:
            if field.is_required():
                problems.append(Problem(alias, "is required"))
            else:
                sections[name] = field.get_default(call_default_factory=True)
            continue
        try:
            sections[name] = TypeAdapter(field.annotation).validate_python(_decode(raw.values[alias]))
        except ValidationError as error:
            problems += [Problem(_path(alias, e["loc"]), e["msg"]) for e in error.errors()]

    parsed = {StackSpec.model_fields[name].alias or name for name in sections}
    spec = StackSpec.model_construct(**sections)
    found = rules.check(spec, parsed)
    problems += [p for p in found if p.severity == "error"]
    if problems:
        raise SpecError(problems)
    return LoadedStack(spec=StackSpec.model_validate(sections), warnings=[p for p in found if p.severity == "warning"])


def from_stack_file(path: str | os.PathLike[str]) -> RawConfig:
    """The project's entries of a Pulumi.<stack>.yaml file (other namespaces belong to providers)."""
    document = yaml.safe_load(Path(path).read_text()) or {}
    values: dict[str, Any] = {}
    secure: set[str] = set()
    for full_key, value in (document.get("config") or {}).items():
        namespace, _, key = str(full_key).partition(":")
        if namespace != PROJECT:
            continue
        values[key] = value
        if isinstance(value, dict) and set(value) == {"secure"}:
            secure.add(key)
    return RawConfig(values=values, secure_keys=frozenset(secure))


def from_pulumi_runtime() -> RawConfig:
    """The project's entries as the Pulumi engine passed them to this program."""
    # pulumi.Config reads one key at a time; unknown keys can only be found by listing them all, which
    # the SDK offers through pulumi.runtime.config (the same maps pulumi.Config reads from).
    from pulumi.runtime import config as runtime_config

    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    prefix = f"{PROJECT}:"
    values = {key[len(prefix):]: value for key, value in merged.items() if key.startswith(prefix)}
    secret = {key[len(prefix):] for key in merged if key.startswith(prefix) and runtime_config.is_config_secret(key)}
    secret |= {key[len(prefix):] for key in runtime_config.get_config_secret_keys_env() if key.startswith(prefix)}
    return RawConfig(values=values, secure_keys=frozenset(secret))
