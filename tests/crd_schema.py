"""Strict validation of custom resources against the CRD schemas vendored in tests/fixtures/schemas.

The schemas there are upstream ``openAPIV3Schema`` documents, unchanged (tests/fixtures/schemas/README.md
names each one's repository, path and commit). The
API server prunes unknown fields of a custom resource instead of rejecting them, so a typo such as
``calicoNetwork.mut`` would be silently dropped on a real cluster. To catch it here, every object schema that
lists ``properties`` and does not carry ``x-kubernetes-preserve-unknown-fields`` gets
``additionalProperties: false`` before validating, as that README prescribes.

Not checked: CEL rules (``x-kubernetes-validations``) and OpenAPI ``format``s; callers assert what they need
of those themselves. A missing schema file fails the test: the schemas are part of the workspace, so their
absence is a broken checkout, not a reason to skip.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema

# Vendored in the repository, so that a plain clone runs the tests (nothing is read from outside it).
SCHEMA_DIR = Path(__file__).resolve().parent / "fixtures" / "schemas"

_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


class CustomResourceInvalid(AssertionError):
    """The object does not satisfy the strict form of its CRD schema; ``errors`` lists each problem."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` in which every closed object schema rejects properties it does not list."""
    strict = copy.deepcopy(schema)
    _close_objects(strict)
    return strict


def _close_objects(node: Any) -> None:
    if not isinstance(node, dict):
        return
    if ("properties" in node and not node.get("x-kubernetes-preserve-unknown-fields")
            and "additionalProperties" not in node):
        node["additionalProperties"] = False
    for child in node.get("properties", {}).values():
        _close_objects(child)
    for key in ("items", "additionalProperties", "not"):
        _close_objects(node.get(key))
    for key in _SUBSCHEMA_LISTS:
        for child in node.get(key, []):
            _close_objects(child)


def load_schema(schema_path: str | Path) -> dict[str, Any]:
    """The schema at ``schema_path``; a bare file name is looked up in SCHEMA_DIR."""
    path = Path(schema_path)
    if not path.is_absolute() and path.parent == Path("."):
        path = SCHEMA_DIR / path
    assert path.is_file(), (
        f"CRD schema {path} is missing from {SCHEMA_DIR} (see its README.md)")
    return json.loads(path.read_text())


def validate_custom_resource(obj: dict[str, Any], schema_path: str | Path) -> None:
    """Raise CustomResourceInvalid unless ``obj`` satisfies the strict form of the schema."""
    schema = strict_schema(load_schema(schema_path))
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = validator_class(schema)
    errors = sorted(
        f"{'/'.join(str(part) for part in error.absolute_path) or '<root>'}: {error.message}"
        for error in validator.iter_errors(obj)
    )
    if errors:
        raise CustomResourceInvalid(errors)
