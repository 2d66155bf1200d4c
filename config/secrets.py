"""Reads the stack's secrets as secret Outputs. They never enter the validated model or plain state."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import pulumi

from .loader import PROJECT
from .model import StackSpec
from .secret_keys import SECRETS, format_problem, required_secrets


@dataclass(frozen=True)
class Secrets:
    proxmox_api_token: pulumi.Output[str]
    proxmox_ssh_private_key: pulumi.Output[str]
    node_ssh_private_key: pulumi.Output[str]
    # Only the subsystems that are on need theirs: storage.smb, observability.metrics.
    smb_credentials: tuple[pulumi.Output[str], pulumi.Output[str]] | None
    grafana_admin_password: pulumi.Output[str] | None
    # tls.ca: the internal CA's certificate and key (PEM).
    tls_ca: tuple[pulumi.Output[str], pulumi.Output[str]] | None
    # Only stacks with Windows nodes need these.
    hyperv_ssh_private_key: pulumi.Output[str] | None
    hyperv_ssh_password: pulumi.Output[str] | None
    windows_admin_password: pulumi.Output[str] | None
    bastion_ssh_private_key: pulumi.Output[str] | None
    # Optional, during a rotation of windowsAdminPassword (docs/lifecycle.md: Rotating credentials).
    windows_admin_password_previous: pulumi.Output[str] | None = None
    # backup: the access key pair of backup.primary's bucket, and of backup.offsite's.
    backup_primary: tuple[pulumi.Output[str], pulumi.Output[str]] | None = None
    backup_offsite: tuple[pulumi.Output[str], pulumi.Output[str]] | None = None
    # etcdBackup with backup.offsite: the key pair the control-plane nodes upload their encrypted snapshots with.
    etcd_offsite: tuple[pulumi.Output[str], pulumi.Output[str]] | None = None
    # backup.fileSystemBackup: the password of Velero's Kopia repositories.
    velero_repository_password: pulumi.Output[str] | None = None


T = TypeVar("T")


def present(value: T | None, key: str) -> T:
    """A secret that read_secrets read because the stack needs it (config/secret_keys.py required_secrets decides which,
    once): a component that gets None instead has been wired to a subsystem the stack does not configure."""
    if value is None:
        raise ValueError(f"secret {key} was not read, yet the stack needs it (config/secret_keys.py required_secrets)")
    return value


class SecretFormatError(ValueError):
    """A secret whose value cannot be what its key holds; the message names the key and the fix, never the value."""


def _check(key: str, value: str) -> str:
    problem = format_problem(SECRETS[key].kind, value)
    if problem is not None:
        raise SecretFormatError(f"secret {key} {problem} (pulumi config set --secret {key} ...)")
    return value


def checked(key: str, value: pulumi.Output[str] | None) -> pulumi.Output[str] | None:
    """`value` once its format is checked: a wrong one fails the preview (config secrets are known in a preview) at the
    first resource that uses it, before anything is created with it."""
    return None if value is None else value.apply(lambda text: _check(key, text))


def read_secrets(spec: StackSpec) -> Secrets:
    """Each secret the stack needs (config.secret_keys), required; the others are not read at all."""
    config = pulumi.Config(PROJECT)
    needed = set(required_secrets(spec))

    def secret(key: str) -> pulumi.Output[str] | None:
        return checked(key, config.require_secret(key)) if key in needed else None

    def always(key: str) -> pulumi.Output[str]:
        value = secret(key)
        if value is None:
            raise ValueError(f"{key} is needed by every stack (config.secret_keys)")
        return value

    def pair(first_key: str, second_key: str) -> tuple[pulumi.Output[str], pulumi.Output[str]] | None:
        """Two secrets a subsystem needs together (a user and its password, a certificate and its key)."""
        first, second = secret(first_key), secret(second_key)
        return (first, second) if first is not None and second is not None else None

    return Secrets(
        proxmox_api_token=always("proxmoxApiToken"),
        proxmox_ssh_private_key=always("proxmoxSshPrivateKey"),
        node_ssh_private_key=always("nodeSshPrivateKey"),
        smb_credentials=pair("smbUsername", "smbPassword"),
        grafana_admin_password=secret("grafanaAdminPassword"),
        tls_ca=pair("tlsCaCertificate", "tlsCaKey"),
        hyperv_ssh_private_key=secret("hypervSshPrivateKey"),
        hyperv_ssh_password=secret("hypervSshPassword"),
        windows_admin_password=secret("windowsAdminPassword"),
        bastion_ssh_private_key=secret("bastionSshPrivateKey"),
        windows_admin_password_previous=checked("windowsAdminPasswordPrevious",
                                                config.get_secret("windowsAdminPasswordPrevious"))
        if spec.nodes.windows else None,
        backup_primary=pair("backupAccessKeyId", "backupSecretAccessKey"),
        backup_offsite=pair("offsiteAccessKeyId", "offsiteSecretAccessKey"),
        etcd_offsite=pair("etcdOffsiteAccessKeyId", "etcdOffsiteSecretAccessKey"),
        velero_repository_password=secret("veleroRepositoryPassword"),
    )
