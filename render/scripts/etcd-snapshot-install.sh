# As root on a control-plane node (render/etcd_backup.py render_install): the snapshot program and its
# systemd units in place (rewritten only when they differ), the timer enabled, and one snapshot taken now
# so that a wrong target fails the deployment instead of the first night. Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs PROGRAM PROGRAM_TEXT SYSTEMD_DIR SERVICE SERVICE_TEXT TIMER TIMER_TEXT DESCRIPTION
STAGING_DIR="$ROOT/etc/hybrid-cluster/.staging"
#@ include lib/put-file.sh

printf '%s\n' "$PROGRAM_TEXT" | put_file "$ROOT$PROGRAM" 0700
printf '%s\n' "$SERVICE_TEXT" | put_file "$ROOT$SYSTEMD_DIR/$SERVICE" 0644
printf '%s\n' "$TIMER_TEXT" | put_file "$ROOT$SYSTEMD_DIR/$TIMER" 0644
systemctl daemon-reload
systemctl enable --now "$TIMER"
if ! systemctl start "$SERVICE"; then
  journalctl -u "$SERVICE" -n 30 --no-pager >&2 || true
  die "the first etcd snapshot failed ($DESCRIPTION; see above)"
fi
echo "etcd snapshots: $DESCRIPTION"
