"""The resource metrics API (config `resourceMetrics`): kubelet serving certificates from the cluster CA, kubelet-csr-approver
and metrics-server. Their values as rendered, the two kubelet scripts run against stub kubectl, kubeadm and systemctl,
and their place in the graph under the mock engine: a new cluster has them from its init, an existing one gets them
on its next `up` in waves without any node being re-created, and switching them off takes every kubelet back first."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from config.loader import load
from plan.nodes import cluster_params
from plan.rollout import stack_waves
from render import kubeadm, resource_metrics
from tests.conftest import hk_prod_values, raw_config
from tests.validators import TEST_ROOT_VARIABLE
from tools.mockrun import Recording, run_program

KUBELET_DOCUMENT = """apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
cgroupDriver: systemd
kind: KubeletConfiguration
rotateCertificates: true
"""


# --- rendered values -------------------------------------------------------------------------------------------

def test_the_kubelet_configuration_asks_the_cluster_ca_only_when_on(hk_values):
    on = kubeadm.kubelet_config(cluster_params(load(raw_config(hk_values)).spec))
    assert on["serverTLSBootstrap"] is True
    hk_values["resourceMetrics"] = {"enabled": False}
    hk_values.pop("customMetrics")
    off = kubeadm.kubelet_config(cluster_params(load(raw_config(hk_values)).spec))
    # Off: the document a cluster without it always had, byte for byte.
    assert "serverTLSBootstrap" not in off and {k: v for k, v in on.items() if k != "serverTLSBootstrap"} == off


def test_metrics_server_verifies_kubelets_and_runs_on_linux():
    values = resource_metrics.metrics_server_values(linux_workers=4)
    assert values["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert "insecure" not in repr(values).lower()
    assert values["replicas"] == 2 and values["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    # One Linux worker (the lab): no budget that would hold its drain forever.
    single = resource_metrics.metrics_server_values(linux_workers=1)
    assert single["replicas"] == 1 and "podDisruptionBudget" not in single


def test_the_approver_checks_names_and_node_network_addresses(hk_values):
    from plan.platform import resource_metrics_plan
    plan = resource_metrics_plan(load(raw_config(hk_values)).spec)
    assert plan is not None and plan.node_prefixes == ("10.30.30.0/24",)
    values = resource_metrics.csr_approver_values(plan.node_prefixes)
    assert values["providerIpPrefixes"] == ["10.30.30.0/24"]
    assert values["allowedDnsNames"] == 1 and values["nodeSelector"] == {"kubernetes.io/os": "linux"}
    import re
    regex = re.compile(values["providerRegex"])
    assert regex.match("hk-lnx-1") and regex.match("hk-win-3")
    assert not regex.match("hk-lnx-1.evil.example") and not regex.match("*")
    with pytest.raises(ValueError):
        resource_metrics.csr_approver_values(())


# --- kubelet-config-sync.sh, against stubs --------------------------------------------------------------------

SYNC_KUBECTL = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubectl %s\n' "$*" >>"$STUBS/calls"
case "$*" in
  *"get configmap kubelet-config"*) cat "$STUBS/kubelet" ;;
  *"create configmap kubelet-config --from-file=kubelet="*)
    args="$*"; file="${args#*--from-file=kubelet=}"; file="${file%% *}"; echo "from-file: $file" ;;
  *"apply --server-side --force-conflicts --field-manager=hybrid-cluster -f -"*)
    file="$(sed -n 's/^from-file: //p')"; cp "$file" "$STUBS/kubelet" ;;
  *) echo "unexpected kubectl $*" >&2; exit 2 ;;
esac
"""
SYNC_KUBEADM = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubeadm %s\n' "$*" >>"$STUBS/calls"
[[ "$*" == "upgrade node phase kubelet-config --dry-run" ]] || { echo "unexpected kubeadm $*" >&2; exit 2; }
if [[ -e $STUBS/kubeadm-refuses ]]; then echo "error decoding kubelet configuration" >&2; exit 1; fi
"""


def _sync_env(tmp_path: Path, document: str) -> tuple[dict[str, str], Path]:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "kubectl").write_text(SYNC_KUBECTL)
    (stubs / "kubeadm").write_text(SYNC_KUBEADM)
    for stub in ("kubectl", "kubeadm"):
        (stubs / stub).chmod(0o755)
    (stubs / "kubelet").write_text(document)
    (tmp_path / "etc" / "kubernetes").mkdir(parents=True)
    (tmp_path / "etc" / "kubernetes" / "admin.conf").write_text("apiVersion: v1\n")
    return {"PATH": f"{stubs}:/usr/bin:/bin", "STUBS": str(stubs), TEST_ROOT_VARIABLE: str(tmp_path)}, stubs


def _bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shutil.which("bash"), "-c", script], env=env, capture_output=True, text=True, timeout=60)


def test_sync_adds_the_key_once_and_has_kubeadm_read_it(tmp_path):
    env, stubs = _sync_env(tmp_path, KUBELET_DOCUMENT)
    first = _bash(resource_metrics.render_kubelet_config_sync(True), env)
    assert first.returncode == 0, first.stderr
    assert "now has serverTLSBootstrap true" in first.stdout
    written = (stubs / "kubelet").read_text()
    assert written == KUBELET_DOCUMENT + "serverTLSBootstrap: true\n"
    calls = (stubs / "calls").read_text()
    assert "kubeadm upgrade node phase kubelet-config --dry-run" in calls
    # Again: nothing is written.
    (stubs / "calls").unlink()
    again = _bash(resource_metrics.render_kubelet_config_sync(True), env)
    assert again.returncode == 0 and "already has serverTLSBootstrap true" in again.stdout
    assert "apply" not in (stubs / "calls").read_text()


def test_sync_off_removes_the_key_and_keeps_the_rest(tmp_path):
    env, stubs = _sync_env(tmp_path, KUBELET_DOCUMENT + "serverTLSBootstrap: true\n")
    run = _bash(resource_metrics.render_kubelet_config_sync(False), env)
    assert run.returncode == 0, run.stderr
    assert (stubs / "kubelet").read_text() == KUBELET_DOCUMENT


def test_a_document_kubeadm_cannot_read_is_put_back(tmp_path):
    env, stubs = _sync_env(tmp_path, KUBELET_DOCUMENT)
    (stubs / "kubeadm-refuses").write_text("")
    run = _bash(resource_metrics.render_kubelet_config_sync(True), env)
    assert run.returncode != 0 and "the old document is back" in run.stderr
    assert "error decoding" in run.stderr
    assert (stubs / "kubelet").read_text() == KUBELET_DOCUMENT


def test_sync_refuses_an_empty_configmap(tmp_path):
    env, _ = _sync_env(tmp_path, "")
    run = _bash(resource_metrics.render_kubelet_config_sync(True), env)
    assert run.returncode != 0 and "no kubelet document" in run.stderr


# --- kubelet-serving-node.sh, against stubs -------------------------------------------------------------------

NODE_KUBEADM = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubeadm %s\n' "$*" >>"$STUBS/calls"
[[ "$*" == "upgrade node phase kubelet-config" ]] || { echo "unexpected kubeadm $*" >&2; exit 2; }
cp "$STUBS/cluster-kubelet" "$HYBRID_CLUSTER_TEST_ROOT/var/lib/kubelet/config.yaml"
"""
NODE_SYSTEMCTL = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'systemctl %s\n' "$*" >>"$STUBS/calls"
[[ "$*" == "restart kubelet" ]] || exit 2
pki="$HYBRID_CLUSTER_TEST_ROOT/var/lib/kubelet/pki"
if [[ -e $STUBS/approver ]] && grep -qx 'serverTLSBootstrap: true' "$HYBRID_CLUSTER_TEST_ROOT/var/lib/kubelet/config.yaml"; then
  mkdir -p "$pki"; echo "-----BEGIN CERTIFICATE-----" >"$pki/kubelet-server-current.pem"
fi
"""


# `openssl x509 -noout -checkend 0 -in FILE`: a certificate the stub calls expired says so in its text.
NODE_OPENSSL = r"""#!/usr/bin/env bash
set -euo pipefail
file=""
while (($#)); do [[ $1 == -in ]] && file=$2; shift; done
grep -q 'BEGIN CERTIFICATE' "$file" && ! grep -q EXPIRED "$file"
"""


def _node_env(tmp_path: Path, node_config: str, cluster_config: str, approver: bool = True) -> tuple[dict[str, str], Path]:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in (("kubeadm", NODE_KUBEADM), ("systemctl", NODE_SYSTEMCTL), ("sleep", "#!/usr/bin/env bash\n"),
                       ("openssl", NODE_OPENSSL)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    (stubs / "cluster-kubelet").write_text(cluster_config)
    if approver:
        (stubs / "approver").write_text("")
    kubelet = tmp_path / "var" / "lib" / "kubelet"
    kubelet.mkdir(parents=True)
    (kubelet / "config.yaml").write_text(node_config)
    return {"PATH": f"{stubs}:/usr/bin:/bin", "STUBS": str(stubs), TEST_ROOT_VARIABLE: str(tmp_path)}, stubs


ON = KUBELET_DOCUMENT + "serverTLSBootstrap: true\n"


def _calls(stubs: Path) -> list[str]:
    path = stubs / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_a_node_that_joined_before_downloads_restarts_and_gets_its_certificate(tmp_path):
    env, stubs = _node_env(tmp_path, KUBELET_DOCUMENT, ON)
    run = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True, machine="bc:24:11:00:00:01"), env)
    assert run.returncode == 0, run.stderr
    assert _calls(stubs) == ["kubeadm upgrade node phase kubelet-config", "systemctl restart kubelet"]
    assert "serves a certificate from the cluster CA" in run.stdout
    # Again (new script text, a replaced machine's first check): nothing restarts.
    (stubs / "calls").unlink()
    again = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True), env)
    assert again.returncode == 0 and "already runs with it" in again.stdout and _calls(stubs) == []


def test_an_expired_certificate_or_an_interrupted_run_restarts_the_kubelet(tmp_path):
    env, stubs = _node_env(tmp_path, ON, ON)
    assert _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True), env).returncode == 0
    pem = tmp_path / "var" / "lib" / "kubelet" / "pki" / "kubelet-server-current.pem"
    # Expired: the kubelet is restarted and asks again.
    pem.write_text("-----BEGIN CERTIFICATE----- EXPIRED\n")
    (stubs / "calls").unlink()
    run = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True), env)
    assert run.returncode == 0 and _calls(stubs) == ["systemctl restart kubelet"]
    # A run that downloaded the configuration and stopped before the restart: no record of it, so it restarts.
    (tmp_path / "var" / "lib" / "kubelet" / "hybrid-cluster-server-tls-bootstrap").unlink()
    (stubs / "calls").unlink()
    run = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True), env)
    assert run.returncode == 0 and _calls(stubs) == ["systemctl restart kubelet"]


def test_a_node_that_joined_with_it_but_has_no_certificate_asks_again(tmp_path):
    env, stubs = _node_env(tmp_path, ON, ON)
    run = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True), env)
    assert run.returncode == 0, run.stderr
    # Its request was made before the approver ran, and the kubelet may be in its retry backoff: a restart asks again
    # at once; nothing is downloaded.
    assert _calls(stubs) == ["systemctl restart kubelet"]


def test_without_an_approval_the_step_fails_and_says_where_to_look(tmp_path):
    env, _ = _node_env(tmp_path, KUBELET_DOCUMENT, ON, approver=False)
    run = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True, timeout_seconds=10), env)
    assert run.returncode != 0
    assert "kubelet-csr-approver" in run.stderr and "kubectl get csr" in run.stderr


def test_a_node_ahead_of_the_cluster_configuration_stops_before_restarting(tmp_path):
    """The sync step on the first control-plane node has not run: the download brings the old setting back."""
    env, stubs = _node_env(tmp_path, KUBELET_DOCUMENT, KUBELET_DOCUMENT)
    run = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True), env)
    assert run.returncode != 0 and "sync step" in run.stderr
    assert "systemctl restart kubelet" not in _calls(stubs)


def test_switched_off_the_kubelet_goes_back_to_its_own_certificate(tmp_path):
    env, stubs = _node_env(tmp_path, ON, KUBELET_DOCUMENT)
    run = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", False), env)
    assert run.returncode == 0, run.stderr
    assert _calls(stubs) == ["kubeadm upgrade node phase kubelet-config", "systemctl restart kubelet"]
    assert (tmp_path / "var" / "lib" / "kubelet" / "config.yaml").read_text() == KUBELET_DOCUMENT
    assert (tmp_path / "var" / "lib" / "kubelet" / "hybrid-cluster-server-tls-bootstrap").read_text().strip() == "0"


def test_a_node_that_has_not_joined_is_an_error(tmp_path):
    env, _ = _node_env(tmp_path, "", ON)
    (tmp_path / "var" / "lib" / "kubelet" / "config.yaml").unlink()
    run = _bash(resource_metrics.render_kubelet_serving_node("hk-lnx-1", True), env)
    assert run.returncode != 0 and "has not joined" in run.stderr


def test_the_windows_step_runs_the_same_phase_and_waits_for_the_same_file():
    from plan.nodes import windows_params
    from render import windows_bootstrap
    spec = load(raw_config(hk_prod_values())).spec
    script = windows_bootstrap.render_kubelet_serving(windows_params(spec, spec.nodes.windows[0]), True, machine="vm-1")
    assert "@('upgrade', 'node', 'phase', 'kubelet-config')" in script
    assert r"C:\var\lib\kubelet\pki\kubelet-server-current.pem" in script
    assert "$ServerTlsBootstrap = $true" in script and "Restart-Service -Name kubelet" in script
    # The certificate is a symbolic link, whose Length is 0 on Windows: its content is read instead.
    assert ".Length" not in script and "Get-Content -LiteralPath $certificate -Raw" in script
    off = windows_bootstrap.render_kubelet_serving(windows_params(spec, spec.nodes.windows[0]), False)
    assert "$ServerTlsBootstrap = $false" in off


# --- the graph -------------------------------------------------------------------------------------------------

def _serving(recording: Recording) -> list:
    """Each node's kubelet-serving step, without the gates between waves (components/waves.py)."""
    return [r for r in recording.by_type("command:remote:Command")
            if r.name.startswith("hk-prod-kubelet-serving-") and not r.name.startswith("hk-prod-kubelet-serving--wave-")]


def test_the_kubelets_move_in_the_stacks_waves_after_the_approver_and_the_restarts(hk_recording):
    hk = hk_recording
    spec = load(raw_config(hk_prod_values())).spec
    waves = stack_waves(spec)
    by_name = {r.name.removeprefix("hk-prod-kubelet-serving-"): r for r in _serving(hk)}
    assert sorted(by_name) == sorted(n for wave in waves for n in wave)
    approver = hk.named("hk-prod-kubelet-csr-approver-kubelet-csr-approver")
    last_restart = [r for r in hk.by_type("command:remote:Command") if r.name.startswith("hk-prod-restarts-")][-1]
    for node in waves[0]:
        assert {approver.urn, last_restart.urn} <= set(by_name[node].dependencies)
    steps = {r.urn for r in by_name.values()}
    gates = [hk.named(f"hk-prod-kubelet-serving--wave-{index}") for index in range(len(waves))]
    for index, wave in enumerate(waves):
        # The wave's gate (components/waves.py) waits for every kubelet of the wave.
        assert set(gates[index].dependencies) == {by_name[n].urn for n in wave}
        for node in wave if index else ():
            # The gate of the wave before, and no kubelet's step (the rest is the node's own machine, whose id the
            # text names).
            assert gates[index - 1].urn in by_name[node].dependencies
            assert not set(by_name[node].dependencies) & steps
    metrics_server = hk.named("hk-prod-metrics-server-metrics-server")
    assert gates[-1].urn in metrics_server.dependencies
    # Each step runs on create too (an existing cluster meets it that way) and leaves nothing to delete.
    for step in by_name.values():
        assert step.inputs["create"] == step.inputs["update"] and not step.inputs.get("delete")


def test_every_join_waits_for_the_cluster_kubelet_configuration(hk_recording):
    sync = hk_recording.named("hk-prod-kubeadm-kubelet-config")
    credentials = [r for r in hk_recording.by_type("command:remote:Command") if r.name.endswith("-join-credentials")]
    assert len(credentials) == 9
    assert all(sync.urn in r.dependencies for r in credentials)


def _values(enabled: bool) -> dict:
    values = hk_prod_values()
    values["resourceMetrics"] = {"enabled": enabled}
    if not enabled:
        values.pop("customMetrics")
    return values


def test_an_existing_cluster_gets_serving_certificates_on_its_next_up_without_new_nodes():
    before = run_program(raw_config(_values(False)), stack="hk-prod")
    after = run_program(raw_config(_values(True)), stack="hk-prod", state=before.state)
    assert not after.plan.errors
    changed = after.plan.changed
    # No machine, join or node step is replaced or re-run: only the kubelet configuration, each kubelet's step, the
    # approver, metrics-server, KEDA and the samples' autoscalers.
    assert not after.plan.ops("replace") and not after.plan.ops("delete")
    assert all("-vm" not in n and "-join" not in n and "upgrade" not in n for n in changed), sorted(changed)
    assert after.plan.of("hk-prod-kubeadm-kubelet-config") == ["update"]
    for step in _serving(after):
        assert after.plan.of(step.name) == ["update"]
    for created in ("hk-prod-kubelet-csr-approver-kubelet-csr-approver", "hk-prod-metrics-server-metrics-server",
                    "hk-prod-custom-metrics-keda", "hk-prod-samples-horizontalpodautoscaler-win-prod-api-win",
                    "hk-prod-samples-scaledobject-linux-prod-api-linux"):
        assert after.plan.of(created) == ["create"], created
    # The Deployments keep their replica counts: they were declared before and are not touched now.
    assert not any("deployment" in n for n in changed)
    # And the order the run takes: the configuration before any kubelet, the approver before the first wave.
    names = [s.name for s in after.plan.steps if s.op != "same"]
    first_step = min(names.index(s.name) for s in _serving(after))
    assert names.index("hk-prod-kubeadm-kubelet-config") < first_step
    assert names.index("hk-prod-kubelet-csr-approver-kubelet-csr-approver") < first_step


def test_switching_off_takes_every_kubelet_back_before_the_approver_goes():
    before = run_program(raw_config(_values(True)), stack="hk-prod")
    after = run_program(raw_config(_values(False)), stack="hk-prod", state=before.state)
    assert not after.plan.errors
    steps = [s.name for s in after.plan.steps if s.op != "same"]
    for step in _serving(after):
        assert after.plan.of(step.name) == ["update"]
    assert after.plan.of("hk-prod-kubelet-csr-approver-kubelet-csr-approver") == ["delete"]
    last_kubelet = max(steps.index(s.name) for s in _serving(after))
    assert steps.index("hk-prod-kubelet-csr-approver-kubelet-csr-approver") > last_kubelet
    assert not any(n.startswith("hk-prod-metrics-server") for n in {r.name for r in after.resources})
    # No autoscaler without the metrics API; the samples' Deployments stay.
    assert not any("horizontalpodautoscaler" in r.name or "scaledobject" in r.name for r in after.resources)


def test_no_upgrade_restarts_a_kubelet_before_the_configuration_and_the_approver(hk_recording):
    """An upgrade restarts kubelets with the configuration it downloads, and `kubeadm upgrade apply` uploads the one it
    read: the first wave waits for the kubelet-config step and for the approver."""
    hk = hk_recording
    first_drain = hk.named("hk-prod-upgrade-hk-cp-1-drain-for-upgrade")
    assert {hk.named("hk-prod-kubeadm-kubelet-config").urn,
            hk.named("hk-prod-kubelet-csr-approver-kubelet-csr-approver").urn} <= set(first_drain.dependencies)
