#!/usr/bin/env bash
# The program the etcd snapshot timer runs on a control-plane node (render/etcd_backup.py has the
# sources): one snapshot of the local member, stored on the NFS target under the node's name, older ones
# pruned to the newest $KEEP.
set -euo pipefail
umask 077
#@ inputs NODE TARGET KEEP MOUNT CONTAINERD_SOCKET

id="$(crictl --runtime-endpoint "$CONTAINERD_SOCKET" ps --name '^etcd$' --state running -q | head -n 1)"
[[ -n $id ]] || { echo "no running etcd container on $NODE" >&2; exit 1; }
name="etcd-$NODE-$(date -u +%Y%m%dT%H%M%SZ).db"
crictl --runtime-endpoint "$CONTAINERD_SOCKET" exec "$id" etcdctl --endpoints=https://127.0.0.1:2379 \
  --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/server.crt \
  --key=/etc/kubernetes/pki/etcd/server.key snapshot save "/var/lib/etcd/$name" >/dev/null
trap 'rm -f "/var/lib/etcd/$name"; if mountpoint -q "$MOUNT"; then umount "$MOUNT"; fi' EXIT
[[ -s /var/lib/etcd/$name ]] || { echo "etcdctl wrote no snapshot" >&2; exit 1; }
mkdir -p "$MOUNT"
if ! mountpoint -q "$MOUNT"; then
  mount -t nfs "$TARGET" "$MOUNT"
fi
mkdir -p "$MOUNT/$NODE"
install -m 0600 "/var/lib/etcd/$name" "$MOUNT/$NODE/.$name.partial"
mv -f "$MOUNT/$NODE/.$name.partial" "$MOUNT/$NODE/$name"
echo "stored $name on $TARGET"
mapfile -t old < <(find "$MOUNT/$NODE" -maxdepth 1 -name "etcd-$NODE-*.db" -printf '%f\n' | sort | head -n "-$KEEP")
for file in "${old[@]}"; do
  rm -f "$MOUNT/$NODE/$file"
  echo "pruned $file"
done
