#!/usr/bin/env bash
# Last step of every Linux template build (images/proxmox/linux.pkr.hcl): make sure the QEMU guest
# agent and cloud-init are installed and enabled, then remove everything specific to this build so each
# clone starts as a new instance. Safe to run twice.
set -euo pipefail

if command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q qemu-guest-agent cloud-init
  apt-get clean
else
  dnf install -y -q qemu-guest-agent cloud-init
  dnf clean all
fi
systemctl enable qemu-guest-agent
systemctl enable cloud-init

# Proxmox's cloud-init drive is a NoCloud (cidata) or ConfigDrive source; keep cloud-init looking for it.
# https://pve.proxmox.com/wiki/Cloud-Init_Support
rm -f /etc/cloud/cloud.cfg.d/99-installer.cfg /etc/cloud/cloud.cfg.d/subiquity-disable-cloudinit-networking.cfg
# Forget this instance: cloud-init runs again on each clone ("cloud-init clean --logs --seed").
cloud-init clean --logs --seed
# A fresh machine-id per clone (systemd regenerates an empty one at boot), and no build host keys.
truncate -s 0 /etc/machine-id
rm -f /var/lib/dbus/machine-id /etc/ssh/ssh_host_*
# The build user only existed for Packer's SSH session (--force: that session is still open).
if id packer >/dev/null 2>&1; then
  rm -f /etc/sudoers.d/packer
  userdel --force --remove packer
fi
sync
