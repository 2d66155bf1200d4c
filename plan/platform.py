"""The platform layers' renderer inputs: Calico, storage, logs and metrics, scheduling by Windows build,
and the sample workloads."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from config import compat
from config.model import ObjectStoreSpec, StackSpec, WindowsKey
from render import (
    backup,
    custom_metrics,
    load_balancer,
    logging,
    metrics,
    network,
    policy,
    progressive_delivery,
    security,
    storage,
    tls,
    tracing,
    windows_bootstrap,
    workloads,
)
from vocab.cluster import WINDOWS_SYSTEM_NAMESPACE
from vocab.namespaces import NamespaceParams

from .release import windows_release
from .rollout import stack_waves
from .security import windows_system_namespace

# The sample image is built for Windows Server 2022 (ltsc2022), so it needs that build's RuntimeClass.
SAMPLE_WINDOWS_VERSION: WindowsKey = "win2022"


def api_host(spec: StackSpec) -> str:
    """The API server's address: the VIP when there is one, else the only control-plane node."""
    return str(spec.cluster.api_vip or spec.nodes.control_plane[0].ip)


def calico_params(spec: StackSpec) -> network.CalicoParams:
    return network.CalicoParams(
        pod_cidr=str(spec.cluster.pod_cidr),
        service_cidr=str(spec.cluster.service_cidr),
        mtu=spec.calico.mtu,
        block_size=spec.calico.block_size,
        encapsulation=spec.calico.encapsulation,
        bgp=spec.calico.bgp,
        vxlan_port=spec.calico.vxlan_port,
        vxlan_vni=spec.calico.vxlan_vni,
        windows=bool(spec.nodes.windows),
        # The API server by address: Calico must reach it before cluster DNS (which needs Calico) runs.
        api_host=api_host(spec),
        api_port=spec.cluster.api_port,
        windows_cni_bin_dir=windows_bootstrap.CALICO_WINDOWS_CNI_BIN_DIR,
        windows_cni_conf_dir=windows_bootstrap.CALICO_WINDOWS_CNI_CONF_DIR,
        windows_cni_log_dir=network.CALICO_WINDOWS_CNI_LOG_DIR,
        dns_budget=survives_every_wave(spec, [n.name for n in spec.linux_nodes if not n.lost]),
    )


def linux_workers(spec: StackSpec) -> list[str]:
    """The Linux workers a service of theirs can run on (a lost one runs nothing)."""
    return [n.name for n in spec.nodes.linux if not n.lost]


def survives_every_wave(spec: StackSpec, nodes: list[str]) -> bool:
    """Whether a service that runs on `nodes` keeps one of them through every wave of the stack's rolling operations
    (plan.rollout.stack_waves): then it gets a disruption budget of one, which a drain can always satisfy. On a single
    node, or with a wave that drains all of them, a budget would block that drain for good."""
    return len(nodes) >= 2 and all(set(nodes) - set(wave) for wave in stack_waves(spec))


def worker_services_budget(spec: StackSpec) -> bool:
    """Whether the cluster services that run on the Linux workers (metrics-server, the Gateway's controller and
    proxies, cert-manager's webhook, approver-policy, KEDA) get two replicas and a budget of one, and Gatekeeper's
    webhook (three replicas, its chart's) a budget of one (render/availability.py): where every wave leaves them a
    worker."""
    return survives_every_wave(spec, linux_workers(spec))


def log_output(spec: StackSpec) -> logging.LogOutput | None:
    """Where Fluent Bit ships logs; None without `observability.logs` (no log shipping)."""
    out = spec.observability.logs if spec.observability is not None else None
    if out is None:
        return None
    # Loki streams carry the cluster's name: one Loki often serves a site and its recovery site's cluster.
    labels = (("cluster", spec.cluster.name),) if out.kind == "loki" else ()
    return logging.LogOutput(kind=out.kind, host=out.host, port=out.port, tls=out.tls, tenant=out.tenant, labels=labels,
                             index_prefix=out.index_prefix, cluster_domain=spec.cluster.dns_domain,
                             ca_certificate=out.ca_certificate)


def storage_params(spec: StackSpec) -> storage.StorageParams | None:
    """The enabled storage backends; None without a `storage` section."""
    s = spec.storage
    if s is None:
        return None
    zones = tuple(spec.zones)
    return storage.StorageParams(
        smb=storage.SmbParams(source=s.smb.source, dir_mode=s.smb.dir_mode, file_mode=s.smb.file_mode,
                              uid=s.smb.uid, gid=s.smb.gid, version=s.smb.version) if s.smb else None,
        nfs=storage.NfsParams(server=str(s.nfs.server), path=s.nfs.path) if s.nfs else None,
        longhorn=longhorn_params(spec, zones) if s.longhorn else None,
        reclaim_policy=s.reclaim_policy, allow_expansion=s.allow_expansion, default_class=s.default_class,
    )


def longhorn_params(spec: StackSpec, zones: tuple[str, ...]) -> storage.LonghornParams:
    """Each replica in its own zone while the zones with a Linux worker are enough; on fewer, spread where possible
    (a site of one zone still keeps its replicas on different workers)."""
    replicas = spec.longhorn_replicas
    return storage.LonghornParams(replicas=replicas, zones=zones,
                                  zone_per_replica=replicas <= len(spec.linux_worker_zones))


def windows_builds(spec: StackSpec) -> dict[str, str]:
    """The stack's Windows builds: matrix key -> build number ("win2022" -> "10.0.20348")."""
    return {n.version: windows_release(n.version).build for n in spec.nodes.windows}


def windows_image(spec: StackSpec, field: str) -> str:
    """An image every Windows build shares (HostProcess images do not depend on the build, config.compat):
    the first Windows node's row's. Only for a stack with Windows nodes."""
    if not spec.nodes.windows:
        raise ValueError(f"the stack has no Windows node to take a {field} for")
    return str(getattr(windows_release(spec.nodes.windows[0].version), field))


def fluent_bit_windows_builds(spec: StackSpec) -> dict[str, tuple[str, str]]:
    """Per Windows build, its build number and the Fluent Bit image built for it (process isolation)."""
    return {n.version: (windows_release(n.version).build, str(windows_release(n.version).fluent_bit_image))
            for n in spec.nodes.windows}


def sample_params(spec: StackSpec) -> workloads.SampleParams | None:
    """The sample workloads' inputs; None without a `workloads` section (no samples)."""
    w = spec.workloads
    if w is None:
        return None
    return workloads.SampleParams(
        win_namespace=w.windows_namespace, linux_namespace=w.linux_namespace,
        win_runtime_class=SAMPLE_WINDOWS_VERSION,
        win_image=compat.SAMPLE_WINDOWS_IMAGE, linux_image=compat.SAMPLE_LINUX_IMAGE,
        linux_distros=tuple(sorted({n.distro for n in spec.nodes.linux})), host=w.sample_host,
        win_replicas=w.windows_replicas, linux_replicas=w.linux_replicas,
        tracing_sampling=spec.tracing.sampling_percent if spec.tracing is not None else None,
        java_agent_image=compat.OTEL_JAVA_AGENT_IMAGE if spec.tracing is not None else None,
    )


# --- the platform components' slices: each takes only what it renders from ---------------------------------

@dataclass(frozen=True)
class WindowsKubeProxyPlan:
    kubernetes_version: str
    image_template: str     # config.compat, one for every build (HostProcess)
    cluster_cidr: str


def windows_kube_proxy_plan(spec: StackSpec) -> WindowsKubeProxyPlan | None:
    """kube-proxy for the Windows nodes; None without them."""
    if not spec.nodes.windows:
        return None
    return WindowsKubeProxyPlan(kubernetes_version=spec.cluster.kubernetes_version,
                                image_template=windows_image(spec, "kube_proxy_image"),
                                cluster_cidr=str(spec.cluster.pod_cidr))


@dataclass(frozen=True)
class SchedulingPlan:
    windows_builds: dict[str, str]                    # matrix key -> build number, one RuntimeClass each
    namespaces: tuple[NamespaceParams, ...]           # the application namespaces
    windows: bool                                     # windows-system exists (plan/security.py windows_system_namespace)


def scheduling_plan(spec: StackSpec) -> SchedulingPlan:
    return SchedulingPlan(windows_builds=windows_builds(spec), namespaces=tuple(n.params() for n in spec.namespaces),
                          windows=windows_system_namespace(spec))


@dataclass(frozen=True)
class MetricsPlan:
    retention: str
    windows_exporter_image: str | None                # None without Windows nodes
    etcd_snapshot_alert_hours: int | None             # None without `etcdBackup`
    volume: tuple[str, int] | None = None             # (StorageClass, GiB) of Prometheus's volume; None: emptyDir


@dataclass(frozen=True)
class LogsPlan:
    output: logging.LogOutput
    fluent_bit_windows_builds: dict[str, tuple[str, str]]
    audit_log: str | None = None                      # the API server's audit log, shipped too (security.auditLog)


@dataclass(frozen=True)
class ObservabilityPlan:
    metrics: MetricsPlan | None                       # None: no monitoring stack
    logs: LogsPlan | None                             # None: no log shipping


def observability_plan(spec: StackSpec) -> ObservabilityPlan | None:
    """Metrics and logs, each only when configured; None when neither is."""
    o = spec.observability
    output = log_output(spec)
    if o is None or (o.metrics is None and output is None):
        return None
    return ObservabilityPlan(
        metrics=MetricsPlan(
            retention=o.metrics.retention,
            volume=(storage.LONGHORN_CLASS, o.metrics.volume_gb)
            if spec.storage is not None and spec.storage.longhorn is not None else None,
            # One image serves every Windows build (HostProcess); config.rules checked that each build has one.
            windows_exporter_image=windows_image(spec, "windows_exporter_image") if spec.nodes.windows else None,
            etcd_snapshot_alert_hours=spec.etcd_backup.alert_after_hours if spec.etcd_backup is not None else None,
        ) if o.metrics is not None else None,
        logs=LogsPlan(output=output, fluent_bit_windows_builds=fluent_bit_windows_builds(spec),
                      audit_log=security.AUDIT_LOG_FILE if spec.security.audit_log.enabled else None)
        if output is not None else None)


@dataclass(frozen=True)
class PolicyPlan:
    enforcement_action: str
    namespaces: tuple[str, ...]
    budget: bool                                      # worker_services_budget


def policy_plan(spec: StackSpec) -> PolicyPlan | None:
    """Gatekeeper and its constraints; None without a `policy` section (not installed)."""
    if spec.policy is None:
        return None
    return PolicyPlan(enforcement_action=spec.policy.enforcement_action, namespaces=tuple(spec.policy.namespaces),
                      budget=worker_services_budget(spec))


@dataclass(frozen=True)
class BlueGreen:
    auto_promotion: bool
    scale_down_delay_seconds: int


@dataclass(frozen=True)
class SamplesPlan:
    params: workloads.SampleParams
    node_ports: tuple[int, int]                       # the cluster's NodePort range
    load_balancer: bool                               # the Gateway on a LoadBalancer address (else NodePort 30080)
    tls_issuer: str | None                            # the ClusterIssuer of the HTTPS listener; None: HTTP only
    linux_nodes: tuple[str, ...]
    windows_nodes: tuple[str, ...]                    # the Windows nodes of the sample's build
    autoscaling: workloads.SampleAutoscaling | None = None   # with resourceMetrics: the samples' autoscalers
    blue_green: BlueGreen | None = None                # with progressiveDelivery: Rollouts take the Deployments over
    budget: bool = False                              # the Gateway's proxies and controller: worker_services_budget


def samples_plan(spec: StackSpec) -> SamplesPlan | None:
    params = sample_params(spec)
    if params is None:
        return None
    return SamplesPlan(params=params, node_ports=spec.cluster.node_ports, load_balancer=spec.load_balancer is not None,
                       budget=worker_services_budget(spec),
                       tls_issuer=tls.ISSUER_NAME if spec.tls is not None else None,
                       linux_nodes=tuple(n.name for n in spec.nodes.linux),
                       windows_nodes=tuple(n.name for n in spec.nodes.windows if n.version == SAMPLE_WINDOWS_VERSION),
                       autoscaling=sample_autoscaling(spec),
                       blue_green=BlueGreen(auto_promotion=spec.progressive_delivery.auto_promotion,
                                            scale_down_delay_seconds=spec.progressive_delivery.scale_down_delay_seconds)
                       if spec.progressive_delivery is not None else None)


def sample_autoscaling(spec: StackSpec) -> workloads.SampleAutoscaling | None:
    """The samples' autoscalers: CPU with the resource metrics API, and api-linux's request rate too with KEDA
    (customMetrics); None without resourceMetrics (no HorizontalPodAutoscaler could read anything)."""
    w = spec.workloads
    if w is None or not spec.resource_metrics.enabled:
        return None
    request_rate = None
    if spec.custom_metrics is not None:
        request_rate = workloads.RequestRate(prometheus=custom_metrics.prometheus_address(metrics.MONITORING_NAMESPACE),
                                             requests_per_second=spec.custom_metrics.requests_per_second)
    return workloads.SampleAutoscaling(win_max_replicas=w.windows_max_replicas, linux_max_replicas=w.linux_max_replicas,
                                       cpu_utilization=w.target_cpu_utilization, linux_request_rate=request_rate)


@dataclass(frozen=True)
class ResourceMetricsPlan:
    nodes: tuple[tuple[str, str], ...]                # (name, node address): what a serving certificate may name
    budget: bool                                      # metrics-server's two replicas and budget: worker_services_budget


def resource_metrics_plan(spec: StackSpec) -> ResourceMetricsPlan | None:
    """metrics-server and the kubelet serving certificate approver; None with `resourceMetrics.enabled: false`."""
    if not spec.resource_metrics.enabled:
        return None
    # The kubelet registers the node's --node-ip, on the node network (render/kubeadm.py), as its InternalIP.
    return ResourceMetricsPlan(nodes=tuple((n.name, str(n.ip)) for n in (*spec.linux_nodes, *spec.nodes.windows)
                                           if not n.lost),
                               budget=worker_services_budget(spec))


@dataclass(frozen=True)
class LoadBalancerPlan:
    addresses: tuple[str, ...]                        # MetalLB ranges, first-last or prefixes


def load_balancer_plan(spec: StackSpec) -> LoadBalancerPlan | None:
    """MetalLB and its pool; None without a `loadBalancer` section (no implementation installed)."""
    if spec.load_balancer is None:
        return None
    return LoadBalancerPlan(addresses=tuple(spec.load_balancer.addresses))


@dataclass(frozen=True)
class TlsPlan:
    issuer: dict[str, Any]                            # the ClusterIssuer (render/tls.py)
    ca: bool                                          # an internal CA: its key pair Secret from Pulumi secrets
    grants: tuple[tls.Grant, ...] = ()                # what approver-policy lets the issuer sign, per namespace
    gateway_api: bool = False                         # the Gateway API CRDs are installed (the samples' Envoy Gateway)
    budget: bool = False                              # the webhook and approver-policy: worker_services_budget


def tls_grants(spec: StackSpec) -> tuple[tls.Grant, ...]:
    """The samples' host name for the Gateway's listener (with samples), then each `tls.allow` entry."""
    grants = []
    if spec.workloads is not None and spec.workloads.sample_host is not None:
        grants.append(tls.Grant(name=f"{tls.ISSUER_NAME}-samples-gateway", namespace=workloads.GATEWAY_NAMESPACE,
                                dns_names=(spec.workloads.sample_host,), usages=tls.GATEWAY_USAGES))
    grants += [tls.Grant(name=f"{tls.ISSUER_NAME}-in-{g.namespace}", namespace=g.namespace,
                         dns_names=tuple(g.dns_names)) for g in (spec.tls.allow if spec.tls else ())]
    return tuple(grants)


def tls_plan(spec: StackSpec) -> TlsPlan | None:
    """cert-manager and its ClusterIssuer; None without a `tls` section."""
    if spec.tls is None:
        return None
    if spec.tls.acme is not None:
        return TlsPlan(issuer=tls.acme_cluster_issuer(spec.tls.acme.server, spec.tls.acme.email,
                                                      workloads.GATEWAY_NAME, workloads.GATEWAY_NAMESPACE,
                                                      spec.tls.acme.ca_certificate), ca=False,
                       grants=tls_grants(spec), gateway_api=spec.workloads is not None,
                       budget=worker_services_budget(spec))
    return TlsPlan(issuer=tls.ca_cluster_issuer(), ca=True, grants=tls_grants(spec), gateway_api=spec.workloads is not None,
                   budget=worker_services_budget(spec))


# Every namespace the program makes or installs into, or that Kubernetes and the Tigera operator make: the platform's,
# made again by the program on any cluster. Velero's schedules back up everything else (render/backup.py), and the
# recovery restore in docs/backup.md leaves out exactly these (tests/program/test_backup.py checks both against a whole run).
PLATFORM_NAMESPACES: tuple[str, ...] = tuple(sorted({
    "kube-system", "kube-public", "kube-node-lease",              # Kubernetes' own
    metrics.CALICO_NAMESPACE, network.CALICO_CHARTS_NAMESPACE, WINDOWS_SYSTEM_NAMESPACE,
    backup.NAMESPACE, custom_metrics.KEDA_NAMESPACE, load_balancer.METALLB_NAMESPACE, logging.LOGGING_NAMESPACE,
    metrics.MONITORING_NAMESPACE, policy.GATEKEEPER_NAMESPACE, progressive_delivery.NAMESPACE,
    storage.LONGHORN_NAMESPACE, tls.CERT_MANAGER_NAMESPACE, tracing.NAMESPACE, workloads.GATEWAY_NAMESPACE,
}))


@dataclass(frozen=True)
class BackupPlan:
    primary: backup.ObjectStore
    offsite: backup.ObjectStore | None
    schedule: str
    retention_days: int
    file_system_backup: bool
    offsite_retention_days: int                       # the off-site schedule's (backup.offsiteRetentionDays)
    windows_agent_builds: tuple[str, ...]             # build numbers of the Windows nodes the Windows node agent runs on
    excluded_namespaces: tuple[str, ...]              # what the schedules leave out: PLATFORM_NAMESPACES
    timezone: str                                     # the stack's: `schedule` is read in it
    recovery: backup.ObjectStore | None = None        # the replaced cluster's off-site store, read-only
    keep_default_repository_password: bool = False    # backup.keepVeleroDefaultRepositoryPassword

    @property
    def stores(self) -> dict[str, backup.ObjectStore]:
        """Every location Velero gets, by its name: this site's, then the off-site and recovery stores it has."""
        return {backup.PRIMARY: self.primary, **({backup.OFFSITE: self.offsite} if self.offsite else {}),
                **({backup.RECOVERY: self.recovery} if self.recovery else {})}


def object_store(spec: StackSpec, store: ObjectStoreSpec) -> backup.ObjectStore:
    """An S3 store of the stack (backup.primary, offsite, recoverFrom), its prefix defaulting to the cluster's name."""
    return backup.ObjectStore(endpoint=store.endpoint, bucket=store.bucket, region=store.region,
                              prefix=store.prefix or spec.cluster.name, provider=store.provider,
                              ca_certificate=store.ca_certificate,
                              object_lock=backup.ObjectLock(mode=store.object_lock.mode, days=store.object_lock.days)
                              if store.object_lock is not None else None)


def backup_plan(spec: StackSpec) -> BackupPlan | None:
    """Velero, its locations and schedules; None without a `backup` section."""
    b = spec.backup
    if b is None:
        return None
    builds = tuple(sorted({windows_release(n.version).build for n in spec.nodes.windows
                           if n.version in compat.VELERO_WINDOWS_BUILDS})) if b.file_system_backup else ()
    return BackupPlan(
        primary=object_store(spec, b.primary), offsite=object_store(spec, b.offsite) if b.offsite is not None else None,
        schedule=b.schedule, retention_days=b.retention_days, file_system_backup=b.file_system_backup,
        offsite_retention_days=b.offsite_retention_days or b.retention_days,
        windows_agent_builds=builds, excluded_namespaces=PLATFORM_NAMESPACES, timezone=spec.timezone,
        recovery=object_store(spec, b.recover_from) if b.recover_from is not None else None,
        keep_default_repository_password=b.keep_velero_default_repository_password)


@dataclass(frozen=True)
class CustomMetricsPlan:
    budget: bool                                      # KEDA's three Deployments: worker_services_budget


def custom_metrics_plan(spec: StackSpec) -> CustomMetricsPlan | None:
    """KEDA; None without a `customMetrics` section."""
    if spec.custom_metrics is None:
        return None
    return CustomMetricsPlan(budget=worker_services_budget(spec))


@dataclass(frozen=True)
class TracingPlan:
    endpoint: str
    insecure: bool
    ca_certificate: str | None


def tracing_plan(spec: StackSpec) -> TracingPlan | None:
    """The OpenTelemetry Collector; None without a `tracing` section."""
    t = spec.tracing
    if t is None:
        return None
    return TracingPlan(endpoint=t.endpoint, insecure=t.insecure, ca_certificate=t.ca_certificate)
