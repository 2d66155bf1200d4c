"""Velero's repository password (#37 item 6): render/scripts/velero-repository-password.sh run against a stub kubectl
that keeps the velero namespace's Secret and BackupRepositories in a scratch directory, for every case the script
decides (no Secret; the stack's password already; another password with and without repositories; Velero's default
kept or refused), and the step's place in the program: before Velero's release, only with file-system backups."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.loader import load
from config.secret_keys import required_secrets
from render import backup
from tests.conftest import hk_prod_values, problems, raw_config
from tools.mock.program import run_program

PASSWORD = "correct-horse-battery-staple-7"

# The stub keeps the cluster in $STATE/cluster.json: {"secret": <base64 or null>, "crd": bool, "repositories": [..]};
# every argv goes to $STATE/argv (one JSON list per line), so a test can show the password never was one.
STUB = f"""#!{sys.executable}
import base64, json, os, sys
state = os.path.join(os.environ["STATE"], "cluster.json")
cluster = json.load(open(state))
args = sys.argv[1:]
with open(os.path.join(os.environ["STATE"], "argv"), "a") as log:
    log.write(json.dumps(args) + "\\n")
words = [a for a in args if not a.startswith("-")]
if os.environ.get("FAIL_ON") and os.environ["FAIL_ON"] in words:
    sys.exit("Unable to connect to the server: net/http: request canceled (Client.Timeout exceeded)")
if "create" in args and "--dry-run=client" in args:
    key, path = next(a for a in args if a.startswith("--from-file=")).split("=", 1)[1].split("=", 1)
    assert path == "/dev/stdin", path
    value = sys.stdin.buffer.read()
    print(json.dumps({{"kind": "Secret", "data": {{key: base64.b64encode(value).decode()}}}}))
elif args[0] in ("create", "replace"):
    document = json.load(sys.stdin)
    if args[0] == "create" and cluster["secret"] is not None:
        sys.exit("AlreadyExists")
    if args[0] == "replace" and cluster["secret"] is None:
        sys.exit("NotFound")
    cluster["secret"] = document["data"]["repository-password"]
    json.dump(cluster, open(state, "w"))
elif words[:2] == ["get", "crd"]:
    print("customresourcedefinition.apiextensions.k8s.io/backuprepositories.velero.io" if cluster["crd"] else "")
elif "backuprepositories.velero.io" in words:
    print("\\n".join("backuprepository.velero.io/" + r for r in cluster["repositories"]))
elif "secret" in words:
    if cluster["secret"] is None:
        sys.exit(0 if "--ignore-not-found" in args else "NotFound")
    if "name" in args:
        print("secret/velero-repo-credentials")
    else:
        print(cluster["secret"], end="")
else:
    sys.exit("unexpected: " + " ".join(args))
"""


def run(tmp_path: Path, secret: str | None, repositories: list[str], password: str = PASSWORD,
        keep_default: bool = False, fail_on: str = "") -> tuple[subprocess.CompletedProcess[str], dict]:
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    (stubs / "kubectl").write_text(STUB)
    (stubs / "kubectl").chmod(0o755)
    encoded = base64.b64encode(secret.encode()).decode() if secret is not None else None
    (tmp_path / "cluster.json").write_text(json.dumps({"secret": encoded, "crd": bool(repositories) or secret is not None,
                                                      "repositories": repositories}))
    result = subprocess.run(["bash", "-c", backup.render_repository_password(keep_default)], input=f"{password}\n",
                            capture_output=True, text=True,
                            env={**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "STATE": str(tmp_path),
                                 "HYBRID_CLUSTER_TEST_ROOT": str(tmp_path), "FAIL_ON": fail_on})
    cluster = json.loads((tmp_path / "cluster.json").read_text())
    stored = base64.b64decode(cluster["secret"]).decode() if cluster["secret"] is not None else None
    argv = (tmp_path / "argv").read_text() if (tmp_path / "argv").exists() else ""
    assert password not in argv, "the password was on a command line"
    return result, {"stored": stored}


def test_a_new_cluster_gets_the_stacks_password_before_velero_makes_its_default(tmp_path):
    result, after = run(tmp_path, secret=None, repositories=[])
    assert result.returncode == 0, result.stderr
    assert after["stored"] == PASSWORD and "made with veleroRepositoryPassword" in result.stdout


def test_the_stacks_password_already_there_is_left_alone(tmp_path):
    result, after = run(tmp_path, secret=PASSWORD + "\n", repositories=["ns-a-primary-kopia-x1"])
    assert result.returncode == 0, result.stderr
    assert after["stored"] == PASSWORD + "\n" and "holds veleroRepositoryPassword already" in result.stdout


def test_velero_default_without_repositories_is_replaced(tmp_path):
    result, after = run(tmp_path, secret=backup.VELERO_DEFAULT_REPOSITORY_PASSWORD, repositories=[])
    assert result.returncode == 0, result.stderr
    assert after["stored"] == PASSWORD and "replaced" in result.stdout


def test_another_password_is_never_replaced_even_without_repositories(tmp_path):
    """Records of repositories can be gone (`velero backup-location delete` removes them) while the repositories stay
    in the bucket: only Velero's own default, with no repository here, is ever replaced."""
    result, after = run(tmp_path, secret="someone-chose-this-password", repositories=[])
    assert result.returncode != 0 and after["stored"] == "someone-chose-this-password"
    assert "neither veleroRepositoryPassword nor Velero's default" in result.stderr


@pytest.mark.parametrize("fail_on", ["crd", "backuprepositories.velero.io", "secret"])
def test_a_read_that_fails_stops_the_step_and_changes_nothing(tmp_path, fail_on):
    """An API server that does not answer is never taken for "no repositories"."""
    result, after = run(tmp_path, secret=backup.VELERO_DEFAULT_REPOSITORY_PASSWORD, repositories=["r1"],
                        fail_on=fail_on)
    assert result.returncode != 0 and after["stored"] == backup.VELERO_DEFAULT_REPOSITORY_PASSWORD


def test_a_cluster_recovering_default_password_backups_may_say_so(tmp_path):
    """A new cluster that must read repositories an earlier release's cluster made with Velero's default."""
    result, after = run(tmp_path, secret=None, repositories=[], password=backup.VELERO_DEFAULT_REPOSITORY_PASSWORD,
                        keep_default=True)
    assert result.returncode == 0, result.stderr
    assert after["stored"] == backup.VELERO_DEFAULT_REPOSITORY_PASSWORD


def test_velero_default_with_repositories_stops_the_step_and_is_never_changed(tmp_path):
    result, after = run(tmp_path, secret=backup.VELERO_DEFAULT_REPOSITORY_PASSWORD, repositories=["ns-a-primary-kopia-x1"])
    assert result.returncode != 0
    assert after["stored"] == backup.VELERO_DEFAULT_REPOSITORY_PASSWORD
    assert "keepVeleroDefaultRepositoryPassword" in result.stderr and "Repository password" in result.stderr


def test_velero_default_with_repositories_is_kept_when_the_stack_says_so(tmp_path):
    result, after = run(tmp_path, secret=backup.VELERO_DEFAULT_REPOSITORY_PASSWORD, repositories=["r1", "r2"],
                        keep_default=True)
    assert result.returncode == 0, result.stderr
    assert after["stored"] == backup.VELERO_DEFAULT_REPOSITORY_PASSWORD
    assert "warning:" in result.stdout and "2 repositories" in result.stdout


def test_a_changed_stack_password_never_replaces_the_one_repositories_use(tmp_path):
    """A rotation Velero cannot follow: the step fails and says what to do; the Secret keeps the working password."""
    result, after = run(tmp_path, secret="the-password-of-last-year-42", repositories=["r1"])
    assert result.returncode != 0 and after["stored"] == "the-password-of-last-year-42"
    assert "cannot change a repository's password" in result.stderr


@pytest.mark.parametrize("password, fragment", [("short", "fewer than 16"),
                                                (backup.VELERO_DEFAULT_REPOSITORY_PASSWORD, "published default"),
                                                (" padded-password-of-length ", "white space")])
def test_a_weak_password_is_refused_before_anything_is_read(tmp_path, password, fragment):
    result, after = run(tmp_path, secret=None, repositories=[], password=password)
    assert result.returncode != 0 and fragment in result.stderr and after["stored"] is None


def test_the_step_comes_before_velero_and_only_with_file_system_backups(hk_recording):
    step = hk_recording.named("hk-prod-backup-repository-password")
    assert type(step.inputs["stdin"]).__name__ == "Secret"
    assert step.urn in hk_recording.named("hk-prod-backup-velero").dependencies
    assert hk_recording.named("hk-prod-backup-namespace-velero").urn in step.dependencies
    values = hk_prod_values()
    values["backup"]["fileSystemBackup"] = False
    spec = load(raw_config(values)).spec
    assert "veleroRepositoryPassword" not in required_secrets(spec)
    recording = run_program(raw_config(values), secret_keys=required_secrets(spec))
    assert not [r for r in recording.resources if r.name == "hk-prod-backup-repository-password"]


def test_keeping_velero_default_is_a_relaxation_said_back():
    values = hk_prod_values()
    values["backup"]["keepVeleroDefaultRepositoryPassword"] = True
    warnings = [str(w) for w in load(raw_config(values)).warnings]
    assert any(w.startswith("backup.keepVeleroDefaultRepositoryPassword: ") and "published default" in w
               for w in warnings)
    values["backup"]["fileSystemBackup"] = False
    assert any(p.startswith("backup.keepVeleroDefaultRepositoryPassword: ") and "remove the key" in p
               for p in problems(values))
