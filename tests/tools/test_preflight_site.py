"""tools.preflight against a whole fake site on 127.0.0.1: the Proxmox API (tests/fake_proxmox.py), a Proxmox node and
a Hyper-V host over SSH (tests/fake_ssh.py, tests/fake_site.py), a DNS server, and the API's own TLS listener as a
registry mirror. Each check passes on the ready lab site and fails, with its fix, once its prerequisite is taken away.
No test contacts another address: every server binds 127.0.0.1, and the node's network tools are stubs."""
from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from ipaddress import IPv4Address
from pathlib import Path

import pytest
import yaml

from config.loader import from_stack_file, load
from tests.conftest import ROOT
from tests.fake_proxmox import PROXY_VARIABLES, TOKEN, lab_site, make_certificate, serve
from tests.fake_site import FakeDns, lab_host, lab_node
from tests.fake_ssh import FakeSsh, ed25519_key
from tools.preflight import __main__ as cli
from tools.preflight import hosts, network, ssh
from tools.preflight.results import FAIL, PASS, WARN, Progress, Result, report

LAB = ROOT / "examples" / "lab" / "Pulumi.lab.yaml"
certificate = pytest.fixture(scope="module")(lambda tmp_path_factory: make_certificate(tmp_path_factory.mktemp("tls")))


@dataclasses.dataclass
class Site:
    api: object
    node: object
    node_ssh: FakeSsh
    host: object
    host_ssh: FakeSsh
    dns: FakeDns
    stack: Path
    access: hosts.Access
    ca_file: str

    def spec(self):
        spec = load(from_stack_file(self.stack)).spec
        # The stack rules refuse a loopback DNS server (config/rules.py no_loopback_targets): the fake's is set here.
        return spec.model_copy(update={"network": spec.network.model_copy(
            update={"dns_servers": [IPv4Address("127.0.0.1")]})})

    def run(self, endpoint: ssh.Endpoint, command: str, **kwargs) -> ssh.Completed:
        """ssh.run, with the Proxmox node's address and port 22 (which the program always uses) redirected to the fake's
        on 127.0.0.1: no connection goes to the lab's own address."""
        if endpoint.port == 22:
            endpoint = dataclasses.replace(endpoint, host="127.0.0.1", port=self.node_ssh.port)
        return ssh.run(endpoint, command, **kwargs)

    def results(self, mount_images: bool = False, **kwargs) -> list[Result]:
        return cli.run_all(self.spec(), TOKEN, kwargs.pop("access", self.access), ca_file=self.ca_file,
                           mount_images=mount_images, run=self.run, dns_port=self.dns.port)


# Every connection this process opens while a site test runs, seen through Python's audit hook (`socket.connect`):
# the probes' own (bash, perl, openssl) go to 127.0.0.1 too, by the addresses the fake stack names.
_CONNECTS: list[object] | None = None


def _audit(event: str, args: tuple) -> None:
    if event == "socket.connect" and _CONNECTS is not None:
        _CONNECTS.append(args[1])


sys.addaudithook(_audit)


@pytest.fixture
def site(tmp_path, certificate, monkeypatch):
    # The DNS probe runs with the Net::DNS a Proxmox node has; the test machine needs it too.
    assert subprocess.run(["perl", "-MNet::DNS", "-e", "1"], capture_output=True).returncode == 0, \
        "Perl's Net::DNS is missing: install libnet-dns-perl (make tools does)"
    global _CONNECTS
    _CONNECTS = []
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    api = serve(lab_site(TOKEN), *certificate)
    proxmox_text, proxmox_key = ed25519_key()
    hyperv_text, hyperv_key = ed25519_key()
    node = lab_node(tmp_path)
    node_ssh = FakeSsh("root", node.answer, client_key=proxmox_key)
    host = lab_host()
    host_ssh = FakeSsh("Administrator", host.answer, client_key=hyperv_key)
    dns = FakeDns({"dl.k8s.io": "34.107.204.206", "pool.ntp.org": "162.159.200.1"})
    document = yaml.safe_load(LAB.read_text())
    config = document["config"]
    config["hybrid-cluster:proxmox"]["endpoint"] = api.endpoint
    config["hybrid-cluster:proxmox"]["nodes"][0].update(hostKey=node_ssh.pin)
    config["hybrid-cluster:hyperv"]["hosts"][0].update(address="127.0.0.1", port=host_ssh.port, hostKey=host_ssh.pin)
    # A registry mirror: the API's TLS listener, whose certificate only the stack's CA vouches for.
    config["hybrid-cluster:registry"] = {"mirrors": [{"upstream": "docker.io", "endpoint": api.endpoint,
                                                      "caCertificate": Path(api.ca_file).read_text()}]}
    stack = tmp_path / "Pulumi.lab.yaml"
    stack.write_text(yaml.safe_dump(document))
    yield Site(api, node, node_ssh, host, host_ssh, dns, stack, hosts.Access(proxmox_text, hyperv_text, None, None),
               api.ca_file)
    for server in (node_ssh, host_ssh, dns):
        server.close()
    api.close()
    connects, _CONNECTS = _CONNECTS, None
    assert {address[0] for address in connects if isinstance(address, tuple)} <= {"127.0.0.1"}, connects


def _by_check(results: list[Result]) -> dict[tuple[str, str], Result]:
    return {(r.host, r.check): r for r in results}


def _failed(results: list[Result]) -> dict[tuple[str, str], Result]:
    return {key: r for key, r in _by_check(results).items() if r.status == FAIL}


def test_a_ready_site_passes_every_host_and_network_check(site):
    results = site.results()
    assert not _failed(results), report(results)
    checks = _by_check(results)
    for key in [("pve", "SSH"), ("pve", "pvesm"), ("pve", "snippets directory (local)"), ("hv", "SSH"),
                ("hv", "OpenSSH DefaultShell"), ("hv", "Hyper-V role"), ("hv", "vSwitch External"),
                ("hv", "golden image win2022"), ("hv", r"free space (D:\Hyper-V\lab)"),
                ("network, from pve", "gateway 192.168.1.1"), ("network, from pve", "address 192.168.1.51 (lab-cp-1)"),
                ("network, from pve", "address 192.168.1.53 (lab-win-1)"), ("network, from pve", "NTP pool.ntp.org"),
                ("network, from pve", "DNS 127.0.0.1: dl.k8s.io"), ("network, from pve", "DNS 127.0.0.1: pool.ntp.org"),
                ("network, from hv", "gateway 192.168.1.1"), ("network, from hv", "address 192.168.1.53 (lab-win-1)"),
                ("network, from hv", "DNS 127.0.0.1: dl.k8s.io")]:
        assert checks[key].status == PASS, (key, checks[key])
    mirror = next(r for r in results if r.check.startswith("registry.mirrors[0]"))
    assert mirror.status == PASS and "the stack's CA" in mirror.detail
    assert "host key as pinned" in checks[("pve", "SSH")].detail
    # Without --read-images the golden image is not mounted, and the report says what is not read.
    assert "its build is not read" in checks[("hv", "golden image win2022")].detail
    assert "MountImages = $false" in site.host.scripts[-1]
    # One session per host for its checks, one more on the Proxmox node for the network, and on the Hyper-V host a
    # first one that reads DefaultShell with reg.exe (which cmd.exe runs too).
    assert len(site.node_ssh.commands) == 2
    assert site.host_ssh.commands[0] == r"reg query HKLM\SOFTWARE\OpenSSH /v DefaultShell"
    assert len(site.host_ssh.commands) == 2
    assert _CONNECTS and all(address[0] == "127.0.0.1" for address in _CONNECTS)


def test_each_probe_is_what_it_claims_read_only_and_linted(site, tmp_path):
    """The Proxmox probes as sent: shellcheck passes them (tests/render/test_script_files.py lints the files as written), and
    they hold no command that writes (no redirection into a file, no mkdir, rm, tee, pvesm set or qm)."""
    from tests.validators import powershell_errors, shellcheck
    site.results()
    for i, command in enumerate(site.node_ssh.commands):
        assert command.startswith("bash -c ")
        script = command[len("bash -c "):]
        import shlex
        [text] = shlex.split(script)
        path = tmp_path / f"probe{i}.sh"
        path.write_text(text)
        shellcheck(path)
        for word in ("mkdir", "rm ", "pvesm set", " qm ", "> /", ">/var", ">>"):
            assert word not in text.replace("2>/dev/null", "").replace(">/dev/null", ""), word
        assert "tee" not in text.replace("/usr/bin/tee \"$dir/$FILE\"", "")
    [script] = site.host.scripts
    assert powershell_errors(script) == []
    # Without --read-images nothing mounts: the mount is only inside `if ($MountImages ...)`.
    assert "$MountImages = $false" in script


def test_a_host_key_other_than_the_pinned_one_is_refused(site):
    _, other = ed25519_key()
    site.node_ssh.host_key = other
    site.host_ssh.host_key = other
    failed = _failed(site.results())
    for host in ("pve", "hv"):
        result = failed[(host, "SSH")]
        assert "not the pinned key" in result.detail and "pin its new key" in result.fix
    # Nothing ran on a host that presented another key.
    assert site.node_ssh.commands == [] and site.host_ssh.commands == []


def test_a_refused_key_and_a_missing_secret_each_say_how_to_fix_them(site):
    wrong, _ = ed25519_key()
    failed = _failed(site.results(access=dataclasses.replace(site.access, proxmox_key=wrong)))
    assert "refused the sign-in" in failed[("pve", "SSH")].detail
    assert "proxmoxSshPrivateKey" in failed[("pve", "SSH")].fix
    missing = dataclasses.replace(site.access, hyperv_key=None, missing={"hypervSshPrivateKey": "neither X nor Y"})
    failed = _failed(site.results(access=missing))
    assert "no hypervSshPrivateKey (neither X nor Y)" in failed[("hv", "SSH")].detail
    assert "pulumi config set --secret hypervSshPrivateKey" in failed[("hv", "SSH")].fix


def _ssh_user(site, user: str, uid: int) -> None:
    document = yaml.safe_load(site.stack.read_text())
    document["config"]["hybrid-cluster:proxmox"]["sshUser"] = user
    site.stack.write_text(yaml.safe_dump(document))
    site.node_ssh.user = user
    site.node.state.uid = uid


@pytest.mark.parametrize(("change", "check", "detail", "fix"), [
    (lambda s: setattr(s, "sudo", False), "pvesm", "cannot run pvesm", "NOPASSWD: /usr/sbin/pvesm"),
    (lambda s: setattr(s, "sudo_tee", False), "snippets directory (local)", "may not write", "NOPASSWD: /usr/bin/tee"),
])
def test_a_user_other_than_root_needs_sudo_for_pvesm_and_the_upload(site, change, check, detail, fix):
    _ssh_user(site, "pulumi", 1001)
    results = _by_check(site.results())
    assert not _failed(list(results.values())), report(list(results.values()))
    assert results[("pve", "pvesm")].detail == "runs through sudo -n"
    assert results[("pve", "snippets directory (local)")].status == PASS       # the NOPASSWD tee rule, as listed
    change(site.node.state)
    result = _failed(site.results())[("pve", check)]
    assert detail in result.detail and fix in result.fix and "visudo -f /etc/sudoers.d/pulumi" in result.fix


def test_a_snippets_datastore_the_node_does_not_have_is_found(site):
    site.node.state.stores.clear()
    result = _failed(site.results())[("pve", "snippets directory (local)")]
    assert "storage 'local' does not exist" in result.detail and "proxmox.datastores.snippets" in result.fix


def test_a_missing_snippets_directory_is_found(site):
    snippets = Path(site.node.state.stores["local"]) / "snippets"
    snippets.rmdir()
    result = _failed(site.results())[("pve", "snippets directory (local)")]
    assert "does not exist" in result.detail and "pvesm set local --content" in result.fix


@pytest.mark.parametrize(("change", "check", "detail", "fix"), [
    (lambda h: setattr(h, "default_shell", None), "OpenSSH DefaultShell", "not set (cmd.exe)",
     "New-ItemProperty -Path 'HKLM:\\SOFTWARE\\OpenSSH' -Name DefaultShell"),
    (lambda h: setattr(h, "default_shell", r"C:\Windows\System32\cmd.exe"), "OpenSSH DefaultShell", "cmd.exe",
     "powershell.exe"),
    (lambda h: h.features.update({"Hyper-V": "Available"}), "Hyper-V role", "not installed: Hyper-V",
     "Install-WindowsFeature -Name Hyper-V -IncludeManagementTools -Restart"),
    (lambda h: h.features.update({"Hyper-V": "InstallPending"}), "Hyper-V role", "waiting for a restart",
     "Restart-Computer"),
    (lambda h: setattr(h, "hypervisor", False), "Hyper-V role", "no hypervisor runs", "virtualization"),
    (lambda h: h.switches.clear(), "vSwitch External", "no such switch", "New-VMSwitch -Name 'External'"),
    (lambda h: h.switches.update({"External": ["Internal"]}), "vSwitch External", "Internal, not External",
     "Set-VMSwitch -Name 'External' -NetAdapterName"),
    (lambda h: h.images.clear(), "golden image win2022", r"D:\golden\ws2022-sysprep.vhdx does not exist",
     "goldenImages.win2022"),
    (lambda h: h.images[r"D:\golden\ws2022-sysprep.vhdx"].update(format="VHD"), "golden image win2022",
     "is a VHD, not a VHDX", "Convert-VHD"),
    (lambda h: h.images[r"D:\golden\ws2022-sysprep.vhdx"].update(attached=True), "golden image win2022",
     "is attached", "Dismount-VHD"),
    (lambda h: setattr(h, "free", 10 * 1024 ** 3), r"free space (D:\Hyper-V\lab)", "are 14 GiB as copied",
     "another vmFolder"),
])
def test_each_hyperv_prerequisite_fails_with_its_fix(site, change, check, detail, fix):
    change(site.host)
    result = _failed(site.results())[("hv", check)]
    assert detail in result.detail and fix in result.fix


def test_the_golden_image_build_is_read_only_when_asked_and_must_match(site):
    results = _by_check(site.results(mount_images=True))
    assert results[("hv", "golden image win2022")].status == PASS
    assert "Windows 10.0.20348" in results[("hv", "golden image win2022")].detail
    assert "$MountImages = $true" in site.host.scripts[-1]
    site.host.images[r"D:\golden\ws2022-sysprep.vhdx"]["build"] = "10.0.17763"
    result = _failed(site.results(mount_images=True))[("hv", "golden image win2022")]
    assert "holds Windows 10.0.17763, not win2022 (10.0.20348)" in result.detail


def test_a_disk_that_only_grows_past_the_free_space_is_a_warning(site):
    site.host.free = 60 * 1024 ** 3        # 14 GiB copied fits; 80 GiB grown does not
    result = _by_check(site.results())[("hv", r"free space (D:\Hyper-V\lab)")]
    assert result.status == WARN and "grow to 80 GiB" in result.detail


def test_an_address_in_use_fails_unless_it_is_the_stacks_own_machine(site):
    site.node.state.used["192.168.1.52"] = "52:54:00:12:34:56"
    site.host.neighbors["192.168.1.53"] = ("Reachable", "00-15-5D-01-02-03")
    failed = _failed(site.results())
    result = failed[("network, from pve", "address 192.168.1.52 (lab-lnx-1)")]
    assert "in use by 52:54:00:12:34:56, and lab-lnx-1 does not exist yet" in result.detail
    assert "give lab-lnx-1 a free address" in result.fix
    assert "in use by 00-15-5d-01-02-03" in failed[("network, from hv", "address 192.168.1.53 (lab-win-1)")].detail
    # A second run: the machines exist (the API lists lab-lnx-1's VM, the host lab-win-1's), so their answers pass.
    site.api.site.vms.append({"id": "qemu/202", "vmid": 202, "name": "lab-lnx-1", "node": "pve", "type": "qemu",
                              "template": 0, "status": "running"})
    site.host.vms.append("lab-win-1")
    results = _by_check(site.results())
    assert results[("network, from pve", "address 192.168.1.52 (lab-lnx-1)")].status == PASS
    assert results[("network, from hv", "address 192.168.1.53 (lab-win-1)")].status == PASS


def test_a_silent_gateway_makes_free_addresses_inconclusive(site):
    site.node.state.used.clear()
    results = _by_check(site.results())
    assert results[("network, from pve", "gateway 192.168.1.1")].status == FAIL
    assert results[("network, from pve", "address 192.168.1.51 (lab-cp-1)")].status == WARN


def test_without_arping_the_kernels_neighbour_table_decides(site):
    site.node.state.arping = False
    site.node.state.used["192.168.1.51"] = "52:54:00:aa:bb:cc"
    results = _by_check(site.results())
    assert results[("network, from pve", "gateway 192.168.1.1")].status == PASS
    assert results[("network, from pve", "address 192.168.1.52 (lab-lnx-1)")].status == PASS
    assert "in use by 52:54:00:aa:bb:cc" in results[("network, from pve", "address 192.168.1.51 (lab-cp-1)")].detail


def test_a_missing_interface_leaves_the_addresses_to_the_hyperv_host(site):
    site.node.state.links = []
    results = _by_check(site.results())
    assert results[("network, from pve", "interface vmbr0")].status == WARN
    assert ("network, from pve", "address 192.168.1.51 (lab-cp-1)") not in results


def test_dns_ntp_and_certificates_fail_with_their_fixes(site, tmp_path):
    del site.dns.records["dl.k8s.io"]
    site.node.state.ntp.clear()
    site.host.dns.pop("dl.k8s.io")
    document = yaml.safe_load(site.stack.read_text())
    # Another CA than the one that signed the mirror's certificate.
    other, _ = make_certificate(tmp_path)
    document["config"]["hybrid-cluster:registry"]["mirrors"][0]["caCertificate"] = other.read_text()
    site.stack.write_text(yaml.safe_dump(document))
    failed = _failed(site.results())
    assert "NXDOMAIN" in failed[("network, from pve", "DNS 127.0.0.1: dl.k8s.io")].detail
    assert "public names" in failed[("network, from pve", "DNS 127.0.0.1: dl.k8s.io")].fix
    assert "not synchronised" in failed[("network, from pve", "NTP pool.ntp.org")].detail
    assert ("network, from hv", "DNS 127.0.0.1: dl.k8s.io") in failed
    mirror = next(r for key, r in failed.items() if key[1].startswith("registry.mirrors[0]"))
    assert "verif" in mirror.detail.lower() and "caCertificate" in mirror.fix


def test_a_dns_server_that_does_not_answer_fails(site):
    site.dns.close()
    result = _failed(site.results())[("network, from pve", "DNS 127.0.0.1: dl.k8s.io")]
    assert "no answer" in result.detail


def test_the_tls_targets_and_dns_names_come_from_the_stack(site):
    spec = site.spec()
    [mirror] = network.tls_targets(spec)
    assert (mirror.host, mirror.port, mirror.trust) == ("127.0.0.1", site.api.server.server_address[1], "pool")
    assert network.dns_names(spec) == ["dl.k8s.io", "pool.ntp.org"]
    assert network.probe_interface(spec) == "vmbr0"
    assert network.arping_answer(0, 'Interface "lo" is not ARPable')[0] == "error"
    assert network.arping_answer(1, "Unicast reply from 10.0.0.2 [5E:78:FE:AC:48:6C]  0.6ms|Received 1 response(s)") \
        == ("used", "5e:78:fe:ac:48:6c")
    assert network.arping_answer(2, "arping: Device nosuch0 not available.")[0] == "error"


def test_the_command_line_reads_secrets_from_the_environment_and_exits_with_the_outcome(site, monkeypatch, capsys):
    monkeypatch.setattr(cli.shutil, "which", lambda _: None)       # no Pulumi CLI here: the environment
    monkeypatch.setenv("PROXMOX_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROXMOX_SSH_PRIVATE_KEY", site.access.proxmox_key)
    monkeypatch.setenv("HYPERV_SSH_PRIVATE_KEY", site.access.hyperv_key)
    access, sources = cli.read_access(site.spec(), None)
    assert access.proxmox_key == site.access.proxmox_key and access.missing == {}
    assert sources == ["proxmoxSshPrivateKey from the environment variable PROXMOX_SSH_PRIVATE_KEY",
                       "hypervSshPrivateKey from the environment variable HYPERV_SSH_PRIVATE_KEY"]
    # The CLI proper (the stack's own DNS server and the node's port 22 cannot be faked from outside): the API part,
    # the secrets' sources and the exit statuses.
    monkeypatch.setattr(cli, "run_all", lambda spec, token, access, **kw: [Result("pve", "online", FAIL, "offline", "x")])
    assert cli.main(["--stack-file", str(site.stack), "--ca-file", site.ca_file, "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == [{"host": "pve", "check": "online", "status": "FAIL", "detail": "offline", "fix": "x"}]
    assert "proxmoxApiToken from the environment variable PROXMOX_API_TOKEN" in err
    assert cli.main(["--stack-file", str(site.stack), "--ca-file", str(site.stack.parent / "missing.pem")]) == 2
    assert "is not a file" in capsys.readouterr().err
    monkeypatch.delenv("PROXMOX_API_TOKEN")
    assert cli.main(["--stack-file", str(site.stack)]) == 2
    assert "no Proxmox API token from neither PROXMOX_API_TOKEN" in capsys.readouterr().err


def test_the_report_groups_by_host_and_the_progress_follows_the_hosts(site):
    import io
    results = site.results()
    text = report(results)
    assert text.splitlines()[0].startswith("Proxmox API 127.0.0.1:")
    for host in ("\npve\n", "\nhv\n", "\nnetwork, from pve\n", "\nnetwork, from hv\n"):
        assert host in text
    stream = io.StringIO()
    progress = Progress(["a", "b"], stream)
    progress.done("b", [Result("b", "x", FAIL, "y")])
    progress.done("a", [])
    assert stream.getvalue() == "[1/2] b: 1 checks, 1 failed\n[2/2] a: read\n"

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True
    terminal = Terminal()
    progress = Progress(["a", "b"], terminal)
    progress.done("a", [])
    assert terminal.getvalue().endswith("[1/2] reading b")
    progress.done("b", [])
    assert terminal.getvalue().endswith("\r\x1b[K")


def test_through_a_bastion_each_host_is_reached_by_a_channel_from_it(site):
    """access.bastion: the hosts are reached through a direct-tcpip channel the bastion opens (as pulumi-command's
    proxy connection does), each end's host key pinned; a bastion that presents another key stops the run there."""
    key_text, key = ed25519_key()
    bastion_ssh = FakeSsh("jump", lambda command, stdin: ("", "", 1), client_key=key, forward=True)
    try:
        bastion = ssh.Endpoint("127.0.0.1", bastion_ssh.port, "jump", bastion_ssh.pin, private_key=key_text)
        node = ssh.Endpoint("127.0.0.1", site.node_ssh.port, "root", site.node_ssh.pin, private_key=site.access.proxmox_key)
        done = ssh.run(node, "bash -c 'echo through'", bastion=bastion)
        assert (done.stdout, done.status) == ("through\n", 0)
        assert bastion_ssh.forwarded == [("127.0.0.1", site.node_ssh.port)] and bastion_ssh.commands == []
        _, other = ed25519_key()
        bastion_ssh.host_key = other
        with pytest.raises(ssh.SshError) as raised:
            ssh.run(node, "true", bastion=bastion)
        assert raised.value.kind == "host-key" and f"jump@127.0.0.1:{bastion_ssh.port}" in str(raised.value)
    finally:
        bastion_ssh.close()


def _listen(answer: Callable[[socket.socket], None]) -> socket.socket:
    """A TCP listener on 127.0.0.1 that hands each connection to `answer`, until it is closed."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            answer(conn)
    threading.Thread(target=accept, daemon=True).start()
    return listener


def test_a_host_that_hangs_up_during_the_key_exchange_fails_alone(site):
    """paramiko re-raises its transport's EOFError when the server closes during the key exchange: that host fails,
    and every other host's checks stand."""
    def hang_up(conn: socket.socket) -> None:
        conn.sendall(b"SSH-2.0-OpenSSH_for_Windows_9.5\r\n")
        conn.close()
    listener = _listen(hang_up)
    document = yaml.safe_load(site.stack.read_text())
    document["config"]["hybrid-cluster:hyperv"]["hosts"][0]["port"] = listener.getsockname()[1]
    site.stack.write_text(yaml.safe_dump(document))
    try:
        results = _by_check(site.results())
    finally:
        listener.close()
    # Closed after the banner: an EOF in the key exchange, or a reset if the client's next packet was already out.
    result = results[("hv", "SSH")]
    assert result.status == FAIL and ("key exchange" in result.detail or "reset" in result.detail.lower()), result
    assert results[("pve", "snippets directory (local)")].status == PASS
    assert results[("network, from pve", "gateway 192.168.1.1")].status == PASS


def test_a_defect_in_one_hosts_checks_is_that_hosts_failure(site, monkeypatch):
    monkeypatch.setattr(hosts, "_role", lambda name, part: 1 / 0)
    results = _by_check(site.results())
    assert results[("hv", "preflight")].status == FAIL and "ZeroDivisionError" in results[("hv", "preflight")].detail
    assert results[("pve", "SSH")].status == PASS and ("network, from pve", "gateway 192.168.1.1") in results


def test_a_probe_that_outlives_its_time_is_a_probe_failure_after_a_good_sign_in(site):
    import time
    slow = FakeSsh("root", lambda command, stdin: (time.sleep(3), ("late", "", 0))[1],
                   client_key=site.node_ssh.client_key)
    try:
        endpoint = ssh.Endpoint("127.0.0.1", slow.port, "root", slow.pin, private_key=site.access.proxmox_key)
        started = time.monotonic()
        with pytest.raises(ssh.SshError) as raised:
            ssh.run(endpoint, "sleep", timeout=1)
        assert time.monotonic() - started < 2.5
        assert (raised.value.kind, raised.value.stage) == ("timeout", "exec")
        ssh_check, probe = hosts.ssh_results("pve", endpoint, raised.value, "linux", "proxmoxSshPrivateKey")
        assert ssh_check.status == PASS and probe.status == FAIL and "did not finish in 1 s" in probe.detail
    finally:
        slow.close()


def test_with_cmd_exe_as_default_shell_only_the_shell_is_read(site):
    """The probe is longer than cmd.exe's 8,191 characters: with cmd.exe it would never run (the fake refuses it as
    cmd.exe does), so only the DefaultShell failure is reported, with its fix."""
    site.host.default_shell = None
    results = _by_check(site.results())
    assert results[("hv", "OpenSSH DefaultShell")].status == FAIL
    assert ("hv", "Hyper-V role") not in results and len(site.host_ssh.commands) == 1
    # The Windows side of the network is said not to be read, not left out.
    assert results[("network, from hv", "network probe")].status == WARN
    from render.preflight import hyperv_host_probe
    assert len(hyperv_host_probe("External", "D:\\vms", {"win2022": "D:\\g.vhdx"}, False, ["n"])) > 8191


def test_a_silent_gateway_on_the_windows_side_makes_free_addresses_inconclusive(site):
    site.host.neighbors.clear()
    results = _by_check(site.results())
    assert results[("network, from hv", "gateway 192.168.1.1")].status == FAIL
    assert results[("network, from hv", "address 192.168.1.53 (lab-win-1)")].status == WARN
    site.host.neighbors.update({"192.168.1.1": ("Reachable", "BC-24-11-00-00-01"), "192.168.1.53": (None, "")})
    result = _by_check(site.results())[("network, from hv", "address 192.168.1.53 (lab-win-1)")]
    assert result.status == WARN and "no neighbour entry" in result.detail


def test_a_tee_rule_that_asks_for_a_password_is_not_taken_for_a_passwordless_one(site):
    _ssh_user(site, "pulumi", 1001)
    site.node.state.sudo_rules = [
        "User pulumi may run the following commands on pve:",
        "    (root) NOPASSWD: /usr/sbin/pvesm, /usr/sbin/qm",
        "    (root) /usr/bin/tee /var/lib/vz/snippets/*"]
    result = _by_check(site.results())[("pve", "snippets directory (local)")]
    assert result.status == WARN and "without a password" in result.detail and "NOPASSWD: /usr/bin/tee" in result.fix


def test_the_sudo_listing_is_read_as_sudoers_tags_hold():
    rule = "    (root) NOPASSWD: /usr/sbin/pvesm, /usr/bin/tee /var/lib/vz/snippets/[a-zA-Z0-9_][a-zA-Z0-9_.-]*"
    assert hosts.sudo_without_password([rule], "/usr/bin/tee", "/var/lib/vz/snippets/lab-pve-user-data.yaml")
    assert not hosts.sudo_without_password([rule], "/usr/bin/tee", "/etc/shadow")
    assert not hosts.sudo_without_password(["    (root) NOPASSWD: /usr/sbin/pvesm, PASSWD: /usr/bin/tee"],
                                           "/usr/bin/tee", "/var/lib/vz/snippets/x")
    assert hosts.sudo_without_password(["    (ALL : ALL) NOPASSWD: ALL"], "/usr/bin/tee", "/x")
    assert not hosts.sudo_without_password(["    (ALL : ALL) ALL"], "/usr/bin/tee", "/x")


def _chain_server(tmp_path: Path) -> tuple[str, str, socket.socket]:
    """A TLS server on 127.0.0.1 whose certificate an issuing CA signed, itself signed by a root; it sends its
    certificate and the issuing CA's. The root's and the issuing CA's PEM, and the listener."""
    import ssl
    import subprocess

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp_path)
    for name in ("root", "issuing", "leaf"):
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", f"{name}.key")
    openssl("req", "-x509", "-key", "root.key", "-out", "root.pem", "-days", "1", "-subj", "/CN=root",
            "-addext", "basicConstraints=critical,CA:true")
    openssl("req", "-new", "-key", "issuing.key", "-out", "issuing.csr", "-subj", "/CN=issuing")
    (tmp_path / "ca.ext").write_text("basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\n")
    openssl("x509", "-req", "-in", "issuing.csr", "-CA", "root.pem", "-CAkey", "root.key", "-CAcreateserial",
            "-out", "issuing.pem", "-days", "1", "-extfile", "ca.ext")
    openssl("req", "-new", "-key", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1")
    (tmp_path / "leaf.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "issuing.pem", "-CAkey", "issuing.key", "-CAcreateserial",
            "-out", "leaf.pem", "-days", "1", "-extfile", "leaf.ext")
    issuing = (tmp_path / "issuing.pem").read_text()
    (tmp_path / "chain.pem").write_text((tmp_path / "leaf.pem").read_text() + issuing)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "chain.pem", tmp_path / "leaf.key")

    def handshake(conn: socket.socket) -> None:
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1)
        except (OSError, ssl.SSLError):
            pass
    return (tmp_path / "root.pem").read_text(), issuing, _listen(handshake)


def test_a_stack_ca_that_is_an_intermediate_is_trusted_as_containerd_trusts_it(site, tmp_path):
    """Go's TLS (containerd) anchors on any certificate in its pool: an issuing CA given as a mirror's caCertificate
    is enough."""
    _, issuing, listener = _chain_server(tmp_path)
    document = yaml.safe_load(site.stack.read_text())
    document["config"]["hybrid-cluster:registry"]["mirrors"][0].update(
        endpoint=f"https://127.0.0.1:{listener.getsockname()[1]}/", caCertificate=issuing)
    site.stack.write_text(yaml.safe_dump(document))
    try:
        mirror = next(r for r in site.results() if r.check.startswith("registry.mirrors[0]"))
        assert mirror.status == PASS, mirror
        document["config"]["hybrid-cluster:registry"]["mirrors"][0]["caCertificate"] = \
            Path(site.ca_file).read_text()          # a CA that signed nothing of this chain
        site.stack.write_text(yaml.safe_dump(document))
        mirror = next(r for r in site.results() if r.check.startswith("registry.mirrors[0]"))
        assert mirror.status == FAIL and "caCertificate" in mirror.fix
    finally:
        listener.close()


def test_neighbour_entries_left_from_before_are_not_taken_for_an_answer(site):
    site.node.state.arping = False
    site.node.state.stale["192.168.1.52"] = "52:54:00:de:ad:01"
    result = _by_check(site.results())[("network, from pve", "address 192.168.1.52 (lab-lnx-1)")]
    assert result.status == WARN and "52:54:00:de:ad:01" in result.detail


def test_the_proxmox_nodes_own_addresses_are_known_as_its_own(site):
    """ARP never hears the node's own addresses: a gateway that is the node passes, a node address set on it fails."""
    site.node.state.used.clear()
    site.node.state.local = ["192.168.1.1", "192.168.1.51"]
    results = _by_check(site.results())
    assert results[("network, from pve", "gateway 192.168.1.1")].detail == "is this Proxmox node"
    result = results[("network, from pve", "address 192.168.1.51 (lab-cp-1)")]
    assert result.status == FAIL and "configured on this Proxmox node" in result.detail
    assert results[("network, from pve", "address 192.168.1.52 (lab-lnx-1)")].status == PASS


def test_when_the_hosts_vms_cannot_be_listed_an_address_in_use_is_a_warning(site):
    site.host.vms_error = "Hyper-V encountered an error trying to access an object on computer 'HV'"
    site.host.neighbors["192.168.1.53"] = ("Reachable", "00-15-5D-01-02-03")
    results = _by_check(site.results())
    assert results[("hv", "VMs")].status == WARN
    assert results[("network, from hv", "address 192.168.1.53 (lab-win-1)")].status == WARN


def test_the_bastions_failures_are_the_bastions(site):
    key_text, key = ed25519_key()
    bastion_ssh = FakeSsh("jump", lambda command, stdin: ("", "", 1), client_key=key, forward=True)
    try:
        _, other = ed25519_key()
        pinned_elsewhere = ssh.Endpoint("127.0.0.1", bastion_ssh.port, "jump", f"ssh-ed25519 {other.get_base64()}",
                                        private_key=key_text)
        access = dataclasses.replace(site.access, bastion=pinned_elsewhere)
        [result] = hosts.check_proxmox_node(site.spec(), site.spec().proxmox.nodes[0], access, run=site.run)
        assert result.status == FAIL and "the bastion jump@" in result.detail and "access.bastion" in result.fix
        missing = dataclasses.replace(site.access, missing={"bastionSshPrivateKey": "neither X nor Y"})
        [result] = hosts.check_proxmox_node(site.spec(), site.spec().proxmox.nodes[0], missing, run=site.run)
        assert "no bastionSshPrivateKey" in result.detail
    finally:
        bastion_ssh.close()


def test_the_judges_read_what_the_tools_print():
    assert network.arping_answer(1, "Broadcast request from 10.0.0.2 [5E:78:FE:AC:48:6C]|Received 1 response(s)") \
        == ("used", "5e:78:fe:ac:48:6c")
    target = network.TlsTarget("observability.logs", "logs.example", "logs.example", 443)
    [silent] = network._endpoints("n", [target], [["tls", "0", "124", ""]])
    assert silent.detail == "no TLS answer in 10 s" and "firewall" in silent.fix
    [refused] = network._dns("n", [["dns", "10.0.0.53", "dl.k8s.io", "REFUSED"]])
    assert refused.status == FAIL and "recursively" in refused.fix
    # A host on port 22 is pinned under its bare name, as OpenSSH's known_hosts writes it; another port as [host]:port.
    assert (ssh._known_name("10.0.0.5", 22), ssh._known_name("10.0.0.5", 2222)) == ("10.0.0.5", "[10.0.0.5]:2222")
    [off] = network._ntp("n", [["ntp", "pool.ntp.org", "0", "System clock wrong by -2.500000 seconds (ignored)"]])
    assert off.status == WARN and "-2.500 s" in off.detail


def test_a_second_session_that_cannot_connect_is_the_probes_failure(site):
    """The DefaultShell read signs in; if the probe's own session is refused (a host rebooting), the probe fails."""
    first = site.host.answer

    def then_refuse(command: str, stdin: bytes) -> tuple[str, str, int]:
        site.host_ssh.close()               # no more connections after this one
        return first(command, stdin)
    site.host_ssh.handler = then_refuse
    results = _by_check(site.results())
    assert results[("hv", "SSH")].status == PASS and results[("hv", "OpenSSH DefaultShell")].status == PASS
    assert results[("hv", "probe")].status == FAIL and "unable to connect" in results[("hv", "probe")].detail.lower()


def test_the_last_matching_sudo_rule_decides_and_only_for_root():
    tee = "/var/lib/vz/snippets/x.yaml"
    nopasswd = "    (root) NOPASSWD: /usr/bin/tee /var/lib/vz/snippets/*"
    assert hosts.sudo_without_password([nopasswd], "/usr/bin/tee", tee)
    assert not hosts.sudo_without_password([nopasswd, "    (ALL : ALL) ALL"], "/usr/bin/tee", tee)
    assert not hosts.sudo_without_password(["    (postgres) NOPASSWD: /usr/bin/tee /var/lib/vz/snippets/*"],
                                           "/usr/bin/tee", tee)
    assert hosts.sudo_without_password(["    (root) SETENV: NOPASSWD: /usr/bin/tee /a\\,b/*"], "/usr/bin/tee", "/a,b/x")


def test_each_endpoint_is_checked_as_its_client_trusts_it(site, tmp_path):
    """containerd anchors on an intermediate CA added to the system's pool ("pool"); Fluent Bit and the collector trust
    their configured CA file alone ("only"), where an intermediate without its root is not enough."""
    from render.preflight import TlsTarget, network_probe
    root, issuing, listener = _chain_server(tmp_path)
    port = listener.getsockname()[1]
    try:
        for trust, status in (("pool", PASS), ("only", FAIL)):
            target = TlsTarget("x", "127.0.0.1", "127.0.0.1", port, issuing, trust)
            out, _, rc = site.node.answer(network_probe("", [], [], [], [], [target]), b"")
            lines = [line.split("\t") for line in out.splitlines() if line.startswith("tls")]
            [result] = network._endpoints("n", [target], lines)
            assert rc == 0 and result.status == status, (trust, result)
        target = TlsTarget("x", "127.0.0.1", "127.0.0.1", port, root, "only")
        out, _, _ = site.node.answer(network_probe("", [], [], [], [], [target]), b"")
        [result] = network._endpoints("n", [target], [line.split("\t") for line in out.splitlines()
                                                      if line.startswith("tls")])
        assert result.status == PASS, result                  # the server sends its chain up to the root
    finally:
        listener.close()


def test_a_sign_in_the_server_never_answers_is_a_timeout(site, monkeypatch):
    monkeypatch.setattr(ssh, "CONNECT_TIMEOUT_SECONDS", 1)
    site.node_ssh.auth_delay = 3
    endpoint = ssh.Endpoint("127.0.0.1", site.node_ssh.port, "root", site.node_ssh.pin,
                            private_key=site.access.proxmox_key)
    with pytest.raises(ssh.SshError) as raised:
        ssh.run(endpoint, "true")
    assert raised.value.kind == "timeout"
    [result] = hosts.ssh_results("pve", endpoint, raised.value, "linux", "proxmoxSshPrivateKey")
    assert "authorized keys" not in result.fix


def test_the_windows_side_pings_only_the_windows_nodes_and_the_gateway(site):
    site.results()
    script = site.host.scripts[-1]
    assert "$Addresses = @('192.168.1.53')" in script and "$Gateway = '192.168.1.1'" in script
