"""The endpoints outside the cluster a stack names for its nodes and pods (the backup stores, the log server, the trace
backend, the registry mirrors, the ACME server), with how each is reached: the one list the stack rules (a private
HTTPS endpoint needs its CA) and the preflight (each reached, its certificate checked) both read."""
from __future__ import annotations

from dataclasses import dataclass

from .model import StackSpec


@dataclass(frozen=True)
class Endpoint:
    key: str                      # where the stack names it: "backup.primary", "observability.logs", "tracing", ...
    host: str                     # as the stack writes it
    port: int
    tls: bool
    ca_certificate: str | None


def url_host_port(url: str) -> tuple[str, int]:
    """An http(s) endpoint's host, as written, and port (443 or 80 when the URL gives none)."""
    scheme, _, rest = url.partition("://")
    host, _, port = rest.split("/", 1)[0].partition(":")
    return host, int(port) if port else (443 if scheme == "https" else 80)


def _url(key: str, url: str, ca_certificate: str | None) -> Endpoint:
    host, port = url_host_port(url)
    return Endpoint(key, host, port, url.startswith("https://"), ca_certificate)


def endpoints(spec: StackSpec) -> list[Endpoint]:
    found: list[Endpoint] = []
    if spec.backup is not None:
        for key, camel in (("primary", "primary"), ("offsite", "offsite"), ("recover_from", "recoverFrom")):
            store = getattr(spec.backup, key)
            if store is not None:
                found.append(_url(f"backup.{camel}", store.endpoint, store.ca_certificate))
    logs = spec.observability.logs if spec.observability is not None else None
    if logs is not None:
        found.append(Endpoint("observability.logs", logs.host, logs.port, logs.tls, logs.ca_certificate))
    if spec.tracing is not None:
        host, _, port = spec.tracing.endpoint.rpartition(":")
        found.append(Endpoint("tracing", host, int(port), not spec.tracing.insecure, spec.tracing.ca_certificate))
    for index, mirror in enumerate(spec.registry.mirrors):
        found.append(_url(f"registry.mirrors[{index}]", mirror.endpoint, mirror.ca_certificate))
    if spec.tls is not None and spec.tls.acme is not None:
        found.append(_url("tls.acme", spec.tls.acme.server, spec.tls.acme.ca_certificate))
    return found
