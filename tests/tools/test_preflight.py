"""tools.preflight against a fake Proxmox VE API on 127.0.0.1 (tests/fake_proxmox.py): every check passes on a ready
site, and each fails with its fix when the site lacks what it checks. No test reaches any other address."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from config.loader import from_stack_file, load
from tests.conftest import ROOT
from tests.fake_proxmox import PROXY_VARIABLES, TOKEN, FakeProxmox, lab_site, make_certificate, serve
from tools.preflight import proxmox_api as preflight
from tools.preflight.results import FAIL, PASS, WARN, Result, report

LAB = ROOT / "examples" / "lab" / "Pulumi.lab.yaml"
certificate = pytest.fixture(scope="module")(lambda tmp_path_factory: make_certificate(tmp_path_factory.mktemp("tls")))


@pytest.fixture
def fake(certificate, monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server = serve(lab_site(TOKEN), *certificate)
    yield server
    server.close()


def _stack_file(tmp_path: Path, fake: FakeProxmox, **changes) -> Path:
    document = yaml.safe_load(LAB.read_text())
    document["config"]["hybrid-cluster:proxmox"]["endpoint"] = fake.endpoint
    for key, value in changes.items():
        document["config"][f"hybrid-cluster:{key}"] = value
    path = tmp_path / "Pulumi.lab.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _results(tmp_path: Path, fake: FakeProxmox, **changes) -> list[Result]:
    spec = load(from_stack_file(_stack_file(tmp_path, fake, **changes))).spec
    return preflight.run(spec, TOKEN, ca_file=fake.ca_file).results


def _failed(results: list[Result]) -> dict[str, Result]:
    return {r.check: r for r in results if r.status == FAIL}


def test_a_ready_site_passes_every_check_reading_only(tmp_path, fake):
    results = _results(tmp_path, fake)
    assert not _failed(results), report(results)
    checks = {r.check for r in results}
    assert {"API and token", "online", "template 9000 (ubuntu22)", "datastore local-lvm (images)",
            "datastore local (snippets)", "bridge vmbr0 (network.nodes)", "VM id 201 (lab-cp-1)",
            "privileges on /vms/9000", "privileges on /vms/201", "privileges on /storage/local",
            "privileges on /sdn/zones/localnetwork/vmbr0", "privileges on /nodes/pve"} <= checks
    assert all(r.status == PASS for r in results)
    # The fake answers GET only (do_GET); every request reached it through the API's path.
    assert fake.site.requests and all(r.startswith("/api2/json/") for r in fake.site.requests)


def test_a_refused_token_stops_there_with_its_fix(tmp_path, fake):
    spec = load(from_stack_file(_stack_file(tmp_path, fake))).spec
    results = preflight.run(spec, TOKEN.replace("0b6a", "ffff"), ca_file=fake.ca_file).results
    assert [(r.check, r.status) for r in results] == [("API and token", FAIL)]
    assert "HTTP 401" in results[0].detail and "proxmoxApiToken" in results[0].fix


def test_a_certificate_the_site_does_not_trust_is_refused(tmp_path, fake):
    spec = load(from_stack_file(_stack_file(tmp_path, fake))).spec
    [result] = preflight.run(spec, TOKEN).results          # the system's CAs do not know the fake's
    assert result.status == FAIL and "CERTIFICATE_VERIFY_FAILED" in result.detail


def test_an_offline_node_fails(tmp_path, fake):
    fake.site.nodes["pve"] = "offline"
    failed = _failed(_results(tmp_path, fake))
    assert "offline" in failed["online"].detail and "pvecm nodes" in failed["online"].fix


@pytest.mark.parametrize("change, status, problem, fix", [
    ({"template": 0}, FAIL, "is not a template", "qm template 9000"),
    # The provider turns the agent on and makes a cloud-init drive on each clone: warnings (review of #41).
    ({"agent": "0"}, WARN, "has the QEMU guest agent option off", "qm set 9000 --agent enabled=1"),
    ({"agent": "enabled=0,type=virtio"}, WARN, "has the QEMU guest agent option off", "--agent enabled=1"),
    ({"ide2": None}, WARN, "has no cloud-init drive", "qm set 9000 --ide2 local-lvm:cloudinit"),
])
def test_a_template_without_what_the_clones_need_is_reported(tmp_path, fake, change, status, problem, fix):
    config = fake.site.configs[("pve", 9000)]
    for key, value in change.items():
        if value is None:
            config.pop(key)
        else:
            config[key] = value
    [result] = [r for r in _results(tmp_path, fake) if r.check == "template 9000 (ubuntu22)"]
    assert result.status == status and problem in result.detail and fix in result.fix


def test_a_missing_template_fails(tmp_path, fake):
    del fake.site.configs[("pve", 9000)]
    failed = _failed(_results(tmp_path, fake))
    assert "does not exist" in failed["template 9000 (ubuntu22)"].detail


def test_snippets_not_enabled_fails_with_the_pvesm_line(tmp_path, fake):
    fake.site.storages["pve"][0]["content"] = "iso,vztmpl,backup"
    failed = _failed(_results(tmp_path, fake))
    assert failed["datastore local (snippets)"].fix == "pvesm set local --content backup,iso,snippets,vztmpl"
    fake.site.storages["pve"][0]["content"] = "none"                        # Proxmox's "no content"
    failed = _failed(_results(tmp_path, fake))
    assert failed["datastore local (snippets)"].fix == "pvesm set local --content snippets"


def test_snippets_on_a_block_storage_fail_with_another_datastore_as_the_fix(tmp_path, fake):
    snippets = {"snippets": "local-lvm", "vmDisks": "local-lvm", "cloudInit": "local-lvm"}
    proxmox = yaml.safe_load(LAB.read_text())["config"]["hybrid-cluster:proxmox"]
    proxmox["datastores"] = snippets
    failed = _failed(_results(tmp_path, fake, proxmox={**proxmox, "endpoint": fake.endpoint}))
    assert "lvmthin storage, which cannot hold snippets" in failed["datastore local-lvm (snippets)"].detail


def test_too_little_space_for_the_new_disks_is_a_warning_as_thin_pools_over_commit(tmp_path, fake):
    fake.site.storages["pve"][1]["avail"] = 50 * 1024 ** 3      # two 40 GB disks to come
    [result] = [r for r in _results(tmp_path, fake) if r.check == "datastore local-lvm (images)"]
    assert result.status == WARN and "50 GiB free, the new VMs' disks on pve are 80 GiB" in result.detail


def test_an_inactive_datastore_fails_saying_where_to_look(tmp_path, fake):
    fake.site.storages["pve"][1]["active"] = 0
    failed = _failed(_results(tmp_path, fake))
    assert "`pvesm status` on pve says why" in failed["datastore local-lvm (images)"].fix


def test_pending_network_changes_are_a_warning_and_an_ovs_bridge_is_vlan_aware(tmp_path, fake):
    fake.site.network_changes["pve"] = "--- /etc/network/interfaces\n+++ /etc/network/interfaces.new\n"
    [result] = [r for r in _results(tmp_path, fake) if r.check == "network changes"]
    assert result.status == WARN and "ifreload -a" in result.fix
    fake.site.bridges["pve"][0]["type"] = "OVSBridge"
    network = yaml.safe_load(LAB.read_text())["config"]["hybrid-cluster:network"]
    network["nodes"].update(vlanId=30, proxmoxVlanAware=True)
    assert not _failed(_results(tmp_path, fake, network=network))


def test_a_missing_or_plain_bridge_fails(tmp_path, fake):
    fake.site.bridges["pve"][0]["iface"] = "vmbr1"
    failed = _failed(_results(tmp_path, fake))
    assert "vmbr0 is not a bridge of pve" in failed["bridge vmbr0 (network.nodes)"].detail
    fake.site.bridges["pve"][0]["iface"] = "vmbr0"
    network = yaml.safe_load(LAB.read_text())["config"]["hybrid-cluster:network"]
    network["nodes"].update(vlanId=30, proxmoxVlanAware=True)
    failed = _failed(_results(tmp_path, fake, network=network))
    assert "bridge-vlan-aware yes" in failed["bridge vmbr0 (network.nodes)"].fix
    fake.site.bridges["pve"][0]["bridge_vlan_aware"] = 1
    results = _results(tmp_path, fake, network=network)
    assert not _failed(results)
    # A tagged NIC is checked where Proxmox checks it: the VLAN's own path.
    assert "privileges on /sdn/zones/localnetwork/vmbr0/30" in {r.check for r in results}


def test_a_vm_id_taken_by_another_vm_fails_and_this_stacks_own_passes(tmp_path, fake):
    fake.site.vms.append({"id": "qemu/201", "vmid": 201, "name": "build-runner", "node": "pve", "type": "qemu",
                          "template": 0})
    failed = _failed(_results(tmp_path, fake))
    assert "taken by qemu build-runner on pve" in failed["VM id 201 (lab-cp-1)"].detail
    # One the token may not see is taken all the same (cluster/nextid reads the whole cluster's list).
    fake.site.hidden_vmids.add(201)
    failed = _failed(_results(tmp_path, fake))
    assert failed["VM id 201 (lab-cp-1)"].detail == "taken by a VM the token cannot see"
    fake.site.hidden_vmids.clear()
    fake.site.vms[-1]["name"] = "lab-cp-1"
    results = _results(tmp_path, fake)
    assert not _failed(results)
    assert any("already this stack's VM lab-cp-1" in r.detail for r in results)


@pytest.mark.parametrize("release, agent_privilege", [("9.1", "VM.GuestAgent.Audit"), ("8.4", "VM.Monitor")])
def test_missing_privileges_are_listed_with_the_pveum_lines(tmp_path, fake, release, agent_privilege):
    fake.site.release = release
    fake.site.privileges = {"*": {"VM.Audit", "Datastore.Audit", "SDN.Use", "Sys.Audit"}}
    failed = _failed(_results(tmp_path, fake))
    vm = failed["privileges on /vms/201"]
    assert "VM.Clone" in vm.detail and agent_privilege in vm.detail
    assert "pveum role modify <role> --append 1 --privs" in vm.fix
    assert "pveum user token permissions pulumi@pve preflight --path /vms/201" in vm.fix
    assert "0b6a" not in vm.fix                                                          # never the secret
    assert "VM.Clone" in failed["privileges on /vms/9000"].detail
    assert "Datastore.Allocate" in failed["privileges on /storage/local"].detail


def test_each_path_is_checked_where_proxmox_checks_it(tmp_path, fake):
    """A grant on /vms that does not reach /vms/201 (propagate 0, or a deeper ACL): the clone is refused there, and
    so is the preflight. On PVE 9 VM.GuestAgent.Unrestricted serves for the agent's addresses too."""
    everything = set(fake.site.privileges["*"])
    fake.site.privileges = {"*": everything, "/vms/201": everything - {"VM.Clone", "VM.GuestAgent.Audit"}}
    failed = _failed(_results(tmp_path, fake))
    assert set(failed) == {"privileges on /vms/201"}
    fake.site.privileges["/vms/201"] = (everything - {"VM.GuestAgent.Audit"}) | {"VM.GuestAgent.Unrestricted"}
    assert not _failed(_results(tmp_path, fake))


def test_the_property_string_and_drive_parsers_follow_proxmox():
    assert preflight.agent_enabled("1") and preflight.agent_enabled("enabled=1,type=virtio")
    assert preflight.agent_enabled("1,fstrim_cloned_disks=1") and not preflight.agent_enabled(None)
    assert not preflight.agent_enabled("0,fstrim_cloned_disks=1") and not preflight.agent_enabled("type=virtio")
    assert preflight.cloudinit_drive({"scsi1": "local:9000/vm-9000-cloudinit.qcow2,media=cdrom"}) == "scsi1"
    assert preflight.cloudinit_drive({"ide2": "local:iso/ubuntu.iso,media=cdrom"}) is None
    assert preflight.cloudinit_drive({"ide2": "local-lvm:vm-9000-cloudinit"}) is None      # not a cdrom
