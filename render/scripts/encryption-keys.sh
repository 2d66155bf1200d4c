# On the first control-plane node: the Secrets encryption key the stack asks for ($TARGET: key-<label>, or identity
# for plain text) made once in the node's key ring, then two lines on stdout, a secret Output that every
# control-plane node's steps read on stdin: `writer NAME SECRET`, the key every Secret was last rewritten with
# (identity before encryption was ever on), and `target NAME SECRET`, the one they are to be written with. The two
# are the same once the change has gone through (encryption-rewrite.sh). The target is recorded for the joins of
# control-plane nodes (linux-join-credentials.sh).
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs TARGET
#@ include lib/encryption.sh

[[ -f $ROOT/etc/kubernetes/admin.conf ]] || die "kubeadm init has not completed on this node"
valid_key_name "$TARGET" || die "not an encryption key name: $TARGET"
writer=identity
if [[ -s $ENCRYPTION_CURRENT ]]; then
  writer="$(cat "$ENCRYPTION_CURRENT")"
  valid_key_name "$writer" || die "$ENCRYPTION_CURRENT does not name an encryption key"
fi
make_encryption_key "$TARGET"
mkdir -p "$ENCRYPTION_DIR"
chmod 0700 "$ENCRYPTION_DIR"
printf '%s' "$TARGET" >"$ENCRYPTION_DIR/target"
echo "Secrets are written with $writer; the stack wants $TARGET" >&2
print_key_ring_line writer "$writer"
print_key_ring_line target "$TARGET"
