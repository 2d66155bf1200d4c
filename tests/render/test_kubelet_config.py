"""The cluster's kubelet configuration after init (render/kubelet_config.py): the managed keys as the stack wants them,
kubelet-config-sync.sh and kubelet-config-node.sh run against stub kubectl, kubeadm, systemctl, sysctl and openssl
(and the real python3 with PyYAML, as every node has it), and the Windows step as rendered."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from config.loader import load
from plan.nodes import cluster_params, windows_params
from plan.security import kubelet_config_settings
from render import kubeadm, kubelet_config, security, windows_bootstrap
from tests.conftest import hk_prod_values, raw_config
from tests.validators import TEST_ROOT_VARIABLE, configmap_document_stub, powershell_errors

KUBELET_DOCUMENT = """apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
cgroupDriver: systemd
kind: KubeletConfiguration
rotateCertificates: true
"""


def _settings(values: dict | None = None) -> kubelet_config.KubeletSettings:
    return kubelet_config_settings(load(raw_config(values or hk_prod_values())).spec)


HK = _settings()
# The lines kubeadm writes into a node's config.yaml for hk-prod's settings (sigs.k8s.io/yaml: sorted keys, list items
# at the key's indentation).
HK_LINES = "\n".join(kubelet_config.settings_lines(HK)) + "\n"


# --- the settings ----------------------------------------------------------------------------------------------

def test_hk_prod_asks_for_every_hardening_key_and_serving_certificates():
    assert dict(HK.values) == {
        "eventBurst": security.EVENT_BURST, "eventRecordQPS": security.EVENT_RECORD_QPS, "podPidsLimit": 16384,
        "protectKernelDefaults": True, "seccompDefault": True, "serverTLSBootstrap": True,
        "tlsCipherSuites": security.TLS_CIPHER_SUITES}
    # The lines read back as the same settings, in the block style kubeadm's marshaller writes.
    assert yaml.safe_load(HK_LINES) == {k: list(v) if isinstance(v, tuple) else v for k, v in HK.values}
    assert "tlsCipherSuites:\n- TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384\n" in HK_LINES
    assert kubelet_config.absent_keys(HK) == []


def test_the_kubeadm_kubelet_configuration_and_the_managed_keys_are_one_set():
    """What init uploads and what the sync step keeps are the same keys with the same values."""
    spec = load(raw_config(hk_prod_values())).spec
    document = kubeadm.kubelet_config(cluster_params(spec))
    managed = {k: v for k, v in document.items() if k in kubelet_config.MANAGED_KEYS}
    assert managed == {k: list(v) if isinstance(v, tuple) else v for k, v in HK.values}


def test_a_relaxed_setting_is_left_out_and_removed_from_the_nodes():
    values = hk_prod_values()
    values["security"] = {"seccompDefault": False}
    values["resourceMetrics"] = {"enabled": False}
    values.pop("customMetrics")
    relaxed = _settings(values)
    assert kubelet_config.absent_keys(relaxed) == ["seccompDefault", "serverTLSBootstrap"]
    assert not relaxed.server_tls_bootstrap


def test_settings_refuse_what_kubeadm_would_not_write():
    with pytest.raises(ValueError):
        kubelet_config.kubelet_settings({"seccompDefault": False})
    with pytest.raises(ValueError):
        kubelet_config.kubelet_settings({"cgroupDriver": "systemd"})
    with pytest.raises(ValueError):
        kubelet_config.kubelet_settings({"tlsCipherSuites": ["TLS_X; reboot"]})


# --- kubelet-config-sync.sh ------------------------------------------------------------------------------------

SYNC_KUBECTL = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubectl %s\n' "$*" >>"$STUBS/calls"
case "$*" in
""" + configmap_document_stub("kubelet-config", "kubelet", "$STUBS/kubelet") + r"""
  *) echo "unexpected kubectl $*" >&2; exit 2 ;;
esac
"""
SYNC_KUBEADM = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubeadm %s\n' "$*" >>"$STUBS/calls"
[[ "$*" == "upgrade node phase kubelet-config --dry-run" ]] || { echo "unexpected kubeadm $*" >&2; exit 2; }
if [[ -e $STUBS/kubeadm-refuses ]]; then echo "error decoding kubelet configuration" >&2; exit 1; fi
"""


def _stub(stubs: Path, name: str, text: str) -> None:
    (stubs / name).write_text(text)
    (stubs / name).chmod(0o755)


def _sync_env(tmp_path: Path, document: str) -> tuple[dict[str, str], Path]:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    _stub(stubs, "kubectl", SYNC_KUBECTL)
    _stub(stubs, "kubeadm", SYNC_KUBEADM)
    (stubs / "kubelet").write_text(document)
    (tmp_path / "etc" / "kubernetes").mkdir(parents=True)
    (tmp_path / "etc" / "kubernetes" / "admin.conf").write_text("apiVersion: v1\n")
    return {"PATH": f"{stubs}:/usr/bin:/bin", "STUBS": str(stubs), TEST_ROOT_VARIABLE: str(tmp_path)}, stubs


def _bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shutil.which("bash"), "-c", script], env=env, capture_output=True, text=True, timeout=60)


def test_sync_sets_every_managed_key_once_and_has_kubeadm_read_it(tmp_path):
    env, stubs = _sync_env(tmp_path, KUBELET_DOCUMENT)
    first = _bash(kubelet_config.render_kubelet_config_sync(HK), env)
    assert first.returncode == 0, first.stderr
    assert "now has the stack's settings" in first.stdout
    written = yaml.safe_load((stubs / "kubelet").read_text())
    # kubeadm's keys are kept, each managed key is the stack's.
    assert written == {**yaml.safe_load(KUBELET_DOCUMENT), **yaml.safe_load(HK_LINES)}
    assert "kubeadm upgrade node phase kubelet-config --dry-run" in (stubs / "calls").read_text()
    # Again: nothing is written.
    (stubs / "calls").unlink()
    again = _bash(kubelet_config.render_kubelet_config_sync(HK), env)
    assert again.returncode == 0 and "already has the stack's settings" in again.stdout
    assert "apply" not in (stubs / "calls").read_text()


def test_sync_removes_a_relaxed_key_and_keeps_the_rest(tmp_path):
    env, stubs = _sync_env(tmp_path, KUBELET_DOCUMENT + HK_LINES)
    relaxed = kubelet_config.kubelet_settings({"protectKernelDefaults": True})
    run = _bash(kubelet_config.render_kubelet_config_sync(relaxed), env)
    assert run.returncode == 0, run.stderr
    assert yaml.safe_load((stubs / "kubelet").read_text()) == {**yaml.safe_load(KUBELET_DOCUMENT),
                                                               "protectKernelDefaults": True}


def test_a_document_kubeadm_cannot_read_is_put_back(tmp_path):
    env, stubs = _sync_env(tmp_path, KUBELET_DOCUMENT)
    (stubs / "kubeadm-refuses").write_text("")
    run = _bash(kubelet_config.render_kubelet_config_sync(HK), env)
    assert run.returncode != 0 and "the old document is back" in run.stderr
    assert "error decoding" in run.stderr
    assert (stubs / "kubelet").read_text() == KUBELET_DOCUMENT


def test_sync_refuses_an_empty_or_foreign_configmap(tmp_path):
    env, _ = _sync_env(tmp_path, "")
    run = _bash(kubelet_config.render_kubelet_config_sync(HK), env)
    assert run.returncode != 0 and "no kubelet document" in run.stderr
    (tmp_path / "other").mkdir()
    env, stubs = _sync_env(tmp_path / "other", "kind: Pod\n")
    run = _bash(kubelet_config.render_kubelet_config_sync(HK), env)
    assert run.returncode != 0 and "does not hold a KubeletConfiguration" in run.stderr


# --- kubelet-config-node.sh ------------------------------------------------------------------------------------

NODE_KUBEADM = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubeadm %s\n' "$*" >>"$STUBS/calls"
[[ "$*" == "upgrade node phase kubelet-config" ]] || { echo "unexpected kubeadm $*" >&2; exit 2; }
cp "$STUBS/cluster-kubelet" "$HYBRID_CLUSTER_TEST_ROOT/var/lib/kubelet/config.yaml"
"""
# systemctl restart/is-active/show for the kubelet: a kubelet the test marks as crashing is restarted by systemd.
NODE_SYSTEMCTL = r"""#!/usr/bin/env bash
set -euo pipefail
case "$*" in
  "restart kubelet")
    printf 'systemctl %s\n' "$*" >>"$STUBS/calls"
    pki="$HYBRID_CLUSTER_TEST_ROOT/var/lib/kubelet/pki"
    if [[ -e $STUBS/approver ]] && grep -qx 'serverTLSBootstrap: true' "$HYBRID_CLUSTER_TEST_ROOT/var/lib/kubelet/config.yaml"; then
      mkdir -p "$pki"; echo "-----BEGIN CERTIFICATE-----" >"$pki/kubelet-server-current.pem"
    fi ;;
  "is-active --quiet kubelet") [[ ! -e $STUBS/crashing ]] ;;
  "show kubelet --property=NRestarts --value")
    count=$(($(cat "$STUBS/restarts" 2>/dev/null || echo 0) + $([[ -e $STUBS/crashing ]] && echo 1 || echo 0)))
    echo "$count" >"$STUBS/restarts"; echo "$count" ;;
  *) echo "unexpected systemctl $*" >&2; exit 2 ;;
esac
"""
# `openssl x509 -noout -checkend 0 -in FILE`: a certificate the stub calls expired says so in its text.
NODE_OPENSSL = r"""#!/usr/bin/env bash
set -euo pipefail
file=""
while (($#)); do [[ $1 == -in ]] && file=$2; shift; done
grep -q 'BEGIN CERTIFICATE' "$file" && ! grep -q EXPIRED "$file"
"""
# `sysctl -n KEY`: the kubelet's defaults, unless the test wrote another value.
NODE_SYSCTL = r"""#!/usr/bin/env bash
set -euo pipefail
[[ $1 == -n ]] || exit 2
if [[ -f $STUBS/sysctl-$2 ]]; then cat "$STUBS/sysctl-$2"; exit 0; fi
case "$2" in
  vm.overcommit_memory) echo 1 ;; vm.panic_on_oom) echo 0 ;; kernel.panic) echo 10 ;; kernel.panic_on_oops) echo 1 ;;
  kernel.keys.root_maxkeys) echo 1000000 ;; kernel.keys.root_maxbytes) echo 25000000 ;; *) exit 2 ;;
esac
"""


def _node_env(tmp_path: Path, node_config: str, cluster_config: str, approver: bool = True) -> tuple[dict[str, str], Path]:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in (("kubeadm", NODE_KUBEADM), ("systemctl", NODE_SYSTEMCTL), ("sleep", "#!/usr/bin/env bash\n"),
                       ("openssl", NODE_OPENSSL), ("sysctl", NODE_SYSCTL)):
        _stub(stubs, name, text)
    (stubs / "cluster-kubelet").write_text(cluster_config)
    if approver:
        (stubs / "approver").write_text("")
    kubelet = tmp_path / "var" / "lib" / "kubelet"
    kubelet.mkdir(parents=True)
    (kubelet / "config.yaml").write_text(node_config)
    return {"PATH": f"{stubs}:/usr/bin:/bin", "STUBS": str(stubs), TEST_ROOT_VARIABLE: str(tmp_path)}, stubs


ON = KUBELET_DOCUMENT + HK_LINES


def _calls(stubs: Path) -> list[str]:
    path = stubs / "calls"
    return path.read_text().splitlines() if path.exists() else []


def _node(settings: kubelet_config.KubeletSettings = HK, **options) -> str:
    return kubelet_config.render_kubelet_config_node("hk-lnx-1", settings, **options)


def test_a_node_that_joined_before_downloads_restarts_and_gets_its_certificate(tmp_path):
    env, stubs = _node_env(tmp_path, KUBELET_DOCUMENT, ON)
    run = _bash(_node(machine="bc:24:11:00:00:01"), env)
    assert run.returncode == 0, run.stderr
    assert _calls(stubs) == ["kubeadm upgrade node phase kubelet-config", "systemctl restart kubelet"]
    assert "serves a certificate from the cluster CA" in run.stdout
    # Again (new script text, a replaced machine's first check): nothing restarts.
    (stubs / "calls").unlink()
    again = _bash(_node(), env)
    assert again.returncode == 0 and "already runs with them" in again.stdout and _calls(stubs) == []


def test_an_expired_certificate_or_an_interrupted_run_restarts_the_kubelet(tmp_path):
    env, stubs = _node_env(tmp_path, ON, ON)
    assert _bash(_node(), env).returncode == 0
    pem = tmp_path / "var" / "lib" / "kubelet" / "pki" / "kubelet-server-current.pem"
    # Expired: the kubelet is restarted and asks again.
    pem.write_text("-----BEGIN CERTIFICATE----- EXPIRED\n")
    (stubs / "calls").unlink()
    run = _bash(_node(), env)
    assert run.returncode == 0 and _calls(stubs) == ["systemctl restart kubelet"]
    # A run that downloaded the configuration and stopped before the restart: no record of it, so it restarts.
    (tmp_path / "var" / "lib" / "kubelet" / "hybrid-cluster-kubelet-config").unlink()
    (stubs / "calls").unlink()
    run = _bash(_node(), env)
    assert run.returncode == 0 and _calls(stubs) == ["systemctl restart kubelet"]


def test_a_node_that_joined_with_the_settings_but_has_no_certificate_asks_again(tmp_path):
    env, stubs = _node_env(tmp_path, ON, ON)
    run = _bash(_node(), env)
    assert run.returncode == 0, run.stderr
    # Its request was made before the approver ran, and the kubelet may be in its retry backoff: a restart asks again
    # at once; nothing is downloaded.
    assert _calls(stubs) == ["systemctl restart kubelet"]


def test_without_an_approval_the_step_fails_and_says_where_to_look(tmp_path):
    env, _ = _node_env(tmp_path, KUBELET_DOCUMENT, ON, approver=False)
    run = _bash(_node(timeout_seconds=10), env)
    assert run.returncode != 0
    assert "journalctl -u hybrid-cluster-kubelet-serving-approver" in run.stderr and "kubectl get csr" in run.stderr


def test_a_node_ahead_of_the_cluster_configuration_stops_before_restarting(tmp_path):
    """The sync step on the first control-plane node has not run: the download brings the old settings back."""
    env, stubs = _node_env(tmp_path, KUBELET_DOCUMENT, KUBELET_DOCUMENT)
    run = _bash(_node(), env)
    assert run.returncode != 0 and "sync step" in run.stderr
    assert "systemctl restart kubelet" not in _calls(stubs)


def test_a_wrong_kernel_setting_stops_the_step_before_the_kubelet_would_exit(tmp_path):
    env, stubs = _node_env(tmp_path, KUBELET_DOCUMENT, ON)
    (stubs / "sysctl-kernel.panic").write_text("0\n")
    run = _bash(_node(), env)
    assert run.returncode != 0
    assert "kernel.panic is 0" in run.stderr and "protectKernelDefaults needs 10" in run.stderr
    assert "systemctl restart kubelet" not in _calls(stubs)


def test_a_kubelet_that_does_not_stay_up_fails_the_step(tmp_path):
    env, stubs = _node_env(tmp_path, KUBELET_DOCUMENT, ON)
    (stubs / "crashing").write_text("")
    run = _bash(_node(), env)
    assert run.returncode != 0 and "did not stay up" in run.stderr and "journalctl -u kubelet" in run.stderr
    assert not (tmp_path / "var" / "lib" / "kubelet" / "hybrid-cluster-kubelet-config").exists()


def test_switched_off_the_kubelet_goes_back_to_its_own_certificate(tmp_path):
    off = kubelet_config.kubelet_settings({k: v for k, v in HK.values if k != "serverTLSBootstrap"})
    cluster = KUBELET_DOCUMENT + "\n".join(kubelet_config.settings_lines(off)) + "\n"
    env, stubs = _node_env(tmp_path, ON, cluster)
    run = _bash(_node(off), env)
    assert run.returncode == 0, run.stderr
    assert _calls(stubs) == ["kubeadm upgrade node phase kubelet-config", "systemctl restart kubelet"]
    assert (tmp_path / "var" / "lib" / "kubelet" / "config.yaml").read_text() == cluster
    recorded = (tmp_path / "var" / "lib" / "kubelet" / "hybrid-cluster-kubelet-config").read_text().strip()
    assert recorded == kubelet_config.settings_digest(off)


def test_a_node_that_has_not_joined_is_an_error(tmp_path):
    env, _ = _node_env(tmp_path, "", ON)
    (tmp_path / "var" / "lib" / "kubelet" / "config.yaml").unlink()
    run = _bash(_node(), env)
    assert run.returncode != 0 and "has not joined" in run.stderr


def test_the_windows_step_runs_the_same_phase_checks_the_same_lines_and_waits_for_the_same_file():
    spec = load(raw_config(hk_prod_values())).spec
    script = windows_bootstrap.render_kubelet_config(windows_params(spec, spec.nodes.windows[0]), HK, machine="vm-1")
    assert powershell_errors(script) == []
    assert "@('upgrade', 'node', 'phase', 'kubelet-config')" in script
    assert r"C:\var\lib\kubelet\pki\kubelet-server-current.pem" in script
    assert "$ServerTlsBootstrap = $true" in script and "Restart-Service -Name kubelet" in script
    assert f"$SettingsDigest = '{kubelet_config.settings_digest(HK)}'" in script
    for line in kubelet_config.settings_lines(HK):
        assert f"'{line}'" in script
    # The certificate is a symbolic link, whose Length is 0 on Windows: its content is read instead.
    assert ".Length" not in script and "Get-Content -LiteralPath $certificate -Raw" in script
    off = kubelet_config.kubelet_settings({k: v for k, v in HK.values if k != "serverTLSBootstrap"})
    assert "$ServerTlsBootstrap = $false" in windows_bootstrap.render_kubelet_config(
        windows_params(spec, spec.nodes.windows[0]), off)
