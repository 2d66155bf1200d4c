"""Pure renderer of the PowerShell that activates a Windows Server node VM from its Hyper-V host, by KMS
or by Automatic Virtual Machine Activation (AVMA), and the product keys it installs.

Owns: the public activation keys per Windows version and edition, and the activation script
(render/scripts/windows-activate.ps1, rendered through render.script_files). The script runs on the
Hyper-V host through render.hyperv.ssh_command and acts in the guest over PowerShell Direct, the way
render/hyperv.py converges the VM (stdin: line 1 the guest Administrator password). It is idempotent:
a guest that already carries the key, the KMS host and a licensed status is left alone.

Why WMI instead of slmgr.vbs: slmgr is a VBScript front end to the same Software Protection WMI provider
(SoftwareLicensingService / SoftwareLicensingProduct) and reports failures as message text; calling the
methods directly makes a failure a non-zero ReturnValue or an exception, which stops the script.
  * SoftwareLicensingService: InstallProductKey(ProductKey), SetKeyManagementServiceMachine(MachineName),
    SetKeyManagementServicePort(PortNumber), RefreshLicenseStatus(); properties
    KeyManagementServiceMachine, KeyManagementServicePort:
    https://learn.microsoft.com/previous-versions/windows/desktop/sppwmi/softwarelicensingservice
    (PortNumber: https://learn.microsoft.com/previous-versions/windows/desktop/sppwmi/setkeymanagementserviceport-softwarelicensingservice)
  * SoftwareLicensingProduct: Activate(); properties ApplicationID, PartialProductKey (the key's last
    five characters), LicenseStatus (1 = licensed):
    https://learn.microsoft.com/previous-versions/windows/desktop/sppwmi/softwarelicensingproduct
  * Windows' own ApplicationID 55c92734-d682-4d71-983e-d6ec3f16059f (slmgr.vbs, WindowsAppId), which
    separates Windows from other licensed products (Office) in SoftwareLicensingProduct.
  * The edition comes from Get-WindowsEdition -Online (.Edition: ServerDatacenter, ServerStandard, or
    ServerDatacenterEval / ServerStandardEval for evaluation media, which neither key activates):
    https://learn.microsoft.com/powershell/module/dism/get-windowsedition
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from render.hyperv import HEARTBEAT_TIMEOUT_SECONDS, POWERSHELL_DIRECT_TIMEOUT_SECONDS, check_vm_name
from render.script_files import render_script

# KMS client setup keys (GVLKs), public: "Key Management Services (KMS) client activation and product
# keys", https://learn.microsoft.com/windows-server/get-started/kms-client-activation-keys
# (Windows Server 2022 and 2019 tables).
KMS_CLIENT_KEYS: dict[str, dict[str, str]] = {
    "win2022": {"ServerDatacenter": "WX4NM-KYWYW-QJJR4-XV3QB-6VM33", "ServerStandard": "VDYBN-27WPP-V4HQT-9VMD4-VMK7H"},
    "win2019": {"ServerDatacenter": "WMDGN-G9PQG-XVVXX-R3X43-63DFG", "ServerStandard": "N69G4-B89J2-4G8F4-WWYCC-J464C"},
}

# AVMA keys, public: "Automatic Virtual Machine Activation in Windows Server", section "AVMA keys",
# https://learn.microsoft.com/windows-server/get-started/automatic-vm-activation (MicrosoftDocs
# windowsserverdocs WindowsServerDocs/get-started/automatic-vm-activation.md). The same page: AVMA needs a
# Datacenter Hyper-V host, itself activated, of the guest's version or newer, and the VM's "Data Exchange
# integration service (also known as Key-Value Pair Exchange)" enabled.
AVMA_KEYS: dict[str, dict[str, str]] = {
    "win2022": {"ServerDatacenter": "W3GNR-8DDXR-2TFRP-H8P33-DV9BG", "ServerStandard": "YDFWN-MJ9JR-3DYRK-FXXRW-78VHK"},
    "win2019": {"ServerDatacenter": "H3RNG-8C32Q-Q8FRX-6TDXV-WMBMW", "ServerStandard": "TNK62-RXVTB-4P47B-2D623-4GF74"},
}

# How long an AVMA guest may take to be activated by its host after the key is installed; the host
# answers over the Key-Value Pair Exchange channel, usually within seconds.
AVMA_TIMEOUT_SECONDS = 300
# Hyper-V's name of the integration service AVMA runs over (Get-/Enable-VMIntegrationService -Name):
# https://learn.microsoft.com/windows-server/virtualization/hyper-v/manage/manage-hyper-v-integration-services
KVP_INTEGRATION_SERVICE = "Key-Value Pair Exchange"


@dataclass(frozen=True)
class WindowsActivation:
    vm_name: str
    windows_version: str  # config.model.WindowsKey: selects the key table row
    mode: Literal["kms", "avma"]
    kms_host: str = ""  # kms only
    kms_port: int = 1688


def product_keys(activation: WindowsActivation) -> dict[str, str]:
    """The keys the guest may need, by edition, for its Windows version and activation mode."""
    table = KMS_CLIENT_KEYS if activation.mode == "kms" else AVMA_KEYS
    if activation.windows_version not in table:
        raise ValueError(f"no {activation.mode} keys recorded for {activation.windows_version} "
                         f"(known: {', '.join(sorted(table))})")
    return table[activation.windows_version]


def _validate(activation: WindowsActivation) -> None:
    check_vm_name(activation.vm_name)
    if activation.mode not in ("kms", "avma"):
        raise ValueError(f"activation mode {activation.mode!r} must be kms or avma")
    if activation.mode == "kms" and not activation.kms_host:
        raise ValueError("kms activation needs a KMS host")
    if not 1 <= activation.kms_port <= 65535:
        raise ValueError(f"KMS port {activation.kms_port} must be 1-65535")


def render_activation(activation: WindowsActivation) -> str:
    """Idempotent activation of one guest (create and update script). There is no delete script: the
    activation lives in the guest and goes with the VM when render.hyperv.render_delete removes it."""
    _validate(activation)
    editions = sorted(product_keys(activation).items())
    return render_script(
        "windows-activate.ps1",
        VmName=activation.vm_name,
        Mode=activation.mode,
        KeyEditions=[edition for edition, _ in editions],
        KeyValues=[key for _, key in editions],
        KmsHost=activation.kms_host,
        KmsPort=activation.kms_port,
        AvmaTimeoutSec=AVMA_TIMEOUT_SECONDS,
        KvpService=KVP_INTEGRATION_SERVICE,
        HeartbeatTimeoutSec=HEARTBEAT_TIMEOUT_SECONDS,
        PsDirectTimeoutSec=POWERSHELL_DIRECT_TIMEOUT_SECONDS,
    )
