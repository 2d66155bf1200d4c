"""The CIS Kubernetes Benchmark (v1.12, as kube-bench runs it) decided for a stack's rendered cluster, offline.

    python -m tools.cis --stack hk-prod                  # the table, one line per check
    python -m tools.cis --stack hk-prod --markdown       # the table docs/security.md carries
    python -m tools.cis --write                          # rewrite that table in docs/security.md (hk-prod)
    python -m tools.cis --benchmark DIR                  # kube-bench's cfg/cis-1.12 elsewhere

Each check of kube-bench's definitions (../shared/benchmarks/kube-bench/cis-1.12, read, not copied) runs as kube-bench
runs it (tools/kube_bench.py) against what a node of this cluster holds: the processes' command lines as kubeadm writes
them (kubeadm's defaults, KUBEADM_DEFAULTS below, plus the stack's ClusterConfiguration from render/kubeadm.py), the
KubeletConfiguration a node downloads (kubeadm's defaults plus render/kubeadm.py's), and the files' modes and owners as
kubeadm, the packages and the node scripts leave them (NODE_FILES). A check kube-bench passes on every node it
applies to is `pass`; any other needs the project's recorded position (POSITIONS): `n/a` with the reason it does not
apply here, or `manual` with what the project does instead; a check with neither is `fail`. Checks kube-bench cannot
run offline (those that query the API with kubectl) and those it marks manual take their position too.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from config.loader import from_stack_file, load
from config.model import StackSpec
from plan.nodes import cluster_params, node_params
from plan.security import encryption_key, pod_security_exemptions, privileged_namespaces
from render import kubeadm, security
from tools import kube_bench
from tools.synth import find_stack_file

ROOT = Path(__file__).resolve().parent.parent
# Read from the workspace, as the benchmark's README asks: its text is not copied into this project.
BENCHMARK_DIR = ROOT.parent / "shared" / "benchmarks" / "kube-bench"
TARGETS = ("master", "etcd", "controlplane", "node", "policies")

# What kubeadm 1.36 writes into the static Pod manifests besides the ClusterConfiguration's extraArgs, which replace
# a default of the same name (cmd/kubeadm/app/phases/controlplane/manifests.go getAPIServerCommand,
# getControllerManagerCommand, getSchedulerCommand; phases/etcd/local.go getEtcdCommand; util/arguments.go
# ArgumentsToCommand sorts the result by name). Read at kubernetes/kubernetes 898b9f800267 (master after
# v1.36.0-alpha.1, the tests manifests_test.go and utils_test.go) and ad7cb45bb24a; the etcd flags after
# kubernetes/kubernetes#135701 (kubeadm 1.36: --feature-gates=InitialCorruptCheck=true, --watch-progress-notify-
# interval). NODE_IP stands for the node's address.
KUBEADM_DEFAULTS: dict[str, dict[str, str]] = {
    "kube-apiserver": {
        "advertise-address": "NODE_IP", "allow-privileged": "true", "authorization-mode": "Node,RBAC",
        "client-ca-file": "/etc/kubernetes/pki/ca.crt", "enable-admission-plugins": "NodeRestriction",
        "enable-bootstrap-token-auth": "true", "etcd-cafile": "/etc/kubernetes/pki/etcd/ca.crt",
        "etcd-certfile": "/etc/kubernetes/pki/apiserver-etcd-client.crt",
        "etcd-keyfile": "/etc/kubernetes/pki/apiserver-etcd-client.key", "etcd-servers": "https://127.0.0.1:2379",
        "kubelet-client-certificate": "/etc/kubernetes/pki/apiserver-kubelet-client.crt",
        "kubelet-client-key": "/etc/kubernetes/pki/apiserver-kubelet-client.key",
        "kubelet-preferred-address-types": "InternalIP,ExternalIP,Hostname",
        "proxy-client-cert-file": "/etc/kubernetes/pki/front-proxy-client.crt",
        "proxy-client-key-file": "/etc/kubernetes/pki/front-proxy-client.key",
        "requestheader-allowed-names": "front-proxy-client",
        "requestheader-client-ca-file": "/etc/kubernetes/pki/front-proxy-ca.crt",
        "requestheader-extra-headers-prefix": "X-Remote-Extra-", "requestheader-group-headers": "X-Remote-Group",
        "requestheader-username-headers": "X-Remote-User", "secure-port": "6443",
        "service-account-issuer": "https://kubernetes.default.svc.cluster.local",
        "service-account-key-file": "/etc/kubernetes/pki/sa.pub",
        "service-account-signing-key-file": "/etc/kubernetes/pki/sa.key", "service-cluster-ip-range": "SERVICE_CIDR",
        "tls-cert-file": "/etc/kubernetes/pki/apiserver.crt", "tls-private-key-file": "/etc/kubernetes/pki/apiserver.key",
    },
    "kube-controller-manager": {
        "allocate-node-cidrs": "true", "authentication-kubeconfig": "/etc/kubernetes/controller-manager.conf",
        "authorization-kubeconfig": "/etc/kubernetes/controller-manager.conf", "bind-address": "127.0.0.1",
        "client-ca-file": "/etc/kubernetes/pki/ca.crt", "cluster-cidr": "POD_CIDR", "cluster-name": "CLUSTER",
        "cluster-signing-cert-file": "/etc/kubernetes/pki/ca.crt",
        "cluster-signing-key-file": "/etc/kubernetes/pki/ca.key", "controllers": "*,bootstrapsigner,tokencleaner",
        "kubeconfig": "/etc/kubernetes/controller-manager.conf", "leader-elect": "true",
        "requestheader-client-ca-file": "/etc/kubernetes/pki/front-proxy-ca.crt",
        "root-ca-file": "/etc/kubernetes/pki/ca.crt", "service-account-private-key-file": "/etc/kubernetes/pki/sa.key",
        "service-cluster-ip-range": "SERVICE_CIDR", "use-service-account-credentials": "true",
    },
    "kube-scheduler": {
        "authentication-kubeconfig": "/etc/kubernetes/scheduler.conf",
        "authorization-kubeconfig": "/etc/kubernetes/scheduler.conf", "bind-address": "127.0.0.1",
        "kubeconfig": "/etc/kubernetes/scheduler.conf", "leader-elect": "true",
    },
    "etcd": {
        "advertise-client-urls": "https://NODE_IP:2379", "cert-file": "/etc/kubernetes/pki/etcd/server.crt",
        "client-cert-auth": "true", "data-dir": "/var/lib/etcd", "feature-gates": "InitialCorruptCheck=true",
        "initial-advertise-peer-urls": "https://NODE_IP:2380", "initial-cluster": "NODE=https://NODE_IP:2380",
        "key-file": "/etc/kubernetes/pki/etcd/server.key",
        "listen-client-urls": "https://127.0.0.1:2379,https://NODE_IP:2379", "listen-metrics-urls": "http://127.0.0.1:2381",
        "listen-peer-urls": "https://NODE_IP:2380", "name": "NODE", "peer-cert-file": "/etc/kubernetes/pki/etcd/peer.crt",
        "peer-client-cert-auth": "true", "peer-key-file": "/etc/kubernetes/pki/etcd/peer.key",
        "peer-trusted-ca-file": "/etc/kubernetes/pki/etcd/ca.crt", "snapshot-count": "10000",
        "trusted-ca-file": "/etc/kubernetes/pki/etcd/ca.crt", "watch-progress-notify-interval": "5s",
    },
}
# The kubelet as its unit starts it: the packaged drop-in 10-kubeadm.conf (kubernetes/release cmd/krel/templates/latest/
# kubeadm/10-kubeadm.conf: --bootstrap-kubeconfig, --kubeconfig, --config) and kubeadm-flags.env (the node's
# kubeletExtraArgs: render/kubeadm.py node-ip, node-labels).
KUBELET_FLAGS = ("--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf",
                 "--config=/var/lib/kubelet/config.yaml")
# kube-proxy's DaemonSet command (cmd/kubeadm/app/phases/addons/proxy/manifests.go); its configuration and kubeconfig
# come from the kube-proxy ConfigMap mounted into the Pod: no file on the host.
KUBE_PROXY = "/usr/local/bin/kube-proxy --config=/var/lib/kube-proxy/config.conf --hostname-override=NODE"
# What kubeadm's KubeletConfiguration defaulting adds on each node (cmd/kubeadm/app/componentconfigs/kubelet.go
# Default(); rotateCertificates is forced on).
KUBEADM_KUBELET_DEFAULTS: dict[str, Any] = {
    "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                       "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"}},
    "authorization": {"mode": "Webhook"}, "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
    "rotateCertificates": True, "staticPodPath": "/etc/kubernetes/manifests",
}

ROOT_OWNER = "root:root"


@dataclass(frozen=True)
class FileFacts:
    mode: str
    owner: str = ROOT_OWNER
    content: str = ""


@dataclass
class NodeModel:
    name: str
    role: str                                   # "control-plane" | "worker"
    processes: list[str]                        # `ps -ef` command lines
    files: dict[str, FileFacts] = field(default_factory=dict)


# The files a node holds that the checks read, with their modes and owners (the source of each after it).
_PKI_CERTS = ("ca", "apiserver", "apiserver-kubelet-client", "apiserver-etcd-client", "front-proxy-ca",
              "front-proxy-client", "etcd/ca", "etcd/server", "etcd/peer", "etcd/healthcheck-client")


def _control_plane_files(first: bool, encryption_key: str) -> dict[str, FileFacts]:
    files = {
        # WriteStaticPodToDisk: os.WriteFile(..., 0600) (cmd/kubeadm/app/util/staticpod/utils.go); kube-vip's by
        # render/scripts/lib/put-file.sh, 0600.
        **{f"/etc/kubernetes/manifests/{c}.yaml": FileFacts("600")
           for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kube-vip")},
        # kubeconfig files: clientcmd.WriteToFile, 0600 (client-go tools/clientcmd/loader.go).
        **{f"/etc/kubernetes/{c}.conf": FileFacts("600") for c in ("admin", "controller-manager", "scheduler")},
        "/etc/kubernetes/pki": FileFacts("755"), "/etc/kubernetes/pki/etcd": FileFacts("755"),
        # certutil.WriteCert 0644, keyutil.WriteKey 0600 (client-go util/cert/io.go, util/keyutil/key.go); sa.pub is
        # written with WriteKey too.
        **{f"/etc/kubernetes/pki/{c}.crt": FileFacts("644") for c in _PKI_CERTS},
        **{f"/etc/kubernetes/pki/{c}.key": FileFacts("600") for c in (*_PKI_CERTS, "sa")},
        "/etc/kubernetes/pki/sa.pub": FileFacts("600"),
        # CreateDataDirectory 0700 (cmd/kubeadm/app/util/etcd/etcddata.go); owner: lib/control-plane-files.sh.
        "/var/lib/etcd": FileFacts("700", "etcd:etcd"),
        # render/scripts/lib/encryption.sh: the provider that writes comes first, identity (plain text) when relaxed.
        security.ENCRYPTION_FILE: FileFacts("600", content="    providers:\n      - {}:\n".format(
            "identity" if encryption_key == "identity" else "secretbox")),
    }
    if first:
        files["/etc/kubernetes/super-admin.conf"] = FileFacts("600")
    return files


def _node_files(kubelet_config: str) -> dict[str, FileFacts]:
    return {
        # The unit and its drop-in, 0600 before every kubelet start (render/scripts/prepare-k8s-node.sh
        # harden_kubelet_files); /lib is /usr/lib on Ubuntu 22.04 and Rocky 9 (merged /usr).
        "/lib/systemd/system/kubelet.service": FileFacts("600"),
        "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf": FileFacts("600"),
        "/etc/kubernetes/kubelet.conf": FileFacts("600"),
        "/etc/kubernetes/pki/ca.crt": FileFacts("644"),
        "/var/lib/kubelet/config.yaml": FileFacts("600", content=kubelet_config),
    }


def _command(binary: str, flags: dict[str, str]) -> str:
    return " ".join([binary, *(f"--{name}={value}" for name, value in sorted(flags.items()))])


def _args(section: dict[str, Any]) -> dict[str, str]:
    args = section.get("extraArgs", [])
    return dict(args) if isinstance(args, dict) else {a["name"]: a["value"] for a in args}


def node_models(spec: StackSpec) -> list[NodeModel]:
    """The first control-plane node and a Linux worker, as this stack renders them (docs/security.md: the checks run
    on both where they apply)."""
    cluster = cluster_params(spec)
    components = kubeadm.control_plane_components(cluster)
    first = spec.nodes.control_plane[0]
    substitutions = {"NODE_IP": str(first.ip), "NODE": first.name, "SERVICE_CIDR": str(spec.cluster.service_cidr),
                     "POD_CIDR": str(spec.cluster.pod_cidr), "CLUSTER": spec.cluster.name}

    def fill(value: str) -> str:
        for key, text in substitutions.items():
            value = value.replace(key, text)
        return value

    def flags(component: str, section: str | None) -> dict[str, str]:
        merged = {name: fill(value) for name, value in KUBEADM_DEFAULTS[component].items()}
        if section is not None:
            merged.update(_args(components.get(section, {})))
        return merged

    kubelet_document = {**KUBEADM_KUBELET_DEFAULTS, **kubeadm.kubelet_config(cluster)}
    kubelet_text = yaml.safe_dump(kubelet_document, sort_keys=True)

    def kubelet(node) -> str:
        registration = node_params(spec, node)
        extra = {"node-ip": registration.advertise_address,
                 "node-labels": ",".join(f"{k}={v}" for k, v in sorted(registration.labels.items()))}
        return " ".join(["/usr/bin/kubelet", *KUBELET_FLAGS, *(f"--{k}={v}" for k, v in extra.items())])

    control_plane = NodeModel(
        name=first.name, role="control-plane",
        processes=[kubelet(first), _command("kube-apiserver", flags("kube-apiserver", "apiServer")),
                   _command("kube-controller-manager", flags("kube-controller-manager", "controllerManager")),
                   _command("kube-scheduler", flags("kube-scheduler", "scheduler")), _command("etcd", flags("etcd", None)),
                   KUBE_PROXY.replace("NODE", first.name), "/usr/local/bin/containerd"],
        files={**_control_plane_files(first=True, encryption_key=encryption_key(spec)), **_node_files(kubelet_text)})
    models = [control_plane]
    if spec.nodes.linux:
        worker = spec.nodes.linux[0]
        models.append(NodeModel(name=worker.name, role="worker",
                                processes=[kubelet(worker), KUBE_PROXY.replace("NODE", worker.name),
                                           "/usr/local/bin/containerd"],
                                files=_node_files(kubelet_text)))
    return models


# --- the project's positions ---------------------------------------------------------------------------------

Position = tuple[str, str]   # ("n/a" | "manual", the reason or what the project does instead)

POSITIONS: dict[str, Position] = {
    "1.1.9": ("manual", "kube-bench looks for CNI files through the kubelet's --cni-conf-dir, a flag removed with "
                        "dockershim, and in /var/lib/cni/networks, which only the host-local IPAM writes; Calico's "
                        "install-cni writes its configuration and calico-kubeconfig into /etc/cni/net.d 0600 "
                        "(projectcalico/calico release-v3.33 cni-plugin/pkg/install/install.go: the default file "
                        "permission 0600, calico-kubeconfig 0o600), and no pod of an ordinary namespace can mount the "
                        "directory (hostPath is refused below the privileged Pod Security level)"),
    "1.1.10": ("manual", "as 1.1.9: /etc/cni/net.d's files are written by calico-node's install-cni running as root, "
                         "so root:root"),
    "1.2.1": ("manual", "anonymous requests are refused except on /livez, /readyz, /healthz and the cluster-info "
                        "ConfigMap token discovery reads, through the AuthenticationConfiguration's anonymous "
                        "conditions; --anonymous-auth=false would fail the kubelet's probes of the API server and "
                        "every `kubeadm join`, and the flag cannot be set together with that section"),
    "1.2.9": ("manual", "EventRateLimit (an alpha admission configuration) is not enabled: API Priority and Fairness, "
                        "on by default, bounds every client's share of the API server, and each kubelet's events are "
                        "limited by its eventRecordQPS (50) and eventBurst (100)"),
    "1.2.11": ("manual", "AlwaysPullImages is not enabled: every image comes through the site's registry mirror, often "
                         "across a border (hk-prod), and a pod restart that must pull again fails when the mirror is "
                         "unreachable; images of one tenant are not readable by another through a node's cache only "
                         "when they are public, which the mirror's projects decide"),
    "1.2.20": ("manual", "--request-timeout keeps its default of 60 s"),
    "3.1.1": ("manual", "users are not given client certificates by this program. Pulumi's Kubernetes provider has one "
                        "of its own (a user in no group, one year, bound to cluster-admin by its own binding, which a "
                        "rotation deletes; a Pulumi secret); admin.conf stays the break-glass credential on the "
                        "control-plane nodes. Give people identities from an OIDC provider (the API server's "
                        "AuthenticationConfiguration takes a jwt section)"),
    "3.1.2": ("manual", "no service account token is handed to a user by this program"),
    "3.1.3": ("manual", "bootstrap tokens are used only by `kubeadm join`, each made for one join and expiring after 30 "
                        "minutes (render/linux_bootstrap.py); the token kubeadm makes at init lives 15 minutes"),
    "3.2.2": ("manual", "the audit policy (render/security.py) records metadata of every request, the request body of "
                        "every write, and never the body of a Secret, ConfigMap or token request; health checks, "
                        "events and the system components' routine reads are left out"),
    "4.1.3": ("n/a", "kube-proxy's kubeconfig is the kube-proxy ConfigMap mounted into its Pod (kubeadm); there is no "
                     "such file on a node"),
    "4.1.4": ("n/a", "as 4.1.3: no kube-proxy kubeconfig file on a node"),
    "4.2.9": ("manual", "with serverTLSBootstrap the kubelet's serving certificate is issued by the cluster CA and "
                        "rotated by the kubelet itself (/var/lib/kubelet/pki/kubelet-server-current.pem); a tlsCertFile "
                        "would pin a certificate that nothing renews. With resourceMetrics off the kubelet signs its "
                        "own"),
    "5.1.1": ("manual", "this program binds cluster-admin to one user, Pulumi's own Kubernetes credential "
                        "(hybrid-cluster:pulumi:<label>, its binding of the same name, deleted when the credential is "
                        "rotated: kube-bench reports it, and it is required: the provider applies CRDs, RBAC and "
                        "webhooks); kubeadm binds it to kubeadm:cluster-admins (admin.conf). The charts' bindings are "
                        "theirs: review `kubectl get clusterrolebindings`"),
    "5.1.2": ("manual", "no binding this program makes lets system:authenticated read Secrets; check the whole "
                        "cluster with `kubectl auth can-i list secrets -A --as-group=system:authenticated --as=x`"),
    "5.1.3": ("manual", "the roles this program writes itself name their resources and verbs; the charts' roles are "
                        "theirs, reviewed with each pin"),
    "5.1.4": ("manual", "only administrators and the workload controllers can create pods; Pod Security (baseline "
                        "enforced by default) and Gatekeeper's placement constraints bound what a pod may be"),
    "5.1.5": ("manual", "the default service accounts keep their tokens: the samples name their own service accounts. "
                        "Set automountServiceAccountToken: false on the default ServiceAccount of your namespaces"),
    "5.1.6": ("manual", "the samples mount no service account token they do not use; the charts mount theirs for the "
                        "API calls they make"),
    "5.1.7": ("manual", "system:masters is held only by super-admin.conf on the first control-plane node (kubeadm "
                        "1.29+), which kube-vip uses while init runs; admin.conf is a kubeadm:cluster-admins credential"),
    "5.1.8": ("manual", "no role of this program grants bind, impersonate or escalate"),
    "5.1.9": ("manual", "persistent volumes are made by the CSI provisioners from StorageClasses; no user role of this "
                        "program may create them"),
    "5.1.10": ("manual", "no role this program writes grants nodes/proxy; the charts' roles are theirs"),
    "5.1.11": ("manual", "besides kube-controller-manager's own approver, only the kubelet serving approver "
                         "(resourceMetrics) may approve, for signer kubernetes.io/kubelet-serving only, each request "
                         "for its node's own name and address (docs/security.md)"),
    "5.1.12": ("manual", "no role this program writes grants access to webhook configurations; the charts that own "
                         "webhooks (Gatekeeper, cert-manager, KEDA) manage their own"),
    "5.1.13": ("manual", "no role this program writes grants serviceaccounts/token create"),
    "5.2.1": ("manual", "Pod Security admission, configured cluster-wide: baseline enforced, restricted audited and "
                        "warned, for every namespace without its own labels (docs/security.md, Pod Security)"),
    "5.2.2": ("manual", "baseline, enforced by default, refuses privileged containers outside the exempt and privileged "
                        "namespaces listed in docs/security.md, each with its reason"),
    "5.2.3": ("manual", "baseline refuses hostPID outside the namespaces listed in docs/security.md"),
    "5.2.4": ("manual", "baseline refuses hostIPC outside the namespaces listed in docs/security.md"),
    "5.2.5": ("manual", "baseline refuses hostNetwork outside the namespaces listed in docs/security.md"),
    "5.2.6": ("manual", "restricted, audited and warned cluster-wide and enforced in the samples' namespaces, refuses "
                        "allowPrivilegeEscalation; baseline does not"),
    "5.2.7": ("manual", "restricted (enforced in the samples' namespaces, warned elsewhere) refuses root containers"),
    "5.2.8": ("manual", "restricted, enforced in the samples' namespaces, requires dropping every capability, NET_RAW "
                        "included; baseline refuses only capabilities added beyond its list (pod-security-admission "
                        "policy/check_capabilities_baseline.go), so a container in a baseline namespace keeps "
                        "containerd's default NET_RAW (containerd pkg/oci/spec.go defaultUnixCaps). RKE2's CIS "
                        "profile enforces restricted cluster-wide; give a namespace `podSecurity: restricted` to "
                        "drop it there"),
    "5.2.9": ("manual", "restricted refuses added capabilities but NET_BIND_SERVICE; baseline allows its default set"),
    "5.2.10": ("manual", "baseline refuses HostProcess containers outside the exempt and privileged namespaces listed "
                         "in docs/security.md, where the Windows agents (kube-proxy, Calico, windows_exporter) run"),
    "5.2.11": ("manual", "baseline refuses hostPath volumes outside the namespaces listed in docs/security.md"),
    "5.2.12": ("manual", "baseline refuses hostPorts outside the namespaces listed in docs/security.md"),
    "5.3.1": ("manual", "Calico enforces NetworkPolicy on Linux and, for the subset docs/security.md lists, on Windows"),
    "5.3.2": ("manual", "the application namespaces default-deny ingress and every pod is kept off the infrastructure by "
                        "a cluster-wide tier; namespaces made later get the tier but not an ingress policy of their "
                        "own"),
    "5.4.1": ("manual", "the samples take no Secret; the etcd snapshots' off-site credentials stay on the "
                        "control-plane nodes (root only), in no pod; the charts' choices are theirs"),
    "5.4.2": ("manual", "Secrets are encrypted at rest in etcd under a key only the control-plane nodes hold; no "
                        "external secret store is installed"),
    "5.5.1": ("manual", "no ImagePolicyWebhook: images are named by tag through the site's registry mirror"),
    "5.6.1": ("manual", "the application namespaces are the stack's `namespaces`, each with a quota and defaults"),
    "5.6.2": ("manual", "every container without a seccomp profile runs with the runtime's default one (kubelet "
                        "seccompDefault), but privileged containers, which containerd runs unconfined (internal/cri/"
                        "sputil/seccomp_linux.go), and those allowed only in the exempt and privileged namespaces"),
    "5.6.3": ("manual", "the samples set their security contexts to the restricted level"),
    "5.6.4": ("manual", "the program puts nothing in the default namespace"),
}


@dataclass(frozen=True)
class Decision:
    id: str
    target: str
    result: str          # "pass" | "fail" | "n/a" | "manual"
    scored: bool
    kube_bench: str      # what kube-bench reports offline: PASS, FAIL, WARN, INFO, or "-" (cannot run offline)
    detail: str


def decide(spec: StackSpec, benchmark: Path = BENCHMARK_DIR) -> list[Decision]:
    config = kube_bench.read_config(benchmark / "config.yaml")
    models = node_models(spec)
    decisions: list[Decision] = []
    for target in TARGETS:
        controls = yaml.safe_load((benchmark / "cis-1.12" / f"{target}.yaml").read_text())
        applies_to = [m for m in models if target in ("node", "policies") or m.role == "control-plane"]
        for group in controls["groups"]:
            for check in group["checks"]:
                states = [kube_bench.run_check(check, kube_bench.Host(m.processes, m.files, config, target))
                          for m in applies_to]
                known = [s for s in states if s.state != "-"]
                scored = bool(check.get("scored", False))
                if known and len(known) == len(states) and all(s.state == "PASS" for s in known):
                    decisions.append(Decision(check["id"], target, "pass", scored, "PASS", known[0].actual))
                    continue
                state = "-" if not known else next(s.state for s in known if s.state != "PASS")
                position = POSITIONS.get(check["id"])
                if position is None:
                    found = next((s.actual for s in known if s.state != "PASS"), "cannot run offline")
                    decisions.append(Decision(check["id"], target, "fail", scored, state, found))
                else:
                    decisions.append(Decision(check["id"], target, position[0], scored, state, position[1]))
    return decisions


def markdown(decisions: list[Decision]) -> str:
    lines = ["| check | section | scored | kube-bench offline | result | what the cluster has, or the project's position |",
             "|---|---|---|---|---|---|"]
    for d in decisions:
        detail = d.detail.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {d.id} | {d.target} | {'yes' if d.scored else 'no'} | {d.kube_bench} | {d.result} | {detail} |")
    counts = {r: sum(1 for d in decisions if d.result == r) for r in ("pass", "n/a", "manual", "fail")}
    lines += ["", f"{len(decisions)} checks: " + ", ".join(f"{n} {r}" for r, n in counts.items()) + "."]
    return "\n".join(lines) + "\n"


def namespace_markdown(spec: StackSpec) -> str:
    """The namespaces exempt from the Pod Security default or labelled privileged, each with its reason."""
    lines = ["| namespace | how | why |", "|---|---|---|"]
    for n in (*pod_security_exemptions(spec), *privileged_namespaces(spec)):
        reason = n.reason.replace("|", "\\|")
        lines.append(f"| {n.name} | {n.how} | {reason} |")
    return "\n".join(lines) + "\n"


SECURITY_PAGE = ROOT / "docs" / "security.md"


def _section(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}: generated .*? -->\n)(.*?)(<!-- end of {name} -->)", re.S)


def write_page(decisions: list[Decision], spec: StackSpec) -> None:
    """The generated tables of docs/security.md (the CIS checks, the namespaces), between their markers, replaced
    (tests/program/test_security.py checks both)."""
    page = SECURITY_PAGE.read_text()
    for name, text in (("cis", markdown(decisions)), ("namespaces", namespace_markdown(spec))):
        if not _section(name).search(page):
            raise SystemExit(f"{SECURITY_PAGE} has no <!-- {name}: generated ... --> section")
        found = _section(name).search(page)
        assert found is not None
        page = page[:found.start(2)] + text + page[found.end(2):]
    SECURITY_PAGE.write_text(page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cis", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="hk-prod", help="stack name (Pulumi.<stack>.yaml, or examples/<stack>/)")
    parser.add_argument("--benchmark", type=Path, default=BENCHMARK_DIR, help="kube-bench's cfg folder (holding config.yaml "
                                                                              "and cis-1.12/)")
    parser.add_argument("--markdown", action="store_true", help="print the table docs/security.md carries")
    parser.add_argument("--write", action="store_true", help="rewrite docs/security.md's table (the stack must be hk-prod)")
    args = parser.parse_args(argv)
    if not (args.benchmark / "cis-1.12").is_dir():
        print(f"no kube-bench checks at {args.benchmark}/cis-1.12: give --benchmark", file=sys.stderr)
        return 2
    spec = load(from_stack_file(find_stack_file(args.stack))).spec
    decisions = decide(spec, args.benchmark)
    if args.write:
        if args.stack != "hk-prod":
            print("docs/security.md carries hk-prod's table", file=sys.stderr)
            return 2
        write_page(decisions, spec)
    elif args.markdown:
        print(markdown(decisions), end="")
    else:
        for d in decisions:
            print(f"{d.id:8} {d.target:12} {d.result:7} {d.kube_bench:5} {d.detail}")
    failed = [d for d in decisions if d.result == "fail"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
