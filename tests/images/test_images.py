"""images/: the Packer templates parse as HCL2 (python-hcl2) and carry what the program relies on (scsi0 on
virtio-scsi-single, a cloud-init drive, the QEMU agent, the template ids of the stack; Generation 2 with
Secure Boot, sysprep, the Containers feature); the scripts pass shellcheck / tree-sitter-powershell, and the
answer files are well-formed XML with the partition layout and password the Hyper-V converge expects."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import hcl2
import pytest
import yaml
from hcl2.utils import SerializationOptions

from config import compat
from tests.conftest import ROOT, hk_prod_values
from tests.validators import cloud_init_schema, powershell_errors, shellcheck

IMAGES = ROOT / "images"
UNATTEND = "{urn:schemas-microsoft-com:unattend}"


def _hcl(path: Path) -> dict:
    return hcl2.loads(path.read_text(), serialization_options=SerializationOptions(
        strip_string_quotes=True, explicit_blocks=False, with_comments=False))


def _source(doc: dict, kind: str, name: str) -> dict:
    for block in doc["source"]:
        if kind in block and name in block[kind]:
            return block[kind][name]
    raise KeyError(f"{kind}.{name}")


def _template(path: Path, **values: str) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], path.read_text())


@pytest.mark.parametrize("distro", ["ubuntu22", "rocky9"])
def test_proxmox_templates_have_the_shape_machines_clones(distro):
    doc = _hcl(IMAGES / "proxmox" / "linux.pkr.hcl")
    source = _source(doc, "proxmox-iso", distro)
    # components/machines/nodes.py: scsi_hardware virtio-scsi-single, disk interface scsi0, agent enabled,
    # initialization on a cloud-init drive.
    assert source["scsi_controller"] == "virtio-scsi-single"
    disks = source["disks"]
    assert len(disks) == 1 and disks[0]["type"] == "scsi"  # the first scsi disk is scsi0
    assert source["qemu_agent"] is True
    assert source["cloud_init"] is True and source["cloud_init_storage_pool"] == "${var.cloud_init_storage}"
    assert source["insecure_skip_tls_verify"] is False
    assert source["vm_id"] == f"${{var.{distro}_vm_id}}"
    assert source["boot_iso"][0]["unmount"] is True
    build = doc["build"][0]
    assert f"source.proxmox-iso.{distro}" in build["sources"]
    assert build["provisioner"][0]["shell"]["script"].endswith("/seal.sh")


def test_proxmox_plugin_is_pinned_and_secrets_are_sensitive():
    doc = _hcl(IMAGES / "proxmox" / "linux.pkr.hcl")
    plugin = doc["packer"][0]["required_plugins"][0]["proxmox"]
    source, version = compat.PACKER_PLUGINS["proxmox"]
    assert plugin == {"version": f"= {version}", "source": source}
    variables = {name: body for block in doc["variable"] for name, body in block.items()}
    for secret in ("proxmox_token", "build_password", "build_password_hash"):
        assert variables[secret]["sensitive"] is True
    # Every distro the stack has a template for has a source here.
    distros = {t["distro"] for t in hk_prod_values()["proxmox"]["templates"]}
    assert {f"{d}_vm_id" for d in distros} <= set(variables)


def test_seal_script_passes_shellcheck_and_installs_the_guest_agent():
    script = IMAGES / "proxmox" / "seal.sh"
    shellcheck(script)
    text = script.read_text()
    assert "set -euo pipefail" in text
    assert "install -y -q qemu-guest-agent cloud-init" in text
    assert "systemctl enable qemu-guest-agent" in text
    assert "cloud-init clean --logs --seed" in text
    assert "truncate -s 0 /etc/machine-id" in text


def test_installer_answers_install_the_agent_and_cloud_init():
    user_data = yaml.safe_load(_template(IMAGES / "proxmox/http/ubuntu22/user-data.pkrtpl", build_password_hash="$6$x$y"))
    install = user_data["autoinstall"]
    assert {"qemu-guest-agent", "cloud-init"} <= set(install["packages"])
    assert install["identity"]["password"] == "$6$x$y"
    kickstart = _template(IMAGES / "proxmox/http/rocky9/ks.cfg.pkrtpl", build_password_hash="$6$x$y")
    assert "services --enabled=sshd,qemu-guest-agent,cloud-init" in kickstart
    assert "--noswap" in kickstart and "--iscrypted --password=$6$x$y" in kickstart


def test_windows_golden_image_is_generation_2_secure_boot_and_sysprepped():
    doc = _hcl(IMAGES / "windows" / "windows.pkr.hcl")
    source = _source(doc, "hyperv-iso", "windows")
    # render/hyperv.py: New-VM -Generation 2, Secure Boot with the MicrosoftWindows template.
    assert source["generation"] == 2
    assert source["enable_secure_boot"] is True and source["secure_boot_template"] == "MicrosoftWindows"
    assert source["skip_export"] is True
    assert "sysprep.exe /generalize /oobe /shutdown" in source["shutdown_command"]
    assert r"/unattend:C:\Windows\Panther\unattend.xml" in source["shutdown_command"]
    plugin = doc["packer"][0]["required_plugins"][0]["hyperv"]
    assert plugin == {"version": "= 1.1.4", "source": "github.com/hashicorp/hyperv"}
    variables = {name: body for block in doc["variable"] for name, body in block.items()}
    assert variables["build_password"]["sensitive"] is True and "admin_password" not in variables
    # WinRM on HTTPS with NTLM (packer-plugin-sdk communicator/config.go): Basic and unencrypted never needed.
    assert (source["winrm_use_ssl"], source["winrm_insecure"], source["winrm_use_ntlm"]) == (True, True, True)
    assert source["winrm_password"] == "${var.build_password}"
    provisioners = doc["build"][0]["provisioner"]
    assert provisioners[0]["powershell"]["script"].endswith("/prepare.ps1")
    assert provisioners[2]["file"]["destination"] == r"C:\Windows\Panther\unattend.xml"


def test_windows_prepare_script_parses_and_installs_containers():
    text = (IMAGES / "windows" / "prepare.ps1").read_text()
    assert powershell_errors(text) == []
    assert text.startswith("#") and "$ErrorActionPreference = 'Stop'" in text
    assert "Install-WindowsFeature -Name Containers" in text
    assert "SetupComplete.cmd" in text


def test_answer_files_keep_c_last_open_winrm_on_https_only_and_leave_no_password_in_the_image():
    setup = ET.fromstring(_template(IMAGES / "windows/autounattend.pkrtpl.xml",
                                    build_password="p&amp;ss", image_name="Windows Server 2022 SERVERDATACENTERCORE"))
    partitions = setup.findall(f".//{UNATTEND}CreatePartition")
    assert [p.find(f"{UNATTEND}Type").text for p in partitions] == ["EFI", "MSR", "Primary"]
    assert partitions[-1].find(f"{UNATTEND}Extend").text == "true"
    assert setup.find(f".//{UNATTEND}InstallTo/{UNATTEND}PartitionID").text == "3"
    # The build VM's own password (a random one per build), for Packer's session only.
    assert setup.find(f".//{UNATTEND}AdministratorPassword/{UNATTEND}Value").text == "p&ss"
    (command,) = [c.text for c in setup.iter(f"{UNATTEND}CommandLine")]
    assert len(command) <= 1024                     # the unattend reference's limit for a CommandLine
    assert "-Transport HTTPS" in command and "Transport=HTTP'" in command and "-LocalPort 5986" in command
    assert "Auth\\Basic $false" in command and "AllowUnencrypted $false" in command and "$true" not in command
    # The answer file the image keeps for its clones' first boot has no password at all: each node's own is added
    # to its Shell-Setup component on its copy (render/scripts/hyperv-first-boot-disk.ps1).
    text = (IMAGES / "windows/unattend.pkrtpl.xml").read_text()
    assert "${" not in text
    generalize = ET.fromstring(text)
    assert generalize.find(f".//{UNATTEND}UserAccounts") is None and "Password" not in text.split("-->", 1)[1]
    assert [s.get("pass") for s in generalize.findall(f"{UNATTEND}settings")] == ["oobeSystem"]
    shell = [c for c in generalize.iter(f"{UNATTEND}component") if c.get("name") == "Microsoft-Windows-Shell-Setup"]
    assert len(shell) == 1
    # Every clone's first SetupComplete.cmd removes what the build opened.
    prepare = (IMAGES / "windows" / "prepare.ps1").read_text()
    for removed in ("Remove-Item -Path WSMan:\\Localhost\\Listener\\*", "CN=packer-build",
                    "Remove-NetFirewallRule -Name packer-winrm-https", "AllowUnencrypted $false"):
        assert removed in prepare, removed


def test_windows_plugin_pin_is_the_matrix_pin():
    doc = _hcl(IMAGES / "windows" / "windows.pkr.hcl")
    source, version = compat.PACKER_PLUGINS["hyperv"]
    assert doc["packer"][0]["required_plugins"][0]["hyperv"] == {"version": f"= {version}", "source": source}


def test_ubuntu_autoinstall_user_data_passes_cloud_init_schema(tmp_path):
    # Subiquity reads `autoinstall:` from a #cloud-config document; cloud-init checks that document.
    rendered = tmp_path / "user-data"
    rendered.write_text(_template(IMAGES / "proxmox/http/ubuntu22/user-data.pkrtpl", build_password_hash="$6$x$y"))
    cloud_init_schema(rendered)


def test_pve_tls_trust_script_passes_shellcheck_and_is_idempotent_by_design():
    script = IMAGES / "pve-tls-trust.sh"
    shellcheck(script)
    text = script.read_text()
    assert "set -euo pipefail" in text
    assert "/etc/pve/pve-root-ca.pem" in text and "update-ca-certificates" in text
    assert 'cmp -s "$staged" "$target"' in text   # an unchanged CA changes nothing
