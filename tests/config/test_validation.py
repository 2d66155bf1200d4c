"""Validation of stack configuration: every rule, each reported at its key path, all at once."""
from __future__ import annotations

import copy
import dataclasses

import pytest

from config import compat
from config.loader import SpecError, load
from tests.conftest import ROOT, leaves, problems, raw_config


def assert_problem(values: dict, path: str, fragment: str) -> None:
    found = problems(values)
    assert any(p.startswith(f"{path}: ") and fragment in p for p in found), found


# hk-prod runs Kubernetes 1.36, past the minors the pinned KEDA, Velero and Argo Rollouts were tested on
# (config.compat *_TESTED_KUBERNETES): the warnings the reference stack carries, on purpose, until releases of them
# list 1.36.
KEDA_UNTESTED = ("customMetrics: KEDA 2.20.2 was tested upstream on Kubernetes 1.33-1.35, not 1.36; it uses only "
                 "stable APIs, so it is installed, but untested on this minor")
VELERO_UNTESTED = ("backup: Velero v1.18.1 was tested upstream on Kubernetes 1.33-1.35, not 1.36 (README compatibility "
                   "matrix: newer minors are expected to work, untested)")
ROLLOUTS_UNTESTED = ("progressiveDelivery: Argo Rollouts 2.41.0 (controller 1.9) was tested upstream on Kubernetes "
                     "1.32-1.35, not 1.36 (its end-to-end test matrix)")
# And that the Windows kube-proxy image's tag could not be confirmed (config.compat WINDOWS_KUBE_PROXY_CONFIRMED).
KUBE_PROXY_UNCONFIRMED = ("cluster.kubernetesVersion: the Windows kube-proxy image docker.io/sigwindowstools/kube-proxy:"
                          "v1.36.4-calico-hostprocess could not be confirmed to exist for Kubernetes 1.36 (config/compat.py "
                          "WINDOWS_KUBE_PROXY_CONFIRMED); check that the tag exists before `pulumi up`")
HK_PROD_WARNINGS = [KEDA_UNTESTED, VELERO_UNTESTED, ROLLOUTS_UNTESTED, KUBE_PROXY_UNCONFIRMED]   # rule order


def test_hk_prod_is_valid_with_only_the_untested_component_warnings(hk_values):
    loaded = load(raw_config(hk_values))
    assert [str(w) for w in loaded.warnings] == HK_PROD_WARNINGS
    del hk_values["customMetrics"], hk_values["backup"], hk_values["progressiveDelivery"], hk_values["tracing"]
    assert [str(w) for w in load(raw_config(hk_values)).warnings] == [KUBE_PROXY_UNCONFIRMED]
    assert loaded.spec.cluster.name == "hk-prod"
    assert len(loaded.spec.linux_nodes) == 7


def test_unknown_top_level_key(hk_values):
    hk_values["clusterr"] = {"name": "x"}
    assert_problem(hk_values, "clusterr", "unknown key")


def test_unknown_nested_key_names_its_path(hk_values):
    hk_values["nodes"]["windows"][1]["colour"] = "blue"
    assert_problem(hk_values, "nodes.windows[1].colour", "unknown key (known here: adminPasswordVersion, computerName, cpu, "
                                                         "diskGb, hypervHost, ip, lost, memoryMb, name, retire, version, "
                                                         "zone)")


def test_missing_section(hk_values):
    del hk_values["nodes"]
    assert_problem(hk_values, "nodes", "is required")


def test_secret_set_in_plain_text_is_rejected(hk_values):
    hk_values["windowsAdminPassword"] = "hunter2"
    assert_problem(hk_values, "windowsAdminPassword", "pulumi config set --secret windowsAdminPassword")
    hk_values["windowsAdminPassword"] = {"secure": "v1:abc"}
    assert problems(hk_values, frozenset({"windowsAdminPassword"})) == []


def test_structured_values_arrive_as_json_text(hk_values):
    import json
    as_runtime = {k: json.dumps(v) for k, v in hk_values.items()}
    assert problems(as_runtime) == []


def test_cidr_must_parse(hk_values):
    hk_values["cluster"]["podCidr"] = "10.244.0.0/33"
    assert_problem(hk_values, "cluster.podCidr", "IPv4")


@pytest.mark.parametrize("key,cidr,other", [
    ("podCidr", "10.30.0.0/16", "network.nodes.cidr"),
    ("serviceCidr", "10.0.0.0/8", "network.management.cidr"),
])
def test_networks_are_disjoint(hk_values, key, cidr, other):
    hk_values["cluster"][key] = cidr
    assert_problem(hk_values, other, "overlaps")


@pytest.mark.parametrize("ip,fragment", [
    ("10.31.0.5", "is not in network.nodes"),
    ("10.30.30.1", "is the gateway"),
    ("10.30.30.0", "is the network address"),
    ("10.30.30.255", "is the broadcast address"),
    ("10.30.30.22", "already used by nodes.linux[1].ip"),
])
def test_node_addresses(hk_values, ip, fragment):
    hk_values["nodes"]["windows"][1]["ip"] = ip
    assert_problem(hk_values, "nodes.windows[1].ip", fragment)


def test_management_address_checked_against_management_network(hk_values):
    hk_values["nodes"]["linux"][0]["managementIp"] = "10.30.30.200"
    assert_problem(hk_values, "nodes.linux[0].managementIp", "is not in network.management")


def test_api_vip_required_for_ha_and_distinct(hk_values):
    hk_values["cluster"]["apiVip"] = "10.30.30.11"
    assert_problem(hk_values, "cluster.apiVip", "also the address of nodes.controlPlane[0]")
    del hk_values["cluster"]["apiVip"]
    assert_problem(hk_values, "cluster.apiVip", "needs a virtual IP")


@pytest.mark.parametrize("name,fragment", [("HK-WIN-9", "DNS-1123"), ("hk-lnx-1", "used more than once")])
def test_node_names(hk_values, name, fragment):
    hk_values["nodes"]["windows"][0]["name"] = name
    assert_problem(hk_values, "nodes.windows[0].name", fragment)


def test_windows_computer_name_is_netbios_sized(hk_values):
    hk_values["nodes"]["windows"][0]["name"] = "hk-prod-windows-worker-1"
    assert_problem(hk_values, "nodes.windows[0].name", "longer than 15 characters")
    hk_values["nodes"]["windows"][0]["computerName"] = "HKWIN1"
    assert problems(hk_values) == []


def test_pod_cidr_leaves_room_for_every_node(hk_values):
    hk_values["cluster"]["nodeCidrMaskSize"] = 19  # 8 ranges of /19 in a /16, 10 nodes
    assert_problem(hk_values, "cluster.nodeCidrMaskSize", "holds 8 node ranges of /19, but the stack has 10 nodes")


def test_mtu_leaves_room_for_vxlan(hk_values):
    hk_values["calico"]["mtu"] = 1460
    assert_problem(hk_values, "calico.mtu", "exceeds the underlay MTU 1500 minus VXLAN's 50 bytes (1450)")


@pytest.mark.parametrize("key,value,fragment", [
    ("encapsulation", "IPIP", "not supported with Windows nodes"),
    ("encapsulation", "VXLANCrossSubnet", "not supported with Windows nodes"),
    ("bgp", "Enabled", "BGP must be Disabled"),
    ("vxlanPort", 8472, "port 4789"),
    ("vxlanVni", 1, "at least 4096"),
])
def test_windows_needs_plain_vxlan(hk_values, key, value, fragment):
    hk_values["calico"][key] = value
    assert_problem(hk_values, f"calico.{key}", fragment)


def test_windows_pod_capacity_follows_the_block_size(hk_values):
    # Four addresses of a Windows node's single block are reserved (Calico for Windows limitations).
    hk_values["calico"]["blockSize"] = 30
    assert_problem(hk_values, "calico.blockSize", "leaves no pod address on a Windows node")
    hk_values["calico"]["blockSize"] = 28
    loaded = load(raw_config(hk_values))
    assert [str(w) for w in loaded.warnings] == [
        "calico.blockSize: each Windows node can run only 12 pods with /28 blocks (one block per Windows node)",
        *HK_PROD_WARNINGS]
    hk_values["nodes"]["windows"] = []
    hk_values["calico"]["blockSize"] = 30
    assert problems(hk_values) == []


def test_linux_only_cluster_may_use_ipip(hk_values):
    hk_values["nodes"]["windows"] = []
    hk_values["calico"].update(encapsulation="IPIP", bgp="Enabled")
    assert problems(hk_values) == []


@pytest.mark.parametrize("path,mutate,fragment", [
    ("nodes.linux[0].zone", lambda v: v["nodes"]["linux"][0].update(zone="hk-3"), "unknown zone 'hk-3'"),
    ("nodes.linux[0].proxmoxNode", lambda v: v["nodes"]["linux"][0].update(proxmoxNode="pve-x"), "unknown Proxmox node"),
    ("nodes.linux[0].proxmoxNode", lambda v: v["nodes"]["linux"][0].update(proxmoxNode="pve-hk2-a"), "is in zone hk-2, not hk-1"),
    ("nodes.linux[0].distro", lambda v: v["proxmox"]["templates"].pop(0), "no ubuntu22 template on Proxmox node pve-hk1-a"),
    ("nodes.windows[0].hypervHost", lambda v: v["nodes"]["windows"][0].update(hypervHost="hv-x"), "unknown Hyper-V host"),
    ("nodes.windows[1].version", lambda v: v["nodes"]["windows"][1].update(version="win2019"), "no golden image for win2019"),
    ("proxmox.nodes[1].zone", lambda v: v["proxmox"]["nodes"][1].update(zone="hk-9"), "unknown zone"),
    ("hyperv.hosts[0].zone", lambda v: v["hyperv"]["hosts"][0].update(zone="hk-9"), "unknown zone"),
    ("proxmox.templates[0].node", lambda v: v["proxmox"]["templates"][0].update(node="pve-9"), "unknown Proxmox node"),
])
def test_references_exist(hk_values, path, mutate, fragment):
    mutate(hk_values)
    assert_problem(hk_values, path, fragment)


def test_vm_ids_unique_across_templates_and_nodes(hk_values):
    hk_values["nodes"]["linux"][2]["vmId"] = 9000
    assert_problem(hk_values, "nodes.linux[2].vmId", "already used by proxmox.templates[0].vmId")


def test_a_second_template_of_a_distro_on_one_proxmox_node_is_refused(hk_values):
    first = hk_values["proxmox"]["templates"][0]
    hk_values["proxmox"]["templates"].append({**first, "vmId": 9100})
    index = len(hk_values["proxmox"]["templates"]) - 1
    assert_problem(hk_values, f"proxmox.templates[{index}]", f"a second {first['distro']} template on Proxmox node")


def test_unsupported_kubernetes_version(hk_values):
    hk_values["cluster"]["kubernetesVersion"] = "1.29.6"
    assert_problem(hk_values, "cluster.kubernetesVersion", "Kubernetes 1.29 is not supported")


def test_centos7_refused_where_kubelet_refuses_cgroup_v1(hk_values):
    hk_values["proxmox"]["templates"].append({"distro": "centos7", "vmId": 9002, "node": "pve-hk1-a"})
    hk_values["nodes"]["linux"][0]["distro"] = "centos7"
    assert_problem(hk_values, "nodes.linux[0].distro", "cgroup v1, which the kubelet of Kubernetes 1.36 refuses")


def test_centos7_is_an_end_of_life_warning_where_still_possible(hk_values, monkeypatch):
    minor = compat.KUBERNETES["1.36"]
    monkeypatch.setitem(compat.KUBERNETES, "1.36", dataclasses.replace(minor, refuses_cgroup_v1=False))
    hk_values["proxmox"]["templates"].append({"distro": "centos7", "vmId": 9002, "node": "pve-hk1-a"})
    hk_values["nodes"]["linux"][0]["distro"] = "centos7"
    warnings = [str(w) for w in load(raw_config(hk_values)).warnings]
    assert "nodes.linux[0].distro: centos7 reached end of life on 2024-06-30" in warnings


def test_windows_version_without_images_is_an_error(hk_values, monkeypatch):
    build = compat.WINDOWS["win2022"]
    monkeypatch.setitem(compat.WINDOWS, "win2022", dataclasses.replace(build, fluent_bit_image=None))
    assert_problem(hk_values, "nodes.windows[0].version", "no fluent_bit image for win2022")


def test_unknown_windows_version_is_rejected(hk_values):
    hk_values["nodes"]["windows"][0]["version"] = "win2016"
    assert_problem(hk_values, "nodes.windows[0].version", "win2019")


def test_pool_shape(hk_values):
    hk_values["nodes"]["linux"] = []
    hk_values["nodes"]["controlPlane"].pop()
    found = problems(hk_values)
    assert any(p.startswith("nodes.linux: at least one Linux worker") for p in found), found
    assert any(p.startswith("nodes.controlPlane: 2 control-plane nodes") for p in found), found


def test_windows_dynamic_ports_stay_out_of_node_ports(hk_values):
    hk_values["windows"]["dynamicPortStart"] = 20000
    hk_values["windows"]["dynamicPortCount"] = 20000
    assert_problem(hk_values, "windows.dynamicPortStart", "dynamic ports 20000-39999 overlap the NodePort range 30000-32767")


def test_windows_dynamic_ports_stay_clear_of_the_node_agents_ports(hk_values):
    # The range hk-prod had before: every agent port of the node inside it (kubelet, kube-proxy).
    hk_values["windows"] = {"dynamicPortStart": 10000, "dynamicPortCount": 20000}
    assert_problem(hk_values, "windows.dynamicPortStart",
                   "contain ports the node's own agents listen on: 10248 (kubelet healthz), 10249 (kube-proxy metrics), "
                   "10250 (kubelet), 10256 (kube-proxy healthz)")
    hk_values["windows"] = {"dynamicPortStart": 9000, "dynamicPortCount": 500}
    assert_problem(hk_values, "windows.dynamicPortStart", "9182 (windows_exporter)")
    assert problems({**hk_values, "windows": {}}) == []    # the default, 33000-65535

    hk_values["windows"] = {"dynamicPortStart": 60000, "dynamicPortCount": 6000}
    assert_problem(hk_values, "windows.dynamicPortCount", "runs past port 65535")


def test_one_mirror_per_upstream(hk_values):
    mirrors = hk_values["registry"]["mirrors"]
    mirrors.append(dict(mirrors[0]))
    assert_problem(hk_values, f"registry.mirrors[{len(mirrors) - 1}].upstream", "docker.io has more than one mirror")


def test_every_error_is_reported_at_once(hk_values):
    hk_values["storage"]["nfsPath"] = "export"                      # structural, in one section
    hk_values["nodes"]["windows"][0]["zone"] = "hk-9"                # reference
    hk_values["nodes"]["windows"][1]["ip"] = "10.30.30.51"           # duplicate address
    hk_values["calico"]["mtu"] = 1500                                # capacity
    hk_values["bogus"] = 1                                           # unknown key
    found = problems(hk_values)
    for path in ("storage.nfsPath", "nodes.windows[0].zone", "nodes.windows[1].ip", "calico.mtu", "bogus"):
        assert any(p.startswith(f"{path}: ") for p in found), (path, found)


def test_rules_still_run_when_an_unrelated_section_is_broken(hk_values):
    hk_values["storage"] = "not a mapping"
    hk_values["calico"]["mtu"] = 1500
    found = problems(hk_values)
    assert any(p.startswith("storage: ") for p in found)
    assert any(p.startswith("calico.mtu: ") for p in found)


JUNK = [None, "x", -1, 0, 70000, [], {}, "10.0.0.0/8", "10.30.30.11", True, "hk-1", 1.5, "ssh-rsa"]


def test_unseen_invalid_stacks_fail_only_with_key_path_errors(hk_values):
    """Thousands of stacks nobody wrote by hand: each loads or raises SpecError, nothing else."""
    import copy
    import random

    rng = random.Random(20261202)
    # Every leaf and every section above one: whole sections are replaced too.
    paths = sorted({p[:i] for p, _ in leaves(hk_values) for i in range(1, len(p) + 1)}, key=str)
    for _ in range(1500):
        values = copy.deepcopy(hk_values)
        for path in rng.sample(paths, rng.randint(1, 3)):
            parent = values
            try:
                for key in path[:-1]:
                    parent = parent[key]
                if rng.random() < 0.25 and isinstance(parent, dict):
                    parent.pop(path[-1], None)
                else:
                    parent[path[-1]] = rng.choice(JUNK)
            except (KeyError, IndexError, TypeError):
                continue  # an earlier mutation removed or replaced this path's parent
        try:
            load(raw_config(values))
        except SpecError as error:
            assert error.problems
            for problem in error.problems:
                assert problem.path and problem.message, problem


@pytest.mark.parametrize("value", [1, True, 167772160])
def test_addresses_must_be_text(hk_values, value):
    hk_values["cluster"]["podCidr"] = value
    hk_values["nodes"]["linux"][0]["ip"] = value
    assert_problem(hk_values, "cluster.podCidr", "must be written as text")
    assert_problem(hk_values, "nodes.linux[0].ip", "must be written as text")


def test_node_vlan_needs_its_proxmox_bridge(hk_values):
    del hk_values["network"]["nodes"]["proxmoxBridge"]
    assert_problem(hk_values, "network.nodes.proxmoxBridge", "Proxmox bridge")


def test_a_plain_section_set_as_secret_is_rejected(hk_values):
    assert problems(hk_values, frozenset({"access"})) == [
        next(p for p in problems(hk_values, frozenset({"access"})) if p.startswith("access: is not a secret"))]


def test_windows_server_2019_is_an_error_unless_explicitly_accepted(hk_values):
    # Kubernetes supports Windows Server 2022 and 2025 only; Calico still builds ltsc2019 images.
    hk_values["nodes"]["windows"][2]["version"] = "win2019"
    hk_values["backup"]["fileSystemBackup"] = False     # Velero's Windows node agent: win2022 only
    assert_problem(hk_values, "nodes.windows[2].version", "win2019 is not supported by upstream Kubernetes")
    assert_problem(hk_values, "nodes.windows[2].version", "windows.allowUnsupportedVersions")
    hk_values["windows"]["allowUnsupportedVersions"] = ["win2019"]
    loaded = load(raw_config(hk_values))
    assert [str(w) for w in loaded.warnings] == [
        "nodes.windows[2].version: win2019 is not supported by upstream Kubernetes "
        "(accepted by windows.allowUnsupportedVersions)", *HK_PROD_WARNINGS]


def test_windows_server_2025_is_refused_for_want_of_calico_images_even_with_the_override(hk_values):
    hk_values["hyperv"]["hosts"][0]["goldenImages"]["win2025"] = "D:\\golden\\ws2025.vhdx"
    hk_values["nodes"]["windows"][0]["version"] = "win2025"
    hk_values["windows"]["allowUnsupportedVersions"] = ["win2025"]
    assert_problem(hk_values, "nodes.windows[0].version", "Calico builds no Windows images for win2025 (ltsc2025)")
    assert_problem(hk_values, "nodes.windows[0].version", "runs on win2022")


def test_the_override_names_known_windows_versions_only(hk_values):
    hk_values["windows"]["allowUnsupportedVersions"] = ["win2016"]
    assert_problem(hk_values, "windows.allowUnsupportedVersions[0]", "win2019")


def test_a_certificate_renewal_round_is_a_plain_label(hk_values):
    hk_values["cluster"]["certificateRenewal"] = "2027-10"
    assert problems(hk_values) == []
    hk_values["cluster"]["certificateRenewal"] = "2027 10; reboot"
    assert any(p.startswith("cluster.certificateRenewal: ") for p in problems(hk_values))


def test_namespaces_come_from_config_and_references_must_name_them(hk_values):
    # Default-sized namespaces hold the samples' rolling updates, not a blue-green promotion at their maximum.
    del hk_values["progressiveDelivery"]
    hk_values["namespaces"] = [{"name": "win-apps", "os": "windows"}, {"name": "linux-apps", "os": "linux", "pods": 40}]
    hk_values["workloads"] = {"windowsNamespace": "win-apps", "linuxNamespace": "linux-apps",
                              "sampleHost": "samples.hk-prod.internal"}
    hk_values["policy"]["namespaces"] = ["win-apps", "linux-apps"]
    assert problems(hk_values) == []
    hk_values["policy"]["namespaces"] = ["win-prod"]
    assert_problem(hk_values, "policy.namespaces[0]", "not a declared namespace")
    hk_values["policy"]["namespaces"] = ["win-apps"]
    hk_values["workloads"]["linuxNamespace"] = "win-apps"
    assert_problem(hk_values, "workloads.linuxNamespace", "not a declared linux namespace")
    hk_values["workloads"]["linuxNamespace"] = "linux-apps"
    hk_values["namespaces"][1] = {"name": "apps", "os": "linux"}
    assert_problem(hk_values, "namespaces[1]", "linux namespaces are named linux-*")
    hk_values["namespaces"][1] = {"name": "linux-apps", "os": "linux", "defaultCpuLimit": "20"}
    assert_problem(hk_values, "namespaces[1]", "would exceed the cpu quota")


# --- what a new user gets wrong (#27.4): each refused at its key path, with what a valid value looks like ---

def test_snake_case_keys_are_unknown_with_their_camel_case_spelling(hk_values):
    hk_values["cluster"]["pod_cidr"] = hk_values["cluster"].pop("podCidr")
    hk_values["ntp_servers"] = hk_values.pop("ntpServers")
    found = problems(hk_values)
    assert "cluster.pod_cidr: unknown key: stack files spell it podCidr (camelCase)" in found
    assert any(p.startswith("ntp_servers: unknown key; stack files spell it hybrid-cluster:ntpServers") for p in found)
    # ... and the camelCase key is then missing: nothing was read from the snake_case one.
    assert any(p.startswith("cluster.podCidr: is required") for p in found)


def test_a_misspelt_key_gets_the_closest_known_one(hk_values):
    hk_values["network"]["nodes"]["vlanID"] = 30
    assert_problem(hk_values, "network.nodes.vlanID", "did you mean vlanId?")


@pytest.mark.parametrize("path, value, fragment", [
    (("cluster", "kubernetesVersion"), "1.36", 'quoted, e.g. "1.36.4"'),
    (("storage", "smb", "dirMode"), "770", 'e.g. "0770"'),
    (("observability", "metrics", "retention"), "15 days", "e.g. 15d"),
    (("etcdBackup", "nfsPath"), "export", "e.g. /export/k8s"),
])
def test_pattern_mismatches_say_what_a_valid_value_looks_like(hk_values, path, value, fragment):
    target = hk_values
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    found = problems(hk_values)
    assert any(p.startswith(".".join(path) + ": must be ") and fragment in p for p in found), found
    assert not any("should match pattern" in p for p in found)


def test_every_pattern_in_the_model_has_its_help():
    import re
    source = (ROOT / "config" / "model.py").read_text()
    # Every pattern goes through matching(), which records its help: only matching() itself calls Field(pattern=).
    assert source.count("Field(pattern=") == 1 and "    return Field(pattern=pattern)" in source
    from config.model import PATTERN_HELP
    assert len(PATTERN_HELP) >= 10 and all(re.compile(p) and "e.g." in h for p, h in PATTERN_HELP.items())


@pytest.mark.parametrize("setter, path, fragment", [
    (lambda v: v["network"].update(dnsServers=["127.0.0.53"]), "network.dnsServers[0]", "loopback"),
    (lambda v: v.update(ntpServers=["localhost"]), "ntpServers[0]", "loopback"),
    (lambda v: v["observability"]["logs"].update(host="127.0.0.1"), "observability.logs.host", "loopback"),
    (lambda v: v["storage"]["nfs"].update(server="localhost"), "storage.nfs.server", "loopback"),
    (lambda v: v["nodes"]["controlPlane"][0].update(cpu=1), "nodes.controlPlane[0].cpu", "at least 2 CPUs"),
    (lambda v: v["nodes"]["controlPlane"][2].update(memoryMb=1536), "nodes.controlPlane[2].memoryMb", "at least 1700 MB"),
    (lambda v: v["proxmox"].update(endpoint="https://10.10.10.11:8006/api2/json"), "proxmox.endpoint",
     "must not end in /api2/json"),
])
def test_values_that_cannot_work_are_refused_with_the_fix(hk_values, setter, path, fragment):
    setter(hk_values)
    assert_problem(hk_values, path, fragment)


def test_values_that_may_not_work_are_warnings(hk_values):
    hk_values["registry"]["mirrors"][0]["endpoint"] = "http://127.0.0.1:30020"     # a node-local mirror (Spegel)
    assert any(str(w).startswith("registry.mirrors[0].endpoint: 127.0.0.1 is a loopback")
               for w in load(raw_config(hk_values)).warnings)
    hk_values["proxmox"]["endpoint"] = "https://pve.hk-prod.internal/"
    hk_values["nodes"]["controlPlane"][0]["memoryMb"] = 1800
    warnings = [str(w) for w in load(raw_config(hk_values)).warnings]
    assert any(w.startswith("proxmox.endpoint: has no port") and "8006" in w for w in warnings), warnings
    assert any(w.startswith("nodes.controlPlane[0].memoryMb:") and "2048" in w for w in warnings), warnings


def test_a_required_section_says_what_it_is(hk_values):
    del hk_values["network"]["nodes"]
    found = problems(hk_values)
    assert any(p.startswith("network.nodes: is required") for p in found), found


# --- the stack file's encoding ------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding, fragment", [("utf-16", "UTF-16 LE text, not UTF-8"), ("utf-32", "UTF-32 LE"),
                                                ("cp1252", "is not UTF-8 text")])
def test_a_stack_file_not_in_utf8_is_reported_at_the_file(tmp_path, encoding, fragment):
    from config.loader import from_stack_file
    path = tmp_path / "Pulumi.lab.yaml"
    text = (ROOT / "examples" / "lab" / "Pulumi.lab.yaml").read_text().replace("# lab:", "# lab (café):")
    path.write_bytes(text.encode(encoding))
    with pytest.raises(SpecError) as error:
        from_stack_file(path)
    (problem,) = error.value.problems
    assert problem.path.startswith("Pulumi.lab.yaml") and fragment in problem.message and "Set-Content" in problem.message


def test_a_utf8_bom_is_accepted(tmp_path):
    from config.loader import from_stack_file
    path = tmp_path / "Pulumi.lab.yaml"
    path.write_bytes((ROOT / "examples" / "lab" / "Pulumi.lab.yaml").read_text().encode("utf-8-sig"))
    assert load(from_stack_file(path)).spec.cluster.name == "lab"




def test_encoding_problems_name_the_right_line_and_never_raise_a_traceback(tmp_path):
    from config.loader import from_stack_file
    path = tmp_path / "Pulumi.x.yaml"
    path.write_bytes(b"\xef\xbb\xbfconfig:\n  a: 1\n  b: \xff\n")
    with pytest.raises(SpecError) as error:
        from_stack_file(path)
    assert error.value.problems[0].path == "Pulumi.x.yaml:3" and "0xff" in error.value.problems[0].message
    path.write_bytes("config:\n  a: 1\n".encode("utf-16-le"))          # no byte-order mark
    with pytest.raises(SpecError, match="UTF-16"):
        from_stack_file(path)
    path.write_bytes(b"config:\n  a: \x07\n")
    with pytest.raises(SpecError, match="control character"):
        from_stack_file(path)


def test_a_management_ip_without_a_management_network_still_checks_the_nodes_own_address(hk_values):
    del hk_values["network"]["management"]
    hk_values["nodes"]["linux"][0]["managementIp"] = "10.10.10.40"
    hk_values["nodes"]["linux"][1]["ip"] = hk_values["nodes"]["linux"][0]["ip"]
    found = problems(hk_values)
    assert any(p.startswith("nodes.linux[0].managementIp: there is no management network") for p in found), found
    assert any(p.startswith("nodes.linux[1].ip: ") and "already used by nodes.linux[0].ip" in p for p in found), found


def test_longhorn_replicas_follow_the_workers_and_spread_over_the_zones_that_have_one(hk_values):
    """Not capped by the zones (#39 item 6: one zone of five workers got one replica, so losing a worker lost its
    volumes): 3 by default, each on its own worker; each in its own zone while the zones with a Linux worker are
    enough, else spread where possible, with a warning where a zone can hold two of a volume's replicas."""
    from config.loader import load
    from plan.platform import storage_params
    hk_values["zones"] = ["hk-1", "hk-2", "hk-3"]
    hk_values["hyperv"]["hosts"][1]["zone"] = "hk-3"
    hk_values["nodes"]["windows"][1]["zone"] = "hk-3"     # hk-3 has no Linux worker
    hk_values["storage"]["longhorn"] = {}
    loaded = load(raw_config(hk_values))
    params = storage_params(loaded.spec)
    assert params is not None and params.longhorn is not None
    assert (params.longhorn.replicas, params.longhorn.zone_per_replica) == (3, False)
    assert any(w.path == "storage.longhorn.replicas" and "can share a zone" in w.message for w in loaded.warnings)
    hk_values["storage"]["longhorn"] = {"replicas": 2}
    params = storage_params(load(raw_config(hk_values)).spec)
    assert (params.longhorn.replicas, params.longhorn.zone_per_replica) == (2, True)
    hk_values["storage"]["longhorn"] = {"replicas": 3}
    hk_values["nodes"]["linux"] = hk_values["nodes"]["linux"][:2]
    assert_problem(hk_values, "storage.longhorn.replicas", "need as many Linux workers")


def test_a_single_zone_of_workers_keeps_three_replicas_on_three_workers():
    from config.loader import from_stack_file, load
    from plan.platform import storage_params
    from render.storage import longhorn_values
    values = dict(from_stack_file(ROOT / "examples" / "lab" / "Pulumi.lab.yaml").values)   # one zone
    worker = values["nodes"]["linux"][0]
    values["nodes"]["linux"] += [{**worker, "name": f"lab-lnx-{i}", "vmId": 200 + i + 1, "ip": f"192.168.1.{52 + i}"}
                                 for i in (2, 3, 4, 5)]
    values["nodes"]["windows"][0]["ip"] = "192.168.1.60"
    values["storage"] = {"longhorn": {}}
    loaded = load(raw_config(values))
    params = storage_params(loaded.spec)
    assert (params.longhorn.replicas, params.longhorn.zone_per_replica) == (3, False)
    assert not [w for w in loaded.warnings if w.path.startswith("storage")]
    settings = longhorn_values(params)["defaultSettings"]
    assert settings["replicaZoneSoftAntiAffinity"] is True and settings["replicaSoftAntiAffinity"] is False
    assert settings["defaultReplicaCount"] == 3


@pytest.mark.parametrize("value", [0, "0%", "120%", "twenty", 1001])
def test_max_unavailable_is_one_message_at_its_key(hk_values, value):
    hk_values["rollout"] = {"maxUnavailable": value}
    found = problems(hk_values)
    assert found == ['rollout.maxUnavailable: must be a node count from 1 or a percentage from 1% to 100%, e.g. 3 or "20%"']


def test_an_autoscaler_maximum_below_the_replicas_is_refused_at_its_key(hk_values):
    hk_values["workloads"]["linuxMaxReplicas"] = 4
    assert_problem(hk_values, "workloads", "linuxMaxReplicas (4) is below linuxReplicas (6)")


def test_custom_metrics_need_prometheus_and_the_metrics_api(hk_values):
    del hk_values["observability"]["metrics"]
    hk_values["resourceMetrics"] = {"enabled": False}
    assert_problem(hk_values, "customMetrics", "add observability.metrics")
    assert_problem(hk_values, "customMetrics", "set resourceMetrics.enabled to true")


def test_a_sample_namespace_quota_must_hold_the_samples_peak(hk_values):
    """Beyond the quota the API server refuses the pods, and the autoscaler, a rollout or a promotion stalls silently."""
    hk_values["workloads"]["linuxMaxReplicas"] = 20
    assert_problem(hk_values, "workloads.linuxMaxReplicas",
                   "at a blue-green promotion the sample in linux-prod runs 40 pods, which need pods 40")
    # Without blue-green the peak is the maximum plus a rolling update's surge: 21 pods fit hk-prod's linux-prod, 31 not.
    del hk_values["progressiveDelivery"]
    assert not any(p.startswith("workloads.") for p in problems(hk_values))
    hk_values["workloads"]["linuxMaxReplicas"] = 30
    assert_problem(hk_values, "workloads.linuxMaxReplicas", "at a rolling update the sample in linux-prod runs 31 pods")


def test_without_the_metrics_api_the_peak_is_the_replicas(hk_values):
    hk_values["resourceMetrics"] = {"enabled": False}
    del hk_values["customMetrics"], hk_values["progressiveDelivery"]
    hk_values["workloads"]["linuxMaxReplicas"] = 500     # no autoscaler reads it
    assert not any(p.startswith("workloads.") for p in problems(hk_values))
    hk_values["workloads"]["linuxReplicas"] = 40
    assert_problem(hk_values, "workloads.linuxReplicas", "runs 41 pods")


def test_a_ca_certificate_is_pem_and_goes_with_tls(hk_values):
    bad = copy.deepcopy(hk_values)
    bad["observability"]["logs"]["caCertificate"] = "not a certificate"
    bad["tracing"]["caCertificate"] = "-----BEGIN CERTIFICATE-----\n"
    found = problems(bad)
    assert any(p.startswith("observability.logs.caCertificate:") and "PEM certificates" in p for p in found), found
    assert any(p.startswith("tracing.caCertificate:") for p in found), found
    plain = copy.deepcopy(hk_values)
    plain["observability"]["logs"]["tls"] = False
    assert any(p.startswith("observability.logs") and "ship with tls: true" in p for p in problems(plain))


def test_a_needed_secret_that_was_not_read_fails_naming_its_key():
    from config.secrets import present
    assert present("value", "backupAccessKeyId") == "value"
    with pytest.raises(ValueError, match="secret backupAccessKeyId was not read, yet the stack needs it"):
        present(None, "backupAccessKeyId")
