"""The approver of kubelet serving certificates (render/serving_approver.py): its program run against requests made by
the real openssl (each case the approver must approve or leave pending) with a stub kubectl and a scratch cluster CA,
its identity, its install and remove scripts, its role, and its place in the graph."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from render import serving_approver
from render.shell import script_from_bash_command
from tests.conftest import hk_prod_values, raw_config
from tests.validators import bash_input, shellcheck, systemd_stub_env
from tools.mockrun import run_program

SERVER = "https://10.10.10.10:6443"
INVENTORY = (("hk-cp-1", "10.10.10.11"), ("hk-lnx-1", "10.30.30.21"), ("hk-lnx-2", "10.30.30.22"),
             ("hk-win-1", "10.30.30.41"))
API_VIP = "10.10.10.10"
SERVING = ["digital signature", "server auth"]


@pytest.mark.parametrize("script", [serving_approver.program(), serving_approver.render_install(INVENTORY),
                                    serving_approver.render_remove()], ids=["program", "install", "remove"])
def test_scripts_pass_shellcheck(script, tmp_path):
    path = tmp_path / "script.sh"
    path.write_text(script if script.startswith("#!") else "#!/usr/bin/env bash\n" + script)
    shellcheck(path)


# --- requests as a kubelet (or an impostor) makes them ------------------------------------------------------------

def _openssl(*args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["openssl", *args], input=stdin, capture_output=True, check=True).stdout


def make_request(directory: Path, subject: str, names: str | None, rsa: bool = False) -> str:
    """A PKCS#10 request as PEM, made by openssl: ``subject`` in openssl's /O=.../CN=... form, ``names`` the
    subjectAltName extension's value (None: no extension)."""
    key = ["-newkey", "rsa:2048"] if rsa else ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    extension = ["-addext", f"subjectAltName={names}"] if names else []
    return _openssl("req", "-new", *key, "-nodes", "-keyout", str(directory / "key.pem"), "-subj", subject,
                    *extension).decode()


@dataclass
class Request:
    """A CertificateSigningRequest as the API server holds it."""
    name: str
    username: str
    pem: str
    usages: list[str] = field(default_factory=lambda: list(SERVING))
    groups: list[str] = field(default_factory=lambda: ["system:nodes", "system:authenticated"])
    signer: str = serving_approver.SIGNER
    conditions: list[str] = field(default_factory=list)
    uid: str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
    resource_version: str = "4711"

    def object(self) -> dict:
        status = {"conditions": [{"type": c, "status": "True"} for c in self.conditions]} if self.conditions else {}
        return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                "metadata": {"name": self.name, "uid": self.uid, "resourceVersion": self.resource_version},
                "spec": {"signerName": self.signer, "username": self.username, "groups": self.groups,
                         "usages": self.usages, "request": base64.b64encode(self.pem.encode()).decode()},
                "status": status}


def listing_line(obj: dict) -> str:
    """What the program's go-template prints for one request (test_the_template_prints_what_the_stub_lists holds
    this against the real kubectl)."""
    spec, meta = obj["spec"], obj["metadata"]
    fields = [meta["name"], meta["uid"], meta["resourceVersion"], spec["signerName"], spec["username"],
              "".join(g + "\x1e" for g in spec.get("groups", [])), "".join(u + "\x1e" for u in spec.get("usages", [])),
              "".join(c["type"] + "\x1e" for c in obj.get("status", {}).get("conditions", [])), spec["request"]]
    return "\x1f".join(fields) + "\n"


# --- the program, against a stub kubectl ---------------------------------------------------------------------------

STUB_KUBECTL = r"""#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$*" >>"$T/kubectl.calls"
if [[ -n ${REAL_KUBECTL:-} && " $* " == *" config "* ]]; then
  exec "$REAL_KUBECTL" "$@"
fi
case "$*" in
  *"config view"*) printf '%s' "$SERVER" ;;
  *"config --kubeconfig"*)
    # kubectl config set-*/use-context: the kubeconfig named, the arguments as its content; the embedded
    # certificate kept aside for the test.
    printf '%s\n' "$*" >>"$3"
    for arg in "$@"; do
      [[ $arg != --client-certificate=* ]] || cp "${arg#*=}" "$T/embedded.crt"
    done
    ;;
  *"get certificatesigningrequests"*) cat "$T/requests" ;;
  *"replace --raw"*)
    [[ -z ${FAIL_APPROVE:-} ]] || { echo "Error from server ($FAIL_APPROVE): nope" >&2; exit 1; }
    file="${*: -1}"
    cp "$file" "$T/approval-$(ls "$T" | grep -c '^approval-')"
    ;;
  *) echo "unexpected kubectl $*" >&2; exit 2 ;;
esac
"""


@dataclass
class Node:
    """A scratch control-plane node: the cluster CA, the approver's directory with its inventory, a stub kubectl."""
    root: Path
    env: dict[str, str]
    program: Path

    @property
    def config(self) -> Path:
        return self.root / "config"

    def run(self, requests: list[Request], **env: str) -> subprocess.CompletedProcess[str]:
        (self.root / "requests").write_text("".join(listing_line(r.object()) for r in requests))
        for old in self.root.glob("approval-*"):
            old.unlink()
        return subprocess.run(["bash", str(self.program)], env={**self.env, **env}, capture_output=True, text=True)

    def approvals(self) -> list[dict]:
        return [json.loads(p.read_text()) for p in sorted(self.root.glob("approval-*"))]


@pytest.fixture
def node(tmp_path) -> Node:
    pki, config, stubs = tmp_path / "pki", tmp_path / "config", tmp_path / "stubs"
    for directory in (pki, config, stubs):
        directory.mkdir()
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
             str(pki / "ca.key"), "-out", str(pki / "ca.crt"), "-subj", "/CN=kubernetes", "-days", "3650")
    (config / "nodes").write_text(serving_approver.inventory(INVENTORY))
    (stubs / "kubectl").write_text(STUB_KUBECTL)
    (stubs / "kubectl").chmod(0o755)
    program = tmp_path / "approver.sh"
    program.write_text(serving_approver.program(config_dir=str(config), pki_dir=str(pki),
                                                admin_conf=str(tmp_path / "admin.conf")))
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "T": str(tmp_path), "SERVER": SERVER}
    return Node(tmp_path, env, program)


def _node_request(tmp_path: Path, node: str, names: str | None, **kwargs) -> Request:
    pem = make_request(tmp_path, f"/O=system:nodes/CN=system:node:{node}", names)
    return Request(name=f"csr-{node}", username=f"system:node:{node}", pem=pem, **kwargs)


def test_a_nodes_request_for_its_own_name_and_address_is_approved_as_read(node, tmp_path):
    requests = [_node_request(tmp_path, "hk-lnx-1", "DNS:hk-lnx-1,IP:10.30.30.21"),
                # Only the address, only the name, and the Windows node: each its own.
                dataclass_replace(_node_request(tmp_path, "hk-lnx-2", "IP:10.30.30.22"), name="csr-ip-only"),
                dataclass_replace(_node_request(tmp_path, "hk-lnx-2", "DNS:hk-lnx-2"), name="csr-dns-only"),
                _node_request(tmp_path, "hk-win-1", "DNS:hk-win-1,IP:10.30.30.41")]
    run = node.run(requests)
    assert run.returncode == 0, run.stderr
    approvals = node.approvals()
    assert [a["metadata"]["name"] for a in approvals] == ["csr-hk-lnx-1", "csr-ip-only", "csr-dns-only", "csr-hk-win-1"]
    for approval in approvals:
        # The request read, by uid and resourceVersion; only an Approved condition, no spec.
        assert approval["metadata"]["uid"] == Request.uid and approval["metadata"]["resourceVersion"] == "4711"
        assert "spec" not in approval
        assert [(c["type"], c["status"]) for c in approval["status"]["conditions"]] == [("Approved", "True")]
    calls = (node.root / "kubectl.calls").read_text().splitlines()
    puts = [c for c in calls if "replace --raw" in c]
    assert puts[0] == (f"--kubeconfig {node.config}/kubeconfig replace --raw "
                       f"/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-hk-lnx-1/approval -f "
                       f"{puts[0].rsplit(' ', 1)[1]}")
    assert f"--kubeconfig {node.config}/kubeconfig get certificatesigningrequests --field-selector " \
           f"spec.signerName={serving_approver.SIGNER} -o go-template=" in "\n".join(calls)
    assert "csr-hk-lnx-1: approved for hk-lnx-1 (DNS:hk-lnx-1, IP Address:10.30.30.21)" in run.stdout


def dataclass_replace(request: Request, **changes) -> Request:
    import dataclasses
    return dataclasses.replace(request, **changes)


IMPOSTORS = {
    # name: (how the request is made, what the log says)
    "another-nodes-address": (lambda d: _node_request(d, "hk-lnx-1", "DNS:hk-lnx-1,IP:10.30.30.22"),
                              "names are not exactly hk-lnx-1 and 10.30.30.21"),
    "the-api-vip": (lambda d: _node_request(d, "hk-cp-1", f"DNS:hk-cp-1,IP:10.10.10.11,IP:{API_VIP}"),
                    "names are not exactly"),
    "a-load-balancer-address": (lambda d: _node_request(d, "hk-lnx-1", "IP:10.30.30.200"), "names are not exactly"),
    "another-nodes-name": (lambda d: _node_request(d, "hk-lnx-1", "DNS:hk-lnx-1,DNS:hk-lnx-2,IP:10.30.30.21"),
                           "names are not exactly"),
    "a-name-beginning-with-its-own": (lambda d: _node_request(d, "hk-lnx-1", "DNS:hk-lnx-10,IP:10.30.30.21"),
                                      "names are not exactly"),
    "a-wildcard": (lambda d: _node_request(d, "hk-lnx-1", "DNS:*.hk-lnx-1"), "names are not exactly"),
    "an-e-mail-address": (lambda d: _node_request(d, "hk-lnx-1", "DNS:hk-lnx-1,email:ops@example.com"),
                          "names are not exactly"),
    "a-uri": (lambda d: _node_request(d, "hk-lnx-1", "IP:10.30.30.21,URI:spiffe://cluster/ns/x"),
              "names are not exactly"),
    "no-names": (lambda d: _node_request(d, "hk-lnx-1", None), "names are not exactly"),
    "an-ipv6-address": (lambda d: _node_request(d, "hk-lnx-1", "IP:10.30.30.21,IP:fd00::21"),
                        "names are not exactly"),
    "another-nodes-subject": (lambda d: dataclass_replace(_node_request(d, "hk-lnx-2", "DNS:hk-lnx-2,IP:10.30.30.22"),
                                                          username="system:node:hk-lnx-1"),
                              "its subject is CN=system:node:hk-lnx-2,O=system:nodes, not CN=system:node:hk-lnx-1"),
    "an-extra-subject-field": (lambda d: Request("csr-x", "system:node:hk-lnx-1", make_request(
        d, "/O=system:nodes/OU=x/CN=system:node:hk-lnx-1", "DNS:hk-lnx-1")), "its subject is"),
    "not-a-node": (lambda d: dataclass_replace(_node_request(d, "hk-lnx-1", "DNS:hk-lnx-1"),
                                               username="system:serviceaccount:default:x"), "not by a node"),
    "a-node-outside-the-inventory": (lambda d: _node_request(d, "hk-lnx-9", "DNS:hk-lnx-9,IP:10.30.30.29"),
                                     "hk-lnx-9 is not a node of the inventory"),
    "not-in-system-nodes": (lambda d: dataclass_replace(_node_request(d, "hk-lnx-1", "DNS:hk-lnx-1"),
                                                        groups=["system:authenticated", "x,system:nodes"]),
                            "not in the group system:nodes"),
    "client-auth": (lambda d: dataclass_replace(_node_request(d, "hk-lnx-1", "DNS:hk-lnx-1"),
                                                usages=[*SERVING, "client auth"]), "are not a kubelet serving"),
    "server-auth-alone": (lambda d: dataclass_replace(_node_request(d, "hk-lnx-1", "DNS:hk-lnx-1"),
                                                      usages=["server auth"]), "are not a kubelet serving"),
    "not-a-request": (lambda d: Request("csr-x", "system:node:hk-lnx-1", "not a request"), "does not parse"),
    "an-odd-uid": (lambda d: dataclass_replace(_node_request(d, "hk-lnx-1", "DNS:hk-lnx-1"), uid='x","y'),
                   "name, uid or resourceVersion"),
}


@pytest.mark.parametrize("case", sorted(IMPOSTORS))
def test_any_other_request_is_left_pending_and_the_log_says_why(node, tmp_path, case):
    make, why = IMPOSTORS[case]
    request = make(tmp_path)
    run = node.run([request])
    assert run.returncode == 0, run.stderr
    assert node.approvals() == []
    assert f"{request.name}: left pending: " in run.stdout and why in run.stdout, run.stdout


def test_an_rsa_request_with_key_encipherment_is_approved(node, tmp_path):
    pem = make_request(tmp_path, "/O=system:nodes/CN=system:node:hk-lnx-1", "DNS:hk-lnx-1,IP:10.30.30.21", rsa=True)
    request = Request("csr-rsa", "system:node:hk-lnx-1", pem, usages=["key encipherment", *SERVING])
    assert node.run([request]).returncode == 0 and len(node.approvals()) == 1


def test_decided_requests_and_other_signers_are_not_touched(node, tmp_path):
    good = _node_request(tmp_path, "hk-lnx-1", "DNS:hk-lnx-1,IP:10.30.30.21")
    run = node.run([dataclass_replace(good, conditions=["Approved"]), dataclass_replace(good, conditions=["Denied"]),
                    dataclass_replace(good, signer="kubernetes.io/kube-apiserver-client-kubelet")])
    assert run.returncode == 0 and node.approvals() == [] and "left pending" not in run.stdout


def test_a_conflict_is_left_to_the_next_run_and_any_other_failure_fails_the_run(node, tmp_path):
    good = _node_request(tmp_path, "hk-lnx-1", "DNS:hk-lnx-1,IP:10.30.30.21")
    conflict = node.run([good], FAIL_APPROVE="Conflict")
    assert conflict.returncode == 0 and "the next run reads it again" in conflict.stdout
    forbidden = node.run([good, dataclass_replace(good, name="csr-second")], FAIL_APPROVE="Forbidden")
    assert forbidden.returncode == 1
    # Both were tried: one failure does not stop the others.
    assert forbidden.stderr.count("could not approve for hk-lnx-1") == 2


def test_no_inventory_fails_the_run(node):
    (node.config / "nodes").unlink()
    run = node.run([])
    assert run.returncode == 1 and "no node inventory" in run.stderr


# --- its identity ---------------------------------------------------------------------------------------------------

def _certificate_text(path: Path) -> str:
    return _openssl("x509", "-in", str(path), "-noout", "-text", "-nameopt", "RFC2253").decode()


def test_the_identity_is_a_client_certificate_from_the_cluster_ca_renewed_before_its_end(node):
    assert node.run([]).returncode == 0
    certificate, kubeconfig = node.config / "client.crt", node.config / "kubeconfig"
    text = _certificate_text(certificate)
    assert f"Subject: CN={serving_approver.IDENTITY}" in text
    assert "TLS Web Client Authentication" in text and "CA:FALSE" in text and "Server Authentication" not in text
    verify = subprocess.run(["openssl", "verify", "-CAfile", str(node.root / "pki" / "ca.crt"), str(certificate)],
                            capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # Valid for the year, and not before the renewal margin.
    assert subprocess.run(["openssl", "x509", "-in", str(certificate), "-noout", "-checkend",
                           str((serving_approver.VALIDITY_DAYS - 1) * 86400)]).returncode == 0
    # kubectl wrote the kubeconfig with the API server admin.conf names, the cluster CA and the key pair embedded.
    config = kubeconfig.read_text().splitlines()
    pki = node.root / "pki"
    assert config[0] == (f"config --kubeconfig {config[0].split()[2]} set-cluster cluster --server={SERVER} "
                         f"--certificate-authority={pki}/ca.crt --embed-certs=true")
    assert re.fullmatch(r"config --kubeconfig \S+ set-credentials approver --client-certificate=\S+/client.crt "
                        r"--client-key=\S+/client.key --embed-certs=true", config[1])
    assert config[2:] == [f"config --kubeconfig {config[0].split()[2]} set-context approver --cluster=cluster "
                          "--user=approver", f"config --kubeconfig {config[0].split()[2]} use-context approver"]
    assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
    assert (node.root / "embedded.crt").read_text() == certificate.read_text()
    # The next run keeps it.
    before = certificate.read_bytes()
    assert node.run([]).returncode == 0 and certificate.read_bytes() == before
    # Within RENEW_DAYS of its end, a new one.
    short = node.root / "short.crt"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
             str(node.root / "short.key"), "-out", str(short), "-subj", "/CN=old", "-days", "10")
    shutil.copy(short, certificate)
    run = node.run([])
    assert run.returncode == 0 and "issued this approver's identity" in run.stdout
    assert f"CN={serving_approver.IDENTITY}" in _certificate_text(certificate)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (CI has none; see docs/testing.md)")
def test_the_real_kubectl_writes_the_identitys_kubeconfig(node):
    admin = node.root / "admin.conf"
    subprocess.run(["kubectl", "config", "--kubeconfig", str(admin), "set-cluster", "kubernetes", f"--server={SERVER}"],
                   check=True, capture_output=True)
    env = {"REAL_KUBECTL": shutil.which("kubectl") or ""}
    assert node.run([], **env).returncode == 0
    kubeconfig = str(node.config / "kubeconfig")
    view = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "config", "view", "--raw", "-o", "json"],
                          check=True, capture_output=True, text=True)
    config = json.loads(view.stdout)
    assert config["current-context"] == "approver" and config["clusters"][0]["cluster"]["server"] == SERVER
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    assert base64.b64decode(cluster["certificate-authority-data"]) == (node.root / "pki" / "ca.crt").read_bytes()
    assert base64.b64decode(user["client-certificate-data"]) == (node.config / "client.crt").read_bytes()
    key = subprocess.run(["openssl", "pkey", "-pubout"], input=base64.b64decode(user["client-key-data"]),
                         capture_output=True, check=True).stdout
    assert key == _openssl("x509", "-in", str(node.config / "client.crt"), "-noout", "-pubkey")


def test_the_role_reads_requests_and_approves_only_for_the_kubelet_serving_signer():
    import kubernetes_validate
    role, binding = serving_approver.rbac_objects()
    for obj in (role, binding):
        kubernetes_validate.validate(obj, "1.36.0", strict=True)
    rules = {(tuple(r["resources"]), tuple(r.get("resourceNames", ()))): set(r["verbs"]) for r in role["rules"]}
    assert rules == {(("certificatesigningrequests",), ()): {"get", "list", "watch"},
                     (("certificatesigningrequests/approval",), ()): {"update"},
                     (("signers",), (serving_approver.SIGNER,)): {"approve"}}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                    "name": serving_approver.IDENTITY}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (CI has none; see docs/testing.md)")
def test_the_template_prints_what_the_stub_lists(tmp_path):
    """The program's go-template, per request, through the real kubectl (offline: `label --local` prints each object
    of a List through the template), against listing_line."""
    template = serving_approver.REQUESTS_TEMPLATE
    assert bash_input(serving_approver.program(), "TEMPLATE") == template
    assert template.startswith("{{range .items}}") and template.endswith("{{end}}")
    body = template.removeprefix("{{range .items}}").removesuffix("{{end}}")
    pem = make_request(tmp_path, "/O=system:nodes/CN=system:node:hk-lnx-1", "DNS:hk-lnx-1")
    objects = [Request("csr-a", "system:node:hk-lnx-1", pem).object(),
               Request("csr-b", "system:node:hk-lnx-1", pem, conditions=["Approved"]).object()]
    no_status = Request("csr-c", "system:node:hk-lnx-1", pem).object()
    del no_status["status"]
    objects.append(no_status)
    path = tmp_path / "list.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    printed = subprocess.run(["kubectl", "label", "--local", "-f", str(path), "x=y", "-o", f"go-template={body}"],
                             capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == "".join(listing_line(o) for o in objects)


# --- install and remove -----------------------------------------------------------------------------------------------

def test_install_writes_the_inventory_and_units_runs_once_and_remove_undoes_it(tmp_path):
    env, root = systemd_stub_env(tmp_path)
    install = serving_approver.render_install(INVENTORY)
    run = subprocess.run(["bash", "-c", install], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    config = root / serving_approver.CONFIG_DIR.lstrip("/")
    assert (config / "nodes").read_text() == serving_approver.inventory(INVENTORY)
    assert oct(config.stat().st_mode & 0o777) == "0o700" and oct((config / "nodes").stat().st_mode & 0o777) == "0o600"
    assert (root / serving_approver.PROGRAM.lstrip("/")).read_text() == serving_approver.program()
    timer = (root / serving_approver.SYSTEMD_DIR.lstrip("/") / serving_approver.TIMER).read_text()
    assert "OnBootSec=20s" in timer and "OnUnitActiveSec=20s" in timer and "AccuracySec=1s" in timer
    service = (root / serving_approver.SYSTEMD_DIR.lstrip("/") / serving_approver.SERVICE).read_text()
    assert f"ExecStart={serving_approver.PROGRAM}" in service and f"ReadWritePaths={serving_approver.CONFIG_DIR}" in service
    calls = (tmp_path / "systemctl").read_text().splitlines()
    assert calls == ["daemon-reload", f"enable --now {serving_approver.TIMER}", f"start {serving_approver.SERVICE}"]
    assert "kubelet serving approver: 4 nodes" in run.stdout
    # Its first run failing fails the step, with the journal.
    failed = subprocess.run(["bash", "-c", install], env={**env, "FAIL": "1"}, capture_output=True, text=True)
    assert failed.returncode == 1 and "journal" in failed.stderr and "first run" in failed.stderr
    removed = subprocess.run(["bash", "-c", serving_approver.render_remove()], env=env, capture_output=True, text=True)
    assert removed.returncode == 0, removed.stderr
    assert not config.exists() and not (root / serving_approver.PROGRAM.lstrip("/")).exists()
    assert f"disable --now {serving_approver.TIMER}" in (tmp_path / "systemctl").read_text()
    # Again: nothing left, nothing fails.
    assert subprocess.run(["bash", "-c", serving_approver.render_remove()], env=env).returncode == 0


# --- the graph ------------------------------------------------------------------------------------------------------

def test_every_control_plane_node_runs_it_after_the_role_with_the_stacks_nodes(hk_recording):
    spec_values = hk_prod_values()
    role = hk_recording.named("hk-prod-kubelet-serving-approver-binding")
    for node in ("hk-cp-1", "hk-cp-2", "hk-cp-3"):
        step = hk_recording.named(f"hk-prod-kubelet-serving-approver-{node}")
        install = script_from_bash_command(step.inputs["create"])
        assert step.inputs["update"] == step.inputs["create"]
        inventory = bash_input(install, "INVENTORY_TEXT").splitlines()
        nodes = [*spec_values["nodes"]["controlPlane"], *spec_values["nodes"]["linux"], *spec_values["nodes"]["windows"]]
        assert inventory == sorted(f"{n['name']} {n['ip']}" for n in nodes)
        assert "remove_timer" in script_from_bash_command(step.inputs["delete"])
        ready = "hk-prod-kubeadm-hk-cp-1-ready" if node == "hk-cp-1" else f"hk-prod-kubeadm-{node}-drain"
        assert {hk_recording.named(ready).urn, role.urn} <= set(step.dependencies)
    assert not [r for r in hk_recording.resources if r.name.startswith("hk-prod-kubelet-serving-approver-hk-lnx")]
    assert not [r for r in hk_recording.resources if "kubelet-csr-approver" in r.name]


def test_a_node_added_to_the_stack_updates_only_the_inventories():
    values = hk_prod_values()
    before = run_program(raw_config(values), stack="hk-prod")
    linux = values["nodes"]["linux"]
    linux.append({**linux[-1], "name": "hk-lnx-new", "ip": "10.30.30.99", "vmId": 399})
    after = run_program(raw_config(values), stack="hk-prod", state=before.state)
    assert not after.plan.errors, after.plan.errors
    approver = {r.name for r in after.resources if r.name.startswith("hk-prod-kubelet-serving-approver")}
    changed = {name for name in after.plan.changed if name in approver}
    assert changed == {f"hk-prod-kubelet-serving-approver-{n}" for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")}
    assert all(after.plan.of(name) == ["update"] for name in changed)
    step = after.named("hk-prod-kubelet-serving-approver-hk-cp-1")
    assert "hk-lnx-new 10.30.30.99" in bash_input(script_from_bash_command(step.inputs["create"]), "INVENTORY_TEXT")
