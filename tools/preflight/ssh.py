"""The preflight's SSH client (paramiko): one command per session, the server's host key pinned as the program pins it,
through the stack's bastion when it has one, every step bounded by a timeout.

Facts it relies on (paramiko 5.1.0, read in its source; the notes of #41):

* With the pinned key in the client's host keys and RejectPolicy, paramiko asks the server for that key type first
  and raises BadHostKeyException when the server presents another key (client.py `connect`); without a pin
  (security.pinHostKeys false) any key is taken, as the program's connections take it (pulumi-command's
  InsecureIgnoreHostKey), and the check says so.
* A host on another port than 22 is looked up as `[host]:port` (OpenSSH's known_hosts form, which paramiko keeps).
* `timeout`, `banner_timeout`, `auth_timeout` and `channel_timeout` bound the connection, and `exec_command(timeout=)`
  each read; a thread left waiting cannot be killed, so every one is set.
* The command's stdin is closed at once (EOF), unless the probe reads its input from it: powershell.exe waits for EOF
  on a redirected stdin (render/hyperv.py).
"""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import paramiko

CONNECT_TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class Endpoint:
    """Where to sign in and how: one of `private_key` (OpenSSH or PEM text) and `password`."""
    host: str
    port: int
    user: str
    host_key: str | None                 # "ssh-ed25519 AAAA...", as the stack pins it; None: not pinned
    private_key: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class Completed:
    stdout: str
    stderr: str
    status: int


class SshError(Exception):
    """The session could not run the command; `kind` says which step refused it, for the fix."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind            # unreachable | host-key | auth | timeout | key | protocol


def load_private_key(text: str) -> paramiko.PKey:
    """An OpenSSH or PEM private key of any type the program accepts (ed25519, ECDSA, RSA); no passphrase."""
    for kind in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return kind.from_private_key(io.StringIO(text))
        except (paramiko.SSHException, ValueError):
            continue
    raise SshError("key", "the private key is not an unencrypted ed25519, ECDSA or RSA key")


def _known_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def _client(endpoint: Endpoint, sock: paramiko.Channel | None) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    if endpoint.host_key is None:
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    else:
        key_type, data = endpoint.host_key.split()[:2]
        client.get_host_keys().add(_known_name(endpoint.host, endpoint.port), key_type,
                                   paramiko.PKey.from_type_string(key_type, base64.b64decode(data)))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
    where = f"{endpoint.user}@{endpoint.host}:{endpoint.port}"
    try:
        client.connect(endpoint.host, port=endpoint.port, username=endpoint.user,
                       pkey=load_private_key(endpoint.private_key) if endpoint.private_key else None,
                       password=endpoint.password, look_for_keys=False, allow_agent=False, sock=sock,
                       timeout=CONNECT_TIMEOUT_SECONDS, banner_timeout=CONNECT_TIMEOUT_SECONDS,
                       auth_timeout=CONNECT_TIMEOUT_SECONDS, channel_timeout=CONNECT_TIMEOUT_SECONDS)
    except paramiko.BadHostKeyException as error:
        client.close()
        raise SshError("host-key", f"{where} presented {error.key.get_name()} {error.key.get_base64()}, not the pinned "
                                   "key") from None
    except paramiko.AuthenticationException as error:
        client.close()
        raise SshError("auth", f"{where} refused the sign-in: {error}") from None
    except TimeoutError as error:
        client.close()
        raise SshError("timeout", f"{where} did not answer in {CONNECT_TIMEOUT_SECONDS} s ({error})") from None
    except OSError as error:
        client.close()
        raise SshError("unreachable", f"{where}: {error.strerror or error}") from None
    except paramiko.SSHException as error:
        client.close()
        raise SshError("protocol", f"{where}: {error}") from None
    return client


def run(endpoint: Endpoint, command: str, *, stdin: str | None = None, timeout: float = 60,
        bastion: Endpoint | None = None) -> Completed:
    """Run one command on `endpoint` (through `bastion` when given) and wait for its exit status."""
    jump = _client(bastion, None) if bastion is not None else None
    try:
        sock = None
        if jump is not None:
            transport = jump.get_transport()
            assert transport is not None
            try:
                sock = transport.open_channel("direct-tcpip", (endpoint.host, endpoint.port), ("127.0.0.1", 0),
                                              timeout=CONNECT_TIMEOUT_SECONDS)
            except (paramiko.SSHException, OSError) as error:
                raise SshError("unreachable", f"the bastion could not reach {endpoint.host}:{endpoint.port}: {error}") \
                    from None
        client = _client(endpoint, sock)
        try:
            try:
                channel_in, channel_out, channel_err = client.exec_command(command, timeout=timeout)
                if stdin is not None:
                    channel_in.write(stdin)
                channel_in.close()
                out, err = channel_out.read(), channel_err.read()
                status = channel_out.channel.recv_exit_status()
            except TimeoutError:
                raise SshError("timeout", f"the command did not finish in {timeout:.0f} s") from None
            except paramiko.SSHException as error:
                raise SshError("protocol", str(error)) from None
            return Completed(out.decode(errors="replace"), err.decode(errors="replace"), status)
        finally:
            client.close()
    finally:
        if jump is not None:
            jump.close()
