"""Reads the stack's secrets as secret Outputs. They never enter the validated model or plain state."""
from __future__ import annotations

from dataclasses import dataclass

import pulumi

from .loader import PROJECT
from .model import StackSpec


@dataclass(frozen=True)
class Secrets:
    proxmox_api_token: pulumi.Output[str]
    proxmox_ssh_private_key: pulumi.Output[str]
    node_ssh_private_key: pulumi.Output[str]
    smb_username: pulumi.Output[str]
    smb_password: pulumi.Output[str]
    grafana_admin_password: pulumi.Output[str]
    # Only stacks with Windows nodes need these.
    hyperv_ssh_private_key: pulumi.Output[str] | None
    hyperv_ssh_password: pulumi.Output[str] | None
    windows_admin_password: pulumi.Output[str] | None
    bastion_ssh_private_key: pulumi.Output[str] | None
    # Optional, during a rotation of windowsAdminPassword (README, Day-2: rotating credentials).
    windows_admin_password_previous: pulumi.Output[str] | None = None


def read_secrets(spec: StackSpec) -> Secrets:
    config = pulumi.Config(PROJECT)
    windows = bool(spec.nodes.windows)
    return Secrets(
        proxmox_api_token=config.require_secret("proxmoxApiToken"),
        proxmox_ssh_private_key=config.require_secret("proxmoxSshPrivateKey"),
        node_ssh_private_key=config.require_secret("nodeSshPrivateKey"),
        smb_username=config.require_secret("smbUsername"),
        smb_password=config.require_secret("smbPassword"),
        grafana_admin_password=config.require_secret("grafanaAdminPassword"),
        hyperv_ssh_private_key=config.require_secret("hypervSshPrivateKey") if windows and spec.hyperv.auth == "privateKey" else None,
        hyperv_ssh_password=config.require_secret("hypervSshPassword") if windows and spec.hyperv.auth == "password" else None,
        windows_admin_password=config.require_secret("windowsAdminPassword") if windows else None,
        bastion_ssh_private_key=config.require_secret("bastionSshPrivateKey") if spec.access.bastion else None,
        windows_admin_password_previous=config.get_secret("windowsAdminPasswordPrevious") if windows else None,
    )
