# As root on a control-plane node (render/serving_approver.py render_install): the node inventory, the kubelet
# serving approver and its systemd units in place (rewritten only when they differ), the timer enabled, and one run
# now, which issues the approver's identity and proves its role. Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs PROGRAM PROGRAM_TEXT SYSTEMD_DIR SERVICE SERVICE_TEXT TIMER TIMER_TEXT CONFIG_DIR INVENTORY_TEXT NODES
STAGING_DIR="$ROOT/etc/hybrid-cluster/.staging"
#@ include lib/put-file.sh
#@ include lib/timer-install.sh

# The approver reads requests with openssl, which the node images ship (Debian's ca-certificates depends on it).
command -v openssl >/dev/null || die "openssl is not installed: the kubelet serving approver needs it (package openssl)"
mkdir -p "$ROOT$CONFIG_DIR"
chmod 0700 "$ROOT$CONFIG_DIR"
printf '%s\n' "$INVENTORY_TEXT" | put_file "$ROOT$CONFIG_DIR/nodes" 0600
install_timer "the kubelet serving approver's first run"
echo "kubelet serving approver: $NODES nodes"
