"""A Linux node's SSH host key, made by the program (a TLS provider key, one per node) so that every connection to
the node can pin it from its first boot: the `ssh_keys` the node's cloud-init user-data carries, the script that makes
that snippet root-only on Proxmox (render/scripts/snippet-private.sh), and the one that gives the key to a node that
booted without it (render/scripts/node-host-key.sh)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from render.script_files import render_script

_PRIVATE = re.compile(r"-----BEGIN OPENSSH PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END OPENSSH PRIVATE KEY-----\n?")
_PUBLIC = re.compile(r"ssh-ed25519 [A-Za-z0-9+/]+={0,2}")


@dataclass(frozen=True)
class HostKeyPair:
    private_openssh: str   # -----BEGIN OPENSSH PRIVATE KEY----- ... (a secret: only ever inside a secret Output)
    public: str            # ssh-ed25519 AAAA... (no comment)

    def __post_init__(self) -> None:
        if not _PRIVATE.fullmatch(self.private_openssh):
            raise ValueError("the host key's private half must be an OpenSSH private key")
        if not _PUBLIC.fullmatch(self.public):
            raise ValueError("the host key's public half must be an ssh-ed25519 key line without comment")


def public_line(openssh: str) -> str:
    """The `ssh-ed25519 AAAA...` line of an OpenSSH public key as the TLS provider writes it (with a newline)."""
    line = " ".join(openssh.split()[:2])
    if not _PUBLIC.fullmatch(line):
        raise ValueError("not an ssh-ed25519 public key")
    return line


def cloud_init_ssh_keys(pair: HostKeyPair) -> dict[str, str]:
    """cloud-init's `ssh_keys` (cc_ssh): given keys are written (0600/0644, root) after the image's are deleted
    (`ssh_deletekeys`, default true), and none is generated then, so the node presents exactly this key from its
    first boot; the key names are what the schema allows (`^(ecdsa|ed25519|rsa)_(public|private|certificate)$`)."""
    return {"ed25519_private": pair.private_openssh.rstrip("\n") + "\n", "ed25519_public": pair.public}


def pinned_key_of_user_data(user_data: str) -> str | None:
    """The public host key a node booted from this user-data presents, or None for user-data without `ssh_keys` (a
    node created by an earlier release, whose cloud-init generated keys of its own)."""
    found = re.search(r"^  ed25519_public: (ssh-ed25519 [A-Za-z0-9+/]+={0,2})$", user_data, re.M)
    return found.group(1) if found else None


_VOLUME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*:snippets/[A-Za-z0-9._-]+$")


def render_snippet_private(volume_id: str) -> str:
    """Bash run on the Proxmox node that stores the snippet `volume_id` (`<storage>:snippets/<file>`): mode 0600."""
    if not _VOLUME.match(volume_id):
        raise ValueError(f"{volume_id!r} is not a snippets volume id (<storage>:snippets/<file>)")
    return render_script("snippet-private.sh", VOLUME=volume_id)


def render_install_host_key() -> str:
    """Bash run over SSH on the node: install the key read from standard input unless the node presents it."""
    return render_script("node-host-key.sh")
