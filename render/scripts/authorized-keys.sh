# On a Linux node: the admin user's authorized_keys, exactly the stack's access.sshPublicKeys. cloud-init
# writes the first set at first boot only; this is how a key is added to or removed from every node
# (README, Day-2: rotating the node SSH key). An unchanged file is not rewritten.
## OpenSSH reads ~/.ssh/authorized_keys and refuses it unless it and ~/.ssh are writable by their owner only
## (StrictModes, sshd_config(5)); the file is replaced by a rename, so sshd never reads half of it.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs ADMIN_USER KEYS_TEXT

entry="$(getent passwd "$ADMIN_USER")" || die "user $ADMIN_USER does not exist on this node"
home="$ROOT$(cut -d: -f6 <<<"$entry")"
group="$(id -gn "$ADMIN_USER")"
target="$home/.ssh/authorized_keys"
if [[ -f $target ]] && [[ "$(cat "$target")" == "${KEYS_TEXT%$'\n'}" ]]; then
  echo "authorized_keys of $ADMIN_USER: unchanged"
  exit 0
fi
install -d -m 0700 -o "$ADMIN_USER" -g "$group" "$home/.ssh"
staged="$(mktemp "$home/.ssh/.authorized_keys.XXXXXX")"
printf '%s' "$KEYS_TEXT" >"$staged"
chmod 0600 "$staged"
chown "$ADMIN_USER:$group" "$staged"
mv -f "$staged" "$target"
echo "authorized_keys of $ADMIN_USER: $(grep -c . "$target") keys"
