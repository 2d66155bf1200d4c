"""cert-manager and its ClusterIssuer (config `tls`), and what the samples' Gateway needs to serve HTTPS.

cert-manager's own Pods are on Linux nodes by its chart's defaults (`nodeSelector: kubernetes.io/os: linux` on
the controller, webhook, cainjector and startupapicheck, deploy/charts/cert-manager/values.yaml at v1.21.1:
"It prevents Pods being scheduled to Windows nodes in a mixed OS cluster"), so no value repeats it. Its Gateway
API support (`gatewayAPI.enabled` in the ControllerConfiguration, pkg/apis/config/controller/v1alpha1/types.go)
issues a certificate for each Gateway listener that has a hostname and a TLS certificateRef, from the issuer the
Gateway's `cert-manager.io/cluster-issuer` annotation names (pkg/controller/certificate-shim/sync.go
validateGatewayListenerBlock: "the hostname cannot be empty"), and renews it itself.

Who gets which certificate is decided by approver-policy, not by cert-manager: `disableAutoApproval` turns cert-manager's
own approver off (deploy/charts/cert-manager/values.yaml @v1.21.1: the controller runs with
`--controllers=-certificaterequests-approver` and loses its `approve` on signers, templates/rbac.yaml), whose source
says that "in the absence of any automated policy engine, this controller will _always_ set the "Approved" condition
to True" (pkg/controller/certificaterequests/approver/approver.go). approver-policy v0.27.0 then decides each
CertificateRequest (pkg/internal/approver/manager/review.go, predicate/predicate.go, allowed/evaluator.go):

- the policies that apply are those whose selector matches the request's issuer and namespace, and that the
  request's recorded user (spec.username, which cert-manager's webhook stamps and keeps immutable) may `use` in that
  namespace (a SubjectAccessReview on policy.cert-manager.io certificaterequestpolicies, verb use, the policy's name);
- none applies: the request stays pending; one of them allows every attribute: approved; all deny: denied;
- an attribute the policy's `allowed` leaves out must be absent from the request (IP addresses, URIs, e-mail
  addresses, isCA, any subject field); listed values are matched with `*` as "any text" (util/wildcard.go).

A Certificate's requests are made by cert-manager's controller (its ServiceAccount is the recorded user, the
Gateway's included: certificate-shim creates a Certificate in the Gateway's namespace), so that ServiceAccount may
use each policy here, and each policy's namespace selector is what limits it to one namespace.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from render import availability

CERT_MANAGER_NAMESPACE = "cert-manager"
ISSUER_NAME = "hybrid-cluster"
CA_SECRET_NAME = "hybrid-cluster-ca"
ISSUER_ANNOTATION = "cert-manager.io/cluster-issuer"
CERT_MANAGER_API_VERSION = "cert-manager.io/v1"
CERT_MANAGER_CHART = "cert-manager"
POLICY_API_VERSION = "policy.cert-manager.io/v1alpha1"
# The signer name approver-policy may approve for (its chart's app.approveSignerNames; empty would mean every signer,
# templates/clusterrole.yaml): a ClusterIssuer's is clusterissuers.cert-manager.io/<name> (cert-manager
# internal/webhook/admission/certificaterequest/approval/certificaterequest_approval.go).
SIGNER_NAME = f"clusterissuers.cert-manager.io/{ISSUER_NAME}"
POLICY_USER_ROLE = f"{ISSUER_NAME}-certificate-policies"
# What a Gateway listener's Certificate asks for: cmapi.DefaultKeyUsages() (certificate-shim sync.go), and what a
# server certificate of one's own may add.
GATEWAY_USAGES = ("digital signature", "key encipherment")
SERVER_USAGES = (*GATEWAY_USAGES, "server auth")


@dataclass(frozen=True)
class Grant:
    """One CertificateRequestPolicy: the names Certificates in `namespace` may carry from the ClusterIssuer."""
    name: str
    namespace: str
    dns_names: tuple[str, ...]
    usages: tuple[str, ...] = SERVER_USAGES


# cert-manager's webhook pods (deploy/charts/cert-manager/templates/webhook-deployment.yaml at v1.21.1), alone in
# its namespace with this component label.
WEBHOOK_LABELS = {"app.kubernetes.io/component": "webhook"}
# approver-policy's pods: `app: <chart name>` (deploy/charts/approver-policy/templates/deployment.yaml at v0.27.0).
APPROVER_POLICY_LABELS = {"app": "cert-manager-approver-policy"}


def cert_manager_values(gateway_api: bool, budget: bool) -> dict[str, Any]:
    """`gateway_api`: the stack installs the Gateway API CRDs (the samples' Envoy Gateway). cert-manager's Gateway API
    support needs them: with it on and no CRDs, the controller exits at start-up (v1.21.1 pkg/controller/context.go:
    "If they are not found return an error which will cause cert-manager to crashloopbackoff", "the Gateway API CRDs
    do not seem to be present"), so a stack without the samples would never get a running cert-manager.

    `budget` (plan/platform.py survives_every_wave): the webhook, which every write of a cert-manager resource goes
    through (failurePolicy Fail, templates/webhook-validating-webhook.yaml), runs two replicas spread over nodes with
    the chart's budget, which renders unhealthyPodEvictionPolicy (templates/webhook-poddisruptionbudget.yaml). The
    controller and cainjector are leader-elected: a drain delays their work, it breaks nothing."""
    values: dict[str, Any] = {
        "crds": {"enabled": True, "keep": True},
        "disableAutoApproval": True,
        "config": {"apiVersion": "controller.config.cert-manager.io/v1alpha1", "kind": "ControllerConfiguration",
                   "gatewayAPI": {"enabled": gateway_api}},
    }
    if budget:
        values["webhook"] = {"replicaCount": availability.REPLICAS, "affinity": availability.host_spread(WEBHOOK_LABELS),
                             "podDisruptionBudget": {"enabled": True, **availability.budget_fields()}}
    return values


def ca_secret_metadata() -> dict[str, Any]:
    """The internal CA's key pair Secret, without data (the component adds it from Pulumi secrets). A CA
    ClusterIssuer reads it from cert-manager's cluster resource namespace, by default its own namespace
    (values.yaml clusterResourceNamespace)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": CA_SECRET_NAME, "namespace": CERT_MANAGER_NAMESPACE}}


def ca_cluster_issuer() -> dict[str, Any]:
    return {"apiVersion": CERT_MANAGER_API_VERSION, "kind": "ClusterIssuer", "metadata": {"name": ISSUER_NAME},
            "spec": {"ca": {"secretName": CA_SECRET_NAME}}}


def acme_cluster_issuer(server: str, email: str, gateway_name: str, gateway_namespace: str,
                        ca_certificate: str | None = None) -> dict[str, Any]:
    """An ACME ClusterIssuer answering HTTP-01 through the Gateway's HTTP listener; its solver pods on Linux. With
    `ca_certificate` (PEM), the ACME server's certificate is checked against it (ACMEIssuer caBundle, base64 PEM)."""
    bundle = {"caBundle": base64.b64encode(ca_certificate.encode()).decode()} if ca_certificate else {}
    return {"apiVersion": CERT_MANAGER_API_VERSION, "kind": "ClusterIssuer", "metadata": {"name": ISSUER_NAME},
            "spec": {"acme": {
                "server": server, "email": email, **bundle,
                "privateKeySecretRef": {"name": f"{ISSUER_NAME}-acme-account"},
                "solvers": [{"http01": {"gatewayHTTPRoute": {
                    "parentRefs": [{"name": gateway_name, "namespace": gateway_namespace, "sectionName": "http"}],
                    "podTemplate": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}},
                }}}],
            }}}


def approver_policy_values(budget: bool) -> dict[str, Any]:
    """With `budget`: two replicas spread over nodes (leader-elected; its webhook checks CertificateRequestPolicies,
    and while none runs no CertificateRequest is approved), with approver_policy_disruption_budget: the chart's own
    budget cannot say unhealthyPodEvictionPolicy (its values schema allows no such key at v0.27.0), so it stays off."""
    values: dict[str, Any] = {"crds": {"enabled": True, "keep": True}, "app": {"approveSignerNames": [SIGNER_NAME]}}
    if budget:
        values.update(replicaCount=availability.REPLICAS, affinity=availability.host_spread(APPROVER_POLICY_LABELS))
    return values


def approver_policy_disruption_budget() -> dict[str, Any]:
    return availability.disruption_budget("cert-manager-approver-policy", CERT_MANAGER_NAMESPACE, APPROVER_POLICY_LABELS)


def chart_fullname(release: str, chart: str) -> str:
    """A chart's full name as the jetstack charts' helpers make it, which names its ServiceAccount: the release
    name when it contains the chart's name, else both joined; 63 characters at most (deploy/charts/cert-manager/
    templates/_helpers.tpl @v1.21.1, cert-manager.fullname and cert-manager.serviceAccountName)."""
    name = (release if chart in release else f"{release}-{chart}")[:63]
    return name.removesuffix("-")            # Helm's trimSuffix: one dash at most


def certificate_request_policy(grant: Grant) -> dict[str, Any]:
    """Requests to the ClusterIssuer from `grant.namespace` for the grant's names only: no IP address, URI, e-mail
    address or subject field, never a CA (approver-policy: an attribute `allowed` leaves out must be absent)."""
    return {"apiVersion": POLICY_API_VERSION, "kind": "CertificateRequestPolicy", "metadata": {"name": grant.name},
            "spec": {
                "selector": {"issuerRef": {"name": ISSUER_NAME, "kind": "ClusterIssuer", "group": "cert-manager.io"},
                             "namespace": {"matchNames": [grant.namespace]}},
                "allowed": {"dnsNames": {"values": list(grant.dns_names), "required": True},
                            "usages": list(grant.usages)},
            }}


def policy_user_role(grants: tuple[Grant, ...]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": POLICY_USER_ROLE},
            "rules": [{"apiGroups": ["policy.cert-manager.io"], "resources": ["certificaterequestpolicies"],
                       "verbs": ["use"], "resourceNames": sorted(g.name for g in grants)}]}


def policy_user_binding(controller_service_account: str) -> dict[str, Any]:
    """cert-manager's controller may use the policies in every namespace: each policy's own namespace selector is
    the limit (a RoleBinding per namespace would add nothing, and would need the namespace to exist first)."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": POLICY_USER_ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": POLICY_USER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": controller_service_account,
                          "namespace": CERT_MANAGER_NAMESPACE}]}
