"""The control plane's hardening (render/security.py, render/control_plane.py, components/cluster/control_plane.py): what the API
server, controller manager and scheduler are given, the files the API server reads (checked against strict models of
their upstream types), the scripts run against stub kubectl and kubeadm on scratch control-plane nodes (a change of
Secrets encryption key walked through three nodes, checking after every step that no API server writes with a key
another cannot read), and the steps' place in the graph, for a new cluster and for one the previous release built."""
from __future__ import annotations

import base64
import json
import lzma
import shutil
import subprocess
from pathlib import Path

import pydantic
import pytest
import yaml

from config.loader import SECRET_KEYS, load
from plan.nodes import cluster_params, node_params
from plan.security import control_plane_hardening, encryption_key, pod_security_exemptions
from render import control_plane, kubeadm, linux_bootstrap, security
from tests import apiserver_api as api
from tests.conftest import hk_prod_values, raw_config
from tests.kubeadm_api import validate_documents
from tests.render.test_linux_bootstrap import CONTROL_PLANE_JOIN_YAML
from tests.validators import TEST_ROOT_VARIABLE, configmap_document_stub
from tools.mock.engine import from_export
from tools.mock.program import Recording, placeholder, placeholder_secrets, run_program

ROOT = Path(__file__).resolve().parents[2]
# The state the previous release's program (commit 2f14be9) left for hk-prod under the mock engine
# (tools.mock.engine.to_export of tools.mock.program.run_program's state), xz-compressed.
PREVIOUS_STATE = ROOT / "tests" / "fixtures" / "state" / "hk-prod-2f14be9.json.xz"


NEW_WINDOWS_SECRET = "windows-secret-of-this-release"


def previous_release_run() -> Recording:
    """hk-prod's next `up` on the state the previous release left (tests/fixtures/state)."""
    # The state holds the secrets as that release's mock wrote them (FAKE-<key>-offline-placeholder, inside a secret's
    # JSON plaintext); the operator's secrets are the same before and after, so they are read as this release's
    # placeholders (tools/mock/program.py placeholder, in each secret's form).
    now = {f"FAKE-{key}-offline-placeholder": placeholder(key) for key in SECRET_KEYS}

    def same_secrets(value):
        if isinstance(value, dict):
            return {k: same_secrets(v) for k, v in value.items()}
        if isinstance(value, list):
            return [same_secrets(v) for v in value]
        if isinstance(value, str) and "FAKE-" in value:
            try:                                    # a secret's plaintext: the value as JSON
                return json.dumps(same_secrets(json.loads(value)))
            except json.JSONDecodeError:
                return now.get(value, value)
        return value
    state = from_export(same_secrets(json.loads(lzma.open(PREVIOUS_STATE).read())))
    # hk-prod's stack as it was then: its log server and trace backend in plain text (said explicitly, as this release
    # wants); hk-prod's own move to TLS is a change of the stack, not of the release.
    values = hk_prod_values()
    values["observability"]["logs"] = {"kind": "loki", "host": "logs.hk-prod.internal", "port": 3100, "tls": False}
    values["tracing"] = {"endpoint": "tempo.hk-prod.internal:4317", "insecure": True}
    # The Windows nodes leave the password they all shared (which the old golden images hold) as docs/lifecycle.md
    # says: a rotation of windowsAdminPassword, the old one as windowsAdminPasswordPrevious.
    return run_program(raw_config(values), stack="hk-prod", state=state,
                       secrets={"windowsAdminPassword": NEW_WINDOWS_SECRET,
                                "windowsAdminPasswordPrevious": placeholder_secrets()["windowsAdminPassword"]})


def _spec(values: dict | None = None):
    return load(raw_config(values or hk_prod_values())).spec


HK = _spec()
FILES = security.control_plane_files(control_plane_hardening(HK))
COMPONENTS = kubeadm.control_plane_components(cluster_params(HK))


def _args(section: dict) -> dict[str, str]:
    return {a["name"]: a["value"] for a in section["extraArgs"]}


# --- what the control plane is given --------------------------------------------------------------------------

def test_the_init_configuration_validates_strictly_with_the_hardening():
    init = kubeadm.render_init_config(cluster_params(HK), node_params(HK, HK.nodes.control_plane[0], control_plane=True))
    models = validate_documents(init)
    assert [type(m).__name__ for m in models] == ["V1Beta4InitConfiguration", "V1Beta4ClusterConfiguration",
                                                  "KubeletConfiguration"]


def test_the_api_server_is_hardened_and_keeps_kubeadms_defaults():
    args = _args(COMPONENTS["apiServer"])
    # anonymous-auth stays unset: the AuthenticationConfiguration's anonymous section forbids the flag.
    assert "anonymous-auth" not in args and args["authentication-config"] == security.AUTHENTICATION_FILE
    assert args["profiling"] == "false"
    assert args["kubelet-certificate-authority"] == "/etc/kubernetes/pki/ca.crt"
    assert args["service-account-extend-token-expiration"] == "false"
    assert args["enable-admission-plugins"].split(",") == ["NodeRestriction", "DenyServiceExternalIPs"]
    assert args["encryption-provider-config"] == security.ENCRYPTION_FILE
    assert args["admission-control-config-file"] == security.ADMISSION_FILE
    assert args["audit-policy-file"] == security.AUDIT_POLICY_FILE and args["audit-log-path"] == security.AUDIT_LOG_FILE
    assert (args["audit-log-maxage"], args["audit-log-maxbackup"], args["audit-log-maxsize"]) == ("30", "10", "100")
    assert args["tls-cipher-suites"].split(",") == list(security.TLS_CIPHER_SUITES)
    # Every file a flag names is mounted, read-only but for the log's directory.
    mounts = {v["hostPath"]: v for v in COMPONENTS["apiServer"]["extraVolumes"]}
    for path in (security.AUTHENTICATION_FILE, security.ADMISSION_FILE, security.AUDIT_POLICY_FILE,
                 security.ENCRYPTION_FILE, security.AUDIT_LOG_FILE):
        directory = path.rpartition("/")[0]
        assert directory in mounts and mounts[directory]["mountPath"] == directory, path
        assert mounts[directory].get("readOnly", False) is (directory != security.AUDIT_LOG_DIR)
    assert _args(COMPONENTS["controllerManager"]) == {"node-cidr-mask-size": "24", "profiling": "false",
                                                      "terminated-pod-gc-threshold": "1000"}
    assert _args(COMPONENTS["scheduler"]) == {"profiling": "false"}


def test_without_ca_signed_kubelet_certificates_the_api_server_does_not_verify_kubelets():
    values = hk_prod_values()
    values["resourceMetrics"] = {"enabled": False}
    values.pop("customMetrics")
    args = _args(kubeadm.control_plane_components(cluster_params(_spec(values)))["apiServer"])
    assert "kubelet-certificate-authority" not in args


def test_a_relaxed_audit_log_leaves_out_its_flags_file_and_mount():
    values = hk_prod_values()
    values["security"] = {"auditLog": {"enabled": False}}
    spec = _spec(values)
    components = kubeadm.control_plane_components(cluster_params(spec))
    assert not any(name.startswith("audit-") for name in _args(components["apiServer"]))
    assert "audit-log" not in {v["name"] for v in components["apiServer"]["extraVolumes"]}
    assert security.AUDIT_POLICY_FILE not in security.control_plane_files(control_plane_hardening(spec))


def test_the_files_validate_strictly():
    api.AdmissionConfiguration.model_validate(yaml.safe_load(FILES[security.ADMISSION_FILE]))
    api.AuthenticationConfiguration.model_validate(yaml.safe_load(FILES[security.AUTHENTICATION_FILE]))
    api.Policy.model_validate(yaml.safe_load(FILES[security.AUDIT_POLICY_FILE]))
    with pytest.raises(pydantic.ValidationError):
        api.Policy.model_validate({**yaml.safe_load(FILES[security.AUDIT_POLICY_FILE]), "rule": []})


def test_pod_security_defaults_hold_for_every_namespace_but_the_exempt_ones():
    config = api.AdmissionConfiguration.model_validate(yaml.safe_load(FILES[security.ADMISSION_FILE]))
    (plugin,) = config.plugins
    assert plugin.name == "PodSecurity" and plugin.configuration is not None
    defaults = plugin.configuration.defaults
    assert (defaults.enforce, defaults.audit, defaults.warn) == ("baseline", "restricted", "restricted")
    assert plugin.configuration.exemptions.namespaces == ["kube-system", "tigera-operator"]
    assert not plugin.configuration.exemptions.usernames and not plugin.configuration.exemptions.runtimeClasses
    # Each exemption has its reason.
    assert all(len(e.reason) > 20 for e in pod_security_exemptions(HK))


def test_anonymous_requests_reach_only_the_health_endpoints_and_token_discovery():
    config = api.AuthenticationConfiguration.model_validate(yaml.safe_load(FILES[security.AUTHENTICATION_FILE]))
    assert config.anonymous is not None and config.anonymous.enabled and not config.jwt
    assert [c.path for c in config.anonymous.conditions or []] == [
        "/livez", "/readyz", "/healthz", "/api/v1/namespaces/kube-public/configmaps/cluster-info"]


@pytest.mark.parametrize("verb", ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"])
def test_the_audit_log_never_records_a_secret_configmap_or_token_body(verb):
    policy = api.Policy.model_validate(yaml.safe_load(FILES[security.AUDIT_POLICY_FILE]))
    for group, resource, subresource in (("", "secrets", ""), ("", "configmaps", ""), ("", "serviceaccounts", "token"),
                                         ("authentication.k8s.io", "tokenreviews", "")):
        for user in ("alice", "system:kube-controller-manager", "system:serviceaccount:velero:velero"):
            level = api.audit_level(policy, user=user, verb=verb, group=group, resource=resource,
                                    subresource=subresource, namespace="linux-prod")
            assert level in ("None", "Metadata"), (verb, resource, subresource, user, level)


def test_the_audit_log_records_writes_with_their_bodies_and_leaves_out_the_noise():
    policy = api.Policy.model_validate(yaml.safe_load(FILES[security.AUDIT_POLICY_FILE]))
    assert api.audit_level(policy, verb="create", group="apps", resource="deployments", namespace="x") == "Request"
    assert api.audit_level(policy, verb="delete", group="rbac.authorization.k8s.io",
                           resource="clusterrolebindings") == "Request"
    assert api.audit_level(policy, verb="get", group="apps", resource="deployments", namespace="x") == "Metadata"
    assert api.audit_level(policy, verb="create", resource="pods", subresource="exec", namespace="x") == "Metadata"
    assert api.audit_level(policy, verb="get", path="/livez") == "None"
    assert api.audit_level(policy, verb="get", path="/readyz?verbose") == "None"
    assert api.audit_level(policy, verb="create", resource="events", namespace="x") == "None"
    assert api.audit_level(policy, user="system:serviceaccount:kube-system:kube-proxy", verb="watch", group="discovery.k8s.io",
                           resource="endpointslices") == "None"
    assert api.audit_level(policy, verb="get", path="/apis") == "Metadata"


def test_encryption_keys_are_named_by_the_rotation_label():
    assert encryption_key(HK) == "key-initial"
    values = hk_prod_values()
    values["security"] = {"secretsEncryption": {"keyRotation": "2027-01"}}
    assert encryption_key(_spec(values)) == "key-2027-01"
    values["security"] = {"secretsEncryption": {"enabled": False}}
    assert encryption_key(_spec(values)) == "identity"
    for bad in ("key-", "Key-x", "key-a b", "identity2"):
        with pytest.raises(ValueError):
            security.check_key_name(bad)


# --- the scripts on scratch control-plane nodes ------------------------------------------------------------------

KUBECTL = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubectl %s\n' "$*" >>"$NODE_STUBS/calls"
case "$*" in
  "--server https://127.0.0.1:6443 --tls-server-name kubernetes get --raw=/readyz --request-timeout=10s")
    [[ -f $HYBRID_CLUSTER_TEST_ROOT/etc/kubernetes/manifests/kube-apiserver.yaml ]] && echo ok ;;
  "get namespaces -o name") for f in "$CLUSTER/secrets"/*; do echo "namespace/${f##*/}"; done ;;
  "-n "*" get secrets -o name") ns=$2; while read -r s; do [[ -n $s ]] && echo "secret/$s"; done <"$CLUSTER/secrets/$ns" ;;
  "-n "*" get secrets -o json") echo "{\"kind\":\"List\",\"namespace\":\"$2\"}" ;;
  "replace -f - -o name")
    ns="$(sed -n 's/.*"namespace":"\([^"]*\)".*/\1/p')"
    if [[ -e $CLUSTER/conflict-$ns ]]; then rm "$CLUSTER/conflict-$ns"; echo "the object has been modified" >&2; exit 1; fi
    while read -r s; do
      [[ -n $s ]] && echo "secret/$s" && echo "$ns/$s $(cat "$CLUSTER/writer")" >>"$CLUSTER/rewritten"
    done <"$CLUSTER/secrets/$ns" ;;
""" + configmap_document_stub("kubeadm-config", "ClusterConfiguration", "$CLUSTER/ClusterConfiguration") + r"""
  *) echo "unexpected kubectl $*" >&2; exit 2 ;;
esac
"""
# kubeadm upgrade node phase control-plane: the manifests the cluster's ClusterConfiguration makes (the stub writes the
# sorted apiServer flags into the local kube-apiserver manifest, as kubeadm would rewrite it).
KUBEADM = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubeadm %s\n' "$*" >>"$NODE_STUBS/calls"
case "$*" in
  "upgrade node phase control-plane --dry-run --certificate-renewal=false --etcd-upgrade=false")
    [[ ! -e $CLUSTER/kubeadm-refuses ]] || { echo "error: unknown field" >&2; exit 1; } ;;
  "upgrade node phase control-plane --certificate-renewal=false --etcd-upgrade=false")
    [[ ! -e $NODE_STUBS/kubeadm-fails ]] || { echo "[upgrade] rolling back kube-apiserver" >&2; exit 1; }
    python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); print(sorted(a["name"] for a in d["apiServer"]["extraArgs"]))' \
      "$CLUSTER/ClusterConfiguration" >"$HYBRID_CLUSTER_TEST_ROOT/etc/kubernetes/manifests/kube-apiserver.yaml"
    echo "    - --secure-port=6443" >>"$HYBRID_CLUSTER_TEST_ROOT/etc/kubernetes/manifests/kube-apiserver.yaml"
    python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); print(d.get("controllerManager"))' \
      "$CLUSTER/ClusterConfiguration" >"$HYBRID_CLUSTER_TEST_ROOT/etc/kubernetes/manifests/kube-controller-manager.yaml" ;;
  *) echo "unexpected kubeadm $*" >&2; exit 2 ;;
esac
"""
RECORD = '#!/usr/bin/env bash\nprintf "%s %s\\n" "${0##*/}" "$*" >>"$NODE_STUBS/calls"\n'


class ControlPlaneNode:
    """A control-plane node's root, with its stubs; every node of a test shares one `cluster` directory (the API)."""

    def __init__(self, base: Path, name: str, cluster: Path):
        self.name, self.root, self.stubs, self.cluster = name, base / name / "root", base / name / "stubs", cluster
        for directory in (self.root / "etc" / "kubernetes" / "manifests", self.stubs, self.root / "var" / "lib" / "etcd"):
            directory.mkdir(parents=True, exist_ok=True)
        (self.root / "etc" / "kubernetes" / "admin.conf").write_text("apiVersion: v1\n")
        (self.root / "etc" / "kubernetes" / "manifests" / "kube-apiserver.yaml").write_text(
            "kind: Pod\n    - --secure-port=6443\n")
        for name_, text in (("kubectl", KUBECTL), ("kubeadm", KUBEADM), ("sleep", "#!/usr/bin/env bash\n"),
                            ("getent", "#!/usr/bin/env bash\nexit 2\n"), ("groupadd", RECORD), ("useradd", RECORD),
                            ("chown", RECORD)):
            (self.stubs / name_).write_text(text)
            (self.stubs / name_).chmod(0o755)

    def run(self, script: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        env = {"PATH": f"{self.stubs}:/usr/bin:/bin", TEST_ROOT_VARIABLE: str(self.root), "NODE_STUBS": str(self.stubs),
               "CLUSTER": str(self.cluster)}
        return subprocess.run([shutil.which("bash"), "-c", script], input=stdin, env=env, capture_output=True,
                              text=True, timeout=60)

    def calls(self) -> list[str]:
        path = self.stubs / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def encryption(self) -> tuple[str, set[str]]:
        """The key this node's API server writes with, and every key it reads (identity is plain text)."""
        config = api.EncryptionConfiguration.model_validate(
            yaml.safe_load((self.root / security.ENCRYPTION_FILE.lstrip("/")).read_text()))
        (resources,) = config.resources
        assert resources.resources == ["secrets"]
        names = []
        for provider in resources.providers:
            if provider.identity is not None:
                names.append("identity")
            else:
                assert provider.secretbox is not None, "only secretbox and identity are used"
                for key in provider.secretbox.keys:
                    assert len(base64.b64decode(key.secret)) == 32
                    names.append(key.name)
        assert names[-1] == "identity" or "identity" in names, "identity always reads"
        return names[0], set(names)


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster"
    (path / "secrets").mkdir(parents=True)
    (path / "secrets" / "default").write_text("")
    (path / "secrets" / "linux-prod").write_text("db-password\napi-token\n")
    (path / "secrets" / "kube-system").write_text("bootstrap-token-abc\n")
    (path / "writer").write_text("identity")
    document = yaml.safe_load(kubeadm.render_init_config(
        cluster_params(HK), node_params(HK, HK.nodes.control_plane[0], control_plane=True)).split("---")[2])
    # As kubeadm uploads it: no hardening yet (a cluster the previous release built) and a defaulted etcd section.
    document["apiServer"] = {"certSANs": document["apiServer"]["certSANs"],
                             "extraArgs": [{"name": "service-node-port-range", "value": "30000-32767"}]}
    document["controllerManager"] = {"extraArgs": [{"name": "node-cidr-mask-size", "value": "24"}]}
    document["scheduler"] = {}
    document["etcd"] = {"local": {"dataDir": "/var/lib/etcd"}}
    (path / "ClusterConfiguration").write_text(yaml.safe_dump(document))
    return path


def _nodes(tmp_path: Path, cluster: Path) -> list[ControlPlaneNode]:
    return [ControlPlaneNode(tmp_path, name, cluster) for name in ("hk-cp-1", "hk-cp-2", "hk-cp-3")]


def _ok(run: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert run.returncode == 0, run.stderr
    return run


def _assert_no_node_writes_what_another_cannot_read(nodes: list[ControlPlaneNode]) -> None:
    states = [n.encryption() for n in nodes if (n.root / security.ENCRYPTION_FILE.lstrip("/")).exists()]
    for writer, _ in states:
        for _, readable in states:
            assert writer in readable, states


def _change_key(nodes: list[ControlPlaneNode], target: str) -> None:
    """Every step of components/cluster/control_plane.py for a change of key, in its order, checking the invariant after each."""
    first = nodes[0]
    ring = _ok(first.run(control_plane.render_encryption_keys(target))).stdout
    for node in nodes:
        _ok(node.run(control_plane.render_control_plane_files(node.name, FILES), stdin=ring))
        _assert_no_node_writes_what_another_cannot_read(nodes)
    _ok(first.run(control_plane.render_kubeadm_config_sync(COMPONENTS)))
    for node in nodes:
        _ok(node.run(control_plane.render_control_plane_node(node.name, COMPONENTS, FILES)))
    for node in nodes:
        _ok(node.run(control_plane.render_encryption_writer(node.name), stdin=ring))
        _assert_no_node_writes_what_another_cannot_read(nodes)
        # The stub API records what the rewrite will find: the key the nodes write with.
        first.cluster.joinpath("writer").write_text(node.encryption()[0])
    _ok(first.run(control_plane.render_encryption_rewrite(target)))


def test_an_existing_cluster_gets_encryption_in_phases_and_every_secret_rewritten(tmp_path, cluster):
    nodes = _nodes(tmp_path, cluster)
    _change_key(nodes, "key-initial")
    assert all(n.encryption() == ("key-initial", {"key-initial", "identity"}) for n in nodes)
    # Every Secret rewritten once, with the key every API server then wrote with; the key recorded as current.
    rewritten = (cluster / "rewritten").read_text().splitlines()
    assert sorted(rewritten) == ["kube-system/bootstrap-token-abc key-initial", "linux-prod/api-token key-initial",
                                 "linux-prod/db-password key-initial"]
    assert (nodes[0].root / "etc/kubernetes/encryption/current").read_text() == "key-initial"
    # The key was made once, on the first node, and reached the others only on stdin; every file is root's only.
    keys = {n.name: (n.root / "etc/kubernetes/encryption/keys/key-initial").read_text() for n in nodes}
    assert len(set(keys.values())) == 1
    for node in nodes:
        for path in (node.root / "etc/kubernetes/encryption").rglob("*"):
            assert path.stat().st_mode & 0o077 == 0, path
        for path in (node.root / "etc/kubernetes/hardening").iterdir():
            assert path.stat().st_mode & 0o077 == 0, path
    # The ClusterConfiguration names the files; kubeadm's other sections (its version above all) are kept.
    document = yaml.safe_load((cluster / "ClusterConfiguration").read_text())
    assert document["kubernetesVersion"] == "v1.36.4" and document["etcd"] == {"local": {"dataDir": "/var/lib/etcd"}}
    assert {k: document[k] for k in COMPONENTS} == COMPONENTS


def test_a_rotation_then_plain_text_go_through_the_same_phases(tmp_path, cluster):
    nodes = _nodes(tmp_path, cluster)
    _change_key(nodes, "key-initial")
    initial = (nodes[0].root / "etc/kubernetes/encryption/keys/key-initial").read_text()
    (cluster / "rewritten").unlink()
    _change_key(nodes, "key-2027-01")
    # The new key writes; the old one still reads (until the next change of key), and is the same key as before.
    assert all(n.encryption() == ("key-2027-01", {"key-2027-01", "key-initial", "identity"}) for n in nodes)
    assert (nodes[2].root / "etc/kubernetes/encryption/keys/key-initial").read_text() == initial
    assert len((cluster / "rewritten").read_text().splitlines()) == 3
    # Relaxed to plain text: identity writes, the key reads what is still encrypted until the rewrite.
    (cluster / "rewritten").unlink()
    _change_key(nodes, "identity")
    assert all(n.encryption() == ("identity", {"identity", "key-2027-01"}) for n in nodes)
    assert {line.split()[1] for line in (cluster / "rewritten").read_text().splitlines()} == {"identity"}


def test_the_steps_change_nothing_the_second_time(tmp_path, cluster):
    nodes = _nodes(tmp_path, cluster)
    _change_key(nodes, "key-initial")
    for node in nodes:
        (node.stubs / "calls").unlink(missing_ok=True)
    _change_key(nodes, "key-initial")
    for node in nodes:
        calls = node.calls()
        # No restart (the manifest moves out only to restart), no write of the ClusterConfiguration, no rewrite.
        assert not any("apply" in c or "replace" in c for c in calls), calls
    assert "already the stack's" in _ok(nodes[0].run(control_plane.render_kubeadm_config_sync(COMPONENTS))).stdout
    assert not (nodes[0].root / "etc/kubernetes/manifests-parked").exists()


def test_changed_files_restart_the_api_server_even_when_the_manifest_is_unchanged(tmp_path, cluster):
    nodes = _nodes(tmp_path, cluster)
    _change_key(nodes, "key-initial")
    values = hk_prod_values()
    values["security"] = {"podSecurity": {"exemptNamespaces": ["legacy-agents"]}}
    files = security.control_plane_files(control_plane_hardening(_spec(values)))
    node = nodes[1]
    ring = _ok(nodes[0].run(control_plane.render_encryption_keys("key-initial"))).stdout
    _ok(node.run(control_plane.render_control_plane_files(node.name, files), stdin=ring))
    (node.stubs / "calls").unlink()
    run = _ok(node.run(control_plane.render_control_plane_node(node.name, COMPONENTS, files)))
    assert "restarted kube-apiserver for its changed files" in run.stdout
    assert any(c.startswith("kubectl --server https://127.0.0.1:6443 --tls-server-name kubernetes get --raw=/readyz")
               for c in node.calls())
    assert (node.root / "etc/kubernetes/manifests/kube-apiserver.yaml").exists()
    # Interrupted after the files but before the restart, a later run still restarts (the marker says what runs).
    _ok(node.run(control_plane.render_control_plane_files(node.name, FILES), stdin=ring))
    again = _ok(node.run(control_plane.render_control_plane_node(node.name, COMPONENTS, FILES)))
    assert "restarted kube-apiserver" in again.stdout
    assert "already runs" in _ok(node.run(control_plane.render_control_plane_node(node.name, COMPONENTS, FILES))).stdout


class Stopped(Exception):
    pass


class Engine:
    """components/cluster/control_plane.py's steps as the engine runs them across several `pulumi up`s: a step runs when its
    inputs (script and stdin) differ from those of its last successful run, the keys step only when its trigger (its
    script) changes, so every later run reads the key ring that step printed then; a failed step keeps its old inputs
    and stops the run. After every step each API server writes a Secret (a controller's update), so the keys Secrets
    are stored with grow until a rewrite has moved all of them to one key; each must stay readable on every node."""

    def __init__(self, nodes: list[ControlPlaneNode]):
        self.nodes, self.last, self.ring = nodes, {}, ""
        self.stored_with = {"identity"}

    def _check(self) -> None:
        _assert_no_node_writes_what_another_cannot_read(self.nodes)
        states = [n.encryption() for n in self.nodes if (n.root / security.ENCRYPTION_FILE.lstrip("/")).exists()]
        self.stored_with |= {writer for writer, _ in states}
        for _, readable in states:
            assert self.stored_with <= readable, (self.stored_with, states)

    def _step(self, name: str, node: ControlPlaneNode, script: str, stdin: str = "", fail_at: str | None = None) -> str:
        if self.last.get(name) == (script, stdin):
            return ""
        if name == fail_at:
            raise Stopped(name)
        out = _ok(node.run(script, stdin=stdin)).stdout
        self.last[name] = (script, stdin)
        self._check()
        return out

    def up(self, target: str, files: dict[str, str] = FILES, components: dict = COMPONENTS,
           fail_at: str | None = None) -> bool:
        first = self.nodes[0]
        try:
            keys = control_plane.render_encryption_keys(target)
            if self.last.get("keys") != (keys, ""):
                if fail_at == "keys":
                    raise Stopped("keys")
                self.ring = _ok(first.run(keys)).stdout
                self.last["keys"] = (keys, "")
            for node in self.nodes:
                self._step(f"{node.name}-files", node, control_plane.render_control_plane_files(node.name, files),
                           self.ring, fail_at)
            self._step("kubeadm-config", first, control_plane.render_kubeadm_config_sync(components), "", fail_at)
            for node in self.nodes:
                self._step(node.name, node, control_plane.render_control_plane_node(node.name, components, files),
                           self.ring, fail_at)
            for node in self.nodes:
                self._step(f"{node.name}-writer", node, control_plane.render_encryption_writer(node.name), self.ring,
                           fail_at)
            # The stub API stores the rewritten Secrets with the key the API servers write with (all the same now).
            (writer,) = {n.encryption()[0] for n in self.nodes}
            first.cluster.joinpath("writer").write_text(writer)
            if self._step("rewrite", first, control_plane.render_encryption_rewrite(target), self.ring, fail_at):
                self.stored_with = {writer}
            return True
        except Stopped:
            return False


def _writes(nodes: list[ControlPlaneNode]) -> list[str]:
    return [n.encryption()[0] for n in nodes]


def _pending(node: ControlPlaneNode) -> list[str]:
    path = node.root / "etc/kubernetes/encryption/pending"
    return path.read_text().split() if path.exists() else []


def _exempting(namespace: str) -> dict[str, str]:
    values = hk_prod_values()
    values["security"] = {"podSecurity": {"exemptNamespaces": [namespace]}}
    return security.control_plane_files(control_plane_hardening(_spec(values)))


def test_a_later_run_with_the_stored_key_ring_never_takes_an_api_server_back_to_an_older_key(tmp_path, cluster):
    """After encryption is turned on (or a key rotated), the key ring stays what the keys step printed then; a later
    change of the files runs the files and node steps again with it, and no API server returns to plain text or to the
    previous key."""
    nodes = _nodes(tmp_path, cluster)
    engine = Engine(nodes)
    assert engine.up("key-initial")
    assert engine.up("key-initial", files=_exempting("legacy-agents"))
    assert _writes(nodes) == ["key-initial"] * 3
    assert engine.up("key-2027-01")
    assert engine.up("key-2027-01", files=_exempting("other-agents"))
    assert _writes(nodes) == ["key-2027-01"] * 3
    # A rebuilt control-plane node's steps run again with the same ring: still the current key, on every node.
    engine.last.pop("hk-cp-2-files"), engine.last.pop("hk-cp-2"), engine.last.pop("hk-cp-2-writer")
    assert engine.up("key-2027-01", files=_exempting("other-agents"))
    assert _writes(nodes) == ["key-2027-01"] * 3
    # The next change of key drops what no Secret is stored with any more.
    assert engine.up("key-2028-01")
    assert all(n.encryption()[1] == {"key-2028-01", "key-2027-01", "identity"} for n in nodes)


def test_the_key_ring_printed_again_for_a_new_release_changes_no_api_server(tmp_path, cluster):
    """A release whose keys script differs replaces the keys step, which prints the ring again after the change of key
    has completed: the previous key is still listed (until the next change of key), so no configuration changes and
    no API server restarts."""
    nodes = _nodes(tmp_path, cluster)
    engine = Engine(nodes)
    assert engine.up("key-initial")
    assert engine.up("key-2027-01")
    before = [n.encryption() for n in nodes]
    for node in nodes:
        (node.stubs / "calls").unlink(missing_ok=True)
    engine.last.pop("keys")
    assert engine.up("key-2027-01")
    assert "read key-initial " in engine.ring
    assert [n.encryption() for n in nodes] == before
    for node in nodes:
        assert not [c for c in node.calls() if "readyz" in c or " replace " in f" {c} "], node.calls()


def test_a_key_missing_from_the_first_nodes_key_ring_stops_the_keys_step_before_it_prints_anything(tmp_path, cluster):
    first = _nodes(tmp_path, cluster)[0]
    Engine([first]).up("key-initial")
    (first.root / "etc/kubernetes/encryption/keys/key-initial").unlink()
    run = first.run(control_plane.render_encryption_keys("key-2027-01"))
    assert run.returncode != 0 and "key-initial" in run.stderr and run.stdout == ""


def test_a_change_of_key_stopped_half_way_then_reverted_keeps_every_key_in_use_readable(tmp_path, cluster):
    nodes = _nodes(tmp_path, cluster)
    engine = Engine(nodes)
    assert engine.up("key-initial")
    # The first API server writes with the new key, then the second's writer step fails.
    assert not engine.up("key-2027-01", fail_at="hk-cp-2-writer")
    assert _writes(nodes) == ["key-2027-01", "key-initial", "key-initial"]
    assert _pending(nodes[0]) == ["key-2027-01"]
    # The operator goes back to the previous label: the half-used key stays readable until the rewrite has moved every
    # Secret back (Engine checks it after every step), and the rewrite runs although `current` already names the key.
    assert engine.up("key-initial")
    assert _writes(nodes) == ["key-initial"] * 3
    assert engine.stored_with == {"key-initial"} and _pending(nodes[0]) == []
    # The next change drops the abandoned key everywhere.
    assert engine.up("key-2028-01")
    assert all("key-2027-01" not in n.encryption()[1] for n in nodes)


def test_two_changes_of_key_stopped_half_way_then_a_third_keep_every_key_in_use_readable(tmp_path, cluster):
    nodes = _nodes(tmp_path, cluster)
    engine = Engine(nodes)
    assert engine.up("key-initial")
    assert not engine.up("key-a", fail_at="hk-cp-2-writer")
    assert not engine.up("key-b", fail_at="hk-cp-3-writer")
    assert _writes(nodes) == ["key-b", "key-b", "key-initial"]
    assert engine.stored_with == {"key-initial", "key-a", "key-b"}
    assert engine.up("key-c")
    assert _writes(nodes) == ["key-c"] * 3 and engine.stored_with == {"key-c"}


def _credentials(first: ControlPlaneNode) -> str:
    kubeadm_stub = (first.stubs / "kubeadm").read_text()
    (first.stubs / "kubeadm").write_text(BOOTSTRAP_KUBEADM)
    try:
        return _ok(first.run(linux_bootstrap.render_join_credentials(control_plane=True))).stdout
    finally:
        (first.stubs / "kubeadm").write_text(kubeadm_stub)


def test_a_control_plane_node_joining_during_a_change_of_key_reads_every_key_in_use(tmp_path, cluster):
    nodes = _nodes(tmp_path, cluster)
    engine = Engine(nodes)
    assert engine.up("key-initial")
    assert not engine.up("key-a", fail_at="hk-cp-2-writer")
    roles = [line.split()[:2] for line in _credentials(nodes[0]).splitlines()[1:-1]]
    assert roles == [["writer", "key-initial"], ["target", "key-a"]]
    assert not engine.up("key-b", fail_at="hk-cp-3-writer")
    credentials = _credentials(nodes[0])
    roles = [line.split()[:2] for line in credentials.splitlines()[1:-1]]
    assert roles == [["writer", "key-initial"], ["target", "key-b"], ["read", "key-a"]]
    # A fourth node joins now: it writes with the key every Secret was last rewritten with, and reads every key an API
    # server may be writing with.
    new = ControlPlaneNode(tmp_path, "hk-cp-4", cluster)
    for path in ("etc/kubernetes/admin.conf", "etc/kubernetes/manifests/kube-apiserver.yaml"):
        (new.root / path).unlink()
    (new.root / "var/lib/etcd").rmdir()
    (new.stubs / "kubeadm").write_text(BOOTSTRAP_KUBEADM)
    for name, text in (("cloud-init", "#!/usr/bin/env bash\n"), ("kubectl", "#!/usr/bin/env bash\necho ok\n")):
        (new.stubs / name).write_text(text)
        (new.stubs / name).chmod(0o755)
    (new.root / "var/lib/cloud/instance").mkdir(parents=True)
    (new.root / "var/lib/cloud/instance/boot-finished").touch()
    _ok(new.run(linux_bootstrap.render_join(JOIN_YAML, True), stdin=credentials))
    assert new.encryption() == ("key-initial", {"key-initial", "key-a", "key-b", "identity"})
    assert engine.stored_with <= new.encryption()[1]


def test_a_change_of_key_with_only_the_controller_managers_flags_still_restarts_every_api_server(tmp_path, cluster):
    """kubeadm rewrites only the controller manager's manifest; the API servers must still restart to read the new key
    before any writes with it."""
    nodes = _nodes(tmp_path, cluster)
    engine = Engine(nodes)
    assert engine.up("key-initial")
    components = json.loads(json.dumps(COMPONENTS))
    components["controllerManager"]["extraArgs"].append({"name": "concurrent-gc-syncs", "value": "30"})
    for node in nodes:
        (node.stubs / "calls").unlink(missing_ok=True)
    # Stopped before the first writer step: every node step has run.
    assert not engine.up("key-2027-01", components=components, fail_at="hk-cp-1-writer")
    for node in nodes:
        assert any("get --raw=/readyz" in c for c in node.calls()), node.calls()
        assert not (node.root / "etc/kubernetes/manifests-parked/kube-apiserver.yaml").exists()


def test_a_clusterconfiguration_kubeadm_refuses_is_put_back(tmp_path, cluster):
    (node,) = _nodes(tmp_path, cluster)[:1]
    before = (cluster / "ClusterConfiguration").read_text()
    (cluster / "kubeadm-refuses").write_text("")
    run = node.run(control_plane.render_kubeadm_config_sync(COMPONENTS))
    assert run.returncode != 0 and "the old document is back" in run.stderr
    assert (cluster / "ClusterConfiguration").read_text() == before
    # A document already as wanted (written by a run that stopped before its check) is still checked.
    (cluster / "kubeadm-refuses").unlink()
    _ok(node.run(control_plane.render_kubeadm_config_sync(COMPONENTS)))
    (cluster / "kubeadm-refuses").write_text("")
    again = node.run(control_plane.render_kubeadm_config_sync(COMPONENTS))
    assert again.returncode != 0 and "kubeadm cannot read the kubeadm-config ConfigMap" in again.stderr


def test_a_node_whose_files_are_missing_or_whose_kubeadm_fails_stops_with_the_reason(tmp_path, cluster):
    node = _nodes(tmp_path, cluster)[1]
    run = node.run(control_plane.render_control_plane_node(node.name, COMPONENTS, FILES))
    assert run.returncode != 0 and "control-plane-files step must run first" in run.stderr
    ring = "writer identity\ntarget identity\n"
    _ok(node.run(control_plane.render_control_plane_files(node.name, FILES), stdin=ring))
    (node.stubs / "kubeadm-fails").write_text("")
    run = node.run(control_plane.render_control_plane_node(node.name, COMPONENTS, FILES))
    assert run.returncode != 0 and "rolls a failed component back" in run.stderr and "rolling back" in run.stderr


def test_a_conflicting_write_during_the_rewrite_is_retried(tmp_path, cluster):
    nodes = _nodes(tmp_path, cluster)
    (cluster / "conflict-linux-prod").write_text("")
    _change_key(nodes, "key-initial")
    assert sum(1 for c in nodes[0].calls() if c == "kubectl replace -f - -o name") == 3
    assert len((cluster / "rewritten").read_text().splitlines()) == 3


def test_the_key_ring_is_refused_when_malformed(tmp_path, cluster):
    node = _nodes(tmp_path, cluster)[1]
    for ring in ("writer key-a abc\ntarget identity\n", "writer identity\n", "owner identity\ntarget identity\n",
                 "writer identity\ntarget key-$(id) " + "A" * 43 + "=\n"):
        run = node.run(control_plane.render_control_plane_files(node.name, FILES), stdin=ring)
        assert run.returncode != 0 and "key ring" in run.stderr, ring
        assert "A" * 43 not in run.stderr


def test_the_etcd_data_directory_is_handed_to_an_etcd_user(tmp_path, cluster):
    node = _nodes(tmp_path, cluster)[1]
    _ok(node.run(control_plane.render_control_plane_files(node.name, FILES), stdin="writer identity\ntarget identity\n"))
    calls = node.calls()
    assert "groupadd --system etcd" in calls
    assert any(c.startswith("useradd --system --no-create-home") and c.endswith("-g etcd etcd") for c in calls)
    assert f"chown etcd:etcd {node.root}/var/lib/etcd" in calls


def test_init_writes_the_files_and_the_first_key_and_a_control_plane_join_gets_them(tmp_path, cluster):
    """linux-init.sh on the first node, then linux-join-credentials.sh there and linux-join.sh on a new node: the new
    node's API server reads the same files and the same key (stubs: kubeadm init/join, cloud-init, kubectl)."""
    first, second = _nodes(tmp_path, cluster)[:2]
    for node in (first, second):
        for path in ("etc/kubernetes/admin.conf", "etc/kubernetes/manifests/kube-apiserver.yaml"):
            (node.root / path).unlink()
        (node.root / "var/lib/etcd").rmdir()
        (node.stubs / "kubeadm").write_text(BOOTSTRAP_KUBEADM)
        (node.stubs / "cloud-init").write_text("#!/usr/bin/env bash\n")
        (node.stubs / "cloud-init").chmod(0o755)
        (node.stubs / "kubectl").write_text("#!/usr/bin/env bash\necho ok\n")
        (node.root / "var/lib/cloud/instance").mkdir(parents=True)
        (node.root / "var/lib/cloud/instance/boot-finished").touch()
    init = _ok(first.run(linux_bootstrap.render_init(INIT_YAML, None, FILES, "key-initial")))
    assert "kubeadm init: done" in init.stdout
    assert first.encryption() == ("key-initial", {"key-initial", "identity"})
    for path, text in FILES.items():
        assert (first.root / path.lstrip("/")).read_text() == text.rstrip("\n") + "\n"
    credentials = _ok(first.run(linux_bootstrap.render_join_credentials(control_plane=True)))
    lines = credentials.stdout.splitlines()
    assert lines[0].startswith("kubeadm join ") and lines[1].startswith("writer key-initial ")
    assert lines[2].startswith("target key-initial ") and lines[3].startswith("files ")
    joined = _ok(second.run(linux_bootstrap.render_join(JOIN_YAML, True), stdin=credentials.stdout))
    assert "kubeadm join: done" in joined.stdout
    assert second.encryption() == first.encryption()
    for path, text in FILES.items():
        assert (second.root / path.lstrip("/")).read_text() == text.rstrip("\n") + "\n"
        assert (second.root / path.lstrip("/")).stat().st_mode & 0o777 == 0o600
    # The running API server read exactly these files (no restart by the control-plane step later).
    marker = (second.root / "etc/kubernetes/hardening/.running").read_text()
    assert marker == (first.root / "etc/kubernetes/hardening/.running").read_text()


BOOTSTRAP_KUBEADM = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'kubeadm %s\n' "$*" >>"$NODE_STUBS/calls"
root=$HYBRID_CLUSTER_TEST_ROOT
case "$1 $2" in
  "init --config") mkdir -p "$root/etc/kubernetes"; echo "apiVersion: v1" >"$root/etc/kubernetes/admin.conf" ;;
  "join --config") echo kubelet >"$root/etc/kubernetes/kubelet.conf" ;;
  "certs certificate-key") echo c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeebeef ;;
  "init phase") ;;
  "token create")
    echo "kubeadm join 10.30.30.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:$(printf 'ab%.0s' {1..32})" ;;
  *) echo "unexpected kubeadm $*" >&2; exit 2 ;;
esac
"""
INIT_YAML = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"
# A control-plane JoinConfiguration with the placeholders linux-join.sh fills from the join line.
JOIN_YAML = CONTROL_PLANE_JOIN_YAML


# --- the graph -----------------------------------------------------------------------------------------------

def _steps(recording: Recording) -> dict[str, object]:
    return {r.name: r for r in recording.by_type("command:remote:Command") if r.name.startswith("hk-prod-control-plane-")}


def test_the_steps_run_in_order_after_every_rolling_operation(hk_recording):
    hk = hk_recording
    steps = _steps(hk)
    keys, sync, rewrite = (steps[f"hk-prod-control-plane-{s}"] for s in ("encryption-keys", "kubeadm-config",
                                                                          "encryption-rewrite"))
    # After the upgrade's, the restarts' and the kubelets' last waves.
    for chain in ("upgrade", "restarts", "kubelet-config"):
        gates = sorted((r for r in hk.resources if r.name.startswith(f"hk-prod-{chain}--wave-")),
                       key=lambda r: int(r.name.rsplit("-", 1)[1]))
        assert gates[-1].urn in keys.dependencies, chain
    assert hk.named("hk-prod-kubeadm-init").urn in keys.dependencies
    files = [steps[f"hk-prod-control-plane-{n}-files"] for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")]
    assert all(keys.urn in f.dependencies for f in files)
    assert {f.urn for f in files} <= set(sync.dependencies)
    node_steps = [steps[f"hk-prod-control-plane-{n}"] for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")]
    writers = [steps[f"hk-prod-control-plane-{n}-encryption-writer"] for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")]
    chain = [sync, *node_steps, *writers, rewrite]
    for before, after in zip(chain, chain[1:], strict=False):
        assert before.urn in after.dependencies, (before.name, after.name)
    # The key ring reaches the steps as a secret; the key step's output is a secret and never an environment variable.
    assert "stdout" in keys.additional_secret_outputs and keys.inputs.get("addPreviousOutputInEnv") is False
    for step in (*files, *writers):
        assert type(step.inputs["stdin"]).__name__ == "Secret"
    # Each runs on create too (a cluster the previous release built meets them that way) and deletes nothing.
    for step in steps.values():
        assert step.inputs["create"] == step.inputs["update"] and not step.inputs.get("delete")


def test_the_steps_wait_for_a_certificate_renewal_round():
    """A renewal round restarts every control-plane component, node after node: no control-plane step of the same run
    may restart an API server before it has finished (nor share its parked manifests)."""
    values = hk_prod_values()
    values["cluster"]["certificateRenewal"] = "2027-10"
    run = run_program(raw_config(values), stack="hk-prod")
    keys = run.named("hk-prod-control-plane-encryption-keys")
    renewals = [run.named(f"hk-prod-kubeadm-{n}-certificate-renewal") for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")]
    assert renewals[-1].urn in keys.dependencies


def test_a_cluster_the_previous_release_built_gets_everything_on_its_next_up_without_replacing_anything():
    run = previous_release_run()
    assert not run.plan.errors
    # Nothing is replaced but the provider's credential (its own now, not admin.conf); the deletes are the pod that
    # copied the etcd snapshots off-site, which the control-plane nodes now do themselves, encrypted (their schedule
    # steps run again with the recipients' keys and credentials), and kubelet-csr-approver, whose work the
    # control-plane nodes now do too, after their approver is in place.
    assert run.plan.ops("replace") == ["hk-prod-kubeadm-kubeconfig"]
    deletes = run.plan.ops("delete")
    assert sorted(deletes) == ["hk-prod-backup-cronjob-velero-etcd-snapshots-offsite", "hk-prod-kubelet-csr-approver",
                               "hk-prod-kubelet-csr-approver-kubelet-csr-approver"]
    # The release before its component (its parent); the CronJob depends on neither (ScheduleDeletes layers).
    assert deletes.index("hk-prod-kubelet-csr-approver-kubelet-csr-approver") < deletes.index("hk-prod-kubelet-csr-approver")
    approvers = {f"hk-prod-kubelet-serving-approver-{n}" for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")}
    for node in ("hk-cp-1", "hk-cp-2", "hk-cp-3"):
        [step] = [s for s in run.plan.steps if s.name == f"hk-prod-etcd-backup-{node}"]
        assert step.op == "update" and {"create", "update", "stdin"} <= set(step.why)
    created = set(run.plan.ops("create"))
    assert {f"hk-prod-control-plane-{s}" for s in ("encryption-keys", "kubeadm-config", "encryption-rewrite")} <= created
    # The kubelet steps keep their place (aliases of their former names) and run again with the new settings.
    assert all(run.plan.of(f"hk-prod-kubelet-config-{n}") == ["update"]
               for n in ("hk-cp-1", "hk-lnx-1", "hk-win-1"))
    assert run.plan.of("hk-prod-kubeadm-kubelet-config") == ["update"]
    # No machine changes; each Linux node's host key is read once, and every command that dials is pinned from then
    # on (an update that finds its work done: docs/lifecycle.md, "Rotating credentials"), the upgrade and restart
    # steps only for that (a restart's drain carries its restart's connection digest). Of the Kubernetes objects
    # only the network and admission policies are new, and none that was there changes.
    changed = run.plan.changed
    assert not [r for r in run.resources if r.name in changed and r.type == "proxmoxve:index/vmLegacy:VmLegacy"]
    linux = ("cp-1", "cp-2", "cp-3", "lnx-1", "lnx-2", "lnx-3", "lnx-4")
    assert {n for n in created if n.endswith("-host-key")} == {f"hk-prod-hk-{n}-host-key" for n in linux}
    for step in run.plan.steps:
        if step.op == "update" and step.type == "command:remote:Command" and \
                "connection" not in run.named(step.name).ignore_changes:
            assert "connection.hostKey" in step.why, step
            if "-upgrade-" in step.name or "-restarts-" in step.name:
                # A Windows node's steps on its host also sign in with its own password now (stdin: render/hyperv.py).
                why = set(step.why) - ({"stdin"} if "-win-" in step.name else set())
                # A Linux node's upgrade step carries the runtime downloads' pinned SHA-256 now (config/compat.py
                # DOWNLOADS): it runs again and finds the node at its versions, with no drain.
                reruns = "-drain-for-restart" in step.name or (step.name.endswith("-node-upgrade") and "-win-" not in step.name)
                # A Windows node's runtime step waits for containerd's CRI now (#39 item 8): it runs again and finds
                # the node at its version, stopping nothing.
                reruns = reruns or step.name.endswith("-runtime-upgrade")
                assert why == {"connection.hostKey", *(["update"] if reruns else [])}, step
    kubernetes = {r.name for r in run.resources if r.name in changed and r.type.startswith("kubernetes:")}
    policies = {n for n in kubernetes if n.startswith(("hk-prod-network-policy-", "hk-prod-admission-"))}
    assert policies and policies <= created
    # Fluent Bit's configuration takes the audit log's input (observability.logs is on); the serving certificate
    # approver's identity gets its role (the approver itself runs on each control-plane node, before the old one goes).
    assert approvers <= created and {"hk-prod-kubelet-serving-approver-role",
                                     "hk-prod-kubelet-serving-approver-binding"} <= created
    steps = [s.name for s in run.plan.steps if s.op != "same"]
    assert max(steps.index(n) for n in approvers) < steps.index("hk-prod-kubelet-csr-approver-kubelet-csr-approver")
    # Each site's keys move to their own Secret: the chart's keeps this site's, the off-site location reads the other
    # site's from a new one (and no pod copies the etcd snapshots with them any more). cert-manager stops approving by
    # itself: approver-policy and its policies are new, and the issuer stays as it is.
    approval = {"hk-prod-tls-approver-policy", "hk-prod-tls-certificaterequestpolicy-hybrid-cluster-samples-gateway",
                "hk-prod-tls-clusterrole-hybrid-cluster-certificate-policies",
                "hk-prod-tls-clusterrolebinding-hybrid-cluster-certificate-policies"}
    assert approval <= created
    # New steps on the first control-plane node: the dry run through approver-policy's webhook, and the Velero repository
    # password (on a cluster whose repositories Velero made with its default, that step stops the run: docs/backup.md).
    assert {"hk-prod-tls-approver-policy-webhook", "hk-prod-backup-repository-password"} <= created
    # Windows nodes leave the one password they shared for their own: each guest-password step runs first with the
    # shared one among those a guest may still have, and each Hyper-V host gets the first-boot tool new VMs need.
    from render.hyperv import node_admin_password
    shared = placeholder_secrets()["windowsAdminPassword"]
    for node in ("hk-win-1", "hk-win-2", "hk-win-3"):
        step = run.named(f"hk-prod-{node}-guest-password")
        assert run.plan.of(step.name) == ["update"]
        assert step.inputs["stdin"].value == (f"{node_admin_password(NEW_WINDOWS_SECRET, node, 1)}\n"
                                              f"{node_admin_password(shared, node, 1)}\n{shared}\n")
        assert NEW_WINDOWS_SECRET + "\n" not in step.inputs["stdin"].value     # the secret itself stays here
    assert {n for n in created if n.endswith("-first-boot-tool")} == {
        r.name for r in run.resources if r.name.endswith("-first-boot-tool")} != set()
    assert kubernetes - policies - approval == {
        "hk-prod-observability-fluent-bit", "hk-prod-kubelet-serving-approver-role",
        "hk-prod-kubelet-serving-approver-binding",
        "hk-prod-backup-secret-velero-velero-credentials", "hk-prod-backup-secret-velero-velero-credentials-offsite",
        "hk-prod-backup-backupstoragelocation-velero-offsite", "hk-prod-tls-cert-manager",
        # hk-prod's object stores are private names: this release wants their CA (config/rules.py
        # private_endpoints_have_a_ca), which the stack now gives: Velero's locations check it.
        "hk-prod-backup-backupstoragelocation-velero-primary", "hk-prod-backup-secret-velero-velero-store-ca",
        # Prometheus's metrics move from its pod's emptyDir to a Longhorn volume (hk-prod has Longhorn).
        "hk-prod-observability-kube-prometheus-stack",
        # Cluster DNS and the Gateway's proxies get their disruption budgets (and the proxies their spread).
        "hk-prod-network-poddisruptionbudget-kube-system-coredns", "hk-prod-samples-envoyproxy-envoy-gateway-system-hybrid-samples",
        # The CSI charts come from their released archives at a commit instead of a branch's index: same versions.
        "hk-prod-storage-csi-driver-nfs", "hk-prod-storage-csi-driver-smb",
        # The schedules leave out the platform's namespaces, Velero's own included.
        "hk-prod-backup-schedule-velero-daily-offsite", "hk-prod-backup-schedule-velero-daily-primary",
        # The collector's exporter under its type, otlp_grpc, not the deprecated alias.
        "hk-prod-tracing-opentelemetry-collector",
        # The samples' spread counts a Rollout's revisions on their own too (rollouts-pod-template-hash).
        "hk-prod-samples-deployment-win-prod-api-win", "hk-prod-samples-deployment-linux-prod-api-linux",
        # velero-plugin-for-aws v1.14.2, the newest patch of the line for Velero 1.18.
        "hk-prod-backup-velero",
        # The cluster services on the Linux workers: two replicas, a spread and a budget each (#39 item 4).
        "hk-prod-metrics-server-metrics-server", "hk-prod-samples-envoy-gateway",
        "hk-prod-custom-metrics-keda", "hk-prod-policy-gatekeeper",
        "hk-prod-tls-poddisruptionbudget-cert-manager-cert-manager-approver-policy",
        "hk-prod-custom-metrics-poddisruptionbudget-keda-keda-operator",
        "hk-prod-custom-metrics-poddisruptionbudget-keda-keda-operator-metrics-apiserver",
        "hk-prod-custom-metrics-poddisruptionbudget-keda-keda-admission-webhooks",
        # The ScaledObject no longer adopts an HPA (transfer-hpa-ownership): the switch deletes first now.
        "hk-prod-samples-scaledobject-linux-prod-api-linux",
        # Loki streams carry the cluster's name (the Linux release's values above, and the Windows agent's).
        "hk-prod-observability-configmap-logging-fluent-bit-windows",
        "hk-prod-observability-daemonset-logging-fluent-bit-windows-win2022",
        # The Windows nodes dashboard shows the viewer's time ("browser"), not UTC.
        "hk-prod-observability-configmap-monitoring-grafana-dashboard-windows-nodes"}
    assert run.plan.of("hk-prod-tls-cert-manager") == ["update"]
    for csi in ("nfs", "smb"):
        step = next(s for s in run.plan.steps if s.name == f"hk-prod-storage-csi-driver-{csi}")
        assert step.op == "update" and set(step.why) <= {"chart", "repositoryOpts"}, step
    assert run.plan.of("hk-prod-tls-clusterissuer-hybrid-cluster") == ["same"]
    assert run.plan.of("hk-prod-backup-secret-velero-velero-credentials-offsite") == ["create"]
    assert run.plan.of("hk-prod-observability-fluent-bit") == ["update"]


def test_a_change_of_key_runs_every_step_that_reads_the_key_ring_in_order(hk_recording):
    """A new key changes the key ring (the encryption-keys step's stdout), which every files, node and writer step and
    the rewrite read on stdin: each runs again, the node steps included, so every API server reads the new key
    (restarted) before the first writes with it. In a preview the ring is unknown, so the preview shows each of them
    as an update."""
    values = hk_prod_values()
    values["security"] = {"secretsEncryption": {"keyRotation": "2027-01"}}
    for preview in (True, False):
        run = run_program(raw_config(values), stack="hk-prod", state=hk_recording.state, preview=preview)
        nodes = ("hk-cp-1", "hk-cp-2", "hk-cp-3")
        expected = ["hk-prod-control-plane-encryption-keys",
                    *(f"hk-prod-control-plane-{n}-files" for n in nodes), *(f"hk-prod-control-plane-{n}" for n in nodes),
                    *(f"hk-prod-control-plane-{n}-encryption-writer" for n in nodes),
                    "hk-prod-control-plane-encryption-rewrite"]
        # The machines guard records the key (it refuses a change of key in a run that removes a control-plane node).
        assert run.plan.changed == {*expected, "hk-prod-machines"}, sorted(run.plan.changed ^ {*expected, "hk-prod-machines"})
        # The key ring is read again by a replacement (its trigger, the script naming the new key), with the current
        # connection; the old command is dropped at the end of the run and runs nothing.
        assert run.plan.of(expected[0]) == ["replace", "delete-replaced"]
        assert all(run.plan.of(n) == ["update"] for n in expected[1:])
        order = [s.name for s in run.plan.steps if s.op in ("update", "replace") and s.name != "hk-prod-machines"]
        # Each node's files before any node step, each node step before any writer, the rewrite last.
        files_done = max(order.index(f"hk-prod-control-plane-{n}-files") for n in nodes)
        first_node = min(order.index(f"hk-prod-control-plane-{n}") for n in nodes)
        last_node = max(order.index(f"hk-prod-control-plane-{n}") for n in nodes)
        first_writer = min(order.index(f"hk-prod-control-plane-{n}-encryption-writer") for n in nodes)
        assert order[0] == "hk-prod-control-plane-encryption-keys"
        assert files_done < first_node and last_node < first_writer
        assert order[-1] == "hk-prod-control-plane-encryption-rewrite"
