# Run over SSH on a Linux node (render/host_keys.py): give it the SSH host key the program made for it, which every
# later connection pins. Standard input holds the private key (OpenSSH format), then the public key's line. A node
# that already presents the key is left alone; one that booted with keys of its own (a node created by an earlier
# release) gets the key written in place of its ed25519 pair and sshd reloaded, which keeps running sessions.
#@ include lib/strict.sh
#@ include lib/test-root.sh

private=""
while IFS= read -r line; do
  private+="$line"$'\n'
  [[ $line != "-----END OPENSSH PRIVATE KEY-----" ]] || break
done
IFS= read -r public || true
[[ $private == "-----BEGIN OPENSSH PRIVATE KEY-----"$'\n'* && $private == *$'\n'"-----END OPENSSH PRIVATE KEY-----"$'\n' ]] \
  || die "no OpenSSH private key on standard input"
read -r kind blob _ <<<"$public"
[[ $kind == ssh-ed25519 && $blob =~ ^[A-Za-z0-9+/]+={0,2}$ ]] || die "no ssh-ed25519 public key line on standard input"
key="$ROOT/etc/ssh/ssh_host_ed25519_key"
if [[ -f $key.pub ]] && read -r have_kind have_blob _ <"$key.pub" && [[ "$have_kind $have_blob" == "$kind $blob" ]]; then
  echo "the node presents its pinned host key already"
  exit 0
fi
umask 077
printf '%s' "$private" >"$key.partial"
printf '%s %s\n' "$kind" "$blob" >"$key.pub.partial"
chmod 0600 "$key.partial"
chmod 0644 "$key.pub.partial"
mv -f "$key.partial" "$key"
mv -f "$key.pub.partial" "$key.pub"
# The SELinux label a file gets in /etc/ssh (sshd_key_t), where the policy is on.
if command -v restorecon >/dev/null; then
  restorecon "$key" "$key.pub"
fi
# Debian's unit is ssh, the RHEL family's sshd; a reload re-executes sshd, which reads its host keys again.
if systemctl cat ssh.service >/dev/null 2>&1; then
  systemctl reload ssh.service
else
  systemctl reload sshd.service
fi
echo "host key installed: $kind"
