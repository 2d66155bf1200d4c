"""tools.init: the starter stack file loads through the program's validator and renders, its header names exactly
the secrets it needs, and a flag that cannot make a stack exits 2 and writes nothing."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from config import compat
from config.loader import PROJECT, LoadedStack, from_stack_file, load
from config.secret_keys import required_secrets
from tools import init, synth
from tools.mock.providers import new_host_key

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIKQN0xz5t5mrUBqCIba2ISZ+fvqVp3mvJbSAPrDaapP ops@example"
SITE = ["--network", "192.168.1.0/24", "--proxmox", "pve=192.168.1.10"]


def host_key_flags(flags: tuple[str, ...] | list[str]) -> list[str]:
    """A --host-key for every --proxmox and --hyperv host among `flags` (a stand-in key of its own each)."""
    names = [flags[i + 1].split("=")[0] for i, flag in enumerate(flags) if flag in ("--proxmox", "--hyperv")]
    return [f"--host-key={name}={new_host_key(name, 1)}" for name in names]


def run(tmp_path: Path, *flags: str, stack: str = "mylab", key: str | None = KEY,
        host_keys: bool = True) -> tuple[int, Path]:
    """tools.init with a key file of its own (never ~/.ssh), writing into tmp_path, with a host key for every host
    unless `host_keys` is false; its status and output path."""
    key_file = tmp_path / "id.pub"
    if key is not None:
        key_file.write_text(key + "\n")
    output = tmp_path / f"Pulumi.{stack}.yaml"
    keys = host_key_flags(flags) if host_keys else []
    status = init.main(["--stack", stack, "--ssh-public-key", str(key_file), "--output", str(output), *flags, *keys])
    return status, output


def loaded(path: Path) -> LoadedStack:
    return load(from_stack_file(path))


def section(path: Path, key: str) -> object:
    return yaml.safe_load(path.read_text())["config"][f"{PROJECT}:{key}"]


def test_the_default_is_the_lab_shape_and_renders(tmp_path):
    status, path = run(tmp_path, *SITE, "--hyperv", "hv=192.168.1.20")
    assert status == 0
    stack = loaded(path)
    spec = stack.spec
    # Only that the Windows kube-proxy image's tag could not be confirmed (config/compat.py WINDOWS_KUBE_PROXY_CONFIRMED).
    assert [w.path for w in stack.warnings] == ["cluster.kubernetesVersion"]
    assert spec.cluster.name == "mylab" and spec.cluster.api_vip is None
    assert [len(spec.nodes.control_plane), len(spec.nodes.linux), len(spec.nodes.windows)] == [1, 1, 1]
    assert spec.network.nodes.vlan_id is None and spec.network.management is None
    assert str(spec.network.nodes.gateway) == "192.168.1.1" and [str(a) for a in spec.network.dns_servers] == ["192.168.1.1"]
    assert spec.proxmox.endpoint == "https://192.168.1.10:8006/"
    assert [(t.distro, t.vm_id, t.node) for t in spec.proxmox.templates] == [("ubuntu22", 9000, "pve")]
    assert all(getattr(spec, name) is None for name in ("storage", "observability", "policy", "workloads", "etcd_backup"))
    assert not spec.registry.mirrors
    document = yaml.safe_load(path.read_text())["config"]
    for key in ("storage", "observability", "policy", "workloads", "registry", "etcdBackup"):
        assert f"{PROJECT}:{key}" not in document
    cp, lnx, win = spec.nodes.control_plane[0], spec.nodes.linux[0], spec.nodes.windows[0]
    assert (cp.name, cp.cpu, cp.memory_mb, cp.disk_gb, cp.vm_id, str(cp.ip)) == ("mylab-cp-1", 2, 4096, 40, 201, "192.168.1.50")
    assert (lnx.name, lnx.cpu, lnx.memory_mb, lnx.disk_gb, lnx.vm_id) == ("mylab-lnx-1", 4, 8192, 60, 202)
    assert (win.name, win.cpu, win.memory_mb, win.disk_gb, win.hyperv_host) == ("mylab-win-1", 4, 8192, 80, "hv")
    assert spec.hyperv.hosts[0].vm_folder == "D:\\Hyper-V\\mylab"
    assert spec.access.ssh_public_keys == [KEY]
    assert synth.main(["--stack-file", str(path), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "resources.json").is_file()


def test_the_default_kubernetes_version_is_a_pinned_patch():
    version = init.default_kubernetes_version()
    assert version == compat.KUBERNETES[compat.kubernetes_minor(version)].patch


def test_the_header_lists_exactly_the_secrets_the_stack_needs(tmp_path, capsys):
    status, path = run(tmp_path, *SITE, "--hyperv", "hv=192.168.1.20")
    assert status == 0
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    listed = [re.sub(r"^# Secrets this stack needs: ", "", line) for line in header if line.startswith("# Secrets")]
    needed = required_secrets(loaded(path).spec)
    assert len(listed) == 1 and listed[0].split(", ") == needed
    assert needed == ["proxmoxApiToken", "proxmoxSshPrivateKey", "nodeSshPrivateKey", "hypervSshPrivateKey",
                      "windowsAdminPassword"]
    out = capsys.readouterr().out
    for key in needed:
        assert f"pulumi config set --secret --stack mylab {key}" in out
    assert "pulumi preview --stack mylab" in out


def test_three_control_planes_behind_a_vip_spread_over_the_proxmox_nodes(tmp_path):
    status, path = run(tmp_path, *SITE, "--proxmox", "pve2=192.168.1.11", "--hyperv", "hv=192.168.1.20",
                       "--control-planes", "3", "--api-vip", "192.168.1.40", "--linux-workers", "2",
                       "--template-vmid", "202")
    assert status == 0
    spec = loaded(path).spec
    assert str(spec.cluster.api_vip) == "192.168.1.40"
    linux = spec.linux_nodes
    assert [n.proxmox_node for n in linux] == ["pve", "pve2", "pve", "pve2", "pve"]
    template_ids = [t.vm_id for t in spec.proxmox.templates]
    assert template_ids == [202, 203]
    vm_ids = [n.vm_id for n in linux]
    assert len(set(vm_ids)) == len(vm_ids) and not set(vm_ids) & set(template_ids)
    assert synth.main(["--stack-file", str(path), "--out", str(tmp_path / "out")]) == 0


def test_three_control_planes_without_a_vip_are_refused(tmp_path, capsys):
    status, path = run(tmp_path, *SITE, "--hyperv", "hv=192.168.1.20", "--control-planes", "3")
    assert status == 2
    assert not path.exists()
    assert "--api-vip" in capsys.readouterr().err


def test_no_windows_workers_need_no_hyperv(tmp_path):
    status, path = run(tmp_path, *SITE, "--windows-workers", "0")
    assert status == 0
    spec = loaded(path).spec
    assert spec.nodes.windows == [] and spec.hyperv.hosts == []
    assert f"{PROJECT}:hyperv" not in yaml.safe_load(path.read_text())["config"]
    assert required_secrets(spec) == ["proxmoxApiToken", "proxmoxSshPrivateKey", "nodeSshPrivateKey"]
    assert synth.main(["--stack-file", str(path), "--out", str(tmp_path / "out")]) == 0


def test_windows_workers_without_a_hyperv_host_are_refused(tmp_path, capsys):
    status, path = run(tmp_path, *SITE)
    assert status == 2 and not path.exists()
    assert "--hyperv" in capsys.readouterr().err


def test_a_vlan_tags_the_node_network(tmp_path):
    status, path = run(tmp_path, *SITE, "--windows-workers", "0", "--vlan-id", "30", "--proxmox-bridge", "vmbr30")
    assert status == 0
    assert loaded(path).spec.network.nodes.vlan_id == 30
    assert section(path, "network") == {"nodes": {"vlanId": 30, "cidr": "192.168.1.0/24", "gateway": "192.168.1.1",
                                                  "proxmoxBridge": "vmbr30"}, "dnsServers": ["192.168.1.1"]}


def test_an_existing_file_is_kept_without_force(tmp_path, capsys):
    output = tmp_path / "Pulumi.mylab.yaml"
    output.write_text("mine\n")
    status, _ = run(tmp_path, *SITE, "--windows-workers", "0")
    assert status == 2
    assert output.read_text() == "mine\n"
    assert "--force" in capsys.readouterr().err
    status, _ = run(tmp_path, *SITE, "--windows-workers", "0", "--force")
    assert status == 0 and loaded(output).spec.cluster.name == "mylab"


def test_a_first_ip_that_runs_past_the_network_is_refused(tmp_path, capsys):
    status, path = run(tmp_path, *SITE, "--hyperv", "hv=192.168.1.20", "--first-ip", "192.168.1.253")
    assert status == 2 and not path.exists()
    assert "--first-ip" in capsys.readouterr().err


def test_node_addresses_skip_the_hosts_and_dns_servers(tmp_path):
    status, path = run(tmp_path, "--network", "192.168.1.0/24", "--proxmox", "pve=192.168.1.50",
                       "--dns", "192.168.1.51", "--windows-workers", "0")
    assert status == 0
    assert [str(n.ip) for n in loaded(path).spec.linux_nodes] == ["192.168.1.52", "192.168.1.53"]


@pytest.mark.parametrize("flags, named", [
    (["--network", "192.168.1.5/24", "--proxmox", "pve=192.168.1.10"], "--network"),
    ([*SITE, "--gateway", "10.0.0.1"], "--gateway"),
    ([*SITE, "--api-vip", "10.0.0.9"], "--api-vip"),
    (["--network", "192.168.1.0/24", "--proxmox", "pve"], "--proxmox"),
])
def test_an_invalid_flag_value_exits_2_naming_the_flag(tmp_path, capsys, flags, named):
    status, path = run(tmp_path, *flags, "--windows-workers", "0")
    assert status == 2 and not path.exists()
    assert named in capsys.readouterr().err


def test_a_stack_the_validator_refuses_is_not_written(tmp_path, capsys):
    # The node network overlaps the default service CIDR 10.96.0.0/12: the loader's rule, at its key path.
    status, path = run(tmp_path, "--network", "10.96.0.0/24", "--proxmox", "pve=10.96.0.10", "--windows-workers", "0")
    assert status == 2 and not path.exists()
    assert "network.nodes.cidr" in capsys.readouterr().err


def test_a_missing_key_file_is_refused_with_how_to_make_one(tmp_path, capsys):
    """A stack no one can sign in to is not written (earlier releases wrote a placeholder key, which config.rules now
    refuses: tests/config/test_site_input.py)."""
    status, path = run(tmp_path, *SITE, "--windows-workers", "0", key=None)
    assert status == 2 and not path.exists()
    assert "does not exist; make a key pair (ssh-keygen -t ed25519)" in capsys.readouterr().err


def test_a_file_that_is_not_a_public_key_is_refused_and_not_copied(tmp_path, capsys):
    secret = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    status, path = run(tmp_path, *SITE, "--windows-workers", "0", key=secret)
    assert status == 2 and not path.exists()
    err = capsys.readouterr().err
    assert "--ssh-public-key" in err and "b3BlbnNzaC1rZXktdjEAAAAA" not in err


def test_long_stack_names_get_a_netbios_computer_name(tmp_path):
    status, path = run(tmp_path, *SITE, "--hyperv", "hv=192.168.1.20", "--windows-workers", "2", stack="averylongstackname")
    assert status == 0
    names = [n.netbios_name for n in loaded(path).spec.nodes.windows]
    assert names == ["averylong-win-1", "averylong-win-2"] and all(len(n) <= 15 for n in names)


def test_the_defaults_write_next_to_pulumi_yaml_with_the_users_key(tmp_path, monkeypatch, capsys):
    # The repository root and the home folder are tmp_path here: nothing is written into the real ones.
    monkeypatch.setattr(init, "ROOT", tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_ed25519.pub").write_text(KEY + "\n")
    assert init.main(["--stack", "mylab", *SITE, "--windows-workers", "0", *host_key_flags(SITE)]) == 0
    path = tmp_path / "Pulumi.mylab.yaml"
    assert loaded(path).spec.access.ssh_public_keys == [KEY]
    out = capsys.readouterr().out
    assert f"wrote {path}" in out and "make synth STACK=mylab" in out


def test_every_host_is_written_with_its_host_key_and_one_without_is_refused_with_how_to_read_it(tmp_path, capsys):
    status, path = run(tmp_path, *SITE, "--hyperv", "hv=192.168.1.20")
    assert status == 0
    assert section(path, "proxmox")["nodes"][0]["hostKey"] == new_host_key("pve", 1)
    assert section(path, "hyperv")["hosts"][0]["hostKey"] == new_host_key("hv", 1)
    assert "security" not in yaml.safe_load(path.read_text())["config"].get(f"{PROJECT}:security", {})
    # A .pub file's line is taken with its comment dropped.
    status, path = run(tmp_path, *SITE, "--windows-workers", "0", f"--host-key=pve={new_host_key('pve', 1)} root@pve",
                       "--force", host_keys=False)
    assert status == 0 and section(path, "proxmox")["nodes"][0]["hostKey"] == new_host_key("pve", 1)
    capsys.readouterr()
    status, path = run(tmp_path, *SITE, "--windows-workers", "0", "--force", stack="other", host_keys=False)
    assert status == 2 and not path.exists()
    error = capsys.readouterr().err
    assert "--host-key: none for pve (192.168.1.10)" in error and "ssh-keyscan -t ed25519 192.168.1.10" in error
    assert "--unpinned-host-keys" in error


def test_an_rsa_or_unknown_host_key_is_refused(tmp_path, capsys):
    status, _ = run(tmp_path, *SITE, "--windows-workers", "0", "--host-key=pve=ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ",
                    host_keys=False)
    assert status == 2 and "--host-key" in capsys.readouterr().err
    status, _ = run(tmp_path, *SITE, "--windows-workers", "0", f"--host-key=other={new_host_key('x', 1)}")
    assert status == 2 and "--host-key: other is not a --proxmox or --hyperv host" in capsys.readouterr().err


def test_a_lab_may_go_unpinned_only_by_saying_so_and_is_warned(tmp_path, capsys):
    status, path = run(tmp_path, *SITE, "--windows-workers", "0", "--unpinned-host-keys", host_keys=False)
    assert status == 0
    assert section(path, "security") == {"pinHostKeys": False} and "hostKey" not in section(path, "proxmox")["nodes"][0]
    assert "warning: security.pinHostKeys: false" in capsys.readouterr().err
