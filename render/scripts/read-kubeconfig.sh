# Print /etc/kubernetes/admin.conf and nothing else (the command's stdout is a secret Output).
#@ include lib/strict.sh
#@ include lib/test-root.sh
ADMIN_CONF="$ROOT/etc/kubernetes/admin.conf"

[[ -s $ADMIN_CONF ]] || die "$ADMIN_CONF is missing or empty: kubeadm init has not completed on this node"
cat -- "$ADMIN_CONF"
