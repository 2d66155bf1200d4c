"""render.storage: StorageClasses and the SMB Secret against kubernetes-validate (strict, the cluster's
1.36), the three charts' values walked for OS placement, tolerations and resource requests, and the
rules the classes must keep (unique names, one default, SMB secret references, UNC conversion)."""
from __future__ import annotations

import dataclasses
import json

import kubernetes_validate
import pytest

from plan.platform import storage_params
from render import storage
from render.scheduling import windows_toleration
from render.storage import StorageParams
from tests.conftest import hk_prod_spec
from vocab import labels
from vocab.namespaces import parse_quantity

VALIDATE_VERSION = "1.36.0"
CONTROL_PLANE_TAINT_KEY = "node-role.kubernetes.io/control-plane"

# hk-prod's storage, as the program builds it (Pulumi.hk-prod.yaml through components/platform/storage.py), with
# the optional cifs owner set so that its rendering is tested too.
def _hk_prod() -> StorageParams:
    params = storage_params(hk_prod_spec())
    assert params is not None and params.smb is not None
    return dataclasses.replace(params, smb=dataclasses.replace(params.smb, uid=1000, gid=1000))


HK_PROD = _hk_prod()


def with_backend(p: StorageParams, backend: str, **change) -> StorageParams:
    """p with one field of one backend's parameters changed."""
    return dataclasses.replace(p, **{backend: dataclasses.replace(getattr(p, backend), **change)})


def validate(obj: dict) -> None:
    kubernetes_validate.validate(obj, VALIDATE_VERSION, strict=True)


def by_name(classes: list[dict]) -> dict[str, dict]:
    return {c["metadata"]["name"]: c for c in classes}


def defaults(classes: list[dict]) -> list[str]:
    return [c["metadata"]["name"] for c in classes
            if c["metadata"].get("annotations", {}).get(storage.DEFAULT_CLASS_ANNOTATION) == "true"]


def walk(node, path=()):
    """Every (path, key, value) in a nested values dict, lists included."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield path, key, value
            yield from walk(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, path + (index,))


def assert_requests(resources: dict, where: str) -> None:
    requests = resources.get("requests", {})
    assert set(requests) >= {"cpu", "memory"}, f"{where}: no cpu/memory requests"
    for name, quantity in requests.items():
        assert parse_quantity(quantity) > 0, f"{where}: {name} request {quantity!r}"
    for name, quantity in resources.get("limits", {}).items():
        assert parse_quantity(quantity) >= parse_quantity(requests[name]), f"{where}: {name} limit below request"


# --- StorageClasses ---------------------------------------------------------------------------------

@pytest.mark.parametrize("default", [*storage.STORAGE_CLASS_NAMES, None])
@pytest.mark.parametrize("policy", storage.RECLAIM_POLICIES)
def test_storage_classes_validate_strictly(default, policy):
    p = dataclasses.replace(HK_PROD, default_class=default, reclaim_policy=policy, allow_expansion=False)
    classes = storage.storage_classes(p)
    for obj in classes:
        validate(obj)
        assert obj["reclaimPolicy"] == policy
        assert obj["allowVolumeExpansion"] is False
        # StorageClass parameters are map[string]string: a non-string would be rejected by the API.
        assert all(isinstance(v, str) for v in obj["parameters"].values())
    assert defaults(classes) == ([] if default is None else [default])


def test_three_unique_class_names():
    names = [c["metadata"]["name"] for c in storage.storage_classes(HK_PROD)]
    assert names == ["shared-files", "nfs-files", "longhorn"]
    assert len(set(names)) == len(names)
    assert tuple(names) == storage.STORAGE_CLASS_NAMES


def test_hk_prod_default_is_longhorn_only():
    assert defaults(storage.storage_classes(HK_PROD)) == ["longhorn"]


def test_shared_files_is_smb_and_references_the_secret():
    shared = by_name(storage.storage_classes(HK_PROD))["shared-files"]
    secret = storage.smb_secret_metadata()["metadata"]
    assert shared["provisioner"] == "smb.csi.k8s.io"
    params = shared["parameters"]
    assert params["source"] == "//10.10.10.20/k8s-share"
    for stage in ("provisioner", "node-stage"):
        assert params[f"csi.storage.k8s.io/{stage}-secret-name"] == secret["name"] == "smb-credentials"
        assert params[f"csi.storage.k8s.io/{stage}-secret-namespace"] == secret["namespace"] == "kube-system"
    assert shared["volumeBindingMode"] == "Immediate"
    assert shared["mountOptions"][0] == "vers=3.0"
    assert {"dir_mode=0770", "file_mode=0660", "uid=1000", "gid=1000"} <= set(shared["mountOptions"])


def test_smb_mount_options_follow_config_and_omit_unset_ids():
    assert HK_PROD.smb is not None
    p = dataclasses.replace(HK_PROD.smb, dir_mode="0750", file_mode="0640", uid=None, gid=None)
    options = storage.smb_mount_options(p)
    assert "dir_mode=0750" in options and "file_mode=0640" in options
    assert not any(o.startswith(("uid=", "gid=")) for o in options)


def test_nfs_and_longhorn_classes():
    classes = by_name(storage.storage_classes(HK_PROD))
    nfs = classes["nfs-files"]
    assert nfs["provisioner"] == "nfs.csi.k8s.io"
    assert nfs["parameters"] == {"server": "10.10.10.21", "share": "/export/k8s-share"}   # storage.nfs* of hk-prod
    assert nfs["mountOptions"] == ["nfsvers=4.1"]
    longhorn = classes["longhorn"]
    assert longhorn["provisioner"] == "driver.longhorn.io"
    assert longhorn["parameters"]["numberOfReplicas"] == "2"
    assert "mountOptions" not in longhorn


def test_credentials_never_reach_classes_or_values():
    rendered = json.dumps([storage.storage_classes(HK_PROD), storage.csi_smb_values(), storage.csi_nfs_values(),
                           storage.longhorn_values(HK_PROD), storage.smb_secret_metadata()]).lower()
    assert "password" not in rendered
    assert "stringdata" not in rendered and '"data"' not in rendered
    # Rotating the password touches no field of StorageParams, so nothing rendered here can change.
    assert not any("pass" in f.name or "user" in f.name for f in dataclasses.fields(StorageParams))


# --- SMB source ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("unc, expected", [
    (r"\\10.10.10.20\k8s-share", "//10.10.10.20/k8s-share"),
    ("\\\\10.10.10.20\\k8s-share\\", "//10.10.10.20/k8s-share"),
    (r"\\fs01.hk.example\k8s-share\team-a", "//fs01.hk.example/k8s-share/team-a"),
    ("//10.10.10.20/k8s-share", "//10.10.10.20/k8s-share"),
    (r"  \\10.10.10.20\k8s-share  ", "//10.10.10.20/k8s-share"),
])
def test_smb_source_conversion(unc, expected):
    assert storage.smb_source(unc) == expected


@pytest.mark.parametrize("bad", [
    r"\\10.10.10.20", r"10.10.10.20\k8s-share", r"\\\k8s-share", "smb://10.10.10.20/share",
    r"\\10.10.10.20\..", r"\\bad_host!\share", r"\\10.10.10.20\sha:re",
])
def test_smb_source_rejects_non_unc(bad):
    with pytest.raises(ValueError):
        storage.smb_source(bad)


# --- Secret -------------------------------------------------------------------------------------------

def test_smb_secret_metadata_has_no_data_and_validates_with_string_data():
    secret = storage.smb_secret_metadata()
    assert set(secret) == {"apiVersion", "kind", "metadata", "type"}
    validate(secret)
    # What the lead builds from it: the same object plus stringData from Pulumi secrets.
    validate({**secret, "stringData": {key: "x" for key in storage.SMB_SECRET_KEYS + storage.SMB_SECRET_OPTIONAL_KEYS}})
    assert secret["metadata"]["namespace"] == storage.CSI_NAMESPACE


# --- Input validation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("backend, change", [
    (None, {"reclaim_policy": "Recycle"}),
    (None, {"default_class": "fast"}),
    ("smb", {"dir_mode": "770"}),
    ("smb", {"file_mode": "0968"}),
    ("smb", {"uid": -1}),
    ("nfs", {"path": "export"}),
    ("nfs", {"server": "nfs server"}),
    ("longhorn", {"replicas": 0}),
    ("longhorn", {"replicas": 3}),          # three replicas, two zones: hard zone anti-affinity cannot place one
    ("longhorn", {"zones": ()}),
    ("longhorn", {"zones": ("hk-1", "hk-1")}),
    ("smb", {"source": "10.10.10.20/k8s-share"}),
])
def test_bad_params_are_refused(backend, change):
    p = dataclasses.replace(HK_PROD, **change) if backend is None else with_backend(HK_PROD, backend, **change)
    with pytest.raises(ValueError):
        storage.storage_classes(p)
    with pytest.raises(ValueError):
        storage.longhorn_values(p)


# --- Backends are optional ----------------------------------------------------------------------------

@pytest.mark.parametrize("enabled", [(), ("smb",), ("nfs",), ("longhorn",), ("smb", "nfs"), ("nfs", "longhorn")])
def test_only_enabled_backends_get_a_class(enabled):
    p = dataclasses.replace(HK_PROD, default_class=None,
                            **{b: None for b in ("smb", "nfs", "longhorn") if b not in enabled})
    classes = storage.storage_classes(p)
    expected = [name for name, backend in zip(storage.STORAGE_CLASS_NAMES, ("smb", "nfs", "longhorn"), strict=True) if backend in enabled]
    assert [c["metadata"]["name"] for c in classes] == expected == list(p.classes)
    for obj in classes:
        validate(obj)


def test_default_class_must_be_an_enabled_backend():
    with pytest.raises(ValueError, match="enabled backend"):
        storage.storage_classes(dataclasses.replace(HK_PROD, longhorn=None))     # hk-prod's default is longhorn
    assert defaults(storage.storage_classes(dataclasses.replace(HK_PROD, longhorn=None, default_class="nfs-files"))) \
        == ["nfs-files"]


def test_longhorn_values_need_longhorn():
    with pytest.raises(ValueError, match="storage.longhorn"):
        storage.longhorn_values(dataclasses.replace(HK_PROD, longhorn=None, default_class=None))


# --- Charts -------------------------------------------------------------------------------------------




def test_csi_smb_windows_part_selects_windows_and_tolerates_the_taint():
    windows = storage.csi_smb_values()["windows"]
    assert windows["enabled"] is True
    assert windows["useHostProcessContainers"] is True
    assert windows["csiproxy"]["enabled"] is False
    assert windows_toleration() in windows["tolerations"]
    assert windows_toleration() == {"key": labels.WINDOWS_TAINT_KEY, "operator": "Equal",
                                    "value": labels.WINDOWS_TAINT_VALUE, "effect": labels.WINDOWS_TAINT_EFFECT}
    assert storage.CSI_SMB_POD_PARTS["windows"] == "windows"


def test_csi_smb_linux_parts_select_linux_and_the_shared_selector_names_no_os():
    values = storage.csi_smb_values()
    assert values["linux"]["enabled"] is True
    assert {part for part, os in storage.CSI_SMB_POD_PARTS.items() if os == "linux"} == {"controller", "linux"}
    # node.nodeSelector is merged into the Linux AND the Windows DaemonSet: any OS in it would starve one.
    assert labels.OS_LABEL not in values["node"]["nodeSelector"]
    # Linux parts never tolerate the Windows taint by name (their OS selector is in the chart template).
    for part in ("controller", "linux"):
        assert windows_toleration() not in values[part].get("tolerations", [])
    # Nothing anywhere selects the wrong OS.
    for path, key, value in walk(values):
        if key == labels.OS_LABEL:
            top = path[0]
            assert value == storage.CSI_SMB_POD_PARTS[top], f"{path}: {value}"


def test_csi_nfs_is_linux_only_and_snapshot_controller_off():
    values = storage.csi_nfs_values()
    assert set(storage.CSI_NFS_POD_PARTS.values()) == {"linux"}
    assert values["externalSnapshotter"]["enabled"] is False
    # Nor the controller's snapshotter sidecar: no VolumeSnapshot CRDs exist for it to watch.
    assert values["controller"]["enableSnapshotter"] is False and "csiSnapshotter" not in values["controller"]["resources"]
    assert not any(key == "windows" for _, key, _ in walk(values))
    for path, key, value in walk(values):
        if key == labels.OS_LABEL:
            assert value == "linux", path
        if key == "tolerations":
            assert windows_toleration() not in value, path


@pytest.mark.parametrize("values, parts, containers", [
    (storage.csi_smb_values(), storage.CSI_SMB_POD_PARTS, storage.CSI_SMB_CONTAINERS),
    (storage.csi_nfs_values(), storage.CSI_NFS_POD_PARTS, storage.CSI_NFS_CONTAINERS),
], ids=["csi-smb", "csi-nfs"])
def test_every_csi_container_has_requests(values, parts, containers):
    assert set(parts) == set(containers)
    for part, names in containers.items():
        resources = values[part]["resources"]
        assert set(resources) == set(names), part
        for name in names:
            assert_requests(resources[name], f"{part}.{name}")


# --- Longhorn -----------------------------------------------------------------------------------------

def test_longhorn_never_lands_on_control_plane_or_windows():
    values = storage.longhorn_values(HK_PROD)
    workers = {labels.OS_LABEL: "linux", labels.WORKER_ROLE_LABEL: ""}
    selectors = [(path + (key,), value) for path, key, value in walk(values) if key == "nodeSelector"]
    # global plus every user-deployed part, each pinned to Linux workers.
    assert {p[0] for p, _ in selectors} == {"global", *storage.LONGHORN_POD_PARTS}
    for path, selector in selectors:
        assert selector == workers, path
        assert labels.CONTROL_PLANE_ROLE_LABEL not in selector
    # No toleration at all: neither the control-plane nor the Windows taint is tolerated.
    for path, key, value in walk(values):
        if key == "tolerations":
            assert value == [], path
    settings = values["defaultSettings"]
    assert settings["taintToleration"] == ""
    assert settings["systemManagedComponentsNodeSelector"] == "kubernetes.io/os:linux;node-role.kubernetes.io/worker:"
    assert CONTROL_PLANE_TAINT_KEY not in json.dumps(values)


def test_longhorn_setting_selector_round_trips():
    # longhorn-manager's parser: split on ";" then on ":", exactly two parts each, trimmed.
    text = storage.longhorn_values(HK_PROD)["defaultSettings"]["systemManagedComponentsNodeSelector"]
    parsed = {}
    for item in text.split(";"):
        key, value = item.split(":")
        parsed[key.strip()] = value.strip()
    assert parsed == storage.longhorn_worker_selector()


def test_longhorn_replicas_zones_and_default_class():
    values = storage.longhorn_values(HK_PROD)
    settings = values["defaultSettings"]
    assert settings["defaultReplicaCount"] == 2
    assert settings["replicaZoneSoftAntiAffinity"] is False
    assert settings["replicaSoftAntiAffinity"] is False
    assert settings["createDefaultDiskLabeledNodes"] is False
    persistence = values["persistence"]
    assert persistence["createStorageClass"] is False
    assert persistence["defaultClass"] is True
    assert persistence["defaultClassReplicaCount"] == 2
    assert persistence["reclaimPolicy"] == "Retain"
    assert values["preUpgradeChecker"]["jobEnabled"] is False
    other = storage.longhorn_values(dataclasses.replace(HK_PROD, default_class="shared-files"))
    assert other["persistence"]["defaultClass"] is False
    none = storage.longhorn_values(dataclasses.replace(HK_PROD, default_class=None))
    assert none["persistence"]["defaultClass"] is False


def test_longhorn_parts_have_requests():
    values = storage.longhorn_values(HK_PROD)
    for part in storage.LONGHORN_PARTS_WITH_RESOURCES:
        assert_requests(values[part]["resources"], part)


def test_no_longhorn_part_carries_a_resources_key_the_chart_does_not_read():
    values = storage.longhorn_values(HK_PROD)
    assert sorted(part for part in values if isinstance(values[part], dict) and "resources" in values[part]) == \
        sorted(storage.LONGHORN_PARTS_WITH_RESOURCES)
    assert "resources" not in values["longhornUI"]


def test_single_zone_allows_one_replica():
    p = with_backend(HK_PROD, "longhorn", zones=("hk-1",), replicas=1)
    assert storage.longhorn_values(p)["defaultSettings"]["defaultReplicaCount"] == 1
    assert by_name(storage.storage_classes(p))["longhorn"]["parameters"]["numberOfReplicas"] == "1"


def test_strict_validation_is_live():
    # The validator must reject what the API would: an unknown field and a non-string parameter.
    shared = by_name(storage.storage_classes(HK_PROD))["shared-files"]
    with pytest.raises(kubernetes_validate.ValidationError):
        validate({**shared, "mountOption": ["vers=3.0"]})
    with pytest.raises(kubernetes_validate.ValidationError):
        validate({**shared, "parameters": {**shared["parameters"], "uid": 1000}})
