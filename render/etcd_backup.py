"""Renders the scheduled etcd snapshots of a control-plane node (EtcdBackupParams, EtcdOffsite): the snapshot program
(render/scripts/etcd-snapshot.sh), its systemd service and timer, the off-site rclone settings, and the scripts that
install and remove them. Pure: no Pulumi, no config imports.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from render.backup import ObjectStore
from render.script_files import render_script
from vocab.checks import DNS_LABEL, is_host, is_openpgp_public_key

SNAPSHOT_PROGRAM = "/usr/local/sbin/hybrid-cluster-etcd-snapshot"
SERVICE = "hybrid-cluster-etcd-snapshot.service"
TIMER = "hybrid-cluster-etcd-snapshot.timer"
SYSTEMD_DIR = "/etc/systemd/system"
# The NFS export is mounted here only for the copy; no pod mounts it.
MOUNT_POINT = "/run/hybrid-cluster-etcd-snapshot-target"
# crictl (cri-tools, which comes with kubeadm) and ctr reach containerd here. etcdctl runs through `crictl exec`, which
# needs no API server, only etcd: a snapshot is taken while the API is down too.
CONTAINERD_SOCKET = "unix:///run/containerd/containerd.sock"
# node-exporter's textfile collector reads this directory of the host (render/metrics.py passes it as
# --collector.textfile.directory under the chart's /host/root mount of the node's root file system).
TEXTFILE_DIR = "/var/lib/node_exporter/textfile_collector"
# Each stored snapshot's time, for the textfile collector; an alert fires when a node's last one is older than
# etcdBackup.alertAfterHours (render/metrics.py etcd_snapshot_alerts).
SNAPSHOT_METRIC = "hybrid_cluster_etcd_snapshot_last_success_timestamp_seconds"
# The recipients' keys, the off-site settings and credentials (root only), and where the ciphertext waits for its copies.
CONFIG_DIR = "/etc/hybrid-cluster/etcd-snapshot"
STAGE_DIR = "/var/lib/hybrid-cluster/etcd-snapshot"
OFFSITE_CONF = "offsite.conf"
OFFSITE_CA = "offsite-ca.crt"
# Where the rclone container finds the staged ciphertext, its configuration and the store's CA. With backup.offsite the
# node uploads the ciphertext it just stored on NFS at once, with rclone from the pinned image (EtcdOffsite.image) run by
# containerd outside Kubernetes (`ctr run --rm --net-host`; ctr's flags: containerd cmd/ctr/commands/commands.go at
# v2.3.4), its configuration and credentials in a root-only file mounted read-only. `rclone copyto --no-check-dest`:
# no HEAD before the upload, which a key allowed only to write and read its own objects gets refused (403) on S3 stores
# that answer so for a missing object without s3:ListBucket (rclone v1.75.0 fs/operations copyto, backend/s3 treats
# only 404 as "not found"); each name is new anyway.
_CONTAINER_SNAPSHOTS = "/snapshots"
_CONTAINER_CONF = "/config/rclone.conf"
_CONTAINER_CA = "/etc/offsite-ca.crt"
# rclone's S3 provider values (docs/content/s3.md).
_RCLONE_PROVIDERS = {"minio": "Minio", "ceph": "Ceph", "other": "Other"}

_EXPORT = re.compile(r"^/[A-Za-z0-9._/-]*$")
_SCHEDULE = re.compile(r"^[A-Za-z0-9*:/,.~ -]{1,64}$")


@dataclass(frozen=True)
class EtcdOffsite:
    store: ObjectStore     # backup.offsite: the snapshots go to <bucket>/<prefix>-etcd/<node>/
    image: str             # rclone's image (config/compat.py)


@dataclass(frozen=True)
class EtcdBackupParams:
    node_name: str
    nfs_server: str        # host name or IPv4 address
    nfs_path: str          # export path
    schedule: str          # systemd OnCalendar expression
    keep: int              # snapshots kept for this node
    # etcdBackup.recipientKeys: ASCII-armored OpenPGP public keys, one key each, each read with gpg --recipient-file
    # ("a file containing exactly one key ... gpg assumes that the key in this file is fully valid", gpg(1); GnuPG
    # 2.1.14 and later).
    recipient_keys: tuple[str, ...]
    offsite: EtcdOffsite | None = None


def _validate(p: EtcdBackupParams) -> None:
    if not DNS_LABEL.match(p.node_name):
        raise ValueError(f"node name {p.node_name!r} is not a DNS label")
    if not is_host(p.nfs_server):
        raise ValueError(f"NFS server {p.nfs_server!r} is not a host name or IPv4 address")
    if not _EXPORT.match(p.nfs_path) or ".." in p.nfs_path.split("/"):
        raise ValueError(f"NFS path {p.nfs_path!r} must be an absolute export path")
    if not _SCHEDULE.match(p.schedule):
        raise ValueError(f"schedule {p.schedule!r} is not a systemd OnCalendar expression")
    if type(p.keep) is not int or p.keep < 1:
        raise ValueError("keep must be a positive integer")
    if not p.recipient_keys or not all(is_openpgp_public_key(key) for key in p.recipient_keys):
        raise ValueError("recipient keys must be one or more ASCII-armored OpenPGP public keys, one key each")


def offsite_path(store: ObjectStore) -> str:
    """Beside the Velero location's prefix, never inside it: Velero refuses a location whose prefix holds any top-level
    directory but its own ("Backup store contains invalid top-level directories", pkg/persistence/object_store.go at
    v1.18.1), which would take the off-site location, and a recovery location on it, out of service."""
    return f"{store.bucket}/{store.prefix}-etcd"


def offsite_settings(store: ObjectStore) -> str:
    """rclone's remote `offsite` in its configuration file's format (rclone docs/content/docs.md, "Configuration
    file": an INI section per remote, `option = value`), without its credentials, which the install step adds from
    standard input. A file mounted read-only into the container, not environment variables: those would be kept in
    the container's spec (containerd's metadata and the bundle's config.json)."""
    settings = {"type": "s3", "provider": _RCLONE_PROVIDERS[store.provider], "endpoint": store.endpoint,
                "region": store.region,
                # The bucket exists (Velero writes to it); the key may only write under <prefix>-etcd/.
                "no_check_bucket": "true"}
    lines = ["[offsite]", *(f"{key} = {value}" for key, value in settings.items())]
    for line in lines:
        if "\n" in line or not line.isprintable():
            raise ValueError("an off-site setting must be one printable line")
    return "\n".join(lines)


# What the snapshot program (render/scripts/etcd-snapshot.sh) does, with its sources:
#   * `etcdctl snapshot save` against the local member, with the CA, certificate and key kubeadm generates under
#     /etc/kubernetes/pki/etcd, as upstream's backup section does
#     (https://kubernetes.io/docs/tasks/administer-cluster/configure-upgrade-etcd/#backing-up-an-etcd-cluster), run in the
#     node's etcd container (CONTAINERD_SOCKET), whose image ships etcdctl (render/linux_bootstrap.py's scripts run it
#     there too, through kubectl exec: render/scripts/lib/etcd.sh). That container's /var/lib/etcd is the host's
#     (kubeadm's etcd static Pod mounts it as `etcd-data`), so the file it writes appears on the host and is taken off
#     at once.
#   * Checked with `etcdutl snapshot status`, then encrypted on the node before anything else sees it, with GnuPG to
#     every recipient key, AES-256, no compression, in a throw-away home directory (no keyring, no agent): the node holds
#     no key that decrypts it, not even its own past snapshots; the plaintext is removed at once, and the ciphertext's
#     recipients are counted (`--list-only`) before it is kept. Nothing but ciphertext leaves the node.
#   * Stored under the node's own name on the NFS export as `etcd-<node>-<UTC timestamp>.db.gpg` (sortable): copied
#     under a temporary name, compared with the local ciphertext (SHA-256) and renamed; only the newest `keep` are left,
#     and a plaintext `.db` an earlier release stored is removed.
def snapshot_program(p: EtcdBackupParams) -> str:
    """The program the timer runs: one snapshot, encrypted, stored on the NFS target (older ones pruned) and, with
    an off-site store, uploaded there."""
    _validate(p)
    offsite = p.offsite
    return render_script("etcd-snapshot.sh", NODE=p.node_name, TARGET=f"{p.nfs_server}:{p.nfs_path}",
                         KEEP=p.keep, MOUNT=MOUNT_POINT, CONTAINERD_SOCKET=CONTAINERD_SOCKET,
                         TEXTFILE_DIR=TEXTFILE_DIR, METRIC=SNAPSHOT_METRIC, CONFIG_DIR=CONFIG_DIR, STAGE_DIR=STAGE_DIR,
                         OFFSITE=int(offsite is not None), OFFSITE_CONF=f"{CONFIG_DIR}/{OFFSITE_CONF}",
                         OFFSITE_PATH=offsite_path(offsite.store) if offsite else "",
                         OFFSITE_CA=f"{CONFIG_DIR}/{OFFSITE_CA}" if offsite and offsite.store.ca_certificate else "",
                         CONTAINER_SNAPSHOTS=_CONTAINER_SNAPSHOTS, CONTAINER_CONF=_CONTAINER_CONF,
                         CONTAINER_CA=_CONTAINER_CA,
                         RCLONE_IMAGE=offsite.image if offsite else "")


def service_unit(p: EtcdBackupParams) -> str:
    _validate(p)
    return f"""# Rendered by render/etcd_backup.py.
[Unit]
Description=etcd snapshot of {p.node_name} to {p.nfs_server}:{p.nfs_path}
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
ExecStart={SNAPSHOT_PROGRAM}
"""


def timer_unit(p: EtcdBackupParams) -> str:
    """``OnCalendar=`` from the stack; ``Persistent=true``: a run missed while the node was down happens at the next
    boot (systemd.timer(5))."""
    _validate(p)
    return f"""# Rendered by render/etcd_backup.py.
[Unit]
Description=Scheduled etcd snapshots of {p.node_name}

[Timer]
OnCalendar={p.schedule}
Persistent=true
RandomizedDelaySec=300

[Install]
WantedBy=timers.target
"""


def render_install(p: EtcdBackupParams) -> str:
    """As root on the control-plane node: the recipients' keys, the off-site settings (with the credentials read
    from standard input: the access key's line, then the secret key's) and the program and units in place
    (rewritten only when they differ), the timer enabled, and one snapshot taken now to prove the target and the
    keys, so a wrong target fails the deployment instead of the first night. Idempotent."""
    _validate(p)
    offsite = p.offsite
    where = f"{p.nfs_server}:{p.nfs_path}" + (f" and {offsite.store.endpoint}/{offsite_path(offsite.store)}" if offsite else "")
    return render_script(
        "etcd-snapshot-install.sh", PROGRAM_TEXT=snapshot_program(p).rstrip("\n"),
        SERVICE_TEXT=service_unit(p).rstrip("\n"), TIMER_TEXT=timer_unit(p).rstrip("\n"),
        RECIPIENT_TEXTS=[key.strip() for key in p.recipient_keys], OFFSITE=int(offsite is not None),
        OFFSITE_SETTINGS=offsite_settings(offsite.store) if offsite else "",
        OFFSITE_CA_TEXT=(offsite.store.ca_certificate or "").strip() if offsite else "",
        DESCRIPTION=f"{p.node_name}, {p.schedule} to {where}, {p.keep} kept, encrypted to {len(p.recipient_keys)} "
                    f"key(s)", OFFSITE_CONF=OFFSITE_CONF, OFFSITE_CA=OFFSITE_CA, **_unit_paths())


def _unit_paths() -> dict[str, str]:
    return {"PROGRAM": SNAPSHOT_PROGRAM, "SYSTEMD_DIR": SYSTEMD_DIR, "SERVICE": SERVICE, "TIMER": TIMER,
            "CONFIG_DIR": CONFIG_DIR, "STAGE_DIR": STAGE_DIR}


def render_remove() -> str:
    """As root on the control-plane node: timer stopped and disabled, program, units, keys and credentials
    removed. The snapshots already stored stay on the target: they are the data this exists for. Restoring one is a
    manual, documented procedure (docs/day2.md, "Restore etcd from a snapshot")."""
    return render_script("etcd-snapshot-remove.sh", **_unit_paths())
