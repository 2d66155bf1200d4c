"""Backups and cross-site recovery (config `backup`, render/backup.py, components/platform/backup.py): Velero's locations and
schedules strictly against their CRD schemas, its Windows node agent and the etcd off-site copy against the
Kubernetes schemas, the refusals, the secrets, and a disaster recovery as far as it can be run here: a new site's stack
reading the old cluster's off-site backups through a read-only location, and the restore objects it renders."""
from __future__ import annotations

import kubernetes_validate
import pytest

from config import compat
from config.loader import load
from config.secret_keys import required_secrets
from plan.platform import PLATFORM_NAMESPACES, backup_plan
from render import backup
from render.scheduling import windows_toleration
from tests.conftest import hk_prod_values, problems, raw_config
from tests.crd_schema import validate_custom_resource
from tools.mock.program import Secret, run_program

K8S = "1.36.0"
BSL_SCHEMA = "velero.io_v1_BackupStorageLocation.json"
SCHEDULE_SCHEMA = "velero.io_v1_Schedule.json"
MINIO = backup.ObjectStore(endpoint="https://minio.hk-prod.internal:9000", bucket="velero-hk-prod", region="us-east-1",
                           prefix="hk-prod", provider="minio")


def test_locations_speak_s3_path_style_and_ceph_without_checksums():
    primary = backup.storage_location(backup.PRIMARY, MINIO, default=True)
    validate_custom_resource(primary, BSL_SCHEMA)
    spec = primary["spec"]
    assert spec["provider"] == "aws" and spec["default"] is True and spec["accessMode"] == "ReadWrite"
    assert spec["config"] == {"region": "us-east-1", "s3ForcePathStyle": "true",
                              "s3Url": "https://minio.hk-prod.internal:9000"}
    assert spec["credential"] == {"name": backup.CREDENTIALS_SECRET, "key": "cloud"}
    ceph = backup.ObjectStore(endpoint="https://s3.sg-dr.internal", bucket="velero-hk-prod", region="sg",
                              prefix="hk-prod", provider="ceph", ca_certificate="-----BEGIN CERTIFICATE-----\n")
    offsite = backup.storage_location(backup.OFFSITE, ceph, default=False)
    validate_custom_resource(offsite, BSL_SCHEMA)
    assert offsite["spec"]["config"]["checksumAlgorithm"] == ""
    assert offsite["spec"]["objectStorage"]["caCertRef"] == {"name": backup.CA_SECRET, "key": "offsite"}
    assert offsite["spec"]["credential"]["key"] == "offsite"


def test_a_recovery_location_is_read_only_and_never_the_default():
    recovery = backup.storage_location(backup.RECOVERY, MINIO, default=False)
    validate_custom_resource(recovery, BSL_SCHEMA)
    assert recovery["spec"]["accessMode"] == "ReadOnly"
    with pytest.raises(ValueError):
        backup.storage_location(backup.RECOVERY, MINIO, default=True)


def test_schedules_back_up_everything_but_the_platform_with_the_retention():
    schedule = backup.schedule(backup.OFFSITE, "0 2 * * *", 30, file_system_backup=True,
                               excluded_namespaces=PLATFORM_NAMESPACES)
    validate_custom_resource(schedule, SCHEDULE_SCHEMA)
    template = schedule["spec"]["template"]
    assert template["storageLocation"] == "offsite" and template["ttl"] == "720h0m0s"
    assert template["includedNamespaces"] == ["*"] and template["defaultVolumesToFsBackup"] is True
    assert template["excludedNamespaces"] == sorted(PLATFORM_NAMESPACES)
    assert schedule["spec"]["useOwnerReferencesInBackup"] is False
    with pytest.raises(ValueError):
        backup.schedule(backup.PRIMARY, "daily", 30, True, PLATFORM_NAMESPACES)
    with pytest.raises(ValueError, match="own namespace"):
        backup.schedule(backup.PRIMARY, "0 2 * * *", 30, True, ("kube-system",))


def _namespaces_the_program_makes(values: dict) -> set[str]:
    recording = run_program(raw_config(values))
    made = {r.inputs["metadata"]["name"] for r in recording.by_type("kubernetes:core/v1:Namespace")}
    return made | {r.inputs["namespace"] for r in recording.resources
                   if r.type.startswith("kubernetes:helm.sh/") and r.inputs.get("namespace")}


def test_the_schedules_leave_out_every_platform_namespace_and_with_it_the_node_agents_scratch_volumes():
    """#39 item 2: every nightly backup went through Velero's own namespace, whose node agents' `scratch` emptyDirs
    (node-agent-windows's included) are pod volumes like any other under defaultVolumesToFsBackup (pkg/util/podvolume
    GetVolumesByPod at v1.18.1 skips hostPath, Secret, ConfigMap, projected and downward API volumes only), and whose
    Secrets are the stores' keys and the repository password. The schedules of hk-prod, which has every section,
    leave out every namespace the program makes or installs into but the application namespaces."""
    values = hk_prod_values()
    recording = run_program(raw_config(values))
    schedules = recording.by_type("kubernetes:velero.io/v1:Schedule")
    assert {s.inputs["metadata"]["name"] for s in schedules} == {"daily-primary", "daily-offsite"}
    applications = {n["name"] for n in values.get("namespaces", [])} | {"win-prod", "linux-prod"}
    platform = _namespaces_the_program_makes(values) - applications
    assert backup.NAMESPACE in platform
    for s in schedules:
        excluded = set(s.inputs["spec"]["template"]["excludedNamespaces"])
        assert platform <= excluded, sorted(platform - excluded)
        assert not excluded & applications
    # At 02:00 in the stack's time zone, as its nodes' timers (#39 item 6): Velero's CRON_TZ prefix.
    assert {s.inputs["spec"]["schedule"] for s in schedules} == {"CRON_TZ=Asia/Hong_Kong 0 2 * * *"}
    utc = backup.schedule(backup.PRIMARY, "0 2 * * *", 30, True, PLATFORM_NAMESPACES, timezone="Etc/UTC")
    assert utc["spec"]["schedule"] == "0 2 * * *"
    # Velero's node agents really have volumes it would back up: the scratch emptyDir.
    agent = backup.node_agent_windows(compat.VELERO_IMAGE, "10.0.20348")["spec"]["template"]["spec"]
    assert any("emptyDir" in v for v in agent["volumes"])


def _kubelet_admits(pod: dict, node_labels: dict[str, str], taints: list[dict[str, str]]) -> bool:
    """The kubelet's admission of a pod bound to its node (kubernetes pkg/kubelet/lifecycle/predicate.go
    generalFilter): the required node selector and affinity must match, and every NoExecute taint must be tolerated;
    "Kubelet is only interested in the NoExecute taint"."""
    spec = pod["spec"]
    if any(node_labels.get(k) != v for k, v in spec.get("nodeSelector", {}).items()):
        return False
    required = spec.get("affinity", {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms")
    if required is not None:
        def matches(expr: dict) -> bool:
            present = expr["key"] in node_labels
            if expr["operator"] == "In":
                return present and node_labels[expr["key"]] in expr["values"]
            if expr["operator"] == "NotIn":
                return not present or node_labels[expr["key"]] not in expr["values"]
            raise AssertionError(expr["operator"])
        if not any(all(matches(e) for e in term.get("matchExpressions", [])) for term in required):
            return False

    def tolerated(taint: dict[str, str]) -> bool:
        return any(t.get("key") == taint["key"] and t.get("effect", taint["effect"]) == taint["effect"]
                   and (t.get("operator") == "Exists" or t.get("value") == taint.get("value"))
                   for t in spec.get("tolerations", []))
    return all(tolerated(t) for t in taints if t["effect"] == "NoExecute")


def test_velero_s_per_volume_pods_run_on_this_cluster_s_windows_nodes():
    """#39 item 2: Velero 1.18.1 reads each Windows volume in a pod that tolerates only `os=windows`, never our
    Windows taint. It is bound to the client pod's node by spec.nodeName (pkg/exposer/pod_volume.go createHostingPod),
    so the scheduler never weighs the taint, and the kubelet admits it because our taint is NoSchedule. The pod below
    is that function's Windows branch; the node is a Windows node as plan/nodes.py registers it. Were the Windows taint
    ever NoExecute, every Windows volume backup would be refused, and this test says so."""
    from plan.nodes import node_params
    from tests.conftest import hk_prod_spec
    spec = hk_prod_spec()
    windows = spec.nodes.windows[0]
    params = node_params(spec, windows)
    taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in params.taints or ()]
    assert taints, "a Windows node registers with the Windows taint"
    labels = {"kubernetes.io/os": "windows", **params.labels}
    hosting_pod = {"spec": {
        "nodeName": windows.name,
        "os": {"name": "windows"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}]}}},
        "tolerations": [{"key": "os", "operator": "Equal", "effect": "NoSchedule", "value": "windows"},
                        {"key": "os", "operator": "Equal", "effect": "NoExecute", "value": "windows"}],
    }}
    assert _kubelet_admits(hosting_pod, labels, taints)
    # The same pod on a node whose Windows taint were NoExecute: refused, which is what the check guards against.
    assert not _kubelet_admits(hosting_pod, labels, [{**t, "effect": "NoExecute"} for t in taints])
    # And the node agent it inherits from runs there: it tolerates the taint and selects the node's build.
    builds = backup_plan(spec).windows_agent_builds
    agent = backup.node_agent_windows(compat.VELERO_IMAGE, builds[0])["spec"]["template"]["spec"]
    assert windows_toleration() in agent["tolerations"]


def test_credentials_files_are_aws_shared_credentials():
    text = backup.credentials_file("AKIA1", "s3cr3t")
    assert text.splitlines() == ["[default]", "aws_access_key_id=AKIA1", "aws_secret_access_key=s3cr3t"]
    with pytest.raises(ValueError):
        backup.credentials_file("AKIA1\naws_secret_access_key=x", "y")


def test_the_windows_node_agent_is_velero_installs_on_its_own_build():
    daemonset = backup.node_agent_windows(compat.VELERO_IMAGE, "10.0.20348")
    kubernetes_validate.validate(daemonset, K8S, strict=True)
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["os"] == {"name": "windows"}
    assert pod["nodeSelector"] == {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"}
    # Our Windows taint's toleration (the installer's is os=windows, a taint our nodes do not carry).
    assert pod["tolerations"] == [windows_toleration()]
    # Not HostProcess, no Linux security fields (pkg/install/daemonset.go sets both security contexts to nil).
    assert "securityContext" not in pod and "securityContext" not in pod["containers"][0]
    assert pod["containers"][0]["args"] == ["node-agent", "server"]
    assert {"name": "host-pods", "mountPath": "/host_pods", "mountPropagation": "HostToContainer"} in \
        pod["containers"][0]["volumeMounts"]


def test_velero_runs_on_linux_with_the_s3_plugin_and_no_chart_locations():
    values = backup.velero_values(compat.VELERO_AWS_PLUGIN_IMAGE, file_system_backup=True)
    assert values["nodeSelector"] == values["nodeAgent"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert values["initContainers"][0]["image"] == compat.VELERO_AWS_PLUGIN_IMAGE
    assert values["configuration"]["backupStorageLocation"] == [] and values["snapshotsEnabled"] is False
    assert values["credentials"] == {"useSecret": True, "existingSecret": backup.CREDENTIALS_SECRET}
    assert values["deployNodeAgent"] is True
    assert backup.velero_values(compat.VELERO_AWS_PLUGIN_IMAGE, file_system_backup=False)["deployNodeAgent"] is False


# --- configuration -----------------------------------------------------------------------------------------------

def test_a_windows_build_velero_does_not_build_for_is_refused_with_file_system_backups(hk_values):
    hk_values["nodes"]["windows"][2]["version"] = "win2025"
    found = problems(hk_values)
    assert any(p.startswith("nodes.windows[2].version: Velero's Windows node agent is built for win2022 only")
               and "backup.fileSystemBackup to false" in p for p in found), found
    hk_values["backup"]["fileSystemBackup"] = False
    assert not any("Velero" in p for p in problems(hk_values))


def test_the_offsite_store_must_be_another_bucket(hk_values):
    hk_values["backup"]["offsite"] = dict(hk_values["backup"]["primary"])
    assert any(p.startswith("backup.offsite: is the same bucket as backup.primary") for p in problems(hk_values))


def test_backup_secrets_follow_the_sections(hk_values):
    spec = load(raw_config(hk_values)).spec
    assert {"backupAccessKeyId", "backupSecretAccessKey", "offsiteAccessKeyId", "offsiteSecretAccessKey"} <= set(
        required_secrets(spec))
    del hk_values["backup"]["offsite"]
    spec = load(raw_config(hk_values)).spec
    assert "offsiteAccessKeyId" not in required_secrets(spec) and "backupAccessKeyId" in required_secrets(spec)
    del hk_values["backup"]
    assert not any(k.startswith(("backup", "offsite")) for k in required_secrets(load(raw_config(hk_values)).spec))


def test_hk_prod_backs_up_to_both_sites_and_no_pod_copies_etcd(hk_recording):
    names = {r.name for r in hk_recording.resources}
    for expected in ("hk-prod-backup-velero", "hk-prod-backup-backupstoragelocation-velero-primary",
                     "hk-prod-backup-backupstoragelocation-velero-offsite", "hk-prod-backup-schedule-velero-daily-primary",
                     "hk-prod-backup-schedule-velero-daily-offsite", "hk-prod-backup-daemonset-velero-node-agent-windows"):
        assert expected in names, expected
    # The etcd snapshots go off-site from the control-plane nodes (tests/render/test_etcd_backup.py): no CronJob, no pod
    # mounts the export, and no pod may mount NFS inline.
    assert not hk_recording.by_type("kubernetes:batch/v1:CronJob")
    policy = hk_recording.named("hk-prod-admission-validatingadmissionpolicybinding-hybrid-cluster-no-inline-nfs")
    assert "matchResources" not in policy.inputs["spec"], "no namespace is exempt from the inline NFS refusal"
    # Each site's keys in their own Secret: the chart's (mounted whole into Velero's pods) holds only this site's.
    from tools.mock.program import placeholder_secrets
    keys = placeholder_secrets()
    secret = hk_recording.named("hk-prod-backup-secret-velero-velero-credentials")
    offsite = hk_recording.named("hk-prod-backup-secret-velero-velero-credentials-offsite")
    assert isinstance(secret.inputs["stringData"], Secret) and isinstance(offsite.inputs["stringData"], Secret)
    assert set(secret.inputs["stringData"].value) == {"cloud"} and set(offsite.inputs["stringData"].value) == {"offsite"}
    assert keys["backupSecretAccessKey"] in secret.inputs["stringData"].value["cloud"]
    assert keys["offsiteSecretAccessKey"] not in str(secret.inputs["stringData"].value)
    assert keys["offsiteSecretAccessKey"] in offsite.inputs["stringData"].value["offsite"]
    location = hk_recording.named("hk-prod-backup-backupstoragelocation-velero-offsite")
    assert location.inputs["spec"]["credential"] == {"name": backup.OFFSITE_CREDENTIALS_SECRET, "key": "offsite"}
    assert offsite.urn in hk_recording.named("hk-prod-backup-velero").dependencies
    # The locations and schedules wait for the chart that brings their CRDs.
    release = hk_recording.named("hk-prod-backup-velero")
    assert release.urn in hk_recording.named("hk-prod-backup-backupstoragelocation-velero-offsite").dependencies


# --- disaster recovery into a new site ---------------------------------------------------------------------------

def _new_site() -> dict:
    """A stack for the replacement cluster in the recovery site: its own store there, and the old cluster's off-site
    store (hk-prod's prefix) to restore from."""
    values = hk_prod_values()
    values["cluster"]["name"] = "sg-dr"
    old = values["backup"]["offsite"]
    values["backup"] = {"primary": {"endpoint": "https://s3.sg-dr.internal", "bucket": "velero-sg-dr", "provider": "ceph",
                                    "caCertificate": old["caCertificate"]},
                        "recoverFrom": {**old, "prefix": "hk-prod"}}
    return values


def test_a_new_site_reads_the_old_clusters_backups_read_only_and_writes_only_its_own():
    values = _new_site()
    plan = backup_plan(load(raw_config(values)).spec)
    assert plan is not None and plan.recovery is not None and plan.recovery.prefix == "hk-prod"
    assert plan.primary.prefix == "sg-dr"
    recording = run_program(raw_config(values), stack="sg-dr")
    assert not recording.plan.errors
    locations = {r.inputs["metadata"]["name"]: r.inputs["spec"]
                 for r in recording.by_type("kubernetes:velero.io/v1:BackupStorageLocation")}
    assert locations["recovery"]["accessMode"] == "ReadOnly" and locations["recovery"]["objectStorage"]["prefix"] == "hk-prod"
    assert locations["primary"]["default"] is True and locations["primary"]["objectStorage"]["prefix"] == "sg-dr"
    # Nothing is ever scheduled into the old cluster's backups.
    schedules = [r.inputs["spec"]["template"]["storageLocation"]
                 for r in recording.by_type("kubernetes:velero.io/v1:Schedule")]
    assert schedules == ["primary"]
    # The restore the runbook runs reads from that location (docs/backup.md): its BSL is what it names.
    assert "recovery" in locations


def test_the_recovery_location_cannot_be_this_clusters_own():
    values = _new_site()
    values["backup"]["recoverFrom"] = {**values["backup"]["primary"]}
    assert any(p.startswith("backup.recoverFrom: is backup.primary itself") for p in problems(values))


def test_the_recovery_restore_excludes_every_platform_namespace_and_restores_cluster_resources():
    """docs/backup.md's restore command (#39 item 8): every namespace the program itself makes or installs into,
    except the application namespaces, is excluded (argo-rollouts and opentelemetry were missing), and cluster-scoped
    resources are included explicitly (Velero leaves them out of a restore that excludes namespaces)."""
    import re

    from tests.conftest import ROOT
    text = (ROOT / "docs" / "backup.md").read_text()
    [command] = re.findall(r"velero restore create dr-1 .*?\\\n\s+--exclude-namespaces (\S+)", text, re.S)
    excluded = set(command.split(","))
    assert "--include-cluster-resources=true" in text.split("velero restore create dr-1", 1)[1].split("\n", 1)[0]
    made = _namespaces_the_program_makes(hk_prod_values())
    applications = {n["name"] for n in hk_prod_values().get("namespaces", [])} | {"win-prod", "linux-prod"}
    assert made - applications <= excluded, sorted(made - applications - excluded)
    # One list: the restore leaves out exactly what the schedules leave out.
    assert excluded == set(PLATFORM_NAMESPACES)
