"""Scheduled etcd snapshots: the rendered program, units and install/remove scripts (shellchecked, the program
executed against stub crictl/mount/ctr in a scratch directory, with the real gpg and throw-away keys), the restore's
decryption as docs/backup.md writes it, and their place in the graph."""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

import pytest

from render import etcd_backup
from render.backup import ObjectStore
from render.shell import script_from_bash_command
from tests.conftest import ROOT, hk_prod_values, raw_config
from tests.validators import bash_input, shellcheck, systemd_stub_env
from tools.mock.program import placeholder_secrets, run_program
from vocab.checks import openpgp_fingerprint

# The example key of Pulumi.hk-prod.yaml (its private half was never kept): for renderings nothing decrypts.
EXAMPLE_KEY = hk_prod_values()["etcdBackup"]["recipientKeys"][0]
PARAMS = etcd_backup.EtcdBackupParams(node_name="hk-cp-2", nfs_server="10.10.10.21", nfs_path="/export/etcd-snapshots",
                                      schedule="*-*-* 00/6:00:00", keep=3, recipient_keys=(EXAMPLE_KEY,))
STORE = ObjectStore(endpoint="https://s3.sg-dr.internal", bucket="velero-hk-prod", region="sg", prefix="hk-prod",
                    provider="ceph", ca_certificate="-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----")
OFFSITE = dataclasses.replace(PARAMS, offsite=etcd_backup.EtcdOffsite(store=STORE, image="docker.io/rclone/rclone:1.75.0"))


@dataclasses.dataclass(frozen=True)
class Custodian:
    """A recipient of the snapshots: a throw-away GnuPG home holding the private key, and the public key's armor."""
    home: Path
    public: str


def _custodian(directory: Path, name: str) -> Custodian:
    directory.mkdir(mode=0o700, parents=True)
    env = {**os.environ, "GNUPGHOME": str(directory)}
    subprocess.run(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key",
                    f"etcd-snapshots {name} <{name}@test.invalid>", "future-default", "default", "never"],
                   env=env, check=True, capture_output=True)
    public = subprocess.run(["gpg", "--armor", "--export"], env=env, check=True, capture_output=True, text=True).stdout
    return Custodian(directory, public)


@pytest.fixture(scope="module")
def custodians(tmp_path_factory) -> list[Custodian]:
    base = tmp_path_factory.mktemp("gnupg")
    made = [_custodian(base / name, name) for name in ("ops", "security")]
    yield made
    for custodian in made:
        subprocess.run(["gpgconf", "--homedir", str(custodian.home), "--kill", "gpg-agent"], capture_output=True)


def decrypt(custodian: Custodian, path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--decrypt", str(path)],
                          env={**os.environ, "GNUPGHOME": str(custodian.home)}, capture_output=True)


@pytest.mark.parametrize("script", [etcd_backup.snapshot_program(PARAMS), etcd_backup.snapshot_program(OFFSITE),
                                    etcd_backup.render_install(PARAMS), etcd_backup.render_install(OFFSITE),
                                    etcd_backup.render_remove()],
                         ids=["program", "program-offsite", "install", "install-offsite", "remove"])
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
    ({"recipient_keys": ()}, "recipient keys"),
    ({"recipient_keys": ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----",)},
     "recipient keys"),
])
def test_input_that_would_break_the_scripts_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        etcd_backup.render_install(dataclasses.replace(PARAMS, **change))


def test_a_key_file_with_two_keys_is_refused_as_gpg_would(custodians):
    """gpg's --recipient-file takes "a file containing exactly one key" (gpg(1)); the config layer says so first."""
    ops, security = custodians
    assert re.fullmatch(r"[0-9A-F]{40}", openpgp_fingerprint(ops.public))
    both = subprocess.run(["gpg", "--armor", "--export"], capture_output=True, text=True, check=True,
                          env={**os.environ, "GNUPGHOME": str(ops.home)}).stdout
    assert openpgp_fingerprint(both) == openpgp_fingerprint(ops.public)   # one key in that home
    joined = security.public.replace("-----BEGIN PGP PUBLIC KEY BLOCK-----", "", 1)
    with pytest.raises(ValueError):
        openpgp_fingerprint(ops.public.rstrip() + "\n" + joined)


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
  *" pull "*) printf '%s\n' "$*" >>"$T/crictl-pull" ;;
esac
""",
    "mountpoint": '[[ -f "$T/mounted" ]]\n',
    "mount": 'echo "$@" >>"$T/mounts"; touch "$T/mounted"\n',
    "umount": 'rm -f "$T/mounted"\n',
    "date": "echo 20270101T000000Z\n",
    # ctr run: the rclone container. Records its arguments and does what `rclone copyto SRC offsite:DEST` would,
    # reading SRC through the bind mount the arguments declare.
    "ctr": r"""
printf '%s\n' "$@" >"$T/ctr-args"
[[ -z ${UPLOAD_FAILS:-} ]] || { echo "Failed to copy: 403 Forbidden" >&2; exit 1; }
src_dir="" dst_dir="" conf=""
while (($#)); do
  case "$1" in
    --mount) spec="$2"; src="${spec#*src=}"; src="${src%%,*}"; dst="${spec#*dst=}"; dst="${dst%%,*}"
             [[ $dst == /snapshots ]] && { src_dir="$src"; dst_dir="$dst"; }
             [[ $dst == /config/rclone.conf ]] && conf="$src"; shift 2 ;;
    copyto) file="$2"; dest="${3#offsite:}"; shift 3 ;;
    *) shift ;;
  esac
done
cp "$conf" "$T/ctr-conf"
mkdir -p "$T/offsite/$(dirname "$dest")"
cp "$src_dir/${file#"$dst_dir"/}" "$T/offsite/$dest"
""",
}


def run_snapshot(tmp_path: Path, existing: list[str], params: etcd_backup.EtcdBackupParams = PARAMS,
                 recipients: list[str] | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    stubs, etcd_dir, target = tmp_path / "stubs", tmp_path / "var-lib-etcd", tmp_path / "target"
    config, stage = tmp_path / "config", tmp_path / "stage"
    for directory in (stubs, etcd_dir, target / "hk-cp-2", config):
        directory.mkdir(parents=True, exist_ok=True)
    for name, body in STUBS.items():
        if not (stubs / name).exists():
            (stubs / name).write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + body)
            (stubs / name).chmod(0o755)
    for index, key in enumerate(recipients if recipients is not None else list(params.recipient_keys), start=1):
        (config / f"recipient-{index}.asc").write_text(key)
    (config / etcd_backup.OFFSITE_CONF).write_text("[offsite]\naccess_key_id = FAKE\n")
    for name in existing:
        (target / "hk-cp-2" / name).write_text("old\n")
    # The program's fixed paths, pointed at the scratch directory for the test.
    program = (etcd_backup.snapshot_program(params)
               .replace("/var/lib/etcd/", f"{etcd_dir}/").replace(f"MOUNT='{etcd_backup.MOUNT_POINT}'", f"MOUNT='{target}'")
               .replace(f"TEXTFILE_DIR='{etcd_backup.TEXTFILE_DIR}'", f"TEXTFILE_DIR='{tmp_path / 'textfile'}'")
               .replace(etcd_backup.CONFIG_DIR, str(config)).replace(etcd_backup.STAGE_DIR, str(stage)))
    for fixed in (etcd_backup.TEXTFILE_DIR, etcd_backup.CONFIG_DIR, etcd_backup.STAGE_DIR):
        assert fixed not in program, "the test must not touch the machine's own paths"
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "T": str(tmp_path),
                               "ETCD_DIR": str(etcd_dir), **env})


def _stored(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "target" / "hk-cp-2").iterdir())


def test_a_snapshot_is_encrypted_on_the_node_stored_and_only_the_newest_are_kept(tmp_path, custodians):
    ops, security = custodians
    params = dataclasses.replace(PARAMS, recipient_keys=(ops.public, security.public))
    existing = ([f"etcd-hk-cp-2-2026120{day}T000000Z.db.gpg" for day in range(1, 6)]
                + ["etcd-hk-cp-2-20261130T000000Z.db", "notes.txt"])
    result = run_snapshot(tmp_path, existing, params)
    assert result.returncode == 0, result.stderr
    # keep=3: the new one and the two newest old ones; the plaintext an earlier release stored is removed; files that
    # are not snapshots are left alone.
    assert _stored(tmp_path) == ["etcd-hk-cp-2-20261204T000000Z.db.gpg", "etcd-hk-cp-2-20261205T000000Z.db.gpg",
                                 "etcd-hk-cp-2-20270101T000000Z.db.gpg", "notes.txt"]
    assert "removed the plaintext snapshot etcd-hk-cp-2-20261130T000000Z.db" in result.stdout
    stored = tmp_path / "target" / "hk-cp-2" / "etcd-hk-cp-2-20270101T000000Z.db.gpg"
    import hashlib
    assert f"stored {stored.name} on 10.10.10.21:/export/etcd-snapshots, sha256 " \
           f"{hashlib.sha256(stored.read_bytes()).hexdigest()}" in result.stdout
    assert b"snapshot" not in stored.read_bytes()
    # Either custodian's key opens it; nothing on the node could.
    for custodian in (ops, security):
        opened = decrypt(custodian, stored)
        assert opened.returncode == 0 and opened.stdout == b"snapshot\n", opened.stderr
    assert (tmp_path / "mounts").read_text().split() == ["-t", "nfs", "10.10.10.21:/export/etcd-snapshots",
                                                          str(tmp_path / "target")]
    assert not (tmp_path / "mounted").exists(), "the target is unmounted after the copy"
    assert list((tmp_path / "var-lib-etcd").iterdir()) == [], "no plaintext stays beside etcd's data"
    assert list((tmp_path / "stage").iterdir()) == [], "nor the ciphertext in the staging directory"
    execs = (tmp_path / "crictl-exec").read_text().splitlines()
    assert "--cacert=/etc/kubernetes/pki/etcd/ca.crt" in execs[0] and "snapshot save" in execs[0]
    assert "etcdutl snapshot status" in execs[1], "the snapshot is verified before it is encrypted"
    assert not (tmp_path / "ctr-args").exists(), "without an off-site store nothing is uploaded"
    metric = (tmp_path / "textfile" / f"{etcd_backup.SNAPSHOT_METRIC}.prom").read_text()
    assert f'{etcd_backup.SNAPSHOT_METRIC}{{node="hk-cp-2"}} ' in metric and "# TYPE" in metric
    assert [p.name for p in (tmp_path / "textfile").iterdir()] == [f"{etcd_backup.SNAPSHOT_METRIC}.prom"]


def test_the_node_uploads_only_the_ciphertext_off_site_from_the_host_with_the_pinned_image(tmp_path, custodians):
    ops, _ = custodians
    params = dataclasses.replace(OFFSITE, recipient_keys=(ops.public,))
    result = run_snapshot(tmp_path, [], params)
    assert result.returncode == 0, result.stderr
    uploaded = tmp_path / "offsite" / "velero-hk-prod" / "hk-prod-etcd" / "hk-cp-2" / "etcd-hk-cp-2-20270101T000000Z.db.gpg"
    assert uploaded.read_bytes() == (tmp_path / "target" / "hk-cp-2" / uploaded.name).read_bytes()
    assert decrypt(ops, uploaded).stdout == b"snapshot\n"
    args = (tmp_path / "ctr-args").read_text().splitlines()
    assert args[:6] == ["--address", "/run/containerd/containerd.sock", "--namespace", "k8s.io", "run", "--rm"]
    assert "--net-host" in args and "--env-file" not in args, "no credential in the container's spec"
    assert f"type=bind,src={tmp_path / 'stage'},dst=/snapshots,options=rbind:ro" in args
    assert f"type=bind,src={tmp_path / 'config' / etcd_backup.OFFSITE_CONF},dst=/config/rclone.conf,options=rbind:ro" in args
    assert args[args.index("--env", args.index("--env") + 1) + 1] == "RCLONE_CA_CERT=/etc/offsite-ca.crt"
    assert "RCLONE_CONFIG=/config/rclone.conf" in args
    assert f"type=bind,src={tmp_path / 'config' / etcd_backup.OFFSITE_CA},dst=/etc/offsite-ca.crt,options=rbind:ro" in args
    assert args[args.index("rclone") - 1] == "etcd-offsite-" + args[args.index("rclone") - 1].split("-")[-1]
    assert args[args.index("rclone") - 2] == "docker.io/rclone/rclone:1.75.0"
    assert args[args.index("rclone"):] == ["rclone", "copyto", "/snapshots/etcd-hk-cp-2-20270101T000000Z.db.gpg",
                                           "offsite:velero-hk-prod/hk-prod-etcd/hk-cp-2/etcd-hk-cp-2-20270101T000000Z.db.gpg",
                                           "--no-check-dest"]
    assert "pull docker.io/rclone/rclone:1.75.0" in (tmp_path / "crictl-pull").read_text()
    # Beside Velero's prefix (hk-prod/), never in it: Velero refuses a prefix with a directory it does not know.
    assert not etcd_backup.offsite_path(STORE).startswith(f"{STORE.bucket}/{STORE.prefix}/")


def test_a_failed_upload_fails_the_run_and_records_no_success(tmp_path, custodians):
    result = run_snapshot(tmp_path, [], dataclasses.replace(OFFSITE, recipient_keys=(custodians[0].public,)),
                          UPLOAD_FAILS="1")
    assert result.returncode == 1 and "the upload of etcd-hk-cp-2-20270101T000000Z.db.gpg" in result.stderr
    assert not (tmp_path / "textfile").exists(), "no success is recorded, so the staleness alert fires"
    assert list((tmp_path / "stage").iterdir()) == []


def test_a_snapshot_that_fails_verification_is_not_stored_and_records_no_success(tmp_path):
    result = run_snapshot(tmp_path, [], CORRUPT="1")
    assert result.returncode == 1 and "failed etcdutl snapshot status" in result.stderr
    assert list((tmp_path / "target" / "hk-cp-2").iterdir()) == []
    assert not (tmp_path / "textfile").exists(), "no success is recorded, so the staleness alert fires"
    assert list((tmp_path / "var-lib-etcd").iterdir()) == []


def test_without_a_recipient_key_nothing_is_stored(tmp_path):
    result = run_snapshot(tmp_path, [], recipients=[])
    assert result.returncode == 1 and "no recipient keys" in result.stderr
    assert list((tmp_path / "target" / "hk-cp-2").iterdir()) == []
    assert list((tmp_path / "var-lib-etcd").iterdir()) == [], "the plaintext is removed on failure too"


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


def _bash(script: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, input=stdin)


def test_install_puts_the_files_enables_the_timer_and_proves_the_target_and_remove_undoes_it(tmp_path, custodians):
    env, root = systemd_stub_env(tmp_path)
    ops, security = custodians
    params = dataclasses.replace(PARAMS, recipient_keys=(ops.public, security.public))
    install = etcd_backup.render_install(params)
    for _ in range(2):
        result = _bash(install, env)
        assert result.returncode == 0, result.stderr
    program = root / etcd_backup.SNAPSHOT_PROGRAM.lstrip("/")
    assert program.read_text() == etcd_backup.snapshot_program(params) and oct(program.stat().st_mode & 0o777) == "0o700"
    assert (root / "etc/systemd/system" / etcd_backup.TIMER).read_text().strip() == etcd_backup.timer_unit(params).strip()
    config = root / etcd_backup.CONFIG_DIR.lstrip("/")
    assert sorted(p.name for p in config.iterdir()) == ["recipient-1.asc", "recipient-2.asc"]
    assert (config / "recipient-2.asc").read_text().strip() == security.public.strip()
    assert oct(config.stat().st_mode & 0o777) == "0o700"
    calls = (tmp_path / "systemctl").read_text().splitlines()
    assert calls.count(f"enable --now {etcd_backup.TIMER}") == 2 and calls.count(f"start {etcd_backup.SERVICE}") == 2
    # A key the stack drops is no longer encrypted to.
    assert _bash(etcd_backup.render_install(dataclasses.replace(params, recipient_keys=(ops.public,))), env).returncode == 0
    assert sorted(p.name for p in config.iterdir()) == ["recipient-1.asc"]
    failed = _bash(install, {**env, "FAIL": "1"})
    assert failed.returncode == 1 and "the first etcd snapshot (hk-cp-2," in failed.stderr and ") failed (see above)" in failed.stderr
    removed = _bash(etcd_backup.render_remove(), env)
    assert removed.returncode == 0, removed.stderr
    assert not program.exists() and not (root / "etc/systemd/system" / etcd_backup.TIMER).exists()
    assert not config.exists()
    assert f"disable --now {etcd_backup.TIMER}" in (tmp_path / "systemctl").read_text()


def test_install_writes_the_off_site_credentials_root_only_from_standard_input(tmp_path):
    env, root = systemd_stub_env(tmp_path)
    install = etcd_backup.render_install(OFFSITE)
    assert "FAKE-access" not in install
    missing = _bash(install, env)
    assert missing.returncode == 1 and "were not on standard input" in missing.stderr
    result = _bash(install, env, stdin="FAKE-access\nFAKE-secret\n")
    assert result.returncode == 0, result.stderr
    config = root / etcd_backup.CONFIG_DIR.lstrip("/")
    settings = config / etcd_backup.OFFSITE_CONF
    assert oct(settings.stat().st_mode & 0o777) == "0o600"
    assert settings.read_text().splitlines() == [
        "[offsite]", "type = s3", "provider = Ceph", "endpoint = https://s3.sg-dr.internal", "region = sg",
        "no_check_bucket = true", "access_key_id = FAKE-access", "secret_access_key = FAKE-secret"]
    assert (config / etcd_backup.OFFSITE_CA).read_text().strip() == STORE.ca_certificate
    # The off-site store dropped from the stack: its credentials leave the node.
    assert _bash(etcd_backup.render_install(PARAMS), env).returncode == 0
    assert not settings.exists() and not (config / etcd_backup.OFFSITE_CA).exists()


def test_hk_prod_nodes_get_the_keys_in_the_script_and_the_credentials_only_on_secret_stdin(hk_recording):
    secrets = placeholder_secrets()
    for node in ("hk-cp-1", "hk-cp-2", "hk-cp-3"):
        schedule = hk_recording.named(f"hk-prod-etcd-backup-{node}")
        install = script_from_bash_command(schedule.inputs["create"])
        assert "-----BEGIN PGP PUBLIC KEY BLOCK-----" in install
        assert bash_input(install, "OFFSITE") == "1"
        stdin = schedule.inputs["stdin"]
        assert stdin.value == f"{secrets['etcdOffsiteAccessKeyId']}\n{secrets['etcdOffsiteSecretAccessKey']}\n"
        assert type(stdin).__name__ == "Secret"
        assert secrets["etcdOffsiteSecretAccessKey"] not in install


# --- the restore's decryption, as docs/backup.md writes it ------------------------------------------------------

DECRYPT_MARK = "<!-- decrypt-snapshot: tests/render/test_etcd_backup.py runs this block -->"


def _decrypt_block() -> str:
    page = (ROOT / "docs" / "backup.md").read_text()
    after = page[page.index(DECRYPT_MARK) + len(DECRYPT_MARK):]
    return re.search(r"```sh\n(.*?)```", after, re.S).group(1)


def test_the_documented_decryption_keeps_a_snapshot_only_when_gpg_vouches_for_it(tmp_path, custodians):
    ops, security = custodians
    block = _decrypt_block()
    snapshot = re.search(r"^snapshot=(\S+)", block, re.M).group(1)
    assert snapshot.endswith(".db.gpg")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "etcdutl").write_text('#!/usr/bin/env bash\necho "etcdutl $*" >>"$T/etcdutl"\n')
    (stubs / "etcdutl").chmod(0o755)
    plain = tmp_path / snapshot.removesuffix(".gpg")

    def encrypted(data: bytes) -> None:
        subprocess.run(["gpg", "--batch", "--yes", "--trust-model", "always", "--recipient-file", str(tmp_path / "ops.asc"),
                        "--cipher-algo", "AES256", "--compress-algo", "none", "--output", str(tmp_path / snapshot),
                        "--encrypt"], input=data, check=True, capture_output=True,
                       env={**os.environ, "GNUPGHOME": str(security.home)})

    def restore(custodian: Custodian) -> subprocess.CompletedProcess[str]:
        script = "set -euo pipefail\n" + block
        return subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "GNUPGHOME": str(custodian.home), "T": str(tmp_path),
                                   "PATH": f"{stubs}:{os.environ['PATH']}"})

    (tmp_path / "ops.asc").write_text(ops.public)
    encrypted(b"bbolt snapshot bytes\n" * 4096)
    done = restore(ops)
    assert done.returncode == 0, done.stderr
    assert plain.read_bytes() == b"bbolt snapshot bytes\n" * 4096
    assert (tmp_path / "etcdutl").read_text().split() == ["etcdutl", "snapshot", "status", plain.name, "-w", "table"]
    plain.unlink()
    # Without the recipient's key: nothing is kept.
    refused = restore(security)
    assert refused.returncode != 0 and not plain.exists() and not list(tmp_path.glob("*.partial"))
    # One byte changed in transit or at rest: gpg's integrity check (MDC) fails, and nothing is kept either.
    data = bytearray((tmp_path / snapshot).read_bytes())
    data[len(data) // 2] ^= 0x01
    (tmp_path / snapshot).write_bytes(bytes(data))
    tampered = restore(ops)
    assert tampered.returncode != 0 and not plain.exists() and not list(tmp_path.glob("*.partial"))
    assert "not decrypted" in tampered.stderr


def test_the_stack_refuses_a_key_twice_a_centos7_control_plane_and_warns_of_the_old_copy_schedule():
    from config.loader import SpecError, load

    values = hk_prod_values()
    values["etcdBackup"]["recipientKeys"] = [EXAMPLE_KEY, EXAMPLE_KEY]
    values["nodes"]["controlPlane"][1]["distro"] = "centos7"
    with pytest.raises(SpecError) as refused:
        load(raw_config(values))
    problems = {p.path: p.message for p in refused.value.problems}
    assert "is the key of recipientKeys[0]" in problems["etcdBackup.recipientKeys[1]"]
    assert "--recipient-file needs 2.1.14" in problems["nodes.controlPlane[1].distro"]
    values = hk_prod_values()
    values["backup"]["offsiteEtcdSchedule"] = "30 * * * *"
    warnings = {p.path: p.message for p in load(raw_config(values)).warnings}
    assert "no longer used" in warnings["backup.offsiteEtcdSchedule"]
    values = hk_prod_values()
    values["etcdBackup"]["recipientKeys"] = ["-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----"]
    with pytest.raises(SpecError) as refused:
        load(raw_config(values))
    assert "exactly one version 4 key" in str(refused.value.problems[0])


def test_a_run_cleans_what_a_run_stopped_half_way_left_before_anything_else(tmp_path):
    etcd_dir, stage = tmp_path / "var-lib-etcd", tmp_path / "stage"
    etcd_dir.mkdir()
    stage.mkdir()
    (etcd_dir / "etcd-hk-cp-2-20261201T000000Z.db").write_text("plaintext left by a reboot\n")
    (etcd_dir / "etcd-hk-cp-2-20261201T060000Z.db.part").write_text("half a snapshot\n")
    (stage / "etcd-hk-cp-2-20261201T000000Z.db.gpg").write_text("ciphertext\n")
    (etcd_dir / "member").mkdir()      # etcd's own data stays
    result = run_snapshot(tmp_path, [".etcd-hk-cp-2-20261130T000000Z.db.partial"], CORRUPT="1")
    assert result.returncode == 1
    assert [p.name for p in etcd_dir.iterdir()] == ["member"] and list(stage.iterdir()) == []


def test_a_key_that_asks_for_aead_is_refused():
    """GnuPG 2.3 and later encrypt to a key whose Features advertise AEAD (0x02) in OCB packets GnuPG 2.2 cannot
    read (gnupg-2.4 g10/encrypt.c, pkclist.c): such a key is refused with how to drop the feature."""
    import base64

    from vocab.checks import FEATURE_AEAD, is_openpgp_public_key, openpgp_features, openpgp_public_key
    assert openpgp_features(openpgp_public_key(EXAMPLE_KEY)) & FEATURE_AEAD == 0
    body = "".join(line for line in EXAMPLE_KEY.splitlines()[1:-1] if line and not line.startswith("="))
    raw = base64.b64decode(body)
    features = bytes([2, 30, 0x01])                    # a Features subpacket: length 2, type 30, MDC
    assert features in raw
    aead = raw.replace(features, bytes([2, 30, 0x03]))
    armored = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + base64.b64encode(aead).decode() + \
        "\n-----END PGP PUBLIC KEY BLOCK-----\n"
    assert openpgp_features(openpgp_public_key(armored)) & FEATURE_AEAD
    assert not is_openpgp_public_key(armored)
