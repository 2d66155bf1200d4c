# On the Proxmox node that runs the VM (render/host_keys.py): print the Linux node's own SSH host key, read through
# the QEMU guest agent, so that every SSH connection to the node can pin it. The agent is a virtio-serial channel
# between this host and the guest, not the network: no machine in the middle can answer for the guest, so the key
# is as trustworthy as this host's connection, which is pinned to the stack's proxmox.nodes[].hostKey.
# First waits for the agent (a new VM's may start only when the preparation script runs) and for cloud-init, whose
# ssh module replaces the image's keys with the node's own on a new instance before the key is read.
# Standard output is the key line alone (`<type> <base64>`); progress goes to standard error.
#@ include lib/strict.sh
#@ inputs VMID WAIT_TIMEOUT

command -v qm >/dev/null || die "qm not found: this step runs on the Proxmox node that holds VM $VMID"
command -v perl >/dev/null || die "perl not found on $(hostname): Proxmox VE itself needs it"

# guest_run TIMEOUT COMMAND...: COMMAND's standard output in the guest; its exit status, or 124 when it did not end
# within TIMEOUT seconds. `qm guest exec` prints the agent's exec-status as JSON, out-data already decoded
# (qemu-server src/PVE/CLI/qm.pm `exec`, src/PVE/QemuServer/Agent.pm qemu_exec_status), and only {"pid": N} when
# its timeout passed first; JSON::PP is a core Perl module.
guest_run() {
  local timeout=$1 result
  shift
  result="$(qm guest exec "$VMID" --timeout "$timeout" -- "$@")" || return 125
  printf '%s' "$result" | perl -MJSON::PP -0777 -ne '
    my $r = JSON::PP->new->decode($_);
    exit 124 unless $r->{"exited"};
    print $r->{"out-data"} // "";
    exit($r->{"exitcode"} // 1);'
}

deadline=$((SECONDS + WAIT_TIMEOUT))
until qm guest cmd "$VMID" ping >/dev/null 2>&1; do
  ((SECONDS < deadline)) || die "the QEMU guest agent of VM $VMID did not answer within ${WAIT_TIMEOUT}s: is qemu-guest-agent installed in the template and the VM's agent option on?"
  echo "waiting for the QEMU guest agent of VM $VMID" >&2
  sleep 10
done

# 0 done, 1 error, 2 done with recoverable errors: any of them means the ssh module has run; the SSH step that
# follows reports a failed cloud-init with its log.
rc=0
guest_run "$WAIT_TIMEOUT" cloud-init status --wait >/dev/null || rc=$?
case "$rc" in
  0 | 1 | 2) ;;
  124) die "cloud-init in VM $VMID did not finish within ${WAIT_TIMEOUT}s" ;;
  *) die "could not run cloud-init status in VM $VMID through the guest agent (status $rc)" ;;
esac

# ed25519 where the node has one; ECDSA P-256 on a node without (a FIPS-mode RHEL allows no ed25519).
for file in /etc/ssh/ssh_host_ed25519_key.pub /etc/ssh/ssh_host_ecdsa_key.pub; do
  line="$(guest_run 60 cat "$file")" || continue
  read -r kind blob _ <<<"$line"
  if [[ $kind =~ ^(ssh-ed25519|ecdsa-sha2-nistp(256|384|521))$ && $blob =~ ^[A-Za-z0-9+/]+={0,2}$ ]]; then
    echo "VM $VMID presents $kind from $file" >&2
    printf '%s %s\n' "$kind" "$blob"
    exit 0
  fi
done
die "VM $VMID has no ed25519 or ECDSA host key in /etc/ssh (ssh_host_ed25519_key.pub, ssh_host_ecdsa_key.pub)"
