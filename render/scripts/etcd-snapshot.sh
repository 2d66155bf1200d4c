#!/usr/bin/env bash
# The program the etcd snapshot timer runs on a control-plane node (render/etcd_backup.py has the
# sources): one snapshot of the local member, stored on the NFS target under the node's name, older ones
# pruned to the newest $KEEP.
set -euo pipefail
umask 077
#@ inputs NODE TARGET KEEP MOUNT CONTAINERD_SOCKET TEXTFILE_DIR METRIC

id="$(crictl --runtime-endpoint "$CONTAINERD_SOCKET" ps --name '^etcd$' --state running -q | head -n 1)"
[[ -n $id ]] || { echo "no running etcd container on $NODE" >&2; exit 1; }
name="etcd-$NODE-$(date -u +%Y%m%dT%H%M%SZ).db"
crictl --runtime-endpoint "$CONTAINERD_SOCKET" exec "$id" etcdctl --endpoints=https://127.0.0.1:2379 \
  --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt \
  --key=/etc/kubernetes/pki/etcd/server.key snapshot save "/var/lib/etcd/$name" >/dev/null
trap 'rm -f "/var/lib/etcd/$name"; if mountpoint -q "$MOUNT"; then umount "$MOUNT"; fi' EXIT
[[ -s /var/lib/etcd/$name ]] || { echo "etcdctl wrote no snapshot" >&2; exit 1; }
# The snapshot is checked before it is kept: `etcdutl snapshot status` opens it and runs bbolt's integrity
# check, exiting 1 on a corrupt file (etcd-io/etcd etcdutl/snapshot/v3_snapshot.go Status). etcdutl is in
# the etcd image next to etcdctl (etcd v3.6's Dockerfile adds etcd, etcdctl and etcdutl to /usr/local/bin).
crictl --runtime-endpoint "$CONTAINERD_SOCKET" exec "$id" etcdutl snapshot status "/var/lib/etcd/$name" -w table \
  || { echo "the snapshot $name failed etcdutl snapshot status" >&2; exit 1; }
mkdir -p "$MOUNT"
if ! mountpoint -q "$MOUNT"; then
  mount -t nfs "$TARGET" "$MOUNT"
fi
mkdir -p "$MOUNT/$NODE"
install -m 0600 "/var/lib/etcd/$name" "$MOUNT/$NODE/.$name.partial"
# The copy is checked against the snapshot, byte for byte, before it gets its name.
[[ "$(sha256sum <"/var/lib/etcd/$name")" == "$(sha256sum <"$MOUNT/$NODE/.$name.partial")" ]] \
  || { rm -f "$MOUNT/$NODE/.$name.partial"; echo "the copy of $name on $TARGET differs from the snapshot" >&2; exit 1; }
mv -f "$MOUNT/$NODE/.$name.partial" "$MOUNT/$NODE/$name"
echo "stored $name on $TARGET"
mapfile -t old < <(find "$MOUNT/$NODE" -maxdepth 1 -name "etcd-$NODE-*.db" -printf '%f\n' | sort | head -n "-$KEEP")
for file in "${old[@]}"; do
  rm -f "$MOUNT/$NODE/$file"
  echo "pruned $file"
done
# When the last snapshot was stored, for node-exporter's textfile collector (the "etcd snapshot stale" alert
# in render/metrics.py); written aside and renamed, so a scrape never reads half a file.
mkdir -p "$TEXTFILE_DIR"
printf '# HELP %s Unix time of the last etcd snapshot stored and verified.\n# TYPE %s gauge\n%s{node="%s"} %s\n' \
  "$METRIC" "$METRIC" "$METRIC" "$NODE" "$(date +%s)" >"$TEXTFILE_DIR/.$METRIC.prom.partial"
mv -f "$TEXTFILE_DIR/.$METRIC.prom.partial" "$TEXTFILE_DIR/$METRIC.prom"
