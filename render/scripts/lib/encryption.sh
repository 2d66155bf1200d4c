# Secrets encryption at rest (the API server's --encryption-provider-config): the key ring on a control-plane node
# and the EncryptionConfiguration made from it. Keys are 32 random bytes in base64, as the secretbox provider wants
# them ("Each key has to be 32 bytes long", apiserver pkg/apis/apiserver/v1/types_encryption.go; kubernetes.io
# "Encrypting Confidential Data at Rest": `head -c 32 /dev/urandom | base64`). Only Secrets are encrypted; identity
# stays the last provider, so Secrets written before encryption was turned on (and etcd snapshots from before) stay
# readable until they are rewritten.
## A key is named `key-<label>` (plan/security.py); `identity` means plain text.
ENCRYPTION_DIR="$ROOT/etc/kubernetes/encryption"
ENCRYPTION_CONFIG="$ENCRYPTION_DIR/config.yaml"
ENCRYPTION_KEYS="$ENCRYPTION_DIR/keys"
# The key every Secret has last been rewritten with (the first control-plane node keeps it).
# shellcheck disable=SC2034 # read by the includers that record or report it (linux-init.sh, encryption-*.sh)
ENCRYPTION_CURRENT="$ENCRYPTION_DIR/current"

valid_key_name() {
  [[ $1 == identity || $1 =~ ^key-[A-Za-z0-9][A-Za-z0-9._-]{0,62}$ ]]
}

valid_key_secret() {
  [[ $1 =~ ^[A-Za-z0-9+/]{43}=$ ]]
}

# make_encryption_key NAME: the key NAME in the key ring, made once (a re-run keeps it).
make_encryption_key() {
  local name=$1
  valid_key_name "$name" || die "not an encryption key name: $name"
  [[ $name != identity ]] || return 0
  mkdir -p "$ENCRYPTION_KEYS"
  chmod 0700 "$ENCRYPTION_DIR" "$ENCRYPTION_KEYS"
  if [[ ! -s $ENCRYPTION_KEYS/$name ]]; then
    head -c 32 /dev/urandom | base64 -w 0 >"$ENCRYPTION_KEYS/$name.new"
    chmod 0600 "$ENCRYPTION_KEYS/$name.new"
    mv -f "$ENCRYPTION_KEYS/$name.new" "$ENCRYPTION_KEYS/$name"
    echo "made the Secrets encryption key $name" >&2
  fi
  valid_key_secret "$(cat "$ENCRYPTION_KEYS/$name")" || die "the encryption key $name on this node is not 32 bytes in base64"
}

# print_key_ring_line ROLE NAME: `ROLE NAME SECRET` (identity: `ROLE identity`), for another node's stdin.
print_key_ring_line() {
  if [[ $2 == identity ]]; then
    printf '%s identity\n' "$1"
  else
    [[ -s $ENCRYPTION_KEYS/$2 ]] || die "the encryption key $2 is not in this node's key ring"
    printf '%s %s %s\n' "$1" "$2" "$(cat "$ENCRYPTION_KEYS/$2")"
  fi
}

# read_key_ring: the `writer` and `target` lines print_key_ring_line printed on the first control-plane node, from
# stdin, into this node's key ring; sets WRITER_KEY and TARGET_KEY. Messages never repeat what was read.
read_key_ring() {
  local role name secret line=0
  WRITER_KEY="" TARGET_KEY=""
  while IFS=' ' read -r role name secret; do
    line=$((line + 1))
    case "$role" in
      writer | target) ;;
      *) die "encryption key ring line $line is neither writer nor target" ;;
    esac
    valid_key_name "$name" || die "encryption key ring line $line does not name a key"
    if [[ $name != identity ]]; then
      valid_key_secret "$secret" || die "encryption key ring line $line has no 32-byte base64 key"
      mkdir -p "$ENCRYPTION_KEYS"
      chmod 0700 "$ENCRYPTION_DIR" "$ENCRYPTION_KEYS"
      if [[ ! -s $ENCRYPTION_KEYS/$name ]] || [[ "$(cat "$ENCRYPTION_KEYS/$name")" != "$secret" ]]; then
        printf '%s' "$secret" >"$ENCRYPTION_KEYS/$name.new"
        chmod 0600 "$ENCRYPTION_KEYS/$name.new"
        mv -f "$ENCRYPTION_KEYS/$name.new" "$ENCRYPTION_KEYS/$name"
      fi
    fi
    if [[ $role == writer ]]; then WRITER_KEY=$name; else TARGET_KEY=$name; fi
  done
  [[ -n $WRITER_KEY && -n $TARGET_KEY ]] || die "the encryption key ring on standard input lacks its writer or target line"
}

# encryption_config NAME...: the EncryptionConfiguration whose providers follow the names in order (the first one
# writes, every one reads), consecutive keys sharing one secretbox provider, identity last unless named earlier.
encryption_config() {
  local name previous="" seen_identity=0
  printf 'apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n'
  printf '  - resources:\n      - secrets\n    providers:\n'
  for name in "$@"; do
    valid_key_name "$name" || die "not an encryption key name: $name"
    if [[ $name == identity ]]; then
      ((seen_identity)) && continue
      seen_identity=1
      printf '      - identity: {}\n'
    else
      [[ -s $ENCRYPTION_KEYS/$name ]] || die "the encryption key $name is not in this node's key ring"
      [[ $previous == key ]] || printf '      - secretbox:\n          keys:\n'
      printf '            - name: %s\n              secret: %s\n' "$name" "$(cat "$ENCRYPTION_KEYS/$name")"
    fi
    previous=${name%%-*}
  done
  ((seen_identity)) || printf '      - identity: {}\n'
}

# write_encryption_config PHASE: this node's configuration for one phase of a change of key (WRITER_KEY to TARGET_KEY):
# `read` keeps writing with the writer while the target can be read, `write` writes with the target while the writer
# can still be read. Every control-plane node reads a key before any writes with it (kubernetes.io "Encrypting
# Confidential Data at Rest", "Rotate a decryption key"). A file already as wanted is left alone.
write_encryption_config() {
  local -a order
  case "$1" in
    read) order=("$WRITER_KEY" "$TARGET_KEY") ;;
    write) order=("$TARGET_KEY" "$WRITER_KEY") ;;
    *) die "unknown encryption phase $1" ;;
  esac
  [[ ${order[0]} != "${order[1]}" ]] || order=("${order[0]}")
  local staged
  mkdir -p "$ENCRYPTION_DIR"
  chmod 0700 "$ENCRYPTION_DIR"
  staged="$(mktemp "$ENCRYPTION_DIR/.config.XXXXXX")"
  encryption_config "${order[@]}" >"$staged"
  chmod 0600 "$staged"
  if [[ -f $ENCRYPTION_CONFIG ]] && cmp -s "$staged" "$ENCRYPTION_CONFIG"; then
    rm -f "$staged"
    return 0
  fi
  mv -f "$staged" "$ENCRYPTION_CONFIG"
}
