"""TLS (config `tls`): cert-manager and its ClusterIssuer against the upstream CRD schema, the internal CA's
key pair only from Pulumi secrets, the samples' Gateway on HTTPS with HTTP redirected, and the rules cert-manager's
Gateway support and ACME impose."""
from __future__ import annotations

import dataclasses

import pytest

from render import tls, workloads
from tests.approver_policy_eval import Request, decide
from tests.conftest import hk_prod_spec, hk_prod_values, problems, raw_config
from tests.crd_schema import CustomResourceInvalid, validate_custom_resource
from tools.mock.program import run_program
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


def test_cert_manager_values_turn_on_its_crds_and_gateway_api_support_only_with_the_gateway_api_crds():
    values = tls.cert_manager_values(gateway_api=True, budget=False)
    assert values["crds"] == {"enabled": True, "keep": True}
    assert values["disableAutoApproval"] is True         # approver-policy decides, not cert-manager
    assert values["config"]["gatewayAPI"] == {"enabled": True}
    assert "nodeSelector" not in repr(values)    # the chart's defaults already select Linux
    assert tls.cert_manager_values(gateway_api=False, budget=False)["config"]["gatewayAPI"] == {"enabled": False}


def test_tls_without_the_samples_runs_cert_manager_without_gateway_api_support_and_refuses_acme():
    """cert-manager v1.21.1 exits at start-up when its Gateway API support is on and the CRDs are absent; only the
    samples install them. A stack with `tls` (a CA) and no `workloads` (docs/backup.md's DR stack) gets it off; ACME,
    whose HTTP-01 solver is the samples' Gateway, is refused there with the fix."""
    from plan.platform import tls_plan
    from tests.conftest import hk_prod_values, raw_config
    from tools.mock.program import run_program
    values = hk_prod_values()
    values.pop("workloads")
    values["tls"] = {"ca": {}}
    run = run_program(raw_config(values))
    release = run.named("hk-prod-tls-cert-manager")
    assert release.inputs["values"]["config"]["gatewayAPI"] == {"enabled": False}
    with_samples = hk_prod_spec()
    assert tls_plan(with_samples).gateway_api is True
    values["tls"] = {"acme": {"server": "https://acme.example/directory", "email": "ops@example.com"}}
    with pytest.raises(Exception, match="tls.acme: ACME proves names over HTTP-01 through the samples' Gateway"):
        run_program(raw_config(values))


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


# --- approval: approver-policy decides (#37 item 4) -------------------------------------------------------------

def _approval_objects(recording) -> list[dict]:
    kinds = ("CertificateRequestPolicy", "ClusterRole", "ClusterRoleBinding")
    return [{"kind": r.type.rsplit(":", 1)[1], **plain(r.inputs)} for r in recording.resources
            if r.type.rsplit(":", 1)[1] in kinds and r.name.startswith("hk-prod-tls-")]


CONTROLLER = f"system:serviceaccount:{tls.CERT_MANAGER_NAMESPACE}:hk-prod-tls-cert-manager"
ISSUER = (tls.ISSUER_NAME, "ClusterIssuer", "cert-manager.io")


# cmapi.DefaultKeyUsages() (cert-manager v1.21.1 pkg/apis/certmanager/v1/types.go), written out here rather than
# taken from render/tls.py, so that the policy is judged against what cert-manager asks, not against itself.
SHIM_USAGES = ("digital signature", "key encipherment")


def _gateway_request(**changes) -> Request:
    """What certificate-shim asks for the samples' HTTPS listener: the host name, DefaultKeyUsages, no subject; the
    issuer reference as the shim writes it from the annotation (group empty: cert-manager.io)."""
    fields = dict(namespace=workloads.GATEWAY_NAMESPACE, username=CONTROLLER,
                  issuer=(tls.ISSUER_NAME, "ClusterIssuer", ""), dns_names=("samples.hk-prod.internal",),
                  usages=SHIM_USAGES)
    return Request(**{**fields, **changes})


@pytest.mark.parametrize("request_, decision", [
    (_gateway_request(), "approved"),
    # Another datacenter name from the same namespace: the registry mirror, MinIO.
    (_gateway_request(dns_names=("harbor.hk-prod.internal",)), "denied"),
    (_gateway_request(dns_names=("samples.hk-prod.internal", "minio.hk-prod.internal")), "denied"),
    (_gateway_request(dns_names=("*.hk-prod.internal",)), "denied"),
    # The right name with more than a name: an address, a CA, a client certificate, a subject.
    (_gateway_request(ip_addresses=("10.30.30.11",)), "denied"),
    (_gateway_request(is_ca=True), "denied"),
    (_gateway_request(usages=("digital signature", "client auth")), "denied"),
    (_gateway_request(common_name="samples.hk-prod.internal"), "denied"),
    (_gateway_request(organizations=("hk-prod",)), "denied"),
    # The right name from any other namespace: no policy applies, never approved.
    (_gateway_request(namespace="team-a"), "pending"),
    # A CertificateRequest written directly by someone else: not bound to any policy.
    (_gateway_request(username="system:serviceaccount:team-a:deployer"), "pending"),
    (_gateway_request(username="alice"), "pending"),
    # Another issuer's request is not this policy's business.
    (_gateway_request(issuer=("other", "Issuer", "cert-manager.io")), "pending"),
])
def test_only_the_gateway_host_is_approved_in_hk_prod(hk_recording, request_, decision):
    assert decide(_approval_objects(hk_recording), request_) == decision


def test_a_grant_admits_its_names_in_its_namespace_only():
    values = hk_prod_values()
    values["tls"]["allow"] = [{"namespace": "payments", "dnsNames": ["pay.hk-prod.internal", "*.pay.hk-prod.internal"]}]
    objects = _approval_objects(run_program(raw_config(values)))
    own = Request(namespace="payments", username=CONTROLLER, issuer=ISSUER, usages=tls.SERVER_USAGES,
                  dns_names=("pay.hk-prod.internal", "api.pay.hk-prod.internal"))
    assert decide(objects, own) == "approved"
    assert decide(objects, dataclasses.replace(own, dns_names=("samples.hk-prod.internal",))) == "denied"
    assert decide(objects, dataclasses.replace(own, namespace="team-a")) == "pending"
    # The samples' host is still the Gateway's alone.
    assert decide(objects, _gateway_request()) == "approved"
    assert decide(objects, dataclasses.replace(own, namespace=workloads.GATEWAY_NAMESPACE)) == "denied"


def test_without_samples_or_grants_nothing_is_ever_approved():
    values = hk_prod_values()
    del values["workloads"]
    recording = run_program(raw_config(values))
    objects = _approval_objects(recording)
    assert not [o for o in objects if o["kind"] == "CertificateRequestPolicy"]
    assert decide(objects, _gateway_request()) == "pending"
    assert recording.named("hk-prod-tls-approver-policy")      # installed all the same: the issuer stays guarded


def test_the_policies_pass_the_crd_schema_strictly_and_the_binding_names_the_controller(hk_recording):
    objects = _approval_objects(hk_recording)
    policies = [o for o in objects if o["kind"] == "CertificateRequestPolicy"]
    assert [p["metadata"]["name"] for p in policies] == ["hybrid-cluster-samples-gateway"]
    for policy in policies:
        validate_custom_resource({"apiVersion": tls.POLICY_API_VERSION, **policy},
                                 "policy.cert-manager.io_v1alpha1_CertificateRequestPolicy.json")
    with pytest.raises(CustomResourceInvalid):
        validate_custom_resource({**tls.certificate_request_policy(tls.Grant("x", "ns", ("a.example",))),
                                  "spec": {"selector": {}, "allowed": {"dnsName": {"values": ["a"]}}}},
                                 "policy.cert-manager.io_v1alpha1_CertificateRequestPolicy.json")
    # The chart's helper names the ServiceAccount after a release that contains the chart's name.
    assert tls.chart_fullname("hk-prod-tls-cert-manager", "cert-manager") == "hk-prod-tls-cert-manager"
    assert tls.chart_fullname("x-tls", "cert-manager") == "x-tls-cert-manager"
    assert len(tls.chart_fullname("a" * 70, "cert-manager")) == 63
    assert tls.chart_fullname("a" * 61 + "--x-cert-manager", "cert-manager") == "a" * 61 + "-"   # one dash trimmed


def test_approver_policy_approves_only_this_issuer_and_comes_before_the_issuer(hk_recording):
    approver = hk_recording.named("hk-prod-tls-approver-policy")
    values = plain(approver.inputs)["values"]
    assert values["app"]["approveSignerNames"] == ["clusterissuers.cert-manager.io/hybrid-cluster"]
    assert hk_recording.named("hk-prod-tls-cert-manager").urn in approver.dependencies
    issuer = hk_recording.named("hk-prod-tls-clusterissuer-hybrid-cluster")
    policy = hk_recording.named("hk-prod-tls-certificaterequestpolicy-hybrid-cluster-samples-gateway")
    # The policies wait for a dry run of each to pass approver-policy's webhook (its CA injected by cainjector).
    probe = hk_recording.named("hk-prod-tls-approver-policy-webhook")
    assert approver.urn in probe.dependencies and probe.urn in policy.dependencies
    assert "hybrid-cluster-samples-gateway-admission-probe" in probe.inputs["create"]
    assert {policy.urn, hk_recording.named("hk-prod-tls-clusterrolebinding-hybrid-cluster-certificate-policies").urn} \
        <= hk_recording.waits_for(issuer.urn)


@pytest.mark.parametrize("tls_section, path, fragment", [
    ({"ca": {}, "allow": [{"namespace": "a", "dnsNames": ["a.example.com"]},
                          {"namespace": "a", "dnsNames": ["b.example.com"]}]}, "tls.allow[1].namespace", "twice"),
    ({"acme": {"server": "https://acme.example/directory", "email": "ops@example.com"},
      "allow": [{"namespace": "a", "dnsNames": ["*.example.com"]}]}, "tls.allow[0].dnsNames[0]", "wildcard"),
    ({"ca": {}, "allow": [{"namespace": "a", "dnsNames": []}]}, "tls.allow[0].dnsNames", ""),
    ({"ca": {}, "allow": [{"namespace": "A_b", "dnsNames": ["a.example.com"]}]}, "tls.allow[0].namespace", "label"),
])
def test_grant_mistakes_at_their_key_paths(tls_section, path, fragment):
    values = hk_prod_values()
    values["tls"] = tls_section
    found = problems(values)
    assert any(p.startswith(f"{path}: ") and fragment in p for p in found), found
