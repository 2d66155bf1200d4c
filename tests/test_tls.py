"""TLS (config `tls`): cert-manager and its ClusterIssuer against the upstream CRD schema, the internal CA's
key pair only from Pulumi secrets, the samples' Gateway on HTTPS with HTTP redirected, and the rules cert-manager's
Gateway support and ACME impose."""
from __future__ import annotations

import pytest

from render import tls, workloads
from tests.conftest import hk_prod_spec, hk_prod_values, problems, raw_config
from tests.crd_schema import CustomResourceInvalid, validate_custom_resource
from tools.mockrun import run_program
from tools.synth import plain

ISSUER_SCHEMA = "cert-manager.io_v1_ClusterIssuer.json"


def test_both_issuers_pass_the_crd_schema_strictly():
    validate_custom_resource(tls.ca_cluster_issuer(), ISSUER_SCHEMA)
    acme = tls.acme_cluster_issuer("https://acme-v02.api.letsencrypt.org/directory", "ops@example.com",
                                   workloads.GATEWAY_NAME, workloads.GATEWAY_NAMESPACE)
    validate_custom_resource(acme, ISSUER_SCHEMA)
    solver = acme["spec"]["acme"]["solvers"][0]["http01"]["gatewayHTTPRoute"]
    assert solver["podTemplate"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert solver["parentRefs"][0]["sectionName"] == "http"
    with pytest.raises(CustomResourceInvalid):
        validate_custom_resource({**tls.ca_cluster_issuer(), "spec": {"ca": {"secret": "x"}}}, ISSUER_SCHEMA)


def test_cert_manager_values_turn_on_its_crds_and_gateway_api_support():
    values = tls.cert_manager_values()
    assert values["crds"] == {"enabled": True, "keep": True}
    assert values["config"]["gatewayAPI"] == {"enabled": True}
    assert "nodeSelector" not in repr(values)    # the chart's defaults already select Linux


def test_the_gateway_serves_https_with_a_cert_manager_certificate_and_redirects_http():
    from plan.platform import samples_plan
    plan = samples_plan(hk_prod_spec())
    assert plan is not None and plan.tls_issuer == tls.ISSUER_NAME
    objects = workloads.gateway_objects(plan.params, tls_issuer=plan.tls_issuer)
    gateway = next(o for o in objects if o["kind"] == "Gateway")
    assert gateway["metadata"]["annotations"][tls.ISSUER_ANNOTATION] == tls.ISSUER_NAME
    https = next(listener for listener in gateway["spec"]["listeners"] if listener["name"] == "https")
    assert https["port"] == 443 and https["hostname"] == "samples.hk-prod.internal"
    assert https["tls"]["certificateRefs"] == [{"kind": "Secret", "name": workloads.GATEWAY_TLS_SECRET}]
    http = next(listener for listener in gateway["spec"]["listeners"] if listener["name"] == "http")
    assert http["allowedRoutes"] == {"namespaces": {"from": "Same"}}
    redirect = next(o for o in objects if o["kind"] == "HTTPRoute")
    assert redirect["metadata"]["namespace"] == workloads.GATEWAY_NAMESPACE
    validate_custom_resource(gateway, "gateway.networking.k8s.io_v1_Gateway.json")
    validate_custom_resource(redirect, "gateway.networking.k8s.io_v1_HTTPRoute.json")
    assert all(r["spec"]["parentRefs"][0]["sectionName"] == "https" for r in workloads.http_routes(plan.params, https=True))


def test_https_needs_a_host_name():
    import dataclasses

    from plan.platform import sample_params
    params = sample_params(hk_prod_spec())
    assert params is not None
    with pytest.raises(ValueError, match="host name"):
        workloads.gateway_objects(dataclasses.replace(params, host=None), tls_issuer=tls.ISSUER_NAME)


@pytest.mark.parametrize("change, path, fragment", [
    (lambda v: v["workloads"].pop("sampleHost"), "workloads.sampleHost", "needs the host name"),
    (lambda v: v.update(tls={"acme": {"server": "https://acme.example/directory", "email": "ops@example.com"}},
                        workloads={"sampleHost": "*.hk-prod.internal"}), "workloads.sampleHost", "wildcard"),
    (lambda v: v.update(tls={}), "tls", "exactly one issuer"),
    (lambda v: v.update(tls={"ca": {"key": "x"}}), "tls", "takes no settings"),
    (lambda v: v.update(tls={"acme": {"server": "https://a.example/d", "email": "nobody"}}), "tls.acme.email", "e-mail"),
])
def test_tls_rules_at_their_key_paths(change, path, fragment):
    values = hk_prod_values()
    change(values)
    found = problems(values)
    assert any(p.startswith(f"{path}: ") and fragment in p for p in found), found


def test_the_ca_key_pair_comes_only_from_secrets_and_the_issuer_follows_it(hk_recording):
    secret = hk_recording.named("hk-prod-tls-secret-cert-manager-hybrid-cluster-ca")
    data = secret.inputs["stringData"]
    assert type(data).__name__ == "Secret"       # a Pulumi secret, never plain state
    issuer = hk_recording.named("hk-prod-tls-clusterissuer-hybrid-cluster")
    assert secret.urn in issuer.dependencies
    assert hk_recording.named("hk-prod-tls-cert-manager").urn in issuer.dependencies
    gateway = hk_recording.named("hk-prod-samples-gateway-envoy-gateway-system-samples")
    assert issuer.urn in hk_recording.waits_for(gateway.urn)


def test_acme_needs_no_ca_secrets_and_without_tls_nothing_is_installed():
    values = hk_prod_values()
    values["tls"] = {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com"}}
    from config.loader import load
    from config.secret_keys import required_secrets
    spec = load(raw_config(values)).spec
    assert "tlsCaKey" not in required_secrets(spec)
    recording = run_program(raw_config(values), secret_keys=required_secrets(spec))
    assert not recording.plan.errors
    assert not [r for r in recording.resources if r.name == "hk-prod-tls-secret-cert-manager-hybrid-cluster-ca"]
    del values["tls"]
    plain_run = run_program(raw_config(values))
    assert not [r for r in plain_run.resources if r.name.startswith("hk-prod-tls")]
    gateway = plain(plain_run.named("hk-prod-samples-gateway-envoy-gateway-system-samples").inputs)
    assert [listener["name"] for listener in gateway["spec"]["listeners"]] == ["http"]
