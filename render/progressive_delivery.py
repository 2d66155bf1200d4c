"""Renders progressive delivery (config `progressiveDelivery`): the Argo Rollouts chart's values, and for a Deployment of
the samples the blue-green Rollout that takes it over, its preview Service and the preview route.

This module owns those renderers. Pure: plain values in, dicts out; the chart pin is config.compat.CHARTS["argo-rollouts"].

Design decisions, with their sources:

* Argo Rollouts, not Flagger: its blue-green strategy switches traffic by rewriting the selectors of two Services, the
  active and the preview one ("injecting a unique hash of the ReplicaSet to these services' selectors",
  docs/features/bluegreen.md at v1.9.1; ``blueGreen`` has no ``trafficRouting`` at all, rollout CRD), so the samples'
  HTTPRoutes keep pointing at their Services and Envoy Gateway needs no plugin; its pods are ReplicaSets like a
  Deployment's, so Windows pods roll out as Linux ones do; and its Rollout CRD is one schema to check (vendored,
  v1.9.1, identical to v1.9.0's). Flagger drives a mesh or an ingress controller's weights, which blue-green through
  Services does not need.
* The Rollout takes the existing Deployment over (``workloadRef``, docs/migrating.md): the Deployment keeps the pod
  template (what Pulumi updates to release a new version), the Rollout takes its selector from it, and
  ``scaleDown: progressively`` moves the pods from the Deployment's ReplicaSet to the Rollout's without a gap. From
  then on the Deployment runs no pods; Pulumi ignores its replica count, which the controller sets to 0.
* No automatic promotion: a new version runs beside the old one behind the preview Service (and the preview route),
  and goes live when an operator promotes it (``kubectl argo rollouts promote``) or is dropped when they abort
  (``kubectl argo rollouts abort``: "The previous ReplicaSet will be active", docs/generated). ``previewReplicaCount:
  1`` keeps the preview to one pod until promotion, when the new version scales to full size before it takes the
  traffic: the namespace quota must hold both versions at that moment (checked in tests/program/test_progressive_delivery.py
  at the default replicas). The old version stays ``scaleDownDelaySeconds`` (30, the default) after the switch,
  long enough for Envoy to drop its endpoints.
* The controller on Linux: its image is linux/amd64 and arm64 only, and the chart sets no OS selector.
"""
from __future__ import annotations

import copy
from typing import Any

from vocab.checks import DNS_LABEL, require
from vocab.labels import OS_LABEL

NAMESPACE = "argo-rollouts"
API_VERSION = "argoproj.io/v1alpha1"
PREVIEW_SUFFIX = "-preview"
# The label the Rollout controller puts on each revision's ReplicaSet and pods, in place of the Deployment controller's
# pod-template-hash (argoproj/argo-rollouts v1.9.0, the chart's appVersion: pkg/apis/rollouts/v1alpha1/types.go
# DefaultRolloutUniqueLabelKey; rollout/sync.go adds it to the new ReplicaSet's template).
POD_TEMPLATE_HASH_LABEL = "rollouts-pod-template-hash"


def rollouts_values() -> dict[str, Any]:
    """Values for the argo-rollouts chart (argo-helm charts/argo-rollouts/values.yaml at 2.41.0): CRDs as templates,
    kept when the chart goes (``keepCRDs``), the controller on Linux, no dashboard."""
    return {"installCRDs": True, "keepCRDs": True, "controller": {"nodeSelector": {OS_LABEL: "linux"}},
            "dashboard": {"enabled": False}}


def preview_service(service: dict[str, Any]) -> dict[str, Any]:
    """The preview Service of a sample: its Service under another name (the controller pins each to its version)."""
    require(service.get("kind") == "Service", "a preview Service is made from a Service")
    preview = copy.deepcopy(service)
    preview["metadata"]["name"] = service["metadata"]["name"] + PREVIEW_SUFFIX
    return preview


def blue_green_rollout(deployment: dict[str, Any], auto_promotion: bool, scale_down_delay_seconds: int) -> dict[str, Any]:
    """The Rollout that takes ``deployment`` over with a blue-green strategy between its Service (same name) and the
    preview Service."""
    require(deployment.get("kind") == "Deployment", "a Rollout here takes a Deployment over")
    name, namespace = deployment["metadata"]["name"], deployment["metadata"]["namespace"]
    require(bool(DNS_LABEL.match(name)), f"{name!r} is not a DNS-1123 label")
    require(scale_down_delay_seconds >= 30, "the old version must stay at least 30 s for the Gateway to drop it")
    spec: dict[str, Any] = {
        "replicas": deployment["spec"]["replicas"],
        "revisionHistoryLimit": 3,
        "workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "scaleDown": "progressively"},
        "strategy": {"blueGreen": {
            "activeService": name,
            "previewService": name + PREVIEW_SUFFIX,
            "autoPromotionEnabled": auto_promotion,
            "previewReplicaCount": 1,
            "scaleDownDelaySeconds": scale_down_delay_seconds,
        }},
    }
    if "progressDeadlineSeconds" in deployment["spec"]:
        spec["progressDeadlineSeconds"] = deployment["spec"]["progressDeadlineSeconds"]
    return {"apiVersion": API_VERSION, "kind": "Rollout",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(deployment["metadata"].get("labels", {}))},
            "spec": spec}
