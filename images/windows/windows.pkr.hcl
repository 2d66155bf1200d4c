# The golden Windows Server VHDX each Hyper-V host keeps at hyperv.hosts[].goldenImages.<version>:
# Generation 2 (UEFI, Secure Boot with the MicrosoftWindows template, as render/hyperv.py creates the
# node VMs), C: as the last partition (render/hyperv.py grows it), the Containers feature already
# installed (saves the preparation step's reboot), sysprepped with an answer file that holds no password:
# each node's own Administrator password is written into its copy before its first boot by the Hyper-V
# host's first-boot tool (render/scripts/hyperv-first-boot-disk.ps1), so the image carries none. No
# OpenSSH server in the guest: every node script reaches the guest over PowerShell Direct from its host.
# Activation is not baked in: windows.activation applies it per node (render/windows_activation.py).
# Packer reaches the build VM over WinRM on HTTPS (5986, a self-signed certificate the build makes) with
# NTLM: neither Basic authentication nor unencrypted WinRM is ever turned on, and the clones' first
# SetupComplete.cmd removes the listener, its certificate and its firewall rule (prepare.ps1).
# Run with Packer on the Hyper-V host itself; see README "Building images".
# Options: hashicorp/packer-plugin-hyperv .web-docs/components/builder/iso/README.md (generation,
# enable_secure_boot, secure_boot_template, skip_export, cd_content, shutdown_command, disk_size in MB);
# the WinRM communicator's winrm_use_ssl (port 5986 then), winrm_insecure (no chain or name check, for
# the build's self-signed certificate) and winrm_use_ntlm (NTLM instead of Basic): hashicorp/packer-plugin-sdk
# communicator/config.go (v0.5.4, the SDK plugin 1.1.4 is built with). NTLM over plain HTTP would still need
# AllowUnencrypted (hashicorp/packer#6205); over HTTPS it needs neither.
packer {
  required_plugins {
    # Release 1.1.4: hashicorp/packer-plugin-hyperv pull request #139.
    hyperv = {
      version = "= 1.1.4"
      source  = "github.com/hashicorp/hyperv"
    }
  }
}

variable "iso_url" {
  type = string
}
variable "iso_checksum" {
  type = string
}
# The install.wim image to install, e.g. "Windows Server 2022 SERVERDATACENTERCORE".
variable "image_name" {
  type    = string
  default = "Windows Server 2022 SERVERDATACENTERCORE"
}
variable "switch_name" {
  type    = string
  default = "vSwitch-K8s"
}
# The build VM's own Administrator password, for Packer's WinRM session only: a new random one per build
# (docs/images.md makes one in PowerShell), never a stack secret. The nodes never have it.
variable "build_password" {
  type      = string
  sensitive = true
}
variable "output_directory" {
  type    = string
  default = "output-ws2022"
}

locals {
  # The answer files are XML: the password is escaped (& first) so any character is safe in them.
  xml_password  = replace(replace(replace(var.build_password, "&", "&amp;"), "<", "&lt;"), ">", "&gt;")
  answer_values = { build_password = local.xml_password, image_name = var.image_name }
}

source "hyperv-iso" "windows" {
  iso_url              = var.iso_url
  iso_checksum         = var.iso_checksum
  generation           = 2
  enable_secure_boot   = true
  secure_boot_template = "MicrosoftWindows"
  enable_dynamic_memory = false
  cpus                 = 2
  memory               = 4096
  disk_size            = 40960
  switch_name          = var.switch_name
  headless             = true
  skip_export          = true
  output_directory     = var.output_directory

  # Windows Setup reads Autounattend.xml from the root of removable media.
  cd_content = {
    "Autounattend.xml" = templatefile("${path.root}/autounattend.pkrtpl.xml", local.answer_values)
  }
  # Generation 2 firmware shows "Press any key to boot from CD or DVD" only briefly.
  boot_wait    = "1s"
  boot_command = ["a<wait>a<wait>a"]

  communicator   = "winrm"
  winrm_username = "Administrator"
  winrm_password = var.build_password
  winrm_use_ssl  = true
  winrm_insecure = true
  winrm_use_ntlm = true
  winrm_timeout  = "2h"

  # Generalize with the unattend the provisioner placed; Windows shuts down when sysprep is done.
  shutdown_command = "C:\\Windows\\System32\\Sysprep\\sysprep.exe /generalize /oobe /shutdown /quiet /unattend:C:\\Windows\\Panther\\unattend.xml"
  shutdown_timeout = "30m"
}

build {
  sources = ["source.hyperv-iso.windows"]

  provisioner "powershell" {
    script = "${path.root}/prepare.ps1"
  }
  provisioner "windows-restart" {
    restart_timeout = "30m"
  }
  provisioner "file" {
    content     = templatefile("${path.root}/unattend.pkrtpl.xml", {})
    destination = "C:\\Windows\\Panther\\unattend.xml"
  }
}
