"""The kubeadm bootstrap as a graph: ordering, parallelism, secrets and delete paths."""
from __future__ import annotations

import json

import pulumi
import pytest
import yaml

from components.version_pin import KubernetesVersionPinProvider
from render.hyperv import script_from_ssh_command
from render.shell import script_from_bash_command
from tests.conftest import hk_prod_values, raw_config
from tests.validators import bash_input
from tools.mock.program import STAND_IN_JOIN_LINE, Recording, Secret, run_declarations, run_program

COMMAND = "command:remote:Command"
CONTROL_PLANE_JOINERS = ["hk-cp-2", "hk-cp-3"]
LINUX_WORKERS = ["hk-lnx-1", "hk-lnx-2", "hk-lnx-3", "hk-lnx-4"]
WINDOWS_WORKERS = ["hk-win-1", "hk-win-2", "hk-win-3"]
JOINERS = CONTROL_PLANE_JOINERS + LINUX_WORKERS + WINDOWS_WORKERS


def res(recording: Recording, name: str):
    prefix = "hk-prod-kubeadm-windows" if name.startswith("hk-win") else "hk-prod-kubeadm"
    return recording.named(f"{prefix}-{name}")



def script(resource, phase: str = "create") -> str:
    text = script_from_bash_command(resource.inputs[phase])
    assert text is not None, f"{resource.name}.{phase} is not a bash command"
    return text


@pytest.fixture
def hk(hk_recording) -> Recording:
    return hk_recording


def test_one_fresh_credential_and_join_per_node(hk):
    credentials = sorted(r.name for r in hk.by_type(COMMAND) if r.name.endswith("-join-credentials"))
    assert credentials == sorted(res(hk, f"{n}-join-credentials").name for n in JOINERS)
    for name in JOINERS:
        assert "kubeadm token create" in script(res(hk, f"{name}-join-credentials"))


def test_every_join_depends_on_init_and_its_own_machine(hk):
    init = res(hk, "init").urn
    for name in JOINERS:
        join = res(hk, f"{name}-join")
        waits_for = hk.waits_for(join.urn)
        assert init in waits_for, name
        machine = hk.named(f"hk-prod-{name}-vm" if name.startswith("hk-win") else f"hk-prod-{name}-cloud-init")
        assert machine.urn in waits_for, name


def test_init_waits_for_the_first_node_and_the_version_pin(hk):
    init = res(hk, "init")
    assert hk.named("hk-prod-hk-cp-1-prepare").urn in init.dependencies
    assert hk.named("hk-prod-kubernetes-version").urn in init.dependencies
    assert "--upload-certs" in script(init)
    # Never keyed on the machine and never reset by Pulumi: a replacement of init (create before delete)
    # would otherwise reset the node holding the cluster; destroying the stack deletes the VM instead.
    assert "delete" not in init.inputs and "triggers" not in init.inputs


def test_control_plane_joins_upload_certificates_and_run_one_at_a_time(hk):
    for name in CONTROL_PLANE_JOINERS:
        credentials = res(hk, f"{name}-join-credentials")
        assert "upload-certs" in script(credentials) and "--certificate-key" in script(credentials)
        assert credentials.urn in res(hk, f"{name}-join").dependencies
    assert res(hk, "hk-cp-2-join").urn in hk.waits_for(res(hk, "hk-cp-3-join").urn)


def test_worker_joins_never_wait_for_another_join(hk):
    joins = {name: res(hk, f"{name}-join").urn for name in JOINERS}
    for name in LINUX_WORKERS + WINDOWS_WORKERS:
        waits_for = hk.waits_for(joins[name])
        others = {other for other, urn in joins.items() if other != name and urn in waits_for}
        assert not others, f"{name} waits for the joins of {others}"


def test_secrets_never_in_plain_text_or_logs(hk):
    for name in JOINERS:
        credentials = res(hk, f"{name}-join-credentials")
        assert "stdout" in credentials.additional_secret_outputs
        assert credentials.inputs["logging"] == "stderr"
        join = res(hk, f"{name}-join")
        assert isinstance(join.inputs["stdin"], Secret)
        assert join.inputs["logging"] == "stderr"
    kubeconfig = res(hk, "kubeconfig")
    assert "stdout" in kubeconfig.additional_secret_outputs and kubeconfig.inputs["logging"] == "stderr"
    assert isinstance(hk.outputs["kubeconfig"], Secret)
    assert isinstance(hk.named("hk-prod-kubeadm-kubernetes").inputs["kubeconfig"], Secret)
    token = STAND_IN_JOIN_LINE.split("--token ")[1].split()[0]
    plain = json.dumps([r.inputs for r in hk.resources], default=lambda v: "[secret]" if isinstance(v, Secret) else repr(v))
    assert token not in plain and "client-key-data" not in plain


def test_kubeconfig_points_at_the_api_endpoint(hk):
    assert hk.outputs["apiServer"] == "https://10.30.30.10:6443"
    kubeconfig = yaml.safe_load(hk.outputs["kubeconfig"].value)
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://10.30.30.10:6443"


def test_removal_drains_then_resets_then_deregisters(hk):
    # Pulumi deletes a resource only after every resource that depends on it, so the delete order is
    # the reverse of the dependencies: drain (depends on join) -> reset (join's delete, depends on the
    # registration) -> deregistration (etcd member if left, Node object). Upstream's "Remove the node".
    for name in JOINERS:
        join, drain, registration = (res(hk, f"{name}-{part}") for part in ("join", "drain", "registration"))
        assert join.urn in drain.dependencies, name
        assert registration.urn in join.dependencies, name
        assert registration.urn in hk.waits_for(drain.urn), name
        assert join.urn not in hk.waits_for(registration.urn), f"{name}: the Node would go before the reset"
        drain_script, deregister = script(drain, "delete"), script(registration, "delete")
        assert "--ignore-daemonsets" in drain_script and "--delete-emptydir-data" in drain_script
        assert "delete node" not in drain_script, f"{name}: the Node must outlive the reset"
        assert 'kubectl delete node "$NODE"' in deregister
        assert not registration.inputs.get("create"), name
        reset = (script_from_ssh_command(join.inputs["delete"]) if name.startswith("hk-win")
                 else script(join, "delete"))
        assert "kubeadm" in reset and "reset" in reset, name
        assert join.delete_before_replace and registration.delete_before_replace and drain.delete_before_replace


def test_control_plane_removal_checks_quorum_and_removes_a_leftover_etcd_member(hk):
    for name in CONTROL_PLANE_JOINERS:
        drain, deregister = script(res(hk, f"{name}-drain"), "delete"), script(res(hk, f"{name}-registration"), "delete")
        for text in (drain, deregister):
            assert bash_input(text, "ETCD_POD") == "etcd-hk-cp-1" and "check_quorum_without" in text
        assert "member remove" in deregister
    for name in LINUX_WORKERS + WINDOWS_WORKERS:
        for part in ("drain", "registration"):
            # A worker holds no etcd member: its steps name no etcd pod, so they never run etcdctl.
            assert bash_input(script(res(hk, f"{name}-{part}"), "delete"), "ETCD_POD") == "", name


def test_windows_nodes_register_with_the_taint(hk):
    from render.hyperv import script_from_ssh_command
    for name in WINDOWS_WORKERS:
        join_script = script_from_ssh_command(res(hk, f"{name}-join").inputs["create"])
        assert "node-role.kubernetes.io/windows" in join_script and "npipe:////./pipe/containerd-containerd" in join_script


def _declare_with_network_prerequisite():
    from components.cluster.bootstrap import KubeadmCluster, WindowsJoins
    from components.machines.nodes import Machines
    from config.loader import load
    from config.secrets import Secrets
    from plan.cluster import cluster_plan

    spec = load(raw_config(hk_prod_values())).spec
    plan = cluster_plan(spec)
    fake = pulumi.Output.secret("offline")
    secrets = Secrets(proxmox_api_token=fake, proxmox_ssh_private_key=fake, node_ssh_private_key=fake,
                      smb_credentials=(fake, fake), grafana_admin_password=fake, tls_ca=None,
                      hyperv_ssh_private_key=fake, hyperv_ssh_password=None,
                      windows_admin_password=fake, bastion_ssh_private_key=None)
    machines = Machines("hk-prod", plan.machines, secrets)
    prerequisite = pulumi.CustomResource("test:index:WindowsNetworkReady", "calico-windows-ready", {})
    pin = pulumi.CustomResource("test:index:VersionPin", "version-pin", {})
    cluster = KubeadmCluster("hk-prod-kubeadm", plan, machines, pin)
    WindowsJoins("hk-prod-kubeadm-windows", plan, machines, cluster.access, after=[prerequisite])
    return None


def test_windows_joins_wait_for_the_network_prerequisites():
    recording = run_declarations(_declare_with_network_prerequisite)
    prerequisite = recording.named("calico-windows-ready").urn
    for name in WINDOWS_WORKERS:
        assert prerequisite in recording.waits_for(res(recording, f"{name}-join").urn)
    for name in CONTROL_PLANE_JOINERS + LINUX_WORKERS:
        assert prerequisite not in recording.waits_for(res(recording, f"{name}-join").urn)


@pytest.mark.parametrize("old,new", [("1.36.4", "1.36.4"), ("1.36.3", "1.36.4"), ("1.35.9", "1.36.4"),
                                     ("1.36.4", "1.37.1")])
def test_the_version_pin_lets_kubeadm_upgrades_through(old, new):
    provider = KubernetesVersionPinProvider()
    assert provider.check({}, {"kubernetesVersion": new}).failures == []
    assert provider.check({"kubernetesVersion": old, "stateFormat": 2}, {"kubernetesVersion": new}).failures == []


@pytest.mark.parametrize("old,new,fragment", [
    ("1.36.4", "1.36.3", "would be a downgrade"),
    ("1.36.4", "1.35.9", "would be a downgrade"),
    ("1.35.9", "1.37.1", "upgrade to 1.36 first"),
    ("1.36.4", "2.0.0", "one minor at a time"),
])
def test_a_version_change_kubeadm_cannot_follow_fails_the_preview_with_a_clear_message(old, new, fragment):
    failures = KubernetesVersionPinProvider().check({"kubernetesVersion": old, "stateFormat": 2},
                                                    {"kubernetesVersion": new}).failures
    assert [f.property for f in failures] == ["kubernetesVersion"]
    assert fragment in failures[0].reason and "Nothing was changed." in failures[0].reason


def test_a_state_written_by_an_earlier_release_is_refused_until_it_is_migrated():
    failures = KubernetesVersionPinProvider().check({"kubernetesVersion": "1.36.4"}, {"kubernetesVersion": "1.36.4"}).failures
    assert [f.property for f in failures] == ["stateFormat"] and "tools.migrate_state" in failures[0].reason


def test_windows_kubelets_get_max_pods_from_the_block_size_and_linux_kubelets_keep_the_default():
    for block_size, expected in ((26, "60"), (27, "28")):
        values = hk_prod_values()
        values["calico"]["blockSize"] = block_size
        recording = run_program(raw_config(values))
        for node in ("hk-win-1", "hk-win-3"):
            join = script_from_ssh_command(recording.named(f"hk-prod-kubeadm-windows-{node}-join").inputs["create"])
            # The join file is a PowerShell array of its lines, quotes doubled.
            assert f"'  - name: max-pods', '    value: ''{expected}'''," in join, node
        linux = script_from_bash_command(recording.named("hk-prod-kubeadm-hk-lnx-1-join").inputs["create"])
        assert "max-pods" not in linux and "node-ip" in linux


def test_a_1_35_cluster_enables_the_mutating_admission_policy_beta_on_its_api_servers(hk_recording):
    values = hk_prod_values()
    values["cluster"]["kubernetesVersion"] = "1.35.9"
    init = script_from_bash_command(run_program(raw_config(values)).named("hk-prod-kubeadm-init").inputs["create"])
    assert "  - name: feature-gates\n    value: MutatingAdmissionPolicy=true\n" in init
    assert "  - name: runtime-config\n    value: admissionregistration.k8s.io/v1beta1=true\n" in init
    current = script_from_bash_command(hk_recording.named("hk-prod-kubeadm-init").inputs["create"])
    assert "MutatingAdmissionPolicy" not in current
