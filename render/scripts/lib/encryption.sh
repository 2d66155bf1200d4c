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
# On the first control-plane node: the key every Secret has last been rewritten with (`current`), the one before it
# (`previous`), the key the stack last asked for (`target`), and every key asked for since that rewrite (`pending`, one
# name a line). Some API server may write with any key in `pending` until a rewrite completes (a change of key stopped
# half-way, then another asked for), so each one stays readable everywhere until then; `previous` stays readable until
# the next change of key, so that a snapshot from before the last one can still be restored.
# shellcheck disable=SC2034 # read by the includers that record or report them (linux-init.sh, encryption-*.sh)
ENCRYPTION_CURRENT="$ENCRYPTION_DIR/current"
# shellcheck disable=SC2034
ENCRYPTION_PREVIOUS="$ENCRYPTION_DIR/previous"
# shellcheck disable=SC2034
ENCRYPTION_TARGET="$ENCRYPTION_DIR/target"
ENCRYPTION_PENDING="$ENCRYPTION_DIR/pending"

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

# key_ring_text TARGET: on the first control-plane node, the key ring the other nodes' steps read: `writer`, the key
# every Secret was last rewritten with (identity before encryption was ever on), `target`, the one they are to be
# written with, and a `read` line for each pending key besides those two, and for the previous key while no change
# of key is asked for (so that printing the ring again, for a new release's script, reads what the last one did).
# Built whole before anything is printed: a key that is missing stops the step before any key reaches its output.
key_ring_text() {
  local target=$1 writer=identity name line text seen
  local -a reads=()
  if [[ -s $ENCRYPTION_CURRENT ]]; then
    writer="$(cat "$ENCRYPTION_CURRENT")"
    valid_key_name "$writer" || die "$ENCRYPTION_CURRENT does not name an encryption key"
  fi
  [[ ! -f $ENCRYPTION_PENDING ]] || mapfile -t reads <"$ENCRYPTION_PENDING"
  if [[ $target == "$writer" && -s $ENCRYPTION_PREVIOUS ]]; then
    reads+=("$(cat "$ENCRYPTION_PREVIOUS")")
  fi
  line="$(print_key_ring_line writer "$writer")" || die "the key ring lacks the key $writer"
  text=$line
  line="$(print_key_ring_line target "$target")" || die "the key ring lacks the key $target"
  text+=$'\n'$line
  seen=" $writer $target "
  for name in ${reads[@]+"${reads[@]}"}; do
    [[ -n $name && $seen != *" $name "* ]] || continue
    valid_key_name "$name" || die "$ENCRYPTION_DIR names something that is not an encryption key"
    line="$(print_key_ring_line read "$name")" || die "the key ring lacks the key $name"
    text+=$'\n'$line
    seen+="$name "
  done
  printf '%s\n' "$text"
}

# record_pending NAME: NAME added to the pending keys unless every Secret is written with it already.
record_pending() {
  local name=$1
  [[ ! -s $ENCRYPTION_CURRENT || "$(cat "$ENCRYPTION_CURRENT")" != "$name" ]] || return 0
  [[ -f $ENCRYPTION_PENDING ]] && grep -qxF -- "$name" "$ENCRYPTION_PENDING" && return 0
  printf '%s\n' "$name" >>"$ENCRYPTION_PENDING"
  chmod 0600 "$ENCRYPTION_PENDING"
}

# read_key_ring: the lines key_ring_text printed on the first control-plane node, from stdin, into this node's key
# ring; sets WRITER_KEY, TARGET_KEY and READ_KEYS (the other pending keys). Messages never repeat what was read.
read_key_ring() {
  local role name secret line=0
  WRITER_KEY="" TARGET_KEY=""
  READ_KEYS=()
  while IFS=' ' read -r role name secret; do
    line=$((line + 1))
    case "$role" in
      writer | target | read) ;;
      *) die "encryption key ring line $line is neither writer, target nor read" ;;
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
    case "$role" in
      writer) WRITER_KEY=$name ;;
      target) TARGET_KEY=$name ;;
      read) READ_KEYS+=("$name") ;;
    esac
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

# node_writer: the key this node's configuration writes with now (its first provider; encryption_config's layout),
# or nothing when it has none.
node_writer() {
  [[ -f $ENCRYPTION_CONFIG ]] || return 0
  awk '/^      - identity: \{\}$/ { print "identity"; exit } /^            - name: / { print $3; exit }' "$ENCRYPTION_CONFIG"
}

# write_encryption_config PHASE: this node's configuration for one phase of a change of key (WRITER_KEY to
# TARGET_KEY), reading every key of the ring. `read` keeps writing with the key this node writes with now (WRITER_KEY
# when it has no configuration yet), so no step ever takes a node back to an older key, whatever ring it was given;
# `write` writes with the target. Every control-plane node reads a key before any writes with it (kubernetes.io
# "Encrypting Confidential Data at Rest", "Rotate a decryption key"). A node that writes with a key the ring does not
# list stops the step: the other nodes could not read what it wrote. A file already as wanted is left alone.
write_encryption_config() {
  local own name known staged
  local -a readable=("$WRITER_KEY" "$TARGET_KEY" ${READ_KEYS[@]+"${READ_KEYS[@]}"}) order=()
  own="$(node_writer)"
  [[ -n $own ]] || own=$WRITER_KEY
  if [[ $own != identity ]]; then
    known=0
    for name in "${readable[@]}"; do [[ $name != "$own" ]] || known=1; done
    ((known)) || die "this node's API server writes Secrets with $own, which the key ring does not list: the other control-plane nodes could not read them"
  fi
  case "$1" in
    read) order=("$own") ;;
    write) order=("$TARGET_KEY") ;;
    *) die "unknown encryption phase $1" ;;
  esac
  # The other keys read in the ring's order; identity reads last (encryption_config) unless it writes.
  for name in "${readable[@]}"; do
    known=0
    for staged in "${order[@]}" identity; do [[ $staged != "$name" ]] || known=1; done
    ((known)) || order+=("$name")
  done
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
