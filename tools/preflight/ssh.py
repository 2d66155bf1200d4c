"""The preflight's SSH client (paramiko): one command per session, the server's host key pinned as the program pins it,
through the stack's bastion when it has one, every step bounded by a timeout.

Facts it relies on (paramiko 5.1.0, read in its source; the notes of #41):

* With the pinned key in the client's host keys and RejectPolicy, paramiko asks the server for that key type first
  and raises BadHostKeyException when the server presents another key (client.py `connect`); without a pin
  (security.pinHostKeys false) any key is taken, as the program's connections take it (pulumi-command's
  InsecureIgnoreHostKey), and the check says so.
* A host on another port than 22 is looked up as `[host]:port` (OpenSSH's known_hosts form, which paramiko keeps).
* `timeout`, `banner_timeout`, `auth_timeout` and `channel_timeout` bound the connection; the command is bounded here by
  a deadline over its whole run (a thread left waiting cannot be killed, so nothing waits without one).
* The command's stdin is closed at once (EOF), unless the probe reads its input from it: powershell.exe waits for EOF
  on a redirected stdin (render/hyperv.py).
"""
from __future__ import annotations

import base64
import io
import threading
import time
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
    """The session could not run the command. `kind` says which step refused it, `stage` whether that was before the
    command ran ("connect": reaching the host, its key, the sign-in) or after ("exec"), and `bastion` whether it was the
    bastion's, for the fix."""

    def __init__(self, kind: str, message: str, stage: str = "connect", bastion: bool = False):
        super().__init__(message)
        self.kind = kind            # unreachable | host-key | auth | timeout | key | protocol
        self.stage = stage
        self.bastion = bastion


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


def _client(endpoint: Endpoint, sock: paramiko.Channel | None, bastion: bool = False) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    if endpoint.host_key is None:
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    else:
        key_type, data = endpoint.host_key.split()[:2]
        client.get_host_keys().add(_known_name(endpoint.host, endpoint.port), key_type,
                                   paramiko.PKey.from_type_string(key_type, base64.b64decode(data)))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
    where = f"{'the bastion ' if bastion else ''}{endpoint.user}@{endpoint.host}:{endpoint.port}"
    try:
        client.connect(endpoint.host, port=endpoint.port, username=endpoint.user,
                       pkey=load_private_key(endpoint.private_key) if endpoint.private_key else None,
                       password=endpoint.password, look_for_keys=False, allow_agent=False, sock=sock,
                       timeout=CONNECT_TIMEOUT_SECONDS, banner_timeout=CONNECT_TIMEOUT_SECONDS,
                       auth_timeout=CONNECT_TIMEOUT_SECONDS, channel_timeout=CONNECT_TIMEOUT_SECONDS)
    except paramiko.BadHostKeyException as error:
        client.close()
        raise SshError("host-key", f"{where} presented {error.key.get_name()} {error.key.get_base64()}, not the pinned "
                                   "key", bastion=bastion) from None
    except paramiko.AuthenticationException as error:
        client.close()
        # paramiko says "Authentication timeout." when the server does not answer the sign-in in auth_timeout.
        kind = "timeout" if "timeout" in str(error).lower() else "auth"
        raise SshError(kind, f"{where} refused the sign-in: {error}", bastion=bastion) from None
    except TimeoutError as error:
        client.close()
        raise SshError("timeout", f"{where} did not answer in {CONNECT_TIMEOUT_SECONDS} s ({error})",
                       bastion=bastion) from None
    except OSError as error:
        client.close()
        raise SshError("unreachable", f"{where}: {error.strerror or str(error) or type(error).__name__}", bastion=bastion) from None
    except (paramiko.SSHException, EOFError) as error:
        # EOFError: the server closed the connection during the key exchange (paramiko re-raises its transport's).
        client.close()
        raise SshError("protocol", f"{where}: {str(error) or 'the connection was closed during the key exchange'}",
                       bastion=bastion) from None
    return client


def run(endpoint: Endpoint, command: str, *, stdin: str | None = None, timeout: float = 60,
        bastion: Endpoint | None = None) -> Completed:
    """Run one command on `endpoint` (through `bastion` when given) and wait for its exit status."""
    jump = _client(bastion, None, bastion=True) if bastion is not None else None
    sock = None
    try:
        if jump is not None:
            transport = jump.get_transport()
            assert transport is not None
            try:
                sock = transport.open_channel("direct-tcpip", (endpoint.host, endpoint.port), ("127.0.0.1", 0),
                                              timeout=CONNECT_TIMEOUT_SECONDS)
            except (paramiko.SSHException, EOFError, OSError) as error:
                raise SshError("unreachable", f"the bastion could not reach {endpoint.host}:{endpoint.port}: {error}",
                               bastion=True) from None
        client = _client(endpoint, sock)
        try:
            return _execute(client, command, stdin, timeout)
        finally:
            client.close()
    finally:
        # The channel through the bastion is closed before the bastion's connection: the inner transport's thread
        # would otherwise close it later, on a connection already gone (an EOFError in that thread).
        if sock is not None:
            sock.close()
        if jump is not None:
            jump.close()


def _execute(client: paramiko.SSHClient, command: str, stdin: str | None, timeout: float) -> Completed:
    """The command's output and exit status, within `timeout` seconds of wall time in all. paramiko bounds only each
    read, and waits for the exec request's answer and the exit status without a limit: a watchdog closes the connection
    at the deadline, which ends any of those waits. Both streams are read as they come, so neither can fill its window
    and stall the other; the end is taken only once the exit status and EOF have both come, and what came before them
    is read after (SSH sends a channel's data before its EOF)."""
    out, err = bytearray(), bytearray()
    transport = client.get_transport()
    assert transport is not None
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        transport.close()
    watchdog = threading.Timer(timeout, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        channel = transport.open_session(timeout=CONNECT_TIMEOUT_SECONDS)
        channel.exec_command(command)
        if stdin is not None:
            channel.sendall(stdin.encode())
        channel.shutdown_write()
        while True:
            finished = channel.exit_status_ready() and (channel.eof_received or channel.closed)
            busy = False
            while channel.recv_ready():
                out += channel.recv(65536)
                busy = True
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(65536)
                busy = True
            if expired.is_set():
                # Closing the connection also ends the channel (closed, exit status -1): that is no answer.
                raise EOFError("the watchdog closed the connection")
            if finished:
                break
            if not busy:
                time.sleep(0.02)
        return Completed(out.decode(errors="replace"), err.decode(errors="replace"), channel.recv_exit_status())
    except (paramiko.SSHException, EOFError, OSError) as error:
        if expired.is_set():
            raise SshError("timeout", f"the command did not finish in {timeout:.0f} s", stage="exec") from None
        raise SshError("protocol", f"the session ended: {str(error) or 'closed'}", stage="exec") from None
    finally:
        watchdog.cancel()
