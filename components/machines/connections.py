"""SSH connections for remote commands: to Linux nodes, to Hyper-V hosts, optionally through a bastion."""
from __future__ import annotations

import hashlib
import json

import pulumi
import pulumi_command as command

from plan.cluster import Bastion


def ssh_connection(
    host: str,
    user: str,
    *,
    port: int = 22,
    host_key: pulumi.Input[str | None] | None = None,
    private_key: pulumi.Output[str] | None = None,
    password: pulumi.Output[str] | None = None,
    bastion: Bastion | None = None,
    bastion_private_key: pulumi.Output[str] | None = None,
) -> command.remote.ConnectionArgs:
    """Connection arguments; the bastion, when configured, authenticates with its own key. With a host key
    given, the connection is refused unless the server presents it (pulumi-command v1.2.1 remote/connection.go:
    ssh.FixedHostKey; without one, ssh.InsecureIgnoreHostKey)."""
    proxy = None
    if bastion is not None:
        proxy = command.remote.ProxyConnectionArgs(
            host=bastion.host, port=bastion.port, user=bastion.user, private_key=bastion_private_key,
            host_key=bastion.host_key,
        )
    return command.remote.ConnectionArgs(
        host=host,
        port=port,
        user=user,
        private_key=private_key,
        password=password,
        host_key=host_key,  # type: ignore[arg-type]  # an Output that may resolve to None: no pin, as unset
        proxy=proxy,
        # A node still booting (or rebooting) refuses connections for minutes: keep dialling, but not
        # forever (pulumi-command's default is 10 attempts).
        dial_error_limit=100,
        per_dial_timeout=30,
    )


def connection_digest(connection: command.remote.ConnectionArgs) -> pulumi.Output[str]:
    """16 hex digits of a SHA-256 over everything a connection dials and authenticates with: it changes when
    a host, user, key or bastion does. Deliberately not secret: a truncated digest reveals nothing of a key."""
    parts: list[object] = [connection.host, connection.port, connection.user, connection.private_key,
                           connection.password, connection.host_key]
    proxy = connection.proxy
    if proxy is not None:
        if not isinstance(proxy, command.remote.ProxyConnectionArgs):
            raise ValueError("connection_digest takes a connection as ssh_connection builds it (its proxy a ProxyConnectionArgs)")
        parts += [proxy.host, proxy.port, proxy.user, proxy.private_key, proxy.password, proxy.host_key]
    digest = pulumi.Output.all(*parts).apply(
        lambda values: hashlib.sha256(json.dumps(values, default=str).encode()).hexdigest()[:16])
    return pulumi.Output.unsecret(digest)
