"""Application namespaces as both the config layer and the renderer see them: the operating systems a
namespace is for, Kubernetes resource quantities, and the rules a namespace's quota and container defaults
obey (config.rules reports them at their key paths, render.scheduling refuses to render against them)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from vocab.checks import DNS_LABEL, require

OPERATING_SYSTEMS = ("linux", "windows")

# resource.Quantity serialisation: a signed decimal number, then an optional binary suffix (Ki..Ei),
# decimal SI suffix (n u m "" k M G T P E) or decimal exponent (k8s.io/apimachinery/pkg/api/resource
# quantity.go, "<quantity> ::= <signedNumber><suffix>").
_QUANTITY = re.compile(r"^(?P<number>[+-]?(\d+(\.\d*)?|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal("1e3"),
            "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"),
            "E": Decimal("1e18")}


def parse_quantity(text: str) -> Decimal:
    """The value of a Kubernetes resource quantity ("250m" -> 0.25, "1Gi" -> 1073741824)."""
    match = _QUANTITY.match(str(text))
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes resource quantity")
    try:
        number = Decimal(match.group("number"))
    except InvalidOperation as error:  # pragma: no cover - the regex only passes decimals
        raise ValueError(f"{text!r} is not a Kubernetes resource quantity") from error
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    if suffix[:1] in ("e", "E"):
        return number.scaleb(int(suffix[1:]))
    return number


@dataclass(frozen=True)
class NamespaceParams:
    name: str                      # "win-prod" / "linux-prod": the prefix names the OS its pods run on
    os: str                        # "windows" | "linux"
    cpu_requests: str              # ResourceQuota hard requests.cpu, e.g. "8"
    memory_requests: str           # ResourceQuota hard requests.memory, e.g. "16Gi"
    cpu_limits: str                # ResourceQuota hard limits.cpu
    memory_limits: str             # ResourceQuota hard limits.memory
    pods: int                      # ResourceQuota hard pods
    default_cpu_request: str       # LimitRange defaultRequest.cpu for containers that state none
    default_memory_request: str
    default_cpu_limit: str         # LimitRange default.cpu
    default_memory_limit: str
    pod_security: str              # "restricted" | "baseline" | "privileged"
    pod_security_version: str = "latest"   # enforce-version: "latest" or a minor like "v1.36"


def quota(p: NamespaceParams) -> dict[str, str]:
    """The namespace's ResourceQuota ``hard`` limits, by quota key."""
    return {"requests.cpu": p.cpu_requests, "requests.memory": p.memory_requests, "limits.cpu": p.cpu_limits,
            "limits.memory": p.memory_limits, "pods": str(p.pods)}


def check_namespace(p: NamespaceParams) -> None:
    """Raise ValueError unless the namespace is well formed: its name says its OS, its quantities relate."""
    require(bool(DNS_LABEL.match(p.name)), f"namespace {p.name!r} is not a DNS-1123 label")
    require(p.os in OPERATING_SYSTEMS, f"{p.name}: os {p.os!r} is not one of {OPERATING_SYSTEMS}")
    prefix = "win-" if p.os == "windows" else "linux-"
    require(p.name.startswith(prefix), f"{p.name}: {p.os} namespaces are named {prefix}*")
    require(isinstance(p.pods, int) and p.pods >= 1, f"{p.name}: pods quota must be a positive integer")
    pairs = (
        ("cpu", p.default_cpu_request, p.default_cpu_limit, p.cpu_requests, p.cpu_limits),
        ("memory", p.default_memory_request, p.default_memory_limit, p.memory_requests, p.memory_limits),
    )
    for resource, default_request, default_limit, quota_requests, quota_limits in pairs:
        values = [parse_quantity(q) for q in (default_request, default_limit, quota_requests, quota_limits)]
        require(all(v > 0 for v in values), f"{p.name}: {resource} quantities must be positive")
        # A default request above the default limit makes the API reject every defaulted container.
        require(values[0] <= values[1], f"{p.name}: default {resource} request exceeds the default limit")
        require(values[2] <= values[3], f"{p.name}: {resource} requests quota exceeds the limits quota")
        require(values[1] <= values[3], f"{p.name}: one defaulted container would exceed the {resource} quota")
