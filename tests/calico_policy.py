"""An offline evaluator of Calico policy for the tests: which of a pod's flows Calico allows, as Felix decides it on a
Linux node (iptables/nftables) and on a Windows node (HNS), for the subset of Calico's policy model the program and
Kubernetes NetworkPolicies use. It refuses what it does not model, rather than guess.

Semantics, from projectcalico/calico release-v3.33 (6609dea5) and tigera/docs (the notes of #36):
* Tiers in ascending `order` (missing last, ties by name: felix/calc/policy_sorter.go TierLess); within a tier,
  policies in ascending `order` (missing = +Inf, ties by name). A tier applies to an endpoint in a direction when one of
  its policies selects the endpoint and governs that direction (`types`); a tier that does not apply is skipped.
* Within an applying tier, rules of the selecting policies in order: the first matching rule's action decides (Allow,
  Deny final; Pass goes to the next applying tier; Log continues). No rule matched: the tier's defaultAction (Deny ends
  it; Pass goes on: docs reference/resources/tier "If the Tier applies to the endpoint, but takes no action on the packet
  the packet is dropped ... defaultAction ... Pass").
* After the last applying tier (or when none applies): the namespace profile `kns.<namespace>`, which allows both ways
  (libcalico-go lib/backend/k8s/conversion/conversion.go).
* Kubernetes NetworkPolicy: tier `default`, order 1000, selector `projectcalico.org/orchestrator == 'k8s' &&
  <podSelector>` within its namespace, `policyTypes` empty means [Ingress] (conversion.go K8sNetworkPolicyToCalico).
* Windows (felix/dataplane/windows): a rule with a negative match, a Log action or an ICMP type is skipped
  (policysets.go); tiers are flattened through their Pass rules (flattener.go), a Pass in the last tier blocks, and the
  profile is appended only when no policy applies in the direction or the default tier has none (endpoint_mgr.go); a
  tier whose defaultAction is Pass appends no drop, and nothing carries a packet past it except an explicit Pass rule.
"""
from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, field
from typing import Any

# --- selectors ------------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|&&|\|\||!|\(|\)|\{|\}|,)|(?P<kw>has|all|not in|in)\b|"
                    r"(?P<str>'[^']*'|\"[^\"]*\")|(?P<word>[A-Za-z0-9_./-]+))")


def _tokens(text: str) -> list[str]:
    out, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip() == "":
                break
            raise ValueError(f"cannot read the selector at {text[position:]!r}")
        out.append(match.group(match.lastgroup or "word"))
        position = match.end()
    return out


class Selector:
    """A Calico selector (docs _selectors.mdx): ==, !=, in {..}, not in {..}, has(k), all(), !, &&, || and
    parentheses. `!=` and `not in` also match an endpoint without the label."""

    def __init__(self, text: str):
        self.text = text
        self._tokens = _tokens(text)
        self._position = 0
        self._tree = self._or() if self._tokens else ("all",)
        if self._position != len(self._tokens):
            raise ValueError(f"trailing tokens in selector {text!r}")

    def _peek(self) -> str | None:
        return self._tokens[self._position] if self._position < len(self._tokens) else None

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if token is None or (expected is not None and token != expected):
            raise ValueError(f"selector {self.text!r}: expected {expected!r}, found {token!r}")
        self._position += 1
        return token

    def _or(self) -> tuple:
        left = self._and()
        while self._peek() == "||":
            self._take()
            left = ("or", left, self._and())
        return left

    def _and(self) -> tuple:
        left = self._not()
        while self._peek() == "&&":
            self._take()
            left = ("and", left, self._not())
        return left

    def _not(self) -> tuple:
        if self._peek() == "!":
            self._take()
            return ("not", self._not())
        return self._atom()

    def _atom(self) -> tuple:
        token = self._take()
        if token == "(":
            inner = self._or()
            self._take(")")
            return inner
        if token in ("has", "all"):
            self._take("(")
            if token == "all":
                self._take(")")
                return ("all",)
            key = self._take()
            self._take(")")
            return ("has", key)
        key = token
        op = self._take()
        if op in ("==", "!="):
            value = self._take()
            return (op, key, value.strip("'\""))
        if op in ("in", "not in"):
            self._take("{")
            values = []
            while self._peek() != "}":
                values.append(self._take().strip("'\""))
                if self._peek() == ",":
                    self._take()
            self._take("}")
            return (op, key, frozenset(values))
        raise ValueError(f"selector {self.text!r}: unknown operator {op!r}")

    def matches(self, labels: dict[str, str]) -> bool:
        def evaluate(node: tuple) -> bool:
            kind = node[0]
            if kind == "all":
                return True
            if kind == "has":
                return node[1] in labels
            if kind == "and":
                return evaluate(node[1]) and evaluate(node[2])
            if kind == "or":
                return evaluate(node[1]) or evaluate(node[2])
            if kind == "not":
                return not evaluate(node[1])
            key, value = node[1], node[2]
            if kind == "==":
                return labels.get(key) == value
            if kind == "!=":
                return labels.get(key) != value
            if kind == "in":
                return labels.get(key) in value
            return labels.get(key) not in value   # "not in"
        return evaluate(self._tree)


# --- endpoints, flows and policies ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str]
    ip: str
    os: str = "linux"                         # the node's OS: which dataplane enforces the pod's policy
    namespace_labels: dict[str, str] = field(default_factory=dict)

    def endpoint_labels(self) -> dict[str, str]:
        """The labels Felix sees on the pod's workload endpoint (conversion.go, workload_endpoint_default.go)."""
        return {**self.labels, "projectcalico.org/namespace": self.namespace, "projectcalico.org/orchestrator": "k8s"}

    def all_namespace_labels(self) -> dict[str, str]:
        return {"kubernetes.io/metadata.name": self.namespace, **self.namespace_labels}


@dataclass(frozen=True)
class Rule:
    action: str
    protocol: str | None = None
    nets: tuple[str, ...] = ()
    ports: tuple[int, ...] = ()
    selector: Selector | None = None            # peer endpoint selector
    namespace_selector: Selector | None = None  # peer namespace's labels
    peer_namespace: str | None = None           # a namespaced policy's rule selector stays in its namespace
    negative: bool = False                      # a not* match (skipped on Windows)

    def matches(self, protocol: str, peer_ip: str, port: int, peer: Pod | None) -> bool:
        if self.protocol is not None and self.protocol != protocol:
            return False
        if self.ports and port not in self.ports:
            return False
        if self.nets and not any(ipaddress.ip_address(peer_ip) in ipaddress.ip_network(n) for n in self.nets):
            return False
        if self.selector is not None or self.namespace_selector is not None:
            if peer is None:
                return False
            if self.peer_namespace is not None and self.namespace_selector is None and peer.namespace != self.peer_namespace:
                return False
            if self.selector is not None and not self.selector.matches(peer.endpoint_labels()):
                return False
            if self.namespace_selector is not None and not self.namespace_selector.matches(peer.all_namespace_labels()):
                return False
        return True


@dataclass(frozen=True)
class Policy:
    name: str
    tier: str
    order: float
    selector: Selector
    namespace: str | None                 # a namespaced policy selects only its namespace's pods
    types: tuple[str, ...]
    ingress: tuple[Rule, ...]
    egress: tuple[Rule, ...]

    def selects(self, pod: Pod) -> bool:
        return (self.namespace is None or pod.namespace == self.namespace) and self.selector.matches(pod.endpoint_labels())


@dataclass(frozen=True)
class Tier:
    name: str
    order: float
    default_action: str


DEFAULT_TIER = Tier("default", 1_000_000, "Deny")
_SUPPORTED_RULE_KEYS = {"action", "protocol", "source", "destination"}
_SUPPORTED_ENTITY_KEYS = {"nets", "ports", "selector", "namespaceSelector"}


def _entity(entity: dict[str, Any]) -> dict[str, Any]:
    unknown = set(entity) - _SUPPORTED_ENTITY_KEYS
    if unknown:
        raise ValueError(f"the evaluator does not model {sorted(unknown)}")
    return entity


def _calico_rule(rule: dict[str, Any], direction: str, namespace: str | None) -> Rule:
    unknown = set(rule) - _SUPPORTED_RULE_KEYS
    if unknown:
        raise ValueError(f"the evaluator does not model rule fields {sorted(unknown)}")
    peer = _entity(rule.get("destination" if direction == "egress" else "source", {}))
    if rule.get("source" if direction == "egress" else "destination"):
        raise ValueError("the evaluator does not model a rule on the endpoint's own side")
    ports = tuple(int(p) for p in peer.get("ports", ()))
    return Rule(action=rule["action"], protocol=rule.get("protocol"), nets=tuple(peer.get("nets", ())), ports=ports,
                selector=Selector(peer["selector"]) if "selector" in peer else None,
                namespace_selector=Selector(peer["namespaceSelector"]) if "namespaceSelector" in peer else None,
                peer_namespace=namespace)


def from_calico(obj: dict[str, Any]) -> Policy:
    kind, spec = obj["kind"], obj["spec"]
    if kind not in ("GlobalNetworkPolicy", "NetworkPolicy"):
        raise ValueError(f"not a Calico policy: {kind}")
    unknown = set(spec) - {"tier", "order", "selector", "types", "ingress", "egress"}
    if unknown:
        raise ValueError(f"the evaluator does not model {sorted(unknown)}")
    if "types" not in spec:
        raise ValueError("a policy without types: Felix reads it as both directions when no admission policy fills them")
    namespace = obj["metadata"].get("namespace") if kind == "NetworkPolicy" else None
    return Policy(name=obj["metadata"]["name"], tier=spec.get("tier", "default"), order=spec.get("order", math.inf),
                  selector=Selector(spec.get("selector", "all()")), namespace=namespace, types=tuple(spec["types"]),
                  ingress=tuple(_calico_rule(r, "ingress", namespace) for r in spec.get("ingress", ())),
                  egress=tuple(_calico_rule(r, "egress", namespace) for r in spec.get("egress", ())))


def _label_selector(selector: dict[str, Any]) -> str:
    """A Kubernetes LabelSelector as a Calico selector (matchLabels only: the evaluator refuses matchExpressions)."""
    if set(selector) - {"matchLabels"}:
        raise ValueError("the evaluator models matchLabels only")
    terms = [f"{key} == '{value}'" for key, value in sorted(selector.get("matchLabels", {}).items())]
    return " && ".join(terms) if terms else "all()"


def from_kubernetes(obj: dict[str, Any]) -> Policy:
    """A networking.k8s.io/v1 NetworkPolicy as Calico converts it."""
    spec, namespace = obj["spec"], obj["metadata"]["namespace"]
    types = tuple(spec.get("policyTypes") or ["Ingress"])

    def rules(direction: str) -> tuple[Rule, ...]:
        key, peer_key = ("ingress", "from") if direction == "ingress" else ("egress", "to")
        out = []
        for rule in spec.get(key, []) or []:
            ports = tuple(int(p["port"]) for p in rule.get("ports", ()) if "port" in p)
            protocols = {p.get("protocol", "TCP") for p in rule.get("ports", ())} or {None}
            peers = rule.get(peer_key) or [None]
            for peer in peers:
                for protocol in protocols:
                    if peer is None:
                        out.append(Rule(action="Allow", protocol=protocol, ports=ports))
                        continue
                    if "ipBlock" in peer:
                        if peer["ipBlock"].get("except"):
                            raise ValueError("ipBlock.except (notNets) is not modelled")
                        out.append(Rule(action="Allow", protocol=protocol, ports=ports, nets=(peer["ipBlock"]["cidr"],)))
                        continue
                    pod_selector = Selector(_label_selector(peer["podSelector"])) if "podSelector" in peer else Selector("all()")
                    namespace_selector = (Selector(_label_selector(peer["namespaceSelector"]))
                                          if "namespaceSelector" in peer else None)
                    out.append(Rule(action="Allow", protocol=protocol, ports=ports, selector=pod_selector,
                                    namespace_selector=namespace_selector, peer_namespace=namespace))
        return tuple(out)

    selector = f"projectcalico.org/orchestrator == 'k8s' && ({_label_selector(spec.get('podSelector', {}))})"
    return Policy(name=obj["metadata"]["name"], tier="default", order=1000, selector=Selector(selector),
                  namespace=namespace, types=types, ingress=rules("ingress"), egress=rules("egress"))


@dataclass
class Cluster:
    tiers: dict[str, Tier]
    policies: list[Policy]

    @classmethod
    def from_objects(cls, objects: list[dict[str, Any]]) -> Cluster:
        tiers = {"default": DEFAULT_TIER}
        policies = []
        for obj in objects:
            if obj["kind"] == "Tier":
                spec = obj.get("spec", {})
                tiers[obj["metadata"]["name"]] = Tier(obj["metadata"]["name"], spec.get("order", math.inf),
                                                      spec.get("defaultAction", "Deny"))
            elif obj["apiVersion"] == "networking.k8s.io/v1":
                policies.append(from_kubernetes(obj))
            elif obj["kind"] in ("GlobalNetworkPolicy", "NetworkPolicy"):
                policies.append(from_calico(obj))
        for policy in policies:
            if policy.tier not in tiers:
                raise ValueError(f"{policy.name}: tier {policy.tier} does not exist")
        return cls(tiers=tiers, policies=policies)

    def _applying(self, pod: Pod, direction: str) -> list[tuple[Tier, list[Policy]]]:
        kind = "Ingress" if direction == "ingress" else "Egress"
        found = []
        for tier in sorted(self.tiers.values(), key=lambda t: (t.order, t.name)):
            policies = sorted((p for p in self.policies if p.tier == tier.name and kind in p.types and p.selects(pod)),
                              key=lambda p: (p.order, p.name))
            if policies:
                found.append((tier, policies))
        return found

    def decide(self, pod: Pod, direction: str, protocol: str, peer_ip: str, port: int, peer: Pod | None = None) -> str:
        """"allow" or "deny" for one packet of `pod` (the source for egress, the destination for ingress)."""
        tiers = self._applying(pod, direction)
        windows = pod.os == "windows"
        if windows:
            return self._decide_windows(tiers, direction, protocol, peer_ip, port, peer)
        for tier, policies in tiers:
            outcome = None
            for policy in policies:
                for rule in (policy.egress if direction == "egress" else policy.ingress):
                    if rule.action == "Log" or not rule.matches(protocol, peer_ip, port, peer):
                        continue
                    outcome = rule.action
                    break
                if outcome is not None:
                    break
            if outcome == "Allow":
                return "allow"
            if outcome == "Deny":
                return "deny"
            if outcome is None and tier.default_action == "Deny":
                return "deny"
        return "allow"   # the namespace profile

    def _decide_windows(self, tiers: list[tuple[Tier, list[Policy]]], direction: str, protocol: str, peer_ip: str,
                        port: int, peer: Pod | None) -> str:
        default_applies = any(tier.name == "default" for tier, _ in tiers)
        flattened = [[r for p in policies for r in (p.egress if direction == "egress" else p.ingress)
                      if not r.negative and r.action != "Log"] for _, policies in tiers]
        if not tiers or not default_applies:
            flattened.append([Rule(action="Allow")])   # the profile
        for index, rules in enumerate(flattened):
            last = index == len(flattened) - 1
            for rule in rules:
                if not rule.matches(protocol, peer_ip, port, peer):
                    continue
                if rule.action == "Allow":
                    return "allow"
                if rule.action == "Deny" or (rule.action == "Pass" and last):
                    return "deny"
                break   # Pass: on to the next tier
            else:
                # No rule matched: the tier's drop (defaultAction Deny), or, with defaultAction Pass, nothing that carries
                # the packet on (only an explicit Pass rule is joined with the next tier: flattener.go).
                return "deny"
        return "deny"
