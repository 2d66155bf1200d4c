# The golden Windows Server VHDX each Hyper-V host keeps at hyperv.hosts[].goldenImages.<version>:
# Generation 2 (UEFI, Secure Boot with the MicrosoftWindows template, as render/hyperv.py creates the
# node VMs), C: as the last partition (render/hyperv.py grows it), the Containers feature already
# installed (saves the preparation step's reboot), sysprepped with an unattend that sets the local
# Administrator password to windowsAdminPassword (PowerShell Direct signs in with it). No OpenSSH server
# in the guest: every node script reaches the guest over PowerShell Direct from its host. Activation is not
# baked in: windows.activation applies it per node (render/windows_activation.py).
# Run with Packer on the Hyper-V host itself; see README "Building images".
# Options: hashicorp/packer-plugin-hyperv .web-docs/components/builder/iso/README.md (generation,
# enable_secure_boot, secure_boot_template, skip_export, cd_content, shutdown_command, disk_size in MB).
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
# windowsAdminPassword of the stack (`PKR_VAR_admin_password=$(pulumi config get windowsAdminPassword)`).
variable "admin_password" {
  type      = string
  sensitive = true
}
variable "output_directory" {
  type    = string
  default = "output-ws2022"
}

locals {
  # The answer files are XML: the password is escaped (& first) so any character is safe in them.
  xml_password  = replace(replace(replace(var.admin_password, "&", "&amp;"), "<", "&lt;"), ">", "&gt;")
  answer_values = { admin_password = local.xml_password, image_name = var.image_name }
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
  winrm_password = var.admin_password
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
    content     = templatefile("${path.root}/unattend.pkrtpl.xml", local.answer_values)
    destination = "C:\\Windows\\Panther\\unattend.xml"
  }
}
