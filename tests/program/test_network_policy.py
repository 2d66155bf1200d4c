"""The network policies (render/network_policy.py, plan/security.py): the objects checked against their schemas (the
Calico kinds strictly against the vendored projectcalico.org/v3 CRD schemas, NetworkPolicy with kubernetes-validate),
then evaluated by tests/calico_policy.py on the flows that must be allowed and those that must not, for Linux pods and
for Windows pods (whose HNS dataplane enforces a subset of Calico's policy), on hk-prod and on the flat-network lab."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import kubernetes_validate
import pytest

from config.loader import from_stack_file, load
from plan.security import network_policy_plan
from render import network_policy
from tests.calico_policy import Cluster, Pod, Selector
from tests.conftest import hk_prod_values, raw_config
from tests.crd_schema import validate_custom_resource

K8S = "1.36.0"   # kubernetes-validate ships schemas per minor; hk-prod runs 1.36.4
ROOT = Path(__file__).resolve().parents[2]
# The operator's own tier and its CoreDNS policy (tigera/operator release-v1.44 pkg/render/tiers/tiers.go, order 100;
# the policy calico-system.cluster-dns in kube-system: ingress from calico-system allowed then Pass, egress allowed).
OPERATOR_OBJECTS = [
    {"apiVersion": "projectcalico.org/v3", "kind": "Tier", "metadata": {"name": "calico-system"}, "spec": {"order": 100}},
    {"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
     "metadata": {"name": "calico-system.cluster-dns", "namespace": "kube-system"},
     "spec": {"tier": "calico-system", "order": 1, "selector": "k8s-app in { 'kube-dns', 'coredns' }",
              "types": ["Ingress", "Egress"],
              "ingress": [{"action": "Allow", "source": {"namespaceSelector": "projectcalico.org/name in {'calico-system'}"}},
                          {"action": "Pass"}],
              "egress": [{"action": "Allow"}]}},
]


def _objects(values: dict) -> list[dict]:
    plan = network_policy_plan(load(raw_config(values)).spec)
    assert plan is not None
    return [*network_policy.infrastructure_policies(plan.params()), *network_policy.application_policies(plan.params())]


HK_OBJECTS = _objects(hk_prod_values())
HK = Cluster.from_objects([*HK_OBJECTS, *OPERATOR_OBJECTS])


def _pod(namespace: str, os: str = "linux", **labels: str) -> Pod:
    return Pod(namespace=namespace, labels=labels or {"app": "x"}, ip="10.244.1.10" if os == "linux" else "10.244.9.10",
               os=os)


LINUX_TENANT = _pod("linux-prod", app="api-linux")
WINDOWS_TENANT = _pod("win-prod", "windows", app="api-win")
NEW_NAMESPACE = _pod("tenant-a")
DEFAULT_NAMESPACE = _pod("default")
ORDINARY_PODS = [LINUX_TENANT, WINDOWS_TENANT, NEW_NAMESPACE, DEFAULT_NAMESPACE,
                 _pod("tenant-b", "windows", app="legacy")]

# Destinations no ordinary pod may reach on hk-prod: Proxmox's API and SSH, the Hyper-V hosts' SSH and WinRM, the NFS
# and SMB servers, the storage network, the nodes' SSH, etcd and RDP.
FORBIDDEN = [
    ("TCP", "10.10.10.11", 8006), ("TCP", "10.10.10.12", 22), ("TCP", "10.10.10.31", 22), ("TCP", "10.10.10.32", 5985),
    ("TCP", "10.10.10.21", 2049), ("TCP", "10.10.10.20", 445), ("TCP", "10.20.20.7", 3260), ("UDP", "10.10.10.53", 53),
    ("TCP", "10.30.30.21", 22), ("TCP", "10.30.30.11", 2379), ("TCP", "10.30.30.12", 2380), ("TCP", "10.30.30.51", 3389),
    ("TCP", "10.30.30.52", 5986),
]
# What every pod may still reach: the API server (VIP and nodes), the kubelets (metrics-server), a NodePort, the world.
OPEN = [("TCP", "10.30.30.10", 6443), ("TCP", "10.30.30.12", 6443), ("TCP", "10.30.30.23", 10250),
        ("TCP", "10.30.30.24", 30443), ("TCP", "203.0.113.9", 443), ("UDP", "10.96.0.10", 53)]


def test_the_objects_validate_against_their_schemas():
    for obj in HK_OBJECTS:
        if obj["apiVersion"] == "networking.k8s.io/v1":
            kubernetes_validate.validate(obj, K8S, strict=True)
        else:
            validate_custom_resource(obj, f"projectcalico.org_v3_{obj['kind']}.json")
    with pytest.raises(AssertionError):
        validate_custom_resource({**HK_OBJECTS[1], "spec": {**HK_OBJECTS[1]["spec"], "typs": ["Egress"]}},
                                 "projectcalico.org_v3_GlobalNetworkPolicy.json")


def test_every_rule_means_the_same_on_windows():
    """No negative match, no Log, no ICMP type: Calico for Windows skips such rules; every policy states its types."""
    for obj in HK_OBJECTS:
        if obj["apiVersion"] != "projectcalico.org/v3" or obj["kind"] == "Tier":
            continue
        assert obj["spec"]["types"] == ["Egress"]
        for rule in obj["spec"]["egress"]:
            assert rule["action"] in ("Allow", "Deny", "Pass")
            assert not {k for k in rule if k.startswith("not") or k == "icmp"}
            assert not {k for k in rule.get("destination", {}) if k.startswith("not")}
    deny = next(o for o in HK_OBJECTS if o["metadata"]["name"] == "hybrid-infrastructure-deny")
    # The explicit Pass carries a packet on to the next tier on Windows too (flattener.go).
    assert deny["spec"]["egress"][-1] == {"action": "Pass"}


@pytest.mark.parametrize("pod", ORDINARY_PODS, ids=lambda p: f"{p.namespace}-{p.os}")
def test_no_ordinary_pod_reaches_the_infrastructure(pod):
    for protocol, address, port in FORBIDDEN:
        assert HK.decide(pod, "egress", protocol, address, port) == "deny", (protocol, address, port)
    for protocol, address, port in OPEN:
        assert HK.decide(pod, "egress", protocol, address, port) == "allow", (protocol, address, port)


@pytest.mark.parametrize("pod, flow, allowed, denied", [
    # CoreDNS forwards to the site's DNS servers. (The operator's calico-system tier, before this one, allows all of
    # CoreDNS's egress anyway: test_coredns_egress_is_the_operators_call.)
    (_pod("kube-system", **{"k8s-app": "kube-dns"}), "DNS", [("UDP", "10.10.10.53", 53), ("TCP", "10.10.10.54", 53)], []),
    # Fluent Bit to Loki (a DNS name: its port on the protected networks), not to Proxmox.
    (_pod("logging", app="fluent-bit"), "logs", [("TCP", "10.10.10.40", 3100)],
     [("TCP", "10.10.10.11", 8006), ("TCP", "10.10.10.31", 22)]),
    # Velero to MinIO and the off-site store.
    (_pod("velero", name="velero"), "backups", [("TCP", "10.10.10.60", 9000), ("TCP", "10.20.20.60", 443)],
     [("TCP", "10.10.10.31", 22), ("TCP", "10.10.10.21", 2049)]),
    # The CSI controllers to the NFS and SMB servers (they mount them to make each volume's directory).
    (_pod("kube-system", app="csi-nfs-controller"), "storage", [("TCP", "10.10.10.21", 2049), ("TCP", "10.10.10.20", 445)],
     [("TCP", "10.10.10.11", 22)]),
    # The collector to Tempo.
    (_pod("opentelemetry", app="otel-collector"), "traces", [("TCP", "10.10.10.70", 4317)], [("TCP", "10.10.10.11", 8006)]),
], ids=["dns", "logs", "backups", "storage", "traces"])
def test_the_components_that_must_reach_a_server_reach_only_its_port(pod, flow, allowed, denied):
    for protocol, address, port in allowed:
        assert HK.decide(pod, "egress", protocol, address, port) == "allow", (flow, address, port)
    for protocol, address, port in denied:
        assert HK.decide(pod, "egress", protocol, address, port) == "deny", (flow, address, port)


def test_coredns_egress_is_the_operators_call():
    """tigera/operator pkg/render/tiers/tiers.go calicoSystemClusterDNSPolicy: egress Allow for the DNS pods in the
    calico-system tier (order 100), which comes before this program's. Without it, only the site's DNS servers."""
    coredns = _pod("kube-system", **{"k8s-app": "kube-dns"})
    assert HK.decide(coredns, "egress", "TCP", "10.10.10.11", 8006) == "allow"
    ours = Cluster.from_objects(HK_OBJECTS)
    assert ours.decide(coredns, "egress", "UDP", "10.10.10.53", 53) == "allow"
    assert ours.decide(coredns, "egress", "TCP", "10.10.10.11", 8006) == "deny"


def test_a_tenants_own_network_policy_cannot_open_the_infrastructure():
    """A NetworkPolicy in the default tier that allows every egress comes after the infrastructure tier."""
    allow_all = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                 "metadata": {"name": "allow-all", "namespace": "linux-prod"},
                 "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]}}
    cluster = Cluster.from_objects([*HK_OBJECTS, *OPERATOR_OBJECTS, allow_all])
    assert cluster.decide(LINUX_TENANT, "egress", "TCP", "10.10.10.11", 8006) == "deny"
    assert cluster.decide(LINUX_TENANT, "egress", "TCP", "203.0.113.9", 443) == "allow"


def test_a_tenants_own_egress_deny_still_holds_after_the_infrastructure_tier_passes():
    deny_all = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": "deny-egress", "namespace": "tenant-a"},
                "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}
    cluster = Cluster.from_objects([*HK_OBJECTS, *OPERATOR_OBJECTS, deny_all])
    assert cluster.decide(NEW_NAMESPACE, "egress", "TCP", "203.0.113.9", 443) == "deny"
    windows = _pod("tenant-a", "windows")
    assert cluster.decide(windows, "egress", "TCP", "203.0.113.9", 443) == "deny"


@pytest.mark.parametrize("target", [LINUX_TENANT, WINDOWS_TENANT], ids=["linux", "windows"])
def test_application_namespaces_take_traffic_from_themselves_the_gateway_and_prometheus_only(target):
    gateway = _pod("envoy-gateway-system", **{"gateway.envoyproxy.io/owning-gateway-name": "samples"})
    prometheus = _pod("monitoring", **{"app.kubernetes.io/name": "prometheus"})
    neighbour = _pod(target.namespace, app="other")
    for source in (gateway, prometheus, neighbour):
        assert HK.decide(target, "ingress", "TCP", source.ip, 8080, peer=source) == "allow", source.namespace
    for source in (NEW_NAMESPACE, DEFAULT_NAMESPACE, _pod("linux-prod" if target.os == "windows" else "win-prod")):
        assert HK.decide(target, "ingress", "TCP", source.ip, 8080, peer=source) == "deny", source.namespace
    # A namespace the stack does not declare has no ingress policy: the stack's namespaces are its applications'.
    assert HK.decide(NEW_NAMESPACE, "ingress", "TCP", "10.244.3.3", 80, peer=DEFAULT_NAMESPACE) == "allow"


def test_the_lab_protects_its_hypervisors_on_a_flat_network():
    lab = from_stack_file(ROOT / "examples" / "lab" / "Pulumi.lab.yaml")
    plan = network_policy_plan(load(lab).spec)
    assert plan is not None
    # No management network: each hypervisor by its address; the router (the DNS server) stays reachable.
    assert plan.protected_networks == ("192.168.1.10/32", "192.168.1.20/32")
    cluster = Cluster.from_objects([*network_policy.infrastructure_policies(plan.params()),
                                    *network_policy.application_policies(plan.params())])
    for pod in (_pod("linux-prod"), _pod("win-prod", "windows")):
        assert cluster.decide(pod, "egress", "TCP", "192.168.1.10", 8006) == "deny"
        assert cluster.decide(pod, "egress", "TCP", "192.168.1.20", 22) == "deny"
        assert cluster.decide(pod, "egress", "TCP", "192.168.1.52", 22) == "deny"
        assert cluster.decide(pod, "egress", "UDP", "192.168.1.1", 53) == "allow"
        assert cluster.decide(pod, "egress", "TCP", "192.168.1.51", 6443) == "allow"


def test_relaxed_the_stack_declares_no_policy():
    values = hk_prod_values()
    values["security"] = {"networkPolicy": {"enabled": False}}
    assert network_policy_plan(load(raw_config(values)).spec) is None


def test_further_protected_networks_are_closed_too():
    values = hk_prod_values()
    values["security"] = {"networkPolicy": {"protectedNetworks": ["172.16.0.0/16"]}}
    cluster = Cluster.from_objects(_objects(values))
    assert cluster.decide(LINUX_TENANT, "egress", "TCP", "172.16.4.4", 443) == "deny"


def test_the_evaluator_reads_calico_selectors_as_calico_does():
    labels = {"app": "x", "projectcalico.org/namespace": "kube-system"}
    assert Selector("has(projectcalico.org/namespace)").matches(labels)
    assert Selector("projectcalico.org/namespace not in {'a', 'b'}").matches(labels)
    assert Selector("missing != 'x'").matches(labels) and not Selector("missing == 'x'").matches(labels)
    assert Selector("!(app == 'y') && (app in {'x'} || has(none))").matches(labels)
    assert Selector("all()").matches({})
    with pytest.raises(ValueError):
        Selector("app === 'x'")


def test_the_rendered_files_match_what_synth_writes(tmp_path):
    """The objects above are the program's: synth renders the same ones."""
    from tools.mock.program import run_program
    recording = run_program(raw_config(hk_prod_values()), stack="hk-prod")
    declared = [r for r in recording.resources if r.name.startswith("hk-prod-network-policy-") and r.custom]
    assert len(declared) == len(HK_OBJECTS)
    tier = next(r for r in declared if r.type.endswith(":Tier"))
    for policy in (r for r in declared if r.type.endswith(":GlobalNetworkPolicy")):
        assert tier.urn in policy.dependencies
    for policy in (r for r in declared if r.type.endswith(":NetworkPolicy")):
        namespace = recording.named(f"hk-prod-scheduling-namespace-{policy.inputs['metadata']['namespace']}")
        assert namespace.urn in policy.dependencies
    # (The wire carries numbers as floats.)
    assert tier.inputs["spec"] == {"order": 500.0, "defaultAction": "Pass"} == HK_OBJECTS[0]["spec"]


# --- the nodes' own guard: the addresses Calico's policy cannot name -----------------------------------------------

def _stack(name: str, extra: dict | None = None):
    if name == "hk-prod":
        values = hk_prod_values()
    else:
        values = dict(from_stack_file(ROOT / "examples" / name / f"Pulumi.{name}.yaml").values)
    return load(raw_config({**values, **(extra or {})})).spec


@pytest.mark.parametrize("stack", ["hk-prod", "lab"])
def test_every_node_drops_the_pod_networks_tcp_to_its_administrative_ports_whatever_address(stack):
    """A node answers on its VXLAN tunnel address, allocated from the pod pool, which the tier's node-network deny does
    not cover: each Linux node's nftables rules drop the pod network's TCP to the administrative ports on any of its
    addresses (checked by nft itself), and each Windows node's firewall blocks the same."""
    from plan.nodes import linux_node_init, windows_params
    from plan.security import NODE_ADMIN_PORTS, pod_guard

    spec = _stack(stack)
    rules = pod_guard(spec)
    assert f"ip saddr {{ {spec.cluster.pod_cidr} }} tcp dport {{ {', '.join(map(str, sorted(NODE_ADMIN_PORTS)))} }} drop" in rules
    with tempfile.NamedTemporaryFile("w", suffix=".nft") as file:
        file.write(rules)
        file.flush()
        # nft --check asks the kernel, which wants CAP_NET_ADMIN: in a user and network namespace of its own when not
        # root (util-linux unshare).
        command = ["nft", "--check", "-f", file.name]
        checked = subprocess.run(command if os.geteuid() == 0 else ["unshare", "-rn", *command],
                                 capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert all(linux_node_init(spec, n).pod_guard == rules for n in spec.nodes.linux)
    for node in spec.nodes.windows:
        params = windows_params(spec, node)
        assert params.pod_guard_sources == (str(spec.cluster.pod_cidr),) and params.pod_guard_ports == NODE_ADMIN_PORTS
    relaxed = _stack(stack, {"security": {"networkPolicy": {"enabled": False}}})
    assert pod_guard(relaxed) == ""
