# On the first control-plane node: the Secrets encryption key the stack asks for ($TARGET: key-<label>, or identity
# for plain text) made once in the node's key ring, then the key ring on stdout, a secret Output that every
# control-plane node's steps read on stdin (lib/encryption.sh key_ring_text): `writer NAME SECRET`, the key every
# Secret was last rewritten with (identity before encryption was ever on), `target NAME SECRET`, the one they are to be
# written with, and `read NAME SECRET` for each key asked for by a change that has not completed. Writer and target
# are the same once the change has gone through (encryption-rewrite.sh). The target is recorded for the joins of
# control-plane nodes (linux-join-credentials.sh).
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs TARGET
#@ include lib/encryption.sh

[[ -f $ROOT/etc/kubernetes/admin.conf ]] || die "kubeadm init has not completed on this node"
valid_key_name "$TARGET" || die "not an encryption key name: $TARGET"
make_encryption_key "$TARGET"
ring="$(key_ring_text "$TARGET")"
mkdir -p "$ENCRYPTION_DIR"
chmod 0700 "$ENCRYPTION_DIR"
record_pending "$TARGET"
printf '%s' "$TARGET" >"$ENCRYPTION_TARGET"
writer=identity
[[ ! -s $ENCRYPTION_CURRENT ]] || writer="$(cat "$ENCRYPTION_CURRENT")"
echo "Secrets are written with $writer; the stack wants $TARGET" >&2
printf '%s\n' "$ring"
