"""tools/mock/program.py reuse_new_stack_runs: a run of a new stack made again with the same inputs is answered with
a copy of the first, and nothing else is; tests/conftest.py turns it off for a test that patches anything."""
from __future__ import annotations

import uuid

import pytest

from tests.conftest import hk_prod_values, raw_config
from tools.mock import program
from tools.mock.program import changed_resources, run_program


def _unseen_secrets() -> dict[str, str]:
    """Secrets no earlier run of this process used: the runs kept from other tests cannot answer these."""
    return {"windowsAdminPassword": f"unseen-{uuid.uuid4()}"}


@pytest.fixture
def counted(monkeypatch):
    """Reuse on (the fixture's monkeypatch turned it off), and a count of the program's real runs."""
    runs: list[None] = []
    real = program.run_declarations

    def run_declarations(*args, **kwargs):
        runs.append(None)
        return real(*args, **kwargs)

    monkeypatch.setattr(program, "run_declarations", run_declarations)
    program.reuse_new_stack_runs(True)
    yield runs
    program.reuse_new_stack_runs(False)


def test_the_same_new_stack_run_is_made_once_and_each_caller_gets_its_own_copy(counted):
    values, secrets = hk_prod_values(), _unseen_secrets()
    first = run_program(raw_config(values), secrets=secrets)
    first.resources.clear()
    first.state.clear()
    again = run_program(raw_config(values), secrets=secrets)
    assert len(counted) == 1
    assert again.resources and again.state
    fresh = program._copy(again)
    assert changed_resources(fresh, again) == set() and fresh.resources is not again.resources
    assert [r.urn for r in fresh.resources] == [r.urn for r in again.resources] and fresh.state.keys() == again.state.keys()
    assert again.program is fresh.program          # the module globals, shared


def test_other_inputs_and_every_run_on_a_state_or_with_a_fault_are_made(counted):
    values, secrets = hk_prod_values(), _unseen_secrets()
    base = run_program(raw_config(values), secrets=secrets)
    run_program(raw_config(values), secrets=secrets, preview=True)
    run_program(raw_config(values), secrets=secrets, state=base.state)
    run_program(raw_config(values), secrets=secrets, fail=("hk-prod-hk-cp-1-vm",))
    assert len(counted) == 4


def test_the_tests_reuse_runs_unless_they_patch():
    assert program._REUSE is True


def test_a_test_that_patches_makes_every_run(monkeypatch):
    assert program._REUSE is False
