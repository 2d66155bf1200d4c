"""The bash command wrapper, run for real by both login shells the nodes have (dash-like sh and bash)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from render.shell import HEREDOC_END, bash_command, script_from_bash_command

SCRIPT = """set -euo pipefail
read -r secret
printf 'args=%s dollar=%s quote=%s\\n' "$#" '$HOME' "it's"
printf 'secret-length=%s\\n' "${#secret}"
"""


@pytest.mark.parametrize("shell", ["sh", "bash", "dash"])
def test_command_runs_under_the_login_shell_with_stdin_left_to_the_script(shell, monkeypatch, tmp_path):
    if shutil.which(shell) is None:
        pytest.fail(f"{shell} missing")
    # The real command runs `sudo -n bash`; here a stand-in sudo (first on PATH) drops `-n` and runs it.
    fake = tmp_path / "sudo"
    fake.write_text('#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    result = subprocess.run([shell, "-c", bash_command(SCRIPT)], input="s3cret\n", capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "args=0 dollar=$HOME quote=it's\nsecret-length=6\n"


def test_failure_propagates():
    result = subprocess.run(["sh", "-c", bash_command("exit 7").replace("sudo -n ", "")], capture_output=True)
    assert result.returncode == 7


def test_round_trip_and_rejections():
    assert script_from_bash_command(bash_command(SCRIPT)) == SCRIPT
    assert script_from_bash_command("echo hi") is None
    with pytest.raises(ValueError):
        bash_command(f"echo\n{HEREDOC_END}\necho")
