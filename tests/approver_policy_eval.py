"""approver-policy v0.27.0's decision on one CertificateRequest, as its source makes it, over the objects the program
renders: which policies apply (pkg/internal/approver/manager/predicate/predicate.go: SelectorIssuerRef,
SelectorNamespace, RBACBound), what each allows (pkg/internal/approver/allowed/evaluator.go: evaluateSlice,
evaluateString, evaluateBool, Usages; pkg/internal/util/wildcard.go) and how their answers combine
(pkg/internal/approver/manager/review.go). Only what the program's policies use is modelled: no `validations`
(CEL), no `constraints`, no plugins, no namespace label selector; the RBAC check reads ClusterRoles and
ClusterRoleBindings only, which is all the program writes for it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

Decision = Literal["approved", "denied", "pending"]


@dataclass(frozen=True)
class Request:
    """A CertificateRequest: its namespace, recorded user, issuer, and what its CSR and spec ask for."""
    namespace: str
    username: str
    issuer: tuple[str, str, str]                     # name, kind, group
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    uris: tuple[str, ...] = ()
    email_addresses: tuple[str, ...] = ()
    common_name: str = ""
    organizations: tuple[str, ...] = ()
    is_ca: bool = False
    usages: tuple[str, ...] = ()


def wildcard_matches(pattern: str, member: str) -> bool:
    """util.WildcardMatches: `*` is any text (also none); nothing else is special."""
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), member, re.DOTALL) is not None


def wildcard_subset(patterns: list[str], members: tuple[str, ...] | list[str]) -> bool:
    return all(any(wildcard_matches(p, m) for p in patterns) for m in members)


def _issuer_matches(selector: dict[str, Any] | None, issuer: tuple[str, str, str]) -> bool:
    """SelectorIssuerRef: an empty kind means Issuer and an empty group cert-manager.io, on the request's side;
    each selector field is a wildcard, absent means any."""
    if selector is None:
        return True
    name, kind, group = issuer
    kind, group = kind or "Issuer", group or "cert-manager.io"
    return all(wildcard_matches(selector.get(key, "*"), value)
               for key, value in (("name", name), ("kind", kind), ("group", group)))


def _namespace_matches(selector: dict[str, Any] | None, namespace: str) -> bool:
    if selector is None:
        return True
    assert "matchLabels" not in selector, "namespace label selectors are not modelled"
    names = selector.get("matchNames")
    return not names or any(wildcard_matches(p, namespace) for p in names)


def _may_use(objects: list[dict[str, Any]], username: str, policy: str) -> bool:
    """RBACBound: the request's user may `use` certificaterequestpolicies/<policy> (cluster-wide bindings only)."""
    roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    for binding in (o for o in objects if o["kind"] == "ClusterRoleBinding"):
        subjects = binding.get("subjects", [])
        if not any(s["kind"] == "ServiceAccount" and username == f"system:serviceaccount:{s['namespace']}:{s['name']}"
                   or s["kind"] == "User" and s["name"] == username for s in subjects):
            continue
        role = roles.get(binding["roleRef"]["name"])
        for rule in role["rules"] if role else ():
            if ("policy.cert-manager.io" in rule["apiGroups"] and "certificaterequestpolicies" in rule["resources"]
                    and "use" in rule["verbs"] and ("resourceNames" not in rule or policy in rule["resourceNames"])):
                return True
    return False


def _slice_errors(values: tuple[str, ...], allowed: dict[str, Any] | None) -> bool:
    """evaluateSlice: an empty request attribute fails only when required; a set one needs allowed values."""
    if not values:
        return bool(allowed and allowed.get("required"))
    if allowed is None or allowed.get("values") is None:
        return True
    return not wildcard_subset(allowed["values"], values)


def _string_errors(value: str, allowed: dict[str, Any] | None) -> bool:
    if not value:
        return bool(allowed and allowed.get("required"))
    if allowed is None or allowed.get("value") is None:
        return True
    return not wildcard_matches(allowed["value"], value)


def _allows(policy: dict[str, Any], request: Request) -> bool:
    allowed = policy["spec"].get("allowed") or {}
    failed = [
        _string_errors(request.common_name, allowed.get("commonName")),
        _slice_errors(request.dns_names, allowed.get("dnsNames")),
        _slice_errors(request.ip_addresses, allowed.get("ipAddresses")),
        _slice_errors(request.uris, allowed.get("uris")),
        _slice_errors(request.email_addresses, allowed.get("emailAddresses")),
        request.is_ca and not allowed.get("isCA", False),
        bool(request.usages) and ("usages" not in allowed or not wildcard_subset(allowed["usages"], request.usages)),
        _slice_errors(request.organizations, (allowed.get("subject") or {}).get("organizations")),
    ]
    return not any(failed)


def decide(objects: list[dict[str, Any]], request: Request) -> Decision:
    """review.go: no policy applies -> pending; one allows -> approved; all that apply deny -> denied."""
    applicable = [p for p in objects if p["kind"] == "CertificateRequestPolicy"
                  and _issuer_matches(p["spec"]["selector"].get("issuerRef"), request.issuer)
                  and _namespace_matches(p["spec"]["selector"].get("namespace"), request.namespace)
                  and _may_use(objects, request.username, p["metadata"]["name"])]
    if not applicable:
        return "pending"
    return "approved" if any(_allows(p, request) for p in applicable) else "denied"
