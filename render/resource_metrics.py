"""Renders the resource metrics API (config `resourceMetrics`): metrics-server and kubelet-csr-approver. The kubelets'
serverTLSBootstrap reaches an existing cluster's nodes with the rest of their kubelet configuration
(render/kubelet_config.py).

This module owns the Helm values of both charts (pins in config.compat.CHARTS). Pure: plain values in, dicts out.

Design decisions, with their sources:

* Verified kubelet TLS, not ``--kubelet-insecure-tls``. metrics-server checks each kubelet's certificate against
  the CA of its in-cluster configuration, the cluster CA (kubernetes-sigs/metrics-server README, requirements:
  "Kubelet certificate needs to be signed by cluster Certificate Authority (or disable certificate validation by
  passing --kubelet-insecure-tls)"). A kubeadm kubelet signs its own serving certificate unless
  ``serverTLSBootstrap`` is on (render/kubeadm.py kubelet_config), and then asks the cluster CA through a
  CertificateSigningRequest for signer kubernetes.io/kubelet-serving, which kube-controller-manager never approves
  (kubeadm "Certificate Management with kubeadm", "Kubelet serving certificates").
* The approver is kubelet-csr-approver. Before it approves, it checks (internal/controller/csr_controller.go,
  regex_ip_checks.go at v1.2.14): the signer; a requester ``system:node:<name>`` whose CommonName matches; every
  DNS name starting with that node name and matching ``providerRegex``, at most ``allowedDnsNames`` of them; every
  IP address inside ``providerIpPrefixes`` (one set for all nodes: it never reads the Node objects); the requested
  lifetime. Here ``providerRegex`` is the stack's node names exactly, so the one DNS name is a node's name (the
  kubelet puts its Hostname address there, pkg/kubelet/certificate/kubelet.go addressesToHostnamesAndIPs), and
  ``providerIpPrefixes`` the nodes' own addresses, each a /32: never the API VIP, the load-balancer pool or any other
  address of the node network. What the approver cannot check: that the address is the requester's own and not
  another node's, nor that the name is not another node's whose name begins with the requester's (docs/security.md).
  ``bypassDnsResolution`` is on: its resolution check needs a DNS record for every node, which a lab or a datacenter
  without node records does not have (README: "the node DNS name needs to be resolvable ... you can use the
  --bypass-dns-resolution flag"). ``skipDenyStep`` is on: a request it does not approve stays pending instead of
  being denied, so a node that joins before the approver knows it (the approver's values follow the node list and
  are rolled out after the joins) is approved once it does, when the restarted approver reconciles every request;
  its log says why it passed a request over.
* Placement: neither chart selects an OS by default (metrics-server values.yaml ``nodeSelector: {}``, the
  approver's likewise), so both get ``kubernetes.io/os: linux``: their images are Linux-only (the approver's are
  built for linux/amd64, arm64 and arm). metrics-server scrapes every node's kubelet, Windows ones included
  (``/metrics/resource``, pkg/scraper/client/resource/client.go; no OS filter).
* metrics-server runs two replicas with a PodDisruptionBudget where there are two Linux workers, so a node drain never
  takes the metrics API (and with it every HorizontalPodAutoscaler) away (metrics-server's README "High
  Availability": replicas, a budget and spreading). The approver keeps its chart's two replicas with leader election
  and no budget; a pending request simply waits for the next leader.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any

from vocab.checks import require
from vocab.labels import OS_LABEL

# The charts' namespace: kube-system, where metrics-server's own manifests install it (manifests/base).
NAMESPACE = "kube-system"
# One DNS label: a node name, which is what the kubelet puts in its request (module docstring).
NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _spread(app: str) -> dict[str, Any]:
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100,
        "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}}}}]}}


def metrics_server_values(linux_workers: int) -> dict[str, Any]:
    """Values for the metrics-server chart (charts/metrics-server/values.yaml @3.13.1). Its defaultArgs stay (the
    kubelet's InternalIP first, which its certificate carries; the node's status port; 15 s resolution) and no
    argument turns off certificate verification. Two replicas and a budget only with two Linux workers to spread
    them over (it does not tolerate the control-plane taint): with one, a budget would stop that worker's drain for
    good, its second replica having nowhere to go."""
    values: dict[str, Any] = {"replicas": 1, "nodeSelector": {OS_LABEL: "linux"}}
    if linux_workers >= 2:
        values.update(replicas=2, affinity=_spread("metrics-server"),
                      podDisruptionBudget={"enabled": True, "minAvailable": 1})
    return values


def csr_approver_values(nodes: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """Values for the kubelet-csr-approver chart (charts/kubelet-csr-approver/values.yaml @v1.2.14): serving
    certificates for one of ``nodes`` (name, IPv4 address) by name, at one of their addresses."""
    require(bool(nodes), "the approver needs the nodes")
    for name, address in nodes:
        require(bool(NODE_NAME.match(name)), f"{name!r} is not a node name")
        ipaddress.IPv4Address(address)
    names = sorted({name for name, _ in nodes})
    return {
        "providerRegex": "^(" + "|".join(re.escape(name) for name in names) + ")$",
        "providerIpPrefixes": [f"{address}/32" for address in sorted({a for _, a in nodes}, key=ipaddress.IPv4Address)],
        "allowedDnsNames": 1,
        "bypassDnsResolution": True,
        "skipDenyStep": True,
        "replicas": 2,
        "nodeSelector": {OS_LABEL: "linux"},
        "priorityClassName": "system-cluster-critical",
    }
