"""cert-manager and its ClusterIssuer (config `tls`), and what the samples' Gateway needs to serve HTTPS.

cert-manager's own Pods are on Linux nodes by its chart's defaults (`nodeSelector: kubernetes.io/os: linux` on
the controller, webhook, cainjector and startupapicheck, deploy/charts/cert-manager/values.yaml at v1.21.1:
"It prevents Pods being scheduled to Windows nodes in a mixed OS cluster"), so no value repeats it. Its Gateway
API support (`gatewayAPI.enabled` in the ControllerConfiguration, pkg/apis/config/controller/v1alpha1/types.go)
issues a certificate for each Gateway listener that has a hostname and a TLS certificateRef, from the issuer the
Gateway's `cert-manager.io/cluster-issuer` annotation names (pkg/controller/certificate-shim/sync.go
validateGatewayListenerBlock: "the hostname cannot be empty"), and renews it itself.
"""
from __future__ import annotations

from typing import Any

CERT_MANAGER_NAMESPACE = "cert-manager"
ISSUER_NAME = "hybrid-cluster"
CA_SECRET_NAME = "hybrid-cluster-ca"
ISSUER_ANNOTATION = "cert-manager.io/cluster-issuer"
CERT_MANAGER_API_VERSION = "cert-manager.io/v1"


def cert_manager_values() -> dict[str, Any]:
    return {
        "crds": {"enabled": True, "keep": True},
        "config": {"apiVersion": "controller.config.cert-manager.io/v1alpha1", "kind": "ControllerConfiguration",
                   "gatewayAPI": {"enabled": True}},
    }


def ca_secret_metadata() -> dict[str, Any]:
    """The internal CA's key pair Secret, without data (the component adds it from Pulumi secrets). A CA
    ClusterIssuer reads it from cert-manager's cluster resource namespace, by default its own namespace
    (values.yaml clusterResourceNamespace)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": CA_SECRET_NAME, "namespace": CERT_MANAGER_NAMESPACE}}


def ca_cluster_issuer() -> dict[str, Any]:
    return {"apiVersion": CERT_MANAGER_API_VERSION, "kind": "ClusterIssuer", "metadata": {"name": ISSUER_NAME},
            "spec": {"ca": {"secretName": CA_SECRET_NAME}}}


def acme_cluster_issuer(server: str, email: str, gateway_name: str, gateway_namespace: str) -> dict[str, Any]:
    """An ACME ClusterIssuer answering HTTP-01 through the Gateway's HTTP listener; its solver pods on Linux."""
    return {"apiVersion": CERT_MANAGER_API_VERSION, "kind": "ClusterIssuer", "metadata": {"name": ISSUER_NAME},
            "spec": {"acme": {
                "server": server, "email": email,
                "privateKeySecretRef": {"name": f"{ISSUER_NAME}-acme-account"},
                "solvers": [{"http01": {"gatewayHTTPRoute": {
                    "parentRefs": [{"name": gateway_name, "namespace": gateway_namespace, "sectionName": "http"}],
                    "podTemplate": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}},
                }}}],
            }}}
