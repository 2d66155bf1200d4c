"""The stack's secret config keys: what each holds and which stacks need it (a secret is required only by a
subsystem that is on). Pure: config.loader refuses these keys in clear, config.secrets reads them as Outputs,
and docs/configuration.md lists them from here."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .model import StackSpec


@dataclass(frozen=True)
class SecretKey:
    description: str
    needed_when: str                              # for people: when a stack must set it
    needed: Callable[[StackSpec], bool]           # the same, for the program


def _windows(spec: StackSpec) -> bool:
    return bool(spec.nodes.windows)


def _offsite(spec: StackSpec) -> bool:
    return spec.backup is not None and (spec.backup.offsite is not None or spec.backup.recover_from is not None)


def _etcd_offsite(spec: StackSpec) -> bool:
    return spec.etcd_backup is not None and spec.backup is not None and spec.backup.offsite is not None


SECRETS: dict[str, SecretKey] = {
    "proxmoxApiToken": SecretKey("Proxmox VE API token, USER@REALM!TOKENID=UUID", "always", lambda _: True),
    "proxmoxSshPrivateKey": SecretKey(
        "SSH private key of proxmox.sshUser on the Proxmox nodes (snippet uploads go over SSH)", "always", lambda _: True),
    "nodeSshPrivateKey": SecretKey("SSH private key matching access.sshPublicKeys, for the Linux nodes", "always",
                                   lambda _: True),
    "hypervSshPrivateKey": SecretKey(
        "SSH private key for the Hyper-V hosts' OpenSSH", "Windows nodes with hyperv.auth: privateKey (the default)",
        lambda s: _windows(s) and s.hyperv.auth == "privateKey"),
    "hypervSshPassword": SecretKey(
        "SSH password for the Hyper-V hosts' OpenSSH", "Windows nodes with hyperv.auth: password",
        lambda s: _windows(s) and s.hyperv.auth == "password"),
    "windowsAdminPassword": SecretKey(
        "the secret every Windows node's own local Administrator password is derived from (with the node's name and "
        "adminPasswordVersion; no two nodes share one, and no node's tells another's); nodes made by earlier "
        "releases, which had this password itself, are moved to their own by a rotation (docs/lifecycle.md)",
        "Windows nodes", _windows),
    "windowsAdminPasswordPrevious": SecretKey(
        "while rotating windowsAdminPassword: its previous value; each running guest still at a password derived "
        "from it is moved to the current one before anything signs in", "only during a rotation (optional)",
        lambda _: False),
    "bastionSshPrivateKey": SecretKey("SSH private key for access.bastion", "access.bastion",
                                      lambda s: s.access.bastion is not None),
    "smbUsername": SecretKey("user of the SMB share storage.smb.source", "storage.smb",
                             lambda s: s.storage is not None and s.storage.smb is not None),
    "smbPassword": SecretKey("password of the SMB share storage.smb.source", "storage.smb",
                             lambda s: s.storage is not None and s.storage.smb is not None),
    "tlsCaCertificate": SecretKey("PEM certificate of the internal CA cert-manager issues from", "tls.ca",
                                  lambda s: s.tls is not None and s.tls.ca is not None),
    "tlsCaKey": SecretKey("PEM private key of that CA", "tls.ca", lambda s: s.tls is not None and s.tls.ca is not None),
    "grafanaAdminPassword": SecretKey("password of Grafana's admin user", "observability.metrics",
                                      lambda s: s.observability is not None and s.observability.metrics is not None),
    "backupAccessKeyId": SecretKey("access key of backup.primary's bucket", "backup",
                                   lambda s: s.backup is not None),
    "backupSecretAccessKey": SecretKey("secret key of backup.primary's bucket", "backup",
                                       lambda s: s.backup is not None),
    "offsiteAccessKeyId": SecretKey("access key of backup.offsite's bucket (and of backup.recoverFrom's)",
                                    "backup.offsite or backup.recoverFrom", lambda s: _offsite(s)),
    "offsiteSecretAccessKey": SecretKey("secret key of backup.offsite's bucket (and of backup.recoverFrom's)",
                                        "backup.offsite or backup.recoverFrom", lambda s: _offsite(s)),
    "veleroRepositoryPassword": SecretKey(
        "password of Velero's file-system backup repositories (Kopia), 16 characters or more: give it before the first "
        "backup, Velero cannot change it afterwards, and a cluster recovering another's backups needs that cluster's "
        "(docs/backup.md)", "backup with fileSystemBackup (the default)",
        lambda s: s.backup is not None and s.backup.file_system_backup),
    "etcdOffsiteAccessKeyId": SecretKey(
        "access key the control-plane nodes upload their encrypted etcd snapshots to backup.offsite's bucket with: "
        "allowed only s3:PutObject and s3:GetObject on <bucket>/<prefix>-etcd/* (docs/backup.md)",
        "etcdBackup with backup.offsite", lambda s: _etcd_offsite(s)),
    "etcdOffsiteSecretAccessKey": SecretKey("secret key of etcdOffsiteAccessKeyId", "etcdBackup with backup.offsite",
                                            lambda s: _etcd_offsite(s)),
}
SECRET_KEYS: dict[str, str] = {key: secret.description for key, secret in SECRETS.items()}
# Set only for an operation (a rotation), never required.
OPTIONAL_SECRET_KEYS = frozenset({"windowsAdminPasswordPrevious"})


def required_secrets(spec: StackSpec) -> list[str]:
    """The secret keys this stack must set, in table order."""
    return [key for key, secret in SECRETS.items() if secret.needed(spec)]
