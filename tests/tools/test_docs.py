"""The generated reference (tools.docs): the JSON Schema of the stack file and docs/configuration.md are what
config.model says today, every field has a description, and the schema accepts the example stacks and refuses
what the loader refuses (an unknown or snake_case key, a wrong type, a clear-text secret)."""
from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml

from config.model import StackSpec
from tests.conftest import ROOT
from tools import docs

STACK_FILES = [ROOT / "Pulumi.hk-prod.yaml", *sorted(ROOT.glob("examples/*/Pulumi.*.yaml"))]


def validator() -> jsonschema.Draft202012Validator:
    schema = docs.stack_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def test_generated_files_are_current():
    # Stale after a model change: run `python -m tools.docs` and commit the result.
    assert docs.main(["--check"]) == 0


def _models(model=StackSpec, seen=None):
    seen = set() if seen is None else seen
    if model in seen:
        return seen
    seen.add(model)
    for field in model.model_fields.values():
        for child in docs._models(field.annotation):
            _models(child, seen)
    return seen


def test_every_field_has_a_description():
    missing = [f"{model.__name__}.{name}" for model in _models() for name, field in model.model_fields.items()
               if not (field.description or "").strip()]
    assert missing == []
    assert len(_models()) >= 30


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_the_schema_accepts_every_example(path):
    errors = list(validator().iter_errors(yaml.safe_load(path.read_text())))
    assert errors == [], [e.message for e in errors]


@pytest.mark.parametrize("change, fragment", [
    (lambda c: c["hybrid-cluster:cluster"].update(pod_cidr="10.244.0.0/16"), "pod_cidr"),
    (lambda c: c.update({"hybrid-cluster:ntp_servers": ["pool.ntp.org"]}), "ntp_servers"),
    (lambda c: c["hybrid-cluster:nodes"]["controlPlane"][0].update(cpu="2"), "'2' is not of type 'integer'"),
    (lambda c: c.update({"hybrid-cluster:smbPassword": "hunter2"}), "hunter2"),
    (lambda c: c.update({"proxmoxve:endpoint": "https://x"}), "proxmoxve:endpoint"),
    (lambda c: c["hybrid-cluster:storage"]["smb"].update(dirMode="770"), "770"),
    (lambda c: c.pop("hybrid-cluster:nodes"), "hybrid-cluster:nodes"),
])
def test_the_schema_refuses_what_the_loader_refuses(change, fragment):
    document = copy.deepcopy(yaml.safe_load((ROOT / "Pulumi.hk-prod.yaml").read_text()))
    change(document["config"])
    messages = [e.message for e in validator().iter_errors(document)]
    assert any(fragment in m for m in messages), messages


def test_secrets_are_accepted_in_their_encrypted_form():
    document = yaml.safe_load((ROOT / "Pulumi.hk-prod.yaml").read_text())
    document["config"]["hybrid-cluster:smbPassword"] = {"secure": "v1:abc"}
    document["config"]["pulumi:template"] = "x"
    assert list(validator().iter_errors(document)) == []


def test_the_reference_lists_every_key_and_secret():
    text = docs.REFERENCE_PATH.read_text()
    # A type the generator could not resolve (a class used before its definition) shows as a ForwardRef.
    assert "ForwardRef" not in text
    for model in _models():
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in text, f"{model.__name__}.{name}"
    from config.secret_keys import SECRETS
    for key in SECRETS:
        assert f"| `{key}` |" in text


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_each_stack_file_points_editors_at_the_schema(path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    assert (path.parent / first.split("=", 1)[1]).resolve() == docs.SCHEMA_PATH


def test_relative_links_in_the_docs_resolve():
    import re
    pages = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []
