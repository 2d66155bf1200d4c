"""Bash scripts for the Linux side of the kubeadm bootstrap, and the kube-vip static Pod.

This module owns the node-side steps of issue 3 for Linux machines, as pure functions that return
script bodies for ``render.shell.bash_command`` (they run as root under ``sudo -n bash``):

* ``render_init``: ``kubeadm init`` on the first control-plane node (guarded by admin.conf);
* ``render_kube_vip_manifest``: the kube-vip static Pod that holds the API virtual IP (ARP mode);
* ``render_join_credentials``: on the first control-plane node, print one fresh join line;
* ``render_join``: ``kubeadm join`` on a new node from the join line on stdin (guarded by kubelet.conf);
* ``render_reset``: node cleanup, the delete side of init and join;
* ``render_wait_for_node`` / ``render_drain``: create / delete of a node's drain resource;
* ``render_deregister``: delete of a node's registration, after its reset (etcd member left behind, Node);
* ``render_read_kubeconfig``: print admin.conf (a secret Output).

The kubeadm YAML itself comes from ``render.kubeadm`` as text with ``@@JOIN_*@@`` placeholders; the
scripts here only embed it. Secrets (bootstrap token, certificate key) never appear on a command line
of a process started on the joining node, in a script's stdout (except join-credentials' single
output line, which is a secret Output), or unredacted on stderr: kubeadm's own output goes to
root-only logs under /var/log.

Every path the scripts touch is prefixed with ``$HYBRID_CLUSTER_TEST_ROOT`` (unset, so empty, on a
node: sudo resets the environment) so that tests can run them against a scratch directory with stub
commands on PATH.
"""
from __future__ import annotations

import ipaddress
import math
import re

import yaml

from render.cloud_init import PREPARE_SCRIPT_PATH
from render.checks import DNS_SUBDOMAIN


TEST_ROOT_VARIABLE = "HYBRID_CLUSTER_TEST_ROOT"

ADMIN_CONF = "/etc/kubernetes/admin.conf"
# kubeadm >= 1.29 writes super-admin.conf (group system:masters) on the node that runs `kubeadm init`
# only; admin.conf gets its rights from a ClusterRoleBinding that init creates late, so kube-vip
# cannot use it while init is still waiting for the VIP. Sources: kube-vip/kube-vip issue #684
# ("kube-vip requires super-admin.conf with Kubernetes 1.29"), aws/eks-anywhere PR #7368 (the
# CHANGELOG-1.29 change, super-admin.conf only on the init node), nutanix
# cluster-api-provider-nutanix PR #382 and ionos-cloud cluster-api-provider-ionoscloud PR #103
# (switch back to admin.conf once init has finished).
SUPER_ADMIN_CONF = "/etc/kubernetes/super-admin.conf"
KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
KUBEADM_CONFIG_DIR = "/etc/kubernetes/kubeadm"
INIT_CONFIG_PATH = f"{KUBEADM_CONFIG_DIR}/init.yaml"
KUBE_VIP_MANIFEST_PATH = "/etc/kubernetes/manifests/kube-vip.yaml"
INIT_LOG = "/var/log/kubeadm-init.log"
JOIN_LOG = "/var/log/kubeadm-join.log"
JOIN_CREDENTIALS_LOG = "/var/log/kubeadm-join-credentials.log"
RESET_LOG = "/var/log/kubeadm-reset.log"

TOKEN_PLACEHOLDER = "@@JOIN_TOKEN@@"
CA_CERT_HASH_PLACEHOLDER = "@@JOIN_CA_CERT_HASH@@"
API_ENDPOINT_PLACEHOLDER = "@@JOIN_API_ENDPOINT@@"
CERTIFICATE_KEY_PLACEHOLDER = "@@JOIN_CERTIFICATE_KEY@@"

# Bounded waits. kubectl's global `--request-timeout` is "the length of time to wait before giving up
# on a single server request" and defaults to 0, no timeout (https://kubernetes.io/docs/reference/kubectl/kubectl/),
# so every kubectl call here sets it; a loop of N attempts with a pause between them is then bounded
# too, and tests can stub `sleep`.
POLL_SECONDS = 5
API_READY_TIMEOUT_SECONDS = 300
CLOUD_INIT_TIMEOUT_SECONDS = 1800

_INTERFACE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
_IMAGE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$")
# Go time.ParseDuration units kubeadm's --ttl accepts (kubeadm token create docs: "e.g. 1s, 2m, 3h").
_TTL = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")

_CONFIG_HEREDOC = "__HYBRID_CLUSTER_KUBEADM_CONFIG__"
_MANIFEST_HEREDOC = "__HYBRID_CLUSTER_KUBE_VIP_MANIFEST__"


# --- shared bash pieces ---------------------------------------------------------------------------

# Strict mode and `die`: every script starts with it.
_FAIL_LOUDLY = """set -euo pipefail
umask 077

die() {
  echo "error: $*" >&2
  exit 1
}
"""
_PRELUDE = _FAIL_LOUDLY + f"""
# Tests point every path at a scratch directory; on a node the variable is unset (sudo resets the
# environment), so the paths below are the real ones.
ROOT="${{{TEST_ROOT_VARIABLE}:-}}"
"""

# kubeadm prints bootstrap tokens ("[a-z0-9]{6}.[a-z0-9]{16}", kubeadm token create docs:
# https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_token_create/) and
# certificate keys ("a hex encoded string that is an AES key of size 32 bytes", i.e. 64 hex digits:
# https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_init_phase_upload-certs/).
# pulumi-command puts a failed command's output into its error message, so a log is only ever shown
# through this filter.
_LOG_HELPERS = r"""
# fresh_log PATH: an empty log only root can read; kubeadm's output goes there, never to stdout.
fresh_log() {
  mkdir -p "$(dirname "$1")"
  install -m 0600 /dev/null "$1"
}

# show_log_tail PATH: the end of a log on stderr, with anything shaped like a bootstrap token or a
# 32-byte hex key blanked out.
show_log_tail() {
  echo "--- last 40 lines of $1 (tokens and keys redacted) ---" >&2
  tail -n 40 "$1" \
    | sed -E -e 's/[a-z0-9]{6}\.[a-z0-9]{16}/<redacted-token>/g' -e 's/[0-9A-Fa-f]{64}/<redacted-key>/g' >&2 \
    || true
}
"""

# put_file PATH MODE < content: replaces PATH atomically (rename within /etc/kubernetes) and only when
# the content differs, so a re-run leaves a running static Pod alone.
_PUT_FILE = r"""
put_file() {
  local path=$1 mode=$2 staged dir
  dir="$(dirname "$path")"
  mkdir -p "$STAGING_DIR"
  staged="$(mktemp "$STAGING_DIR/.staged.XXXXXX")"
  cat >"$staged"
  chmod "$mode" "$staged"
  if [[ -f $path ]] && cmp -s "$staged" "$path"; then
    rm -f "$staged"
    return 0
  fi
  if [[ ! -d $dir ]]; then
    mkdir -p "$(dirname "$dir")"
    mkdir -m 0700 "$dir"
  fi
  mv -f "$staged" "$path"
}
"""


def _wait_for_cloud_init() -> str:
    # `cloud-init status --wait`: 0 done, 1 error, 2 done with recoverable errors (cloud-init >= 23.4):
    # https://docs.cloud-init.io/en/latest/reference/cli.html#status (same reading as
    # render.readiness). The preparation script runs from runcmd and exits non-zero on any failure.
    return f"""
wait_for_cloud_init() {{
  local rc=0
  timeout {CLOUD_INIT_TIMEOUT_SECONDS} cloud-init status --wait >/dev/null || rc=$?
  case "$rc" in
    0) ;;
    2) echo "warning: cloud-init finished with recoverable errors (see /var/log/cloud-init.log)" >&2 ;;
    124) die "cloud-init did not finish within {CLOUD_INIT_TIMEOUT_SECONDS}s" ;;
    *) die "cloud-init failed (status $rc): {PREPARE_SCRIPT_PATH} did not complete, see /var/log/cloud-init-output.log" ;;
  esac
  command -v kubeadm >/dev/null || die "kubeadm is not installed: {PREPARE_SCRIPT_PATH} did not run"
}}

# refuse_if_control_plane_state GUARD: the guard file (admin.conf, kubelet.conf) is missing, so this run
# would init or join; if control-plane state is present all the same, stop before kubeadm fails its
# preflight and the failure path's reset wipes the PKI and etcd data of a member that still runs.
refuse_if_control_plane_state() {{
  local state
  for state in "$ROOT/etc/kubernetes/pki/ca.crt" "$ROOT/etc/kubernetes/manifests/kube-apiserver.yaml" \\
      "$ROOT/var/lib/etcd/member"; do
    if [[ -e $state ]]; then
      die "$1 is missing but $state exists: this node holds control-plane state. Nothing was changed. \\
Restore $1 (e.g. kubeadm init phase kubeconfig) or, if the node is really to be rebuilt, run kubeadm reset by hand."
    fi
  done
}}
"""


def _attempts(timeout_seconds: int) -> int:
    return max(1, math.ceil(timeout_seconds / POLL_SECONDS))


def _heredoc(body: str, delimiter: str) -> str:
    if any(line == delimiter for line in body.splitlines()):
        raise ValueError(f"content contains the heredoc delimiter line {delimiter}")
    return f"<<'{delimiter}'\n{body.rstrip(chr(10))}\n{delimiter}"


def _check_yaml(text: str, what: str) -> None:
    if not text.strip():
        raise ValueError(f"{what} is empty")
    try:
        list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        raise ValueError(f"{what} is not valid YAML: {error}") from error


def _check_node_name(node_name: str) -> None:
    if len(node_name) > 253 or not DNS_SUBDOMAIN.match(node_name):
        raise ValueError(f"node name {node_name!r} is not a lowercase DNS subdomain")


def _check_timeout(timeout_seconds: int) -> None:
    if isinstance(timeout_seconds, bool) or not isinstance(timeout_seconds, int) or timeout_seconds <= 0:
        raise ValueError(f"timeout {timeout_seconds!r} must be a positive number of seconds")


# --- kube-vip -------------------------------------------------------------------------------------

def render_kube_vip_manifest(vip: str, port: int, image: str, interface: str | None,
                             first_control_plane: bool) -> str:
    """The kube-vip static Pod (YAML) that announces the API virtual IP by ARP from the elected leader.

    Control-plane VIP only, no Service load balancing. Environment variables are the ones kube-vip's
    own generator writes (pkg/kubevip/config_generator.go, pkg/kubevip/config_envvar.go in
    kube-vip/kube-vip; https://kube-vip.io/docs/installation/static/ "Example ARP Manifest";
    kube-vip/website content/docs/installation/flags.md): ``vip_arp``, ``port``, ``vip_interface``
    (left out when ``interface`` is None: kube-vip then uses the interface of the default route,
    kube-vip PR #289 and the "auto-detecting default Interface" log in PR #1373), ``cp_enable``,
    ``cp_namespace``, ``svc_enable``, ``vip_leaderelection`` with the lease timings of the documented
    example (5/3/1 s), and ``address``. Capabilities NET_ADMIN and NET_RAW, host network, and the
    ``kubernetes -> 127.0.0.1`` host alias through which kube-vip reaches the local API server, as
    the generator emits them.

    ``first_control_plane``: mount /etc/kubernetes/super-admin.conf at kube-vip's kubeconfig path
    (see SUPER_ADMIN_CONF); ``render_init`` switches it to admin.conf once init has finished. The
    hostPath has type File so that a missing kubeconfig stops the Pod instead of the runtime creating
    a directory at that path.
    """
    address = ipaddress.ip_address(vip)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port {port!r} is not a TCP port")
    if not _IMAGE.match(image):
        raise ValueError(f"image {image!r} is not a pinned image reference")
    if interface is not None and not _INTERFACE.match(interface):
        raise ValueError(f"interface {interface!r} is not a Linux interface name")

    env: list[dict[str, str]] = [
        {"name": "vip_arp", "value": "true"},
        {"name": "port", "value": str(port)},
    ]
    if interface is not None:
        env.append({"name": "vip_interface", "value": interface})
    env += [
        {"name": "cp_enable", "value": "true"},
        {"name": "cp_namespace", "value": "kube-system"},
        {"name": "svc_enable", "value": "false"},
        {"name": "vip_leaderelection", "value": "true"},
        {"name": "vip_leaseduration", "value": "5"},
        {"name": "vip_renewdeadline", "value": "3"},
        {"name": "vip_retryperiod", "value": "1"},
        {"name": "address", "value": str(address)},
    ]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kube-vip",
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/name": "kube-vip"},
        },
        "spec": {
            "hostNetwork": True,
            "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["kubernetes"]}],
            # Same priority as kubeadm's own control-plane static Pods.
            "priorityClassName": "system-node-critical",
            "containers": [{
                "name": "kube-vip",
                "image": image,
                # Pinned tag: pull once through the registry mirror, not on every restart.
                "imagePullPolicy": "IfNotPresent",
                "args": ["manager"],
                "env": env,
                "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_RAW"]}},
                "volumeMounts": [{"name": "kubeconfig", "mountPath": ADMIN_CONF, "readOnly": True}],
            }],
            "volumes": [{
                "name": "kubeconfig",
                "hostPath": {"path": SUPER_ADMIN_CONF if first_control_plane else ADMIN_CONF, "type": "File"},
            }],
        },
    }
    return yaml.safe_dump(pod, sort_keys=False, default_flow_style=False)


def _kube_vip_after_init(manifest: str) -> str | None:
    """The manifest with its kubeconfig switched to admin.conf, or None when it is not a bootstrap one."""
    pod = yaml.safe_load(manifest)
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        raise ValueError("the kube-vip manifest is not a Pod")
    switched = False
    for volume in pod.get("spec", {}).get("volumes", []) or []:
        host_path = volume.get("hostPath") or {}
        if host_path.get("path") == SUPER_ADMIN_CONF:
            host_path["path"] = ADMIN_CONF
            switched = True
    return yaml.safe_dump(pod, sort_keys=False, default_flow_style=False) if switched else None


# --- init -----------------------------------------------------------------------------------------

def render_init(init_config_yaml: str, kube_vip_manifest: str | None) -> str:
    """`kubeadm init` on the first control-plane node; a node with admin.conf is left alone.

    Steps: wait for cloud-init's node preparation; write the kubeadm config to
    /etc/kubernetes/kubeadm/init.yaml (0600) and, when given, the kube-vip manifest to
    /etc/kubernetes/manifests before init (kube-vip's documented order:
    https://kube-vip.io/docs/installation/static/; init's preflight only checks the control-plane
    manifests it writes itself, unlike join's, see render_join); run
    ``kubeadm init --config ... --upload-certs --skip-token-print --skip-certificate-key-print``
    (``--upload-certs`` and every ``--skip-*`` flag may be combined with ``--config``:
    isAllowedFlag in kubernetes cmd/kubeadm/app/apis/kubeadm/validation/validation.go; flags from
    https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-init/) with its output in a
    root-only log; switch kube-vip to admin.conf; wait (bounded) until the API answers /readyz through
    admin.conf, whose server is the control-plane endpoint
    (https://kubernetes.io/docs/reference/using-api/health-checks/).

    A failed init is followed by ``kubeadm reset -f``: init writes admin.conf early (kubeconfig phase),
    so without the reset the guard would report a half-initialised node as done on the next run.
    """
    _check_yaml(init_config_yaml, "the InitConfiguration")
    final_manifest: str | None = None
    if kube_vip_manifest is not None:
        _check_yaml(kube_vip_manifest, "the kube-vip manifest")
        final_manifest = _kube_vip_after_init(kube_vip_manifest)
        if final_manifest is None:
            # Every supported minor (config.compat.KUBERNETES, 1.35 and later) is >= 1.29.
            raise ValueError("the init node's kube-vip must mount super-admin.conf while kubeadm init "
                             "runs: render it with first_control_plane=True")

    lines = [
        _PRELUDE,
        f'ADMIN_CONF="$ROOT{ADMIN_CONF}"',
        f'INIT_CONFIG="$ROOT{INIT_CONFIG_PATH}"',
        f'STAGING_DIR="$ROOT{KUBEADM_CONFIG_DIR}"',
        f'KUBE_VIP_MANIFEST="$ROOT{KUBE_VIP_MANIFEST_PATH}"' if kube_vip_manifest is not None else "",
        f'LOG="$ROOT{INIT_LOG}"',
        _LOG_HELPERS,
        _PUT_FILE,
        _wait_for_cloud_init(),
    ]
    if final_manifest is not None:
        lines.append(f"""
# kube-vip needed super-admin.conf while init ran; admin.conf has the rights it needs from now on.
finish_kube_vip() {{
  put_file "$KUBE_VIP_MANIFEST" 0600 {_heredoc(final_manifest, _MANIFEST_HEREDOC)}
}}
""")
    finish_call = "  finish_kube_vip\n" if final_manifest is not None else ""
    attempts = _attempts(API_READY_TIMEOUT_SECONDS)
    lines.append(f"""
wait_for_api() {{
  local attempt
  for ((attempt = 1; attempt <= {attempts}; attempt++)); do
    if kubectl --kubeconfig "$ADMIN_CONF" --request-timeout=5s get --raw=/readyz >/dev/null 2>&1; then
      return 0
    fi
    sleep {POLL_SECONDS}
  done
  die "the API server did not answer /readyz through the control-plane endpoint within {API_READY_TIMEOUT_SECONDS}s"
}}

if [[ -f $ADMIN_CONF ]]; then
  echo "kubeadm init: already initialised ($ADMIN_CONF exists), nothing to do"
{finish_call}  exit 0
fi

# Without admin.conf but with a control plane's state, this is a broken or hand-edited node, not a new
# one: init would fail its preflight and the reset below would then wipe the PKI and etcd data.
refuse_if_control_plane_state "$ADMIN_CONF"
wait_for_cloud_init
put_file "$INIT_CONFIG" 0600 {_heredoc(init_config_yaml, _CONFIG_HEREDOC)}
""")
    if kube_vip_manifest is not None:
        lines.append(f'put_file "$KUBE_VIP_MANIFEST" 0600 {_heredoc(kube_vip_manifest, _MANIFEST_HEREDOC)}\n')
    lines.append(f"""
fresh_log "$LOG"
echo "kubeadm init: running (output in $LOG, readable by root only)"
if ! kubeadm init --config "$INIT_CONFIG" --upload-certs --skip-token-print --skip-certificate-key-print \\
    >>"$LOG" 2>&1; then
  echo "error: kubeadm init failed" >&2
  show_log_tail "$LOG"
  echo "resetting the node so that the next run starts from a clean state" >&2
  kubeadm reset -f >>"$LOG" 2>&1 || echo "warning: kubeadm reset failed as well" >&2
  exit 1
fi
{finish_call.strip()}
wait_for_api
echo "kubeadm init: done, the API server answers through the control-plane endpoint"
""")
    return "\n".join(part for part in lines if part) + "\n"


# --- join credentials -----------------------------------------------------------------------------

def _check_ttl(ttl: str) -> None:
    match = _TTL.match(ttl)
    if not ttl or not match:
        raise ValueError(f"ttl {ttl!r} must be a duration such as 30m or 1h")
    hours, minutes, seconds = (int(group or 0) for group in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    # 0 means "never expires" to kubeadm; the point of a per-join token is that it expires.
    if not 0 < total <= 24 * 3600:
        raise ValueError(f"ttl {ttl!r} must be between 1s and 24h")


def render_join_credentials(control_plane: bool, ttl: str = "30m", kubeadm_api: str = "kubeadm.k8s.io/v1beta4") -> str:
    """On the first control-plane node: print exactly one line, a fresh `kubeadm join` command.

    Worker: ``kubeadm token create --ttl TTL --print-join-command``. Control plane: a new key from
    ``kubeadm certs certificate-key``, the control-plane certificates re-uploaded under it with
    ``kubeadm init phase upload-certs --upload-certs --certificate-key KEY --skip-certificate-key-print``,
    then ``kubeadm token create ... --print-join-command --certificate-key KEY``. Flags from
    https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_token_create/,
    .../kubeadm_init_phase_upload-certs/ and .../kubeadm_certs_certificate-key/. token create prints
    the command on one line (kubernetes cmd/kubeadm/app/cmd/token.go strips the template's "\\\n"
    continuations and tabs before Fprintln).

    Every step that can fail runs before the single ``printf``; kubeadm's other output goes to a
    root-only log. The certificate key never reaches a command line (where /proc/<pid>/cmdline and audit
    logs would show it): upload-certs reads it from an InitConfiguration file (``certificateKey``,
    kubeadm v1beta3/v1beta4; ``--config`` may be combined with ``--upload-certs``, ``--kubeconfig`` and
    ``--skip-*``: isAllowedFlag in cmd/kubeadm/app/apis/kubeadm/validation/validation.go), and the
    control-plane flags are appended to the worker join line by bash itself.
    """
    _check_ttl(ttl)
    if not re.fullmatch(r"kubeadm\.k8s\.io/v1beta[34]", kubeadm_api):
        raise ValueError(f"unknown kubeadm config API {kubeadm_api!r}")
    lines = [
        _PRELUDE,
        f'ADMIN_CONF="$ROOT{ADMIN_CONF}"',
        f'LOG="$ROOT{JOIN_CREDENTIALS_LOG}"',
        _LOG_HELPERS,
        """
# fail STEP: stop with the redacted end of the log; nothing has been printed on stdout yet.
fail() {
  echo "error: $1 failed" >&2
  show_log_tail "$LOG"
  exit 1
}

[[ -f $ADMIN_CONF ]] || die "$ADMIN_CONF is missing: kubeadm init has not completed on this node"
fresh_log "$LOG"
""",
    ]
    description = "hybrid-cluster control-plane join" if control_plane else "hybrid-cluster worker join"
    if control_plane:
        lines.append(f"""
certificate_key="$(kubeadm certs certificate-key 2>>"$LOG")" || fail "kubeadm certs certificate-key"
[[ $certificate_key =~ ^[0-9a-f]{{64}}$ ]] || die "kubeadm certs certificate-key did not print a 64-digit hex key"
mkdir -p "$ROOT/run"
upload_dir="$(mktemp -d "$ROOT/run/hybrid-cluster-upload-certs.XXXXXX")"
trap 'rm -rf "$upload_dir"' EXIT
upload_config="$upload_dir/upload-certs.yaml"
# printf is a bash builtin: the key goes to the 0600 file (umask 077) and to no process's arguments.
printf 'apiVersion: {kubeadm_api}\nkind: InitConfiguration\ncertificateKey: "%s"\n' "$certificate_key" >"$upload_config"
kubeadm init phase upload-certs --kubeconfig "$ADMIN_CONF" --upload-certs --config "$upload_config" \\
  --skip-certificate-key-print >>"$LOG" 2>&1 \\
  || fail "kubeadm init phase upload-certs"
join_line="$(kubeadm token create --kubeconfig "$ADMIN_CONF" --ttl {ttl} --description "{description}" \\
  --print-join-command 2>>"$LOG")" || fail "kubeadm token create"
[[ $join_line != *"--control-plane"* ]] || die "kubeadm token create printed a control-plane join command"
while [[ $join_line == *[[:space:]] ]]; do
  join_line=${{join_line%?}}
done
join_line="$join_line --control-plane --certificate-key $certificate_key"
""")
    else:
        lines.append(f"""
join_line="$(kubeadm token create --kubeconfig "$ADMIN_CONF" --ttl {ttl} --description "{description}" \\
  --print-join-command 2>>"$LOG")" || fail "kubeadm token create"
""")
    shape = ('[[ $join_line == *" --control-plane "* && $join_line == *" --certificate-key "* ]] \\\n'
             '  || die "kubeadm token create printed a join command without --control-plane --certificate-key"\n'
             if control_plane else
             '[[ $join_line != *"--control-plane"* ]] || die "kubeadm token create printed a control-plane join command"\n')
    lines.append(f"""
# kubeadm's template leaves a trailing space; the join script splits on blanks anyway.
while [[ $join_line == *[[:space:]] ]]; do
  join_line=${{join_line%?}}
done
[[ $join_line != *$'\\n'* ]] || die "kubeadm token create printed more than one line"
[[ $join_line == "kubeadm join "* && $join_line == *" --token "* \\
  && $join_line == *" --discovery-token-ca-cert-hash sha256:"* ]] \\
  || die "kubeadm token create printed something that is not a join command"
{shape}
printf '%s\\n' "$join_line"
""")
    return "\n".join(lines)


# --- join -----------------------------------------------------------------------------------------

_PARSE_JOIN_LINE = r"""
# read_join_line: one line from stdin, `kubeadm join HOST:PORT --token T
# --discovery-token-ca-cert-hash sha256:H [...] [--control-plane --certificate-key K]`, the form
# `kubeadm token create --print-join-command` prints. `read -a` splits it without a here-string, a
# temporary file or a child process. Messages never repeat what was read.
read_join_line() {
  local -a words=()
  local word value count i=2
  local endpoint_re='^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})$'
  local token_re='^[a-z0-9]{6}\.[a-z0-9]{16}$'
  local hash_re='^sha256:[0-9a-f]{64}$'
  local key_re='^[0-9a-f]{64}$'
  # read fails at end of input without a newline, yet has filled the array.
  IFS=$' \t' read -r -a words || true
  count=${#words[@]}
  ((count > 0)) || die "no join line on standard input (expected the output of kubeadm token create --print-join-command)"
  words[count - 1]=${words[count - 1]%$'\r'}
  if ((count < 2)) || [[ ${words[0]} != kubeadm || ${words[1]} != join ]]; then
    die "the join line does not start with 'kubeadm join'"
  fi
  JOIN_ENDPOINT="" JOIN_TOKEN="" JOIN_KEY="" JOIN_CONTROL_PLANE=0
  JOIN_CA_HASHES=()
  while ((i < count)); do
    word=${words[i]}
    case "$word" in
      --control-plane)
        JOIN_CONTROL_PLANE=1
        i=$((i + 1))
        continue
        ;;
      --token | --discovery-token-ca-cert-hash | --certificate-key)
        ((i + 1 < count)) || die "the join line ends after $word without its value"
        value=${words[i + 1]}
        i=$((i + 2))
        ;;
      --token=* | --discovery-token-ca-cert-hash=* | --certificate-key=*)
        value=${word#*=}
        word=${word%%=*}
        i=$((i + 1))
        ;;
      -*)
        die "the join line has an unexpected option (word $((i + 1)))"
        ;;
      *)
        [[ -z $JOIN_ENDPOINT ]] || die "the join line has more than one API server endpoint (word $((i + 1)))"
        if ! [[ $word =~ $endpoint_re ]] || ((10#${BASH_REMATCH[3]} < 1 || 10#${BASH_REMATCH[3]} > 65535)); then
          die "the API server endpoint in the join line is not HOST:PORT (word $((i + 1)))"
        fi
        JOIN_ENDPOINT=$word
        i=$((i + 1))
        continue
        ;;
    esac
    case "$word" in
      --token)
        [[ -z $JOIN_TOKEN ]] || die "the join line has more than one --token"
        [[ $value =~ $token_re ]] || die "the --token value is not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})"
        JOIN_TOKEN=$value
        ;;
      --discovery-token-ca-cert-hash)
        [[ $value =~ $hash_re ]] || die "a --discovery-token-ca-cert-hash value is not sha256:<64 hex digits>"
        JOIN_CA_HASHES+=("$value")
        ;;
      --certificate-key)
        [[ -z $JOIN_KEY ]] || die "the join line has more than one --certificate-key"
        [[ $value =~ $key_re ]] || die "the --certificate-key value is not 64 hex digits"
        JOIN_KEY=$value
        ;;
    esac
  done
  [[ -n $JOIN_ENDPOINT ]] || die "the join line has no API server endpoint"
  [[ -n $JOIN_TOKEN ]] || die "the join line has no --token"
  ((${#JOIN_CA_HASHES[@]} > 0)) || die "the join line has no --discovery-token-ca-cert-hash"
}
"""


def render_join(join_config_yaml: str, control_plane: bool, kube_vip_manifest: str | None = None) -> str:
    """`kubeadm join` on a new node from the join line on stdin; a node with kubelet.conf is left alone.

    Steps: wait for cloud-init's preparation; read and validate the join line (see read_join_line);
    substitute token, endpoint, CA hash(es) and, for control-plane joins, the certificate key into the
    JoinConfiguration with bash parameter expansion (no secret on any command line); write it 0600
    into a fresh 0700 directory under /run (tmpfs) that an EXIT trap removes; run
    ``kubeadm join --config FILE`` with its output in a root-only log (``kubeadm join --config``:
    https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-join/). When the line has
    several CA hashes, the template line holding the hash placeholder is repeated once per hash, so
    that placeholder must be a block-sequence item (``- "@@JOIN_CA_CERT_HASH@@"``).

    ``kube_vip_manifest`` (control-plane joins): written after the join, because join's preflight
    requires an empty /etc/kubernetes/manifests (DirAvailableCheck in RunJoinNodeChecks,
    kubernetes cmd/kubeadm/app/preflight/checks.go); it must mount admin.conf, which the join has
    written by then. A failed join is followed by ``kubeadm reset -f`` so that the next run retries
    from a clean node (a half-joined node may already have kubelet.conf).
    """
    _check_yaml(join_config_yaml, "the JoinConfiguration")
    for placeholder in (TOKEN_PLACEHOLDER, CA_CERT_HASH_PLACEHOLDER, API_ENDPOINT_PLACEHOLDER):
        if placeholder not in join_config_yaml:
            raise ValueError(f"the JoinConfiguration has no {placeholder} placeholder")
    if control_plane != (CERTIFICATE_KEY_PLACEHOLDER in join_config_yaml):
        raise ValueError(f"a {'control-plane' if control_plane else 'worker'} JoinConfiguration must "
                         f"{'' if control_plane else 'not '}contain {CERTIFICATE_KEY_PLACEHOLDER}")
    if kube_vip_manifest is not None:
        if not control_plane:
            raise ValueError("only control-plane nodes run kube-vip")
        _check_yaml(kube_vip_manifest, "the kube-vip manifest")
        if SUPER_ADMIN_CONF in kube_vip_manifest:
            raise ValueError("super-admin.conf exists on the init node only: render the joining node's "
                             "kube-vip manifest with first_control_plane=False")

    kube_vip_function = ""
    kube_vip_call = ""
    if kube_vip_manifest is not None:
        kube_vip_function = f"""
ensure_kube_vip() {{
  put_file "$KUBE_VIP_MANIFEST" 0600 {_heredoc(kube_vip_manifest, _MANIFEST_HEREDOC)}
}}
"""
        kube_vip_call = "ensure_kube_vip\n"
    role_check = (
        'if ((JOIN_CONTROL_PLANE == 0)) || [[ -z $JOIN_KEY ]]; then\n'
        '  die "this is a control-plane join but the join line lacks --control-plane --certificate-key"\n'
        'fi\n'
        if control_plane else
        'if ((JOIN_CONTROL_PLANE == 1)) || [[ -n $JOIN_KEY ]]; then\n'
        '  die "this is a worker join but the join line is for a control-plane node"\n'
        'fi\n'
    )
    return "\n".join([
        _PRELUDE,
        f'KUBELET_CONF="$ROOT{KUBELET_CONF}"',
        f'LOG="$ROOT{JOIN_LOG}"',
        f'STAGING_DIR="$ROOT{KUBEADM_CONFIG_DIR}"',
        f'KUBE_VIP_MANIFEST="$ROOT{KUBE_VIP_MANIFEST_PATH}"' if kube_vip_manifest is not None else "",
        _LOG_HELPERS,
        _PUT_FILE,
        _wait_for_cloud_init(),
        _PARSE_JOIN_LINE,
        f"""
# write_join_config PATH: the JoinConfiguration with the join line's values in place.
write_join_config() {{
  local line hash rendered=""
  local item_re='^[[:space:]]*-[[:space:]]'
  while IFS= read -r line || [[ -n $line ]]; do
    line=${{line//"{TOKEN_PLACEHOLDER}"/"$JOIN_TOKEN"}}
    line=${{line//"{API_ENDPOINT_PLACEHOLDER}"/"$JOIN_ENDPOINT"}}
    line=${{line//"{CERTIFICATE_KEY_PLACEHOLDER}"/"$JOIN_KEY"}}
    if [[ $line == *"{CA_CERT_HASH_PLACEHOLDER}"* ]]; then
      ((${{#JOIN_CA_HASHES[@]}} == 1)) || [[ $line =~ $item_re ]] \\
        || die "the JoinConfiguration cannot take several CA hashes: its hash placeholder is not a list item"
      for hash in "${{JOIN_CA_HASHES[@]}}"; do
        rendered+="${{line//"{CA_CERT_HASH_PLACEHOLDER}"/"$hash"}}"$'\\n'
      done
    else
      rendered+="$line"$'\\n'
    fi
  done {_heredoc(join_config_yaml, _CONFIG_HEREDOC)}
  [[ $rendered != *"@@JOIN_"* ]] || die "the JoinConfiguration still has a placeholder the join line did not fill"
  printf '%s' "$rendered" >"$1"
}}
{kube_vip_function}
if [[ -f $KUBELET_CONF ]]; then
  echo "kubeadm join: already joined ($KUBELET_CONF exists), nothing to do"
  {kube_vip_call.strip() or ':'}
  exit 0
fi

refuse_if_control_plane_state "$KUBELET_CONF"
wait_for_cloud_init
read_join_line
{role_check}
mkdir -p "$ROOT/run"
JOIN_DIR="$(mktemp -d "$ROOT/run/kubeadm-join.XXXXXX")"
trap 'rm -rf -- "$JOIN_DIR"' EXIT
# A signal ends the script through `exit`, so the EXIT trap removes the config then too.
trap 'exit 1' HUP INT TERM
write_join_config "$JOIN_DIR/join.yaml"
chmod 0600 "$JOIN_DIR/join.yaml"

fresh_log "$LOG"
echo "kubeadm join: running (output in $LOG, readable by root only)"
if ! kubeadm join --config "$JOIN_DIR/join.yaml" >>"$LOG" 2>&1; then
  echo "error: kubeadm join failed" >&2
  show_log_tail "$LOG"
  echo "resetting the node so that the next run starts from a clean state" >&2
  kubeadm reset -f >>"$LOG" 2>&1 || echo "warning: kubeadm reset failed as well" >&2
  exit 1
fi
{kube_vip_call}echo "kubeadm join: done"
""",
    ])


# --- reset ----------------------------------------------------------------------------------------

def render_reset() -> str:
    """Node cleanup: the delete script of init and of every join. A clean node runs it as a no-op.

    ``kubeadm reset -f`` (https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/)
    runs only when kubeadm state exists. reset's page lists what it leaves behind: /etc/cni/net.d
    ("Cleanup of CNI configuration"), the iptables/nftables/IPVS rules of kube-proxy ("Cleanup of
    network traffic rules") and $HOME/.kube ("Cleanup of $HOME/.kube"); kube-proxy's nftables mode
    keeps everything in table ``kube-proxy`` of families ip and ip6 (kubeProxyTable in kubernetes
    pkg/proxy/nftables/proxier.go). Calico's node state and links are removed as kubespray's reset
    does (kubernetes-sigs/kubespray roles/reset/tasks/main.yml: /var/lib/calico, /run/calico,
    /var/lib/cni, ``ipvsadm -C``, the kube-ipvs0 link; PR #9103: the vxlan.calico link). Calico's
    iptables chains are named ``cali-`` and its rules carry ``cali:`` comments. tunl0 is the ipip
    module's fallback device and may refuse deletion (projectcalico/calico issue #1375); it is then
    only set down. The init/join logs (they may hold tokens) and the kube-vip manifest go too.
    """
    return "\n".join([
        _PRELUDE,
        f'LOG="$ROOT{RESET_LOG}"',
        _LOG_HELPERS,
        r"""
has_kubeadm_state() {
  local path
  local -a manifests=()
  for path in "$ROOT/etc/kubernetes/kubelet.conf" "$ROOT/etc/kubernetes/bootstrap-kubelet.conf" \
    "$ROOT/etc/kubernetes/admin.conf" "$ROOT/etc/kubernetes/pki" "$ROOT/var/lib/kubelet/config.yaml" \
    "$ROOT/var/lib/etcd/member"; do
    if [[ -e $path ]]; then
      return 0
    fi
  done
  shopt -s nullglob
  manifests=("$ROOT/etc/kubernetes/manifests"/*)
  shopt -u nullglob
  ((${#manifests[@]} > 0))
}

# remove_contents DIR: empty DIR but keep it (the kubelet package owns /etc/cni/net.d's parent).
remove_contents() {
  local -a entries=()
  [[ -d $1 ]] || return 0
  shopt -s nullglob dotglob
  entries=("$1"/*)
  shopt -u nullglob dotglob
  if ((${#entries[@]} > 0)); then
    rm -rf -- "${entries[@]}"
  fi
}

remove_links() {
  local links name
  command -v ip >/dev/null || return 0
  links="$(ip -o link show)"
  while read -r _ name _; do
    name=${name%:}
    name=${name%%@*}
    case "$name" in
      vxlan.calico | vxlan-v6.calico | kube-ipvs0 | cali*)
        if ! ip link delete "$name" 2>/dev/null && ip link show "$name" >/dev/null 2>&1; then
          die "could not delete link $name"
        fi
        echo "deleted link $name"
        ;;
      tunl0)
        if ip link delete tunl0 2>/dev/null; then
          echo "deleted link tunl0"
        else
          ip link set tunl0 down
          echo "tunl0 belongs to the ipip module and cannot be deleted; set it down"
        fi
        ;;
    esac
  done <<<"$links"
}

# clean_iptables SAVE RESTORE: rewrite the tables without kube-proxy's and Calico's chains and rules.
clean_iptables() {
  local save=$1 restore=$2 rules
  local pattern='KUBE-|cali-|cali:'
  command -v "$save" >/dev/null && command -v "$restore" >/dev/null || return 0
  rules="$("$save")"
  grep -q -E -e "$pattern" <<<"$rules" || return 0
  grep -v -E -e "$pattern" <<<"$rules" | "$restore"
  echo "removed kube-proxy and Calico rules ($save)"
}

clean_nftables() {
  local family
  command -v nft >/dev/null || return 0
  for family in ip ip6; do
    if nft list table "$family" kube-proxy >/dev/null 2>&1; then
      nft delete table "$family" kube-proxy
      echo "deleted nftables table $family kube-proxy"
    fi
  done
}

if has_kubeadm_state; then
  command -v kubeadm >/dev/null || die "this node has kubeadm state but kubeadm is not installed"
  fresh_log "$LOG"
  echo "kubeadm reset: running (output in $LOG)"
  if ! kubeadm reset -f >>"$LOG" 2>&1; then
    show_log_tail "$LOG"
    die "kubeadm reset -f failed"
  fi
else
  echo "kubeadm reset: no kubeadm state on this node, skipped"
fi

rm -f -- "$ROOT/etc/kubernetes/manifests/kube-vip.yaml"
rm -rf -- "$ROOT/etc/kubernetes/kubeadm"
rm -f -- "$ROOT/var/log/kubeadm-init.log" "$ROOT/var/log/kubeadm-join.log" \
  "$ROOT/var/log/kubeadm-join-credentials.log"
remove_contents "$ROOT/etc/cni/net.d"
rm -rf -- "$ROOT/var/lib/calico" "$ROOT/var/run/calico" "$ROOT/run/calico" "$ROOT/var/lib/cni"
rm -rf -- "$ROOT/root/.kube"
remove_links
for tables in iptables ip6tables iptables-legacy ip6tables-legacy; do
  clean_iptables "$tables-save" "$tables-restore"
done
clean_nftables
# ipvsadm fails when the ip_vs module is not loaded, which is the normal case here.
if [[ -e $ROOT/proc/net/ip_vs ]] && command -v ipvsadm >/dev/null; then
  ipvsadm --clear
fi
echo "node cleanup: done"
""",
    ])


# --- control-plane side: node registration, drain, kubeconfig -------------------------------------

def render_wait_for_node(node_name: str, timeout_seconds: int = 900, ready_timeout_seconds: int = 1800) -> str:
    """On the first control-plane node: wait (bounded) until the Node object ``node_name`` exists, then
    until it is Ready, so that what depends on a node (its labels, the workloads that need its OS) starts
    only on a working node.

    ``kubectl get node NAME --ignore-not-found -o name`` prints nothing and exits 0 while the node is
    absent (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_get/), so API errors and
    "not yet" are told apart. ``kubectl wait --for=condition=Ready node/NAME --timeout=..`` blocks until the
    condition holds or fails after the timeout
    (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_wait/). Ready needs the node's CNI,
    which Calico installs: on a Windows node after its first image pulls, hence the longer budget.
    """
    _check_node_name(node_name)
    _check_timeout(timeout_seconds)
    _check_timeout(ready_timeout_seconds)
    return "\n".join([
        _PRELUDE,
        f'export KUBECONFIG="$ROOT{ADMIN_CONF}"',
        f'NODE="{node_name}"',
        f"""
[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
last=""
registered=""
for ((attempt = 1; attempt <= {_attempts(timeout_seconds)}; attempt++)); do
  if output="$(kubectl get node "$NODE" --ignore-not-found -o name --request-timeout=10s 2>&1)"; then
    if [[ $output == *"node/$NODE"* ]]; then
      registered=yes
      break
    fi
    last="not registered yet"
  else
    last=$output
  fi
  sleep {POLL_SECONDS}
done
if [[ -z $registered ]]; then
  echo "last answer: $last" >&2
  die "node $NODE did not register within {timeout_seconds}s"
fi
echo "node $NODE is registered"
kubectl wait --for=condition=Ready "node/$NODE" --timeout={ready_timeout_seconds}s >/dev/null \
  || die "node $NODE registered but did not become Ready within {ready_timeout_seconds}s (is its CNI running?)"
echo "node $NODE is Ready"
""",
    ])


def render_drain(node_name: str, timeout_seconds: int = 600, etcd_pod: str | None = None) -> str:
    """On the first control-plane node: cordon and drain the Node ``node_name``, if it exists. The delete
    side of a node's readiness wait, so it runs first when a node is removed: drain, then ``kubeadm reset``
    on the node, then ``render_deregister`` deletes the Node object. Upstream's "Remove the node" order
    (https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/create-cluster-kubeadm/#remove-the-node:
    drain, ``kubeadm reset``, then ``kubectl delete node``): reset needs the Node and the kubeadm-config to
    remove the node's stacked etcd member (its remove-etcd-member phase,
    https://kubernetes.io/docs/reference/setup-tools/kubeadm/generated/kubeadm_reset/kubeadm_reset_phase_remove-etcd-member/).

    ``kubectl cordon NAME`` (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_cordon/),
    ``kubectl drain NAME --ignore-daemonsets --delete-emptydir-data --timeout=Ns``
    (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_drain/: --timeout is "the length
    of time to wait before giving up, zero means infinite"). A node already gone, or a control plane
    already gone (no admin.conf here), is a no-op.

    With ``etcd_pod`` (a control-plane node's drain), the etcd quorum is checked first: the removal is
    refused, before anything is cordoned, unless the members other than this node that stay healthy
    form a quorum of the cluster that remains (``_ETCD_HELPERS``).

    A drain that times out or is refused fails the delete and leaves the node cordoned. There is
    deliberately no fallback to ``--disable-eviction``: it "will bypass checking
    PodDisruptionBudgets" (kubectl drain docs), which are exactly what protects replicated storage
    (Longhorn) and quorum workloads from losing a member while another node is also down; the
    operator fixes the blocker and runs the destroy again.
    """
    _check_node_name(node_name)
    _check_timeout(timeout_seconds)
    if etcd_pod is not None:
        _check_node_name(etcd_pod)
    return "\n".join([
        _PRELUDE,
        f'export KUBECONFIG="$ROOT{ADMIN_CONF}"',
        f'NODE="{node_name}"',
        _control_plane_gone_or_node_absent("drain"),
        *_quorum_check(etcd_pod),
        _cordon_and_drain(timeout_seconds, "",
                          "it stays cordoned. Eviction is not bypassed: resolve the blocking pod or "
                          "PodDisruptionBudget and run the delete again"),
        'echo "node $NODE drained"',
    ])


def _quorum_check(etcd_pod: str | None) -> list[str]:
    """Bash: stop unless the etcd members other than $NODE keep quorum (nothing without ``etcd_pod``)."""
    return [f'ETCD_POD="{etcd_pod}"', _ETCD_HELPERS, 'check_quorum_without "$NODE"'] if etcd_pod else []


def _cordon_and_drain(timeout_seconds: int, purpose: str, afterwards: str) -> str:
    """Bash: cordon and drain $NODE the one way this program drains (PodDisruptionBudgets respected, no
    eviction bypass), failing with what happens next."""
    return f"""
kubectl cordon "$NODE" --request-timeout=60s
if ! kubectl drain "$NODE" --ignore-daemonsets --delete-emptydir-data --timeout={timeout_seconds}s; then
  die "draining $NODE{purpose} did not finish within {timeout_seconds}s or was refused (see above); {afterwards}"
fi"""


# The annotation the upgrade chain leaves on a Node it cordoned, naming the version it upgrades to: the
# uncordon step lifts only a cordon the chain set, never one an operator set for reasons of their own.
UPGRADE_ANNOTATION = "hybrid-cluster.io/upgrading-to"
# kubectl JSONPath escapes the dots of a key with a backslash (kubectl jsonpath reference).
_UPGRADE_MARK_JSONPATH = "{.metadata.annotations." + UPGRADE_ANNOTATION.replace(".", "\\.") + "}"
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def _check_version(version: str) -> None:
    if not _VERSION.match(version):
        raise ValueError(f"version {version!r} must be MAJOR.MINOR.PATCH")


def _kubectl_on_first_control_plane(node_name: str, timeout_seconds: int, etcd_pod: str | None = None) -> list[str]:
    """The checked arguments and the head of a script that acts on the Node $NODE with admin.conf."""
    _check_node_name(node_name)
    _check_timeout(timeout_seconds)
    if etcd_pod is not None:
        _check_node_name(etcd_pod)
    return [_PRELUDE, f'export KUBECONFIG="$ROOT{ADMIN_CONF}"', f'NODE="{node_name}"']


def render_upgrade_drain(node_name: str, version: str, timeout_seconds: int = 600,
                         etcd_pod: str | None = None) -> str:
    """On the first control-plane node, before a node's upgrade: unless the Node's kubelet already runs
    ``version`` (and no earlier run of the chain left it cordoned), mark it with UPGRADE_ANNOTATION,
    cordon and drain it. For a control-plane node the etcd quorum without it is checked first: its
    etcd member restarts when kubeadm upgrades the static Pods. The drain is render_drain's (same
    flags, PodDisruptionBudgets respected, no eviction bypass)."""
    _check_version(version)
    return "\n".join([
        *_kubectl_on_first_control_plane(node_name, timeout_seconds, etcd_pod),
        f'TARGET="v{version}"',
        _control_plane_gone_or_node_absent("upgrade", control_plane_may_be_gone=False),
        f"""
running="$(kubectl get node "$NODE" -o jsonpath='{{.status.nodeInfo.kubeletVersion}}' --request-timeout=30s)"
marked="$(kubectl get node "$NODE" -o jsonpath='{_UPGRADE_MARK_JSONPATH}' --request-timeout=30s)"
if [[ $running == "$TARGET" && -z $marked ]]; then
  echo "node $NODE already runs kubelet $TARGET, nothing to drain"
  exit 0
fi""",
        *_quorum_check(etcd_pod),
        f'kubectl annotate node "$NODE" --overwrite "{UPGRADE_ANNOTATION}=$TARGET" --request-timeout=60s >/dev/null',
        _cordon_and_drain(timeout_seconds, " for its upgrade to $TARGET",
                          "it stays cordoned and nothing was upgraded. Resolve the blocking pod or "
                          "PodDisruptionBudget and run the update again"),
        'echo "node $NODE is drained for its upgrade to $TARGET"',
    ])


def render_upgrade_uncordon(node_name: str, version: str, timeout_seconds: int = 900) -> str:
    """On the first control-plane node, after a node's upgrade: wait until the Node is Ready with kubelet
    ``version``, then lift the cordon the chain set (UPGRADE_ANNOTATION), and only that one. A node that
    does not come back stops the chain here: no further node is drained."""
    _check_version(version)
    return "\n".join([
        *_kubectl_on_first_control_plane(node_name, timeout_seconds),
        f'TARGET="v{version}"',
        _control_plane_gone_or_node_absent("uncordon", control_plane_may_be_gone=False),
        f"""
for ((attempt = 1; attempt <= {_attempts(timeout_seconds)}; attempt++)); do
  running="$(kubectl get node "$NODE" -o jsonpath='{{.status.nodeInfo.kubeletVersion}}' --request-timeout=10s || true)"
  [[ $running == "$TARGET" ]] && break
  sleep {POLL_SECONDS}
done
[[ $running == "$TARGET" ]] || die "node $NODE runs kubelet ${{running:-unknown}}, not $TARGET, {timeout_seconds}s after its upgrade; it stays cordoned"
kubectl wait --for=condition=Ready "node/$NODE" --timeout={timeout_seconds}s >/dev/null \\
  || die "node $NODE runs $TARGET but is not Ready; it stays cordoned"
marked="$(kubectl get node "$NODE" -o jsonpath='{_UPGRADE_MARK_JSONPATH}' --request-timeout=30s)"
if [[ -n $marked ]]; then
  kubectl uncordon "$NODE" --request-timeout=60s
  kubectl annotate node "$NODE" "{UPGRADE_ANNOTATION}-" --request-timeout=60s >/dev/null
  echo "node $NODE runs kubelet $TARGET and is schedulable again"
else
  echo "node $NODE runs kubelet $TARGET; the chain did not cordon it, so its scheduling is left as it is"
fi
""",
    ])


def _control_plane_gone_or_node_absent(what: str, control_plane_may_be_gone: bool = True) -> str:
    """Bash: exit 0 when there is nothing to do for $NODE (no control plane here, or no such Node). A
    step that needs the control plane (``control_plane_may_be_gone=False``) fails without admin.conf."""
    gone = (f'  echo "warning: $KUBECONFIG is missing, the control plane is gone; nothing to {what}" >&2\n  exit 0'
            if control_plane_may_be_gone else f'  die "$KUBECONFIG is missing: cannot {what} $NODE without the control plane"')
    return f"""
if [[ ! -f $KUBECONFIG ]]; then
{gone}
fi
if ! output="$(kubectl get node "$NODE" --ignore-not-found -o name --request-timeout=30s 2>&1)"; then
  echo "$output" >&2
  die "cannot ask the API server whether node $NODE exists"
fi
if [[ $output != *"node/$NODE"* ]]; then
  echo "node $NODE is not in the cluster, nothing to {what}"
  exit 0
fi
"""


# etcdctl runs inside the etcd static Pod of the first control-plane node (kubeadm names it
# etcd-<node name> and mounts /etc/kubernetes/pki/etcd into it; etcd's image ships etcdctl), with the
# etcd CA and server certificate kubeadm generates, as upstream's etcd operations show
# (https://kubernetes.io/docs/tasks/administer-cluster/configure-upgrade-etcd/). kubeadm names each
# stacked member after its node (kubernetes cmd/kubeadm/app/phases/etcd/local.go: "--name" = node name).
# `member list` prints "ID, STATUS, NAME, PEER ADDRS, CLIENT ADDRS, IS LEARNER", fields separated by
# ", " and several addresses of one field by "," (etcd etcdctl/ctlv3/command/printer_simple.go); an
# added but unstarted member has an empty name.
# Quorum: a cluster of n voting members needs n/2+1 of them (https://etcd.io/docs/v3.5/faq/ "What is
# failure tolerance?"). Removing a member leaves n-1, so the other members that answer a health check
# must number at least (n-1)/2+1, or the removal would leave a cluster that cannot commit.
_ETCD_HELPERS = r"""
etcd_ctl() {
  local endpoint=$1
  shift
  kubectl -n kube-system exec "$ETCD_POD" --request-timeout=60s -- etcdctl     --endpoints="$endpoint" --cacert=/etc/kubernetes/pki/etcd/ca.crt     --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key "$@"
}

etcd_members() {
  etcd_ctl https://127.0.0.1:2379 member list || die "cannot list the etcd members through $ETCD_POD"
}

# check_quorum_without NAME: fail unless the cluster keeps a healthy quorum once member NAME is gone.
check_quorum_without() {
  local target=$1 members others=0 healthy=0 name clients learner endpoint
  members="$(etcd_members)"
  while IFS= read -r line; do
    [[ -n $line ]] || continue
    IFS=$'\x1f' read -r _ _ name _ clients learner <<<"${line//, /$'\x1f'}"
    # A learner does not vote (https://etcd.io/docs/v3.5/learning/design-learner/).
    [[ $learner == true ]] && continue
    [[ $name == "$target" ]] && continue
    others=$((others + 1))
    endpoint=${clients%%,*}
    if [[ -n $endpoint ]] && etcd_ctl "$endpoint" endpoint health >/dev/null 2>&1; then
      healthy=$((healthy + 1))
    fi
  done <<<"$members"
  ((others >= 1)) || die "refusing: $target is the last etcd member; removing it destroys the cluster"
  local needed=$((others / 2 + 1))
  if ((healthy < needed)); then
    die "refusing to remove $target: of the $others etcd members that would remain only $healthy answer; \
quorum needs $needed. Repair the unhealthy members first"
  fi
  echo "etcd quorum holds without $target: $healthy of $others remaining members healthy (quorum $needed)"
}

# member_id NAME: the ID of the etcd member NAME, or nothing.
member_id() {
  local target=$1 id name
  while IFS= read -r line; do
    IFS=$'\x1f' read -r id _ name _ <<<"${line//, /$'\x1f'}"
    if [[ $name == "$target" ]]; then
      echo "$id"
      return 0
    fi
  done <<<"$(etcd_members)"
}
"""


def render_deregister(node_name: str, etcd_pod: str | None = None) -> str:
    """On the first control-plane node: the last step of removing a node, after ``kubeadm reset`` ran on
    it. With ``etcd_pod`` (a control-plane node) the node's etcd member is removed by name if reset could
    not remove it (a node that was already dead, or a reset that failed half-way), never below quorum;
    then the Node object is deleted (``kubectl delete node NAME --ignore-not-found``,
    https://kubernetes.io/docs/reference/kubectl/generated/kubectl_delete/). A second run finds neither
    and does nothing."""
    _check_node_name(node_name)
    if etcd_pod is not None:
        _check_node_name(etcd_pod)
    etcd = []
    if etcd_pod:
        etcd = [f'ETCD_POD="{etcd_pod}"', _ETCD_HELPERS, """
id="$(member_id "$NODE")"
if [[ -n $id ]]; then
  check_quorum_without "$NODE"
  etcd_ctl https://127.0.0.1:2379 member remove "$id" >/dev/null || die "could not remove etcd member $NODE ($id)"
  echo "removed etcd member $NODE ($id): kubeadm reset had not"
else
  echo "etcd member $NODE is already gone"
fi
"""]
    return "\n".join([
        _PRELUDE,
        f'export KUBECONFIG="$ROOT{ADMIN_CONF}"',
        f'NODE="{node_name}"',
        """
if [[ ! -f $KUBECONFIG ]]; then
  echo "warning: $KUBECONFIG is missing, the control plane is gone; nothing to deregister" >&2
  exit 0
fi
""",
        *etcd,
        """
kubectl delete node "$NODE" --ignore-not-found --request-timeout=60s
echo "node $NODE deregistered"
""",
    ])


# --- control-plane certificates -----------------------------------------------------------------
#
# kubeadm's client certificates last one year; `kubeadm certs check-expiration` lists them ("Checks
# expiration for the certificates in the local PKI managed by kubeadm") and `kubeadm certs renew all`
# renews them, after which "you should restart the control plane Pods ... temporarily remove its
# manifest file from /etc/kubernetes/manifests/ and wait for 20 seconds (see the fileCheckFrequency
# value in KubeletConfiguration struct)" (https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/
# kubeadm-certs/, "Manual certificate renewal"; kubeadm_certs_check-expiration reference). `kubeadm
# upgrade apply/node` renews them too (same page, "Automatic certificate renewal").

# Where a finished renewal round leaves its label, so a re-run of the same round does nothing.
RENEWAL_MARKER = "/etc/kubernetes/pki/.hybrid-cluster-certificate-renewal"
_STATIC_POD_MANIFESTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
# The kubelet's fileCheckFrequency default (KubeletConfiguration: "Default: 20s"), plus margin.
_STATIC_POD_RESCAN_SECONDS = 30
_RENEWAL_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def render_certificate_expiry() -> str:
    """On the first control-plane node: one line per kubeadm-managed certificate and CA, ``NAME<TAB>EXPIRES``
    (EXPIRES as check-expiration prints it, e.g. ``Apr 09, 2027 09:17 UTC``), from the text output
    (its column layout: CERTIFICATE, EXPIRES in five words, RESIDUAL TIME, ...), which every supported
    kubeadm prints; the structured output's flag was renamed between releases (``--output`` in the
    1.31 reference, ``--experimental-output`` later)."""
    return "\n".join([
        _PRELUDE,
        f'ADMIN_CONF="$ROOT{ADMIN_CONF}"',
        """
[[ -s $ADMIN_CONF ]] || die "$ADMIN_CONF is missing: kubeadm init has not completed on this node"
if ! report="$(kubeadm certs check-expiration 2>&1)"; then
  echo "$report" >&2
  die "kubeadm certs check-expiration failed"
fi
lines="$(printf '%s\\n' "$report" | awk '
  $1 == "CERTIFICATE" { table = 1; next }
  table && NF >= 7 && $3 ~ /^[0-9]+,$/ { printf "%s\\t%s %s %s %s %s\\n", $1, $2, $3, $4, $5, $6 }
  NF == 0 { table = 0 }')"
[[ -n $lines ]] || { echo "$report" >&2; die "no certificate found in the check-expiration report"; }
printf '%s\\n' "$lines"
""",
    ])


def parse_certificate_expiry(stdout: str) -> dict[str, str]:
    """render_certificate_expiry's lines as {certificate: expiry}."""
    result = {}
    for line in stdout.splitlines():
        name, sep, expires = line.partition("\t")
        if sep:
            result[name] = expires
    return result


def render_renew_certificates(node_name: str, label: str, etcd_pod: str | None) -> str:
    """On one control-plane node, as root: renewal round ``label`` of its kubeadm certificates, then its
    control-plane static Pods restarted one at a time (manifest moved out, the kubelet stops the Pod,
    moved back), each awaited before the next. With ``etcd_pod`` (several control-plane nodes) nothing
    starts unless the other etcd members keep quorum while this one restarts; a single control-plane
    node has no quorum to keep and its API is down for the restarts. The round's label is recorded when
    everything is back, so the same round never runs twice here."""
    _check_node_name(node_name)
    if etcd_pod is not None:
        _check_node_name(etcd_pod)
    if not _RENEWAL_LABEL.match(label):
        raise ValueError(f"renewal label {label!r} must be 1-63 letters, digits, '.', '_' or '-'")
    manifests = " ".join(_STATIC_POD_MANIFESTS)
    quorum = "\n".join(_quorum_check(etcd_pod))
    return "\n".join([
        _PRELUDE,
        f'export KUBECONFIG="$ROOT{ADMIN_CONF}"',
        f'NODE="{node_name}"',
        f'LABEL="{label}"',
        f'MARKER="$ROOT{RENEWAL_MARKER}"',
        f'MANIFESTS="$ROOT/etc/kubernetes/manifests"',
        f'PARKED="$ROOT/etc/kubernetes/manifests-parked"',
        f"""
[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: $NODE is not a control-plane node"
if [[ -f $MARKER && "$(cat "$MARKER")" == "$LABEL" ]]; then
  echo "certificates of $NODE already renewed in round $LABEL"
  exit 0
fi
{quorum}
kubeadm certs renew all >/dev/null
echo "renewed the kubeadm certificates of $NODE"
mkdir -p "$PARKED"
for component in {manifests}; do
  manifest="$MANIFESTS/$component.yaml"
  [[ -f $manifest || -f $PARKED/$component.yaml ]] || die "no static Pod manifest for $component on $NODE"
  [[ -f $PARKED/$component.yaml ]] || mv "$manifest" "$PARKED/$component.yaml"
  sleep {_STATIC_POD_RESCAN_SECONDS}
  mv "$PARKED/$component.yaml" "$manifest"
  for ((attempt = 1; attempt <= {_attempts(API_READY_TIMEOUT_SECONDS)}; attempt++)); do
    if kubectl -n kube-system get pod "$component-$NODE" -o jsonpath='{{.status.conditions[?(@.type=="Ready")].status}}' \\
        --request-timeout=10s 2>/dev/null | grep -qx True; then
      break
    fi
    sleep {POLL_SECONDS}
  done
  kubectl -n kube-system get pod "$component-$NODE" -o jsonpath='{{.status.conditions[?(@.type=="Ready")].status}}' \\
    --request-timeout=10s | grep -qx True || die "$component on $NODE is not Ready {API_READY_TIMEOUT_SECONDS}s after its restart"
  echo "restarted $component on $NODE with its renewed certificate"
done
rm -d "$PARKED"
printf '%s' "$LABEL" >"$MARKER"
echo "certificates of $NODE renewed in round $LABEL"
""",
    ])


def render_read_kubeconfig() -> str:
    """Print /etc/kubernetes/admin.conf and nothing else (the command's stdout is a secret Output)."""
    return "\n".join([
        _PRELUDE,
        f'ADMIN_CONF="$ROOT{ADMIN_CONF}"',
        """
[[ -s $ADMIN_CONF ]] || die "$ADMIN_CONF is missing or empty: kubeadm init has not completed on this node"
cat -- "$ADMIN_CONF"
""",
    ])
