"""A Linux node's SSH host key (render/host_keys.py): made by the program, given in the first boot's cloud-init
`ssh_keys` (checked with `cloud-init schema`), and written in place on a node that booted without it
(render/scripts/node-host-key.sh, shellchecked and run against a scratch root with a stub systemctl)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from render.host_keys import (
    HostKeyPair,
    pinned_key_of_user_data,
    public_line,
    render_install_host_key,
    render_snippet_private,
)
from tests.validators import TEST_ROOT_VARIABLE, cloud_init_schema, shellcheck
from tools.mock.providers import new_host_key


@pytest.fixture(scope="module")
def key_pair(tmp_path_factory) -> HostKeyPair:
    """A real ed25519 key, as ssh-keygen (and the TLS provider) write it."""
    directory = tmp_path_factory.mktemp("host-key")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(directory / "key")], check=True)
    return HostKeyPair((directory / "key").read_text(), public_line((directory / "key.pub").read_text()))


def test_the_first_boot_gives_the_node_the_programs_key_and_the_program_reads_it_back(key_pair, tmp_path):
    from render.linux_node import render_user_data
    from tests.render.test_linux_node import make_node

    user_data = render_user_data(make_node("rocky9", ()), key_pair)
    path = tmp_path / "user-data"
    path.write_text(user_data)
    cloud_init_schema(path)
    import yaml
    document = yaml.safe_load(user_data)
    assert document["ssh_keys"] == {"ed25519_private": key_pair.private_openssh, "ed25519_public": key_pair.public}
    assert "ssh_genkeytypes" not in document and "ssh_deletekeys" not in document   # defaults: the image's keys go
    assert pinned_key_of_user_data(user_data) == key_pair.public
    # A snippet of an earlier release carries no key of the program's.
    assert pinned_key_of_user_data(render_user_data(make_node("rocky9", ()))) is None


def test_key_material_that_would_break_the_node_is_refused(key_pair):
    with pytest.raises(ValueError):
        HostKeyPair("not a key", key_pair.public)
    with pytest.raises(ValueError):
        HostKeyPair(key_pair.private_openssh, "ssh-rsa AAAAB3NzaC1yc2E")
    with pytest.raises(ValueError):
        public_line("ecdsa-sha2-nistp256 AAAA")


def test_the_scripts_pass_shellcheck(tmp_path):
    for name, script in (("install.sh", render_install_host_key()),
                         ("private.sh", render_snippet_private("local:snippets/hk-prod-hk-cp-1-user-data.yaml"))):
        (tmp_path / name).write_text(script)
    shellcheck(tmp_path / "install.sh", tmp_path / "private.sh")


def test_the_snippet_with_the_private_key_is_made_root_only_on_proxmox(tmp_path):
    snippet = tmp_path / "snippets" / "hk-prod-hk-cp-1-user-data.yaml"
    snippet.parent.mkdir()
    snippet.write_text("#cloud-config\n")
    snippet.chmod(0o644)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "pvesm").write_text(f'#!/usr/bin/env bash\n[[ "$*" == "path local:snippets/hk-prod-hk-cp-1-user-data.yaml" ]]'
                                 f' && echo {snippet}\n')
    (stubs / "pvesm").chmod(0o755)
    script = render_snippet_private("local:snippets/hk-prod-hk-cp-1-user-data.yaml")
    result = subprocess.run([shutil.which("bash"), "-c", script], capture_output=True, text=True,
                            env={"PATH": f"{stubs}:/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert oct(snippet.stat().st_mode & 0o777) == "0o600"
    missing = subprocess.run([shutil.which("bash"), "-c", render_snippet_private("local:snippets/other.yaml")],
                             capture_output=True, text=True, env={"PATH": f"{stubs}:/usr/bin:/bin"})
    assert missing.returncode != 0 and "no volume local:snippets/other.yaml" in missing.stderr
    with pytest.raises(ValueError):
        render_snippet_private("local:iso/x.iso; reboot")


def _install(tmp_path: Path, stdin: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    root, stubs = tmp_path / "root", tmp_path / "stubs"
    (root / "etc" / "ssh").mkdir(parents=True, exist_ok=True)
    stubs.mkdir(exist_ok=True)
    (stubs / "systemctl").write_text('#!/usr/bin/env bash\necho "systemctl $*" >>"$T/calls"\n'
                                     '[[ $1 != cat || $2 == "${UNIT:-ssh.service}" ]]\n')
    (stubs / "systemctl").chmod(0o755)
    result = subprocess.run([shutil.which("bash"), "-c", render_install_host_key()], input=stdin, capture_output=True,
                            text=True, env={"PATH": f"{stubs}:/usr/bin:/bin", "T": str(tmp_path),
                                            TEST_ROOT_VARIABLE: str(root)})
    return result, root / "etc" / "ssh"


def test_a_node_that_booted_with_keys_of_its_own_gets_the_programs_written_in_place(key_pair, tmp_path):
    ssh = tmp_path / "root" / "etc" / "ssh"
    ssh.mkdir(parents=True)
    (ssh / "ssh_host_ed25519_key.pub").write_text(new_host_key("image", 1) + " root@template\n")
    (ssh / "ssh_host_ed25519_key").write_text("old private key\n")
    result, ssh = _install(tmp_path, f"{key_pair.private_openssh}{key_pair.public}\n")
    assert result.returncode == 0, result.stderr
    assert (ssh / "ssh_host_ed25519_key").read_text() == key_pair.private_openssh
    assert (ssh / "ssh_host_ed25519_key.pub").read_text() == key_pair.public + "\n"
    assert oct((ssh / "ssh_host_ed25519_key").stat().st_mode & 0o777) == "0o600"
    assert oct((ssh / "ssh_host_ed25519_key.pub").stat().st_mode & 0o777) == "0o644"
    assert (tmp_path / "calls").read_text().splitlines() == ["systemctl cat ssh.service", "systemctl reload ssh.service"]
    # Again: the node presents the key, nothing is written or reloaded.
    (tmp_path / "calls").unlink()
    again, _ = _install(tmp_path, f"{key_pair.private_openssh}{key_pair.public}\n")
    assert again.returncode == 0 and "presents its pinned host key already" in again.stdout
    assert not (tmp_path / "calls").exists()
    assert not list(ssh.glob("*.partial"))


@pytest.mark.parametrize("stdin, message", [
    ("", "no OpenSSH private key"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n", "no OpenSSH private key"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\nssh-rsa AAAA\n", "no ssh-ed25519"),
], ids=["empty", "truncated", "rsa"])
def test_it_refuses_what_is_not_a_key_and_leaves_the_node_as_it_was(tmp_path, stdin, message):
    ssh = tmp_path / "root" / "etc" / "ssh"
    ssh.mkdir(parents=True)
    (ssh / "ssh_host_ed25519_key.pub").write_text("ssh-ed25519 AAAA root@node\n")
    result, _ = _install(tmp_path, stdin)
    assert result.returncode != 0 and message in result.stderr
    assert (ssh / "ssh_host_ed25519_key.pub").read_text() == "ssh-ed25519 AAAA root@node\n"
    assert not (tmp_path / "calls").exists()


# --- the Proxmox provider's own SSH client: known_hosts --------------------------------------------------------

def test_known_hosts_lines_pin_every_proxmox_node_and_the_check_finds_missing_and_extra_keys(tmp_path, capsys):
    from tests.conftest import hk_prod_spec
    from tools import known_hosts

    spec = hk_prod_spec()
    written = known_hosts.lines(spec)
    assert written == [f"{n.address} {n.host_key}" for n in spec.proxmox.nodes] and len(written) == 2
    assert known_hosts.check(spec, "\n".join(written)) == []
    # One node missing, and a trusted-on-first-use line for the other beside its pinned one.
    other = new_host_key("somewhere-else", 1)
    problems = known_hosts.check(spec, f"# comment\n{written[0]}\n10.10.10.11,pve-hk1-a {other}\n")
    assert problems == [
        "10.10.10.11 (pve-hk1-a): 1 other key(s) for it, which the provider would accept as well; remove them: "
        "ssh-keygen -R 10.10.10.11",
        f"10.10.10.12 (pve-hk2-a): its pinned key is missing; add `{written[1]}`"]
    # A line hashed by ssh-keygen -H (as ssh's HashKnownHosts writes them) for the address counts too.
    hashed_file = tmp_path / "hashed"
    hashed_file.write_text(f"10.10.10.12 {other}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(hashed_file)], check=True, capture_output=True)
    hashed_lines = hashed_file.read_text().splitlines()
    assert hashed_lines[0].startswith("|1|") and "10.10.10.12" not in hashed_lines[0]
    assert known_hosts.check(spec, "\n".join([*written, *hashed_lines])) == [
        "10.10.10.12 (pve-hk2-a): 1 other key(s) for it, which the provider would accept as well; remove them: "
        "ssh-keygen -R 10.10.10.12"]
    file = tmp_path / "known_hosts"
    file.write_text("\n".join(written) + "\n")
    assert known_hosts.main(["--stack", "hk-prod", "--check", str(file)]) == 0
    file.write_text(written[0] + "\n")
    assert known_hosts.main(["--stack", "hk-prod", "--check", str(file)]) == 1
    assert "10.10.10.12 (pve-hk2-a): its pinned key is missing" in capsys.readouterr().err
    assert known_hosts.main(["--stack", "hk-prod"]) == 0
    assert capsys.readouterr().out.splitlines() == written
