# As root on a control-plane node (render/etcd_backup.py render_remove): timer stopped and disabled,
# program, units, recipients' keys and off-site credentials removed. The snapshots already stored stay on
# the target: they are the data this exists for.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs PROGRAM SYSTEMD_DIR SERVICE TIMER CONFIG_DIR STAGE_DIR
#@ include lib/timer-remove.sh

remove_timer
rm -rf "$ROOT$CONFIG_DIR" "$ROOT$STAGE_DIR"
systemctl daemon-reload
echo "etcd snapshot schedule removed; stored snapshots are kept"
