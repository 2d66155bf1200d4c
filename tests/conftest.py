"""Shared fixtures: the repository on sys.path, the reference stack, and a mutable copy of it."""
from __future__ import annotations

import copy
import functools
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from config.loader import PROJECT, RawConfig  # noqa: E402

HK_PROD = ROOT / "Pulumi.hk-prod.yaml"

# The scratch-root fixtures (node, control_plane, etcd) of the Linux bootstrap and node-step script tests.
pytest_plugins = ["tests.scratch_root"]


@functools.cache
def _hk_prod_config() -> dict:
    return yaml.safe_load(HK_PROD.read_text())["config"]


def hk_prod_values() -> dict:
    """The hk-prod stack's project config, keyed without the namespace, as plain data (a copy of its own: the file is
    read once per test process, and hundreds of tests change their copy)."""
    prefix = f"{PROJECT}:"
    return {k[len(prefix):]: copy.deepcopy(v) for k, v in _hk_prod_config().items() if k.startswith(prefix)}


def with_legacy_windows_build(values: dict) -> dict:
    """hk-prod with hk-win-3 on Windows Server 2019, accepted through windows.allowUnsupportedVersions:
    two Windows builds in one cluster, for tests of what differs per build (RuntimeClasses, Fluent Bit)."""
    values["nodes"]["windows"][2]["version"] = "win2019"
    values["windows"]["allowUnsupportedVersions"] = ["win2019"]
    # Velero's Windows node agent exists for Windows Server 2022 only (config.rules backups): objects only.
    values["backup"]["fileSystemBackup"] = False
    return values


def leaves(value, path=()):
    """(path, value) for every leaf of nested dicts and lists, depth first."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from leaves(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from leaves(child, (*path, index))
    else:
        yield path, value


def hk_prod_spec():
    """hk-prod as the program sees it: Pulumi.hk-prod.yaml through config.loader. Renderer tests build their
    parameters from it with the plan's own functions (plan/*.py), never by hand."""
    from config.loader import load
    return load(raw_config(hk_prod_values())).spec


def raw_config(values: dict, secure: frozenset[str] = frozenset()) -> RawConfig:
    return RawConfig(values=values, secure_keys=secure)


def problems(values: dict, secure: frozenset[str] = frozenset()) -> list[str]:
    """Every problem config.loader finds in `values`, as "path: message" lines; [] when they load."""
    from config.loader import SpecError, load
    try:
        load(raw_config(values, secure))
    except SpecError as error:
        return [str(p) for p in error.problems]
    return []


@pytest.fixture(scope="session", autouse=True)
def synth_key_file(tmp_path_factory):
    """Synth's secret-marker key lives in the test session, not in the user's cache."""
    import os
    os.environ["HYBRID_CLUSTER_SYNTH_KEY_FILE"] = str(tmp_path_factory.mktemp("synth-key") / "key")


@pytest.fixture(autouse=True)
def _new_stack_runs_reused(request):
    """A test's runs of a new stack reuse this process's recent identical ones (tools/mock/program.py
    reuse_new_stack_runs), except in a test that patches anything (it asks for monkeypatch): the program it runs is
    not the one those runs ran."""
    from tools.mock import program
    program.reuse_new_stack_runs("monkeypatch" not in request.fixturenames)


@pytest.fixture
def hk_values() -> dict:
    return copy.deepcopy(hk_prod_values())


@pytest.fixture(scope="session")
def hk_recording():
    """hk-prod declared once per test process under the mock engine (tools/mock/program.py), for the many tests
    that only read what it declares. Read-only: a test that changes the stack runs its own program."""
    from tools.mock.program import run_program
    recording = run_program(raw_config(hk_prod_values()))
    assert not recording.plan.errors, recording.plan.errors
    return recording
