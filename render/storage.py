"""Renders the cluster storage: the Helm values of the three CSI drivers (csi-driver-smb on Linux and
Windows, csi-driver-nfs and Longhorn on Linux), the three StorageClasses and the metadata of the SMB
credentials Secret.

This module owns StorageParams, the pinned storage charts, the StorageClass names and the README
paragraphs on SMB rotation and on the one shared class. It is pure: no Pulumi and no ``config`` imports;
a frozen dataclass comes in, Kubernetes objects and Helm values as plain dicts go out. The components
(written by the lead) turn them into resources and add the Secret's ``stringData`` from Pulumi secrets.

Where each chart's pods run (every pod-creating part of the three charts, and how it picks its OS):

* csi-driver-smb (``CSI_SMB_POD_PARTS``): ``controller`` (Deployment csi-smb-controller) and ``linux``
  (DaemonSet csi-smb-node) carry ``kubernetes.io/os: linux`` in the chart templates themselves;
  ``windows`` (DaemonSet csi-smb-node-win, HostProcess variant) carries ``kubernetes.io/os: windows`` in
  its template, and we add the toleration for our Windows taint. ``windows.csiproxy`` is disabled: the
  HostProcess node plugin mounts SMB itself and needs no csi-proxy.
* csi-driver-nfs (``CSI_NFS_POD_PARTS``): ``controller`` and ``node`` select linux in their templates;
  the snapshot controller (``externalSnapshotter``) is off.
* Longhorn (``LONGHORN_POD_PARTS``): the chart-deployed manager, driver deployer, UI and (1.13) global
  manager take ``global.nodeSelector`` / their own ``nodeSelector``; everything longhorn-manager creates
  at run time (instance managers, engine image, CSI plugin and sidecars, share managers, backing image
  managers) takes ``defaultSettings.systemManagedComponentsNodeSelector``. Both say "Linux worker".

Windows image choice: the csi-driver-smb Windows node plugin runs as a HostProcess DaemonSet (chart
values ``windows.useHostProcessContainers``), so one DaemonSet with one image serves win2019 and win2022:
"HostProcess containers ... do not inherit the same compatibility requirements as Windows server
containers, meaning that the version of the base images does not need to match that of the host"
(https://kubernetes.io/docs/tasks/configure-pod-container/create-hostprocess-pod/).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from render.scheduling import windows_toleration
from vocab.checks import LABEL_VALUE, is_host, require
from vocab.labels import OS_LABEL, WORKER_ROLE_LABEL

# --- Namespaces --------------------------------------------------------------------------------------
#
# The charts (config.compat.CHARTS "csi-driver-smb", "csi-driver-nfs", "longhorn") and their namespaces:
# both CSI drivers install into kube-system (charts/README.md of each: `--namespace kube-system`), and
# Longhorn only into longhorn-system ("install the Longhorn chart in the longhorn-system namespace only",
# chart/README.md).
CSI_NAMESPACE = "kube-system"
LONGHORN_NAMESPACE = "longhorn-system"

# --- Names -------------------------------------------------------------------------------------------

SHARED_FILES_CLASS = "shared-files"   # SMB: the one class both operating systems mount
NFS_FILES_CLASS = "nfs-files"         # NFS: Linux only
LONGHORN_CLASS = "longhorn"           # Longhorn block: Linux only
STORAGE_CLASS_NAMES = (SHARED_FILES_CLASS, NFS_FILES_CLASS, LONGHORN_CLASS)

# Provisioner names: driver.name defaults of the two CSI charts (values.yaml `driver.name`) and the
# Longhorn CSI driver (chart/templates/storageclass.yaml `provisioner: driver.longhorn.io`).
SMB_PROVISIONER = "smb.csi.k8s.io"
NFS_PROVISIONER = "nfs.csi.k8s.io"
LONGHORN_PROVISIONER = "driver.longhorn.io"

# The SMB credentials live next to the driver, in kube-system (the csi-driver-smb chart's namespace): only cluster
# administrators read Secrets there, application namespaces never see the password, and the chart's RBAC
# already lets its controller and node service accounts `get` Secrets (ClusterRoles
# smb-external-provisioner-role and csi-smb-node-secret-role, templates/rbac-csi-smb.yaml). A
# namespace of our own would add a namespace and nothing else.
SMB_SECRET_NAME = "smb-credentials"
SMB_SECRET_NAMESPACE = CSI_NAMESPACE
# Keys the driver reads from the Secret: `username`, `password`, optional `domain`
# (docs/driver-parameters.md; matched case-insensitively in NodeStageVolume, pkg/smb/nodeserver.go).
SMB_SECRET_KEYS = ("username", "password")
SMB_SECRET_OPTIONAL_KEYS = ("domain",)

# StorageClass parameter keys that hand a Secret to the external-provisioner and to the kubelet's
# NodeStageVolume call (docs/driver-parameters.md, "Storage Class Usage"). With a provisioner secret the
# driver creates one sub directory per PV under `source`, i.e. real dynamic provisioning.
_PROVISIONER_SECRET_NAME = "csi.storage.k8s.io/provisioner-secret-name"
_PROVISIONER_SECRET_NAMESPACE = "csi.storage.k8s.io/provisioner-secret-namespace"
_NODE_STAGE_SECRET_NAME = "csi.storage.k8s.io/node-stage-secret-name"
_NODE_STAGE_SECRET_NAMESPACE = "csi.storage.k8s.io/node-stage-secret-namespace"

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"

# Every pod-creating part of each chart, keyed by its values path, with the OS it runs on. Tests walk
# these and require resource requests for each container of each part.
CSI_SMB_POD_PARTS: dict[str, str] = {
    "controller": "linux",   # Deployment csi-smb-controller: csi-provisioner, csi-resizer, liveness-probe, smb
    "linux": "linux",        # DaemonSet csi-smb-node: liveness-probe, node-driver-registrar, smb
    "windows": "windows",    # DaemonSet csi-smb-node-win (HostProcess): node-driver-registrar, smb
}
CSI_SMB_CONTAINERS: dict[str, tuple[str, ...]] = {
    "controller": ("csiProvisioner", "csiResizer", "livenessProbe", "smb"),
    "linux": ("livenessProbe", "nodeDriverRegistrar", "smb"),
    "windows": ("livenessProbe", "nodeDriverRegistrar", "smb"),
}
CSI_NFS_POD_PARTS: dict[str, str] = {
    "controller": "linux",   # Deployment csi-nfs-controller
    "node": "linux",         # DaemonSet csi-nfs-node
}
CSI_NFS_CONTAINERS: dict[str, tuple[str, ...]] = {
    "controller": ("csiProvisioner", "csiResizer", "livenessProbe", "nfs"),   # no csi-snapshotter: csi_nfs_values
    "node": ("livenessProbe", "nodeDriverRegistrar", "nfs"),
}
# User-deployed Longhorn parts (chart/README.md "Longhorn Manager/Driver/UI Settings";
# longhornGlobalManager: chart/templates/deployment-global-manager.yaml, new in 1.13.0).
LONGHORN_POD_PARTS: dict[str, str] = {
    "longhornManager": "linux",        # DaemonSet longhorn-manager
    "longhornDriver": "linux",         # Deployment longhorn-driver-deployer
    "longhornUI": "linux",             # Deployment longhorn-ui
    "longhornGlobalManager": "linux",  # Deployment longhorn-global-manager
}
# Parts whose chart values have a `resources` key: longhornManager.resources and
# longhornGlobalManager.resources (chart/values.yaml @347f5ba38a2a, "Resource requests and limits for
# Longhorn Manager pods"). longhornUI has none (its keys are replicas, priorityClass, affinity,
# tolerations, nodeSelector, podDisruptionBudget), and neither has longhornDriver: requests set there
# would be dropped silently (longhorn/longhorn#3186).
_LONGHORN_REQUESTS = {"longhornManager": ("100m", "256Mi"), "longhornGlobalManager": ("50m", "128Mi")}
LONGHORN_PARTS_WITH_RESOURCES = tuple(_LONGHORN_REQUESTS)


# --- Input -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SmbParams:
    source: str                      # config form r"\\10.10.10.20\k8s-share"
    dir_mode: str = "0770"           # cifs dir_mode (Linux only: Windows ignores mount options)
    file_mode: str = "0660"          # cifs file_mode (Linux only)
    uid: int | None = None           # cifs uid= (Linux only)
    gid: int | None = None           # cifs gid= (Linux only)
    version: str = "3.0"             # cifs vers= (Linux only)


@dataclass(frozen=True)
class NfsParams:
    server: str                      # "10.10.10.21" or a DNS name
    path: str                        # export path, "/export/k8s"


@dataclass(frozen=True)
class LonghornParams:
    replicas: int                    # each on a different node (hard node anti-affinity)
    zones: tuple[str, ...]
    # Each replica in a different zone too (hard zone anti-affinity): when the zones with a Linux worker are at
    # least as many as the replicas. Otherwise soft: spread over the zones where it can, never two on one node.
    zone_per_replica: bool = True


@dataclass(frozen=True)
class StorageParams:
    """The enabled backends (None: not installed) and what their classes share."""
    smb: SmbParams | None = None
    nfs: NfsParams | None = None
    longhorn: LonghornParams | None = None
    reclaim_policy: str = "Retain"   # "Retain" | "Delete", every class
    allow_expansion: bool = True
    default_class: str | None = None   # the class of an enabled backend, or None

    @property
    def classes(self) -> tuple[str, ...]:
        """The StorageClass names of the enabled backends."""
        return tuple(name for name, backend in ((SHARED_FILES_CLASS, self.smb), (NFS_FILES_CLASS, self.nfs),
                                                (LONGHORN_CLASS, self.longhorn)) if backend is not None)


RECLAIM_POLICIES = ("Retain", "Delete")

_MODE = re.compile(r"^0[0-7]{3}$")
# An SMB share name: no separators, no characters Windows forbids in share names.
_SHARE_PART = re.compile(r'^[^\\/:*?"<>|]+$')




def smb_source(unc: str) -> str:
    """The csi-driver-smb ``source`` for a UNC path: ``\\\\server\\share[\\dir]`` -> ``//server/share[/dir]``.

    The driver documents sources as ``//smb-server-address/sharename`` (docs/driver-parameters.md). On
    Linux that string goes to mount.cifs as is; on Windows the node plugin turns every ``/`` back into
    ``\\`` before New-SmbGlobalMapping (``strings.Replace(source, "/", "\\\\", -1)`` in SMBMount,
    kubernetes-csi/csi-driver-smb pkg/mounter/safe_mounter_host_process_windows.go), so the slash form
    serves both OSes.
    Already-converted ``//server/share`` input is accepted unchanged.
    """
    text = unc.strip()
    require(text.startswith(("\\\\", "//")),
             f"SMB source {unc!r} must be a UNC path like \\\\server\\share")
    parts = [p for p in re.split(r"[\\/]", text[2:]) if p != ""]
    require(len(parts) >= 2, f"SMB source {unc!r} names no share (\\\\server\\share)")
    server, *path = parts
    require(is_host(server), f"SMB source {unc!r}: {server!r} is not a host name or IPv4 address")
    for part in path:
        require(bool(_SHARE_PART.match(part)) and part not in (".", ".."),
                 f"SMB source {unc!r}: {part!r} is not a valid share or directory name")
    return "//" + "/".join([server, *path])


def _check_smb(p: SmbParams) -> None:
    smb_source(p.source)
    for name, mode in (("smb dir_mode", p.dir_mode), ("smb file_mode", p.file_mode)):
        require(bool(_MODE.match(mode)), f"{name} {mode!r} must be an octal mode like 0770")
    for name, ident in (("smb uid", p.uid), ("smb gid", p.gid)):
        require(ident is None or (isinstance(ident, int) and not isinstance(ident, bool) and ident >= 0),
                 f"{name} {ident!r} must be a non-negative integer or None")


def _check_nfs(p: NfsParams) -> None:
    require(is_host(p.server), f"NFS server {p.server!r} is not a host name or IPv4 address")
    require(p.path.startswith("/") and ".." not in p.path.split("/"), f"NFS path {p.path!r} must be an absolute export path")


def _check_longhorn(p: LonghornParams) -> None:
    require(len(p.zones) >= 1 and len(set(p.zones)) == len(p.zones), f"zones {p.zones} must be non-empty and unique")
    for zone in p.zones:
        require(bool(zone) and bool(LABEL_VALUE.fullmatch(zone)), f"zone {zone!r} is not a label value")
    require(isinstance(p.replicas, int) and p.replicas >= 1, "longhorn replicas must be >= 1")
    # replicaZoneSoftAntiAffinity=false forbids two replicas of a volume in one zone, so more replicas
    # than zones could never all be scheduled and every volume would stay degraded.
    require(not p.zone_per_replica or p.replicas <= len(p.zones),
             f"longhorn replicas {p.replicas} exceeds the {len(p.zones)} zones hard zone anti-affinity spreads over")


def _check(p: StorageParams) -> None:
    if p.smb is not None:
        _check_smb(p.smb)
    if p.nfs is not None:
        _check_nfs(p.nfs)
    if p.longhorn is not None:
        _check_longhorn(p.longhorn)
    require(p.reclaim_policy in RECLAIM_POLICIES, f"reclaim policy {p.reclaim_policy!r} is not one of {RECLAIM_POLICIES}")
    require(isinstance(p.allow_expansion, bool), "allow_expansion must be a bool")
    require(p.default_class is None or p.default_class in p.classes,
             f"default class {p.default_class!r} is not the class of an enabled backend {p.classes}")


# --- Helm values -------------------------------------------------------------------------------------

def _requests(cpu: str, memory: str, memory_limit: str | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if memory_limit is not None:
        resources["limits"] = {"memory": memory_limit}
    return resources


def csi_smb_values() -> dict[str, Any]:
    """Values for the csi-driver-smb chart: controller and node plugin on Linux, HostProcess node plugin on Windows.

    Keys from charts/v1.20.3/csi-driver-smb/values.yaml. Requests and memory limits restate that
    file's defaults so they stay visible here and survive a default change upstream.
    """
    return {
        "controller": {
            # Template hardcodes kubernetes.io/os: linux (templates/csi-smb-controller.yaml); our
            # Windows taint keeps it off Windows as well, since its tolerations cover only the
            # control-plane taints (values.yaml controller.tolerations).
            "resources": {
                "csiProvisioner": _requests("10m", "20Mi", "400Mi"),
                "csiResizer": _requests("10m", "20Mi", "400Mi"),
                "livenessProbe": _requests("10m", "20Mi", "100Mi"),
                "smb": _requests("10m", "20Mi", "200Mi"),
            },
        },
        # node.nodeSelector is merged into BOTH node DaemonSets (templates/csi-smb-node.yaml and
        # csi-smb-node-windows-hostprocess.yaml), so it must never name an OS: it stays empty.
        "node": {"nodeSelector": {}},
        "linux": {
            # DaemonSet csi-smb-node: template hardcodes kubernetes.io/os: linux. Its default toleration
            # (operator: Exists) also admits it to tainted Linux nodes such as the control plane.
            "enabled": True,
            "resources": {
                "livenessProbe": _requests("10m", "20Mi", "100Mi"),
                "nodeDriverRegistrar": _requests("10m", "20Mi", "100Mi"),
                "smb": _requests("10m", "20Mi", "200Mi"),
            },
        },
        "windows": {
            # windows.enabled + windows.useHostProcessContainers select the HostProcess DaemonSet
            # csi-smb-node-win (templates/csi-smb-node-windows-hostprocess.yaml, added in
            # kubernetes-csi/csi-driver-smb#895): nodeSelector kubernetes.io/os: windows in the
            # template, hostProcess: true as NT AUTHORITY\SYSTEM, image <smbplugin>:<tag>-windows-hp.
            "enabled": True,
            "useHostProcessContainers": True,
            # The chart's default toleration is for a node.kubernetes.io/os taint we do not use;
            # without ours the DaemonSet would never schedule on our Windows nodes.
            "tolerations": [windows_toleration()],
            # csi-proxy is only "required if windows.enabled is true and useHostProcessContainers is
            # false" (values.yaml windows.csiproxy.enabled).
            "csiproxy": {"enabled": False},
            "resources": {
                # livenessProbe is not rendered by the HostProcess template; stated anyway so the
                # non-HostProcess template would be covered too.
                "livenessProbe": _requests("10m", "40Mi", "150Mi"),
                "nodeDriverRegistrar": _requests("10m", "40Mi", "150Mi"),
                "smb": _requests("10m", "40Mi", "600Mi"),
            },
        },
    }


def csi_nfs_values() -> dict[str, Any]:
    """Values for the csi-driver-nfs chart: Linux only (controller and node templates hardcode kubernetes.io/os:
    linux, templates/csi-nfs-controller.yaml and csi-nfs-node.yaml). Keys from
    charts/v4.13.5/csi-driver-nfs/values.yaml; requests restate its defaults. No snapshots: the cluster has no
    VolumeSnapshot CRDs, and the controller's csi-snapshotter sidecar (`controller.enableSnapshotter`, on by
    default even with `externalSnapshotter.enabled: false`) watches them and logs errors without them
    (kubernetes-csi/csi-driver-nfs#722)."""
    return {
        "controller": {
            "enableSnapshotter": False,
            "resources": {
                "csiProvisioner": _requests("10m", "20Mi", "400Mi"),
                "csiResizer": _requests("10m", "20Mi", "400Mi"),
                "livenessProbe": _requests("10m", "20Mi", "100Mi"),
                "nfs": _requests("10m", "20Mi", "200Mi"),
            },
        },
        "node": {
            "resources": {
                "livenessProbe": _requests("10m", "20Mi", "100Mi"),
                "nodeDriverRegistrar": _requests("10m", "20Mi", "100Mi"),
                "nfs": _requests("10m", "20Mi", "300Mi"),
            },
        },
        # The snapshot controller would be a fourth pod-creating part (and cluster-wide snapshot CRDs);
        # no class of ours takes snapshots through NFS, so it stays off (its chart default).
        "externalSnapshotter": {"enabled": False},
    }


def longhorn_worker_selector() -> dict[str, str]:
    """Linux workers: the OS label every kubelet sets plus the worker role label our NodePatch sets
    (render/scheduling.node_labels); control-plane nodes never carry the worker label."""
    return {OS_LABEL: "linux", WORKER_ROLE_LABEL: ""}


def _longhorn_setting_selector(selector: dict[str, str]) -> str:
    # The setting's syntax is "key1:value1;key2:value2" (UnmarshalNodeSelector in longhorn-manager
    # types/setting.go splits on ";" then ":"; an empty value after ":" is allowed).
    return ";".join(f"{key}:{value}" for key, value in selector.items())


def longhorn_values(p: StorageParams) -> dict[str, Any]:
    """Values for the longhorn chart: Longhorn on Linux workers only, replicas spread over zones.

    Key names: chart/README.md tables (global.*, longhornManager/Driver/UI.*, defaultSettings.*,
    persistence.*, preUpgradeChecker.*) and chart/templates/deployment-global-manager.yaml.
    """
    _check(p)
    longhorn = p.longhorn
    if longhorn is None:
        raise ValueError("Longhorn is not enabled (storage.longhorn)")
    workers = longhorn_worker_selector()
    values: dict[str, Any] = {
        # global.nodeSelector applies to "user-deployed components such as Longhorn Manager, Longhorn
        # UI, and Longhorn Driver Deployer"; a component's own nodeSelector replaces it (`default
        # .Values.global.nodeSelector .Values.<part>.nodeSelector`). Both say the same, so neither the
        # template generation nor the precedence matters. No tolerations anywhere: Longhorn must
        # tolerate neither the control-plane nor the Windows taint.
        "global": {"nodeSelector": dict(workers), "tolerations": []},
        "longhornManager": {"nodeSelector": dict(workers), "tolerations": []},
        "longhornDriver": {"nodeSelector": dict(workers), "tolerations": []},
        "longhornUI": {"nodeSelector": dict(workers), "tolerations": []},
        "longhornGlobalManager": {"nodeSelector": dict(workers), "tolerations": []},
        "defaultSettings": {
            # Instance managers, engine image, CSI plugin and sidecars, share and backing image
            # managers are created by longhorn-manager, not by the chart; this setting is their node
            # selector (chart/README.md "System Default Settings"). The CSI plugin therefore exists only
            # on Linux workers, which is where Longhorn volumes can be mounted.
            "systemManagedComponentsNodeSelector": _longhorn_setting_selector(workers),
            # Empty: system-managed components tolerate no taint, so never the Windows one.
            "taintToleration": "",
            # Default disks on every node Longhorn runs on (false = no node.longhorn.io/create-default-disk
            # label needed); the selectors above already limit that to Linux workers.
            "createDefaultDiskLabeledNodes": False,
            "defaultReplicaCount": longhorn.replicas,
            # false = hard: never two replicas of a volume in one zone; true where the zones are fewer than the
            # replicas (a single-zone site): spread over zones where possible, and the node-level rule below
            # still keeps each replica on its own node. Longhorn takes a node's zone from
            # topology.kubernetes.io/zone (chart/README.md replicaZoneSoftAntiAffinity), the label our
            # nodes register with (vocab.labels.ZONE_LABEL).
            "replicaZoneSoftAntiAffinity": not longhorn.zone_per_replica,
            # false = hard at node level too (chart default, stated for clarity).
            "replicaSoftAntiAffinity": False,
        },
        "persistence": {
            # Our storage_classes() owns the `longhorn` StorageClass. Without this the chart ships a
            # ConfigMap from which longhorn-manager keeps recreating and resetting a StorageClass of
            # the same name (longhorn/longhorn#2119, #9391). persistence.createStorageClass was added
            # for 1.12 (longhorn/website#1344, longhorn/longhorn#12906).
            "createStorageClass": False,
            # Mirrors of our class, in case createStorageClass is ever turned back on.
            "defaultClass": p.default_class == LONGHORN_CLASS,
            "defaultClassReplicaCount": longhorn.replicas,
            "reclaimPolicy": p.reclaim_policy,
        },
        # The pre-upgrade checker is a Helm hook Job; chart/README.md: "Disable this setting when
        # installing Longhorn using Argo CD or other GitOps solutions". We deploy through Pulumi rather than
        # the helm CLI, the case that advice is about.
        "preUpgradeChecker": {"jobEnabled": False},
    }
    for part, (cpu, memory) in _LONGHORN_REQUESTS.items():
        values[part]["resources"] = _requests(cpu, memory)
    return values


# --- Kubernetes objects ------------------------------------------------------------------------------

def _storage_class(name: str, provisioner: str, parameters: dict[str, str], p: StorageParams,
                   mount_options: list[str] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "parameters": parameters,
        "reclaimPolicy": p.reclaim_policy,
        "allowVolumeExpansion": p.allow_expansion,
        "volumeBindingMode": "Immediate",
    }
    if mount_options:
        obj["mountOptions"] = mount_options
    if p.default_class == name:
        # The annotation value is the string "true" (https://kubernetes.io/docs/tasks/administer-cluster/
        # change-default-storage-class/).
        obj["metadata"]["annotations"] = {DEFAULT_CLASS_ANNOTATION: "true"}
    return obj


# mount.cifs(8) vers= values from SMB 2.1 on (1.0 and 2.0 are left out).
SMB_VERSIONS = ("2.1", "3.0", "3.02", "3.1.1")


def smb_mount_options(p: SmbParams) -> list[str]:
    """cifs mount options for shared-files. They apply on Linux only: the Windows node plugin passes just
    the user name and password to New-SmbGlobalMapping and drops mount flags (NodeStageVolume,
    ``runtime.GOOS == "windows"`` branch in pkg/smb/nodeserver.go)."""
    # vers=, dir_mode=, file_mode=, uid=, gid= are mount.cifs(8) options. noserverino: the driver's own
    # StorageClass example marks it "required to prevent data corruption" (charts/v1.20.3/
    # csi-driver-smb/values.yaml, storageClasses example).
    require(p.version in SMB_VERSIONS, f"SMB version {p.version!r} is not one of {SMB_VERSIONS}")
    options = [f"vers={p.version}", f"dir_mode={p.dir_mode}", f"file_mode={p.file_mode}"]
    if p.uid is not None:
        options.append(f"uid={p.uid}")
    if p.gid is not None:
        options.append(f"gid={p.gid}")
    options.append("noserverino")
    return options


def storage_classes(p: StorageParams) -> list[dict[str, Any]]:
    """The StorageClasses of the enabled backends: shared-files (SMB, both OSes), nfs-files (NFS, Linux) and
    longhorn (Longhorn block, Linux). At most one carries the default-class annotation."""
    _check(p)
    classes: list[dict[str, Any]] = []
    if p.smb is not None:
        classes.append(_storage_class(
            SHARED_FILES_CLASS, SMB_PROVISIONER,
            {
                "source": smb_source(p.smb.source),
                _PROVISIONER_SECRET_NAME: SMB_SECRET_NAME,
                _PROVISIONER_SECRET_NAMESPACE: SMB_SECRET_NAMESPACE,
                _NODE_STAGE_SECRET_NAME: SMB_SECRET_NAME,
                _NODE_STAGE_SECRET_NAMESPACE: SMB_SECRET_NAMESPACE,
            },
            p, smb_mount_options(p.smb),
        ))
    if p.nfs is not None:
        classes.append(_storage_class(
            NFS_FILES_CLASS, NFS_PROVISIONER,
            # server/share: csi-driver-nfs docs/driver-parameters.md; nfsvers=4.1 is that page's example.
            {"server": p.nfs.server, "share": p.nfs.path},
            p, ["nfsvers=4.1"],
        ))
    if p.longhorn is not None:
        classes.append(_storage_class(
            LONGHORN_CLASS, LONGHORN_PROVISIONER,
            # Parameter names from the chart's own class (chart/templates/storageclass.yaml).
            # dataLocality "disabled" (chart default): best-effort would try to move a replica next to the
            # pod, which hard zone anti-affinity can refuse when the pod's zone already holds one.
            {
                "numberOfReplicas": str(p.longhorn.replicas),
                "staleReplicaTimeout": "30",
                "fsType": "ext4",
                "dataLocality": "disabled",
            },
            p, None,
        ))
    names = [c["metadata"]["name"] for c in classes]
    defaults = [c["metadata"]["name"] for c in classes
                if c["metadata"].get("annotations", {}).get(DEFAULT_CLASS_ANNOTATION) == "true"]
    # StorageClass is cluster-scoped: a repeated name would be one object, not two.
    require(len(set(names)) == len(names), f"StorageClass names repeat: {names}")
    require(len(defaults) == (0 if p.default_class is None else 1), f"default classes: {defaults}")
    return classes


def smb_secret_metadata() -> dict[str, Any]:
    """The SMB credentials Secret without data: the lead adds ``stringData`` (SMB_SECRET_KEYS, plus
    optional ``domain``) from Pulumi secrets."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": SMB_SECRET_NAME,
            "namespace": SMB_SECRET_NAMESPACE,
            "labels": {"app.kubernetes.io/part-of": "csi-driver-smb"},
        },
        "type": "Opaque",
    }
