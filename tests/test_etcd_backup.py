"""Scheduled etcd snapshots: the rendered program, units and install/remove scripts (shellchecked, the
program executed against stub crictl/mount in a scratch directory), and their place in the graph."""
from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from render import etcd_backup
from render.shell import script_from_bash_command
from tests.conftest import hk_prod_values, raw_config
from tests.validators import TEST_ROOT_VARIABLE, bash_input, shellcheck
from tools.mockrun import run_program

PARAMS = etcd_backup.EtcdBackupParams(node_name="hk-cp-2", nfs_server="10.10.10.21",
                                      nfs_path="/export/etcd-snapshots", schedule="*-*-* 00/6:00:00", keep=3)


@pytest.mark.parametrize("script", [etcd_backup.snapshot_program(PARAMS), etcd_backup.render_install(PARAMS),
                                    etcd_backup.render_remove()], ids=["program", "install", "remove"])
def test_scripts_pass_shellcheck(script, tmp_path):
    path = tmp_path / "script.sh"
    path.write_text(script if script.startswith("#!") else "#!/usr/bin/env bash\n" + script)
    shellcheck(path)


def test_units_run_the_program_on_the_configured_schedule_and_catch_up_after_downtime():
    service, timer = etcd_backup.service_unit(PARAMS), etcd_backup.timer_unit(PARAMS)
    assert f"ExecStart={etcd_backup.SNAPSHOT_PROGRAM}" in service and "Type=oneshot" in service
    assert "OnCalendar=*-*-* 00/6:00:00" in timer and "Persistent=true" in timer
    assert "WantedBy=timers.target" in timer


@pytest.mark.parametrize("change,message", [
    ({"nfs_server": "nfs;reboot"}, "NFS server"),
    ({"nfs_path": "/export/../etc"}, "NFS path"),
    ({"nfs_path": "export"}, "NFS path"),
    ({"schedule": "daily'; rm -rf /"}, "schedule"),
    ({"keep": 0}, "keep"),
    ({"node_name": "HK_CP"}, "node name"),
])
def test_input_that_would_break_the_scripts_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        etcd_backup.render_install(dataclasses.replace(PARAMS, **change))


STUBS = {
    "crictl": r"""
case "$*" in
  *" ps "*) echo 0123456789ab ;;
  *" exec "*" snapshot save "*)
    # crictl --runtime-endpoint E exec ID etcdctl ... snapshot save PATH: the container's /var/lib/etcd
    # is the host's (here the scratch directory the test points both at).
    path="${!#}"
    echo "snapshot" >"$path"
    printf '%s\n' "$*" >>"$T/crictl-exec"
    ;;
  *" exec "*" etcdutl snapshot status "*)
    printf '%s\n' "$*" >>"$T/crictl-exec"
    [[ -z ${CORRUPT:-} ]] || { echo "Error: snapshot file integrity check failed" >&2; exit 1; }
    ;;
esac
""",
    "mountpoint": '[[ -f "$T/mounted" ]]\n',
    "mount": 'echo "$@" >>"$T/mounts"; touch "$T/mounted"\n',
    "umount": 'rm -f "$T/mounted"\n',
    "date": "echo 20270101T000000Z\n",
}


def run_snapshot(tmp_path: Path, existing: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    stubs, etcd_dir, target = tmp_path / "stubs", tmp_path / "var-lib-etcd", tmp_path / "target"
    for directory in (stubs, etcd_dir, target / "hk-cp-2"):
        directory.mkdir(parents=True, exist_ok=True)
    for name, body in STUBS.items():
        (stubs / name).write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + body)
        (stubs / name).chmod(0o755)
    for name in existing:
        (target / "hk-cp-2" / name).write_text("old\n")
    # The program's fixed paths, pointed at the scratch directory for the test.
    program = (etcd_backup.snapshot_program(PARAMS)
               .replace("/var/lib/etcd/", f"{etcd_dir}/").replace(f"MOUNT='{etcd_backup.MOUNT_POINT}'", f"MOUNT='{target}'")
               .replace(f"TEXTFILE_DIR='{etcd_backup.TEXTFILE_DIR}'", f"TEXTFILE_DIR='{tmp_path / 'textfile'}'"))
    assert etcd_backup.TEXTFILE_DIR not in program, "the test must not write to the machine's own paths"
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "T": str(tmp_path),
                               "ETCD_DIR": str(etcd_dir), **env})


def test_a_snapshot_is_stored_under_the_node_and_only_the_newest_are_kept(tmp_path):
    existing = [f"etcd-hk-cp-2-2026120{day}T000000Z.db" for day in range(1, 6)] + ["notes.txt"]
    result = run_snapshot(tmp_path, existing)
    assert result.returncode == 0, result.stderr
    stored = sorted(p.name for p in (tmp_path / "target" / "hk-cp-2").iterdir())
    # keep=3: the new one and the two newest old ones; files that are not snapshots are left alone.
    assert stored == ["etcd-hk-cp-2-20261204T000000Z.db", "etcd-hk-cp-2-20261205T000000Z.db",
                      "etcd-hk-cp-2-20270101T000000Z.db", "notes.txt"]
    assert (tmp_path / "mounts").read_text().split() == ["-t", "nfs", "10.10.10.21:/export/etcd-snapshots",
                                                          str(tmp_path / "target")]
    assert not (tmp_path / "mounted").exists(), "the target is unmounted after the copy"
    assert list((tmp_path / "var-lib-etcd").iterdir()) == [], "the snapshot does not stay beside etcd's data"
    execs = (tmp_path / "crictl-exec").read_text().splitlines()
    assert "--cacert=/etc/kubernetes/pki/etcd/ca.crt" in execs[0] and "snapshot save" in execs[0]
    assert "etcdutl snapshot status" in execs[1], "the snapshot is verified before it is copied"
    metric = (tmp_path / "textfile" / f"{etcd_backup.SNAPSHOT_METRIC}.prom").read_text()
    assert f'{etcd_backup.SNAPSHOT_METRIC}{{node="hk-cp-2"}} ' in metric and "# TYPE" in metric
    assert [p.name for p in (tmp_path / "textfile").iterdir()] == [f"{etcd_backup.SNAPSHOT_METRIC}.prom"]


def test_a_snapshot_that_fails_verification_is_not_stored_and_records_no_success(tmp_path):
    result = run_snapshot(tmp_path, [], CORRUPT="1")
    assert result.returncode == 1 and "failed etcdutl snapshot status" in result.stderr
    assert list((tmp_path / "target" / "hk-cp-2").iterdir()) == []
    assert not (tmp_path / "textfile").exists(), "no success is recorded, so the staleness alert fires"
    assert list((tmp_path / "var-lib-etcd").iterdir()) == []


def test_a_copy_that_differs_from_the_snapshot_is_discarded(tmp_path):
    # install writes the copy; a stub install that truncates it stands for a short write on NFS.
    (tmp_path / "stubs").mkdir()
    (tmp_path / "stubs" / "install").write_text('#!/usr/bin/env bash\n: >"${!#}"\n')
    (tmp_path / "stubs" / "install").chmod(0o755)
    result = run_snapshot(tmp_path, [])
    assert result.returncode == 1 and "differs from the snapshot" in result.stderr
    assert list((tmp_path / "target" / "hk-cp-2").iterdir()) == []
    assert not (tmp_path / "textfile").exists()


def test_every_control_plane_node_gets_a_schedule_after_it_is_ready_and_loses_it_on_removal(hk_recording):
    recording = hk_recording
    for node in ("hk-cp-1", "hk-cp-2", "hk-cp-3"):
        schedule = recording.named(f"hk-prod-etcd-backup-{node}")
        install = script_from_bash_command(schedule.inputs["create"])
        assert "OnCalendar=*-*-* 00/6:00:00" in bash_input(install, "TIMER_TEXT")
        program = bash_input(install, "PROGRAM_TEXT")
        assert "TARGET='10.10.10.21:/export/etcd-snapshots'" in program and f"NODE='{node}'" in program
        assert "systemctl disable --now" in script_from_bash_command(schedule.inputs["delete"])
        ready = "hk-prod-kubeadm-hk-cp-1-ready" if node == "hk-cp-1" else f"hk-prod-kubeadm-{node}-drain"
        assert recording.named(ready).urn in schedule.dependencies
    assert not [r for r in recording.resources if r.name.startswith("hk-prod-etcd-backup-hk-lnx")]
    rule = "hk-prod-observability-prometheusrule-monitoring-hybrid-cluster"
    assert "hybrid-etcd-snapshots" in [g["name"] for g in recording.named(rule).inputs["spec"]["groups"]]
    values = hk_prod_values()
    del values["etcdBackup"]
    without = run_program(raw_config(values))
    assert not [r for r in without.resources if r.name.startswith("hk-prod-etcd-backup-")]
    assert "hybrid-etcd-snapshots" not in [g["name"] for g in without.named(rule).inputs["spec"]["groups"]]


def test_install_puts_the_files_enables_the_timer_and_proves_the_target_and_remove_undoes_it(tmp_path):
    stubs, root = tmp_path / "stubs", tmp_path / "root"
    stubs.mkdir()
    root.mkdir()
    (stubs / "systemctl").write_text('#!/usr/bin/env bash\necho "$*" >>"$T/systemctl"\n'
                                     '[[ "$*" != "start hybrid-cluster-etcd-snapshot.service" || -z ${FAIL:-} ]]\n')
    (stubs / "journalctl").write_text("#!/usr/bin/env bash\necho journal\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "T": str(tmp_path), TEST_ROOT_VARIABLE: str(root)}
    install = etcd_backup.render_install(PARAMS)
    for _ in range(2):
        result = subprocess.run(["bash", "-c", install], capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stderr
    program = root / etcd_backup.SNAPSHOT_PROGRAM.lstrip("/")
    assert program.read_text() == etcd_backup.snapshot_program(PARAMS) and oct(program.stat().st_mode & 0o777) == "0o700"
    assert (root / "etc/systemd/system" / etcd_backup.TIMER).read_text().strip() == etcd_backup.timer_unit(PARAMS).strip()
    calls = (tmp_path / "systemctl").read_text().splitlines()
    assert calls.count(f"enable --now {etcd_backup.TIMER}") == 2 and calls.count(f"start {etcd_backup.SERVICE}") == 2
    failed = subprocess.run(["bash", "-c", install], capture_output=True, text=True, env={**env, "FAIL": "1"})
    assert failed.returncode == 1 and "the first etcd snapshot failed (hk-cp-2," in failed.stderr
    removed = subprocess.run(["bash", "-c", etcd_backup.render_remove()], capture_output=True, text=True, env=env)
    assert removed.returncode == 0, removed.stderr
    assert not program.exists() and not (root / "etc/systemd/system" / etcd_backup.TIMER).exists()
    assert f"disable --now {etcd_backup.TIMER}" in (tmp_path / "systemctl").read_text()
