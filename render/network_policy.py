"""Renders the network policies of config `security.networkPolicy` (NetworkPolicyParams, Flow; plan/security.py says
what they protect and let through): Calico policies in a tier of their own that keep every pod, in every namespace
including those made later, off the protected networks and off the administrative ports of the node network, with one
stated exception per component that must reach one; and Kubernetes NetworkPolicies that default-deny ingress in the
application namespaces.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from vocab.checks import DNS_LABEL, require

# Calico sources below: projectcalico/calico release-v3.33 6609dea5 unless said (the notes of #36).

TIER = "hybrid-infrastructure"
# After the operator's `calico-system` tier (100), before `kube-admin` (1000) and `default` (1,000,000)
# (felix/calc/policy_sorter.go orders tiers by `order`). A tier's policies are evaluated before the next tier's, so no
# NetworkPolicy a namespace's owner writes (it lands in `default`, order 1000: libcalico-go conversion.go
# K8sNetworkPolicyToCalico) can allow what this tier denies, and what this tier passes on those NetworkPolicies still
# decide (Pass: "skips to the next tier that contains a policy that applies to the endpoint", docs tiered-policy).
TIER_ORDER = 500
ALLOW_ORDER = 100
DENY_ORDER = 200
# Every pod, no host endpoint: workload endpoints carry `projectcalico.org/namespace`
# (api/pkg/apis/projectcalico/v3/constants.go), host endpoints do not. Pods on the host network have no workload endpoint
# and are outside these policies (conversion.go IsValidCalicoWorkloadEndpoint): Calico, kube-proxy, the CSI node plugins,
# node-exporter and MetalLB's speakers, each in a namespace exempt from or privileged for Pod Security (plan/security.py),
# which no ordinary pod can use.
EVERY_POD = "has(projectcalico.org/namespace)"
CALICO_API = "projectcalico.org/v3"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
PROTOCOLS = ("TCP", "UDP")


@dataclass(frozen=True)
class Flow:
    name: str
    namespace: str
    pod_selector: str | None
    # Addresses: Calico's open-source policy has no domain names, so a flow to a server named by DNS is let through to
    # the protected networks on that server's port only (plan/security.py).
    nets: tuple[str, ...]
    protocol: str
    ports: tuple[int, ...]


@dataclass(frozen=True)
class NetworkPolicyParams:
    protected_networks: tuple[str, ...]
    node_networks: tuple[str, ...]
    node_admin_ports: tuple[int, ...]
    allowed: tuple[Flow, ...]
    application_namespaces: tuple[str, ...]
    ingress_sources: tuple[str, ...]


# Every rule uses only matches Calico for Windows enforces, so it means the same on both operating systems: positive
# `nets`, `ports`, protocol, selectors; no negative match (a rule with notNets, notPorts or notSelector is skipped on
# Windows: policysets.go ruleHasNegativeMatches), no Log, no ICMP type.
def _check(p: NetworkPolicyParams) -> None:
    for cidr in (*p.protected_networks, *p.node_networks, *(f for flow in p.allowed for f in flow.nets)):
        ipaddress.IPv4Network(cidr)
    for flow in p.allowed:
        require(bool(DNS_LABEL.match(flow.name)), f"flow name {flow.name!r} is not a DNS label")
        require(bool(DNS_LABEL.match(flow.namespace)), f"namespace {flow.namespace!r} is not a DNS label")
        require(flow.protocol in PROTOCOLS, f"{flow.name}: protocol {flow.protocol!r} is not one of {PROTOCOLS}")
        require(bool(flow.nets) and bool(flow.ports), f"{flow.name}: a flow names its networks and ports")
        require(flow.pod_selector is None or "!" not in flow.pod_selector.replace("!=", ""),
                f"{flow.name}: no negative selector (Calico for Windows skips such rules)")
    require(len({f.name for f in p.allowed}) == len(p.allowed), "flow names repeat")
    for name in (*p.application_namespaces, *p.ingress_sources):
        require(bool(DNS_LABEL.match(name)), f"namespace {name!r} is not a DNS label")
    require(all(1 <= port <= 65535 for port in (*p.node_admin_ports, *(x for f in p.allowed for x in f.ports))),
            "ports are 1-65535")


def _gnp(name: str, order: int, selector: str, egress: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": CALICO_API, "kind": "GlobalNetworkPolicy",
        "metadata": {"name": name},
        # `types` always written: without Calico's MutatingAdmissionPolicy a policy with no types applies both ways
        # (policy_sorter.go "no Types means Ingress and Egress").
        "spec": {"tier": TIER, "order": order, "selector": selector, "types": ["Egress"], "egress": egress},
    }


def infrastructure_policies(p: NetworkPolicyParams) -> list[dict[str, Any]]:
    """The tier, one Allow policy per flow that must reach a protected destination, and the policy that denies the
    rest of the protected destinations to every pod and passes everything else on."""
    _check(p)
    objects: list[dict[str, Any]] = [{
        "apiVersion": CALICO_API, "kind": "Tier", "metadata": {"name": TIER},
        "spec": {"order": TIER_ORDER, "defaultAction": "Pass"},
    }]
    for flow in p.allowed:
        selector = f"projectcalico.org/namespace == '{flow.namespace}'"
        if flow.pod_selector:
            selector += f" && {flow.pod_selector}"
        objects.append(_gnp(f"{TIER}-allow-{flow.name}", ALLOW_ORDER, selector, [{
            "action": "Allow", "protocol": flow.protocol,
            "destination": {"nets": list(flow.nets), "ports": list(flow.ports)},
        }]))
    deny: list[dict[str, Any]] = []
    if p.protected_networks:
        deny.append({"action": "Deny", "destination": {"nets": list(p.protected_networks)}})
    if p.node_networks and p.node_admin_ports:
        deny.append({"action": "Deny", "protocol": "TCP",
                     "destination": {"nets": list(p.node_networks), "ports": list(p.node_admin_ports)}})
    # An explicit catch-all Pass, besides the tier's defaultAction Pass: on Windows, Felix flattens tiers by joining each
    # Pass rule with the next tier's rules, so only an explicit Pass rule carries a packet on
    # (felix/dataplane/windows/flattener.go); a Pass in the last tier that applies becomes a block there, which cannot
    # happen here because the profiles (allow) follow when no default-tier policy applies (endpoint_mgr.go).
    deny.append({"action": "Pass"})
    objects.append(_gnp(f"{TIER}-deny", DENY_ORDER, EVERY_POD, deny))
    return objects


def application_policies(p: NetworkPolicyParams) -> list[dict[str, Any]]:
    """Per application namespace: ingress denied but from the namespace itself and the stated sources."""
    _check(p)
    objects: list[dict[str, Any]] = []
    for namespace in p.application_namespaces:
        def policy(name: str, ingress: list[dict[str, Any]] | None, ns: str = namespace) -> dict[str, Any]:
            spec: dict[str, Any] = {"podSelector": {}, "policyTypes": ["Ingress"]}
            if ingress is not None:
                spec["ingress"] = ingress
            return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": {"name": name, "namespace": ns}, "spec": spec}
        objects.append(policy("default-deny-ingress", None))
        objects.append(policy("allow-same-namespace", [{"from": [{"podSelector": {}}]}]))
        for source in p.ingress_sources:
            objects.append(policy(f"allow-from-{source}", [{"from": [{
                "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: source}}}]}]))
    return objects
