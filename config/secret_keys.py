"""The stack's secret config keys: what each holds and which stacks need it (a secret is required only by a
subsystem that is on). Pure: config.loader refuses these keys in clear, config.secrets reads them as Outputs,
and docs/configuration.md lists them from here."""
from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .model import StackSpec

Kind = Literal["text", "password", "proxmox-token", "ssh-private-key", "pem-certificate", "pem-private-key"]


@dataclass(frozen=True)
class SecretKey:
    description: str
    needed_when: str                              # for people: when a stack must set it
    needed: Callable[[StackSpec], bool]           # the same, for the program
    kind: Kind = "text"                           # what its value must look like (format_problem)


# What Proxmox VE issues and the bpg provider accepts: USER@REALM!TOKENID=UUID. The user may hold '@' (an e-mail
# address: the realm is what follows the last '@' that leaves one). Realm and token id are a letter then
# letters, digits, '.', '-', '_' (pve-access-control src/PVE/Auth/Plugin.pm $realm_regex, src/PVE/AccessControl.pm
# $token_subid_regex); the secret is a UUID (src/PVE/TokenConfig.pm UUID::uuid()); the provider refuses anything
# else before any call (terraform-provider-proxmox v0.111.1 proxmox/api/credentials.go ErrInvalidAPIToken).
_PROXMOX_TOKEN = re.compile(r"[^\s:/]+@[A-Za-z][A-Za-z0-9._-]+![A-Za-z][A-Za-z0-9._-]+="
                            r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# An OpenSSH private key file: the armour, then "openssh-key-v1\0" and the cipher name, "none" when the key has no
# passphrase (openssh-portable V_10_5_P1 sshkey.c MARK_BEGIN, PROTOCOL.key AUTH_MAGIC and "For unencrypted keys the
# cipher \"none\"").
_OPENSSH = re.compile(r"-----BEGIN OPENSSH PRIVATE KEY-----\s+([A-Za-z0-9+/=\s]+?)\s*-----END OPENSSH PRIVATE KEY-----")
_OPENSSH_MAGIC = b"openssh-key-v1\0"
_PEM_KEY = re.compile(r"-----BEGIN (RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----.+-----END (RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----",
                      re.DOTALL)
_PASSPHRASE = "is protected by a passphrase, which the program cannot give: store the key without one (only Pulumi's " \
              "encrypted configuration holds it)"


def _ssh_private_key(value: str) -> str | None:
    text = value.strip()
    if re.match(r"^(ssh-|ecdsa-|sk-)\S+ [A-Za-z0-9+/=]+", text):
        return "is a public key (the .pub file): give the private key file's content"
    match = _OPENSSH.search(text)
    if match is not None:
        try:
            blob = base64.b64decode("".join(match.group(1).split()), validate=True)
        except (binascii.Error, ValueError):
            return "is not an OpenSSH private key: its body is not base64"
        if not blob.startswith(_OPENSSH_MAGIC) or len(blob) < len(_OPENSSH_MAGIC) + 4:
            return "is not an OpenSSH private key (no openssh-key-v1 header)"
        offset = len(_OPENSSH_MAGIC)
        length = int.from_bytes(blob[offset:offset + 4], "big")
        return None if blob[offset + 4:offset + 4 + length] == b"none" else _PASSPHRASE
    if _PEM_KEY.search(text):
        return _PASSPHRASE if "ENCRYPTED" in text else None
    return "is not an SSH private key: give the content of the private key file (-----BEGIN OPENSSH PRIVATE KEY-----)"


def format_problem(kind: Kind, value: str) -> str | None:
    """What is wrong with a secret's value for its kind (never the value itself); None when it looks right."""
    if kind in ("text", "password"):
        return "is empty" if not value.strip() else None
    if kind == "proxmox-token":
        if value != value.strip():
            return "has white space around it, which the provider refuses: set it again without the newline"
        return None if _PROXMOX_TOKEN.fullmatch(value) else \
            "is not a Proxmox API token USER@REALM!TOKENID=UUID (e.g. pulumi@pve!hybrid-cluster=<the secret shown once " \
            "at `pveum user token add`>): give the token id and its secret joined by '='"
    if kind == "ssh-private-key":
        return _ssh_private_key(value)
    if kind == "pem-certificate":
        return None if "-----BEGIN CERTIFICATE-----" in value else "is not a PEM certificate (-----BEGIN CERTIFICATE-----)"
    return None if _PEM_KEY.search(value.strip()) and "ENCRYPTED" not in value else \
        "is not an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)"


def _windows(spec: StackSpec) -> bool:
    return bool(spec.nodes.windows)


def _offsite(spec: StackSpec) -> bool:
    return spec.backup is not None and (spec.backup.offsite is not None or spec.backup.recover_from is not None)


def _etcd_offsite(spec: StackSpec) -> bool:
    return spec.etcd_backup is not None and spec.backup is not None and spec.backup.offsite is not None


SECRETS: dict[str, SecretKey] = {
    "proxmoxApiToken": SecretKey("Proxmox VE API token, USER@REALM!TOKENID=UUID", "always", lambda _: True, kind="proxmox-token"),
    "proxmoxSshPrivateKey": SecretKey(
        "SSH private key of proxmox.sshUser on the Proxmox nodes (snippet uploads go over SSH)", "always", lambda _: True,
        kind="ssh-private-key"),
    "nodeSshPrivateKey": SecretKey("SSH private key matching access.sshPublicKeys, for the Linux nodes", "always",
                                   lambda _: True, kind="ssh-private-key"),
    "hypervSshPrivateKey": SecretKey(
        "SSH private key for the Hyper-V hosts' OpenSSH", "Windows nodes with hyperv.auth: privateKey (the default)",
        lambda s: _windows(s) and s.hyperv.auth == "privateKey", kind="ssh-private-key"),
    "hypervSshPassword": SecretKey(
        "SSH password for the Hyper-V hosts' OpenSSH", "Windows nodes with hyperv.auth: password",
        lambda s: _windows(s) and s.hyperv.auth == "password", kind="password"),
    "windowsAdminPassword": SecretKey(
        "the secret every Windows node's own local Administrator password is derived from (with the node's name and "
        "adminPasswordVersion; no two nodes share one, and no node's tells another's); nodes made by earlier "
        "releases, which had this password itself, are moved to their own by a rotation (docs/lifecycle.md)",
        "Windows nodes", _windows, kind="password"),
    "windowsAdminPasswordPrevious": SecretKey(
        "while rotating windowsAdminPassword: its previous value; each running guest still at a password derived "
        "from it is moved to the current one before anything signs in", "only during a rotation (optional)",
        lambda _: False, kind="password"),
    "bastionSshPrivateKey": SecretKey("SSH private key for access.bastion", "access.bastion",
                                      lambda s: s.access.bastion is not None, kind="ssh-private-key"),
    "smbUsername": SecretKey("user of the SMB share storage.smb.source", "storage.smb",
                             lambda s: s.storage is not None and s.storage.smb is not None),
    "smbPassword": SecretKey("password of the SMB share storage.smb.source", "storage.smb",
                             lambda s: s.storage is not None and s.storage.smb is not None, kind="password"),
    "tlsCaCertificate": SecretKey("PEM certificate of the internal CA cert-manager issues from", "tls.ca",
                                  lambda s: s.tls is not None and s.tls.ca is not None, kind="pem-certificate"),
    "tlsCaKey": SecretKey("PEM private key of that CA", "tls.ca", lambda s: s.tls is not None and s.tls.ca is not None,
                          kind="pem-private-key"),
    "grafanaAdminPassword": SecretKey("password of Grafana's admin user", "observability.metrics",
                                      lambda s: s.observability is not None and s.observability.metrics is not None, kind="password"),
    "backupAccessKeyId": SecretKey("access key of backup.primary's bucket", "backup",
                                   lambda s: s.backup is not None),
    "backupSecretAccessKey": SecretKey("secret key of backup.primary's bucket", "backup",
                                       lambda s: s.backup is not None, kind="password"),
    "offsiteAccessKeyId": SecretKey("access key of backup.offsite's bucket (and of backup.recoverFrom's)",
                                    "backup.offsite or backup.recoverFrom", lambda s: _offsite(s)),
    "offsiteSecretAccessKey": SecretKey("secret key of backup.offsite's bucket (and of backup.recoverFrom's)",
                                        "backup.offsite or backup.recoverFrom", lambda s: _offsite(s), kind="password"),
    "veleroRepositoryPassword": SecretKey(
        "password of Velero's file-system backup repositories (Kopia), 16 characters or more: give it before the first "
        "backup, Velero cannot change it afterwards, and a cluster recovering another's backups needs that cluster's "
        "(docs/backup.md)", "backup with fileSystemBackup (the default)",
        lambda s: s.backup is not None and s.backup.file_system_backup, kind="password"),
    "etcdOffsiteAccessKeyId": SecretKey(
        "access key the control-plane nodes upload their encrypted etcd snapshots to backup.offsite's bucket with: "
        "allowed only s3:PutObject and s3:GetObject on <bucket>/<prefix>-etcd/* (docs/backup.md)",
        "etcdBackup with backup.offsite", lambda s: _etcd_offsite(s)),
    "etcdOffsiteSecretAccessKey": SecretKey("secret key of etcdOffsiteAccessKeyId", "etcdBackup with backup.offsite",
                                            lambda s: _etcd_offsite(s), kind="password"),
}
SECRET_KEYS: dict[str, str] = {key: secret.description for key, secret in SECRETS.items()}
# Set only for an operation (a rotation), never required.
OPTIONAL_SECRET_KEYS = frozenset({"windowsAdminPasswordPrevious"})


def required_secrets(spec: StackSpec) -> list[str]:
    """The secret keys this stack must set, in table order."""
    return [key for key, secret in SECRETS.items() if secret.needed(spec)]
