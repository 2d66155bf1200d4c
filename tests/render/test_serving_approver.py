"""The approver of kubelet serving certificates (render/serving_approver.py): its program run against requests made by
the real openssl (each case the approver must approve or leave pending) with a stub kubectl and a scratch cluster CA,
its identity, its install and remove scripts, its role, and its place in the graph."""
from __future__ import annotations

import base64
import dataclasses
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
from tools.mock.program import run_program

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


def make_request(directory: Path, subject: str, names: str | None) -> str:
    """A PKCS#10 request as PEM, made by openssl: ``subject`` in openssl's /O=.../CN=... form, ``names`` the
    subjectAltName extension's value (None: no extension)."""
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    extension = ["-addext", f"subjectAltName={names}"] if names else []
    return _openssl("req", "-new", *key, "-nodes", "-keyout", str(directory / "key.pem"), "-subj", subject,
                    *extension).decode()


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kubelet-serving-csr"


def _der(tag: int, content: bytes) -> bytes:
    """One DER element (X.690 8.1.3: the short length form below 128, the long one above)."""
    length = len(content)
    if length < 128:
        encoded = bytes([length])
    else:
        octets = length.to_bytes((length.bit_length() + 7) // 8, "big")
        encoded = bytes([0x80 | len(octets)]) + octets
    return bytes([tag]) + encoded + content


OID_O, OID_CN, OID_SAN = bytes.fromhex("55040a"), bytes.fromhex("550403"), bytes.fromhex("551d11")
OID_EXTENSION_REQUEST = bytes.fromhex("2a864886f70d01090e")
ECDSA_SHA256 = _der(0x30, _der(0x06, bytes.fromhex("2a8648ce3d040302")))


def request_info(spki: bytes, subject: list[tuple[bytes, int, str]], names: list[tuple[int, bytes]],
                 critical: bool = False) -> bytes:
    """A CertificationRequestInfo laid out as Go's CreateCertificateRequest lays it out (subject RDNs in order, one
    extensionRequest attribute with one subjectAltName extension); tests/fixtures/kubelet-serving-csr holds real Go
    output, which test_the_builder_writes_what_go_writes compares it with."""
    rdns = b"".join(_der(0x31, _der(0x30, _der(0x06, oid) + _der(tag, value.encode()))) for oid, tag, value in subject)
    san = _der(0x30, b"".join(_der(tag, value) for tag, value in names))
    extension = _der(0x30, _der(0x06, OID_SAN) + (_der(0x01, b"\xff") if critical else b"") + _der(0x04, san))
    attribute = _der(0xa0, _der(0x30, _der(0x06, OID_EXTENSION_REQUEST) + _der(0x31, _der(0x30, extension))))
    return _der(0x30, _der(0x02, b"\x00") + _der(0x30, rdns) + spki + attribute)


def kubelet_subject(node: str) -> list[tuple[bytes, int, str]]:
    return [(OID_O, 0x13, "system:nodes"), (OID_CN, 0x13, f"system:node:{node}")]


def kubelet_names(node: str | None, *addresses: str) -> list[tuple[int, bytes]]:
    return ([(0x82, node.encode())] if node else []) + [(0x87, bytes(int(x) for x in a.split("."))) for a in addresses]


def signed_request(directory: Path, info_of_spki) -> str:
    """A request whose CertificationRequestInfo is info_of_spki(its public key), signed by openssl with a new P-256
    key (ecdsa-with-SHA256, as Go signs with such a key)."""
    key = directory / "builder-key.pem"
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(key))
    spki = _openssl("pkey", "-in", str(key), "-pubout", "-outform", "DER")
    info = info_of_spki(spki)
    signature = _openssl("dgst", "-sha256", "-sign", str(key), stdin=info)
    der = _der(0x30, info + ECDSA_SHA256 + _der(0x03, b"\x00" + signature))
    body = base64.encodebytes(der).decode().replace("\n", "")
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN CERTIFICATE REQUEST-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE REQUEST-----\n"


def kubelet_request(directory: Path, node: str, *addresses: str, dns: bool = True) -> str:
    return signed_request(directory, lambda spki: request_info(spki, kubelet_subject(node),
                                                               kubelet_names(node if dns else None, *addresses)))


def _spki_and_info(pem: str) -> tuple[bytes, bytes]:
    """The public key (DER) and the CertificationRequestInfo (DER) of a PEM request, read by openssl."""
    der = base64.b64decode("".join(line for line in pem.splitlines() if not line.startswith("-----")))
    spki = _openssl("req", "-noout", "-pubkey", stdin=pem.encode())
    spki = _openssl("pkey", "-pubin", "-outform", "DER", stdin=spki)
    header = {0x81: 3, 0x82: 4}.get(der[1], 2)
    info_length = {0x81: 3, 0x82: 4}.get(der[header + 1], 2)
    size = der[header + info_length - 1] if info_length == 2 else int.from_bytes(der[header + 2:header + info_length], "big")
    return spki, der[header:header + info_length + size]


@pytest.mark.parametrize("fixture,node,addresses,dns", [
    ("hk-lnx-1.pem", "hk-lnx-1", ("10.30.30.21",), True), ("hk-lnx-1-dns-only.pem", "hk-lnx-1", (), True),
    ("hk-lnx-1-ip-only.pem", "hk-lnx-1", ("10.30.30.21",), False), ("hk-win-1.pem", "hk-win-1", ("10.30.30.41",), True),
    ("long-name.pem", "n23456789012345678901234567890123456789012345678901234567890123", ("10.30.30.99",), True)])
def test_the_builder_writes_what_go_writes(fixture, node, addresses, dns):
    spki, info = _spki_and_info((FIXTURES / fixture).read_text())
    assert request_info(spki, kubelet_subject(node), kubelet_names(node if dns else None, *addresses)) == info


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
    created: str = "2026-12-05T10:00:00Z"

    def object(self) -> dict:
        status = {"conditions": [{"type": c, "status": "True"} for c in self.conditions]} if self.conditions else {}
        return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                "metadata": {"name": self.name, "uid": self.uid, "resourceVersion": self.resource_version,
                             "creationTimestamp": self.created},
                "spec": {"signerName": self.signer, "username": self.username, "groups": self.groups,
                         "usages": self.usages, "request": base64.b64encode(self.pem.encode()).decode()},
                "status": status}


def go_quote(text: str) -> str:
    """Go's strconv.Quote (the template's printf "%q") for ASCII text: the escapes it writes for \\, ", the seven C
    escapes and any other control character."""
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
             "\\": "\\\\", '"': '\\"'}
    return '"' + "".join(named.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7f else c)
                         for c in text) + '"'


def listing_line(obj: dict) -> str:
    """What the program's go-template prints for one request (test_the_template_prints_what_the_stub_lists holds
    this against the real kubectl)."""
    spec, meta = obj["spec"], obj["metadata"]
    fields = [*(go_quote(v) for v in (meta["name"], meta["uid"], meta["resourceVersion"], meta["creationTimestamp"],
                                      spec["signerName"], spec["username"])),
              "".join(go_quote(g) + "\x1e" for g in spec.get("groups", [])),
              "".join(go_quote(u) + "\x1e" for u in spec.get("usages", [])),
              "".join(go_quote(c["type"]) + "\x1e" for c in obj.get("status", {}).get("conditions", [])),
              go_quote(spec["request"])]
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


def _node_request(tmp_path: Path, node: str, *addresses: str, dns: bool = True, **kwargs) -> Request:
    """What the kubelet of ``node`` asks for (Go's layout), with ``addresses`` as its IP names."""
    return Request(name=f"csr-{node}", username=f"system:node:{node}",
                   pem=kubelet_request(tmp_path, node, *addresses, dns=dns), **kwargs)


def _fixture(name: str, request: str, node: str) -> Request:
    return Request(name=request, username=f"system:node:{node}", pem=(FIXTURES / name).read_text())


def test_a_kubelets_request_for_its_own_name_and_address_is_approved_as_read(node, tmp_path):
    requests = [_fixture("hk-lnx-1.pem", "csr-hk-lnx-1", "hk-lnx-1"),
                # Only the name, only the address, the Windows node, and one made here in Go's layout: each its own.
                _fixture("hk-lnx-1-dns-only.pem", "csr-dns-only", "hk-lnx-1"),
                _fixture("hk-lnx-1-ip-only.pem", "csr-ip-only", "hk-lnx-1"),
                _fixture("hk-win-1.pem", "csr-hk-win-1", "hk-win-1"),
                _node_request(tmp_path, "hk-lnx-2", "10.30.30.22")]
    run = node.run(requests)
    assert run.returncode == 0, run.stderr
    approvals = node.approvals()
    assert [a["metadata"]["name"] for a in approvals] == ["csr-hk-lnx-1", "csr-dns-only", "csr-ip-only", "csr-hk-win-1",
                                                          "csr-hk-lnx-2"], run.stdout
    for approval in approvals:
        # The request read, by uid and resourceVersion; only an Approved condition, no spec.
        assert approval["metadata"]["uid"] == Request.uid and approval["metadata"]["resourceVersion"] == "4711"
        assert "spec" not in approval
        assert [(c["type"], c["status"]) for c in approval["status"]["conditions"]] == [("Approved", "True")]
    calls = (node.root / "kubectl.calls").read_text().splitlines()
    puts = [c for c in calls if "replace --raw" in c]
    assert puts[0] == (f"--kubeconfig {node.config}/kubeconfig --request-timeout=30s replace --raw "
                       f"/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-hk-lnx-1/approval -f "
                       f"{puts[0].rsplit(' ', 1)[1]}")
    assert f"--kubeconfig {node.config}/kubeconfig --request-timeout=30s get certificatesigningrequests " \
           f"--field-selector spec.signerName={serving_approver.SIGNER} -o go-template=" in "\n".join(calls)
    assert "csr-hk-lnx-1: approved for hk-lnx-1 (hk-lnx-1, 10.30.30.21)" in run.stdout


def test_the_longest_node_name_is_approved(node):
    """A node name of 63 characters, the most a DNS label has: the request's lengths take DER's long form."""
    long = "n23456789012345678901234567890123456789012345678901234567890123"
    assert len(long) == 63
    (node.config / "nodes").write_text(serving_approver.inventory((*INVENTORY, (long, "10.30.30.99"))))
    run = node.run([_fixture("long-name.pem", "csr-long", long)])
    assert run.returncode == 0 and [a["metadata"]["name"] for a in node.approvals()] == ["csr-long"], run.stdout


def _built(directory: Path, subject, names, username: str = "system:node:hk-lnx-1", critical: bool = False) -> Request:
    pem = signed_request(directory, lambda spki: request_info(spki, subject, names, critical=critical))
    return Request("csr-x", username, pem)


NOT_EXACT = "it is not the request a kubelet makes for hk-lnx-1"
LNX_1 = kubelet_subject("hk-lnx-1")
IMPOSTORS = {
    # name: (how the request is made, what the log says)
    "another-nodes-address": (lambda d: _node_request(d, "hk-lnx-1", "10.30.30.22"), NOT_EXACT),
    "the-api-vip": (lambda d: _node_request(d, "hk-cp-1", "10.10.10.11", API_VIP),
                    "it is not the request a kubelet makes for hk-cp-1"),
    "a-load-balancer-address": (lambda d: _node_request(d, "hk-lnx-1", "10.30.30.200", dns=False), NOT_EXACT),
    "its-address-and-another": (lambda d: _node_request(d, "hk-lnx-1", "10.30.30.21", "10.30.30.22"), NOT_EXACT),
    "another-nodes-name": (lambda d: _built(d, LNX_1, [*kubelet_names("hk-lnx-1"), (0x82, b"hk-lnx-2"),
                                                       *kubelet_names(None, "10.30.30.21")]), NOT_EXACT),
    "a-name-beginning-with-its-own": (lambda d: _built(d, LNX_1, kubelet_names("hk-lnx-10", "10.30.30.21")), NOT_EXACT),
    "a-wildcard": (lambda d: _built(d, LNX_1, [(0x82, b"*.hk-lnx-1")]), NOT_EXACT),
    "an-e-mail-address": (lambda d: _built(d, LNX_1, [*kubelet_names("hk-lnx-1", "10.30.30.21"),
                                                      (0x81, b"ops@example.com")]), NOT_EXACT),
    "a-uri": (lambda d: _built(d, LNX_1, [*kubelet_names("hk-lnx-1", "10.30.30.21"),
                                          (0x86, b"spiffe://cluster/ns/x")]), NOT_EXACT),
    "an-ipv6-address": (lambda d: _built(d, LNX_1, [*kubelet_names("hk-lnx-1", "10.30.30.21"),
                                                    (0x87, bytes.fromhex("fd00" + "0" * 26 + "21"))]), NOT_EXACT),
    "a-critical-extension": (lambda d: _built(d, LNX_1, kubelet_names("hk-lnx-1", "10.30.30.21"), critical=True),
                             NOT_EXACT),
    "an-extra-subject-field": (lambda d: _built(d, [LNX_1[0], (bytes.fromhex("55040b"), 0x13, "x"), LNX_1[1]],
                                                kubelet_names("hk-lnx-1", "10.30.30.21")), NOT_EXACT),
    "another-nodes-subject": (lambda d: dataclasses.replace(_node_request(d, "hk-lnx-2", "10.30.30.22"),
                                                          username="system:node:hk-lnx-1"), NOT_EXACT),
    # Right in what openssl prints, but not in Go's layout (UTF8String subject): refused, as anything unusual is.
    "an-openssl-request": (lambda d: Request("csr-x", "system:node:hk-lnx-1", make_request(
        d, "/O=system:nodes/CN=system:node:hk-lnx-1", "DNS:hk-lnx-1,IP:10.30.30.21")), NOT_EXACT),
    "no-names": (lambda d: Request("csr-x", "system:node:hk-lnx-1", make_request(
        d, "/O=system:nodes/CN=system:node:hk-lnx-1", None)), NOT_EXACT),
    # What an approver that read openssl's printout approved (tests/fixtures/kubelet-serving-csr/README.md).
    "a-name-with-a-newline": (lambda d: _fixture("newline.pem", "csr-x", "hk-lnx-1"), NOT_EXACT),
    "names-in-a-second-extension-request": (lambda d: _fixture("split.pem", "csr-x", "hk-lnx-1"), NOT_EXACT),
    "names-after-an-unprintable-attribute": (lambda d: _fixture("trunc.pem", "csr-x", "hk-lnx-1"), NOT_EXACT),
    "two-pem-blocks": (lambda d: Request("csr-x", "system:node:hk-lnx-1", (FIXTURES / "hk-lnx-1.pem").read_text()
                                         + (FIXTURES / "hk-win-1.pem").read_text()), "not one PEM certificate request"),
    "not-a-node": (lambda d: dataclasses.replace(_node_request(d, "hk-lnx-1", "10.30.30.21"),
                                               username="system:serviceaccount:default:x"), "not by a node"),
    "a-username-with-a-line-break": (lambda d: dataclasses.replace(_node_request(d, "hk-lnx-1", "10.30.30.21"),
                                                                 username="system:node:hk-lnx-1\nx"), "not by a node"),
    "a-node-outside-the-inventory": (lambda d: _node_request(d, "hk-lnx-9", "10.30.30.29"),
                                     "hk-lnx-9 is not a node of the inventory"),
    "not-in-system-nodes": (lambda d: dataclasses.replace(_node_request(d, "hk-lnx-1", "10.30.30.21"),
                                                        groups=["system:authenticated", "x\x1esystem:nodes"]),
                            "not in the group system:nodes"),
    "client-auth": (lambda d: dataclasses.replace(_node_request(d, "hk-lnx-1", "10.30.30.21"),
                                                usages=[*SERVING, "client auth"]), "are not a kubelet serving"),
    "server-auth-alone": (lambda d: dataclasses.replace(_node_request(d, "hk-lnx-1", "10.30.30.21"),
                                                      usages=["server auth"]), "are not a kubelet serving"),
    "not-a-request": (lambda d: Request("csr-x", "system:node:hk-lnx-1", "not a request"),
                      "not one PEM certificate request"),
    "a-request-that-does-not-parse": (lambda d: Request(
        "csr-x", "system:node:hk-lnx-1", "-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"),
        "does not parse"),
}


@pytest.mark.parametrize("case", sorted(IMPOSTORS))
def test_any_other_request_is_left_pending_and_the_log_says_why(node, tmp_path, case):
    make, why = IMPOSTORS[case]
    request = make(tmp_path)
    # Before a kubelet's own request, which is still approved: nothing about one request stops the run.
    good = _fixture("hk-win-1.pem", "csr-z-good", "hk-win-1")
    run = node.run([request, good])
    assert run.returncode == 0, run.stderr
    assert [a["metadata"]["name"] for a in node.approvals()] == ["csr-z-good"], run.stdout
    assert f"{request.name}: left pending: " in run.stdout and why in run.stdout, run.stdout


def test_an_odd_uid_is_passed_over_without_its_text(node, tmp_path):
    request = dataclasses.replace(_node_request(tmp_path, "hk-lnx-1", "10.30.30.21"), uid='x","y')
    run = node.run([request])
    assert run.returncode == 0 and node.approvals() == []
    assert "csr-hk-lnx-1: left pending: its uid is not what the API server writes" in run.stdout


def test_a_request_whose_name_carries_a_forged_line_approves_nothing(node, tmp_path):
    """A request's name may hold a line break (the API server checks little more than that it is a path segment): a
    node's second request named so that a raw listing would show a fake line for its first, whose names are another
    node's and the API VIP (an independent review's attack, 2026-12-05)."""
    target = Request("t-1", "system:node:hk-lnx-1", signed_request(tmp_path, lambda spki: request_info(
        spki, kubelet_subject("hk-lnx-1"), kubelet_names("hk-lnx-2", "10.30.30.22", API_VIP))),
        uid="11111111-2222-4333-8444-555555555555", resource_version="99")
    decoy = Request("t-1", "system:node:hk-lnx-1", kubelet_request(tmp_path, "hk-lnx-1", "10.30.30.21"),
                    uid=target.uid, resource_version=target.resource_version)
    fake_line = listing_line(decoy.object()).rstrip("\n")
    carrier = dataclasses.replace(_node_request(tmp_path, "hk-lnx-1", "10.30.30.21"), name=f"a\n{fake_line}\nb",
                                created="2026-12-05T11:00:00Z")
    run = node.run([target, carrier])
    assert run.returncode == 0, run.stderr
    assert node.approvals() == [], run.stdout
    assert "a request left pending: its name is not a DNS subdomain" in run.stdout
    assert "t-1: left pending: it is not the request a kubelet makes for hk-lnx-1" in run.stdout


def test_a_node_with_many_pending_requests_has_only_its_newest_read(node, tmp_path):
    """One node's requests by the thousand cannot hold up the others': each node's newest few are read per run."""
    own = [dataclasses.replace(_node_request(tmp_path, "hk-lnx-1", "10.30.30.22"), name=f"csr-old-{i}",
                             created=f"2026-12-05T09:0{i}:00Z") for i in range(5)]
    newest = dataclasses.replace(_node_request(tmp_path, "hk-lnx-1", "10.30.30.21"), name="csr-newest",
                               created="2026-12-05T12:00:00Z")
    other = _fixture("hk-win-1.pem", "csr-hk-win-1", "hk-win-1")
    run = node.run([*own, other, newest])
    assert run.returncode == 0, run.stderr
    assert [a["metadata"]["name"] for a in node.approvals()] == ["csr-newest", "csr-hk-win-1"], run.stdout
    assert run.stdout.count("left pending") == serving_approver.MAX_PER_NODE - 1
    assert f"hk-lnx-1 has 3 more pending requests than the newest {serving_approver.MAX_PER_NODE}" in run.stdout


def test_decided_requests_and_other_signers_are_not_touched(node, tmp_path):
    good = _fixture("hk-lnx-1.pem", "csr-hk-lnx-1", "hk-lnx-1")
    run = node.run([dataclasses.replace(good, conditions=["Approved"]), dataclasses.replace(good, conditions=["Denied"]),
                    dataclasses.replace(good, signer="kubernetes.io/kube-apiserver-client-kubelet")])
    assert run.returncode == 0 and node.approvals() == [] and "left pending" not in run.stdout


def test_a_conflict_is_left_to_the_next_run_and_any_other_failure_fails_the_run(node, tmp_path):
    good = _fixture("hk-lnx-1.pem", "csr-hk-lnx-1", "hk-lnx-1")
    conflict = node.run([good], FAIL_APPROVE="Conflict")
    assert conflict.returncode == 0 and "the next run reads it again" in conflict.stdout
    forbidden = node.run([good, dataclasses.replace(good, name="csr-second")], FAIL_APPROVE="Forbidden")
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
    # Another API server address in admin.conf, or another cluster CA: issued again for them.
    before = certificate.read_bytes()
    moved = node.run([], SERVER="https://10.10.10.20:6443")
    assert moved.returncode == 0 and "for https://10.10.10.20:6443 until" in moved.stdout
    assert (node.config / "issued-for").read_text().startswith("https://10.10.10.20:6443 ")
    assert certificate.read_bytes() != before
    assert node.run([], SERVER="https://10.10.10.20:6443").stdout.count("issued") == 0


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
    # What no node's credential can be called, but another authenticator's user may: quoted, on its one line.
    odd = Request("csr-d", "system:node:hk-lnx-1\nx\x1fy\"z\\", pem, groups=["system:nodes\x1e", "a\tb"]).object()
    objects.append(odd)
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
    # A hung API call cannot hold the unit for ever, and the program parses hostile input with no capability.
    assert "TimeoutStartSec=5min" in service and "\nCapabilityBoundingSet=\n" in service
    assert "ProtectSystem=strict" in service and "SystemCallFilter=@system-service" in service
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


def test_install_installs_openssl_where_the_image_lacks_it(tmp_path):
    """A RHEL-family image may come without openssl: the install step installs it with dnf (here a stub that puts a
    stand-in in place), and fails loudly when it cannot."""
    env, root = systemd_stub_env(tmp_path)
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "mkdir", "chmod", "cat", "cmp", "mv", "mktemp", "dirname", "rm"):
        (tools / tool).symlink_to(shutil.which(tool))
    stubs = Path(env["PATH"].split(":")[0])
    (stubs / "dnf").write_text('#!/usr/bin/env bash\necho "dnf $*" >>"$T/dnf"\n'
                               '[[ -z ${NO_PACKAGE:-} ]] || exit 1\n'
                               'printf "#!/bin/sh\\n" >"$T/stubs/openssl"; chmod +x "$T/stubs/openssl"\n')
    (stubs / "dnf").chmod(0o755)
    env = {**env, "PATH": f"{stubs}:{tools}"}
    failed = subprocess.run(["/bin/bash", "-c", serving_approver.render_install(INVENTORY)], env={**env, "NO_PACKAGE": "1"},
                            capture_output=True, text=True)
    assert failed.returncode == 1 and "openssl is not installed and could not be" in failed.stderr
    run = subprocess.run(["/bin/bash", "-c", serving_approver.render_install(INVENTORY)], env=env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "dnf").read_text().splitlines()[-1] == "dnf install -y openssl"
    assert (root / serving_approver.CONFIG_DIR.lstrip("/") / "nodes").exists()
