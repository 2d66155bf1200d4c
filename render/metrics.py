"""Renders metrics and alerting for both operating systems: the kube-prometheus-stack Helm values (its Linux parts, and
with Windows nodes its Windows rules, dashboards and windows_exporter), the cluster's own PrometheusRule and a Grafana
dashboard for Windows nodes.

Owns the monitoring namespace name, the windows_exporter collector set and the render functions below (the chart pin
is config.compat.CHARTS). Pure: no Pulumi and no ``config`` imports; plain values in, Helm values and Kubernetes objects
as dicts out. components/platform/observability.py creates the Grafana admin Secret from a Pulumi secret, installs the
chart and turns each dict into a resource.
"""
from __future__ import annotations

import json
import re
from typing import Any

from render.etcd_backup import TEXTFILE_DIR
from render.scheduling import system_namespace, windows_toleration
from vocab.checks import DNS_SUBDOMAIN, require
from vocab.cluster import WINDOWS_SYSTEM_NAMESPACE
from vocab.labels import CONTROL_PLANE_TAINT_KEY, OS_LABEL, WINDOWS_BUILD_LABEL, WINDOWS_TAINT_KEY

MONITORING_NAMESPACE = "monitoring"

# windows_exporter's default listen port (`--telemetry.addr` default `:9182`, windows_exporter README.md).
WINDOWS_EXPORTER_PORT = 9182
WINDOWS_EXPORTER_PORT_NAME = "http-metrics"
# Prometheus' job label for the exporter. kube-prometheus-stack's own Windows rules and dashboards expect
# this job name ("job name must be 'windows-exporter'", values.yaml `windowsMonitoring`), so our alerts and
# dashboard read it too.
WINDOWS_EXPORTER_JOB = "windows-exporter"

# Collectors (`--collectors.enabled`, windows_exporter README.md "Flags"), each for what the dashboard and
# the alerts read. `cs` is deliberately absent: it was deprecated (windows_exporter#1596, its metrics moved
# to cpu/memory/os) and then deleted ("cs: remove deprecated cs collector (#2115)", commit fd70703,
# 2025-07-05, quoted in grafana/agent#7198), so the 0.31 image pinned in config.compat no longer has it
# and naming it would fail the exporter's start. A superset of the `memory` and `container` collectors the
# chart's own Windows rules need.
WINDOWS_EXPORTER_COLLECTORS: tuple[str, ...] = ("cpu", "logical_disk", "memory", "net", "os", "system", "container")

# The windows_ metrics this module's dashboard and rules use, and the collector that produces each
# (metric names from the collectors' source, internal/collector/<name>/<name>.go at windows_exporter
# master: cpu.go `time_total` {core, mode}; memory.go `physical_total_bytes`, `physical_free_bytes`;
# logical_disk.go `free_bytes`, `size_bytes`, `read_bytes_total`, `write_bytes_total` {volume}; net.go
# `bytes_received_total`, `bytes_sent_total` {nic}; all prefixed `windows_`).
WINDOWS_METRIC_COLLECTOR: dict[str, str] = {
    "windows_cpu_time_total": "cpu",
    "windows_memory_physical_total_bytes": "memory",
    "windows_memory_physical_free_bytes": "memory",
    "windows_logical_disk_free_bytes": "logical_disk",
    "windows_logical_disk_size_bytes": "logical_disk",
    "windows_logical_disk_read_bytes_total": "logical_disk",
    "windows_logical_disk_write_bytes_total": "logical_disk",
    "windows_net_bytes_received_total": "net",
    "windows_net_bytes_sent_total": "net",
}

# Grafana's dashboard sidecar loads ConfigMaps carrying this label and value (kube-prometheus-stack
# values.yaml `grafana.sidecar.dashboards.label: grafana_dashboard`, `labelValue: "1"`).
GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
GRAFANA_DASHBOARD_LABEL_VALUE = "1"

# The Grafana admin Secret's keys; the grafana chart's defaults (`admin.userKey: admin-user`,
# `admin.passwordKey: admin-password`, grafana/helm-charts charts/grafana/values.yaml).
GRAFANA_ADMIN_USER_KEY = "admin-user"
GRAFANA_ADMIN_PASSWORD_KEY = "admin-password"

# Node labels kube-state-metrics copies into kube_node_labels as label_<sanitised key> (--metric-labels-
# allowlist, chart value `metricLabelsAllowlist`, kube-state-metrics docs/metrics/cluster/node-metrics.md
# "kube_node_labels ... label_NODE_LABEL"). The OS label is what the per-OS alerts join on.
NODE_LABELS_EXPORTED: tuple[str, ...] = (OS_LABEL, WINDOWS_BUILD_LABEL, "topology.kubernetes.io/zone", "node.os.distro")


def prometheus_label_name(kubernetes_label: str) -> str:
    """kube-state-metrics' Prometheus name for a Kubernetes label: ``label_`` plus the key with every
    character outside [a-zA-Z0-9_] replaced by ``_`` ("kubernetes.io/os" -> "label_kubernetes_io_os")."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", kubernetes_label)


_OS_NODE_LABEL = prometheus_label_name(OS_LABEL)

# The Prometheus CRD's pattern for `retention` (monitoring.coreos.com_prometheuses, spec.retention).
_RETENTION = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$")


def monitoring_namespace() -> dict[str, Any]:
    """MONITORING_NAMESPACE at Pod Security level privileged: the node-exporter DaemonSet uses hostNetwork, hostPID
    and a hostPath mount of / (prometheus-node-exporter values.yaml ``hostNetwork: true``, ``hostPID: true``,
    ``hostRootFsMount.enabled: true``), all refused by ``baseline``."""
    return system_namespace(MONITORING_NAMESPACE)


def _linux(requests: dict[str, str]) -> dict[str, Any]:
    """The placement every chart pod gets: Linux only, requests only (our sizing; the charts set none)."""
    return {"nodeSelector": {OS_LABEL: "linux"}, "resources": {"requests": dict(requests)}}


# kubeadm taints control-plane nodes node-role.kubernetes.io/control-plane:NoSchedule; node-exporter must
# still run there. It must not tolerate the Windows taint, which the chart's default toleration
# (`- effect: NoSchedule, operator: Exists`, prometheus-node-exporter values.yaml) would.
_CONTROL_PLANE_TOLERATION = {
    "key": CONTROL_PLANE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule",
}

# Every key of the chart's values whose templates create pods, as a path into the values dict. Each must
# select Linux and state requests; tests check them all. Keys are from kube-prometheus-stack values.yaml
# (alertmanager.alertmanagerSpec, prometheus.prometheusSpec, prometheusOperator, its
# admissionWebhooks.patch Job and optional admissionWebhooks.deployment, crds.upgradeJob,
# thanosRuler.thanosRulerSpec) and its subcharts' values (grafana, kube-state-metrics,
# prometheus-node-exporter: `nodeSelector`/`resources` at their top level).
POD_CREATING_KEYS: tuple[tuple[str, ...], ...] = (
    ("prometheusOperator",),
    ("prometheusOperator", "admissionWebhooks", "patch"),
    ("prometheusOperator", "admissionWebhooks", "deployment"),
    ("prometheus", "prometheusSpec"),
    ("alertmanager", "alertmanagerSpec"),
    ("grafana",),
    ("kube-state-metrics",),
    ("prometheus-node-exporter",),
    ("crds", "upgradeJob"),
    ("thanosRuler", "thanosRulerSpec"),
)


def kube_prometheus_stack_values(retention: str = "15d", grafana_admin_secret: str = "grafana-admin",
                                 windows_exporter_image: str | None = None,
                                 volume: tuple[str, int] | None = None) -> dict[str, Any]:
    """Helm values for the kube-prometheus-stack chart; with ``windows_exporter_image`` (a stack with
    Windows nodes) its Windows monitoring too (the ``windowsMonitoring`` key below).

    ``grafana_admin_secret`` names a Secret in MONITORING_NAMESPACE holding GRAFANA_ADMIN_USER_KEY and
    GRAFANA_ADMIN_PASSWORD_KEY; the lead creates it from a Pulumi secret, so no password is in the values.
    ``volume`` (StorageClass, GiB): Prometheus's data on a volume claimed from that class (prometheusSpec.storageSpec
    volumeClaimTemplate, the chart's values.yaml "Using PersistentVolumeClaim"); None: the pod's emptyDir.
    """
    # The CRD pattern also admits "" and "0"; neither is a retention anyone means to configure.
    if retention in ("", "0") or not _RETENTION.match(retention):
        raise ValueError(f"retention {retention!r} is not a Prometheus duration like 15d")
    if not DNS_SUBDOMAIN.match(grafana_admin_secret):
        raise ValueError(f"grafana_admin_secret {grafana_admin_secret!r} is not a Secret name")
    values: dict[str, Any] = {
        # The chart's CRD upgrade Job is off by default (values.yaml `crds.upgradeJob.enabled: false`);
        # placed anyway, so turning it on cannot schedule a pod onto Windows.
        "crds": {"upgradeJob": {"enabled": False, **_linux({"cpu": "10m", "memory": "64Mi"})}},
        # Windows monitoring is the chart's own: `windowsMonitoring.enabled` "Deploys the windows-exporter and
        # Windows-specific dashboards and rules (job name must be 'windows-exporter')" (kube-prometheus-stack
        # values.yaml @6e3607554b0e). This one switch turns on the prometheus-windows-exporter subchart (Chart.yaml
        # `condition: windowsMonitoring.enabled`, its only condition, so the rules cannot be had without it), the
        # recording rules (defaultRules.rules.windows below) and the five Kubernetes/Windows dashboards, all
        # selecting job="windows-exporter".
        "windowsMonitoring": {"enabled": windows_exporter_image is not None},
        "prometheusOperator": {
            **_linux({"cpu": "100m", "memory": "128Mi"}),
            # The webhook cert Job runs at install and upgrade (admissionWebhooks.patch, a Helm hook Job).
            "admissionWebhooks": {
                "patch": _linux({"cpu": "10m", "memory": "32Mi"}),
                # Off by default (`deployment.enabled: false`); placed for the same reason as upgradeJob.
                "deployment": _linux({"cpu": "10m", "memory": "32Mi"}),
            },
            # The config-reloader sidecar the operator injects into Prometheus and Alertmanager pods.
            "prometheusConfigReloader": {"resources": {"requests": {"cpu": "10m", "memory": "32Mi"}}},
        },
        "prometheus": {
            "prometheusSpec": {
                **_linux({"cpu": "500m", "memory": "2Gi"}),
                "retention": retention,
                **({"storageSpec": {"volumeClaimTemplate": {"spec": {
                    "storageClassName": volume[0], "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": f"{volume[1]}Gi"}}}}}} if volume is not None else {}),
                # false: an empty selector selects every ServiceMonitor/PodMonitor/PrometheusRule instead of
                # only those carrying this release's label (values.yaml, "If true, a nil or {} value ...
                # will cause the prometheus resource to be created with selectors based on values in the
                # helm deployment"), so our PodMonitor and PrometheusRule are picked up.
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                # An empty namespace selector "matches all namespaces" (Prometheus CRD,
                # podMonitorNamespaceSelector), which reaches the PodMonitor in windows-system.
                "serviceMonitorNamespaceSelector": {},
                "podMonitorNamespaceSelector": {},
                "ruleNamespaceSelector": {},
            },
        },
        "alertmanager": {"alertmanagerSpec": _linux({"cpu": "50m", "memory": "64Mi"})},
        "grafana": {
            **_linux({"cpu": "100m", "memory": "256Mi"}),
            # grafana chart: with admin.existingSecret set, the admin user and password are read from that
            # Secret and adminUser/adminPassword are ignored.
            "admin": {
                "existingSecret": grafana_admin_secret,
                "userKey": GRAFANA_ADMIN_USER_KEY,
                "passwordKey": GRAFANA_ADMIN_PASSWORD_KEY,
            },
            "sidecar": {
                "dashboards": {
                    "enabled": True,
                    "label": GRAFANA_DASHBOARD_LABEL,
                    "labelValue": GRAFANA_DASHBOARD_LABEL_VALUE,
                    "searchNamespace": "ALL",
                },
                "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
            },
            # The chart's `helm test` pod (testFramework) is never run by Pulumi; off, so it exists nowhere.
            "testFramework": {"enabled": False},
        },
        "kube-state-metrics": {
            **_linux({"cpu": "50m", "memory": "128Mi"}),
            "metricLabelsAllowlist": [f"nodes=[{','.join(NODE_LABELS_EXPORTED)}]"],
        },
        "prometheus-node-exporter": {
            **_linux({"cpu": "50m", "memory": "64Mi"}),
            "tolerations": [_CONTROL_PLANE_TOLERATION],
            # The host's textfile directory (render/etcd_backup.py TEXTFILE_DIR), under the chart's mount of
            # the node's root file system at /host/root (hostRootFsMount.enabled, its default;
            # prometheus-node-exporter values.yaml `extraArgs`, e.g. "--collector.textfile.directory=...").
            "extraArgs": [f"--collector.textfile.directory=/host/root{TEXTFILE_DIR}"],
        },
        "thanosRuler": {"enabled": False, "thanosRulerSpec": _linux({"cpu": "50m", "memory": "64Mi"})},
        # Scrapers kubeadm's defaults make unreachable, with the default rules that would otherwise report them down
        # forever: kubeadm binds kube-controller-manager and kube-scheduler to 127.0.0.1 and etcd's metrics to
        # http://127.0.0.1:2381 (kubernetes/kubeadm#2388; prometheus-community/helm-charts#1966), and kube-proxy's
        # metrics to 127.0.0.1:10249 (vexxhost/magnum-cluster-api#180). render/kubeadm.py keeps those defaults, so
        # Prometheus (a pod on a worker) cannot reach them. Re-enable these together with
        # `bind-address`/`listen-metrics-urls`/`metricsBindAddress` extraArgs in kubeadm.
        "kubeEtcd": {"enabled": False},
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeProxy": {"enabled": False},
        "defaultRules": {"rules": {
            "etcd": False,
            "kubeControllerManager": False,
            "kubeSchedulerAlerting": False,
            "kubeSchedulerRecording": False,
            "kubeProxy": False,
            # The chart's windows.node/windows.pod recording rules: also need windowsMonitoring.enabled.
            "windows": windows_exporter_image is not None,
        }},
    }
    if windows_exporter_image is not None:
        values["prometheus-windows-exporter"] = windows_exporter_values(windows_exporter_image)
    return values


def windows_exporter_values(image: str) -> dict[str, Any]:
    """Values for kube-prometheus-stack's prometheus-windows-exporter subchart (keys from
    charts/prometheus-windows-exporter/values.yaml): windows_exporter as a HostProcess DaemonSet (the subchart's
    default ``securityContext.windowsOptions.hostProcess``) in WINDOWS_SYSTEM_NAMESPACE on every Windows node, scraped
    as job "windows-exporter" with a `node` label. ``image`` is config.compat WINDOWS[...].windows_exporter_image
    (registry/repository:tag): one image serves every build, because a HostProcess image need not match the host
    build ("One image works on every Windows version that supports HostProcess containers",
    prometheus-community/windows_exporter docs/kubernetes/kubernetes.md, quoted in config/compat.py; the exporter's
    Dockerfile: "this image doesn't really matter for hostprocess"), so adding a build changes nothing here: the
    DaemonSet selects every Windows node by its OS label, whatever its build. The node's firewall rule
    for the port is the node's own (render/windows_bootstrap.py NODE_FIREWALL_RULES); the chart's configure-firewall
    init container adds the same rule again."""
    match = re.fullmatch(r"([a-z0-9.-]+)/([a-z0-9._/-]+):([A-Za-z0-9._-]+)", image or "")
    if match is None:
        raise ValueError(f"windows_exporter image {image!r} is not a registry/repository:tag reference")
    registry, repository, tag = match.groups()
    return {
        "image": {"registry": registry, "repository": repository, "tag": tag},
        # windows_exporter's YAML config file (the chart mounts `config` as config.yml, --config.file).
        "config": "collectors:\n  enabled: " + ",".join(WINDOWS_EXPORTER_COLLECTORS) + "\n",
        # privileged (render/scheduling.py system_namespace): baseline refuses `windowsOptions.hostProcess`
        # (check_windowsHostProcess.go, cited there).
        "namespaceOverride": WINDOWS_SYSTEM_NAMESPACE,
        "nodeSelector": {OS_LABEL: "windows"},
        # The chart's default tolerates every NoSchedule taint; only the Windows one is wanted.
        "tolerations": [windows_toleration()],
        "service": {"port": WINDOWS_EXPORTER_PORT, "portName": WINDOWS_EXPORTER_PORT_NAME},
        # The subchart's ServiceMonitor takes the job name from this pod label (`prometheus.monitor.jobLabel: jobLabel`).
        "podLabels": {"jobLabel": WINDOWS_EXPORTER_JOB},
        "prometheus": {"monitor": {
            "enabled": True,
            "jobLabel": "jobLabel",
            # hostNetwork makes instance the node's IP; the node name is what dashboards and alerts
            # group by (__meta_kubernetes_pod_node_name: Prometheus kubernetes_sd_config, role endpoints).
            "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node",
                             "action": "replace"}],
        }},
        # Our sizing; requests only, so the node reserves room without throttling scrapes.
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    }


# --- alerts ------------------------------------------------------------------------------------------------

_KSM = 'job="kube-state-metrics"'
_NODE_EXPORTER = 'job="node-exporter"'   # kube-prometheus-stack values: node-exporter podLabels jobLabel
_WINDOWS = f'job="{WINDOWS_EXPORTER_JOB}"'
# Drive-letter volumes only: the logical_disk collector also reports HarddiskVolumeN mount points.
_WINDOWS_VOLUMES = 'volume=~"[A-Z]:"'
# tigera/operator pkg/render/windows.go: WindowsNodeObjectName = "calico-node-windows", rendered into the
# operator's calico-system namespace.
CALICO_WINDOWS_DAEMONSET = "calico-node-windows"
CALICO_NAMESPACE = "calico-system"
DISK_FREE_RATIO = 0.10


def _on_os(expr: str, os_name: str) -> str:
    """``expr`` (keyed by node) restricted to nodes of one OS: kube_node_info carries no OS, so the join
    is on kube_node_labels with the OS label kube-state-metrics is told to export (NODE_LABELS_EXPORTED)."""
    return f'({expr}) and on (node) kube_node_labels{{{_KSM},{_OS_NODE_LABEL}="{os_name}"}}'


def _node_not_ready(os_name: str) -> dict[str, Any]:
    title = os_name.capitalize()
    return {
        "alert": f"{title}NodeNotReady",
        # status="true" is 0 both for False and for Unknown (kube_node_status_condition has one series per
        # status, node-metrics.md), so a node that stopped reporting is caught too.
        "expr": _on_os(f'kube_node_status_condition{{{_KSM},condition="Ready",status="true"}} == 0', os_name),
        "for": "5m",
        "labels": {"severity": "critical", "os": os_name},
        "annotations": {
            "summary": f"{title} node {{{{ $labels.node }}}} is not Ready.",
            "description": f"{title} node {{{{ $labels.node }}}} has not reported Ready for 5 minutes.",
        },
    }


def _disk_pressure_condition(os_name: str) -> dict[str, Any]:
    title = os_name.capitalize()
    return {
        "alert": f"{title}NodeDiskPressure",
        "expr": _on_os(f'kube_node_status_condition{{{_KSM},condition="DiskPressure",status="true"}} == 1', os_name),
        "for": "5m",
        "labels": {"severity": "warning", "os": os_name},
        "annotations": {
            "summary": f"{title} node {{{{ $labels.node }}}} reports DiskPressure.",
            "description": "The kubelet is evicting pods and refusing new ones on this node until disk space is freed.",
        },
    }


def etcd_snapshot_alerts(metric: str, alert_after_hours: int) -> dict[str, Any]:
    """The rule group for scheduled etcd snapshots (render/etcd_backup.py records each success as ``metric``):
    a node whose last stored, verified snapshot is older than ``alert_after_hours``."""
    require(type(alert_after_hours) is int and alert_after_hours >= 1, "alert_after_hours must be a positive integer")
    require(bool(re.match(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$", metric)), f"{metric!r} is not a metric name")
    seconds = alert_after_hours * 3600
    return {"name": "hybrid-etcd-snapshots", "rules": [{
        "alert": "EtcdSnapshotStale",
        "expr": f"time() - max by (node) ({metric}{{{_NODE_EXPORTER}}}) > {seconds}",
        "for": "15m",
        "labels": {"severity": "critical"},
        "annotations": {
            "summary": f"No etcd snapshot of {{{{ $labels.node }}}} was stored in the last {alert_after_hours} hours.",
            "description": ("Check `systemctl status hybrid-cluster-etcd-snapshot` and its journal on the node: the "
                            "snapshot, its check or the copy to the NFS target failed."),
        },
    }, {
        # A control-plane node that has never recorded a snapshot (the timer never succeeded there, or the
        # textfile was lost) has no series for the rule above; kube-state-metrics' kube_node_role{node,role}
        # (docs/metrics/cluster/node-metrics.md) lists the nodes kubeadm labelled
        # node-role.kubernetes.io/control-plane, so each one without a snapshot series alerts after the
        # same time.
        "alert": "EtcdSnapshotMissing",
        "expr": (f'group by (node) (kube_node_role{{{_KSM},role="control-plane"}})'
                 f" unless on (node) group by (node) ({metric}{{{_NODE_EXPORTER}}})"),
        "for": f"{alert_after_hours}h",
        "labels": {"severity": "critical"},
        "annotations": {
            "summary": f"{{{{ $labels.node }}}} has stored no etcd snapshot for {alert_after_hours} hours.",
            "description": ("Check that the hybrid-cluster-etcd-snapshot timer is enabled on the node and that "
                            "node-exporter reads its textfile directory."),
        },
    }]}


def alert_rules(etcd_snapshots: dict[str, Any] | None = None) -> dict[str, Any]:
    """The monitoring.coreos.com/v1 PrometheusRule with this cluster's own alerts (the chart's defaults
    cover the rest); ``etcd_snapshots``: the group of etcd_snapshot_alerts, when snapshots are scheduled."""
    ratio = DISK_FREE_RATIO
    calico = f'{_KSM},namespace="{CALICO_NAMESPACE}",daemonset="{CALICO_WINDOWS_DAEMONSET}"'
    groups = [
        {"name": "hybrid-nodes", "rules": [_node_not_ready("linux"), _node_not_ready("windows")]},
        {"name": "hybrid-disk", "rules": [
            {
                "alert": "LinuxFilesystemAlmostFull",
                # node-exporter filesystem metrics (node_filesystem_avail_bytes/size_bytes/readonly).
                "expr": (
                    f'(node_filesystem_avail_bytes{{{_NODE_EXPORTER},fstype!=""}}'
                    f' / node_filesystem_size_bytes{{{_NODE_EXPORTER},fstype!=""}}) < {ratio}'
                    f' and node_filesystem_readonly{{{_NODE_EXPORTER},fstype!=""}} == 0'
                ),
                "for": "15m",
                "labels": {"severity": "warning", "os": "linux"},
                "annotations": {
                    "summary": "{{ $labels.instance }} {{ $labels.mountpoint }} has less than 10% free.",
                    "description": (
                        "Free space {{ $value | humanizePercentage }};"
                        " the kubelet starts evicting at its hard threshold."
                    ),
                },
            },
            _disk_pressure_condition("linux"),
            {
                "alert": "WindowsVolumeAlmostFull",
                # free_bytes/size_bytes refresh only every 10-15 minutes (logical_disk.go descriptions), hence
                # the longer `for`.
                "expr": (
                    f'windows_logical_disk_free_bytes{{{_WINDOWS},{_WINDOWS_VOLUMES}}}'
                    f' / windows_logical_disk_size_bytes{{{_WINDOWS},{_WINDOWS_VOLUMES}}} < {ratio}'
                ),
                "for": "20m",
                "labels": {"severity": "warning", "os": "windows"},
                "annotations": {
                    "summary": "Windows node {{ $labels.node }} volume {{ $labels.volume }} has less than 10% free.",
                    "description": "Free space {{ $value | humanizePercentage }}.",
                },
            },
            _disk_pressure_condition("windows"),
        ]},
        {"name": "hybrid-network", "rules": [{
            "alert": "CalicoWindowsNodeNotReady",
            "expr": (
                f"kube_daemonset_status_number_ready{{{calico}}}"
                f" < kube_daemonset_status_desired_number_scheduled{{{calico}}}"
            ),
            "for": "10m",
            "labels": {"severity": "critical", "os": "windows"},
            "annotations": {
                "summary": "calico-node-windows is not ready on every Windows node.",
                "description": (
                    "{{ $value }} pods ready; a Windows node without it has no pod network (HNS network \"Calico\")."
                ),
            },
        }]},
        {"name": "hybrid-scheduling", "rules": [
            {
                "alert": "PodUnschedulable",
                # kube_pod_status_unschedulable: the PodScheduled condition is False with reason
                # Unschedulable, which is what a node-selector or taint mismatch produces (pod-metrics.md).
                "expr": (
                    f'max by (namespace, pod) (kube_pod_status_unschedulable{{{_KSM}}}) == 1'
                    " and on (namespace, pod)"
                    f' max by (namespace, pod) (kube_pod_status_phase{{{_KSM},phase="Pending"}}) == 1'
                ),
                "for": "10m",
                "labels": {"severity": "warning"},
                "annotations": {
                    "summary": "Pod {{ $labels.namespace }}/{{ $labels.pod }} has been unschedulable for 10 minutes.",
                    "description": (
                        "Check its events: \"didn't match Pod's node affinity/selector\" means the wrong OS or "
                        "build was requested; \"untolerated taint {node-role.kubernetes.io/windows: true}\" means "
                        "a pod meant for Windows lacks runtimeClassName or the Windows toleration."
                    ),
                },
            },
            {
                "alert": "WindowsPodMissingToleration",
                # Pods in win-* namespaces (render/scheduling.py naming) that are unschedulable and carry no
                # toleration for the Windows taint (kube_pod_tolerations, pod-metrics.md).
                "expr": (
                    f'max by (namespace, pod) (kube_pod_status_unschedulable{{{_KSM},namespace=~"win-.*"}}) == 1'
                    f' unless on (namespace, pod) kube_pod_tolerations{{{_KSM},key="{WINDOWS_TAINT_KEY}"}}'
                ),
                "for": "5m",
                "labels": {"severity": "warning", "os": "windows"},
                "annotations": {
                    "summary": (
                        "Pod {{ $labels.namespace }}/{{ $labels.pod }} cannot land on Windows: no Windows toleration."
                    ),
                    "description": "Set runtimeClassName to the Windows build's RuntimeClass; it adds the toleration.",
                },
            },
        ]},
        *([etcd_snapshots] if etcd_snapshots is not None else []),
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "hybrid-cluster", "namespace": MONITORING_NAMESPACE,
                     "labels": {"app.kubernetes.io/part-of": "hybrid-cluster"}},
        "spec": {"groups": groups},
    }


# --- dashboard ---------------------------------------------------------------------------------------------

_NODE_FILTER = f'{_WINDOWS},node=~"$node"'


def _panel(panel_id: int, title: str, unit: str, targets: list[tuple[str, str]], x: int, y: int) -> dict[str, Any]:
    return {
        "id": panel_id,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend,
             "datasource": {"type": "prometheus", "uid": "${datasource}"}}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def _windows_dashboard_model() -> dict[str, Any]:
    rate = "$__rate_interval"
    volumes = f"{_NODE_FILTER},{_WINDOWS_VOLUMES}"
    panels = [
        _panel(1, "CPU busy", "percentunit", [(
            f'1 - avg by (node) (rate(windows_cpu_time_total{{{_NODE_FILTER},mode="idle"}}[{rate}]))', "{{node}}",
        )], 0, 0),
        _panel(2, "Memory used", "percentunit", [(
            f"1 - windows_memory_physical_free_bytes{{{_NODE_FILTER}}}"
            f" / windows_memory_physical_total_bytes{{{_NODE_FILTER}}}",
            "{{node}}",
        )], 12, 0),
        _panel(3, "Volume free", "percentunit", [(
            f'windows_logical_disk_free_bytes{{{_NODE_FILTER},{_WINDOWS_VOLUMES}}}'
            f' / windows_logical_disk_size_bytes{{{_NODE_FILTER},{_WINDOWS_VOLUMES}}}',
            "{{node}} {{volume}}",
        )], 0, 8),
        _panel(4, "Disk throughput", "Bps", [
            (f"sum by (node) (rate(windows_logical_disk_read_bytes_total{{{volumes}}}[{rate}]))", "{{node}} read"),
            (f"sum by (node) (rate(windows_logical_disk_write_bytes_total{{{volumes}}}[{rate}]))", "{{node}} write"),
        ], 12, 8),
        _panel(5, "Network", "Bps", [
            (f'sum by (node) (rate(windows_net_bytes_received_total{{{_NODE_FILTER}}}[{rate}]))', "{{node}} in"),
            (f'sum by (node) (rate(windows_net_bytes_sent_total{{{_NODE_FILTER}}}[{rate}]))', "{{node}} out"),
        ], 0, 16),
    ]
    return {
        "uid": "hybrid-windows-nodes",
        "title": "Windows nodes",
        "tags": ["windows", "nodes", "hybrid-cluster"],
        # The viewer's own time zone (Grafana's "browser"), whatever the site's.
        "timezone": "browser",
        "schemaVersion": 39,
        "editable": False,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
            {
                "name": "node",
                "type": "query",
                "label": "Node",
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "query": {"query": f"label_values(windows_cpu_time_total{{{_WINDOWS}}}, node)", "refId": "node"},
                "includeAll": True,
                "multi": True,
                "refresh": 2,
            },
        ]},
        "panels": panels,
    }


def windows_dashboard() -> dict[str, Any]:
    """A ConfigMap the Grafana sidecar loads: the Windows nodes dashboard (CPU, memory, disk, network per
    node from windows_exporter), next to the chart's Linux node dashboards."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "grafana-dashboard-windows-nodes",
            "namespace": MONITORING_NAMESPACE,
            "labels": {GRAFANA_DASHBOARD_LABEL: GRAFANA_DASHBOARD_LABEL_VALUE},
        },
        "data": {"windows-nodes.json": json.dumps(_windows_dashboard_model(), indent=2, sort_keys=True)},
    }
