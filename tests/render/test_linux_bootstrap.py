"""render/linux_bootstrap.py's scripts (init, join credentials, join, reset, kube-vip, the provider's credential,
the certificates): shellcheck on every one, then executed for real against a scratch root (tests/scratch_root.py).
The kube-vip Pod is checked with kubernetes-validate's strict schemas."""
from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from config.compat import KUBE_VIP_IMAGE
from render import linux_bootstrap as lb
from render import node_steps as steps
from render.linux_node import PREPARE_SCRIPT_PATH
from render.readiness import render_wait_for_cloud_init
from render.shell import bash_command
from tests import validators as paths
from tests.scratch_root import CA_HASH, CERT_KEY, KEY, ONE_MEMBER, TOKEN, Node, check_script
from tests.validators import shellcheck

CA_HASH_2 = "sha256:" + "a1" * 32


SECRETS = (TOKEN, CERT_KEY)


ENDPOINT = "10.30.30.10:6443"


# The shape `kubeadm token create --print-join-command` prints: its template's line continuations are
# removed, the indentation and a trailing blank stay (kubernetes cmd/kubeadm/app/cmd/util/join.go, token.go).
WORKER_LINE = f"kubeadm join {ENDPOINT} --token {TOKEN}     --discovery-token-ca-cert-hash {CA_HASH} "


CONTROL_PLANE_LINE = (f"kubeadm join {ENDPOINT} --token {TOKEN}     --discovery-token-ca-cert-hash {CA_HASH}"
                      f"     --control-plane --certificate-key {CERT_KEY}")


WORKER_JOIN_YAML = """apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: "@@JOIN_API_ENDPOINT@@"
    token: "@@JOIN_TOKEN@@"
    caCertHashes:
    - "@@JOIN_CA_CERT_HASH@@"
  tlsBootstrapToken: "@@JOIN_TOKEN@@"
nodeRegistration:
  name: hk-prod-worker-1
"""


CONTROL_PLANE_JOIN_YAML = WORKER_JOIN_YAML.replace("nodeRegistration:\n  name: hk-prod-worker-1\n", """\
nodeRegistration:
  name: hk-prod-cp-2
controlPlane:
  certificateKey: "@@JOIN_CERTIFICATE_KEY@@"
""")


# The control-plane files init writes before kubeadm runs (render/security.py makes the real ones), and its first key.
HARDENING = {"/etc/kubernetes/hardening/admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"}


# What a control-plane join reads after its join line (linux-join-credentials.sh) on a cluster before encryption.
PLAIN_KEY_RING = "writer identity\ntarget identity\nfiles -\n"


INIT_YAML = """apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  name: hk-prod-cp-1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
controlPlaneEndpoint: 10.30.30.10:6443
"""


def kube_vip(first: bool, interface: str | None = None) -> str:
    return lb.render_kube_vip_manifest("10.30.30.10", 6443, KUBE_VIP_IMAGE, interface, first)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"secret leaked into: {text[:400]}"


BAD_LINES = {
    "empty input": ("", "no join line"),
    "not kubeadm join": (f"kubeadm reset --token {TOKEN}", "does not start with"),
    "token with capitals": (WORKER_LINE.replace(TOKEN, TOKEN.upper()), "not a bootstrap token"),
    "token too short": (WORKER_LINE.replace(TOKEN, TOKEN[:-1]), "not a bootstrap token"),
    "no token": (f"kubeadm join {ENDPOINT} --discovery-token-ca-cert-hash {CA_HASH}", "no --token"),
    "token without value": (f"kubeadm join {ENDPOINT} --discovery-token-ca-cert-hash {CA_HASH} --token",
                            "without its value"),
    "two tokens": (WORKER_LINE + f" --token {TOKEN}", "more than one --token"),
    "no hash": (f"kubeadm join {ENDPOINT} --token {TOKEN}", "no --discovery-token-ca-cert-hash"),
    "hash without sha256": (WORKER_LINE.replace(CA_HASH, CA_HASH[7:]), "not sha256:"),
    "short hash": (WORKER_LINE.replace(CA_HASH, CA_HASH[:-2]), "not sha256:"),
    "no endpoint": (f"kubeadm join --token {TOKEN} --discovery-token-ca-cert-hash {CA_HASH}",
                    "no API server endpoint"),
    "endpoint without port": (WORKER_LINE.replace(ENDPOINT, "10.30.30.10"), "not HOST:PORT"),
    "port out of range": (WORKER_LINE.replace(ENDPOINT, "10.30.30.10:70000"), "not HOST:PORT"),
    "endpoint with shell": (WORKER_LINE.replace(ENDPOINT, "$(reboot):6443"), "not HOST:PORT"),
    "unknown option": (WORKER_LINE + f" --discovery-token {TOKEN}", "unexpected option"),
    "control-plane line on a worker": (CONTROL_PLANE_LINE, "worker join"),
    "key of the wrong length": (WORKER_LINE + f" --certificate-key {CERT_KEY[:-1]}", "not 64 hex digits"),
}


@pytest.fixture
def static_pods(etcd) -> Node:
    manifests = etcd.path("/etc/kubernetes/manifests")
    manifests.mkdir(parents=True)
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"):
        (manifests / f"{component}.yaml").write_text(f"# {component}\n    - --secure-port=6443\n")
    etcd.path("/etc/kubernetes/pki").mkdir(parents=True)
    return etcd


# --- static checks --------------------------------------------------------------------------------

ALL_SCRIPTS = {
    "init-ha": lambda: lb.render_init(INIT_YAML, kube_vip(first=True), HARDENING, KEY),
    "init-single": lambda: lb.render_init(INIT_YAML, None, HARDENING, KEY),
    "join-worker": lambda: lb.render_join(WORKER_JOIN_YAML, control_plane=False),
    "join-control-plane": lambda: lb.render_join(CONTROL_PLANE_JOIN_YAML, True, kube_vip(first=False)),
    "credentials-worker": lambda: lb.render_join_credentials(control_plane=False),
    "credentials-control-plane": lambda: lb.render_join_credentials(control_plane=True, ttl="15m"),
    "reset": lambda: lb.render_reset("hk-prod-worker-1"),
    "reset-control-plane": lambda: lb.render_reset("hk-cp-3", etcd_pod="etcd-hk-cp-3"),
    "provider-credential": lambda: lb.render_provider_credential("initial"),
    "provider-credential-revoke": lambda: lb.render_provider_credential_revoke("hybrid-cluster:pulumi:initial"),
}


@pytest.mark.parametrize("name", sorted(ALL_SCRIPTS))
def test_every_script_passes_shellcheck_and_fits_the_remote_command(name, tmp_path):
    check_script(name, ALL_SCRIPTS[name](), tmp_path)


@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("interface", [None, "ens18"])
def test_kube_vip_manifest_is_a_strictly_valid_pod(first, interface):
    pod = yaml.safe_load(kube_vip(first, interface))
    kubernetes_validate.validate(pod, "1.36", strict=True)
    env = {item["name"]: item["value"] for item in pod["spec"]["containers"][0]["env"]}
    assert env["vip_arp"] == "true" and env["cp_enable"] == "true" and env["svc_enable"] == "false"
    assert env["vip_leaderelection"] == "true" and env["address"] == "10.30.30.10" and env["port"] == "6443"
    assert env.get("vip_interface") == interface
    assert pod["spec"]["hostNetwork"] is True
    assert pod["spec"]["containers"][0]["image"] == KUBE_VIP_IMAGE
    assert pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == lb.ADMIN_CONF
    host_path = pod["spec"]["volumes"][0]["hostPath"]
    assert host_path == {"path": lb.SUPER_ADMIN_CONF if first else lb.ADMIN_CONF, "type": "File"}


@pytest.mark.parametrize("vip, port, image, interface", [
    ("10.30.30.300", 6443, KUBE_VIP_IMAGE, None),
    ("10.30.30.10", 0, KUBE_VIP_IMAGE, None),
    ("10.30.30.10", 6443, "kube-vip; rm -rf /", None),
    ("10.30.30.10", 6443, KUBE_VIP_IMAGE, "eth0 && reboot"),
])
def test_kube_vip_rejects_bad_input(vip, port, image, interface):
    with pytest.raises(ValueError):
        lb.render_kube_vip_manifest(vip, port, image, interface, True)


def test_renderers_reject_inputs_that_would_break_the_scripts():
    with pytest.raises(ValueError):
        lb.render_join(WORKER_JOIN_YAML.replace("@@JOIN_TOKEN@@", "x"), control_plane=False)
    with pytest.raises(ValueError):
        lb.render_join(WORKER_JOIN_YAML, control_plane=True)
    with pytest.raises(ValueError):
        lb.render_join(CONTROL_PLANE_JOIN_YAML, control_plane=False)
    with pytest.raises(ValueError):
        lb.render_join(CONTROL_PLANE_JOIN_YAML, True, kube_vip(first=True))
    with pytest.raises(ValueError):
        lb.render_init(INIT_YAML, kube_vip(first=False), HARDENING, KEY)
    with pytest.raises(ValueError):
        lb.render_init("key: [unclosed", None, HARDENING, KEY)
    with pytest.raises(ValueError):
        lb.render_init(INIT_YAML + "__HYBRID_CLUSTER_KUBEADM_CONFIG__\n", None, HARDENING, KEY)
    for ttl in ("0s", "0", "30", "25h", "1d", "30m; reboot"):
        with pytest.raises(ValueError):
            lb.render_join_credentials(control_plane=False, ttl=ttl)
    for name in ("Worker_1", "worker 1", "w$(id)", ""):
        with pytest.raises(ValueError):
            steps.render_drain(name)
        with pytest.raises(ValueError):
            steps.render_wait_for_node(name)
    with pytest.raises(ValueError):
        steps.render_wait_for_node("worker-1", timeout_seconds=0)


# --- init -----------------------------------------------------------------------------------------

def test_init_writes_config_and_kube_vip_runs_kubeadm_and_switches_kube_vip(node):
    result = node.run(lb.render_init(INIT_YAML, kube_vip(first=True), HARDENING, KEY))
    assert result.returncode == 0, result.stderr
    init_calls = [call for call in node.calls("kubeadm") if call[0] == "init"]
    assert init_calls == [["init", "--config", str(node.path(paths.INIT_CONFIG_PATH)), "--upload-certs",
                           "--skip-token-print", "--skip-certificate-key-print"]]
    config = node.path(paths.INIT_CONFIG_PATH)
    assert config.read_text() == INIT_YAML and mode(config) == 0o600
    # kube-vip was in place before init, with super-admin.conf, and uses admin.conf afterwards.
    during = yaml.safe_load((node.stubs / "kube-vip-during-init.yaml").read_text())
    assert during["spec"]["volumes"][0]["hostPath"]["path"] == lb.SUPER_ADMIN_CONF
    manifest = node.path(paths.KUBE_VIP_MANIFEST_PATH)
    after = yaml.safe_load(manifest.read_text())
    assert after["spec"]["volumes"][0]["hostPath"]["path"] == lb.ADMIN_CONF and mode(manifest) == 0o600
    assert yaml.safe_load(kube_vip(first=False)) == after
    # The API is checked through admin.conf (the control-plane endpoint).
    assert any("--raw=/readyz" in call for call in node.calls("kubectl"))
    log = node.path(paths.INIT_LOG)
    assert mode(log) == 0o600 and TOKEN in log.read_text()
    assert_no_secret(result.stdout, result.stderr)

    again = node.run(lb.render_init(INIT_YAML, kube_vip(first=True), HARDENING, KEY))
    assert again.returncode == 0, again.stderr
    assert "already initialised" in again.stdout
    assert [call for call in node.calls("kubeadm") if call[0] == "init"] == init_calls
    assert yaml.safe_load(manifest.read_text()) == after


def test_init_without_kube_vip_leaves_the_manifests_alone(node):
    result = node.run(lb.render_init(INIT_YAML, None, HARDENING, KEY))
    assert result.returncode == 0, result.stderr
    assert not node.path(paths.KUBE_VIP_MANIFEST_PATH).exists()
    assert node.path(lb.ADMIN_CONF).exists()


def test_init_failure_shows_a_redacted_log_and_resets_the_node(node):
    result = node.run(lb.render_init(INIT_YAML, kube_vip(first=True), HARDENING, KEY), STUB_INIT_FAIL="1")
    assert result.returncode == 1
    assert "kubeadm init failed" in result.stderr and "<redacted-token>" in result.stderr
    assert "<redacted-key>" in result.stderr
    assert_no_secret(result.stdout, result.stderr)
    assert ["reset", "-f"] in node.calls("kubeadm")
    assert not node.path(lb.ADMIN_CONF).exists(), "a failed init must not look initialised to the guard"


def test_init_waits_for_cloud_init_and_stops_when_it_failed(node):
    result = node.run(lb.render_init(INIT_YAML, None, HARDENING, KEY), STUB_CLOUD_INIT_RC="1")
    assert result.returncode == 1
    assert PREPARE_SCRIPT_PATH in result.stderr
    assert node.calls("cloud-init") == [["status", "--wait"]]
    assert node.calls("kubeadm") == []


@pytest.mark.parametrize("status,boot_finished,ok,message", [
    ("0", True, True, ""),
    ("2", True, True, "recoverable errors"),
    ("1", True, False, PREPARE_SCRIPT_PATH),
    ("124", True, False, "did not finish within 1800s"),
    ("0", False, False, "boot-finished"),
])
def test_the_first_boot_wait_reads_cloud_init_status(node, status, boot_finished, ok, message):
    if boot_finished:
        node.path("/var/lib/cloud/instance").mkdir(parents=True)
        node.path("/var/lib/cloud/instance/boot-finished").touch()
    result = node.run(render_wait_for_cloud_init(), STUB_CLOUD_INIT_RC=status)
    assert (result.returncode == 0) is ok, result.stderr
    assert message in result.stderr
    assert node.calls("cloud-init") == [["status", "--wait"]]
    assert node.calls("timeout")[0][0] == "1800"


def test_init_fails_when_the_api_never_answers(node):
    result = node.run(lb.render_init(INIT_YAML, None, HARDENING, KEY), STUB_API_DOWN="1")
    assert result.returncode == 1
    assert "/readyz" in result.stderr
    assert len(node.calls("sleep")) == lb.API_READY_TIMEOUT_SECONDS // steps.POLL_SECONDS


# --- join credentials -----------------------------------------------------------------------------

def test_worker_join_credentials_print_exactly_the_join_line(node):
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    result = node.run(lb.render_join_credentials(control_plane=False, ttl="30m"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == WORKER_LINE.rstrip() + "\n"
    assert result.stdout.count("\n") == 1
    assert_no_secret(result.stderr)
    token_calls = [call for call in node.calls("kubeadm") if call[0] == "token"]
    assert len(token_calls) == 1
    assert token_calls[0][:6] == ["token", "create", "--kubeconfig", str(node.path(lb.ADMIN_CONF)), "--ttl", "30m"]
    assert "--print-join-command" in token_calls[0] and "--certificate-key" not in token_calls[0]


def test_control_plane_join_credentials_upload_certs_under_a_fresh_key(node):
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    result = node.run(lb.render_join_credentials(control_plane=True, ttl="15m"))
    assert result.returncode == 0, result.stderr
    # The join line, then what the node's API server reads (a cluster without encryption or files yet).
    assert result.stdout == f"{WORKER_LINE.rstrip()} --control-plane --certificate-key {CERT_KEY}\n{PLAIN_KEY_RING}"
    assert_no_secret(result.stderr)
    kubeadm = node.calls("kubeadm")
    assert [call[:2] for call in kubeadm] == [["certs", "certificate-key"], ["init", "phase"], ["token", "create"]]
    upload = kubeadm[1]
    assert upload[:3] == ["init", "phase", "upload-certs"]
    assert "--upload-certs" in upload and "--skip-certificate-key-print" in upload and "--config" in upload
    # The key reaches kubeadm in a 0600 InitConfiguration file, never on a command line.
    written = yaml.safe_load((node.stubs / "upload-certs.yaml").read_text())
    assert written == {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "InitConfiguration", "certificateKey": CERT_KEY}
    assert (node.stubs / "upload-certs.mode").read_text().strip() == "600"
    assert CERT_KEY not in node.calls_text()
    token = kubeadm[2]
    assert "--certificate-key" not in token and token[token.index("--ttl") + 1] == "15m"
    log = node.path(paths.JOIN_CREDENTIALS_LOG)
    assert mode(log) == 0o600 and "Using certificate key" in log.read_text()


def test_join_credentials_print_nothing_when_a_step_fails(node):
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    result = node.run(lb.render_join_credentials(control_plane=True), STUB_TOKEN_FAIL="1")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "kubeadm token create failed" in result.stderr
    assert_no_secret(result.stderr)


def test_join_credentials_need_an_initialised_node(node):
    result = node.run(lb.render_join_credentials(control_plane=False))
    assert result.returncode == 1 and result.stdout == ""
    assert "admin.conf is missing" in result.stderr
    assert node.calls("kubeadm") == []


# --- join -----------------------------------------------------------------------------------------

def test_worker_join_substitutes_the_join_line_into_a_private_temporary_config(node):
    result = node.run(lb.render_join(WORKER_JOIN_YAML, control_plane=False), stdin=WORKER_LINE + "\n")
    assert result.returncode == 0, result.stderr
    config_path = Path((node.stubs / "join-config.path").read_text().strip())
    assert node.calls("kubeadm") == [["join", "--config", str(config_path)]]
    written = (node.stubs / "join-config.yaml").read_text()
    assert "@@" not in written
    assert written == (WORKER_JOIN_YAML.replace("@@JOIN_API_ENDPOINT@@", ENDPOINT)
                       .replace("@@JOIN_TOKEN@@", TOKEN).replace("@@JOIN_CA_CERT_HASH@@", CA_HASH))
    document = yaml.safe_load(written)
    assert document["discovery"]["bootstrapToken"] == {"apiServerEndpoint": ENDPOINT, "token": TOKEN,
                                                       "caCertHashes": [CA_HASH]}
    assert (node.stubs / "join-config.mode").read_text().strip() == "600"
    assert (node.stubs / "join-dir.mode").read_text().strip() == "700"
    assert config_path.is_relative_to(node.root / "run")
    assert not config_path.exists() and not config_path.parent.exists(), "the config must be removed"
    assert_no_secret(result.stdout, result.stderr, node.calls_text())
    assert mode(node.path(paths.JOIN_LOG)) == 0o600

    again = node.run(lb.render_join(WORKER_JOIN_YAML, control_plane=False), stdin=WORKER_LINE + "\n")
    assert again.returncode == 0, again.stderr
    assert "already joined" in again.stdout
    assert len(node.calls("kubeadm")) == 1


def test_control_plane_join_sets_the_certificate_key_and_starts_kube_vip_after_joining(node):
    script = lb.render_join(CONTROL_PLANE_JOIN_YAML, True, kube_vip(first=False))
    result = node.run(script, stdin=f"{CONTROL_PLANE_LINE}\n{PLAIN_KEY_RING.rstrip()}")  # no trailing newline: still read
    assert result.returncode == 0, result.stderr
    written = yaml.safe_load((node.stubs / "join-config.yaml").read_text())
    assert written["controlPlane"]["certificateKey"] == CERT_KEY
    assert (node.stubs / "manifests-during-join").read_text() == "", "join's preflight needs empty manifests"
    manifest = node.path(paths.KUBE_VIP_MANIFEST_PATH)
    assert yaml.safe_load(manifest.read_text()) == yaml.safe_load(kube_vip(first=False))
    assert_no_secret(result.stdout, result.stderr, node.calls_text())

    again = node.run(script, stdin="")
    assert again.returncode == 0, again.stderr
    assert len(node.calls("kubeadm")) == 1


def test_join_repeats_the_hash_item_for_every_ca_hash(node):
    line = WORKER_LINE + f"--discovery-token-ca-cert-hash {CA_HASH_2}"
    result = node.run(lb.render_join(WORKER_JOIN_YAML, control_plane=False), stdin=line + "\n")
    assert result.returncode == 0, result.stderr
    written = yaml.safe_load((node.stubs / "join-config.yaml").read_text())
    assert written["discovery"]["bootstrapToken"]["caCertHashes"] == [CA_HASH, CA_HASH_2]


def test_join_refuses_several_hashes_when_the_placeholder_is_not_a_list_item(node):
    template = WORKER_JOIN_YAML.replace('    caCertHashes:\n    - "@@JOIN_CA_CERT_HASH@@"\n',
                                        '    caCertHashes: ["@@JOIN_CA_CERT_HASH@@"]\n')
    line = WORKER_LINE + f"--discovery-token-ca-cert-hash {CA_HASH_2}"
    result = node.run(lb.render_join(template, control_plane=False), stdin=line + "\n")
    assert result.returncode == 1
    assert "not a list item" in result.stderr
    assert_no_secret(result.stderr)


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_join_rejects_a_malformed_join_line_without_repeating_it(node, case):
    line, message = BAD_LINES[case]
    result = node.run(lb.render_join(WORKER_JOIN_YAML, control_plane=False), stdin=line + "\n")
    assert result.returncode == 1, result.stdout
    assert message in result.stderr
    assert_no_secret(result.stdout, result.stderr, node.calls_text())
    assert TOKEN.upper() not in result.stderr and CERT_KEY[:-1] not in result.stderr
    assert node.calls("kubeadm") == [] and node.calls("mktemp") == []


def test_control_plane_join_rejects_a_worker_line(node):
    result = node.run(lb.render_join(CONTROL_PLANE_JOIN_YAML, True, kube_vip(first=False)), stdin=WORKER_LINE)
    assert result.returncode == 1
    assert "lacks --control-plane --certificate-key" in result.stderr
    assert node.calls("kubeadm") == []


def test_join_failure_redacts_resets_and_still_removes_the_config(node):
    result = node.run(lb.render_join(WORKER_JOIN_YAML, control_plane=False), stdin=WORKER_LINE + "\n",
                      STUB_JOIN_FAIL="1")
    assert result.returncode == 1
    assert "kubeadm join failed" in result.stderr and "<redacted-token>" in result.stderr
    assert_no_secret(result.stdout, result.stderr)
    assert node.calls("kubeadm")[-1] == ["reset", "-f"]
    assert not node.path(paths.KUBELET_CONF).exists()
    assert not Path((node.stubs / "join-config.path").read_text().strip()).exists()


def test_join_credentials_output_drives_the_join(node):
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    credentials = node.run(lb.render_join_credentials(control_plane=True))
    assert credentials.returncode == 0, credentials.stderr
    node.path(lb.ADMIN_CONF).unlink()
    joined = node.run(lb.render_join(CONTROL_PLANE_JOIN_YAML, True), stdin=credentials.stdout)
    assert joined.returncode == 0, joined.stderr
    written = yaml.safe_load((node.stubs / "join-config.yaml").read_text())
    assert written["discovery"]["bootstrapToken"]["token"] == TOKEN
    assert written["controlPlane"]["certificateKey"] == CERT_KEY


# --- reset ----------------------------------------------------------------------------------------

def test_reset_on_a_clean_node_changes_nothing(node):
    result = node.run(lb.render_reset("hk-prod-worker-1"))
    assert result.returncode == 0, result.stderr
    assert "no kubeadm state" in result.stdout
    assert node.calls("kubeadm") == []
    assert node.calls("iptables-restore") == []
    assert [call for call in node.calls("ip") if call[:2] == ["link", "delete"]] == []
    assert not node.root.joinpath("var/log/kubeadm-reset.log").exists()


def test_reset_removes_kubeadm_cni_calico_and_proxy_state_then_is_a_no_op(node):
    for path, content in {
        "etc/kubernetes/kubelet.conf": "kubelet",
        "etc/kubernetes/manifests/kube-vip.yaml": "kind: Pod",
        "etc/kubernetes/kubeadm/init.yaml": "kind: InitConfiguration",
        "etc/cni/net.d/10-calico.conflist": "{}",
        "etc/cni/net.d/calico-kubeconfig": "secret",
        "var/lib/calico/nodename": "worker-1",
        "run/calico/cni-ipam.lock": "",
        "var/lib/cni/networks/k8s-pod-network/10.244.1.2": "",
        "var/log/kubeadm-join.log": f"token {TOKEN}",
        "root/.kube/config": "admin",
        "etc/kubernetes/encryption/keys/key-initial": "A" * 43 + "=",
        "etc/kubernetes/hardening/audit-policy.yaml": "kind: Policy",
        "etc/kubernetes/manifests-parked/kube-apiserver.yaml": "kind: Pod",
    }.items():
        target = node.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    (node.stubs / "links").write_text(
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536\n"
        "2: ens18: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500\n"
        "5: vxlan.calico: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450\n"
        "6: cali3f1e2d4c5b6@if3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450\n"
        "7: tunl0@NONE: <NOARP> mtu 1480\n")
    (node.stubs / "iptables.rules").write_text(
        "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:cali-nat-outgoing - [0:0]\n"
        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n'
        '-A PREROUTING -m comment --comment "cali:6gwbT8clXdHdC1b1" -j cali-PREROUTING\n'
        "-A POSTROUTING -s 192.168.122.0/24 -j MASQUERADE\nCOMMIT\n"
        "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n"
        "-A INPUT -p tcp --dport 22 -j ACCEPT\nCOMMIT\n")

    result = node.run(lb.render_reset("hk-prod-worker-1"))
    assert result.returncode == 0, result.stderr
    assert node.calls("kubeadm") == [["reset", "-f"]]
    assert not node.path(paths.KUBE_VIP_MANIFEST_PATH).exists()
    assert not (node.root / "etc/kubernetes/kubeadm").exists()
    assert (node.root / "etc/cni/net.d").is_dir() and not list((node.root / "etc/cni/net.d").iterdir())
    for gone in ("var/lib/calico", "run/calico", "var/lib/cni", "root/.kube", "var/log/kubeadm-join.log",
                 "etc/kubernetes/encryption", "etc/kubernetes/hardening", "etc/kubernetes/manifests-parked"):
        assert not (node.root / gone).exists(), gone
    deleted = [call[2] for call in node.calls("ip") if call[:2] == ["link", "delete"]]
    assert deleted == ["vxlan.calico", "cali3f1e2d4c5b6", "tunl0"]
    assert ["link", "set", "tunl0", "down"] in node.calls("ip")
    restored = (node.stubs / "iptables.restored").read_text()
    assert "KUBE-" not in restored and "cali" not in restored
    assert "-A POSTROUTING -s 192.168.122.0/24 -j MASQUERADE" in restored
    assert "-A INPUT -p tcp --dport 22 -j ACCEPT" in restored and restored.count("COMMIT") == 2

    again = node.run(lb.render_reset("hk-prod-worker-1"))
    assert again.returncode == 0, again.stderr
    assert "no kubeadm state" in again.stdout
    assert len(node.calls("kubeadm")) == 1 and len(node.calls("iptables-restore")) == 1


# --- wait, drain, kubeconfig ----------------------------------------------------------------------

def test_scripts_run_through_the_remote_command_wrapper_with_stdin(node, tmp_path):
    # The real transport: the login shell runs `sudo -n bash -c "$(cat <<'EOF' ... EOF)"`; a stand-in
    # sudo drops -n. The join line still reaches the script's stdin.
    sudo = node.stubs / "sudo"
    sudo.write_text('#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
    sudo.chmod(0o755)
    command = bash_command(lb.render_join(WORKER_JOIN_YAML, control_plane=False))
    result = subprocess.run([shutil.which("sh"), "-c", command], input=WORKER_LINE + "\n", env=node.env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert node.calls("kubeadm")[0][0] == "join"


@pytest.mark.parametrize("state", ["etc/kubernetes/pki/ca.crt", "etc/kubernetes/manifests/kube-apiserver.yaml",
                                   "var/lib/etcd/member"])
def test_init_and_join_refuse_to_touch_a_node_that_holds_control_plane_state(node, state):
    path = node.root / state
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir() if state.endswith("member") else path.write_text("x")
    init = node.run(lb.render_init(INIT_YAML, None, HARDENING, KEY))
    assert init.returncode == 1 and "holds control-plane state" in init.stderr and "Nothing was changed" in init.stderr
    join = node.run(lb.render_join(WORKER_JOIN_YAML, control_plane=False), stdin=WORKER_LINE + "\n")
    assert join.returncode == 1 and "holds control-plane state" in join.stderr
    assert node.calls("kubeadm") == []


# --- control-plane certificates ----------------------------------------------------------------

def test_certificate_expiry_lists_every_certificate_and_authority(control_plane):
    result = control_plane.run(lb.render_certificate_expiry())
    assert result.returncode == 0, result.stderr
    assert lb.parse_certificate_expiry(result.stdout) == {
        "admin.conf": "Dec 03, 2027 09:17 UTC", "apiserver": "Dec 03, 2027 09:16 UTC",
        "etcd-server": "Dec 02, 2027 09:16 UTC", "ca": "Nov 30, 2036 14:13 UTC"}


def test_certificate_expiry_needs_the_control_plane(node):
    result = node.run(lb.render_certificate_expiry())
    assert result.returncode == 1 and "kubeadm init has not completed" in result.stderr


def test_renewal_checks_quorum_renews_and_restarts_each_static_pod_once_per_round(static_pods):
    script = lb.render_renew_certificates("hk-cp-3", "2027-10", etcd_pod="etcd-hk-cp-1")
    result = static_pods.run(script)
    assert result.returncode == 0, result.stderr
    text = static_pods.calls_text()
    assert text.index("member") < text.index("renew")
    moved = [call[0].rsplit("/", 1)[1] for call in static_pods.calls("mv")]
    assert moved == ["kube-apiserver.yaml", "kube-apiserver.yaml", "kube-controller-manager.yaml",
                     "kube-controller-manager.yaml", "kube-scheduler.yaml", "kube-scheduler.yaml", "etcd.yaml", "etcd.yaml"]
    assert sorted(p.name for p in static_pods.path("/etc/kubernetes/manifests").iterdir()) == [
        "etcd.yaml", "kube-apiserver.yaml", "kube-controller-manager.yaml", "kube-scheduler.yaml"]
    assert static_pods.path(paths.RENEWAL_MARKER).read_text() == "2027-10"
    again = static_pods.run(script)
    assert again.returncode == 0 and "already renewed in round 2027-10" in again.stdout
    assert len(static_pods.calls("mv")) == 8


def test_renewal_refuses_to_start_without_quorum(static_pods):
    (static_pods.stubs / "etcd-unhealthy").write_text("https://10.30.30.12:2379\n")
    result = static_pods.run(lb.render_renew_certificates("hk-cp-3", "2027-10", etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 1
    assert not [c for c in static_pods.calls("kubeadm") if c[:2] == ["certs", "renew"]]
    assert not static_pods.path(paths.RENEWAL_MARKER).exists()


def test_renewal_checks_quorum_again_right_before_it_stops_etcd_and_restarts_kube_vip_last(static_pods):
    static_pods.path("/etc/kubernetes/manifests/kube-vip.yaml").write_text("# kube-vip\n")
    result = static_pods.run(lb.render_renew_certificates("hk-cp-3", "2027-10", etcd_pod="etcd-hk-cp-1",
                                                          kube_vip=True))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("etcd quorum holds while hk-cp-3 is down") == 2
    lines = result.stdout.splitlines()
    assert lines.index("restarted kube-scheduler on hk-cp-3 with its renewed certificate") < \
        [i for i, line in enumerate(lines) if "quorum holds" in line][-1] < \
        lines.index("restarted etcd on hk-cp-3 with its renewed certificate")
    moved = [call[0].rsplit("/", 1)[1] for call in static_pods.calls("mv")]
    assert moved[-2:] == ["kube-vip.yaml", "kube-vip.yaml"]


def test_renewal_stops_at_a_component_that_does_not_come_back(static_pods):
    result = static_pods.run(lb.render_renew_certificates("hk-cp-3", "2027-10", etcd_pod=None), STUB_POD_NOT_READY="1")
    assert result.returncode == 1 and "kube-apiserver on hk-cp-3 is not Ready" in result.stderr
    # Its manifest is back in place (the kubelet runs it again); the round is not recorded.
    assert static_pods.path("/etc/kubernetes/manifests/kube-apiserver.yaml").exists()
    assert not static_pods.path(paths.RENEWAL_MARKER).exists()


@pytest.mark.parametrize("script", [lb.render_certificate_expiry(),
                                    lb.render_renew_certificates("hk-cp-2", "2027-10", "etcd-hk-cp-2"),
                                    lb.render_renew_certificates("hk-cp-1", "r1", None)])
def test_certificate_scripts_pass_shellcheck(script, tmp_path):
    path = tmp_path / "step.sh"
    path.write_text("#!/usr/bin/env bash\n" + script)
    shellcheck(path)


def test_renewal_labels_are_checked():
    with pytest.raises(ValueError, match="renewal label"):
        lb.render_renew_certificates("hk-cp-1", "2027 10; rm -rf /", None)


# --- quorum: a removal versus a temporary outage -----------------------------------------------------

def test_a_control_plane_reset_checks_quorum_right_before_kubeadm_removes_its_member(etcd):
    etcd.path(paths.KUBELET_CONF).write_text("kubelet")
    (etcd.stubs / "etcd-unhealthy").write_text("https://10.30.30.12:2379\n")
    refused = etcd.run(lb.render_reset("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert refused.returncode == 1 and "refusing to remove hk-cp-3" in refused.stderr
    assert etcd.calls("kubeadm") == []
    (etcd.stubs / "etcd-unhealthy").unlink()
    result = etcd.run(lb.render_reset("hk-cp-3", etcd_pod="etcd-hk-cp-1"))
    assert result.returncode == 0, result.stderr
    assert "etcd quorum holds without hk-cp-3" in result.stdout and etcd.calls("kubeadm") == [["reset", "-f"]]


def test_a_one_control_plane_stack_drains_its_only_member_for_an_upgrade(etcd):
    """The program's own drain for a stack with one control-plane node (what most labs run), run against
    etcd stubs: the chain does not stop at its first step."""
    from render.shell import script_from_bash_command
    from tests.conftest import hk_prod_values, raw_config
    from tools.mock.program import run_program

    values = hk_prod_values()
    values["nodes"]["controlPlane"] = values["nodes"]["controlPlane"][:1]
    recording = run_program(raw_config(values))
    drain = script_from_bash_command(recording.named("hk-prod-upgrade-hk-cp-1-drain-for-upgrade").inputs["update"])
    (etcd.stubs / "etcd-members").write_text(ONE_MEMBER)
    (etcd.stubs / "nodes" / "hk-cp-1").touch()
    (etcd.stubs / "kubelet-version-hk-cp-1").write_text("v1.36.3\n")
    result = etcd.run(drain)
    assert result.returncode == 0, result.stderr
    assert "only etcd member" in result.stdout and [c[0] for c in etcd.calls("kubectl")][-2:] == ["cordon", "drain"]
