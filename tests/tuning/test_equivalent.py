"""tuning/equivalent.py, for each SDK function the program replaces: in place only over the SDK's own, back on
uninstall, and an SDK other than the one read keeps its own, with a warning."""
from __future__ import annotations

import pulumi
import pytest

from tuning import source_positions, unknowns

REPLACEMENTS = [unknowns.REPLACEMENT, source_positions.REPLACEMENT]


@pytest.fixture(params=REPLACEMENTS, ids=lambda replacement: replacement.name)
def replacement(request):
    yield request.param
    request.param.uninstall()


def _current(replacement):
    return getattr(replacement.module, replacement.name)


def test_the_sdk_read_is_the_one_running(replacement):
    assert replacement.matches() and _current(replacement) is replacement.sdk


def test_installed_over_the_sdks_own_and_put_back(replacement):
    assert replacement.install() and _current(replacement) is replacement.ours
    assert replacement.install()                      # again: already in place
    replacement.uninstall()
    assert _current(replacement) is replacement.sdk


def test_a_harness_stand_in_stays(replacement, monkeypatch):
    def stand_in(*_):
        return None
    monkeypatch.setattr(replacement.module, replacement.name, stand_in)
    assert not replacement.install() and _current(replacement) is stand_in
    replacement.uninstall()
    assert _current(replacement) is stand_in


def test_an_sdk_other_than_the_one_read_keeps_its_own_with_a_warning(replacement, monkeypatch):
    warned = []
    monkeypatch.setattr(replacement, "sha256", "0" * 64)
    monkeypatch.setattr(pulumi.log, "warn", warned.append)
    assert not replacement.install()
    assert _current(replacement) is replacement.sdk
    assert len(warned) == 1 and replacement.name in warned[0]
