"""The Kubernetes provider's own credential (render/scripts/provider-credential.sh and -revoke.sh), run with the real
openssl against a scratch cluster CA and a stub kubectl: what it issues, binds, proves and prints, and how it fails."""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from render import linux_bootstrap as lb

SERVER = "https://10.30.30.10:6443"

STUB_KUBECTL = r"""#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$*" >>"$T/kubectl.calls"
case "$*" in
  "config view --raw -o jsonpath={.clusters[0].cluster.server}") printf '%s' "$SERVER" ;;
  "config --kubeconfig "*)
    # kubectl config set-*/use-context: the arguments as the kubeconfig's content; the certificate kept aside.
    printf '%s\n' "$*" >>"$3"
    for arg in "$@"; do
      [[ $arg != --client-certificate=* ]] || cp "${arg#*=}" "$T/embedded.crt"
    done ;;
  "create clusterrolebinding "*"--dry-run=client -o yaml")
    printf 'kind: ClusterRoleBinding\nname: %s\n%s\n%s\n' "$3" "$4" "$5" ;;
  "label --local -f - "*) cat; printf 'label: %s\n' "$5" ;;
  "apply --request-timeout=30s -f -") cat >>"$T/applied"; [[ -z ${FAIL_APPLY:-} ]] || exit 1 ;;
  "--kubeconfig "*" auth can-i * * --all-namespaces --request-timeout=30s")
    asked=$(($(cat "$T/asked" 2>/dev/null || echo 0) + 1)); echo "$asked" >"$T/asked"
    if ((asked > ${DENIED_ANSWERS:-0})); then echo yes; else echo no; exit 1; fi ;;
  "get clusterrolebindings -l hybrid-cluster.io/provider-credential=true -o name --request-timeout=30s")
    [[ -z ${FAIL_LIST:-} ]] || { echo "Unable to connect to the server" >&2; exit 1; }
    cat "$T/bindings" ;;
  "delete clusterrolebinding.rbac.authorization.k8s.io/"*) echo "${2} deleted" ;;
  *) echo "unexpected kubectl $*" >&2; exit 2 ;;
esac
"""


@dataclass
class ControlPlane:
    root: Path
    env: dict[str, str]

    def run(self, script: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", script], env={**self.env, **env}, capture_output=True, text=True,
                              timeout=60, check=False)

    def calls(self) -> list[str]:
        calls = self.root / "kubectl.calls"
        return calls.read_text().splitlines() if calls.exists() else []


@pytest.fixture
def control_plane(tmp_path) -> ControlPlane:
    pki, stubs, scratch = tmp_path / "etc/kubernetes/pki", tmp_path / "stubs", tmp_path / "tmp"
    for directory in (pki, stubs, scratch):
        directory.mkdir(parents=True)
    # kubeadm's CA: RSA 2048 (its default encryptionAlgorithm), CN kubernetes.
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(pki / "ca.key"), "-out", str(pki / "ca.crt"), "-subj", "/CN=kubernetes",
                    "-days", "3650"], check=True, capture_output=True)
    (tmp_path / "etc/kubernetes/admin.conf").write_text("apiVersion: v1\n")
    (stubs / "kubectl").write_text(STUB_KUBECTL)
    (stubs / "kubectl").chmod(0o755)
    (stubs / "sleep").write_text("#!/bin/sh\nexit 0\n")
    (stubs / "sleep").chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "T": str(tmp_path), "SERVER": SERVER,
           "HYBRID_CLUSTER_TEST_ROOT": str(tmp_path), "TMPDIR": str(scratch)}
    return ControlPlane(tmp_path, env)


def _openssl_text(certificate: Path, *args: str) -> str:
    return subprocess.run(["openssl", "x509", "-in", str(certificate), "-noout", *args], check=True,
                          capture_output=True, text=True).stdout


def test_it_issues_binds_proves_and_prints_a_credential_of_its_own(control_plane):
    result = control_plane.run(lb.render_provider_credential("2027-12"), DENIED_ANSWERS="2")
    assert result.returncode == 0, result.stderr
    first, second, kubeconfig = result.stdout.split("\n", 2)
    # Two comment lines, then only the kubeconfig (the stub writes kubectl's arguments as its content).
    assert re.fullmatch(r"# valid until \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} GMT", first)
    assert second == "# user hybrid-cluster:pulumi:2027-12"
    assert lb.provider_credential_expiry(result.stdout) == " ".join(first.removeprefix("# valid until ").split())
    assert lb.provider_credential_user(result.stdout) == "hybrid-cluster:pulumi:2027-12"
    assert f"set-cluster cluster --server={SERVER} " in kubeconfig and "--embed-certs=true" in kubeconfig
    assert "set-credentials pulumi --client-certificate=" in kubeconfig
    # The certificate: the user, no group, a client only, one year, from the cluster CA.
    certificate = control_plane.root / "embedded.crt"
    text = _openssl_text(certificate, "-subject", "-issuer", "-ext", "basicConstraints,keyUsage,extendedKeyUsage")
    assert "subject=CN = hybrid-cluster:pulumi:2027-12\n" in text and "O =" not in text
    assert "issuer=CN = kubernetes" in text and "CA:FALSE" in text
    assert "Digital Signature" in text and "Key Encipherment" not in text and "Certificate Sign" not in text
    assert "TLS Web Client Authentication" in text and "TLS Web Server Authentication" not in text
    assert subprocess.run(["openssl", "x509", "-in", str(certificate), "-noout", "-checkend", str(364 * 86400)],
                          capture_output=True).returncode == 0
    assert subprocess.run(["openssl", "x509", "-in", str(certificate), "-noout", "-checkend", str(366 * 86400)],
                          capture_output=True).returncode == 1
    # Verified for client use against the CA, as the API server's x509 authenticator does (ExtKeyUsageClientAuth).
    subprocess.run(["openssl", "verify", "-purpose", "sslclient", "-CAfile",
                    str(control_plane.root / "etc/kubernetes/pki/ca.crt"), str(certificate)], check=True,
                   capture_output=True)
    # Its binding: cluster-admin for that user alone, labelled, applied before it is used; asked until allowed.
    applied = (control_plane.root / "applied").read_text()
    assert applied == ("kind: ClusterRoleBinding\nname: hybrid-cluster:pulumi:2027-12\n--clusterrole=cluster-admin\n"
                       "--user=hybrid-cluster:pulumi:2027-12\nlabel: hybrid-cluster.io/provider-credential=true\n")
    label = next(c for c in control_plane.calls() if c.startswith("label --local"))
    assert label.endswith("hybrid-cluster.io/provider-credential=true velero.io/exclude-from-backup=true -o yaml")
    calls = control_plane.calls()
    asked = [i for i, c in enumerate(calls) if " auth can-i " in c]
    assert len(asked) == 3 and asked[0] > next(i for i, c in enumerate(calls) if c.startswith("apply"))
    # The key and certificate lived only in a temporary directory, gone now.
    assert list((control_plane.root / "tmp").iterdir()) == []


def test_a_credential_that_is_never_allowed_is_not_printed(control_plane):
    script = lb.render_provider_credential("initial")
    denied = control_plane.run(script, DENIED_ANSWERS="1000")
    assert denied.returncode == 1 and denied.stdout == ""
    assert "is refused by the API server or not allowed to act as cluster-admin" in denied.stderr
    refused = control_plane.run(script, FAIL_APPLY="1")
    assert refused.returncode != 0 and refused.stdout == ""
    (control_plane.root / "etc/kubernetes/admin.conf").unlink()
    missing = control_plane.run(script)
    assert missing.returncode == 1 and "admin.conf is missing" in missing.stderr and missing.stdout == ""


def test_revoking_deletes_every_other_credentials_binding_and_keeps_the_current_one(control_plane):
    (control_plane.root / "bindings").write_text(
        "clusterrolebinding.rbac.authorization.k8s.io/hybrid-cluster:pulumi:initial\n"
        "clusterrolebinding.rbac.authorization.k8s.io/hybrid-cluster:pulumi:2027-12\n")
    script = lb.render_provider_credential_revoke("hybrid-cluster:pulumi:2027-12")
    result = control_plane.run(script)
    assert result.returncode == 0, result.stderr
    assert control_plane.calls() == [
        "get clusterrolebindings -l hybrid-cluster.io/provider-credential=true -o name --request-timeout=30s",
        "delete clusterrolebinding.rbac.authorization.k8s.io/hybrid-cluster:pulumi:initial --ignore-not-found "
        "--request-timeout=30s"]
    assert "revoked the Kubernetes provider credential bound by hybrid-cluster:pulumi:initial" in result.stdout
    # Again: nothing but the current one is left, nothing is deleted.
    (control_plane.root / "bindings").write_text("clusterrolebinding.rbac.authorization.k8s.io/hybrid-cluster:pulumi:2027-12\n")
    again = control_plane.run(script)
    assert again.returncode == 0 and len(control_plane.calls()) == 3
    unlisted = control_plane.run(script, FAIL_LIST="1")
    assert unlisted.returncode == 1 and "cannot list the provider credentials' bindings" in unlisted.stderr
    assert len(control_plane.calls()) == 4   # the failed listing, and no delete
    (control_plane.root / "etc/kubernetes/admin.conf").unlink()
    gone = control_plane.run(script)
    assert gone.returncode == 1 and "admin.conf is missing" in gone.stderr


def test_a_credential_label_is_checked_where_it_becomes_a_name():
    with pytest.raises(ValueError, match="provider credential label"):
        lb.provider_user("bad label")
    with pytest.raises(ValueError, match="not a provider credential's user"):
        lb.render_provider_credential_revoke("kubernetes-admin")
    # What an earlier release read (admin.conf) has no expiry line, and no user to keep.
    assert lb.provider_credential_expiry("apiVersion: v1\nkind: Config\n") == "unknown"
    with pytest.raises(ValueError, match="no '# user' line"):
        lb.provider_credential_user("apiVersion: v1\n")
