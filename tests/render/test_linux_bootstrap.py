"""The Linux bootstrap scripts: shellcheck on every one, then executed for real against a scratch root.

PATH holds nothing but stub kubeadm/kubectl/cloud-init/ip/iptables/sleep and recording wrappers around
the few real tools the scripts use (coreutils, grep, sed), so no real system command is reached and
the argv of every process a script starts, other than bash itself, is on record: secrets are checked
against all of them. The kube-vip Pod is checked with kubernetes-validate's strict schemas."""
from __future__ import annotations

import shutil
import stat
import subprocess
from dataclasses import dataclass
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
from tests.validators import first_command, shellcheck

TOKEN = "q7k2xz.m4n8p1r6s9t3v5w0"
CA_HASH = "sha256:" + "3f" * 32
CA_HASH_2 = "sha256:" + "a1" * 32
CERT_KEY = "c0ffee" * 10 + "beef"
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
KEY = "key-initial"
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


# --- stubs ----------------------------------------------------------------------------------------

# One write per call: processes in a pipeline record at the same time.
_RECORD = ('record() {\n  local line="${0##*/}" arg\n  for arg in "$@"; do line+=$\'\\x1f\'"$arg"; done\n'
           '  printf "%s\\n" "$line" >>"$STUB_LOG"\n}\nrecord "$@"\n')

_STUBS = {
    "kubeadm": r"""
root=$HYBRID_CLUSTER_TEST_ROOT
case "$1" in
  init)
    if [[ $2 == phase ]]; then
      # Real kubeadm honours --skip-certificate-key-print; the stub prints the key anyway, to show it
      # ends up in the root-only log only. The key arrives in the --config file, kept for the test.
      for ((i = 1; i <= $#; i++)); do
        if [[ ${!i} == --config ]]; then
          j=$((i + 1))
          cp "${!j}" "$STUB_DIR/upload-certs.yaml"
          stat -c %a "${!j}" >"$STUB_DIR/upload-certs.mode"
        fi
      done
      printf '[upload-certs] Using certificate key:\n%s\n' "$STUB_CERT_KEY"
      exit 0
    fi
    cp "$root/etc/kubernetes/manifests/kube-vip.yaml" "$STUB_DIR/kube-vip-during-init.yaml" 2>/dev/null || true
    echo "kubeadm join 10.30.30.10:6443 --token $STUB_TOKEN --certificate-key $STUB_CERT_KEY"
    mkdir -p "$root/etc/kubernetes"
    echo "apiVersion: v1" >"$root/etc/kubernetes/admin.conf"
    if [[ -n ${STUB_INIT_FAIL:-} ]]; then
      echo "error: bootstrap token $STUB_TOKEN: timed out waiting for the condition" >&2
      exit 1
    fi
    ;;
  join)
    cp "$3" "$STUB_DIR/join-config.yaml"
    stat -c %a "$3" >"$STUB_DIR/join-config.mode"
    stat -c %a "${3%/*}" >"$STUB_DIR/join-dir.mode"
    echo "$3" >"$STUB_DIR/join-config.path"
    ls -A "$root/etc/kubernetes/manifests" >"$STUB_DIR/manifests-during-join" 2>/dev/null || true
    echo "[preflight] token $STUB_TOKEN accepted"
    mkdir -p "$root/etc/kubernetes"
    echo "kubelet" >"$root/etc/kubernetes/kubelet.conf"
    if [[ -n ${STUB_JOIN_FAIL:-} ]]; then
      echo "error: couldn't validate the identity of the API Server with token $STUB_TOKEN" >&2
      exit 1
    fi
    ;;
  certs)
    case "$2" in
      check-expiration)
        # The layout kubeadm prints (kubernetes/kubeadm#2866 shows it), shortened.
        echo "[check-expiration] Reading configuration from the cluster..."
        echo ""
        echo "CERTIFICATE                EXPIRES                  RESIDUAL TIME   CERTIFICATE AUTHORITY   EXTERNALLY MANAGED"
        echo "admin.conf                 Dec 03, 2027 09:17 UTC   364d            ca                      no"
        echo "apiserver                  Dec 03, 2027 09:16 UTC   364d            ca                      no"
        echo "etcd-server                Dec 02, 2027 09:16 UTC   363d            etcd-ca                 no"
        echo ""
        echo "CERTIFICATE AUTHORITY   EXPIRES                  RESIDUAL TIME   EXTERNALLY MANAGED"
        echo "ca                      Nov 30, 2036 14:13 UTC   9y              no"
        ;;
      renew) echo "certificates renewed" ;;
      *) echo "$STUB_CERT_KEY" ;;
    esac
    ;;
  token)
    [[ -z ${STUB_TOKEN_FAIL:-} ]] || { echo "error: etcdserver: request timed out" >&2; exit 1; }
    line="kubeadm join 10.30.30.10:6443 --token $STUB_TOKEN     --discovery-token-ca-cert-hash $STUB_HASH "
    for ((i = 1; i <= $#; i++)); do
      if [[ ${!i} == --certificate-key ]]; then
        j=$((i + 1))
        line="${line%% }     --control-plane --certificate-key ${!j}"
      fi
    done
    echo "$line"
    ;;
  reset)
    rm -rf "$root/etc/kubernetes/"* "$root/var/lib/kubelet" "$root/var/lib/etcd"
    echo "[reset] done"
    ;;
  *) echo "unexpected kubeadm call" >&2; exit 3 ;;
esac
""",
    "kubectl": r"""
case "$*" in
  "--server https://127.0.0.1:6443 --tls-server-name kubernetes get --raw=/readyz"*)
    # The node's own API server: up when its manifest is in place (static-pod-restart.sh).
    [[ -z ${STUB_POD_NOT_READY:-} && -f $HYBRID_CLUSTER_TEST_ROOT/etc/kubernetes/manifests/kube-apiserver.yaml ]] \
      && echo ok && exit 0; exit 1 ;;
  *--raw=/readyz*) [[ -z ${STUB_API_DOWN:-} ]] && echo ok && exit 0; exit 1 ;;
  "-n kube-system get pod "*) [[ -n ${STUB_POD_NOT_READY:-} ]] && echo False || echo True; exit 0 ;;
  # Longhorn (lib/longhorn-evict.sh): the CRD when STUB_LONGHORN is set, a node object when longhorn-node-<n>
  # exists, its replicas in longhorn-replicas (one line each); after the eviction request each listing finds one
  # fewer, unless STUB_LONGHORN_STUCK; the first STUB_LONGHORN_PATCH_FAILS patches are refused by the webhook.
  "get crd nodes.longhorn.io --ignore-not-found -o name"*)
    [[ -z ${STUB_LONGHORN:-} ]] || echo "customresourcedefinition.apiextensions.k8s.io/nodes.longhorn.io"; exit 0 ;;
  "-n longhorn-system get nodes.longhorn.io "*)
    [[ ! -e $STUB_DIR/longhorn-node-$5 ]] || echo "node.longhorn.io/$5"; exit 0 ;;
  "-n longhorn-system patch nodes.longhorn.io "*)
    refused=$(($(cat "$STUB_DIR/patch-refusals" 2>/dev/null || echo 0) + 1))
    echo "$refused" >"$STUB_DIR/patch-refusals"
    if ((refused <= ${STUB_LONGHORN_PATCH_FAILS:-0})); then
      echo 'admission webhook "validator.longhorn.io" denied the request: please retry later.' >&2; exit 1
    fi
    : >"$STUB_DIR/longhorn-evicting-$5"; echo "node.longhorn.io/$5 patched"; exit 0 ;;
  "-n longhorn-system get replicas.longhorn.io -l longhornnode="*)
    node=${6#longhornnode=}
    replicas="$STUB_DIR/longhorn-replicas"
    if [[ -e $STUB_DIR/longhorn-evicting-$node ]]; then
      failed=$(($(cat "$STUB_DIR/list-failures" 2>/dev/null || echo 0) + 1))
      echo "$failed" >"$STUB_DIR/list-failures"
      ((failed > ${STUB_LONGHORN_LIST_FAILS:-0})) || { echo "Unable to connect to the server" >&2; exit 1; }
      [[ -z ${STUB_NOT_READY_WHILE_EVICTING:-} ]] || echo False >"$STUB_DIR/ready-$node"
    fi
    [[ -e $replicas ]] || exit 0
    cat "$replicas"
    if [[ -e $STUB_DIR/longhorn-evicting-$node && -z ${STUB_LONGHORN_STUCK:-} ]]; then
      tail -n +2 "$replicas" >"$replicas.new"; mv "$replicas.new" "$replicas"
    fi
    exit 0 ;;
  "-n longhorn-system get volumes.longhorn.io "*)
    echo "$5: degraded precheck new replica failed: hard affinity cannot be satisfied"; exit 0 ;;
esac
nodes="$STUB_DIR/nodes"
if [[ $1 == -n && $3 == exec ]]; then
  # kubectl -n kube-system exec POD --request-timeout=60s -- etcdctl --endpoints=E --cacert --cert --key VERB...
  members="$STUB_DIR/etcd-members"
  [[ $2 == kube-system && $4 == etcd-hk-cp-1 && $6 == -- && $7 == etcdctl ]] || { echo "unexpected exec" >&2; exit 3; }
  endpoint=${8#--endpoints=}
  case "${12} ${13:-}" in
    "member list") cat "$members" ;;
    "endpoint health")
      if grep -qxF "$endpoint" "$STUB_DIR/etcd-unhealthy" 2>/dev/null; then exit 1; fi
      echo "$endpoint is healthy" ;;
    "member remove")
      grep -v "^${14}, " "$members" >"$members.new" || true
      mv "$members.new" "$members"
      echo "Member ${14} removed" ;;
    *) echo "unexpected etcdctl call" >&2; exit 3 ;;
  esac
  exit 0
fi
case "$1" in
  get)
    [[ -z ${STUB_API_ERROR:-} ]] || { echo "The connection to the server was refused" >&2; exit 1; }
    case "$*" in
      *kubeletVersion*containerRuntimeVersion*)
        printf '%s %s\n' "$(cat "$STUB_DIR/kubelet-version-$3" 2>/dev/null || true)" \
          "$(cat "$STUB_DIR/runtime-version-$3" 2>/dev/null || echo containerd://2.3.5)"
        exit 0 ;;
      *kubeletVersion*) cat "$STUB_DIR/kubelet-version-$3" 2>/dev/null || true; exit 0 ;;
      *"{.spec.taints[*].key}"*) cat "$STUB_DIR/taints-$3" 2>/dev/null || true; exit 0 ;;
      *'conditions[?(@.type=="Ready")].status'*) cat "$STUB_DIR/ready-$3" 2>/dev/null || echo True; exit 0 ;;
      *"annotations.hybrid-cluster\.io/upgrading-to"*) cat "$STUB_DIR/upgrade-mark-$3" 2>/dev/null || true; exit 0 ;;
    esac
    count=$(($(cat "$STUB_DIR/get-count" 2>/dev/null || echo 0) + 1))
    echo "$count" >"$STUB_DIR/get-count"
    if [[ -e $nodes/$3 ]] || ((count >= ${STUB_NODE_APPEARS_AT:-1000000})); then echo "node/$3"; fi
    ;;
  wait)
    [[ -z ${STUB_NODE_NOT_READY:-} ]] || { echo "error: timed out waiting for the condition on nodes/x" >&2; exit 1; }
    echo "${4:-node} condition met"
    ;;
  cordon) echo "node/$2 cordoned" ;;
  taint) [[ $2 == node ]] && echo "${4%%=*}" >>"$STUB_DIR/taints-$3"; echo "node/$3 tainted" ;;
  uncordon) echo "node/$2 uncordoned" ;;
  annotate)
    # kubectl annotate node NAME [--overwrite] KEY=VALUE | KEY-
    for arg in "${@:4}"; do
      case "$arg" in
        hybrid-cluster.io/upgrading-to=*) echo "${arg#*=}" >"$STUB_DIR/upgrade-mark-$3" ;;
        hybrid-cluster.io/upgrading-to-) rm -f "$STUB_DIR/upgrade-mark-$3" ;;
      esac
    done
    ;;
  drain)
    [[ -z ${STUB_DRAIN_PDB:-} ]] || {
      echo "error when evicting pods/\"api-0\" -n \"linux-prod\" (will retry after 5s):" \
        "Cannot evict pod as it would violate the pod's disruption budget." >&2
      echo "error: timed out waiting for the condition" >&2; exit 1; }
    [[ -z ${STUB_DRAIN_FAIL:-} ]] || { echo "error: timed out waiting for the condition" >&2; exit 1; }
    echo "node/$2 drained"
    ;;
  delete) rm -f "$nodes/$3"; echo "node \"$3\" deleted" ;;
  *) echo "unexpected kubectl call" >&2; exit 3 ;;
esac
""",
    "cloud-init": 'exit "${STUB_CLOUD_INIT_RC:-0}"\n',
    "sleep": "exit 0\n",
    "ip": r"""
links="$STUB_DIR/links"
if [[ $1 == -o ]]; then
  cat "$links" 2>/dev/null || echo "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536"
  exit 0
fi
case "$2" in
  delete)
    [[ $3 != tunl0 ]] || { echo "RTNETLINK answers: Operation not supported" >&2; exit 2; }
    grep -v -E ": $3[:@]" "$links" >"$links.new" || true
    mv "$links.new" "$links"
    ;;
  show) grep -q -E ": $3[:@]" "$links" ;;
  set) ;;
esac
""",
    "iptables-save": r"""
if [[ -f $STUB_DIR/iptables.rules ]]; then cat "$STUB_DIR/iptables.rules"; exit 0; fi
printf '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n'
""",
    "iptables-restore": 'cat >"$STUB_DIR/iptables.restored"\nrm -f "$STUB_DIR/iptables.rules"\n',
}

# The only real programs the scripts may reach, each behind a recording wrapper (bash itself runs
# the scripts and the wrappers, so it is linked directly).
_REAL_TOOLS = ("awk", "base64", "cat", "chmod", "cmp", "cp", "cut", "dirname", "grep", "gzip", "head", "install", "ls",
               "mkdir", "mktemp", "mv", "rm", "sed", "sha256sum", "stat", "tail", "tar", "tee", "timeout")


@dataclass
class Node:
    root: Path
    stubs: Path
    env: dict[str, str]

    def run(self, script: str, stdin: str = "", **extra_env: str) -> subprocess.CompletedProcess[str]:
        env = dict(self.env, **extra_env)
        return subprocess.run([shutil.which("bash"), "-c", script], input=stdin, env=env,
                              capture_output=True, text=True, timeout=60, check=False)

    def calls(self, name: str | None = None) -> list[list[str]]:
        log = self.stubs / "calls.log"
        if not log.exists():
            return []
        calls = [line.split("\x1f") for line in log.read_text().splitlines()]
        return [call[1:] for call in calls if name is None or call[0] == name]

    def calls_text(self) -> str:
        log = self.stubs / "calls.log"
        return log.read_text() if log.exists() else ""

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")


@pytest.fixture
def node(tmp_path: Path) -> Node:
    root, stubs, real = tmp_path / "root", tmp_path / "stubs", tmp_path / "bin"
    for directory in (root, stubs, real):
        directory.mkdir()
    (real / "bash").symlink_to(shutil.which("bash"))
    for tool in _REAL_TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} missing on the test machine"
        wrapper = real / tool
        wrapper.write_text(f'#!/usr/bin/env bash\n{_RECORD}exec {found} "$@"\n')
        wrapper.chmod(0o755)
    for name, body in _STUBS.items():
        script = stubs / name
        script.write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + _RECORD + body)
        script.chmod(0o755)
    env = {
        "PATH": f"{stubs}:{real}",
        "HOME": str(tmp_path),
        "LC_ALL": "C",
        paths.TEST_ROOT_VARIABLE: str(root),
        "STUB_DIR": str(stubs),
        "STUB_LOG": str(stubs / "calls.log"),
        "STUB_TOKEN": TOKEN,
        "STUB_HASH": CA_HASH,
        "STUB_CERT_KEY": CERT_KEY,
    }
    return Node(root=root, stubs=stubs, env=env)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"secret leaked into: {text[:400]}"


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
    "wait-for-node": lambda: steps.render_wait_for_node("hk-prod-worker-1"),
    "drain": lambda: steps.render_drain("hk-prod-worker-1"),
    "drain-control-plane": lambda: steps.render_drain("hk-cp-3", etcd_pod="etcd-hk-cp-1"),
    "deregister": lambda: steps.render_deregister("hk-prod-worker-1"),
    "deregister-control-plane": lambda: steps.render_deregister("hk-cp-3", etcd_pod="etcd-hk-cp-1"),
    "provider-credential": lambda: lb.render_provider_credential("initial"),
    "provider-credential-revoke": lambda: lb.render_provider_credential_revoke("hybrid-cluster:pulumi:initial"),
}


@pytest.mark.parametrize("name", sorted(ALL_SCRIPTS))
def test_every_script_passes_shellcheck_and_fits_the_remote_command(name, tmp_path):
    script = ALL_SCRIPTS[name]()
    assert first_command(script) == "set -euo pipefail"
    path = tmp_path / f"{name}.sh"
    path.write_text("#!/usr/bin/env bash\n" + script)
    shellcheck(path)
    bash_command(script)  # raises on the heredoc delimiter or an oversized script


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


@pytest.fixture
def control_plane(node) -> Node:
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    (node.stubs / "nodes").mkdir()
    return node


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


def _longhorn_worker(control_plane: Node, replicas: str) -> None:
    """hk-lnx-4 in the cluster, Longhorn's node for it, and these replicas on it (one line each)."""
    (control_plane.stubs / "nodes" / "hk-lnx-4").touch()
    (control_plane.stubs / "longhorn-node-hk-lnx-4").touch()
    (control_plane.stubs / "longhorn-replicas").write_text(replicas)


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


ETCD_MEMBERS = (
    "8e9e05c52164694d, started, hk-cp-1, https://10.30.30.11:2380, https://10.30.30.11:2379, false\n"
    "91bc3c398fb3c146, started, hk-cp-2, https://10.30.30.12:2380, https://10.30.30.12:2379, false\n"
    "fd422379fda50e48, started, hk-cp-3, https://10.30.30.13:2380, https://10.30.30.13:2379,https://10.30.30.13:4001, false\n"
)


@pytest.fixture
def etcd(control_plane) -> Node:
    (control_plane.stubs / "etcd-members").write_text(ETCD_MEMBERS)
    (control_plane.stubs / "nodes" / "hk-cp-3").touch()
    return control_plane


def etcd_verbs(node: Node) -> list[str]:
    return [" ".join(call[11:13]) + (" " + call[7].split("=")[1] if call[11:13] == ["endpoint", "health"] else "")
            for call in node.calls("kubectl") if call[0] == "-n"]


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


# --- the rolling upgrade's steps on the first control-plane node ---------------------------------

# The containerd release the stubs' nodes report by default (kubelet: "containerd://2.3.5").
RUNTIME = "2.3.5"


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


@pytest.fixture
def static_pods(etcd) -> Node:
    manifests = etcd.path("/etc/kubernetes/manifests")
    manifests.mkdir(parents=True)
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"):
        (manifests / f"{component}.yaml").write_text(f"# {component}\n    - --secure-port=6443\n")
    etcd.path("/etc/kubernetes/pki").mkdir(parents=True)
    return etcd


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

ONE_MEMBER = "8e9e05c52164694d, started, hk-cp-1, https://10.30.30.11:2380, https://10.30.30.11:2379, false\n"
FOUR_MEMBERS = ETCD_MEMBERS + (
    "aa22ccee00112233, started, hk-cp-4, https://10.30.30.14:2380, https://10.30.30.14:2379, false\n")


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
