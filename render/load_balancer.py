"""MetalLB in layer 2 mode: the chart's values, the address pool and its layer 2 announcement.

Placement: the chart itself puts the controller and the speakers on Linux nodes (templates/controller.yaml and
speaker.yaml at v0.16.1 write `nodeSelector: "kubernetes.io/os": linux` before any value), so no value adds
one (a second key of the same name would be a duplicate in the rendered YAML). The speakers run with
hostNetwork and NET_RAW, so their namespace is privileged (render.scheduling.system_namespace).

Windows backends: in layer 2 mode one speaker, on a Linux node, answers for each address, and kube-proxy there
forwards to the Service's endpoints. With `externalTrafficPolicy: Local` kube-proxy sends only to endpoints on
that node (metallb.universe.tf usage, "Local" traffic policy), and no speaker runs on a Windows node, so a
Service whose endpoints are all Windows pods must keep the default `Cluster`: the Linux node then forwards
over Calico VXLAN to the Windows pods (the source address is the node's). The samples' Gateway needs neither:
its Envoy pods run on Linux nodes and reach Windows pods by their pod addresses.
"""
from __future__ import annotations

from typing import Any

from vocab.checks import require

METALLB_NAMESPACE = "metallb-system"
POOL_NAME = "hybrid-cluster"
METALLB_API_VERSION = "metallb.io/v1beta1"


def metallb_values() -> dict[str, Any]:
    """Values for the metallb chart: layer 2 only, so neither BGP backend is deployed (`frrk8s.enabled`
    defaults to true at v0.16.1 and would add the frr-k8s DaemonSet; `speaker.frr.enabled` is the deprecated
    FRR mode, off by default)."""
    return {"frrk8s": {"enabled": False}, "speaker": {"frr": {"enabled": False}}}


def address_pool(addresses: tuple[str, ...]) -> dict[str, Any]:
    """The IPAddressPool the configured ranges make (first-last or a prefix, as config.model wrote them)."""
    require(len(addresses) >= 1, "an address pool needs at least one range")
    return {"apiVersion": METALLB_API_VERSION, "kind": "IPAddressPool",
            "metadata": {"name": POOL_NAME, "namespace": METALLB_NAMESPACE},
            "spec": {"addresses": list(addresses)}}


def l2_advertisement() -> dict[str, Any]:
    """Announces the pool in layer 2 mode from Linux nodes (where the speakers run)."""
    return {"apiVersion": METALLB_API_VERSION, "kind": "L2Advertisement",
            "metadata": {"name": POOL_NAME, "namespace": METALLB_NAMESPACE},
            "spec": {"ipAddressPools": [POOL_NAME],
                     "nodeSelectors": [{"matchLabels": {"kubernetes.io/os": "linux"}}]}}
