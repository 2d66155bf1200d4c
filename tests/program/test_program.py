"""The whole program run as the CLI runs it (__main__.py under the mock engine), checked as a graph."""
from __future__ import annotations

import json

import pulumi
import pytest

from tests.conftest import raw_config
from tools.mock.program import Recording, Secret, Unknown, changed_resources, placeholder_secrets, run_program
from tools.mock.providers import new_host_key
from tools.mock.sdk import sync_await as _sync_await
from vocab.checks import is_pinnable_host_key

VM = "proxmoxve:index/vmLegacy:VmLegacy"
SNIPPET = "proxmoxve:index/fileLegacy:FileLegacy"
COMMAND = "command:remote:Command"
LINUX_NODES = ["hk-cp-1", "hk-cp-2", "hk-cp-3", "hk-lnx-1", "hk-lnx-2", "hk-lnx-3", "hk-lnx-4"]
WINDOWS_NODES = ["hk-win-1", "hk-win-2", "hk-win-3"]


def record(values: dict, preview: bool = False) -> Recording:
    return run_program(raw_config(values), stack="hk-prod", preview=preview)


@pytest.fixture
def hk(hk_recording) -> Recording:
    return hk_recording


def _walk(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)
    else:
        yield value


def test_every_machine_is_declared(hk):
    assert sorted(r.inputs["name"] for r in hk.by_type(VM)) == sorted(LINUX_NODES)
    assert len(hk.by_type(SNIPPET)) == len(LINUX_NODES)
    commands = {r.name for r in hk.by_type(COMMAND)}
    assert {f"hk-prod-{n}-cloud-init" for n in LINUX_NODES} <= commands
    assert {f"hk-prod-{n}-vm" for n in WINDOWS_NODES} <= commands
    assert {"hk-prod-hv-hk1-a-nic-offload", "hk-prod-hv-hk2-a-nic-offload"} <= commands
    assert [n["name"] for n in hk.outputs["nodes"]] == LINUX_NODES + WINDOWS_NODES


def test_every_resource_has_a_component_parent_named_after_it(hk):
    by_urn = hk.by_urn()
    for r in hk.resources:
        if r.parent.endswith("::hybrid-cluster-hk-prod"):
            # Only the layers hang off the stack, each a component of ours, and the preview-time guards that
            # guard them all (components/guards.py).
            assert (r.type.startswith("hybrid:") and not r.custom) or r.type.endswith(
                ("/hybrid:KubernetesVersionPin", "/hybrid:MachinesGuard", "/hybrid:ClusterIdentity")), r.name
            continue
        parent = by_urn.get(r.parent)
        assert parent is not None, f"{r.name} is not parented to a component"
        assert r.name.startswith(parent.name), (r.name, parent.name)


def test_linux_vm_shape(hk):
    vm = hk.named("hk-prod-hk-lnx-3-vm").inputs
    assert vm["nodeName"] == "pve-hk1-a" and vm["vmId"] == 323
    assert vm["clone"] == {"vmId": 9001, "nodeName": "pve-hk1-a", "datastoreId": "local-zfs", "full": True, "retries": 3}
    assert vm["cpu"]["cores"] == 8 and vm["memory"]["dedicated"] == 32768 and vm["disks"][0]["size"] == 120
    assert [d["bridge"] for d in vm["networkDevices"]] == ["vmbr30"]
    assert vm["initialization"]["ipConfigs"] == [{"ipv4": {"address": "10.30.30.23/24", "gateway": "10.30.30.1"}}]
    assert vm["initialization"]["dns"] == {"servers": ["10.10.10.53", "10.10.10.54"], "domain": "hk-prod.internal"}
    # The file resource's id is `<datastore>:<content type>/<file name>` (bpg file.go), what the VM refers to.
    assert vm["initialization"]["userDataFileId"] == "local:snippets/hk-prod-hk-lnx-3-user-data.yaml"
    assert hk.named("hk-prod-hk-lnx-3-vm").id == "323"   # a VM's id is its VMID
    snippet = hk.named("hk-prod-hk-lnx-3-user-data").inputs
    assert snippet["contentType"] == "snippets" and snippet["nodeName"] == "pve-hk1-a"
    assert snippet["sourceRaw"]["fileName"] == "hk-prod-hk-lnx-3-user-data.yaml"
    assert hk.named("hk-prod-hk-lnx-3-user-data").delete_before_replace


def test_only_control_plane_vms_and_member_locks_are_protected(hk):
    protected = sorted(r.inputs["name"] for r in hk.by_type(VM) if r.protect)
    assert protected == ["hk-cp-1", "hk-cp-2", "hk-cp-3"]
    locks = sorted(r.name for r in hk.resources if r.type == "hybrid:lifecycle:MemberLock" and r.protect)
    assert locks == [f"hk-prod-member-locks-{n}" for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")]
    assert not any(r.protect for r in hk.resources if r.type not in (VM, "hybrid:lifecycle:MemberLock"))


def test_nodes_are_created_in_parallel(hk):
    """No node's resources wait for another node's: deploy time does not grow with node count."""
    by_urn = hk.by_urn()
    node_of = {}
    for r in hk.resources:
        for node in LINUX_NODES + WINDOWS_NODES:
            if r.name == f"hk-prod-{node}" or r.name.startswith(f"hk-prod-{node}-"):
                node_of[r.urn] = node
    for r in hk.resources:
        for dep in r.dependencies:
            if r.urn in node_of and dep in node_of:
                assert node_of[dep] == node_of[r.urn], f"{r.name} waits for {by_urn[dep].name}"


def test_readiness_waits_for_its_vm(hk):
    for node in LINUX_NODES:
        wait = hk.named(f"hk-prod-{node}-cloud-init")
        assert hk.named(f"hk-prod-{node}-vm").urn in wait.dependencies
        connection = wait.inputs["connection"]
        # The connection carries the node SSH key, so the whole object is secret.
        assert isinstance(connection, Secret)
        address = hk.named(f"hk-prod-{node}-vm").inputs["initialization"]["ipConfigs"][0]["ipv4"]["address"]
        assert connection.value["host"] == address.split("/")[0]


def test_windows_vm_waits_for_its_host_settings(hk):
    offload = hk.named("hk-prod-hv-hk1-a-nic-offload").urn
    assert offload in hk.named("hk-prod-hk-win-1-vm").dependencies
    assert offload not in hk.named("hk-prod-hk-win-2-vm").dependencies


def test_secrets_stay_secret(hk):
    provider = hk.named("hk-prod-proxmox").inputs
    assert isinstance(provider["apiToken"], Secret)
    for node in WINDOWS_NODES:
        command = hk.named(f"hk-prod-{node}-vm").inputs
        assert isinstance(command["stdin"], Secret)
        assert isinstance(command["connection"], Secret)
    placeholders = set(placeholder_secrets().values())
    for r in hk.resources:
        for value in _walk(r.inputs):
            if isinstance(value, str):
                assert not any(p in value for p in placeholders), f"a secret in plain text in {r.name}"
    assert not any(p in json.dumps(hk.outputs, default=str) for p in placeholders)


def test_password_auth_for_hyperv_hosts(hk_values):
    hk_values["hyperv"]["auth"] = "password"
    recording = record(hk_values)
    connection = recording.named("hk-prod-hk-win-1-vm").inputs["connection"]
    assert isinstance(connection, Secret)
    assert connection.value["password"] == placeholder_secrets()["hypervSshPassword"]
    assert "privateKey" not in connection.value


def test_invalid_config_declares_nothing(hk_values):
    hk_values["nodes"]["windows"][0]["zone"] = "hk-9"
    with pytest.raises(pulumi.RunError, match=r"nodes\.windows\[0\]\.zone: unknown zone 'hk-9'"):
        record(hk_values)


def test_preview_leaves_created_values_unknown(hk_values):
    recording = record(hk_values, preview=True)
    # The readiness wait is keyed on the VM's id, which only exists after the VM does.
    triggers = recording.named("hk-prod-hk-cp-1-cloud-init").inputs["triggers"]
    assert isinstance(triggers[0], Unknown)
    # The user-data file id the VM points at is also unknown until the upload ran.
    assert isinstance(recording.named("hk-prod-hk-cp-1-vm").inputs["initialization"]["userDataFileId"], Unknown)


def test_preview_outputs_are_unknown_not_asserted_in_apply(hk_values):
    """An assertion inside apply never runs in preview; check is_known() instead."""
    recording = record(hk_values, preview=True)
    assert recording.outputs["nodes"][0]["name"] == "hk-cp-1"  # static facts are known in preview
    machines = recording.program["machines"]
    assert _sync_await(machines.linux_nodes[0].ready.stdout.is_known()) is False
    assert _sync_await(machines.windows_nodes[0].vm.stdout.is_known()) is False



def test_one_worker_change_touches_only_that_worker(hk, hk_values):
    hk_values["nodes"]["linux"][1]["memoryMb"] = 65536
    hk_values["nodes"]["windows"][1]["cpu"] = 16
    # The Linux VM stores the new memory as pending; that worker's own restart steps apply it.
    # The machines guard records the new sizes (components/guards.py); it runs nothing.
    assert changed_resources(hk, record(hk_values)) == {
        "hk-prod-machines", "hk-prod-hk-lnx-2-vm", "hk-prod-hk-win-2-vm",
        "hk-prod-restarts-hk-lnx-2-drain-for-restart", "hk-prod-restarts-hk-lnx-2-vm-restart",
        "hk-prod-restarts-hk-lnx-2-uncordon-after-restart"}


def test_adding_a_worker_adds_only_its_resources(hk, hk_values):
    hk_values["nodes"]["linux"].append({"name": "hk-lnx-5", "zone": "hk-2", "proxmoxNode": "pve-hk2-a", "vmId": 325,
                                        "distro": "rocky9", "cpu": 8, "memoryMb": 32768, "diskGb": 120, "ip": "10.30.30.25"})
    machine = {f"hk-prod-hk-lnx-5{suffix}" for suffix in ("", "-user-data", "-user-data-private", "-vm", "-host-key",
                                                          "-host-key-install", "-cloud-init", "-prepare", "-authorized-keys")}
    membership = {f"hk-prod-kubeadm-hk-lnx-5{suffix}" for suffix in ("", "-registration", "-join-credentials", "-join", "-drain")}
    labels = {"hk-prod-scheduling-node-hk-lnx-5"}
    # Its place in the upgrade chain: steps with no create, so adding them runs nothing.
    upgrade = {f"hk-prod-upgrade-hk-lnx-5{suffix}" for suffix in ("-drain-for-upgrade", "-node-upgrade", "-uncordon-after-upgrade")}
    restarts = {f"hk-prod-restarts-hk-lnx-5{suffix}" for suffix in ("-drain-for-restart", "-vm-restart", "-uncordon-after-restart")}
    # Its kubelet serving step: created, it runs once on the new node (components/platform/resource_metrics.py), which joined
    # with the cluster's setting and so only waits for its certificate.
    serving = {"hk-prod-kubelet-config-hk-lnx-5"}
    # hk-2's Linux workers go from two waves to three (20% each): the new wave brings its gate in each rolling chain
    # (components/cluster/waves.py), a resource that runs nothing.
    gates = {f"hk-prod-{chain}--wave-7" for chain in ("upgrade", "restarts", "kubelet-config")}
    # The approver's inventory on each control-plane node takes the new node (render/serving_approver.py).
    approver = {f"hk-prod-kubelet-serving-approver-{n}" for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")}
    # Its VM id and address, each reserved until its machine is deleted (components/guards.py).
    reserved = {"hk-prod-vm-id-325", "hk-prod-address-10-30-30-25"}
    assert changed_resources(hk, record(hk_values)) == (machine | membership | labels | upgrade | restarts | serving
                                                        | gates | approver | reserved | {"hk-prod-machines"})


def test_a_secret_change_is_seen_without_being_shown():
    from tests.conftest import hk_prod_values
    values = hk_prod_values()
    before = run_program(raw_config(values), secrets={"windowsAdminPassword": "first"})
    after = run_program(raw_config(values), secrets={"windowsAdminPassword": "second"})
    changed = changed_resources(before, after)
    # The VM command and every guest step that signs in with the password, nothing else.
    assert changed and all("hk-win-" in name for name in changed), changed
    assert "hk-prod-hk-win-1-vm" in changed


def test_replacements_delete_first_and_nothing_moves_before_the_version_pin(hk):
    pin = hk.named("hk-prod-kubernetes-version").urn
    for node in LINUX_NODES:
        vm, snippet = hk.named(f"hk-prod-{node}-vm"), hk.named(f"hk-prod-{node}-user-data")
        assert pin in vm.dependencies and pin in snippet.dependencies
        # Fixed VM id and name: the old VM goes first; a new template or a new snippet does not rebuild it, and a new
        # underlay MTU does not re-plug its NIC.
        assert vm.delete_before_replace and vm.ignore_changes == ["clone", "networkDevices[0].mtu"]
        # An update never reboots a node behind the cluster's back.
        assert vm.inputs["rebootAfterUpdate"] is False
        assert snippet.ignore_changes == ["sourceRaw"]
        assert hk.named(f"hk-prod-{node}-cloud-init").delete_before_replace
    for node in WINDOWS_NODES:
        vm = hk.named(f"hk-prod-{node}-vm")
        assert pin in vm.dependencies and vm.delete_before_replace
    for r in hk.by_type(COMMAND):
        if r.name.endswith(("-join", "-join-credentials", "-drain", "-registration")) or "-prepare-" in r.name:
            assert r.delete_before_replace, r.name
    for r in hk.by_type(VM):
        assert r.inputs["tags"] == sorted(r.inputs["tags"])


def test_a_node_setting_change_converges_each_node_and_nothing_else(hk, hk_values):
    # The first-boot snippets keep what they were created with; each node's own converge step re-runs.
    hk_values["ntpServers"] = ["10.10.10.6"]
    assert changed_resources(hk, record(hk_values)) == (
        {f"hk-prod-{n}-prepare" for n in LINUX_NODES}
        | {f"hk-prod-kubeadm-windows-{n}-prepare-host-settings" for n in WINDOWS_NODES})


def test_every_connection_is_pinned_to_the_key_of_the_host_it_dials(hk_values):
    """The Proxmox nodes, Hyper-V hosts and bastion to the keys in the stack; each Linux node to the key the program made
    for it and gave it in its snippet, distinct per node, from the first connection on; nothing that dials goes
    unpinned."""
    bastion_key = new_host_key("bastion", 1)
    hk_values["access"]["bastion"] = {"host": "10.10.10.2", "user": "jump", "hostKey": bastion_key}
    recording = run_program(raw_config(hk_values), stack="hk-prod")
    stack_keys = {h["address"]: h["hostKey"] for h in [*hk_values["proxmox"]["nodes"], *hk_values["hyperv"]["hosts"]]}
    node_keys = {}
    for node in [*hk_values["nodes"]["controlPlane"], *hk_values["nodes"]["linux"]]:
        key = recording.named(f"hk-prod-{node['name']}-host-key")
        assert key.type == "tls:index/privateKey:PrivateKey" and key.inputs == {"algorithm": "ED25519"}
        node_keys[node["ip"]] = recording.state[key.urn].outputs["publicKeyOpenssh"].strip()
        snippet = recording.named(f"hk-prod-{node['name']}-user-data").inputs["sourceRaw"]["data"]
        assert isinstance(snippet, Secret) and f"ed25519_public: {node_keys[node['ip']]}" in snippet.value
        install = recording.named(f"hk-prod-{node['name']}-host-key-install")
        assert install.ignore_changes == ["connection", "create"] and isinstance(install.inputs["stdin"], Secret)
    assert len(set(node_keys.values())) == len(node_keys) and all(map(is_pinnable_host_key, node_keys.values()))
    dialling = [r for r in recording.by_type("command:remote:Command")
                if any(r.inputs.get(k) for k in ("create", "update", "delete"))]
    hosts = set()
    for r in dialling:
        connection = r.inputs["connection"].value
        hosts.add(connection["host"])
        assert connection["hostKey"] == {**stack_keys, **node_keys}[connection["host"]], r.name
        assert connection["proxy"]["hostKey"] == bastion_key, r.name
    assert hosts == set(stack_keys) | set(node_keys)


def test_a_lab_that_relaxes_pinning_dials_its_hosts_unpinned_and_still_pins_its_nodes(hk_values):
    for host in [*hk_values["proxmox"]["nodes"], *hk_values["hyperv"]["hosts"]]:
        del host["hostKey"]
    hk_values["security"] = {"pinHostKeys": False}
    recording = run_program(raw_config(hk_values), stack="hk-prod")
    assert "hostKey" not in recording.named("hk-prod-hk-win-1-vm").inputs["connection"].value
    assert "hostKey" not in recording.named("hk-prod-restarts-hk-cp-1-vm-restart").inputs["connection"].value
    assert recording.named("hk-prod-hk-cp-1-prepare").inputs["connection"].value["hostKey"].startswith("ssh-ed25519 ")


def test_a_computer_name_change_replaces_the_windows_vm_instead_of_renaming_a_live_node(hk, hk_values):
    # pulumi-command replaces a Command whose `triggers` change ("Trigger a resource replacement on
    # changes to any of these values", Command docs); the replacement deletes first, and the node's
    # join, drain and registration follow the new VM id: drain, reset and deregister the old node.
    hk_values["nodes"]["windows"][0]["computerName"] = "HKWIN1NEW"
    after = record(hk_values)
    before_vm, after_vm = hk.named("hk-prod-hk-win-1-vm"), after.named("hk-prod-hk-win-1-vm")
    assert before_vm.inputs["triggers"] != after_vm.inputs["triggers"]
    assert "HKWIN1NEW" in after_vm.inputs["triggers"] and after_vm.delete_before_replace
    assert changed_resources(hk, after) == {"hk-prod-hk-win-1-vm"}
    for part in ("join", "drain", "registration", "join-credentials"):
        assert after.named("hk-prod-kubeadm-windows-hk-win-1-vm".replace("-vm", f"-{part}")).delete_before_replace


WORKLOAD_TYPES = ("kubernetes:helm.sh/v3:Release", "kubernetes:apps/v1:DaemonSet", "kubernetes:apps/v1:Deployment",
                  "kubernetes:apps/v1:StatefulSet")
# The CNI itself: nodes become Ready only once it runs, so it cannot wait for them (it tolerates that).
WAITS_FOR_NO_NODE = {"hk-prod-network-tigera-operator"}


def _needs_windows(r) -> bool:
    if r.type == "kubernetes:helm.sh/v3:Release":
        # components/platform/k8s.py gives a release that carries Windows pods the Windows rollout timeout.
        return "timeout" in r.inputs
    pod = r.inputs.get("spec", {}).get("template", {}).get("spec", {})
    return (pod.get("nodeSelector", {}).get("kubernetes.io/os") == "windows"
            or str(pod.get("runtimeClassName", "")).startswith("win"))


def test_every_workload_waits_for_the_nodes_it_runs_on(hk):
    """On a first `up` nothing is installed onto nodes still joining: every Helm release, DaemonSet,
    Deployment and StatefulSet waits for every Linux worker to be Ready, and one with Windows pods for every
    Windows node too (else Helm and the provider wait out their timeouts, or fail)."""
    linux = {hk.named(f"hk-prod-kubeadm-{n}-drain").urn for n in LINUX_NODES if n.startswith("hk-lnx")}
    windows = {hk.named(f"hk-prod-kubeadm-windows-{n}-drain").urn for n in WINDOWS_NODES}
    workloads = [r for r in hk.resources if r.type in WORKLOAD_TYPES and r.name not in WAITS_FOR_NO_NODE]
    assert len(workloads) >= 10
    for r in workloads:
        waits = hk.waits_for(r.urn)
        # A release with Windows pods has Linux pods too (its controllers, or the chart's Linux DaemonSet).
        release = r.type == "kubernetes:helm.sh/v3:Release"
        needed = (windows | (linux if release else set())) if _needs_windows(r) else linux
        assert needed <= waits, f"{r.name} does not wait for {sorted(hk.by_urn()[u].name for u in needed - waits)}"
