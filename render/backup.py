"""Renders backups and cross-site recovery (config `backup`): Velero's Helm values, its backup storage locations and
schedules, and the Windows node agent the chart does not deploy. (The etcd snapshots go off-site from the control-plane
nodes themselves: render/etcd_backup.py.)

This module owns those renderers and the names they share (namespace, Secret keys, the locations' names). Pure: plain
values in, dicts out; the chart and image pins are config.compat's (CHARTS["velero"], VELERO_*).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from render.scheduling import system_namespace, windows_toleration
from render.script_files import render_script
from vocab.checks import DNS_LABEL, require
from vocab.labels import OS_LABEL, WINDOWS_BUILD_LABEL
from vocab.time_zones import UTC

NAMESPACE = "velero"
SERVICE_ACCOUNT = "velero"           # serviceAccount.server.name: the Windows node agent runs as it too
CREDENTIALS_SECRET = "velero-credentials"            # this site's store (the chart's secret)
OFFSITE_CREDENTIALS_SECRET = "velero-credentials-offsite"   # the other site's: off-site and recovery locations
CA_SECRET = "velero-store-ca"
PRIMARY = "primary"                  # the location names, and each one's key in the two Secrets
OFFSITE = "offsite"
RECOVERY = "recovery"                # read-only: the off-site store of the cluster this one replaces
API_VERSION = "velero.io/v1"
# The key the chart mounts the credentials Secret's file from (credentials.existingSecret: the Secret's "cloud" key
# becomes /credentials/cloud, AWS_SHARED_CREDENTIALS_FILE); the primary location's file is it.
CHART_CREDENTIALS_KEY = "cloud"
# The Secret and key Velero reads its Kopia repositories' password from, and the value it writes there when the Secret
# is absent (vmware-tanzu/velero v1.18.1 pkg/repository/keys/keys.go: credentialsSecretName, credentialsKey,
# encryptionKey). The default is published in Velero's source, so it protects nothing.
REPOSITORY_SECRET = "velero-repo-credentials"
REPOSITORY_PASSWORD_KEY = "repository-password"
VELERO_DEFAULT_REPOSITORY_PASSWORD = "static-passw0rd"
REPOSITORY_PASSWORD_MIN_LENGTH = 16


@dataclass(frozen=True)
class ObjectLock:
    """The default retention the bucket was made with (S3 Object Lock)."""
    mode: str                        # "governance" or "compliance"
    days: int


@dataclass(frozen=True)
class ObjectStore:
    endpoint: str
    bucket: str
    region: str
    prefix: str
    provider: str                    # "minio" | "ceph" | "other"
    ca_certificate: str | None = None
    object_lock: ObjectLock | None = None


def namespace() -> dict[str, Any]:
    """The velero namespace at Pod Security level privileged: the node agents mount the kubelet's pods directory from
    the host."""
    return system_namespace(NAMESPACE)


def credentials_file(access_key: str, secret_key: str) -> str:
    """An AWS shared credentials file (velero-plugin-for-aws README)."""
    for value in (access_key, secret_key):
        require(bool(value) and "\n" not in value, "an access key must be one non-empty line")
    return f"[default]\naws_access_key_id={access_key}\naws_secret_access_key={secret_key}\n"


def credentials_secret_metadata(name: str = CREDENTIALS_SECRET) -> dict[str, Any]:
    """A credentials Secret, without data (the component adds it from Pulumi secrets): each site's keys in their own,
    so that the other site's keys are not in the chart's Secret, which Velero's pods mount whole."""
    require(name in (CREDENTIALS_SECRET, OFFSITE_CREDENTIALS_SECRET), f"unknown credentials Secret {name!r}")
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": name, "namespace": NAMESPACE}}


def ca_secret(certificates: dict[str, str]) -> dict[str, Any]:
    """The stores' CA certificates, by location (each location's ``caCertRef`` key); not secret."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": CA_SECRET, "namespace": NAMESPACE}, "stringData": dict(certificates)}


def credential_key(location: str) -> str:
    return CHART_CREDENTIALS_KEY if location == PRIMARY else location


def credential_ref(location: str) -> dict[str, str]:
    """A location's `credential`: its key of its site's Secret."""
    return {"name": CREDENTIALS_SECRET if location == PRIMARY else OFFSITE_CREDENTIALS_SECRET,
            "key": credential_key(location)}


def velero_values(aws_plugin_image: str, file_system_backup: bool) -> dict[str, Any]:
    """Values for the velero chart (charts/velero/values.yaml at 12.1.0)."""
    linux = {OS_LABEL: "linux"}
    return {
        "initContainers": [{"name": "velero-plugin-for-aws", "image": aws_plugin_image,
                            "volumeMounts": [{"mountPath": "/target", "name": "plugins"}]}],
        # The locations and the schedules are this program's objects, not the chart's, so they are checked against their
        # CRD schemas like every other custom resource. File-system backups (defaultVolumesToFsBackup: every pod volume
        # unless a pod opts a volume out with ``backup.velero.io/backup-volumes-excludes``; file-system-backup.md) go
        # through Velero's node agent with kopia.
        "configuration": {"backupStorageLocation": [], "volumeSnapshotLocation": [], "uploaderType": "kopia",
                          "defaultVolumesToFsBackup": file_system_backup},
        "snapshotsEnabled": False,
        "credentials": {"useSecret": True, "existingSecret": CREDENTIALS_SECRET},
        "serviceAccount": {"server": {"create": True, "name": SERVICE_ACCOUNT}},
        "deployNodeAgent": file_system_backup,
        # Velero's server runs on Linux ("Velero server runs in linux nodes only", site/content/docs/v1.18/
        # backup-restore-windows.md). Neither its Deployment nor the chart's node agent selects an OS (charts/velero
        # templates at 12.1.0), so both get one; the chart's CRD upgrade job takes the server's nodeSelector.
        "nodeAgent": {"nodeSelector": linux},
        "nodeSelector": linux,
    }


def storage_location(name: str, store: ObjectStore, default: bool) -> dict[str, Any]:
    """A BackupStorageLocation for one S3-compatible bucket. ``recovery`` is read-only: Velero reads its backups to
    restore from and never writes, deletes or expires anything there (disaster-case.md and migration-case.md: the
    location of another cluster's backups "ReadOnly")."""
    require(name in (PRIMARY, OFFSITE, RECOVERY), f"unknown location {name!r}")
    require(not (default and name == RECOVERY), "a read-only location cannot be the default one")
    require(store.endpoint.startswith(("http://", "https://")), f"{store.endpoint!r} is not an http(s) URL")
    require(bool(DNS_LABEL.match(store.prefix)), f"prefix {store.prefix!r} is not a DNS-1123 label")
    # velero-plugin-for-aws speaks S3 to MinIO and Ceph RGW: s3ForcePathStyle "if using a local storage service like
    # MinIO"; for Ceph, "Ceph S3 | checksumAlgorithm="" to avoid api error XAmzContentSHA256Mismatch" (the plugin's
    # backupstoragelocation.md, known issues).
    config = {"region": store.region, "s3ForcePathStyle": "true", "s3Url": store.endpoint}
    if store.provider == "ceph":
        config["checksumAlgorithm"] = ""
    object_storage: dict[str, Any] = {"bucket": store.bucket, "prefix": store.prefix}
    # caCertRef, not caCert: "Deprecated: Use CACertRef instead" (BackupStorageLocation types at v1.18.1).
    if store.ca_certificate is not None:
        object_storage["caCertRef"] = {"name": CA_SECRET, "key": name}
    return {
        "apiVersion": API_VERSION, "kind": "BackupStorageLocation",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"provider": "aws", "default": default, "accessMode": "ReadOnly" if name == RECOVERY else "ReadWrite",
                 "objectStorage": object_storage, "config": config,
                 "credential": credential_ref(name)},
    }


def ttl(retention_days: int) -> str:
    """A backup's time to live as Velero writes durations (Go's time.Duration, e.g. 720h0m0s)."""
    require(retention_days >= 1, "retention must be at least a day")
    return f"{retention_days * 24}h0m0s"


def schedule(location: str, cron: str, retention_days: int, file_system_backup: bool,
             excluded_namespaces: tuple[str, ...], timezone: str = UTC) -> dict[str, Any]:
    """The Schedule that backs up every namespace but ``excluded_namespaces`` (the platform's, which this program
    makes again on any cluster and a recovery restore leaves out) to ``location``, at ``cron`` in ``timezone`` (the
    stack's, as the nodes' timers: Velero reads `CRON_TZ=<IANA name> <cron>`, docs/v1.18/backup-reference.md "Time
    zone specification", from the zoneinfo of its image, whose paketo jammy-tiny run image installs tzdata; without a
    prefix it is UTC).

    Velero does not copy a backup from one location to another: the off-site copy is a second schedule writing to the
    off-site location, so each backup exists twice, made independently."""
    require(len(cron.split()) == 5, f"{cron!r} is not a five-field cron expression")
    # The platform's namespaces (plan/platform.py PLATFORM_NAMESPACES) are left out: the program makes them again on any
    # cluster and the recovery restore leaves them out (docs/backup.md), and velero's own would put the stores' keys and
    # the repository password in the stores, and back up the node agents' scratch volumes on every node every night.
    require(NAMESPACE in excluded_namespaces, f"Velero's own namespace {NAMESPACE!r} must not be backed up")
    require(bool(timezone) and " " not in timezone, f"{timezone!r} is not an IANA time zone name")
    return {
        "apiVersion": API_VERSION, "kind": "Schedule",
        "metadata": {"name": f"daily-{location}", "namespace": NAMESPACE},
        "spec": {
            "schedule": cron if timezone == UTC else f"CRON_TZ={timezone} {cron}",
            # Backups outlive a removed schedule: they are not owned by it.
            "useOwnerReferencesInBackup": False,
            "template": {"storageLocation": location, "ttl": ttl(retention_days), "includedNamespaces": ["*"],
                         "excludedNamespaces": sorted(excluded_namespaces),
                         "includeClusterResources": True, "snapshotVolumes": False,
                         "defaultVolumesToFsBackup": file_system_backup},
        },
    }


def node_agent_windows(image: str, build: str) -> dict[str, Any]:
    """The Windows node agent DaemonSet, as `velero install --use-node-agent-windows` writes it, on the nodes of the
    Windows build ``build`` (its image's).

    The chart has no equivalent of that installer's second DaemonSet, ``node-agent-windows``, so it is declared here as
    the installer writes it (pkg/install/daemonset.go at v1.18.1: not HostProcess, no security context, ``spec.os.name:
    windows``, the kubelet's pods directory mounted at /host_pods), with our Windows taint's toleration instead of the
    installer's ``os=windows``, and only on Windows Server 2022 nodes: the image is built for ltsc2022 only
    (config/compat.py). Velero's own documents disagree on what it can back up there (the v1.18 Windows page: file system
    backup "NOT supported"; CHANGELOG-1.17: "fs-backup supports to backup/restore Windows workloads"), which
    docs/backup.md says."""
    labels = {"name": "node-agent-windows", "role": "node-agent"}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node-agent-windows", "namespace": NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"name": "node-agent-windows"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "os": {"name": "windows"},
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "nodeSelector": {OS_LABEL: "windows", WINDOWS_BUILD_LABEL: build},
                    # Each volume's files are read by a pod Velero makes for that volume (pkg/exposer/pod_volume.go at
                    # v1.18.1, createHostingPod), from the node agent's image, service account and volumes, on the client
                    # pod's node by ``spec.nodeName``: the scheduler never sees it, so it tolerates only ``os=windows``
                    # (hard-coded there) and the ThirdPartyTolerations keys copied from the node agent
                    # (pkg/util/third_party.go), never this taint. It runs all the same: a pod bound by name is checked by
                    # the kubelet, which checks NoExecute taints only (kubernetes pkg/kubelet/lifecycle/predicate.go
                    # generalFilter: "Kubelet is only interested in the NoExecute taint"), and our Windows taint is
                    # NoSchedule (vocab/labels.py); tests/program/test_backup.py holds the two facts together.
                    "tolerations": [windows_toleration()],
                    "volumes": [
                        {"name": "host-pods", "hostPath": {"path": "/var/lib/kubelet/pods"}},
                        {"name": "host-plugins", "hostPath": {"path": "/var/lib/kubelet/plugins"}},
                        {"name": "scratch", "emptyDir": {}},
                        {"name": "cloud-credentials", "secret": {"secretName": CREDENTIALS_SECRET, "defaultMode": 0o444}},
                    ],
                    "containers": [{
                        "name": "node-agent-windows",
                        "image": image,
                        "command": ["/velero"],
                        "args": ["node-agent", "server"],
                        "ports": [{"name": "metrics", "containerPort": 8085}],
                        "env": [
                            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                            {"name": "VELERO_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                            {"name": "VELERO_SCRATCH_DIR", "value": "/scratch"},
                            {"name": "AWS_SHARED_CREDENTIALS_FILE", "value": f"/credentials/{CHART_CREDENTIALS_KEY}"},
                        ],
                        "volumeMounts": [
                            {"name": "host-pods", "mountPath": "/host_pods", "mountPropagation": "HostToContainer"},
                            {"name": "host-plugins", "mountPath": "/var/lib/kubelet/plugins",
                             "mountPropagation": "HostToContainer"},
                            {"name": "scratch", "mountPath": "/scratch"},
                            {"name": "cloud-credentials", "mountPath": "/credentials"},
                        ],
                        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
                    }],
                },
            },
        },
    }


def render_repository_password(keep_default: bool) -> str:
    """On the first control-plane node, stdin the stack's veleroRepositoryPassword: that password in Velero's
    repository Secret before Velero starts, never over a password repositories were made with
    (render/scripts/velero-repository-password.sh)."""
    return render_script("velero-repository-password.sh", NAMESPACE=NAMESPACE, SECRET=REPOSITORY_SECRET,
                         KEY=REPOSITORY_PASSWORD_KEY, VELERO_DEFAULT=VELERO_DEFAULT_REPOSITORY_PASSWORD,
                         KEEP_DEFAULT=int(keep_default), MIN_LENGTH=REPOSITORY_PASSWORD_MIN_LENGTH)


def render_object_lock_check(store: ObjectStore) -> str:
    """On the first control-plane node, stdin the store's key pair: the bucket's Object Lock is the store's
    ``object_lock`` (render/s3_object_lock.py, sent as the program python3 runs)."""
    lock = store.object_lock
    if lock is None:
        raise ValueError("the store declares no object lock")
    program = (Path(__file__).parent / "s3_object_lock.py").read_text()
    return render_script("object-lock-check.sh", ENDPOINT=store.endpoint, BUCKET=store.bucket, REGION=store.region,
                         MODE=lock.mode, DAYS=lock.days, CA_CERTIFICATE=store.ca_certificate or "", PROGRAM=program)
