"""The hardening's renderer inputs (config `security`): the control plane's and the kubelets' settings, the namespaces
Pod Security exempts or lets run privileged (each with its reason), and what the network policies protect and let
through (each allowed flow with its reason). Pure: no Pulumi."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from config.endpoints import url_host_port
from config.model import StackSpec
from render import (
    backup,
    kubelet_config,
    load_balancer,
    logging,
    metrics,
    network,
    network_policy,
    security,
    storage,
    tracing,
    workloads,
)
from vocab.cluster import WINDOWS_SYSTEM_NAMESPACE

# Where the kubeadm-managed control plane's own pods run: exempt, because the mirror pods of its static pods (host
# network, hostPath) are not exempt from Pod Security otherwise (render/security.py), and kube-proxy's DaemonSets
# (privileged, host network: kubeadm phases/addons/proxy; the Windows one HostProcess, render/network.py) and the CSI
# node plugins (privileged, or HostProcess on Windows: render/storage.py) run there too.
KUBE_SYSTEM = "kube-system"
_EXEMPT = "exempt (AdmissionConfiguration)"


@dataclass(frozen=True)
class NamespaceReason:
    name: str
    how: str       # exempt, or labelled privileged, and when
    reason: str


def inline_nfs_namespaces(spec: StackSpec) -> tuple[str, ...]:
    """Where pods may mount NFS inline: only the namespaces the stack names (nothing of the program's own needs it:
    the etcd snapshots go off-site from the control-plane nodes, render/etcd_backup.py)."""
    return tuple(sorted(set(spec.security.pod_security.inline_nfs_namespaces)))


def windows_system_namespace(spec: StackSpec) -> bool:
    """Whether the privileged windows-system namespace exists: only for what runs there, windows_exporter (Windows
    nodes and observability.metrics); an idle privileged namespace is only a place to run what Pod Security refuses."""
    return bool(spec.nodes.windows) and spec.observability is not None and spec.observability.metrics is not None


def pod_security_exemptions(spec: StackSpec) -> tuple[NamespaceReason, ...]:
    """The namespaces the API server's Pod Security configuration exempts altogether."""
    exempt = [
        NamespaceReason(KUBE_SYSTEM, _EXEMPT,
                        "the control plane's static pods (their mirror pods are not exempt otherwise: "
                        "pod-security-admission admission.go has no mirror-pod case); kube-proxy, Linux (privileged, "
                        "host network) and Windows (HostProcess); the CSI node plugins, Linux (privileged) and "
                        "Windows (HostProcess)"),
        # Created by the tigera-operator Helm release without labels (the chart does not create it: its templates use
        # {{.Release.Namespace}}); the operator itself runs with the host network (02-tigera-operator.yaml).
        NamespaceReason(network.CALICO_CHARTS_NAMESPACE, _EXEMPT,
                        "the Tigera operator runs with the host network; Helm creates the namespace, so it carries no "
                        "labels"),
    ]
    exempt += [NamespaceReason(name, "exempt (security.podSecurity.exemptNamespaces)", "the stack says so (synth warns)")
               for name in spec.security.pod_security.exempt_namespaces]
    return tuple(exempt)


def privileged_namespaces(spec: StackSpec) -> tuple[NamespaceReason, ...]:
    """The namespaces labelled Pod Security `privileged`, by this program or by the Tigera operator: the only ones
    whose pods may use the host's network, processes or files besides the exempt ones."""
    found = [NamespaceReason(metrics.CALICO_NAMESPACE, "labelled privileged by the Tigera operator",
                             "calico-node, Linux and Windows (HostProcess), with the host network (tigera/operator "
                             "pkg/render/namespaces.go, PSSPrivileged; the operator sets enforce only, so the "
                             "cluster's restricted audit and warnings apply there too)")]
    if windows_system_namespace(spec):
        found.append(NamespaceReason(WINDOWS_SYSTEM_NAMESPACE, "labelled privileged (Windows nodes and "
                                                               "`observability.metrics`)",
                                     "windows_exporter runs as a HostProcess container (render/metrics.py)"))
    if spec.storage is not None and spec.storage.longhorn is not None:
        found.append(NamespaceReason(storage.LONGHORN_NAMESPACE, "labelled privileged (`storage.longhorn`)",
                                     "Longhorn's manager and engine use the nodes' block devices"))
    if spec.load_balancer is not None:
        found.append(NamespaceReason(load_balancer.METALLB_NAMESPACE, "labelled privileged (`loadBalancer`)",
                                     "MetalLB's speakers answer ARP with the host network and NET_RAW"))
    observability = spec.observability
    if observability is not None and observability.metrics is not None:
        found.append(NamespaceReason(metrics.MONITORING_NAMESPACE, "labelled privileged (`observability.metrics`)",
                                     "node-exporter reads /proc, /sys and / with the host's network and PID "
                                     "namespace"))
    if observability is not None and observability.logs is not None:
        found.append(NamespaceReason(logging.LOGGING_NAMESPACE, "labelled privileged (`observability.logs`)",
                                     "Fluent Bit reads the nodes' log files through hostPath, on Windows too (a "
                                     "process-isolated container)"))
    if spec.backup is not None:
        found.append(NamespaceReason(backup.NAMESPACE, "labelled privileged (`backup`)",
                                     "Velero's node agents read pod volumes through the kubelet's directories"))
    found += [NamespaceReason(n.name, f"labelled privileged (`namespaces[{i}].podSecurity`)",
                              "an application namespace the stack declares privileged (synth warns)")
              for i, n in enumerate(spec.namespaces) if n.pod_security == "privileged"]
    return tuple(found)


def control_plane_hardening(spec: StackSpec) -> security.ControlPlaneHardening:
    s = spec.security
    audit = s.audit_log
    return security.ControlPlaneHardening(
        pod_security=security.PodSecurityDefaults(
            enforce=s.pod_security.enforce, audit=s.pod_security.audit, warn=s.pod_security.warn,
            exempt_namespaces=tuple(n.name for n in pod_security_exemptions(spec))),
        audit_log=security.AuditLog(max_age_days=audit.max_age_days, max_backups=audit.max_backups,
                                    max_size_mb=audit.max_size_mb) if audit.enabled else None,
        # Only kubelets with serving certificates from the cluster CA can be verified (resourceMetrics); with
        # self-signed ones `kubectl logs/exec` would fail on every node.
        verify_kubelets=spec.resource_metrics.enabled,
    )


def kubelet_hardening(spec: StackSpec) -> security.KubeletHardening:
    return security.KubeletHardening(seccomp_default=spec.security.seccomp_default,
                                     pod_pids_limit=spec.security.pod_pids_limit)


def kubelet_config_settings(spec: StackSpec) -> kubelet_config.KubeletSettings:
    """Every key this program manages in the cluster's kubelet configuration, as the stack wants it: serverTLSBootstrap
    (resourceMetrics) and the hardening."""
    values: dict[str, object] = dict(security.kubelet_settings(kubelet_hardening(spec)))
    if spec.resource_metrics.enabled:
        values["serverTLSBootstrap"] = True
    return kubelet_config.kubelet_settings(values)


def cluster_hardening_fields(spec: StackSpec) -> dict[str, object]:
    """The hardening fields of kubeadm.ClusterParams (plan.nodes.cluster_params)."""
    hardening = control_plane_hardening(spec)
    return {
        "hardening_args": tuple(security.api_server_args(hardening).items()),
        "api_server_volumes": security.api_server_volumes(hardening),
        "controller_manager_args": tuple(security.controller_manager_args().items()),
        "scheduler_args": tuple(security.scheduler_args().items()),
        "kubelet_settings": tuple((key, tuple(value) if isinstance(value, list) else value)
                                  for key, value in security.kubelet_settings(kubelet_hardening(spec)).items()),
    }


def encryption_key(spec: StackSpec) -> str:
    """The key the cluster's Secrets are to be written with: `key-<rotation label>`, `key-initial` before the first
    rotation, or `identity` with secretsEncryption off (plain text: render/scripts/lib/encryption.sh)."""
    encryption = spec.security.secrets_encryption
    if not encryption.enabled:
        return "identity"
    return f"key-{encryption.key_rotation}" if encryption.key_rotation else "key-initial"


# --- network policy -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AllowedFlow:
    """Egress that the infrastructure protection lets through for one namespace (optionally only some of its pods)."""
    name: str                       # the policy's name, a DNS label
    namespace: str
    pod_selector: str | None        # a Calico selector on the pod's labels, or None for every pod of the namespace
    nets: tuple[str, ...]           # CIDRs
    protocol: str                   # "TCP" | "UDP"
    ports: tuple[int, ...]
    reason: str


@dataclass(frozen=True)
class NetworkPolicyPlan:
    protected_networks: tuple[str, ...]      # no pod reaches these, except through AllowedFlow
    node_networks: tuple[str, ...]           # where the nodes are: their admin ports are closed to pods
    node_admin_ports: tuple[int, ...]
    allowed: tuple[AllowedFlow, ...]
    application_namespaces: tuple[str, ...]  # default-deny ingress
    ingress_sources: tuple[tuple[str, str], ...]   # (namespace, reason) whose pods may reach application pods

    def params(self) -> network_policy.NetworkPolicyParams:
        """The renderer's input: the plan without its reasons."""
        return network_policy.NetworkPolicyParams(
            protected_networks=self.protected_networks, node_networks=self.node_networks,
            node_admin_ports=self.node_admin_ports,
            allowed=tuple(network_policy.Flow(name=f.name, namespace=f.namespace, pod_selector=f.pod_selector,
                                              nets=f.nets, protocol=f.protocol, ports=f.ports) for f in self.allowed),
            application_namespaces=self.application_namespaces,
            ingress_sources=tuple(namespace for namespace, _ in self.ingress_sources))


# Administrative ports of a node: SSH, etcd's client and peer ports, RDP and WinRM (HTTP and HTTPS). A pod has no
# business there on any host of the node network; the API server (6443), the kubelet (10250, authenticated), the VXLAN
# and the NodePorts stay open.
NODE_ADMIN_PORTS = (22, 2379, 2380, 3389, 5985, 5986)


def pod_guard_targets(spec: StackSpec) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """What every node's own guard drops (Linux: nftables; Windows: a firewall Block rule): TCP from the pod network to
    the administrative ports, through any of the node's addresses (its VXLAN tunnel address included, which the Calico
    tier cannot name); nothing with networkPolicy off."""
    if not spec.security.network_policy.enabled:
        return (), ()
    return (str(spec.cluster.pod_cidr),), NODE_ADMIN_PORTS


def pod_guard(spec: StackSpec) -> str:
    """A Linux node's nftables rules for pod_guard_targets; "" with networkPolicy off."""
    sources, ports = pod_guard_targets(spec)
    return security.pod_guard_rules(sources, ports) if sources else ""


def _literal_address(host: str) -> str | None:
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        return None


def network_policy_plan(spec: StackSpec) -> NetworkPolicyPlan | None:
    """The infrastructure protection and the application namespaces' ingress; None with networkPolicy off."""
    if not spec.security.network_policy.enabled:
        return None
    networks: list[ipaddress.IPv4Network] = []
    for vlan in (spec.network.management, spec.network.storage):
        if vlan is not None:
            networks.append(vlan.cidr)
    networks += spec.security.network_policy.protected_networks
    hosts = [n.address for n in spec.proxmox.nodes] + [h.address for h in spec.hyperv.hosts]
    for server in _storage_servers(spec):
        address = _literal_address(server)
        if address is not None:
            hosts.append(ipaddress.IPv4Address(address))
    bastion = spec.access.bastion
    if bastion is not None and _literal_address(bastion.host) is not None:
        hosts.append(ipaddress.IPv4Address(bastion.host))
    protected = _covering(networks, hosts)
    return NetworkPolicyPlan(
        # The whole node network, not each node: a node added later is covered without a change to the policy, and
        # no host of that network is a pod's business on these ports either.
        protected_networks=tuple(protected), node_networks=(str(spec.network.nodes.cidr),),
        node_admin_ports=NODE_ADMIN_PORTS,
        allowed=tuple(_allowed_flows(spec, protected)),
        application_namespaces=tuple(n.name for n in spec.namespaces),
        ingress_sources=tuple(_ingress_sources(spec)))


def _storage_servers(spec: StackSpec) -> list[str]:
    servers = []
    if spec.storage is not None and spec.storage.nfs is not None:
        servers.append(spec.storage.nfs.server)
    if spec.storage is not None and spec.storage.smb is not None:
        servers.append(spec.storage.smb.source.lstrip("\\").split("\\", 1)[0])
    if spec.etcd_backup is not None:
        servers.append(spec.etcd_backup.nfs_server)
    return servers


def _covering(networks: list[ipaddress.IPv4Network], hosts: list[ipaddress.IPv4Address]) -> list[str]:
    """The networks, and each host not inside one of them as a /32, without repeats, in address order."""
    found = {str(n) for n in networks}
    for host in hosts:
        if not any(host in n for n in networks):
            found.add(f"{host}/32")
    return sorted(found, key=lambda cidr: (ipaddress.IPv4Network(cidr).network_address, cidr))


def _destination(host: str, protected: list[str]) -> tuple[str, ...] | None:
    """Where a flow to `host` goes among the protected networks: its address, when it is written as one and is
    protected; every protected network, for a DNS name (Calico's open-source policy matches addresses, not names, so
    the port is what narrows the flow); None when it is an address outside them (nothing to let through)."""
    address = _literal_address(host)
    if address is None:
        return tuple(protected)
    if any(ipaddress.IPv4Address(address) in ipaddress.IPv4Network(n) for n in protected):
        return (f"{address}/32",)
    return None


def _flow(name: str, namespace: str, selector: str | None, host: str, protocol: str, ports: tuple[int, ...],
          reason: str, protected: list[str]) -> list[AllowedFlow]:
    nets = _destination(host, protected)
    if nets is None or not protected:
        return []
    return [AllowedFlow(name=name, namespace=namespace, pod_selector=selector, nets=nets, protocol=protocol,
                        ports=ports, reason=reason)]


def _allowed_flows(spec: StackSpec, protected: list[str]) -> list[AllowedFlow]:
    flows: list[AllowedFlow] = []
    dns = tuple(str(s) for s in spec.network.dns_servers)
    for protocol in ("UDP", "TCP"):
        for server in dns:
            flows += _flow(f"cluster-dns-{protocol.lower()}", KUBE_SYSTEM, "k8s-app == 'kube-dns'", server, protocol,
                           (53,), "CoreDNS forwards names outside the cluster to the site's DNS servers", protected)
    # The same policy name for every server of a protocol: merge their destinations.
    flows = _merged(flows)
    if spec.storage is not None:
        if spec.storage.nfs is not None:
            flows += _flow("csi-nfs", KUBE_SYSTEM, None, spec.storage.nfs.server, "TCP", (111, 2049),
                           "the NFS CSI controller mounts the export to make each volume's directory", protected)
        if spec.storage.smb is not None:
            flows += _flow("csi-smb", KUBE_SYSTEM, None, spec.storage.smb.source.lstrip("\\").split("\\", 1)[0], "TCP",
                           (445,), "the SMB CSI controller mounts the share to make each volume's directory", protected)
    logs = spec.observability.logs if spec.observability is not None else None
    if logs is not None:
        flows += _flow("log-output", logging.LOGGING_NAMESPACE, None, logs.host, "TCP", (logs.port,),
                       f"Fluent Bit ships the nodes' logs to the {logs.kind} server", protected)
    if spec.backup is not None:
        stores = [("backup-primary", spec.backup.primary), ("backup-offsite", spec.backup.offsite),
                  ("backup-recovery", spec.backup.recover_from)]
        for name, store in stores:
            if store is not None:
                host, port = url_host_port(store.endpoint)
                flows += _flow(name, backup.NAMESPACE, None, host, "TCP", (port,),
                               "Velero writes to the S3 store", protected)
    if spec.tracing is not None:
        host, _, trace_port = spec.tracing.endpoint.rpartition(":")
        flows += _flow("trace-export", tracing.NAMESPACE, None, host, "TCP", (int(trace_port),),
                       "the OpenTelemetry Collector exports traces to the backend", protected)
    if spec.tls is not None and spec.tls.acme is not None:
        host, port = url_host_port(spec.tls.acme.server)
        flows += _flow("acme", "cert-manager", None, host, "TCP", (port,),
                       "cert-manager orders certificates from the ACME server", protected)
    return flows


def _merged(flows: list[AllowedFlow]) -> list[AllowedFlow]:
    by_name: dict[str, AllowedFlow] = {}
    for flow in flows:
        known = by_name.get(flow.name)
        by_name[flow.name] = flow if known is None else AllowedFlow(
            name=flow.name, namespace=flow.namespace, pod_selector=flow.pod_selector,
            nets=tuple(dict.fromkeys((*known.nets, *flow.nets))), protocol=flow.protocol, ports=flow.ports,
            reason=flow.reason)
    return list(by_name.values())


def _ingress_sources(spec: StackSpec) -> list[tuple[str, str]]:
    sources = []
    if spec.workloads is not None:
        sources.append((workloads.GATEWAY_NAMESPACE, "the samples' Gateway proxies forward requests to the pods"))
    if spec.observability is not None and spec.observability.metrics is not None:
        sources.append((metrics.MONITORING_NAMESPACE, "Prometheus scrapes the pods' metrics"))
    return sources
