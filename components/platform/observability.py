"""The observability layer, each part only when configured (config `observability`): metrics for both OSes
(kube-prometheus-stack on Linux, windows_exporter on Windows, alerts that matter for a hybrid cluster, a
Windows node dashboard next to the Linux ones) and logs from both OSes (Fluent Bit on Linux nodes and on
every Windows build) shipped to one configured output.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as kubernetes

from config import compat
from plan.platform import ObservabilityPlan
from render import etcd_backup, logging, metrics
from vocab.cluster import WINDOWS_SYSTEM_NAMESPACE

from .k8s import helm_release, kubernetes_object, resource_name
from .scheduling import Scheduling

GRAFANA_ADMIN_SECRET = "grafana-admin"


class Observability(pulumi.ComponentResource):
    def __init__(self, name: str, plan: ObservabilityPlan, provider: pulumi.ProviderResource, scheduling: Scheduling,
                 grafana_admin_password: pulumi.Output[str] | None, linux_ready: Sequence[pulumi.Resource],
                 windows_ready: Sequence[pulumi.Resource] = (), storage_classes: Mapping[str, pulumi.Resource] | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:Observability", name, None, opts)

        def declare(obj: dict, depends_on: Sequence[pulumi.Resource] = ()) -> pulumi.CustomResource:
            return kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider, parent=self,
                                     depends_on=list(depends_on))

        # The monitoring stack's release, whose CRDs (PodMonitor, PrometheusRule) other components' objects need.
        self.metrics_stack: pulumi.Resource | None = None
        if plan.metrics is not None:
            if grafana_admin_password is None:
                raise ValueError("observability.metrics needs the secret grafanaAdminPassword")
            monitoring = declare(metrics.monitoring_namespace())
            # Typed here: mypy infers Output.secret's type argument only with an expected type (Secret's __init__ is overloaded).
            grafana_credentials: pulumi.Output[dict[str, str]] = pulumi.Output.secret(grafana_admin_password.apply(
                lambda password: {metrics.GRAFANA_ADMIN_USER_KEY: "admin", metrics.GRAFANA_ADMIN_PASSWORD_KEY: password}))
            grafana_admin = kubernetes.core.v1.Secret(
                f"{name}-secret-{metrics.MONITORING_NAMESPACE}-{GRAFANA_ADMIN_SECRET}",
                metadata={"name": GRAFANA_ADMIN_SECRET, "namespace": metrics.MONITORING_NAMESPACE},
                type="Opaque",
                string_data=grafana_credentials,
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[monitoring]),
            )
            windows = plan.metrics.windows_exporter_image is not None
            stack = helm_release(
                f"{name}-kube-prometheus-stack", compat.CHARTS["kube-prometheus-stack"], metrics.MONITORING_NAMESPACE,
                metrics.kube_prometheus_stack_values(retention=plan.metrics.retention,
                                                     grafana_admin_secret=GRAFANA_ADMIN_SECRET,
                                                     windows_exporter_image=plan.metrics.windows_exporter_image,
                                                     volume=plan.metrics.volume),
                provider=provider, parent=self,
                # The windows-exporter subchart deploys into the privileged windows-system namespace, onto the
                # Windows nodes: Helm would otherwise wait out its timeout for nodes still joining.
                # With a volume, after its StorageClass (and the driver that class waits for).
                depends_on=[monitoring, grafana_admin, *linux_ready, *windows_ready,
                            *([(storage_classes or {})[plan.metrics.volume[0]]] if plan.metrics.volume else []),
                            *([scheduling.namespaces[WINDOWS_SYSTEM_NAMESPACE]] if windows else [])],
                windows_workloads=windows)
            self.metrics_stack = stack
            # PrometheusRule is the chart's CRD: after the chart.
            hours = plan.metrics.etcd_snapshot_alert_hours
            snapshots = metrics.etcd_snapshot_alerts(etcd_backup.SNAPSHOT_METRIC, hours) if hours is not None else None
            declare(metrics.alert_rules(snapshots), [stack])
            declare(metrics.windows_dashboard(), [monitoring])

        if plan.logs is not None:
            output = plan.logs.output
            logging_ns = declare(logging.logging_namespace())
            ca = logging.ca_config_map(output)
            helm_release(f"{name}-fluent-bit", compat.CHARTS["fluent-bit"], logging.LOGGING_NAMESPACE,
                         logging.fluent_bit_linux_values(output, compat.FLUENT_BIT_LINUX_IMAGE, plan.logs.audit_log),
                         provider=provider, parent=self,
                         depends_on=[logging_ns, *linux_ready, *([declare(ca, [logging_ns])] if ca is not None else [])])
            if plan.logs.fluent_bit_windows_builds:
                # Process-isolated containers: one DaemonSet per Windows build, each with that build's image.
                previous: list[pulumi.Resource] = [logging_ns, *windows_ready]
                for obj in logging.fluent_bit_windows(plan.logs.fluent_bit_windows_builds, output):
                    declared = declare(obj, previous)
                    if obj["kind"] != "DaemonSet":
                        previous = [*previous, declared]
        self.register_outputs({
            "metrics": compat.CHARTS["kube-prometheus-stack"].version if plan.metrics is not None else None,
            "logs": f"{plan.logs.output.kind}://{plan.logs.output.host}:{plan.logs.output.port}" if plan.logs else None})
