# As root on a control-plane node (render/serving_approver.py render_remove): the kubelet serving approver's timer
# stopped and disabled, its program, units, inventory and identity removed. Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs PROGRAM SYSTEMD_DIR SERVICE TIMER CONFIG_DIR
#@ include lib/timer-remove.sh

remove_timer
rm -rf "$ROOT$CONFIG_DIR"
systemctl daemon-reload
echo "kubelet serving approver removed"
