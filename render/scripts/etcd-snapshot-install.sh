# As root on a control-plane node (render/etcd_backup.py render_install): the recipients' keys, the off-site
# settings and credentials, the snapshot program and its systemd units in place (rewritten only when they
# differ), the timer enabled, and one snapshot taken now so that a wrong target or key fails the deployment
# instead of the first night. With an off-site store, standard input holds its access key's line, then its
# secret key's. Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs PROGRAM PROGRAM_TEXT SYSTEMD_DIR SERVICE SERVICE_TEXT TIMER TIMER_TEXT DESCRIPTION CONFIG_DIR STAGE_DIR OFFSITE_CONF OFFSITE_CA RECIPIENT_TEXTS[] OFFSITE OFFSITE_SETTINGS OFFSITE_CA_TEXT
STAGING_DIR="$ROOT/etc/hybrid-cluster/.staging"
#@ include lib/put-file.sh
#@ include lib/timer-install.sh

# gpg 2.1.14 or later encrypts to a key file (--recipient-file); the node preparation installs it.
command -v gpg >/dev/null || die "gpg is not installed: the node preparation installs it (gpg, or gnupg2 on the RHEL family)"
mkdir -p "$ROOT$CONFIG_DIR" "$ROOT$STAGE_DIR"
chmod 0700 "$ROOT$CONFIG_DIR" "$ROOT$STAGE_DIR"
index=0
for text in "${RECIPIENT_TEXTS[@]}"; do
  index=$((index + 1))
  printf '%s\n' "$text" | put_file "$ROOT$CONFIG_DIR/recipient-$index.asc" 0644
done
# A key the stack no longer names is no longer encrypted to.
for file in "$ROOT$CONFIG_DIR"/recipient-*.asc; do
  [[ -e $file ]] || continue
  number="${file##*/recipient-}"
  number="${number%.asc}"
  if [[ ! $number =~ ^[0-9]+$ ]] || ((10#$number > index)); then
    rm -f "$file"
    echo "removed ${file##*/}: the stack no longer names that key"
  fi
done
if ((OFFSITE)); then
  IFS= read -r access_key || true
  IFS= read -r secret_key || true
  [[ -n $access_key && -n $secret_key ]] || die "the off-site access key and secret key were not on standard input"
  printf '%s\naccess_key_id = %s\nsecret_access_key = %s\n' \
    "$OFFSITE_SETTINGS" "$access_key" "$secret_key" | put_file "$ROOT$CONFIG_DIR/$OFFSITE_CONF" 0600
  if [[ -n $OFFSITE_CA_TEXT ]]; then
    printf '%s\n' "$OFFSITE_CA_TEXT" | put_file "$ROOT$CONFIG_DIR/$OFFSITE_CA" 0644
  else
    rm -f "$ROOT$CONFIG_DIR/$OFFSITE_CA"
  fi
else
  rm -f "$ROOT$CONFIG_DIR/$OFFSITE_CONF" "$ROOT$CONFIG_DIR/$OFFSITE_CA"
fi

install_timer "the first etcd snapshot ($DESCRIPTION)"
echo "etcd snapshots: $DESCRIPTION"
