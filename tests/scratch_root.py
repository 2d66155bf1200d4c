"""The scratch root the Linux bootstrap and node-step scripts run against (tests/render/test_linux_bootstrap.py,
tests/render/test_node_steps.py): PATH holds nothing but stub kubeadm/kubectl/cloud-init/ip/iptables/sleep and recording
wrappers around the few real tools the scripts use (coreutils, grep, sed), so no real system command is reached and
the argv of every process a script starts, other than bash itself, is on record: secrets are checked against all
of them. The fixtures: `node` (a scratch root), `control_plane` (with admin.conf and Nodes), `etcd` (and members),
`static_pods` (and the static Pod manifests)."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from render import linux_bootstrap as lb
from render.shell import bash_command
from tests import validators as paths
from tests.validators import first_command, shellcheck

TOKEN = "q7k2xz.m4n8p1r6s9t3v5w0"


CA_HASH = "sha256:" + "3f" * 32


CERT_KEY = "c0ffee" * 10 + "beef"


KEY = "key-initial"


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


@pytest.fixture
def control_plane(node) -> Node:
    node.path(lb.ADMIN_CONF).parent.mkdir(parents=True)
    node.path(lb.ADMIN_CONF).write_text("apiVersion: v1\n")
    (node.stubs / "nodes").mkdir()
    return node


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


ONE_MEMBER = "8e9e05c52164694d, started, hk-cp-1, https://10.30.30.11:2380, https://10.30.30.11:2379, false\n"


def check_script(name: str, script: str, tmp_path: Path) -> None:
    """A rendered script starts in strict mode, passes shellcheck and fits the remote command wrapper (which raises on
    the heredoc delimiter or an oversized script)."""
    assert first_command(script) == "set -euo pipefail"
    path = tmp_path / f"{name}.sh"
    path.write_text("#!/usr/bin/env bash\n" + script)
    shellcheck(path)
    bash_command(script)
