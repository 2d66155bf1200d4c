"""The hybrid cluster as one Pulumi program: validated configuration, then each layer on the one before."""
from collections.abc import Mapping, Sequence

import pulumi

import tuning
from components.cluster.bootstrap import CertificateExpiry, EtcdBackups, KubeadmCluster, WindowsJoins
from components.cluster.control_plane import ControlPlaneSettings
from components.cluster.kubelet_config import KubeletConfig
from components.cluster.restarts import LinuxNodeRestarts
from components.cluster.upgrade import KubernetesUpgrade
from components.guards import ClusterIdentity, MachinesGuard
from components.machines.lifecycle import MemberLocks
from components.machines.nodes import Machines
from components.platform.admission import AdmissionPolicies
from components.platform.backup import Backups
from components.platform.custom_metrics import CustomMetrics
from components.platform.load_balancer import LoadBalancer
from components.platform.network import ClusterNetwork, WindowsKubeProxy
from components.platform.network_policy import NetworkPolicies
from components.platform.observability import Observability
from components.platform.policy import Policy
from components.platform.progressive_delivery import ProgressiveDelivery
from components.platform.resource_metrics import KubeletServingApprover, MetricsServer
from components.platform.scheduling import Scheduling
from components.platform.storage import Storage
from components.platform.tls import Tls
from components.platform.tracing import Tracing
from components.platform.workloads import SampleWorkloads
from components.version_pin import KubernetesVersionPin
from config.loader import SpecError, from_pulumi_runtime, load
from config.secrets import read_secrets
from plan.cluster import cluster_plan
from plan.platform import (
    backup_plan,
    calico_params,
    custom_metrics_plan,
    load_balancer_plan,
    observability_plan,
    policy_plan,
    resource_metrics_plan,
    samples_plan,
    scheduling_plan,
    storage_params,
    tls_plan,
    tracing_plan,
    windows_kube_proxy_plan,
)
from plan.security import inline_nfs_namespaces, network_policy_plan

try:
    stack = load(from_pulumi_runtime())
except SpecError as error:
    # Nothing has been declared yet: report every problem and stop before any resource exists.
    raise pulumi.RunError(str(error)) from None

for warning in stack.warnings:
    pulumi.log.warn(f"config {warning}")

spec = stack.spec
# The program keeps what it allocates until the run ends, and the SDK's cycle check walks every dependency's ancestry:
# on a fleet where it pays, the collector's thresholds and a cycle check in constant time where no cycle is possible
# keep evaluation linear in the node count (tuning/); put back once the run's resources are registered.
tuned = tuning.install(len(spec.nodes.control_plane) + len(spec.nodes.linux) + len(spec.nodes.windows))
secrets = read_secrets(spec)

# Refuses, at preview, a change of cluster.name (a second cluster, and this one deleted); first, before anything named
# after the cluster is declared.
identity = ClusterIdentity(spec.cluster.name)
# Refuses, at preview, a version change kubeadm cannot follow (downgrades, skipped minors); nothing else is
# touched before it has accepted the plan.
version_pin = KubernetesVersionPin(f"{spec.cluster.name}-kubernetes-version", spec.cluster.kubernetes_version)
# The node side's plans (plan/cluster.py): one per node, the machines' access, the cluster's own.
planned = cluster_plan(spec)
# Refuses, at preview, machine changes that would collide with a removal or cannot be applied in one run.
machines_guard = MachinesGuard(f"{spec.cluster.name}-machines", planned)
machines = Machines(spec.cluster.name, planned.machines, secrets, guards=(identity, version_pin, machines_guard))
cluster = KubeadmCluster(f"{spec.cluster.name}-kubeadm", planned, machines, version_pin)
etcd_backups = EtcdBackups(f"{spec.cluster.name}-etcd-backup", planned, machines, cluster.node_ready, secrets.etcd_offsite)
network = ClusterNetwork(f"{spec.cluster.name}-network", calico_params(spec), cluster.provider)
windows = WindowsJoins(f"{spec.cluster.name}-kubeadm-windows", planned, machines, cluster.access,
                       after=network.windows_prerequisites, lanes=cluster.session_lane_of,
                       lane_steps=cluster.session_steps)
node_ready = {**cluster.node_ready, **windows.node_ready}
# What the Linux workloads wait for: the Linux workers, Ready (tests/program/test_program.py checks every one).
linux_ready = [node_ready[n.name] for n in spec.nodes.linux]
windows_ready = [node_ready[n.name] for n in spec.nodes.windows]
# The approver of kubelet serving certificates (resourceMetrics), before anything restarts a kubelet: the upgrade, the
# restarts and the kubelet-serving steps below.
resource_metrics = resource_metrics_plan(spec)
approver_of: Mapping[str, pulumi.Resource] = {}
if resource_metrics is not None:
    approver_of = KubeletServingApprover(f"{spec.cluster.name}-kubelet-serving-approver", resource_metrics,
                                         cluster.provider, machines, node_ready).by_node
approver = list(approver_of.values())
upgrade = KubernetesUpgrade(f"{spec.cluster.name}-upgrade", planned, machines, cluster.access, node_ready, after=approver)
# The version every node reached: it moves only once the upgrade chain has succeeded, so after a failed
# upgrade the next preview measures a version change from what the nodes still run (its check is the pin's).
upgraded = KubernetesVersionPin(f"{spec.cluster.name}-kubernetes-version-upgraded", spec.cluster.kubernetes_version,
                                opts=pulumi.ResourceOptions(depends_on=upgrade.done))
# VM settings that take effect at a restart, applied node by node once no upgrade is draining a node.
restarts = LinuxNodeRestarts(f"{spec.cluster.name}-restarts", planned, machines, cluster.access,
                             machines.proxmox_connections, after=upgrade.done)
certificates = CertificateExpiry(f"{spec.cluster.name}-certificates", planned, machines, cluster.access, after=upgrade.done,
                                 provider_credential=cluster.provider_credential_expiry)
windows_kube_proxy = WindowsKubeProxy(f"{spec.cluster.name}-windows-kube-proxy", windows_kube_proxy_plan(spec),
                                      cluster.provider, network,
                                      windows_nodes_ready=[*windows.node_ready.values(), *upgrade.done])
scheduling = Scheduling(f"{spec.cluster.name}-scheduling", scheduling_plan(spec), cluster.provider, machines.nodes, node_ready,
                        machines.instances)
# Removing a control-plane member without `retire` is refused before any of its drain, reset or deregistration runs,
# whatever `--target` or `--exclude` leave out (components/machines/lifecycle.py MemberLocks).
MemberLocks(f"{spec.cluster.name}-member-locks", [n.name for n in spec.nodes.control_plane], spec.nodes.protected,
            {m.node.name: [m.vm, node_ready[m.node.name], scheduling.node_labels[m.node.name],
                           *[r for r in (approver_of.get(m.node.name), etcd_backups.schedules.get(m.node.name)) if r]]
             for m in machines.linux_nodes if m.role == "control-plane"})
# The kubelets' configuration (serving certificates from the cluster CA with resourceMetrics, the hardening), rolled onto
# the nodes that joined before in waves after the upgrade's and the restarts' (each restarts kubelets); metrics-server
# once every kubelet serves a certificate it can verify.
kubelets = KubeletConfig(f"{spec.cluster.name}-kubelet-config", f"{spec.cluster.name}-kubelet-serving", planned, machines,
                         after=[*node_ready.values(), *restarts.done, *approver])
# The control plane's settings (security): encryption key, the API servers' files and flags, one control-plane node at a
# time, once no rolling operation of this run takes a node's components down (a certificate renewal round included).
ControlPlaneSettings(f"{spec.cluster.name}-control-plane", planned.control_plane, machines, cluster.init,
                     after=[*upgrade.done, *restarts.done, *kubelets.done, *cluster.certificate_renewal])
metrics_server: Sequence[pulumi.Resource] = ()
if resource_metrics is not None:
    metrics_server = [MetricsServer(f"{spec.cluster.name}-metrics-server", resource_metrics, cluster.provider,
                                    kubelets.done).release]
# What pods may mount (security.podSecurity.inlineNfsNamespaces): no inline NFS volume elsewhere.
AdmissionPolicies(f"{spec.cluster.name}-admission", inline_nfs_namespaces(spec), cluster.provider)
# What pods may reach (security.networkPolicy): the infrastructure tier, and the application namespaces' ingress.
if (network_policies := network_policy_plan(spec)) is not None:
    NetworkPolicies(f"{spec.cluster.name}-network-policy", network_policies, cluster.provider,
                    [network.crds, network.installation], scheduling.namespaces)
# The optional subsystems: each plan is None when its section is left out, and then nothing is declared for it.
storage_classes: Mapping[str, pulumi.Resource] = {}
if (storage := storage_params(spec)) is not None:
    storage_classes = Storage(f"{spec.cluster.name}-storage", storage, cluster.provider, secrets.smb_credentials,
            worker_labels=[scheduling.node_labels[n.name] for n in spec.nodes.linux], linux_ready=linux_ready,
            windows_ready=windows_ready).classes
metrics_stack: Sequence[pulumi.Resource] = ()
if (observability := observability_plan(spec)) is not None:
    monitoring = Observability(f"{spec.cluster.name}-observability", observability, cluster.provider, scheduling,
                               secrets.grafana_admin_password, linux_ready, windows_ready, storage_classes)
    metrics_stack = [monitoring.metrics_stack] if monitoring.metrics_stack is not None else []
autoscaling_ready: Sequence[pulumi.Resource] = ()
if (custom_metrics := custom_metrics_plan(spec)) is not None:
    # After metrics-server (KEDA's cpu trigger) and Prometheus (its prometheus trigger, and the PodMonitor CRD).
    autoscaling_ready = [*CustomMetrics(f"{spec.cluster.name}-custom-metrics", custom_metrics, cluster.provider,
                                        [*linux_ready, *metrics_server, *metrics_stack]).ready, *metrics_stack]
policy_declared: Sequence[pulumi.Resource] = ()
if (policy_spec := policy_plan(spec)) is not None:
    policy = Policy(f"{spec.cluster.name}-policy", policy_spec, cluster.provider,
                    [scheduling.namespaces[n] for n in policy_spec.namespaces if n in scheduling.namespaces], linux_ready)
    policy_declared = policy.declared
load_balancer_ready: Sequence[pulumi.Resource] = ()
if (load_balancer := load_balancer_plan(spec)) is not None:
    load_balancer_ready = LoadBalancer(f"{spec.cluster.name}-load-balancer", load_balancer, cluster.provider,
                                       linux_ready).ready
# The samples and their Gateway API CRDs first: cert-manager's Gateway API support waits for the CRDs.
samples = None
if (samples_spec := samples_plan(spec)) is not None:
    samples = SampleWorkloads(f"{spec.cluster.name}-samples", samples_spec, cluster.provider)
issuer: Sequence[pulumi.Resource] = ()
if (tls := tls_plan(spec)) is not None:
    issuer = [Tls(f"{spec.cluster.name}-tls", tls, cluster.provider, secrets.tls_ca, linux_ready, cluster.access,
                  gateway_api_crds=[samples.gateway_api_crds] if samples is not None and tls.gateway_api else []).issuer]
progressive_delivery_ready: Sequence[pulumi.Resource] = ()
if spec.progressive_delivery is not None:
    progressive_delivery_ready = ProgressiveDelivery(f"{spec.cluster.name}-progressive-delivery", cluster.provider,
                                                     linux_ready).ready
# The samples send to the collector once it runs; exporters retry until then, so they do not wait for it.
if (tracing := tracing_plan(spec)) is not None:
    Tracing(f"{spec.cluster.name}-tracing", tracing, cluster.provider, linux_ready)
if (backups := backup_plan(spec)) is not None:
    Backups(f"{spec.cluster.name}-backup", backups, cluster.provider, secrets.backup_primary, secrets.backup_offsite,
            linux_ready, windows_ready, cluster.access, secrets.velero_repository_password)
if samples is not None:
    samples.declare(scheduling, node_ready, windows_networking=windows_kube_proxy.resources, access=cluster.access,
                    policy_declared=policy_declared, load_balancer=load_balancer_ready, issuer=issuer,
                    autoscaling_ready=autoscaling_ready, progressive_delivery_ready=progressive_delivery_ready)

pulumi.export("apiServer", cluster.api_server)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("nodes", machines.nodes)
pulumi.export("certificateExpiry", certificates.expiry)
pulumi.export("kubernetesVersion", upgraded.kubernetesVersion)
tuning.restore_when_registered(tuned)
