"""An SSH server on 127.0.0.1 for tools.preflight's tests (paramiko's server side, as its own tests and demo_server.py
use it): an ed25519 host key of its own, public-key (or password) sign-in for one user, and each exec request answered
by a handler `(command, stdin) -> (stdout, stderr, exit status)`. The exit status is sent before the channel closes, or
the client would read paramiko's default of -1."""
from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

Handler = Callable[[str, bytes], tuple[str, str, int]]


def ed25519_key() -> tuple[str, paramiko.Ed25519Key]:
    """A new ed25519 key: its OpenSSH private key text, and the paramiko key (paramiko cannot generate ed25519)."""
    text = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()).decode()
    return text, paramiko.Ed25519Key.from_private_key(io.StringIO(text))


def public_line(key: paramiko.PKey) -> str:
    """The key as a stack pins it: `ssh-ed25519 AAAA...`."""
    return f"{key.get_name()} {key.get_base64()}"


@dataclass
class FakeSsh:
    user: str
    handler: Handler
    client_key: paramiko.PKey | None = None
    password: str | None = None
    host_key: paramiko.Ed25519Key = field(default_factory=lambda: ed25519_key()[1])
    forward: bool = False                 # a bastion: direct-tcpip channels to 127.0.0.1 are forwarded
    auth_delay: float = 0                 # seconds the server takes to answer a sign-in
    commands: list[str] = field(default_factory=list)
    forwarded: list[tuple[str, int]] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def pin(self) -> str:
        return public_line(self.host_key)

    def close(self) -> None:
        """Stop listening: later connections are refused (shutdown wakes the thread blocked in accept, which a close
        from another thread does not)."""
        self.closed = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        transport = paramiko.Transport(conn)
        transport.add_server_key(self.host_key)
        server = _Server(self)
        try:
            transport.start_server(server=server)
            channel = transport.accept(10)
            if channel is not None and server.destination is not None:
                self._forward(channel, server.destination)
                # As sshd does, the connection outlives its forwarded channel: the client closes it (within 10 s).
                deadline = time.monotonic() + 10
                while transport.is_active() and time.monotonic() < deadline:
                    time.sleep(0.01)
                return
            if channel is None or not server.exec_event.wait(10):
                return
            stdin = b""
            while True:
                chunk = channel.recv(65536)
                if not chunk:
                    break
                stdin += chunk
            self.commands.append(server.command)
            out, err, status = self.handler(server.command, stdin)
            channel.sendall(out.encode())
            channel.sendall_stderr(err.encode())
            channel.send_exit_status(status)
            channel.shutdown_write()
            channel.close()
        except (paramiko.SSHException, EOFError, OSError):
            pass
        finally:
            try:
                transport.close()
            except (paramiko.SSHException, EOFError, OSError):
                pass


    def _forward(self, channel: paramiko.Channel, destination: tuple[str, int]) -> None:
        """Copy bytes both ways between the channel and a connection to the destination, until either side ends."""
        self.forwarded.append(destination)
        upstream = socket.create_connection(destination, timeout=10)

        def pump(read: Callable[[int], bytes], write: Callable[[bytes], object]) -> None:
            try:
                while data := read(65536):
                    write(data)
            except (OSError, EOFError, paramiko.SSHException):
                pass
            finally:
                try:
                    channel.close()
                except (OSError, EOFError, paramiko.SSHException):
                    pass
                upstream.close()
        threading.Thread(target=pump, args=(upstream.recv, channel.sendall), daemon=True).start()
        pump(channel.recv, upstream.sendall)


class _Server(paramiko.ServerInterface):
    def __init__(self, fake: FakeSsh):
        self.fake = fake
        self.command = ""
        self.destination: tuple[str, int] | None = None
        self.exec_event = threading.Event()

    def get_allowed_auths(self, username: str) -> str:
        return "password" if self.fake.password is not None else "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        time.sleep(self.fake.auth_delay)
        ok = username == self.fake.user and self.fake.client_key is not None and key == self.fake.client_key
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_auth_password(self, username: str, password: str) -> int:
        ok = username == self.fake.user and password == self.fake.password
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_direct_tcpip_request(self, chanid: int, origin: tuple[str, int],
                                           destination: tuple[str, int]) -> int:
        if not self.fake.forward or destination[0] != "127.0.0.1":
            return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED
        self.destination = destination
        return paramiko.OPEN_SUCCEEDED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        self.command = command.decode()
        self.exec_event.set()
        return True
