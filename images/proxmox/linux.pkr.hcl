# Proxmox VE cloud-init templates for the Linux nodes (Ubuntu 22.04, Rocky 9), in the shape
# components/machines/nodes.py clones: boot disk on scsi0 behind virtio-scsi-single, an empty cloud-init
# drive, the QEMU guest agent installed, enabled and switched on in the VM options.
# Build once per Proxmox node that hosts templates, with that node's ids from proxmox.templates
# (Pulumi.hk-prod.yaml: 9000/9001 on pve-hk1-a, 9100/9101 on pve-hk2-a); see README "Building images".
# Options: hashicorp/packer-plugin-proxmox .web-docs/components/builder/iso/README.md (boot_iso,
# disks, scsi_controller, cloud_init, cloud_init_storage_pool, qemu_agent, template_name).
packer {
  required_plugins {
    # Release 1.2.1: hashicorp/packer-plugin-proxmox pull request #284; boot_iso exists from 1.2.0 (#279).
    proxmox = {
      version = "= 1.2.1"
      source  = "github.com/hashicorp/proxmox"
    }
  }
}

variable "proxmox_url" {
  type        = string
  description = "https://<node>:8006/api2/json; the PVE CA must be trusted (README, PVE API TLS trust)"
}
variable "proxmox_username" {
  type        = string
  description = "USER@REALM!TOKENID of an API token"
}
variable "proxmox_token" {
  type      = string
  sensitive = true
}
variable "node" {
  type = string
}
variable "ubuntu22_vm_id" {
  type = number
}
variable "rocky9_vm_id" {
  type = number
}
variable "vm_disks" {
  type    = string
  default = "local-zfs"
}
variable "cloud_init_storage" {
  type    = string
  default = "local-zfs"
}
variable "iso_storage" {
  type    = string
  default = "local"
}
variable "bridge" {
  type    = string
  default = "vmbr30"
}
# Installer ISOs already on iso_storage, and their checksums (from the distributions' SHA256SUMS files).
variable "ubuntu22_iso_file" {
  type    = string
  default = "local:iso/ubuntu-22.04.5-live-server-amd64.iso"
}
variable "ubuntu22_iso_checksum" {
  type = string
}
variable "rocky9_iso_file" {
  type    = string
  default = "local:iso/Rocky-9-latest-x86_64-minimal.iso"
}
variable "rocky9_iso_checksum" {
  type = string
}
# The installer's temporary build user; the seal step deletes it, so the password never reaches a clone.
variable "build_password" {
  type      = string
  sensitive = true
}
# The same password as a SHA-512 crypt hash (`openssl passwd -6`), for the installer's answer file.
variable "build_password_hash" {
  type      = string
  sensitive = true
}

source "proxmox-iso" "ubuntu22" {
  proxmox_url              = var.proxmox_url
  username                 = var.proxmox_username
  token                    = var.proxmox_token
  insecure_skip_tls_verify = false
  node                     = var.node
  vm_id                    = var.ubuntu22_vm_id
  template_name            = "ubuntu22-cloudinit"
  template_description     = "Ubuntu 22.04 cloud-init template for hybrid-cluster (images/proxmox)"
  os                       = "l26"
  cpu_type                 = "host"
  cores                    = 2
  memory                   = 4096
  scsi_controller          = "virtio-scsi-single"
  qemu_agent               = true
  cloud_init               = true
  cloud_init_storage_pool  = var.cloud_init_storage

  boot_iso {
    type         = "ide"
    iso_file     = var.ubuntu22_iso_file
    iso_checksum = var.ubuntu22_iso_checksum
    unmount      = true
  }
  disks {
    type         = "scsi"
    disk_size    = "20G"
    storage_pool = var.vm_disks
    format       = "raw"
    io_thread    = true
    discard      = true
    ssd          = true
  }
  network_adapters {
    model  = "virtio"
    bridge = var.bridge
  }

  # Subiquity autoinstall from Packer's HTTP server (nocloud-net seed: /user-data and /meta-data).
  http_content = {
    "/user-data" = templatefile("${path.root}/http/ubuntu22/user-data.pkrtpl", { build_password_hash = var.build_password_hash })
    "/meta-data" = ""
  }
  boot_wait      = "10s"
  boot_command = [
    "c<wait>",
    "linux /casper/vmlinuz --- autoinstall ds=\"nocloud-net;seedfrom=http://{{ .HTTPIP }}:{{ .HTTPPort }}/\"<enter><wait>",
    "initrd /casper/initrd<enter><wait>",
    "boot<enter>"
  ]
  ssh_username = "packer"
  ssh_password = var.build_password
  ssh_timeout  = "45m"
}

source "proxmox-iso" "rocky9" {
  proxmox_url              = var.proxmox_url
  username                 = var.proxmox_username
  token                    = var.proxmox_token
  insecure_skip_tls_verify = false
  node                     = var.node
  vm_id                    = var.rocky9_vm_id
  template_name            = "rocky9-cloudinit"
  template_description     = "Rocky Linux 9 cloud-init template for hybrid-cluster (images/proxmox)"
  os                       = "l26"
  cpu_type                 = "host"
  cores                    = 2
  memory                   = 4096
  scsi_controller          = "virtio-scsi-single"
  qemu_agent               = true
  cloud_init               = true
  cloud_init_storage_pool  = var.cloud_init_storage

  boot_iso {
    type         = "ide"
    iso_file     = var.rocky9_iso_file
    iso_checksum = var.rocky9_iso_checksum
    unmount      = true
  }
  disks {
    type         = "scsi"
    disk_size    = "20G"
    storage_pool = var.vm_disks
    format       = "raw"
    io_thread    = true
    discard      = true
    ssd          = true
  }
  network_adapters {
    model  = "virtio"
    bridge = var.bridge
  }

  # Anaconda kickstart from Packer's HTTP server.
  http_content = {
    "/ks.cfg" = templatefile("${path.root}/http/rocky9/ks.cfg.pkrtpl", { build_password_hash = var.build_password_hash })
  }
  boot_wait      = "10s"
  boot_command = [
    "<up><tab> inst.text inst.ks=http://{{ .HTTPIP }}:{{ .HTTPPort }}/ks.cfg<enter>"
  ]
  ssh_username = "packer"
  ssh_password = var.build_password
  ssh_timeout  = "45m"
}

build {
  sources = ["source.proxmox-iso.ubuntu22", "source.proxmox-iso.rocky9"]

  provisioner "shell" {
    execute_command = "echo '${var.build_password}' | sudo -S -E bash '{{ .Path }}'"
    script          = "${path.root}/seal.sh"
  }
}
