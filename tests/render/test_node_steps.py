"""render/node_steps.py's scripts, the lifecycle steps run from the first control-plane node for either OS (wait,
drain, deregistration, a lost node's marking, the upgrade's drain and uncordon, etcd's quorum): shellcheck on every
one, then executed for real against a scratch root (tests/scratch_root.py)."""
from __future__ import annotations

import pytest

from render import linux_bootstrap as lb
from render import node_steps as steps
from tests.scratch_root import ETCD_MEMBERS, ONE_MEMBER, Node, check_script
from tests.validators import shellcheck


def _longhorn_worker(control_plane: Node, replicas: str) -> None:
    """hk-lnx-4 in the cluster, Longhorn's node for it, and these replicas on it (one line each)."""
    (control_plane.stubs / "nodes" / "hk-lnx-4").touch()
    (control_plane.stubs / "longhorn-node-hk-lnx-4").touch()
    (control_plane.stubs / "longhorn-replicas").write_text(replicas)


def etcd_verbs(node: Node) -> list[str]:
    return [" ".join(call[11:13]) + (" " + call[7].split("=")[1] if call[11:13] == ["endpoint", "health"] else "")
            for call in node.calls("kubectl") if call[0] == "-n"]


# The containerd release the stubs' nodes report by default (kubelet: "containerd://2.3.5").
RUNTIME = "2.3.5"


FOUR_MEMBERS = ETCD_MEMBERS + (
    "aa22ccee00112233, started, hk-cp-4, https://10.30.30.14:2380, https://10.30.30.14:2379, false\n")


# --- static checks --------------------------------------------------------------------------------

ALL_SCRIPTS = {
    "wait-for-node": lambda: steps.render_wait_for_node("hk-prod-worker-1"),
    "drain": lambda: steps.render_drain("hk-prod-worker-1"),
    "drain-control-plane": lambda: steps.render_drain("hk-cp-3", etcd_pod="etcd-hk-cp-1"),
    "deregister": lambda: steps.render_deregister("hk-prod-worker-1"),
    "deregister-control-plane": lambda: steps.render_deregister("hk-cp-3", etcd_pod="etcd-hk-cp-1"),
}


@pytest.mark.parametrize("name", sorted(ALL_SCRIPTS))
def test_every_script_passes_shellcheck_and_fits_the_remote_command(name, tmp_path):
    check_script(name, ALL_SCRIPTS[name](), tmp_path)


# --- wait, drain, kubeconfig ----------------------------------------------------------------------

def test_wait_for_node_returns_once_the_node_is_registered(node):
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    result = node.run(steps.render_wait_for_node("hk-prod-worker-1", timeout_seconds=60), STUB_NODE_APPEARS_AT="3")
    assert result.returncode == 0, result.stderr
    assert "registered" in result.stdout and "is Ready" in result.stdout
    calls = node.calls("kubectl")
    gets = [c for c in calls if c[0] == "get"]
    assert len(gets) == 3 and gets[0][:5] == ["get", "node", "hk-prod-worker-1", "--ignore-not-found", "-o"]
    assert calls[-1][:3] == ["wait", "--for=condition=Ready", "node/hk-prod-worker-1"]
    assert len(node.calls("sleep")) == 2


def test_wait_for_node_fails_when_the_node_never_becomes_ready(node):
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    result = node.run(steps.render_wait_for_node("hk-prod-worker-1", timeout_seconds=60, ready_timeout_seconds=120),
                      STUB_NODE_APPEARS_AT="1", STUB_NODE_NOT_READY="1")
    assert result.returncode == 1
    assert "did not become Ready within 120s" in result.stderr


def test_wait_for_node_is_bounded(node):
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    result = node.run(steps.render_wait_for_node("hk-prod-worker-1", timeout_seconds=30))
    assert result.returncode == 1
    assert "did not register within 30s" in result.stderr
    assert len(node.calls("kubectl")) == 30 // steps.POLL_SECONDS


def test_drain_cordons_and_drains_but_leaves_the_node_for_reset(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    result = control_plane.run(steps.render_drain("hk-prod-worker-1", timeout_seconds=300))
    assert result.returncode == 0, result.stderr
    verbs = [call[0] for call in control_plane.calls("kubectl")]
    assert verbs == ["get", "get", "get", "cordon", "drain"]   # present, its taints, its Ready condition
    drain = control_plane.calls("kubectl")[-1]
    assert drain == ["drain", "hk-prod-worker-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=300s"]
    # kubeadm reset on the node still needs its Node object: deregistration deletes it afterwards.
    assert (control_plane.stubs / "nodes" / "hk-prod-worker-1").exists()


def test_a_worker_leaves_longhorn_before_it_is_drained_and_again_finds_nothing_to_move(control_plane):
    """With Longhorn, the removal's drain first asks Longhorn to move the node's replicas (scheduling off and eviction
    requested, one merge patch, retried while the webhook asks to), waits until none is left, then drains."""
    _longhorn_worker(control_plane, "pvc-a-r-1 pvc-a\npvc-b-r-2 pvc-b\n")
    script = steps.render_drain("hk-lnx-4", longhorn_namespace="longhorn-system")
    result = control_plane.run(script, STUB_LONGHORN="1", STUB_LONGHORN_PATCH_FAILS="1")
    assert result.returncode == 0, result.stderr
    calls = control_plane.calls("kubectl")
    patches = [c for c in calls if c[:3] == ["-n", "longhorn-system", "patch"]]
    assert len(patches) == 2 and patches[-1] == [
        "-n", "longhorn-system", "patch", "nodes.longhorn.io", "hk-lnx-4", "--type=merge", "--request-timeout=30s",
        "-p", '{"spec":{"allowScheduling":false,"evictionRequested":true}}']
    verbs = [c[0] if c[0] != "-n" else c[2] for c in calls]
    # Every listing after the request, until the last found none, comes before the cordon and the drain.
    assert verbs.index("patch") < verbs.index("cordon") < verbs.index("drain")
    listings = [i for i, c in enumerate(calls) if c[2:4] == ["get", "replicas.longhorn.io"]]
    assert len(listings) == 4 and listings[-1] < verbs.index("cordon")
    assert "no Longhorn replica is left on hk-lnx-4" in result.stdout
    assert calls[listings[0]] == ["-n", "longhorn-system", "get", "replicas.longhorn.io", "-l", "longhornnode=hk-lnx-4",
                                  "--request-timeout=30s", "--no-headers", "-o",
                                  "custom-columns=REPLICA:.metadata.name,VOLUME:.spec.volumeName,"
                                  "FAILED:.spec.failedAt,STATE:.status.currentState"]
    again = control_plane.run(script, STUB_LONGHORN="1")
    assert again.returncode == 0, again.stderr
    assert "no Longhorn replica is left" in again.stdout


def test_a_longhorn_wait_rides_out_two_failed_listings_and_stops_when_the_node_goes_down(control_plane):
    _longhorn_worker(control_plane, "pvc-a-r-1 pvc-a <none> running\n")
    script = steps.render_drain("hk-lnx-4", longhorn_namespace="longhorn-system")
    flaky = control_plane.run(script, STUB_LONGHORN="1", STUB_LONGHORN_LIST_FAILS="2")
    assert flaky.returncode == 0, flaky.stderr
    assert flaky.stderr.count("Unable to connect to the server") == 2
    for stale in ("list-failures", "patch-refusals", "longhorn-evicting-hk-lnx-4", "calls.log"):
        (control_plane.stubs / stale).unlink(missing_ok=True)
    (control_plane.stubs / "longhorn-replicas").write_text("pvc-a-r-1 pvc-a <none> running\n")
    down = control_plane.run(script, STUB_LONGHORN="1", STUB_LONGHORN_STUCK="1", STUB_NOT_READY_WHILE_EVICTING="1")
    assert down.returncode == 1
    assert "is no longer Ready (Ready: False) while Longhorn moves its replicas" in down.stderr
    assert not [c for c in control_plane.calls("kubectl") if c[0] in ("cordon", "drain")]


def test_without_longhorn_or_its_node_the_drain_moves_nothing(control_plane):
    (control_plane.stubs / "nodes" / "hk-lnx-4").touch()
    script = steps.render_drain("hk-lnx-4", longhorn_namespace="longhorn-system")
    absent = control_plane.run(script)
    assert absent.returncode == 0, absent.stderr
    assert "Longhorn is not installed" in absent.stdout
    no_node = control_plane.run(script, STUB_LONGHORN="1")
    assert no_node.returncode == 0 and "Longhorn has no node hk-lnx-4" in no_node.stdout
    assert not [c for c in control_plane.calls("kubectl") if "patch" in c]


def test_a_stuck_longhorn_eviction_fails_the_removal_before_the_drain_and_says_why(control_plane):
    _longhorn_worker(control_plane, "pvc-a-r-1 pvc-a\n")
    script = steps.render_drain("hk-lnx-4", longhorn_namespace="longhorn-system", longhorn_timeout_seconds=30)
    result = control_plane.run(script, STUB_LONGHORN="1", STUB_LONGHORN_STUCK="1")
    assert result.returncode == 1
    assert "pvc-a: degraded precheck new replica failed: hard affinity cannot be satisfied" in result.stderr
    assert "did not move every replica off hk-lnx-4 within 30s; nothing was drained" in result.stderr
    assert not [c for c in control_plane.calls("kubectl") if c[0] in ("cordon", "drain")]


def test_a_not_ready_worker_holding_replicas_is_refused_not_waited_on(control_plane):
    _longhorn_worker(control_plane, "pvc-a-r-1 pvc-a\n")
    (control_plane.stubs / "ready-hk-lnx-4").write_text("False\n")
    result = control_plane.run(steps.render_drain("hk-lnx-4", longhorn_namespace="longhorn-system"), STUB_LONGHORN="1")
    assert result.returncode == 1
    assert "is not Ready and holds the Longhorn replicas above" in result.stderr and "lost: true" in result.stderr
    assert not [c for c in control_plane.calls("kubectl") if c[0] in ("cordon", "drain") or "patch" in c]


def test_control_plane_drain_checks_quorum_first(etcd):
    result = etcd.run(steps.render_drain("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 0, result.stderr
    assert "2 of 2 remaining members healthy (quorum 2)" in result.stdout
    assert etcd_verbs(etcd) == ["member list", "endpoint health https://10.30.30.11:2379",
                                "endpoint health https://10.30.30.12:2379"]
    assert [c[0] for c in etcd.calls("kubectl") if c[0] != "-n"] == ["get", "get", "get", "cordon", "drain"]


def test_control_plane_drain_refuses_when_quorum_would_be_lost(etcd):
    (etcd.stubs / "etcd-unhealthy").write_text("https://10.30.30.12:2379\n")
    result = etcd.run(steps.render_drain("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 1
    assert "refusing to remove hk-cp-3" in result.stderr and "only 1 answer" in result.stderr
    assert not any(c[0] in ("cordon", "drain") for c in etcd.calls("kubectl")), "refused before touching the node"


def test_deregister_removes_a_member_reset_left_behind_then_the_node_and_is_idempotent(etcd):
    script = steps.render_deregister("hk-cp-3", etcd_pod="etcd-hk-cp-1")
    result = etcd.run(script)
    assert result.returncode == 0, result.stderr
    assert "removed the etcd member of hk-cp-3 (fd422379fda50e48)" in result.stdout
    assert "hk-cp-3" not in (etcd.stubs / "etcd-members").read_text()
    assert "member remove" in etcd_verbs(etcd)
    assert not (etcd.stubs / "nodes" / "hk-cp-3").exists()
    again = etcd.run(script)
    assert again.returncode == 0, again.stderr
    assert "already gone" in again.stdout


def test_deregister_after_a_clean_reset_only_deletes_the_node(etcd):
    # kubeadm reset's remove-etcd-member phase already removed the member.
    members = etcd.stubs / "etcd-members"
    members.write_text("".join(line + "\n" for line in members.read_text().splitlines() if "hk-cp-3" not in line))
    result = etcd.run(steps.render_deregister("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 0, result.stderr
    assert "member remove" not in etcd_verbs(etcd)
    assert etcd.calls("kubectl")[-1][:3] == ["delete", "node", "hk-cp-3"]


def test_deregister_refuses_to_remove_a_member_below_quorum(etcd):
    (etcd.stubs / "etcd-unhealthy").write_text("https://10.30.30.12:2379\n")
    result = etcd.run(steps.render_deregister("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 1 and "quorum needs 2" in result.stderr
    assert "hk-cp-3" in (etcd.stubs / "etcd-members").read_text()
    assert (etcd.stubs / "nodes" / "hk-cp-3").exists(), "the Node stays while its member does"


def test_worker_deregister_deletes_the_node_without_touching_etcd(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    result = control_plane.run(steps.render_deregister("hk-prod-worker-1"))
    assert result.returncode == 0, result.stderr
    assert control_plane.calls("kubectl") == [["delete", "node", "hk-prod-worker-1", "--ignore-not-found",
                                               "--request-timeout=60s"]]
    assert not (control_plane.stubs / "nodes" / "hk-prod-worker-1").exists()


def test_drain_of_a_node_already_gone_is_a_no_op(control_plane):
    result = control_plane.run(steps.render_drain("hk-prod-worker-1"))
    assert result.returncode == 0, result.stderr
    assert "not in the cluster" in result.stdout
    assert [call[0] for call in control_plane.calls("kubectl")] == ["get"]


def test_drain_timeout_fails_without_forcing_or_deleting(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    result = control_plane.run(steps.render_drain("hk-prod-worker-1"), STUB_DRAIN_FAIL="1")
    assert result.returncode == 1
    assert "did not finish within 600s" in result.stderr and "stays cordoned" in result.stderr
    calls = control_plane.calls("kubectl")
    assert [call[0] for call in calls] == ["get", "get", "get", "cordon", "drain"]
    assert not any("--disable-eviction" in call or "--force" in call for call in calls)


def test_drain_of_a_not_ready_node_does_not_wait_on_pods_its_kubelet_cannot_confirm(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "ready-hk-prod-worker-1").write_text("Unknown\n")
    result = control_plane.run(steps.render_drain("hk-prod-worker-1"))
    assert result.returncode == 0, result.stderr
    drain = control_plane.calls("kubectl")[-1]
    assert drain[0] == "drain" and drain[-1] == f"--skip-wait-for-delete-timeout={steps.SKIP_WAIT_SECONDS}"
    # Still an eviction: PodDisruptionBudgets hold for a NotReady node that is not declared lost.
    assert "--disable-eviction" not in drain and "--force" not in drain


def test_drain_of_a_node_taken_out_of_service_only_cordons_it(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "taints-hk-prod-worker-1").write_text("node.kubernetes.io/out-of-service\n")
    result = control_plane.run(steps.render_drain("hk-prod-worker-1"))
    assert result.returncode == 0, result.stderr
    assert "out of service (lost)" in result.stdout
    assert [call[0] for call in control_plane.calls("kubectl")] == ["get", "get", "cordon"]


def test_marking_a_node_lost_refuses_a_ready_node(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    result = control_plane.run(steps.render_mark_lost("hk-prod-worker-1"))
    assert result.returncode == 1 and "is Ready" in result.stderr and "nothing was changed" in result.stderr
    assert [call[0] for call in control_plane.calls("kubectl")] == ["get", "get"]


def test_marking_a_not_ready_node_lost_takes_it_out_of_service(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "ready-hk-prod-worker-1").write_text("Unknown\n")
    result = control_plane.run(steps.render_mark_lost("hk-prod-worker-1"))
    assert result.returncode == 0, result.stderr
    taint = control_plane.calls("kubectl")[-1]
    assert taint[:4] == ["taint", "node", "hk-prod-worker-1", "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"]
    assert "--overwrite" in taint
    # The drain of its removal then only cordons it.
    drained = control_plane.run(steps.render_drain("hk-prod-worker-1"))
    assert drained.returncode == 0 and "out of service (lost)" in drained.stdout


def test_drain_fails_loudly_when_the_api_does_not_answer(control_plane):
    result = control_plane.run(steps.render_drain("hk-prod-worker-1"), STUB_API_ERROR="1")
    assert result.returncode == 1
    assert "cannot ask the API server" in result.stderr


def test_drain_without_a_control_plane_is_a_no_op(node):
    result = node.run(steps.render_drain("hk-prod-worker-1"))
    assert result.returncode == 0, result.stderr
    assert node.calls("kubectl") == []


# --- the rolling upgrade's steps on the first control-plane node ---------------------------------

def test_upgrade_drain_marks_cordons_and_drains_a_node_behind_its_target(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.3\n")
    result = control_plane.run(steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME, timeout_seconds=300))
    assert result.returncode == 0, result.stderr
    verbs = [call[0] for call in control_plane.calls("kubectl")]
    assert verbs == ["get", "get", "get", "annotate", "cordon", "drain"]
    assert (control_plane.stubs / "upgrade-mark-hk-prod-worker-1").read_text().strip() == "v1.36.4"
    assert control_plane.calls("kubectl")[-1] == [
        "drain", "hk-prod-worker-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=300s"]


def test_upgrade_drain_leaves_a_node_already_at_its_target_alone(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.4\n")
    result = control_plane.run(steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME))
    assert result.returncode == 0, result.stderr
    assert "already runs kubelet v1.36.4 on containerd 2.3.5" in result.stdout
    assert not any(c[0] in ("annotate", "cordon", "drain") for c in control_plane.calls("kubectl"))


@pytest.mark.parametrize("reported", ["containerd://2.3.4", "containerd://v2.3.4"])
def test_upgrade_drain_drains_a_node_at_the_kubernetes_target_on_an_older_runtime(control_plane, reported):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.4\n")
    (control_plane.stubs / "runtime-version-hk-prod-worker-1").write_text(reported + "\n")
    result = control_plane.run(steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME))
    assert result.returncode == 0, result.stderr
    assert [c[0] for c in control_plane.calls("kubectl")][-3:] == ["annotate", "cordon", "drain"]


def test_upgrade_drain_reads_a_runtime_reported_with_a_v_prefix_as_current(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.4\n")
    (control_plane.stubs / "runtime-version-hk-prod-worker-1").write_text("containerd://v2.3.5\n")
    result = control_plane.run(steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME))
    assert result.returncode == 0 and "nothing to drain" in result.stdout


def test_upgrade_uncordon_waits_for_the_new_runtime_too(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.4\n")
    (control_plane.stubs / "runtime-version-hk-prod-worker-1").write_text("containerd://2.3.4\n")
    (control_plane.stubs / "upgrade-mark-hk-prod-worker-1").write_text("v1.36.4\n")
    result = control_plane.run(steps.render_upgrade_uncordon("hk-prod-worker-1", "1.36.4", RUNTIME, timeout_seconds=30))
    assert result.returncode == 1 and "not v1.36.4 on containerd 2.3.5" in result.stderr
    assert not any(c[0] == "uncordon" for c in control_plane.calls("kubectl"))


def test_upgrade_drain_after_a_failed_run_drains_again(control_plane):
    # The node reached the version but the chain's own cordon is still there: drain (a no-op) and let
    # the uncordon step lift it.
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.4\n")
    (control_plane.stubs / "upgrade-mark-hk-prod-worker-1").write_text("v1.36.4\n")
    result = control_plane.run(steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME))
    assert result.returncode == 0, result.stderr
    assert [c[0] for c in control_plane.calls("kubectl")][-2:] == ["cordon", "drain"]


def test_upgrade_drain_of_a_control_plane_node_refuses_without_quorum(etcd):
    (etcd.stubs / "kubelet-version-hk-cp-3").write_text("v1.36.3\n")
    (etcd.stubs / "etcd-unhealthy").write_text("https://10.30.30.12:2379\n")
    result = etcd.run(steps.render_upgrade_drain("hk-cp-3", "1.36.4", RUNTIME, etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 1
    assert not any(c[0] in ("annotate", "cordon", "drain") for c in etcd.calls("kubectl"))


def test_upgrade_drain_fails_loudly_when_the_drain_is_refused(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.3\n")
    result = control_plane.run(steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME), STUB_DRAIN_FAIL="1")
    assert result.returncode == 1
    assert "nothing was upgraded" in result.stderr and "stays cordoned" in result.stderr


def test_a_drain_blocked_by_a_disruption_budget_stops_the_wave_and_says_so(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.3\n")
    scratch = control_plane.root.parent / "scratch"
    scratch.mkdir()
    result = control_plane.run(steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME), STUB_DRAIN_PDB="1",
                               TMPDIR=str(scratch))
    assert result.returncode == 1
    assert "blocked by a PodDisruptionBudget" in result.stderr and "the run stops here" in result.stderr
    assert "nothing was upgraded" in result.stderr and "disruption budget" in result.stdout
    calls = control_plane.calls("kubectl")
    assert not any("--disable-eviction" in call or "--force" in call for call in calls)
    # Any other failure keeps its own message, and kubectl's output leaves nothing behind in either case.
    other = control_plane.run(steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME), STUB_DRAIN_FAIL="1",
                              TMPDIR=str(scratch))
    assert "did not finish within" in other.stderr and "blocked by a PodDisruptionBudget" not in other.stderr
    assert not list(scratch.iterdir()), "the drain's log was left behind"


def test_upgrade_steps_need_the_control_plane(node):
    for script in (steps.render_upgrade_drain("hk-prod-worker-1", "1.36.4", RUNTIME),
                   steps.render_upgrade_uncordon("hk-prod-worker-1", "1.36.4", RUNTIME)):
        result = node.run(script)
        assert result.returncode == 1 and "cannot" in result.stderr


def test_upgrade_uncordon_lifts_only_the_chains_own_cordon_once_the_node_runs_the_target(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.4\n")
    (control_plane.stubs / "upgrade-mark-hk-prod-worker-1").write_text("v1.36.4\n")
    script = steps.render_upgrade_uncordon("hk-prod-worker-1", "1.36.4", RUNTIME)
    result = control_plane.run(script)
    assert result.returncode == 0, result.stderr
    assert [c[0] for c in control_plane.calls("kubectl")][-2:] == ["uncordon", "annotate"]
    assert not (control_plane.stubs / "upgrade-mark-hk-prod-worker-1").exists()
    # Again (or on a node an operator cordoned): no mark, no uncordon.
    again = control_plane.run(script)
    assert again.returncode == 0 and "did not cordon it" in again.stdout
    assert [c[0] for c in control_plane.calls("kubectl")].count("uncordon") == 1


def test_upgrade_uncordon_stops_the_chain_when_the_node_does_not_come_back_at_the_target(control_plane):
    (control_plane.stubs / "nodes" / "hk-prod-worker-1").touch()
    (control_plane.stubs / "kubelet-version-hk-prod-worker-1").write_text("v1.36.3\n")
    (control_plane.stubs / "upgrade-mark-hk-prod-worker-1").write_text("v1.36.4\n")
    result = control_plane.run(steps.render_upgrade_uncordon("hk-prod-worker-1", "1.36.4", RUNTIME, timeout_seconds=30))
    assert result.returncode == 1
    assert "'v1.36.3 containerd://2.3.5', not v1.36.4 on containerd 2.3.5" in result.stderr
    assert "stays cordoned" in result.stderr
    assert not any(c[0] == "uncordon" for c in control_plane.calls("kubectl"))


@pytest.mark.parametrize("render", [steps.render_upgrade_drain, steps.render_upgrade_uncordon])
def test_upgrade_steps_pass_shellcheck_and_reject_bad_versions(render, tmp_path):
    script = tmp_path / "step.sh"
    script.write_text("#!/usr/bin/env bash\n" + render("hk-prod-worker-1", "1.36.4", RUNTIME))
    shellcheck(script)
    with pytest.raises(ValueError, match="MAJOR.MINOR.PATCH"):
        render("hk-prod-worker-1", "1.36", RUNTIME)
    with pytest.raises(ValueError, match="MAJOR.MINOR.PATCH"):
        render("hk-prod-worker-1", "1.36.4", "2.3")


# --- quorum: a removal versus a temporary outage -----------------------------------------------------

def test_the_only_member_of_a_one_member_cluster_may_restart_but_not_leave(etcd):
    """A single control-plane node is upgraded and restarted like any other: its restart is downtime of the
    API, not a loss of quorum; removing it is still refused."""
    (etcd.stubs / "etcd-members").write_text(ONE_MEMBER)
    (etcd.stubs / "nodes" / "hk-cp-1").touch()
    (etcd.stubs / "kubelet-version-hk-cp-1").write_text("v1.36.3\n")
    upgrade = etcd.run(steps.render_upgrade_drain("hk-cp-1", "1.36.4", RUNTIME, etcd_pod="etcd-hk-cp-1"))
    assert upgrade.returncode == 0, upgrade.stderr
    assert "hk-cp-1 is the only etcd member: the API is down while it restarts" in upgrade.stdout
    removal = etcd.run(steps.render_drain("hk-cp-1", etcd_pod="etcd-hk-cp-1"))
    assert removal.returncode == 1 and "last etcd member" in removal.stderr


def test_an_outage_needs_one_member_more_than_a_removal_with_an_even_count(etcd):
    """4 members, one of the three others unhealthy: removing hk-cp-3 leaves 3 that need 2 (2 answer), but
    taking it down for a restart leaves 4 that need 3 (only 2 answer besides it)."""
    (etcd.stubs / "etcd-members").write_text(FOUR_MEMBERS)
    (etcd.stubs / "etcd-unhealthy").write_text("https://10.30.30.14:2379\n")
    (etcd.stubs / "kubelet-version-hk-cp-3").write_text("v1.36.3\n")
    removal = etcd.run(steps.render_drain("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert removal.returncode == 0, removal.stderr
    assert "2 of 3 remaining members healthy (quorum 2)" in removal.stdout
    outage = etcd.run(steps.render_upgrade_drain("hk-cp-3", "1.36.4", RUNTIME, etcd_pod="etcd-hk-cp-1"))
    assert outage.returncode == 1
    assert "the 4 etcd members need 3 up, and only 2 others answer" in outage.stderr


def test_marking_a_lost_control_plane_node_removes_its_etcd_member_quorum_checked(etcd):
    (etcd.stubs / "ready-hk-cp-3").write_text("Unknown\n")
    result = etcd.run(steps.render_mark_lost("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 0, result.stderr
    assert "removed the etcd member of hk-cp-3 (fd422379fda50e48)" in result.stdout
    assert "hk-cp-3" not in (etcd.stubs / "etcd-members").read_text()
    again = etcd.run(steps.render_mark_lost("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert again.returncode == 0 and "removed the etcd member" not in again.stdout


def test_a_lost_member_is_not_removed_below_quorum(etcd):
    (etcd.stubs / "ready-hk-cp-3").write_text("Unknown\n")
    (etcd.stubs / "etcd-unhealthy").write_text("https://10.30.30.12:2379\n")
    result = etcd.run(steps.render_mark_lost("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 1 and "quorum needs 2" in result.stderr
    assert "hk-cp-3" in (etcd.stubs / "etcd-members").read_text()
