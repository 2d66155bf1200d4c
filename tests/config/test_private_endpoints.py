"""HTTPS endpoints of private names or addresses (#39 item 3): each needs the CA that signed its certificate, or the
stack is refused at that CA's key path; the CA reaches what checks the endpoint (Velero, the etcd copy, Fluent Bit,
the collector, cert-manager's ACME client, and containerd for registry mirrors)."""
from __future__ import annotations

import dataclasses
import ssl
import tomllib

import pytest

from config.rules import private_host
from render import tls
from render.containerd import MIRROR_CA_DIR, RegistryMirror, mirror_ca_name, registry_ca_files, registry_hosts_files
from render.linux_node import render_prepare_script
from tests.conftest import hk_prod_values, problems, raw_config
from tests.crd_schema import validate_custom_resource
from tests.render.test_linux_node import HARBOR_MIRRORS, make_node, run_sourced
from tools.mock.program import run_program

CA = hk_prod_values()["observability"]["logs"]["caCertificate"]
MESSAGE = "is a private name or address, which no public CA certifies"


@pytest.mark.parametrize("host, private", [
    ("minio.hk-prod.internal", True), ("harbor", True), ("nas.home.arpa", True), ("10.10.10.21", True),
    ("100.64.3.4", True), ("192.168.1.5", True), ("s3.ap-southeast-1.amazonaws.com", False), ("8.8.8.8", False),
    ("acme-v02.api.letsencrypt.org", False)])
def test_private_hosts(host, private):
    assert private_host(host) is private


@pytest.mark.parametrize("path, remove", [
    ("backup.primary.caCertificate", lambda v: v["backup"]["primary"].pop("caCertificate")),
    ("backup.offsite.caCertificate", lambda v: v["backup"]["offsite"].pop("caCertificate")),
    ("observability.logs.caCertificate", lambda v: v["observability"]["logs"].pop("caCertificate")),
    ("tracing.caCertificate", lambda v: v["tracing"].pop("caCertificate")),
    ("registry.mirrors[2].caCertificate", lambda v: v["registry"]["mirrors"][2].pop("caCertificate")),
])
def test_a_private_https_endpoint_without_its_ca_is_refused_at_the_ca_path(path, remove):
    values = hk_prod_values()
    assert problems(values) == []
    remove(values)
    assert [p for p in problems(values) if MESSAGE in p] == [p for p in problems(values) if p.startswith(path)]
    assert any(p.startswith(path) and MESSAGE in p for p in problems(values))


def test_public_or_plain_endpoints_need_no_ca():
    values = hk_prod_values()
    values["backup"]["offsite"] = {"endpoint": "https://s3.ap-southeast-1.amazonaws.com", "bucket": "velero-hk-prod",
                                   "region": "ap-southeast-1", "provider": "other"}
    values["registry"]["mirrors"][0] = {"upstream": "docker.io", "endpoint": "http://harbor.hk-prod.internal/v2/x",
                                        "overridePath": True}
    values["tracing"] = {"endpoint": "tempo.hk-prod.internal:4317", "insecure": True}
    assert not [p for p in problems(values) if MESSAGE in p]


def test_a_private_acme_server_needs_its_ca_which_goes_into_the_issuer():
    values = hk_prod_values()
    values["tls"] = {"acme": {"server": "https://ca.hk-prod.internal/acme/acme/directory", "email": "ops@example.com"}}
    assert any(p.startswith("tls.acme.caCertificate") and MESSAGE in p for p in problems(values))
    values["tls"]["acme"]["caCertificate"] = CA
    assert problems(values) == []
    issuer = run_program(raw_config(values)).named("hk-prod-tls-clusterissuer-hybrid-cluster").inputs
    import base64
    assert base64.b64decode(issuer["spec"]["acme"]["caBundle"]).decode() == CA
    validate_custom_resource({k: v for k, v in issuer.items()}, "cert-manager.io_v1_ClusterIssuer.json")


def test_an_acme_issuer_without_a_ca_has_no_bundle():
    assert "caBundle" not in tls.acme_cluster_issuer("https://acme-v02.api.letsencrypt.org/directory", "ops@example.com",
                                                      "gw", "ns")["spec"]["acme"]


WITH_CA = (dataclasses.replace(HARBOR_MIRRORS[0], ca_certificate=CA), *HARBOR_MIRRORS[1:])


def test_a_mirror_ca_is_named_relative_to_its_hosts_toml_only_for_the_mirrors_that_have_one():
    hosts = {upstream: tomllib.loads(text) for upstream, text in registry_hosts_files(WITH_CA).items()}
    docker = hosts["docker.io"]["host"]
    assert docker[WITH_CA[0].endpoint]["ca"] == f"../{MIRROR_CA_DIR}/{mirror_ca_name(CA)}"
    assert "ca" not in docker[WITH_CA[4].endpoint]
    assert all("ca" not in host for upstream, h in hosts.items() if upstream != "docker.io" for host in h["host"].values())
    # One file per distinct CA, however many mirrors share it.
    shared = [dataclasses.replace(m, ca_certificate=CA) for m in HARBOR_MIRRORS]
    assert list(registry_ca_files(shared)) == [mirror_ca_name(CA)] and registry_ca_files(HARBOR_MIRRORS) == {}


def test_linux_nodes_write_the_mirror_ca_where_the_hosts_toml_names_it_and_remove_it_when_gone(tmp_path):
    certs = tmp_path / "certs.d"
    run_sourced(render_prepare_script(make_node("ubuntu22", WITH_CA)), tmp_path, 'write_registry_hosts "$T/certs.d"')
    named = tomllib.loads((certs / "docker.io" / "hosts.toml").read_text())["host"][WITH_CA[0].endpoint]["ca"]
    ca_file = (certs / "docker.io" / named).resolve()       # as containerd's makeAbsPath joins it
    assert ca_file.is_file() and ca_file.parent.name == MIRROR_CA_DIR
    # OpenSSL (as Go's PEM reader) skips the marker line and loads the certificate.
    ssl.create_default_context(cafile=str(ca_file))
    # The CA taken out of the stack: its file and folder go, the hosts.toml stays.
    run_sourced(render_prepare_script(make_node("ubuntu22", HARBOR_MIRRORS)), tmp_path, 'write_registry_hosts "$T/certs.d"')
    assert not (certs / MIRROR_CA_DIR).exists() and (certs / "docker.io" / "hosts.toml").exists()


def test_a_foreign_file_in_the_ca_folder_is_kept(tmp_path):
    folder = tmp_path / "certs.d" / MIRROR_CA_DIR
    folder.mkdir(parents=True)
    (folder / "site.crt").write_text(CA)
    run_sourced(render_prepare_script(make_node("ubuntu22", HARBOR_MIRRORS)), tmp_path, 'write_registry_hosts "$T/certs.d"')
    assert (folder / "site.crt").read_text() == CA


def test_hk_prods_nodes_get_harbors_ca_on_both_operating_systems():
    recording = run_program(raw_config(hk_prod_values()))
    from render.hyperv import script_from_ssh_command
    scripts = [str(r.inputs.get("create")) for r in recording.resources if r.type == "command:remote:Command"]
    scripts += [script_from_ssh_command(s) or "" for s in scripts]
    name = mirror_ca_name(CA)
    assert any(f"MIRROR_CA_NAMES=({name})" in s or f"MIRROR_CA_NAMES=('{name}')" in s for s in scripts), name
    assert any("$CaNames = @(" in s and name in s for s in scripts)


def test_registry_mirror_defaults_to_no_ca():
    assert RegistryMirror("a", "https://b", False).ca_certificate is None
