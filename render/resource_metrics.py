"""Renders the resource metrics API (config `resourceMetrics`): metrics-server (the approver of the kubelets'
serving certificates is render/serving_approver.py's). The kubelets' serverTLSBootstrap reaches an existing cluster's
nodes with the rest of their kubelet configuration (render/kubelet_config.py).

This module owns metrics-server's Helm values (its pin in config.compat.CHARTS). Pure: plain values in, dicts out.

Design decisions, with their sources:

* Verified kubelet TLS, not ``--kubelet-insecure-tls``. metrics-server checks each kubelet's certificate against
  the CA of its in-cluster configuration, the cluster CA (kubernetes-sigs/metrics-server README, requirements:
  "Kubelet certificate needs to be signed by cluster Certificate Authority (or disable certificate validation by
  passing --kubelet-insecure-tls)"). A kubeadm kubelet signs its own serving certificate unless
  ``serverTLSBootstrap`` is on (render/kubeadm.py kubelet_config), and then asks the cluster CA through a
  CertificateSigningRequest for signer kubernetes.io/kubelet-serving, which kube-controller-manager never approves
  (kubeadm "Certificate Management with kubeadm", "Kubelet serving certificates").
* The approver is the program of render/serving_approver.py, on the control-plane nodes: it approves a request
  only for the requesting node's own name and own address.
* Placement: the chart selects no OS by default (metrics-server values.yaml ``nodeSelector: {}``), so it gets
  ``kubernetes.io/os: linux``: its image is Linux-only. metrics-server scrapes every node's kubelet, Windows ones included
  (``/metrics/resource``, pkg/scraper/client/resource/client.go; no OS filter).
* metrics-server runs two replicas with a PodDisruptionBudget where every wave leaves it a Linux worker, so a node drain never
  takes the metrics API (and with it every HorizontalPodAutoscaler) away (metrics-server's README "High
  Availability": replicas, a budget and spreading).
"""
from __future__ import annotations

from typing import Any

from render import availability
from vocab.labels import OS_LABEL

# The chart's namespace: kube-system, where metrics-server's own manifests install it (manifests/base).
NAMESPACE = "kube-system"


def metrics_server_values(budget: bool) -> dict[str, Any]:
    """Values for the metrics-server chart (charts/metrics-server/values.yaml @3.13.1). Its defaultArgs stay (the
    kubelet's InternalIP first, which its certificate carries; the node's status port; 15 s resolution) and no
    argument turns off certificate verification. Two replicas and a budget only where every wave leaves it a Linux
    worker (`budget`, plan/platform.py survives_every_wave; it does not tolerate the control-plane taint): on one
    worker, a budget would stop that worker's drain for good, its second replica having nowhere to go."""
    values: dict[str, Any] = {"replicas": 1, "nodeSelector": {OS_LABEL: "linux"}}
    if budget:
        # The chart renders unhealthyPodEvictionPolicy on Kubernetes 1.27 and later (templates/pdb.yaml at 3.13.1),
        # which Helm reads from the cluster (helm.v3.Release).
        values.update(replicas=availability.REPLICAS,
                      affinity=availability.host_spread({"app.kubernetes.io/name": "metrics-server"}),
                      podDisruptionBudget={"enabled": True, **availability.budget_fields()})
    return values
