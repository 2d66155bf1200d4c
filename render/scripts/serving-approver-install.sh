# As root on a control-plane node (render/serving_approver.py render_install): the node inventory, the kubelet
# serving approver and its systemd units in place (rewritten only when they differ), the timer enabled, and one run
# now, which issues the approver's identity and proves its role. Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs PROGRAM PROGRAM_TEXT SYSTEMD_DIR SERVICE SERVICE_TEXT TIMER TIMER_TEXT CONFIG_DIR INVENTORY_TEXT NODES
STAGING_DIR="$ROOT/etc/hybrid-cluster/.staging"
#@ include lib/put-file.sh
#@ include lib/timer-install.sh

# The approver reads requests with openssl: Debian's ca-certificates depends on it; a RHEL-family image may lack it.
if ! command -v openssl >/dev/null; then
  if command -v dnf >/dev/null; then
    dnf install -y openssl || true
  elif command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openssl || true
  fi
  command -v openssl >/dev/null || die "openssl is not installed and could not be: the kubelet serving approver needs it"
fi
mkdir -p "$ROOT$CONFIG_DIR"
chmod 0700 "$ROOT$CONFIG_DIR"
printf '%s\n' "$INVENTORY_TEXT" | put_file "$ROOT$CONFIG_DIR/nodes" 0600
install_timer "the kubelet serving approver's first run"
echo "kubelet serving approver: $NODES nodes"
