"""The reboot chain (components/cluster/restarts.py, render/maintenance.py): its place in the graph, and its
scripts shellchecked and run against stub kubectl and qm."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from render import maintenance
from render.script_files import revision
from render.shell import script_from_bash_command
from tests.conftest import hk_prod_values, raw_config
from tests.validators import TEST_ROOT_VARIABLE, bash_input, shellcheck
from tools.mock.program import placeholder, run_program

STEPS = ("drain-for-restart", "vm-restart", "uncordon-after-restart")
# The settings the stub runs use: cpu=8, memory=65536, disk=120.
SETTINGS = "cpu=8,memory=65536,disk=120"


@pytest.fixture
def hk(hk_recording):
    return hk_recording


def _chain(hk):
    """The nodes' steps, without the gates between waves (components/cluster/waves.py)."""
    return [r for r in hk.by_type("command:remote:Command")
            if r.name.startswith("hk-prod-restarts-") and not r.name.startswith("hk-prod-restarts--wave-")]


def test_one_node_at_a_time_control_plane_first_then_workers_by_zone(hk):
    chain = _chain(hk)
    restarts = [r.name.removeprefix("hk-prod-restarts-").removesuffix("-vm-restart")
                for r in chain if r.name.endswith("-vm-restart")]
    assert restarts == ["hk-cp-1", "hk-cp-2", "hk-cp-3", "hk-lnx-1", "hk-lnx-3", "hk-lnx-2", "hk-lnx-4"]
    by_name = {r.name: r for r in chain}
    previous = None
    for index, node in enumerate(restarts):   # every Linux node is a wave of its own in hk-prod
        drain, restart, uncordon = (by_name[f"hk-prod-restarts-{node}-{step}"] for step in STEPS)
        vm = hk.named(f"hk-prod-{node}-vm")
        assert vm.urn in drain.dependencies
        assert drain.urn in restart.dependencies and restart.urn in uncordon.dependencies
        gate = hk.named(f"hk-prod-restarts--wave-{index}")
        assert gate.dependencies == [uncordon.urn]   # the wave's gate waits for its node to be back
        assert "create" not in gate.inputs and "update" not in gate.inputs and "delete" not in gate.inputs
        if previous is not None:
            restarts_deps = [d for d in drain.dependencies if "LinuxNodeRestarts" in d]
            assert restarts_deps == [previous.urn]   # the next node waits for the wave before, through its gate
        else:
            # The first waits for the end of the upgrade chain: two chains never drain two nodes at once.
            upgrade = [u for u in drain.dependencies if "KubernetesUpgrade" in u]
            # ... its last wave's gate, the step declared last (the chain is serial).
            upgrade_steps = [r for r in hk.by_type("command:remote:Command") if r.name.startswith("hk-prod-upgrade-")]
            assert upgrade == [upgrade_steps[-1].urn] and upgrade_steps[-1].name.startswith("hk-prod-upgrade--wave-")
            assert hk.named("hk-prod-upgrade-hk-lnx-4-uncordon-after-upgrade").urn in hk.waits_for(upgrade[0])
        previous = gate


def test_steps_run_nothing_on_create_and_carry_the_settings_they_apply(hk):
    for step in _chain(hk):
        assert "create" not in step.inputs and "delete" not in step.inputs, step.name
        assert step.inputs.get("update"), step.name
    lnx1 = hk.named("hk-prod-restarts-hk-lnx-1-vm-restart")
    script = script_from_bash_command(lnx1.inputs["update"])
    assert bash_input(script, "VMID") == "321" and bash_input(script, "SHUTDOWN_TIMEOUT") == "600"
    assert 'qm reboot "$VMID" --timeout "$SHUTDOWN_TIMEOUT"' in script
    assert bash_input(script, "SETTINGS") == "cpu=8,memory=32768,disk=120"
    # It decides on the drain's output, which arrives as its standard input.
    drain = hk.named("hk-prod-restarts-hk-lnx-1-drain-for-restart")
    assert drain.urn in lnx1.dependencies and "stdin" in lnx1.inputs
    drain_script = script_from_bash_command(drain.inputs["update"])
    # The later steps' revision, and a digest of how the restart reaches its Proxmox node.
    later, connection_digest = bash_input(drain_script, "LATER_STEPS").split("+")
    assert later == revision("vm-restart.sh", "node-restart-uncordon.sh") and len(connection_digest) == 16
    assert [bash_input(drain_script, name) for name in ("CPU", "MEMORY_MB", "DISK_GB")] == ["8", "32768", "120"]
    uncordon = script_from_bash_command(hk.named("hk-prod-restarts-hk-lnx-1-uncordon-after-restart").inputs["update"])
    assert bash_input(uncordon, "SETTINGS") == "cpu=8,memory=32768,disk=120"
    # It runs on the Proxmox node that holds the VM, as the provider's SSH user.
    connection = lnx1.inputs["connection"].value   # secret: it carries the private key
    assert connection["host"] == "10.10.10.11" and connection["user"] == "root"
    drain_cp = script_from_bash_command(hk.named("hk-prod-restarts-hk-cp-2-drain-for-restart").inputs["update"])
    assert bash_input(drain_cp, "ETCD_POD") == "etcd-hk-cp-1"
    drain_worker = script_from_bash_command(hk.named("hk-prod-restarts-hk-lnx-2-drain-for-restart").inputs["update"])
    assert bash_input(drain_worker, "ETCD_POD") == ""   # a worker holds no etcd member: no quorum check


@pytest.mark.parametrize("script", [
    maintenance.render_maintenance_drain("hk-lnx-1", 8, 32768, 120),
    maintenance.render_maintenance_drain("hk-cp-2", 4, 8192, 80, etcd_pod="etcd-hk-cp-1"),
    maintenance.render_vm_restart(321, SETTINGS),
    maintenance.render_maintenance_uncordon("hk-lnx-1", SETTINGS),
    maintenance.render_vm_destroy(324, "hk-lnx-4"),
], ids=["drain", "drain-control-plane", "vm-restart", "uncordon", "vm-destroy"])
def test_scripts_pass_shellcheck(tmp_path, script):
    path = tmp_path / "step.sh"
    path.write_text(script)
    shellcheck(path)


def test_inputs_that_would_break_a_script_are_refused():
    with pytest.raises(ValueError):
        maintenance.render_maintenance_drain("Bad Node", 8, 32768, 120)
    with pytest.raises(ValueError):
        maintenance.render_maintenance_drain("hk-lnx-1", 0, 32768, 120)
    with pytest.raises(ValueError):
        maintenance.render_vm_restart(321, "cpu=8; reboot")
    with pytest.raises(ValueError):
        maintenance.render_vm_restart(42, SETTINGS)
    with pytest.raises(ValueError):
        maintenance.render_maintenance_uncordon("hk-lnx-1", "")


# --- run against stubs --------------------------------------------------------------------------------------

KUBECTL = r"""#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$*" >>"$STUBS/calls"
case "$*" in
  *"jsonpath={.status.nodeInfo.bootID}"*) cat "$STUBS/boot-id" ;;
  *"jsonpath={.status.capacity.cpu}"*) cat "$STUBS/capacity" 2>/dev/null || true ;;
  *"maintenance}"*) cat "$STUBS/annotation" 2>/dev/null || true ;;
  *"restarted-with}"*) cat "$STUBS/applied" 2>/dev/null || true ;;
  "annotate node "*)
    for arg in "$@"; do
      case "$arg" in
        hybrid-cluster.io/maintenance-) rm -f "$STUBS/annotation" ;;
        hybrid-cluster.io/maintenance=*) printf '%s' "${arg#*=}" >"$STUBS/annotation" ;;
        hybrid-cluster.io/restarted-with=*) printf '%s' "${arg#*=}" >"$STUBS/applied" ;;
      esac
    done
    ;;
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


def _run(script: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([shutil.which("bash"), "-c", script], env=env, input=stdin, capture_output=True,
                          text=True, timeout=60)


DRAIN = maintenance.render_maintenance_drain("hk-lnx-2", 8, 65536, 120)
RESTART = maintenance.render_vm_restart(322, SETTINGS)
UNCORDON = maintenance.render_maintenance_uncordon("hk-lnx-2", SETTINGS)


def _chain_run(env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """The three steps as Pulumi runs them: the restart reads the drain's output on its standard input."""
    drain = _run(DRAIN, env)
    assert drain.returncode == 0, drain.stderr
    restart = _run(RESTART, env, stdin=drain.stdout)
    assert restart.returncode == 0, restart.stderr
    uncordon = _run(UNCORDON, env)
    assert uncordon.returncode == 0, uncordon.stderr
    return [drain, restart, uncordon]


def _actions(stubs: Path) -> list[str]:
    calls = (stubs / "calls").read_text().splitlines() if (stubs / "calls").exists() else []
    return [c.split()[0] if not c.startswith("qm") else "qm reboot" for c in calls
            if c.startswith(("cordon", "drain", "qm reboot", "uncordon"))]


def test_drain_restart_uncordon_in_order_and_the_uncordon_waits_for_a_new_boot(tmp_path):
    env, stubs = _stubbed(tmp_path)
    drain = _run(DRAIN, env)
    assert drain.returncode == 0, drain.stderr
    assert (stubs / "annotation").read_text() == f"{SETTINGS} boot=boot-1"
    assert drain.stdout.splitlines()[-1] == "restart-needed: yes"
    # Before the restart the boot id is unchanged: the uncordon refuses, the node stays cordoned.
    early = _run(maintenance.render_maintenance_uncordon("hk-lnx-2", SETTINGS, timeout_seconds=10), env)
    assert early.returncode != 0 and "has not restarted" in early.stderr
    assert "uncordon" not in (stubs / "calls").read_text()
    restart = _run(RESTART, env, stdin=drain.stdout)
    assert restart.returncode == 0, restart.stderr
    assert "new memory: 65536" in restart.stdout
    uncordon = _run(UNCORDON, env)
    assert uncordon.returncode == 0, uncordon.stderr
    assert _actions(stubs) == ["cordon", "drain", "qm reboot", "uncordon"]
    assert not (stubs / "annotation").exists()
    assert (stubs / "applied").read_text() == SETTINGS   # what the node now runs with


def test_a_second_run_of_the_chain_with_the_same_settings_drains_and_restarts_nothing(tmp_path):
    """What a new release of the scripts causes: every step's text changes, so Pulumi runs every step."""
    env, stubs = _stubbed(tmp_path)
    _chain_run(env)
    (stubs / "calls").unlink()
    drain, restart, uncordon = _chain_run(env)
    assert _actions(stubs) == []
    assert drain.stdout.splitlines()[-1] == "restart-needed: no" and "no restart" in restart.stdout
    assert "left as it is" in uncordon.stdout


def test_new_settings_after_an_earlier_restart_are_applied(tmp_path):
    env, stubs = _stubbed(tmp_path)
    (stubs / "applied").write_text("cpu=8,memory=32768,disk=120")
    _chain_run(env)
    assert _actions(stubs) == ["cordon", "drain", "qm reboot", "uncordon"]
    assert (stubs / "applied").read_text() == SETTINGS


@pytest.mark.parametrize("capacity,restarts", [
    ("8 67108864Ki 125829120Ki", False),           # exactly the VM's memory and disk
    ("8 65761252Ki 123456789Ki", False),           # less the kernel's and the other partitions' share
    ("8 65761252Ki 126000000000", False),          # ephemeral-storage in bytes (kubernetes/kubernetes#133927)
    ("4 65761252Ki 123456789Ki", True),            # CPUs differ
    ("8 32604160Ki 123456789Ki", True),            # half the memory: the new size is pending
    ("8 65761252Ki 62914560Ki", True),             # half the disk
    ("8 64Gi 123456789Ki", True),                  # a form the check does not read: apply the settings
    ("", True),                                    # nothing reported
])
def test_a_node_the_chain_never_restarted_is_compared_by_its_capacity(tmp_path, capacity, restarts):
    env, stubs = _stubbed(tmp_path)
    (stubs / "capacity").write_text(capacity + "\n" if capacity else "")
    _chain_run(env)
    assert _actions(stubs) == (["cordon", "drain", "qm reboot", "uncordon"] if restarts else [])


def test_a_rerun_of_the_drain_after_a_failure_keeps_the_boot_id_it_recorded_first(tmp_path):
    env, stubs = _stubbed(tmp_path)
    assert _run(DRAIN, env).returncode == 0
    (stubs / "boot-id").write_text("boot-2")   # the restart happened, then the chain failed before the uncordon
    again = _run(DRAIN, env)
    assert again.returncode == 0
    assert (stubs / "annotation").read_text() == f"{SETTINGS} boot=boot-1"
    # The restart already happened: the VM is not restarted a second time.
    assert again.stdout.splitlines()[-1] == "restart-needed: no"
    restart = _run(RESTART, env, stdin=again.stdout)
    assert restart.returncode == 0 and "qm reboot" not in (stubs / "calls").read_text()
    assert _run(UNCORDON, env).returncode == 0
    assert (stubs / "applied").read_text() == SETTINGS


def test_the_restart_needs_a_decision_from_the_drain(tmp_path):
    env, stubs = _stubbed(tmp_path)
    for stdin in ("", "node hk-lnx-2 is drained\n"):
        result = _run(RESTART, env, stdin=stdin)
        assert result.returncode != 0 and "no restart decision" in result.stderr
    assert "qm" not in ((stubs / "calls").read_text() if (stubs / "calls").exists() else "")


def test_an_uncordon_leaves_a_cordon_the_chain_did_not_set(tmp_path):
    env, stubs = _stubbed(tmp_path)
    result = _run(UNCORDON, env)
    assert result.returncode == 0 and "left as it is" in result.stdout
    assert "uncordon" not in (stubs / "calls").read_text()


def test_a_stopped_vm_is_not_started_behind_the_operators_back(tmp_path):
    env, stubs = _stubbed(tmp_path)
    (stubs / "qm").write_text("#!/usr/bin/env bash\nprintf 'qm %s\\n' \"$*\" >>\"$STUBS/calls\"\n"
                              "[[ $1 == status ]] && echo 'status: stopped'\nexit 0\n")
    result = _run(RESTART, env, stdin="restart-needed: yes\n")
    assert result.returncode != 0 and "is not running" in result.stderr
    assert "qm reboot" not in (stubs / "calls").read_text()


def test_a_new_proxmox_key_runs_each_drain_again_with_its_restart(hk):
    """The VM restart acts on its drain's output: anything that runs the restart again (a rotated Proxmox SSH
    key, a bastion) must run the drain again, so the decision is never an earlier run's."""
    from tools.mock.program import changed_resources
    rotated = run_program(raw_config(hk_prod_values()), secrets={"proxmoxSshPrivateKey": placeholder("proxmoxSshPrivateKey", "rotated")})
    touched = changed_resources(hk, rotated)
    restarts = {n for n in touched if n.endswith("-vm-restart")}
    assert restarts and {n.replace("-vm-restart", "-drain-for-restart") for n in restarts} <= touched


# --- a lost node's VM, destroyed if it is still there ---------------------------------------------------------

def _destroy(tmp_path: Path, configs: dict[str, str], status: str = "status: running") -> subprocess.CompletedProcess[str]:
    """render_vm_destroy(324, "hk-lnx-4") on Proxmox node pve-hk2-a, with the cluster file system's VM configurations
    ``configs`` ({node: its 324.conf}) under a scratch root and a stub qm."""
    root, stubs = tmp_path / "root", tmp_path / "stubs"
    stubs.mkdir()
    for node, text in configs.items():
        (root / "etc/pve/nodes" / node / "qemu-server").mkdir(parents=True)
        (root / "etc/pve/nodes" / node / "qemu-server/324.conf").write_text(text)
    # qm status answers `status` until qm stop has run, then "status: stopped" after one more poll (HA's queued stop).
    (stubs / "qm").write_text(
        '#!/usr/bin/env bash\necho "qm $*" >>"$T/calls"\n'
        'if [[ $1 == stop ]]; then echo 1 >"$T/stopping"; exit 0; fi\n'
        'if [[ $1 == status ]]; then\n'
        '  if [[ -f $T/stopping ]]; then n=$(<"$T/stopping"); echo $((n + 1)) >"$T/stopping"\n'
        '    ((n >= 2)) && { echo "status: stopped"; exit 0; }; fi\n'
        f'  echo "{status}"\nfi\n')
    (stubs / "uname").write_text("#!/usr/bin/env bash\necho pve-hk2-a.hk.example.internal\n")
    (stubs / "sleep").write_text("#!/usr/bin/env bash\nexit 0\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    return subprocess.run(["bash", "-c", maintenance.render_vm_destroy(324, "hk-lnx-4")], capture_output=True, text=True,
                          env={"PATH": f"{stubs}:/usr/bin:/bin", "T": str(tmp_path), TEST_ROOT_VARIABLE: str(root)})


def _qm_calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_lost_nodes_vm_that_is_gone_is_nothing_to_destroy(tmp_path):
    run = _destroy(tmp_path, {})
    assert run.returncode == 0 and "already gone" in run.stdout and _qm_calls(tmp_path) == []


def test_a_lost_nodes_vm_that_is_still_there_is_stopped_and_destroyed(tmp_path):
    run = _destroy(tmp_path, {"pve-hk2-a": "name: hk-lnx-4\nmemory: 32768\n"})
    assert run.returncode == 0, run.stderr
    # Stopped first, and waited for (an HA-managed VM's stop is only queued), then destroyed.
    assert _qm_calls(tmp_path) == ["qm status 324", "qm stop 324", "qm status 324", "qm status 324",
                                   "qm destroy 324 --purge 1 --destroy-unreferenced-disks 1"]
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    assert _destroy(stopped, {"pve-hk2-a": "name: hk-lnx-4\n"}, status="status: stopped").returncode == 0
    assert _qm_calls(stopped) == ["qm status 324", "qm destroy 324 --purge 1 --destroy-unreferenced-disks 1"]


@pytest.mark.parametrize("configs,why", [({"pve-hk2-a": "name: other-vm\n"}, "is not hk-lnx-4"),
                                         ({"pve-hk1-a": "name: hk-lnx-4\n"}, "is on Proxmox node pve-hk1-a")],
                         ids=["another-vm-of-that-id", "migrated"])
def test_a_vm_of_that_id_that_is_not_the_nodes_here_is_left_alone(tmp_path, configs, why):
    run = _destroy(tmp_path, configs)
    assert run.returncode == 1 and why in run.stderr and _qm_calls(tmp_path) == []
