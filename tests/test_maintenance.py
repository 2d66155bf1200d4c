"""The reboot chain (components/maintenance.py, render/maintenance.py): its place in the graph, and its
scripts shellchecked and run against stub kubectl and qm."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from render import maintenance
from render.linux_bootstrap import TEST_ROOT_VARIABLE
from render.shell import script_from_bash_command
from tests.conftest import hk_prod_values, raw_config
from tests.validators import bash_input, shellcheck
from tools.mockrun import run_program

STEPS = ("drain-for-restart", "vm-restart", "uncordon-after-restart")


@pytest.fixture(scope="module")
def hk():
    return run_program(raw_config(hk_prod_values()))


def _chain(hk):
    return [r for r in hk.by_type("command:remote:Command") if r.name.startswith("hk-prod-restarts-")]


def test_one_node_at_a_time_control_plane_first_then_workers_by_zone(hk):
    chain = _chain(hk)
    restarts = [r.name.removeprefix("hk-prod-restarts-").removesuffix("-vm-restart")
                for r in chain if r.name.endswith("-vm-restart")]
    assert restarts == ["hk-cp-1", "hk-cp-2", "hk-cp-3", "hk-lnx-1", "hk-lnx-3", "hk-lnx-2", "hk-lnx-4"]
    by_name = {r.name: r for r in chain}
    previous = None
    for node in restarts:
        drain, restart, uncordon = (by_name[f"hk-prod-restarts-{node}-{step}"] for step in STEPS)
        vm = hk.named(f"hk-prod-{node}-vm")
        assert vm.urn in drain.dependencies
        assert drain.urn in restart.dependencies and restart.urn in uncordon.dependencies
        if previous is not None:
            assert previous.urn in drain.dependencies   # the next node waits for this one to be back
        else:
            # The first waits for the end of the upgrade chain: two chains never drain two nodes at once.
            upgrade = [u for u in drain.dependencies if "KubernetesUpgrade" in u]
            assert len(upgrade) == 1 and upgrade[0].endswith("-uncordon-after-upgrade")
            # ... its last step, the one declared last (the chain is serial).
            upgrade_steps = [r for r in hk.by_type("command:remote:Command") if r.name.startswith("hk-prod-upgrade-")]
            assert upgrade[0] == upgrade_steps[-1].urn
        previous = uncordon


def test_steps_run_nothing_on_create_and_carry_the_settings_they_apply(hk):
    for step in _chain(hk):
        assert "create" not in step.inputs and "delete" not in step.inputs, step.name
        assert step.inputs.get("update"), step.name
    lnx1 = hk.named("hk-prod-restarts-hk-lnx-1-vm-restart")
    script = script_from_bash_command(lnx1.inputs["update"])
    assert bash_input(script, "VMID") == "321" and bash_input(script, "SHUTDOWN_TIMEOUT") == "600" and "qm reboot \"$VMID\" --timeout \"$SHUTDOWN_TIMEOUT\"" in script
    assert script.rstrip().endswith("# settings cpu=8,memory=32768,disk=120")
    # It runs on the Proxmox node that holds the VM, as the provider's SSH user.
    connection = lnx1.inputs["connection"].value   # secret: it carries the private key
    assert connection["host"] == "10.10.10.11" and connection["user"] == "root"
    drain_cp = script_from_bash_command(hk.named("hk-prod-restarts-hk-cp-2-drain-for-restart").inputs["update"])
    assert bash_input(drain_cp, "ETCD_POD") == "etcd-hk-cp-1"
    drain_worker = script_from_bash_command(hk.named("hk-prod-restarts-hk-lnx-2-drain-for-restart").inputs["update"])
    assert bash_input(drain_worker, "ETCD_POD") == ""   # a worker holds no etcd member: no quorum check


@pytest.mark.parametrize("script", [
    maintenance.render_maintenance_drain("hk-lnx-1", "cpu=8,memory=32768,disk=120"),
    maintenance.render_maintenance_drain("hk-cp-2", "cpu=4,memory=8192,disk=80", etcd_pod="etcd-hk-cp-1"),
    maintenance.render_vm_restart(321),
    maintenance.render_maintenance_uncordon("hk-lnx-1"),
], ids=["drain", "drain-control-plane", "vm-restart", "uncordon"])
def test_scripts_pass_shellcheck(tmp_path, script):
    path = tmp_path / "step.sh"
    path.write_text(script)
    shellcheck(path)


def test_inputs_that_would_break_a_script_are_refused():
    with pytest.raises(ValueError):
        maintenance.render_maintenance_drain("Bad Node", "cpu=8")
    with pytest.raises(ValueError):
        maintenance.render_maintenance_drain("hk-lnx-1", "cpu=8; reboot")
    with pytest.raises(ValueError):
        maintenance.render_vm_restart(42)


# --- run against stubs --------------------------------------------------------------------------------------

KUBECTL = r"""#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$*" >>"$STUBS/calls"
case "$*" in
  *"jsonpath={.status.nodeInfo.bootID}"*) cat "$STUBS/boot-id" ;;
  *"jsonpath={.metadata.annotations"*) cat "$STUBS/annotation" 2>/dev/null || true ;;
  *"annotate node"*"hybrid-cluster.io/maintenance-"*) rm -f "$STUBS/annotation" ;;
  *"annotate node"*) all="$*"; value="${all##*hybrid-cluster.io/maintenance=}"; printf '%s' "${value% --request-timeout=60s}" >"$STUBS/annotation" ;;
  *) ;;
esac
"""
QM = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'qm %s\n' "$*" >>"$STUBS/calls"
case "$1" in
  status) echo "status: running" ;;
  pending) printf 'cur memory: 32768\nnew memory: 65536\n' ;;
  reboot) echo "boot-2" >"$STUBS/boot-id" ;;
esac
"""


def _stubbed(tmp_path: Path) -> tuple[dict[str, str], Path]:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "kubectl").write_text(KUBECTL)
    (stubs / "qm").write_text(QM)
    (stubs / "sleep").write_text("#!/usr/bin/env bash\nexit 0\n")
    (stubs / "hostname").write_text("#!/usr/bin/env bash\necho pve-hk1-a\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    (stubs / "boot-id").write_text("boot-1")
    (tmp_path / "etc" / "kubernetes").mkdir(parents=True)
    (tmp_path / "etc" / "kubernetes" / "admin.conf").write_text("apiVersion: v1\n")
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "STUBS": str(stubs), TEST_ROOT_VARIABLE: str(tmp_path)}
    return env, stubs


def _run(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shutil.which("bash"), "-c", script], env=env, capture_output=True, text=True, timeout=60)


def test_drain_restart_uncordon_in_order_and_the_uncordon_waits_for_a_new_boot(tmp_path):
    env, stubs = _stubbed(tmp_path)
    settings = "cpu=8,memory=65536,disk=120"
    drain = _run(maintenance.render_maintenance_drain("hk-lnx-2", settings), env)
    assert drain.returncode == 0, drain.stderr
    assert (stubs / "annotation").read_text() == f"{settings} boot=boot-1"
    # Before the restart the boot id is unchanged: the uncordon refuses, the node stays cordoned.
    early = _run(maintenance.render_maintenance_uncordon("hk-lnx-2", timeout_seconds=10), env)
    assert early.returncode != 0 and "has not restarted" in early.stderr
    assert "uncordon" not in (stubs / "calls").read_text()
    restart = _run(maintenance.render_vm_restart(322), env)
    assert restart.returncode == 0, restart.stderr
    assert "new memory: 65536" in restart.stdout
    uncordon = _run(maintenance.render_maintenance_uncordon("hk-lnx-2"), env)
    assert uncordon.returncode == 0, uncordon.stderr
    calls = (stubs / "calls").read_text().splitlines()
    order = [c for c in calls if c.startswith(("cordon", "drain", "qm reboot", "uncordon"))]
    assert [c.split()[0] if not c.startswith("qm") else "qm reboot" for c in order] == ["cordon", "drain", "qm reboot", "uncordon"]
    assert not (stubs / "annotation").exists()


def test_a_rerun_of_the_drain_after_a_failure_keeps_the_boot_id_it_recorded_first(tmp_path):
    env, stubs = _stubbed(tmp_path)
    settings = "cpu=8,memory=65536,disk=120"
    assert _run(maintenance.render_maintenance_drain("hk-lnx-2", settings), env).returncode == 0
    (stubs / "boot-id").write_text("boot-2")   # the restart happened, then the chain failed before the uncordon
    assert _run(maintenance.render_maintenance_drain("hk-lnx-2", settings), env).returncode == 0
    assert (stubs / "annotation").read_text() == f"{settings} boot=boot-1"
    assert _run(maintenance.render_maintenance_uncordon("hk-lnx-2"), env).returncode == 0


def test_an_uncordon_leaves_a_cordon_the_chain_did_not_set(tmp_path):
    env, stubs = _stubbed(tmp_path)
    result = _run(maintenance.render_maintenance_uncordon("hk-lnx-2"), env)
    assert result.returncode == 0 and "left as it is" in result.stdout
    assert "uncordon" not in (stubs / "calls").read_text()


def test_a_stopped_vm_is_not_started_behind_the_operators_back(tmp_path):
    env, stubs = _stubbed(tmp_path)
    (stubs / "qm").write_text("#!/usr/bin/env bash\nprintf 'qm %s\\n' \"$*\" >>\"$STUBS/calls\"\n"
                              "[[ $1 == status ]] && echo 'status: stopped'\nexit 0\n")
    result = _run(maintenance.render_vm_restart(322), env)
    assert result.returncode != 0 and "is not running" in result.stderr
    assert "qm reboot" not in (stubs / "calls").read_text()
