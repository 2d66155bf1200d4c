"""Renders the scheduled etcd snapshots of a control-plane node: the snapshot program, its systemd
service and timer, and the scripts that install and remove them. Pure: no Pulumi, no config imports.

How a snapshot is taken, with its sources:
  * ``etcdctl snapshot save`` against the local member, with the CA, certificate and key kubeadm
    generates under /etc/kubernetes/pki/etcd, as upstream's backup section does
    (https://kubernetes.io/docs/tasks/administer-cluster/configure-upgrade-etcd/#backing-up-an-etcd-cluster).
    etcdctl runs inside the node's etcd container, whose image ships it (render/linux_bootstrap.py
    uses it the same way), through ``crictl exec``: the snapshot needs no API server, only etcd, so it
    also works while the API is down. crictl comes with kubeadm (cri-tools). The container's
    /var/lib/etcd is the host's (kubeadm's etcd static Pod mounts it as ``etcd-data``), so the file
    written there appears on the host and is moved off at once.
  * The target is an NFS export, mounted only for the copy; each node writes under its own name, files
    are ``etcd-<node>-<UTC timestamp>.db`` (sortable), checked with ``etcdutl snapshot status`` first,
    copied under a temporary name, compared with the snapshot (SHA-256) and renamed, and only the newest
    ``keep`` are left. Each success is recorded for node-exporter's textfile collector (SNAPSHOT_METRIC),
    and an alert fires when a node's last one is older than ``etcdBackup.alertAfterHours``.
  * A systemd timer (``OnCalendar=`` from the stack, ``Persistent=true`` so a missed run happens at the
    next boot, systemd.timer(5)) starts the service; installation runs one snapshot at once, so a wrong
    target fails the deployment instead of the first night.

Restoring is a manual, documented procedure (docs/day2.md, "Restore etcd from a snapshot").
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from render.script_files import render_script
from vocab.checks import DNS_LABEL, is_host

SNAPSHOT_PROGRAM = "/usr/local/sbin/hybrid-cluster-etcd-snapshot"
SERVICE = "hybrid-cluster-etcd-snapshot.service"
TIMER = "hybrid-cluster-etcd-snapshot.timer"
SYSTEMD_DIR = "/etc/systemd/system"
MOUNT_POINT = "/run/hybrid-cluster-etcd-snapshot-target"
CONTAINERD_SOCKET = "unix:///run/containerd/containerd.sock"
# node-exporter's textfile collector reads this directory of the host (render/metrics.py passes it as
# --collector.textfile.directory under the chart's /host/root mount of the node's root file system).
TEXTFILE_DIR = "/var/lib/node_exporter/textfile_collector"
SNAPSHOT_METRIC = "hybrid_cluster_etcd_snapshot_last_success_timestamp_seconds"

_EXPORT = re.compile(r"^/[A-Za-z0-9._/-]*$")
_SCHEDULE = re.compile(r"^[A-Za-z0-9*:/,.~ -]{1,64}$")


@dataclass(frozen=True)
class EtcdBackupParams:
    node_name: str
    nfs_server: str        # host name or IPv4 address
    nfs_path: str          # export path
    schedule: str          # systemd OnCalendar expression
    keep: int              # snapshots kept for this node


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


def snapshot_program(p: EtcdBackupParams) -> str:
    """The program the timer runs: one snapshot, stored on the NFS target, older ones pruned."""
    _validate(p)
    return render_script("etcd-snapshot.sh", NODE=p.node_name, TARGET=f"{p.nfs_server}:{p.nfs_path}",
                         KEEP=p.keep, MOUNT=MOUNT_POINT, CONTAINERD_SOCKET=CONTAINERD_SOCKET,
                         TEXTFILE_DIR=TEXTFILE_DIR, METRIC=SNAPSHOT_METRIC)


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
    """As root on the control-plane node: the program and units in place (rewritten only when they
    differ), the timer enabled, and one snapshot taken now to prove the target. Idempotent."""
    _validate(p)
    return render_script(
        "etcd-snapshot-install.sh", PROGRAM_TEXT=snapshot_program(p).rstrip("\n"),
        SERVICE_TEXT=service_unit(p).rstrip("\n"), TIMER_TEXT=timer_unit(p).rstrip("\n"),
        DESCRIPTION=f"{p.node_name}, {p.schedule} to {p.nfs_server}:{p.nfs_path}, {p.keep} kept", **_unit_paths())


def _unit_paths() -> dict[str, str]:
    return {"PROGRAM": SNAPSHOT_PROGRAM, "SYSTEMD_DIR": SYSTEMD_DIR, "SERVICE": SERVICE, "TIMER": TIMER}


def render_remove() -> str:
    """As root on the control-plane node: timer stopped and disabled, program and units removed. The
    snapshots already stored stay on the target: they are the data this exists for."""
    return render_script("etcd-snapshot-remove.sh", **_unit_paths())
