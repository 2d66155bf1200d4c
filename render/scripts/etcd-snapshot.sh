#!/usr/bin/env bash
# The program the etcd snapshot timer runs on a control-plane node (render/etcd_backup.py has the
# sources): one snapshot of the local member, encrypted here to the recipients' keys, stored on the NFS
# target under the node's name (older ones pruned to the newest $KEEP) and, with an off-site store,
# uploaded there. Nothing but ciphertext leaves the node.
set -euo pipefail
umask 077
#@ inputs NODE TARGET KEEP MOUNT CONTAINERD_SOCKET TEXTFILE_DIR METRIC CONFIG_DIR STAGE_DIR OFFSITE OFFSITE_CONF OFFSITE_PATH OFFSITE_CA CONTAINER_SNAPSHOTS CONTAINER_CONF CONTAINER_CA RCLONE_IMAGE

# What a run stopped half-way (a reboot, a kill) may have left: plaintext beside etcd's data, ciphertext staged.
rm -f /var/lib/etcd/etcd-"$NODE"-*.db /var/lib/etcd/etcd-"$NODE"-*.db.part
if [[ -d $STAGE_DIR ]]; then
  find "$STAGE_DIR" -maxdepth 1 -name 'etcd-*.db.gpg' -delete
fi
id="$(crictl --runtime-endpoint "$CONTAINERD_SOCKET" ps --name '^etcd$' --state running -q | head -n 1)"
[[ -n $id ]] || { echo "no running etcd container on $NODE" >&2; exit 1; }
name="etcd-$NODE-$(date -u +%Y%m%dT%H%M%SZ).db"
plain="/var/lib/etcd/$name"
sealed="$STAGE_DIR/$name.gpg"
home="$(mktemp -d)"
trap 'rm -rf "$home"; rm -f "$plain" "$sealed"; if mountpoint -q "$MOUNT"; then umount "$MOUNT"; fi' EXIT
crictl --runtime-endpoint "$CONTAINERD_SOCKET" exec "$id" etcdctl --endpoints=https://127.0.0.1:2379 \
  --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt \
  --key=/etc/kubernetes/pki/etcd/server.key snapshot save "$plain" >/dev/null
[[ -s $plain ]] || { echo "etcdctl wrote no snapshot" >&2; exit 1; }
# The snapshot is checked before it is kept: `etcdutl snapshot status` opens it and runs bbolt's integrity
# check, exiting 1 on a corrupt file (etcd-io/etcd etcdutl/snapshot/v3_snapshot.go Status). etcdutl is in
# the etcd image next to etcdctl (etcd v3.6's Dockerfile adds etcd, etcdctl and etcdutl to /usr/local/bin).
crictl --runtime-endpoint "$CONTAINERD_SOCKET" exec "$id" etcdutl snapshot status "$plain" -w table \
  || { echo "the snapshot $name failed etcdutl snapshot status" >&2; exit 1; }

# Encrypted to every recipient's key, in a throw-away home directory: no keyring, no agent, nothing that decrypts.
mapfile -t recipients < <(find "$CONFIG_DIR" -maxdepth 1 -name 'recipient-*.asc' | sort)
((${#recipients[@]} > 0)) || { echo "no recipient keys in $CONFIG_DIR: the snapshot is not kept" >&2; exit 1; }
to=()
for key in "${recipients[@]}"; do
  to+=(--recipient-file "$key")
done
mkdir -p "$STAGE_DIR"
gpg --batch --no-options --homedir "$home" --quiet --yes "${to[@]}" --cipher-algo AES256 --compress-algo none \
  --output "$sealed" --encrypt "$plain" || { echo "gpg could not encrypt $name" >&2; exit 1; }
rm -f "$plain"
# Addressed to each key: one ENC_TO status line per recipient (gpg doc/DETAILS), read without any secret key.
addressed="$(gpg --batch --no-options --homedir "$home" --status-fd 1 --list-only --decrypt "$sealed" 2>/dev/null \
  | grep -c '^\[GNUPG:\] ENC_TO ')" || true
[[ $addressed == "${#recipients[@]}" ]] \
  || { echo "$name.gpg is addressed to ${addressed:-0} keys, not ${#recipients[@]}" >&2; exit 1; }

mkdir -p "$MOUNT"
if ! mountpoint -q "$MOUNT"; then
  mount -t nfs "$TARGET" "$MOUNT"
fi
mkdir -p "$MOUNT/$NODE"
install -m 0600 "$sealed" "$MOUNT/$NODE/.$name.gpg.partial"
# The copy is checked against the ciphertext, byte for byte, before it gets its name. The journal keeps each one's
# SHA-256: what a restore can hold a file from the export or the bucket against (docs/backup.md).
digest="$(sha256sum <"$sealed")"
digest="${digest%% *}"
[[ "$(sha256sum <"$MOUNT/$NODE/.$name.gpg.partial")" == "$digest  -" ]] \
  || { rm -f "$MOUNT/$NODE/.$name.gpg.partial"; echo "the copy of $name.gpg on $TARGET differs from the snapshot" >&2; exit 1; }
mv -f "$MOUNT/$NODE/.$name.gpg.partial" "$MOUNT/$NODE/$name.gpg"
echo "stored $name.gpg on $TARGET, sha256 $digest"
mapfile -t old < <(find "$MOUNT/$NODE" -maxdepth 1 -name "etcd-$NODE-*.db.gpg" -printf '%f\n' | sort | head -n "-$KEEP")
for file in "${old[@]}"; do
  rm -f "$MOUNT/$NODE/$file"
  echo "pruned $file"
done
# Plaintext snapshots an earlier release stored (and its half-written copies): removed once an encrypted one is there.
mapfile -t plaintext < <(find "$MOUNT/$NODE" -maxdepth 1 \( -name "etcd-$NODE-*.db" -o -name ".etcd-$NODE-*.db.partial" \) \
  -printf '%f\n')
for file in "${plaintext[@]}"; do
  rm -f "$MOUNT/$NODE/$file"
  echo "removed the plaintext snapshot $file"
done
umount "$MOUNT"

if ((OFFSITE)); then
  # rclone from its pinned image, run by containerd outside Kubernetes: on the host's network (the pod network's
  # policies do not apply to it), the staged ciphertext and the root-only configuration mounted read-only. The
  # image is pulled through the CRI, so the registry mirrors apply. The container's name stays within containerd's
  # 76 characters (pkg/identifiers/validate.go).
  crictl --runtime-endpoint "$CONTAINERD_SOCKET" pull "$RCLONE_IMAGE" >/dev/null
  options=(--mount "type=bind,src=$STAGE_DIR,dst=$CONTAINER_SNAPSHOTS,options=rbind:ro"
    --mount "type=bind,src=$OFFSITE_CONF,dst=$CONTAINER_CONF,options=rbind:ro" --env "RCLONE_CONFIG=$CONTAINER_CONF")
  if [[ -n $OFFSITE_CA ]]; then
    options+=(--mount "type=bind,src=$OFFSITE_CA,dst=$CONTAINER_CA,options=rbind:ro" --env "RCLONE_CA_CERT=$CONTAINER_CA")
  fi
  ctr --address "${CONTAINERD_SOCKET#unix://}" --namespace k8s.io run --rm --net-host "${options[@]}" \
    "$RCLONE_IMAGE" "etcd-offsite-$$" \
    rclone copyto "$CONTAINER_SNAPSHOTS/$name.gpg" "offsite:$OFFSITE_PATH/$NODE/$name.gpg" --no-check-dest \
    || { echo "the upload of $name.gpg to offsite:$OFFSITE_PATH failed" >&2; exit 1; }
  echo "uploaded $name.gpg to offsite:$OFFSITE_PATH/$NODE/"
fi

# When the last snapshot was stored, for node-exporter's textfile collector (the "etcd snapshot stale" alert
# in render/metrics.py); written aside and renamed, so a scrape never reads half a file.
mkdir -p "$TEXTFILE_DIR"
printf '# HELP %s Unix time of the last etcd snapshot stored and verified.\n# TYPE %s gauge\n%s{node="%s"} %s\n' \
  "$METRIC" "$METRIC" "$METRIC" "$NODE" "$(date +%s)" >"$TEXTFILE_DIR/.$METRIC.prom.partial"
mv -f "$TEXTFILE_DIR/.$METRIC.prom.partial" "$TEXTFILE_DIR/$METRIC.prom"
