#!/usr/bin/env bash
# Makes the machine that runs Pulumi (and Packer) trust the Proxmox VE cluster CA, so the stack can keep
# proxmox.insecure: false. Every PVE node holds the cluster CA at /etc/pve/pve-root-ca.pem (pmxcfs); the
# provider and the Packer plugin are Go programs, which read the system trust store.
#
#   sudo images/pve-tls-trust.sh root@10.10.10.11
#
# Debian/Ubuntu trust store (update-ca-certificates). Safe to run again: an unchanged CA changes nothing.
# To undo: sudo rm /usr/local/share/ca-certificates/pve-root-ca.crt && sudo update-ca-certificates --fresh
set -euo pipefail

die() {
  echo "error: $*" >&2
  exit 1
}

[[ $# -eq 1 ]] || die "usage: $0 USER@PVE-NODE"
[[ $(id -u) -eq 0 ]] || die "run as root (it writes the system trust store)"
command -v update-ca-certificates >/dev/null || die "update-ca-certificates not found (Debian/Ubuntu package ca-certificates)"

target=/usr/local/share/ca-certificates/pve-root-ca.crt
staged="$(mktemp)"
trap 'rm -f "$staged"' EXIT
ssh -o BatchMode=yes "$1" cat /etc/pve/pve-root-ca.pem >"$staged" || die "could not read /etc/pve/pve-root-ca.pem on $1"
grep -q -- "-----BEGIN CERTIFICATE-----" "$staged" || die "$1 returned no PEM certificate"
if [[ -f $target ]] && cmp -s "$staged" "$target"; then
  echo "the PVE cluster CA from $1 is already trusted"
  exit 0
fi
install -m 0644 "$staged" "$target"
update-ca-certificates
echo "trusted the PVE cluster CA from $1 ($target)"
