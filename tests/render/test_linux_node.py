"""Tests for render/linux_node.py: the rendered bash is checked by shellcheck and partly executed
(its functions, sourced into bash with the system-changing commands stubbed), the user-data by
the real ``cloud-init schema``, and the containerd TOML is parsed with tomllib."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from render.containerd import RegistryMirror
from render.linux_node import (
    PREPARE_SCRIPT_PATH,
    LinuxNodeInit,
    render_prepare_script,
    render_upgrade_script,
    render_user_data,
)
from render.script_files import lint_form
from tests.validators import bash_input, cloud_init_schema, shellcheck

PACKAGE_MANAGER = {"ubuntu22": "apt", "rocky9": "dnf", "centos7": "yum"}
HARBOR_MIRRORS = (
    RegistryMirror("docker.io", "https://harbor.hk.example.internal/v2/dockerhub", True),
    RegistryMirror("registry.k8s.io", "https://harbor.hk.example.internal/v2/k8s", True),
    RegistryMirror("mcr.microsoft.com", "https://harbor.hk.example.internal/v2/mcr", True),
    RegistryMirror("ghcr.io", "https://harbor.hk.example.internal/v2/ghcr", True),
    # A second, plain mirror for docker.io: must land in the same hosts.toml, after Harbor.
    RegistryMirror("docker.io", "https://mirror.hk.example.internal", False),
)


def make_node(distro: str, mirrors: tuple[RegistryMirror, ...], containerd: str = "2.1.4") -> LinuxNodeInit:
    return LinuxNodeInit(
        hostname="hk-prod-w1",
        fqdn="hk-prod-w1.hk.example.internal",
        distro=distro,
        package_manager=PACKAGE_MANAGER[distro],
        kubernetes_version="1.34.2",
        containerd_version=containerd,
        sandbox_image="registry.k8s.io/pause:3.10.1",
        admin_user="k8sadmin",
        ssh_authorized_keys=("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBc ops@hk", "ssh-rsa AAAAB3NzaC1yc2E backup@hk"),
        ntp_servers=("ntp1.hk.example.internal", "10.20.0.1"),
        timezone="Asia/Hong_Kong",
        registry_mirrors=mirrors,
        runc_version="1.5.1",
    )


DISTROS = pytest.mark.parametrize("distro", sorted(PACKAGE_MANAGER))
MIRRORS = pytest.mark.parametrize("mirrors", [(), HARBOR_MIRRORS], ids=["no-mirrors", "harbor-mirrors"])
CONTAINERD = pytest.mark.parametrize("containerd", ["2.1.4", "1.7.28"], ids=["containerd2", "containerd1"])


def run_sourced(script: str, tmp_path: Path, commands: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Sources the rendered script (which then defines functions without running main) and runs
    ``commands`` in the same bash, failing the test on a non-zero exit unless ``check`` is off."""
    script_file = tmp_path / "prepare-k8s-node.sh"
    script_file.write_text(script)
    result = subprocess.run(
        ["bash", "-c", f'source "$1"\n{commands}', "bash", str(script_file)],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "T": str(tmp_path)},
    )
    assert result.returncode == 0 or not check, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


# --- real validators -------------------------------------------------------------------------

@DISTROS
@MIRRORS
@CONTAINERD
def test_script_passes_shellcheck_at_style_severity(distro, mirrors, containerd, tmp_path):
    script_file = tmp_path / "prepare-k8s-node.sh"
    script_file.write_text(render_prepare_script(make_node(distro, mirrors, containerd)))
    shellcheck(script_file)


@DISTROS
@MIRRORS
def test_every_shellcheck_disable_carries_a_reason(distro, mirrors):
    for line in render_prepare_script(make_node(distro, mirrors)).splitlines():
        if "shellcheck disable=" in line:
            assert re.search(r"disable=SC\d+(,SC\d+)* # \S", line), f"no reason given: {line}"


@DISTROS
@MIRRORS
def test_user_data_passes_cloud_init_schema(distro, mirrors, tmp_path):
    user_data = tmp_path / "user-data.yaml"
    user_data.write_text(render_user_data(make_node(distro, mirrors)))
    cloud_init_schema(user_data)


# --- user-data structure ---------------------------------------------------------------------

@DISTROS
@MIRRORS
def test_user_data_embeds_the_script_byte_identical_and_runs_it(distro, mirrors):
    node = make_node(distro, mirrors)
    text = render_user_data(node)
    assert text.startswith("#cloud-config\n")
    config = yaml.safe_load(text)

    [script_file] = [f for f in config["write_files"] if f["path"] == PREPARE_SCRIPT_PATH]
    assert script_file["content"] == render_prepare_script(node)
    assert script_file["permissions"] == "0755"
    assert script_file["owner"] == "root:root"
    assert config["runcmd"] == [[PREPARE_SCRIPT_PATH]]


@DISTROS
def test_user_data_creates_admin_user_and_identity(distro):
    node = make_node(distro, HARBOR_MIRRORS)
    config = yaml.safe_load(render_user_data(node))
    [user] = config["users"]
    assert user["name"] == "k8sadmin"
    assert user["sudo"] == "ALL=(ALL) NOPASSWD:ALL"
    assert user["ssh_authorized_keys"] == list(node.ssh_authorized_keys)
    assert user["lock_passwd"] is True
    assert config["ssh_pwauth"] is False
    assert config["hostname"] == "hk-prod-w1"
    assert config["fqdn"] == "hk-prod-w1.hk.example.internal"
    assert config["prefer_fqdn_over_hostname"] is False
    assert config["timezone"] == "Asia/Hong_Kong"


def test_user_data_omits_fqdn_when_none():
    node = dataclasses.replace(make_node("ubuntu22", ()), fqdn=None)
    config = yaml.safe_load(render_user_data(node))
    assert "fqdn" not in config
    assert config["hostname"] == "hk-prod-w1"


# --- containerd config and mirrors, produced by running the script's own functions -------------

@DISTROS
@MIRRORS
@CONTAINERD
def test_containerd_config_uses_the_format_of_the_pinned_major(distro, mirrors, containerd, tmp_path):
    script = render_prepare_script(make_node(distro, mirrors, containerd))
    run_sourced(script, tmp_path, 'write_containerd_config "$T/config.toml"')
    config = tomllib.loads((tmp_path / "config.toml").read_text())
    plugins = config["plugins"]
    if containerd.startswith("2."):
        assert config["version"] == 3
        assert "io.containerd.grpc.v1.cri" not in plugins
        runc = plugins["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc"]
        images = plugins["io.containerd.cri.v1.images"]
        assert images["pinned_images"]["sandbox"] == "registry.k8s.io/pause:3.10.1"
        assert images["registry"]["config_path"] == "/etc/containerd/certs.d"
    else:
        assert config["version"] == 2
        assert not any(name.startswith("io.containerd.cri.v1.") for name in plugins)
        cri = plugins["io.containerd.grpc.v1.cri"]
        runc = cri["containerd"]["runtimes"]["runc"]
        assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10.1"
        assert cri["registry"]["config_path"] == "/etc/containerd/certs.d"
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"]["SystemdCgroup"] is True


@DISTROS
@MIRRORS
def test_one_hosts_toml_per_mirrored_upstream(distro, mirrors, tmp_path):
    script = render_prepare_script(make_node(distro, mirrors))
    run_sourced(script, tmp_path, 'write_registry_hosts "$T/certs.d"')
    certs = tmp_path / "certs.d"
    written = sorted(p.parent.name for p in certs.glob("*/hosts.toml"))
    assert written == sorted({m.upstream for m in mirrors})
    for upstream in written:
        hosts = tomllib.loads((certs / upstream / "hosts.toml").read_text())
        expected_server = "https://registry-1.docker.io" if upstream == "docker.io" else f"https://{upstream}"
        assert hosts["server"] == expected_server
        wanted = [m for m in mirrors if m.upstream == upstream]
        assert list(hosts["host"]) == [m.endpoint for m in wanted]  # order is try order
        for mirror in wanted:
            host = hosts["host"][mirror.endpoint]
            assert host["capabilities"] == ["pull", "resolve"]
            assert host.get("override_path", False) is mirror.override_path


def test_hosts_toml_of_dropped_mirrors_is_removed_but_foreign_files_stay(tmp_path):
    certs = tmp_path / "certs.d"
    (certs / "quay.io").mkdir(parents=True)
    (certs / "quay.io" / "hosts.toml").write_text("# managed by prepare-k8s-node.sh; mirrors for quay.io\n")
    (certs / "internal.example:5000").mkdir()
    (certs / "internal.example:5000" / "hosts.toml").write_text('server = "https://internal.example:5000"\n')
    script = render_prepare_script(make_node("rocky9", HARBOR_MIRRORS[:1]))
    run_sourced(script, tmp_path, 'write_registry_hosts "$T/certs.d"')
    assert not (certs / "quay.io").exists()
    assert (certs / "internal.example:5000" / "hosts.toml").exists()
    assert (certs / "docker.io" / "hosts.toml").exists()


# --- idempotence guards, executed ------------------------------------------------------------

def test_put_file_writes_once_then_reports_no_change(tmp_path):
    script = render_prepare_script(make_node("ubuntu22", ()))
    result = run_sourced(script, tmp_path, """
        put_file "$T/etc/x.conf" 0640 <<<'a = 1'; echo "first=${CHANGED}"
        stat -c %Y.%i "$T/etc/x.conf" > "$T/before"
        sleep 1
        put_file "$T/etc/x.conf" 0640 <<<'a = 1'; echo "second=${CHANGED}"
        stat -c %Y.%i "$T/etc/x.conf" > "$T/after"
        chmod 0644 "$T/etc/x.conf"
        put_file "$T/etc/x.conf" 0640 <<<'a = 1'; echo "mode_fixed=${CHANGED}"
    """)
    assert "first=1" in result.stdout
    assert "second=0" in result.stdout
    assert "mode_fixed=1" in result.stdout
    assert (tmp_path / "before").read_text() == (tmp_path / "after").read_text()
    assert (tmp_path / "etc" / "x.conf").read_text() == "a = 1\n"
    assert oct((tmp_path / "etc" / "x.conf").stat().st_mode & 0o777) == "0o640"


def test_registry_hosts_second_run_changes_nothing(tmp_path):
    script = render_prepare_script(make_node("centos7", HARBOR_MIRRORS))
    result = run_sourced(script, tmp_path, """
        write_registry_hosts "$T/certs.d" > "$T/first.log"
        write_registry_hosts "$T/certs.d" > "$T/second.log"
        write_containerd_config "$T/config.toml"; write_containerd_config "$T/config.toml"; echo "config=${CHANGED}"
    """)
    assert "wrote" in (tmp_path / "first.log").read_text()
    assert (tmp_path / "second.log").read_text() == ""
    assert "config=0" in result.stdout


FSTAB = """\
UUID=1111-2222 / ext4 defaults 0 1
/dev/mapper/rl-swap none swap defaults 0 0
/swap.img\tnone\tswap\tsw\t0\t0
# /old.swap none swap sw 0 0
tmpfs /tmp tmpfs defaults 0 0
"""


def test_swap_entries_are_commented_once_and_swap_files_found(tmp_path):
    (tmp_path / "fstab").write_text(FSTAB)
    script = render_prepare_script(make_node("ubuntu22", ()))
    result = run_sourced(script, tmp_path, """
        swap_files_in_fstab "$T/fstab" > "$T/swapfiles"
        put_file "$T/fstab" 0644 < <(fstab_without_swap "$T/fstab"); echo "first=${CHANGED}"
        put_file "$T/fstab" 0644 < <(fstab_without_swap "$T/fstab"); echo "second=${CHANGED}"
        swap_files_in_fstab "$T/fstab" > "$T/swapfiles-after"
    """)
    assert (tmp_path / "swapfiles").read_text().split() == ["/dev/mapper/rl-swap", "/swap.img"]
    assert (tmp_path / "swapfiles-after").read_text() == ""
    assert "first=1" in result.stdout
    assert "second=0" in result.stdout
    lines = (tmp_path / "fstab").read_text().splitlines()
    assert lines[0] == "UUID=1111-2222 / ext4 defaults 0 1"
    assert lines[1] == "#/dev/mapper/rl-swap none swap defaults 0 0"
    assert lines[2] == "#/swap.img\tnone\tswap\tsw\t0\t0"
    assert lines[3] == "# /old.swap none swap sw 0 0"
    assert lines[4] == "tmpfs /tmp tmpfs defaults 0 0"


def test_selinux_config_edit_is_guarded(tmp_path):
    """security.selinux: the earlier releases' permissive becomes enforcing, once; a relaxed stack goes back; a node
    whose template disabled SELinux is refused rather than relabelled behind the operator's back, unless the stack
    asks for permissive."""
    config = tmp_path / "selinux-config"
    config.write_text("SELINUX=permissive\nSELINUXTYPE=targeted\n")
    script = render_prepare_script(make_node("rocky9", ()))
    result = run_sourced(script, tmp_path, """
        selinux_config_mode "$T/selinux-config" enforcing
        stat -c %Y.%i "$T/selinux-config" > "$T/before"; sleep 1
        selinux_config_mode "$T/selinux-config" enforcing
        stat -c %Y.%i "$T/selinux-config" > "$T/after"
    """)
    assert config.read_text() == "SELINUX=enforcing\nSELINUXTYPE=targeted\n"
    assert result.stdout.count("SELinux set to enforcing") == 1
    assert (tmp_path / "before").read_text() == (tmp_path / "after").read_text()
    run_sourced(script, tmp_path, 'selinux_config_mode "$T/selinux-config" permissive')
    assert config.read_text() == "SELINUX=permissive\nSELINUXTYPE=targeted\n"
    config.write_text("SELINUX=disabled\n")
    refused = run_sourced(script, tmp_path, 'selinux_config_mode "$T/selinux-config" enforcing', check=False)
    assert refused.returncode != 0 and "fixfiles -F onboot" in refused.stdout + refused.stderr
    assert config.read_text() == "SELINUX=disabled\n"
    # A stack that relaxes SELinux to permissive accepts a template that disabled it, and leaves it so.
    kept = run_sourced(script, tmp_path, 'selinux_config_mode "$T/selinux-config" permissive')
    assert "left as it is" in kept.stdout and config.read_text() == "SELINUX=disabled\n"


def test_the_rhel_family_runs_enforcing_with_the_container_policy_unless_relaxed():
    from tests.validators import bash_input
    assert bash_input(render_prepare_script(make_node("rocky9", ())), "SELINUX_MODE") == "enforcing"
    relaxed = dataclasses.replace(make_node("rocky9", ()), selinux="permissive")
    assert bash_input(render_prepare_script(relaxed), "SELINUX_MODE") == "permissive"
    assert "ensure_packages container-selinux" in lint_form("prepare-k8s-node.sh")
    with pytest.raises(ValueError):
        render_prepare_script(dataclasses.replace(make_node("rocky9", ()), selinux="disabled"))


GUARD_STUBS = r"""
put_file() { cat > "$T/$(basename "$1")"; if [[ -e $T/changed ]]; then CHANGED=1; else CHANGED=0; fi; }
put_text() { put_file "$1" "$2" < <(printf '%s' "$3"); }
ensure_packages() { printf 'ensure %s\n' "$*" >> "$T/calls"; }
systemctl() {
  printf 'systemctl %s\n' "$*" >> "$T/calls"
  case "$1" in is-enabled | is-active) [[ -e $T/active ]] ;; esac
}
nft() { [[ "$*" == "list table inet hybrid_cluster_pod_guard" && -e $T/table ]]; }
POD_GUARD_UNIT=$T/unit/hybrid-cluster-pod-guard.service
POD_GUARD_RULES=$T/pod-guard.nft
"""


def test_the_pod_guard_is_loaded_by_a_unit_of_its_own_and_removed_when_network_policy_is_off(tmp_path):
    from render import security
    rules = security.pod_guard_rules(("10.244.0.0/16",), (22, 2379, 2380))
    guarded = render_prepare_script(dataclasses.replace(make_node("rocky9", ()), pod_guard=rules))
    (tmp_path / "changed").touch()
    (tmp_path / "unit").mkdir()
    run_sourced(guarded, tmp_path, GUARD_STUBS + "configure_pod_guard")
    assert (tmp_path / "pod-guard.nft").read_text() == rules
    unit = (tmp_path / "hybrid-cluster-pod-guard.service").read_text()
    assert f"ExecStart=/usr/sbin/nft -f {tmp_path}/pod-guard.nft" in unit
    assert f"ExecStop=-/usr/sbin/nft delete table inet {security.POD_GUARD_TABLE}" in unit
    assert "Before=network-pre.target" in unit and "WantedBy=multi-user.target" in unit
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == "ensure nftables"
    assert "systemctl enable hybrid-cluster-pod-guard.service" in calls
    assert calls[-1] == "systemctl reload-or-restart hybrid-cluster-pod-guard.service"
    assert "After=nftables.service" in unit and f"ExecReload=/usr/sbin/nft -f {tmp_path}/pod-guard.nft" in unit
    # Again, nothing changed, the unit active and its table loaded: nothing is loaded again.
    (tmp_path / "changed").unlink()
    (tmp_path / "active").touch()
    (tmp_path / "table").touch()
    (tmp_path / "calls").unlink()
    run_sourced(guarded, tmp_path, GUARD_STUBS + "configure_pod_guard")
    assert not [c for c in (tmp_path / "calls").read_text().splitlines() if "restart" in c or " enable " in c]
    # The table flushed away (an nftables.service whose file begins with `flush ruleset`): loaded again.
    (tmp_path / "table").unlink()
    run_sourced(guarded, tmp_path, GUARD_STUBS + "configure_pod_guard")
    assert (tmp_path / "calls").read_text().splitlines()[-1] == "systemctl reload-or-restart hybrid-cluster-pod-guard.service"
    # networkPolicy off: the unit is stopped, disabled and removed with its rules.
    (tmp_path / "unit" / "hybrid-cluster-pod-guard.service").write_text(unit)
    (tmp_path / "calls").unlink()
    run_sourced(render_prepare_script(make_node("rocky9", ())), tmp_path, GUARD_STUBS + "configure_pod_guard")
    assert "systemctl disable --now hybrid-cluster-pod-guard.service" in (tmp_path / "calls").read_text()
    assert not (tmp_path / "unit" / "hybrid-cluster-pod-guard.service").exists()


def test_the_node_keeps_the_host_keys_its_connections_pin_through_a_later_new_instance(tmp_path):
    """A later change of the VM's cloud-init settings makes a new instance; with ssh_deletekeys false in the node's
    own cloud.cfg.d, cloud-init's ssh module keeps the keys present. The file is cloud-config, as `cloud-init schema`
    reads it, and it is written in the first boot's preparation and by every converge."""
    script = render_prepare_script(make_node("ubuntu22", ()))
    run_sourced(script, tmp_path, GUARD_STUBS + "keep_host_keys")
    written = tmp_path / "90-hybrid-cluster-host-keys.cfg"
    assert yaml.safe_load(written.read_text()) == {"ssh_deletekeys": False}
    config = tmp_path / "user-data"
    config.write_text("#cloud-config\n" + written.read_text())
    cloud_init_schema(config)
    main = script[script.index("\nmain() {"):]
    assert main.index("keep_host_keys") < main.index("install_containerd")
    assert "keep_host_keys" in render_prepare_script(make_node("ubuntu22", ()), install_kubernetes=False)


def test_the_iscsid_selinux_module_is_installed_once_on_the_rhel_family(tmp_path):
    stubs = GUARD_STUBS + r"""
getenforce() { echo Enforcing; }
setenforce() { :; }
semodule() {
  printf 'semodule %s\n' "$*" >> "$T/calls"
  if [[ $1 == -l ]]; then [[ -e $T/installed ]] && echo hybrid_cluster_iscsid; echo container; fi
  if [[ $1 == -i ]]; then touch "$T/installed"; fi
}
selinux_config_mode() { :; }
"""
    script = render_prepare_script(make_node("rocky9", ()))
    (tmp_path / "changed").touch()
    run_sourced(script, tmp_path, stubs + "configure_selinux")
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == "ensure container-selinux"
    assert [c for c in calls if c.startswith("semodule -i")] == [
        "semodule -i /etc/hybrid-cluster/selinux/hybrid_cluster_iscsid.cil"]
    assert "(allow iscsid_t self (capability (dac_override)))" in (tmp_path / "hybrid_cluster_iscsid.cil").read_text()
    (tmp_path / "changed").unlink()
    (tmp_path / "calls").unlink()
    run_sourced(script, tmp_path, stubs + "configure_selinux")
    assert not [c for c in (tmp_path / "calls").read_text().splitlines() if c.startswith("semodule -i")]
    # Not on the Debian family.
    (tmp_path / "calls").unlink()
    run_sourced(render_prepare_script(make_node("ubuntu22", ())), tmp_path, stubs + "configure_selinux")
    assert not (tmp_path / "calls").exists()


@pytest.mark.parametrize("name", ["prepare-k8s-node.sh", "upgrade-k8s-node.sh"])
def test_every_write_and_service_action_is_guarded(name):
    """Read in the script as written (render/scripts/NAME with its fragments): the files it writes are
    inputs, so every line here is the script's own."""
    lines = lint_form(name).splitlines()
    # Comments and log lines carry no logic; the guard of an action is in the lines just above it.
    code = [line.split(" #", 1)[0] for line in lines
            if not line.lstrip().startswith(("#", "log "))]
    for number, line in enumerate(code):
        above = " ".join(code[max(0, number - 2):number])
        # Files are written only through put_file's compare-then-install (or into mktemp dirs).
        assert " tee " not in line and ">>" not in line, line
        shell_only = re.sub(r"\(\(.*?\)\)|'[^']*'", "", line)  # arithmetic and quoted awk/sed programs
        for target in re.findall(r"(?<![<>&0-9])>\s*\"?([^\s\"]+)", shell_only):
            # (mktemp directories: workdir, the runtime's stage and backup)
            assert target in {"/dev/null", "${staged}", "${dest}"} or target.startswith(
                ("${workdir}", "${backup}", "${RUNTIME_STAGE}")), line
        if "sed -i" in line:
            assert "if grep -q" in above, f"unguarded sed -i: {line}"
        # Every service change sits behind a state check just above it (or on the same line).
        if re.search(r"systemctl (enable|disable|start|stop|restart|reload)\b", line):
            assert re.search(r"is-enabled|is-active|was_active|CHANGED|config_changed|running_kubelet_version", above + line), line
        if re.search(r"\b(setenforce|swapoff|modprobe|apt-mark hold|ufw disable)\b", line):
            assert re.search(r"\bif\b", above), line


# --- pinned kube packages, with the package manager stubbed ----------------------------------

STUBS = r"""
put_file() { cat > "$T/repo-file"; CHANGED=1; }
fetch() { : > "$2"; }
gpg() { :; }
install() { :; }
record_install() {
  printf '%s\n' "$*" >> "$T/pm-calls"
  if [[ " $* " == *" install "* ]]; then touch "$T/installed"; fi
}
apt_get() { record_install "$@"; }
dnf() { record_install "$@"; }
yum() { record_install "$@"; }
apt-mark() { printf 'apt-mark %s\n' "$*" >> "$T/pm-calls"; }
installed_kube_version() { if [[ -f "$T/installed" ]]; then echo "${K8S_VERSION}"; fi; }
"""


@DISTROS
def test_kube_packages_are_pinned_in_the_package_managers_syntax(distro, tmp_path):
    script = render_prepare_script(make_node(distro, ()))
    run_sourced(script, tmp_path, STUBS + "install_kubernetes_packages")
    calls = (tmp_path / "pm-calls").read_text().splitlines()
    [install_call] = [c for c in calls if " install " in f" {c} "]
    repo = (tmp_path / "repo-file").read_text()
    if distro == "ubuntu22":
        assert install_call.split()[-3:] == ["kubelet=1.34.2-*", "kubeadm=1.34.2-*", "kubectl=1.34.2-*"]
        assert "apt-mark hold kubelet" in calls
        assert ("deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] "
                "https://pkgs.k8s.io/core:/stable:/v1.34/deb/ /") in repo
    else:
        assert install_call.split()[0] == "install"
        assert "--disableexcludes=kubernetes" in install_call.split()
        assert install_call.split()[-3:] == ["kubelet-1.34.2-*", "kubeadm-1.34.2-*", "kubectl-1.34.2-*"]
        assert "baseurl=https://pkgs.k8s.io/core:/stable:/v1.34/rpm/" in repo.splitlines()
        assert "exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni" in repo.splitlines()


@DISTROS
def test_kube_packages_already_at_version_are_not_reinstalled(distro, tmp_path):
    script = render_prepare_script(make_node(distro, ()))
    (tmp_path / "installed").touch()
    run_sourced(script, tmp_path, STUBS + "install_kubernetes_packages")
    calls = (tmp_path / "pm-calls").read_text().splitlines() if (tmp_path / "pm-calls").exists() else []
    assert not [c for c in calls if " install " in f" {c} "]


def test_kube_package_at_other_version_on_a_member_stops_the_script(tmp_path):
    script = render_prepare_script(make_node("rocky9", ()))
    script_file = tmp_path / "s.sh"
    script_file.write_text(script)
    commands = STUBS + 'installed_kube_version() { echo 1.33.5; }\njoined_cluster() { true; }\ninstall_kubernetes_packages'
    result = subprocess.run(["bash", "-c", f'source "$1"\n{commands}', "bash", str(script_file)],
                            capture_output=True, text=True, env={**os.environ, "T": str(tmp_path)})
    assert result.returncode != 0
    assert "upgrade through the upgrade chain" in result.stdout
    assert not (tmp_path / "pm-calls").exists()


@DISTROS
def test_a_node_not_yet_joined_moves_its_older_packages_to_the_stacks_version(distro, tmp_path):
    """A machine re-created under its first-boot snippet got that snippet's older version; its preparation
    (created with the stack's current version) moves it before the join, unholding on apt."""
    script = render_prepare_script(make_node(distro, ()))
    script_file = tmp_path / "s.sh"
    script_file.write_text(script)
    commands = STUBS + ('installed_kube_version() { if [[ -e $T/installed ]]; then echo 1.34.2; else echo 1.33.5; fi; }\n'
                        'joined_cluster() { false; }\napt-mark() { echo "apt-mark $*" >>"$T/pm-calls"; '
                        '[[ $1 != showhold ]] || echo "$2"; }\ninstall_kubernetes_packages')
    result = subprocess.run(["bash", "-c", f'source "$1"\n{commands}', "bash", str(script_file)],
                            capture_output=True, text=True, env={**os.environ, "T": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "has not joined yet: moving it to 1.34.2" in result.stdout
    calls = (tmp_path / "pm-calls").read_text().splitlines()
    [install_call] = [c for c in calls if " install " in f" {c} "]
    if distro == "ubuntu22":
        assert install_call.split()[-3:] == ["kubelet=1.34.2-*", "kubeadm=1.34.2-*", "kubectl=1.34.2-*"]
        assert calls.index("apt-mark unhold kubelet") < calls.index(install_call)
    else:
        assert install_call.split()[-3:] == ["kubelet-1.34.2-*", "kubeadm-1.34.2-*", "kubectl-1.34.2-*"]


# --- distro specifics and input validation ---------------------------------------------------

@pytest.mark.parametrize("distro,conf,service", [
    ("ubuntu22", "/etc/chrony/chrony.conf", "chrony"),
    ("rocky9", "/etc/chrony.conf", "chronyd"),
    ("centos7", "/etc/chrony.conf", "chronyd"),
])
def test_chrony_points_at_the_configured_servers(distro, conf, service, tmp_path):
    script = render_prepare_script(make_node(distro, ()))
    result = run_sourced(script, tmp_path, 'echo "$CHRONY_CONF $CHRONY_SERVICE"')
    assert result.stdout.split() == [conf, service]
    servers = re.findall(r"^server (\S+) iburst$", script, flags=re.M)
    assert servers == ["ntp1.hk.example.internal", "10.20.0.1"]


@pytest.mark.parametrize("change,message", [
    ({"distro": "debian12"}, "unsupported distro"),
    ({"package_manager": "apt"}, "uses dnf"),
    ({"hostname": "bad;reboot"}, "hostname"),
    ({"containerd_version": "3.0.0"}, "config formats"),
    ({"kubernetes_version": "1.34"}, "MAJOR.MINOR.PATCH"),
    ({"ssh_authorized_keys": ()}, "ssh_authorized_key"),
    ({"ntp_servers": ("pool.ntp.org; reboot",)}, "ntp server"),
    ({"registry_mirrors": (RegistryMirror("docker.io", 'https://x"y', True),)}, "endpoint"),
    ({"admin_user": "root"}, "admin_user"),
])
def test_rejects_input_that_would_break_or_inject_into_the_script(change, message):
    node = dataclasses.replace(make_node("rocky9", ()), **change)
    with pytest.raises(ValueError, match=message):
        render_prepare_script(node)


@DISTROS
def test_main_runs_when_executed_as_a_file_or_through_bash_c_and_not_when_sourced(distro, tmp_path):
    """The converge step runs the script as `bash -c SCRIPT NAME` (render.shell), cloud-init as a file."""
    from render.shell import bash_command

    script = render_prepare_script(make_node(distro, ()))
    guard = script[script.rindex("\nif [[ "):].strip()
    probe = f"set -euo pipefail\nENTRY_POINT=main\nmain() {{ echo ran; }}\n{guard}\n"
    as_file = tmp_path / "probe.sh"
    as_file.write_text(probe)
    assert subprocess.run(["bash", str(as_file)], capture_output=True, text=True).stdout == "ran\n"
    command = bash_command(probe).replace("sudo -n ", "", 1)
    result = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "ran\n", result.stderr
    sourced = subprocess.run(["bash", "-c", f"source {as_file}; echo sourced"], capture_output=True, text=True)
    assert sourced.stdout == "sourced\n"


@DISTROS
def test_the_ssh_converge_leaves_the_kube_packages_and_names_no_version(distro, tmp_path):
    node = dataclasses.replace(make_node(distro, HARBOR_MIRRORS), kubernetes_version="1.35.9")
    converge = render_prepare_script(node, install_kubernetes=False)
    assert "1.35" not in converge
    # The same text whatever the version: a version change re-renders nothing here.
    assert converge == render_prepare_script(dataclasses.replace(node, kubernetes_version="1.36.4"),
                                             install_kubernetes=False)
    script_file = tmp_path / "converge.sh"
    script_file.write_text(converge)
    shellcheck(script_file)
    # main() in converge mode: the package step is never reached. Every step main() calls is a stub (read from main()
    # itself, so a new step is stubbed too): the script must write nothing on the machine that runs the tests.
    defined = set(re.findall(r"^([a-z_]+)\(\) \{", converge, re.MULTILINE))
    body = converge.split("\nmain() {\n", 1)[1].split("\n}\n", 1)[0]
    calls = [name for name in re.findall(r"^ +([a-z_]+)$", body, re.MULTILINE) if name in defined]
    assert {"install_base_packages", "keep_host_keys", "configure_containerd", "enable_kubelet"} <= set(calls), calls
    # A step called otherwise (with arguments, inside a condition) would escape the stubs and run for real: refused here.
    called_otherwise = {name for name in re.findall(r"\b([a-z_]+)\b", body) if name in defined} - set(calls)
    assert called_otherwise <= {"die", "log", "installed_kube_version"}, called_otherwise
    steps = [call for call in calls if call != "install_kubernetes_packages"]
    stubs = "".join(f'{step}() {{ echo {step} >> "$T/steps"; }}\n' for step in calls)
    stubs += 'install_kubernetes_packages() { echo install_kubernetes_packages >> "$T/steps"; }\n'
    # Tests may run unprivileged: only main's root check is waived.
    stubs += ('installed_kube_version() { echo 1.35.9; }\n'
              'die() { [[ "$*" == "run as root" ]] || { echo "$*"; exit 1; }; }\nmain\n')
    result = subprocess.run(["bash", "-c", f'source "$1"\n{stubs}', "bash", str(script_file)],
                            capture_output=True, text=True, env={**os.environ, "T": str(tmp_path)})
    assert (tmp_path / "steps").exists() and (tmp_path / "steps").read_text().split() == steps, result.stdout + result.stderr
    assert "stay at the installed 1.35.9" in result.stdout
    # First boot still installs the stack's version.
    assert bash_input(render_prepare_script(node), "K8S_VERSION") == "1.35.9"


# --- the node's side of a rolling upgrade ------------------------------------------------------

UPGRADE_STUBS = r"""
put_file() { cat > "$T/repo-file"; CHANGED=1; }
record() { printf '%s\n' "$*" >> "$T/calls"; }
installed_kube_version() { cat "$T/version-$1" 2>/dev/null || echo 1.36.3; }
record_install() {
  record "$@"
  local word
  for word in "$@"; do
    case "$word" in kube*=*-\* | kube*-1.*-\*) p="${word%%[=-]1.*}"; v="${word#*[=-]}"; echo "${v%-\*}" > "$T/version-$p" ;; esac
  done
}
apt_get() { record_install apt-get "$@"; }
dnf() { record_install dnf "$@"; }
yum() { record_install yum "$@"; }
apt-mark() {
  record apt-mark "$@"
  [[ -f "$T/holds" ]] || printf 'kubeadm\nkubelet\nkubectl\n' > "$T/holds"
  case "$1" in
    showhold) grep -x "$2" "$T/holds" || true ;;
    hold) echo "$2" >> "$T/holds" ;;
    unhold) grep -vx "$2" "$T/holds" > "$T/holds.new" || true; mv "$T/holds.new" "$T/holds" ;;
  esac
}
kubeadm() { record kubeadm "$@"; }
systemctl() { record systemctl "$@"; }
cluster_kubernetes_version() { cat "$T/cluster-version" 2>/dev/null || echo v1.36.3; }
# The runtime is at its pin unless a test says otherwise (nothing here may download).
runtime_outdated() { [[ -f "$T/runtime-outdated" ]]; }
stage_runtime() { echo "unexpected stage_runtime" >&2; exit 3; }
running_kubelet_version() { echo "v$(installed_kube_version kubelet)-running-is-stale"; }
die() { [[ "$*" == "run as root" ]] || { echo "$*"; exit 1; }; }
"""


def run_upgrade(distro: str, first_control_plane: bool, tmp_path: Path, extra: str = "",
                etcd_pod: str | None = None) -> list[str]:
    node = dataclasses.replace(make_node(distro, ()), kubernetes_version="1.36.4")
    script = render_upgrade_script(node, first_control_plane=first_control_plane, etcd_pod=etcd_pod)
    run_sourced(script, tmp_path, UPGRADE_STUBS + extra + "upgrade_node")
    calls = tmp_path / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


@DISTROS
@pytest.mark.parametrize("first", [True, False], ids=["first-control-plane", "other-node"])
def test_upgrade_script_passes_shellcheck(distro, first, tmp_path):
    script_file = tmp_path / "upgrade.sh"
    script_file.write_text(render_upgrade_script(make_node(distro, ()), first_control_plane=first))
    shellcheck(script_file)


@DISTROS
def test_upgrade_moves_kubeadm_then_the_cluster_then_kubelet_and_kubectl(distro, tmp_path):
    calls = run_upgrade(distro, True, tmp_path)
    installs = [c for c in calls if " install " in f" {c} "]
    kubeadm_calls = [c for c in calls if c.startswith("kubeadm ")]
    assert kubeadm_calls == ["kubeadm upgrade plan v1.36.4", "kubeadm upgrade apply v1.36.4 --yes"]
    order = [calls.index(installs[0]), calls.index(kubeadm_calls[1]), calls.index(installs[1]),
             calls.index("systemctl restart kubelet")]
    assert order == sorted(order), calls
    pin = "=1.36.4-*" if distro == "ubuntu22" else "-1.36.4-*"
    assert installs[0].endswith(f"kubeadm{pin}")
    assert installs[1].endswith(f"kubelet{pin} kubectl{pin}")
    if distro == "ubuntu22":
        assert calls.index("apt-mark unhold kubeadm") < calls.index(installs[0]) < calls.index("apt-mark hold kubeadm")
        assert sorted((tmp_path / "holds").read_text().split()) == ["kubeadm", "kubectl", "kubelet"]
    else:
        assert "--disableexcludes=kubernetes" in installs[0].split()
    # The new minor's repository is written before the first install.
    assert "pkgs.k8s.io/core:/stable:/v1.36/" in (tmp_path / "repo-file").read_text()


def test_a_plan_the_cluster_refuses_stops_before_anything_is_applied(tmp_path):
    with pytest.raises(AssertionError):
        run_upgrade("ubuntu22", True, tmp_path,
                    'kubeadm() { record kubeadm "$@"; [[ $2 != plan ]]; }\n')
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "kubeadm upgrade plan v1.36.4" in calls and not [c for c in calls if "upgrade apply" in c]


def test_a_control_plane_node_checks_quorum_right_before_kubeadm_restarts_its_member(tmp_path):
    control_plane, worker = tmp_path / "cp", tmp_path / "worker"
    control_plane.mkdir(), worker.mkdir()
    calls = run_upgrade("rocky9", False, control_plane,
                        'check_quorum_during_outage() { record "quorum $1 $ETCD_POD $KUBECONFIG"; }\n', etcd_pod="etcd-hk-prod-w1")
    assert calls.index("quorum hk-prod-w1 etcd-hk-prod-w1 /etc/kubernetes/admin.conf") == calls.index("kubeadm upgrade node") - 1
    assert "quorum" not in run_upgrade("rocky9", False, worker, 'check_quorum_during_outage() { record quorum; }\n')


def test_kube_vip_is_restarted_after_kubeadm_renewed_admin_conf(tmp_path):
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "kube-vip.yaml").write_text("kind: Pod\n")
    extra = (f'KUBE_VIP_MANIFEST={manifests}/kube-vip.yaml\nsleep() {{ record sleep "$@"; }}\n'
             'kubectl() { record kubectl "$@"; echo True; }\n')
    calls = run_upgrade("rocky9", False, tmp_path, extra)
    assert calls.index("kubeadm upgrade node") < calls.index("sleep 30")
    assert (manifests / "kube-vip.yaml").exists() and not (tmp_path / "kube-vip.yaml.parked").exists()
    assert any(c.startswith("kubectl --kubeconfig=/etc/kubernetes/admin.conf") and "kube-vip-hk-prod-w1" in c for c in calls)


def test_other_nodes_run_kubeadm_upgrade_node(tmp_path):
    calls = run_upgrade("rocky9", False, tmp_path)
    assert [c for c in calls if c.startswith("kubeadm ")] == ["kubeadm upgrade node"]


@pytest.mark.parametrize("first", [True, False], ids=["first-control-plane", "other-node"])
def test_a_rerun_on_a_node_already_at_the_target_runs_no_kubeadm_at_all(first, tmp_path):
    """A rotated SSH key or new script text re-runs every node's step: a finished node is left alone, without
    a second `kubeadm upgrade node` (which rewrites the kubelet configuration)."""
    for package in ("kubeadm", "kubelet", "kubectl"):
        (tmp_path / f"version-{package}").write_text("1.36.4\n")
    (tmp_path / "cluster-version").write_text("v1.36.4\n")
    calls = run_upgrade("rocky9", first, tmp_path, 'running_kubelet_version() { echo v1.36.4; }\n')
    assert calls == []


def test_a_node_whose_kubelet_still_runs_the_old_version_is_upgraded_again(tmp_path):
    for package in ("kubeadm", "kubelet", "kubectl"):
        (tmp_path / f"version-{package}").write_text("1.36.4\n")
    calls = run_upgrade("rocky9", False, tmp_path, 'running_kubelet_version() { echo v1.36.3; }\n')
    assert "kubeadm upgrade node" in calls and "systemctl restart kubelet" in calls


def test_a_rerun_on_the_upgraded_first_control_plane_node_changes_nothing(tmp_path):
    for package in ("kubeadm", "kubelet", "kubectl"):
        (tmp_path / f"version-{package}").write_text("1.36.4\n")
    (tmp_path / "cluster-version").write_text("v1.36.4\n")
    calls = run_upgrade("ubuntu22", True, tmp_path, 'running_kubelet_version() { echo v1.36.4; }\n')
    assert calls == []


# --- the admin user's SSH keys -------------------------------------------------------------------

def _run_authorized_keys(script: str, root: Path, stubs: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "HYBRID_CLUSTER_TEST_ROOT": str(root)})


def test_authorized_keys_follow_the_stack_and_an_unchanged_file_is_left_alone(tmp_path):
    from render.linux_node import render_authorized_keys
    root, stubs = tmp_path / "root", tmp_path / "stubs"
    root.mkdir(), stubs.mkdir()
    for name, body in {"getent": 'echo "ops:x:1000:1000::/home/ops:/bin/bash"',
                       "id": "echo ops", "chown": 'echo "$*" >>"$(dirname "$0")/chown.log"',
                       "install": 'mkdir -p "${@: -1}"'}.items():
        (stubs / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (stubs / name).chmod(0o755)
    old, new = "ssh-ed25519 AAAAold ops@old", "ssh-ed25519 AAAAnew ops@new"
    node = dataclasses.replace(make_node("ubuntu22", ()), ssh_authorized_keys=(old, new))
    result = _run_authorized_keys(render_authorized_keys(node), root, stubs)
    assert result.returncode == 0, result.stderr
    target = root / "home/ops/.ssh/authorized_keys"
    assert target.read_text() == f"{old}\n{new}\n" and oct(target.stat().st_mode)[-3:] == "600"
    assert "2 keys" in result.stdout
    again = _run_authorized_keys(render_authorized_keys(node), root, stubs)
    assert "unchanged" in again.stdout
    # The old key removed from the stack leaves every node.
    rotated = _run_authorized_keys(render_authorized_keys(dataclasses.replace(node, ssh_authorized_keys=(new,))), root, stubs)
    assert rotated.returncode == 0 and target.read_text() == f"{new}\n"
    assert not list(target.parent.glob(".authorized_keys.*"))


# --- the container runtime: staged, swapped, put back ------------------------------------------------
# lib/prepare-helpers.sh run for real against a scratch root (HYBRID_CLUSTER_TEST_ROOT): real tar, sha256sum,
# install and mv; only the downloads (fetch), the architecture and systemctl are stubs.

def _executable(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/usr/bin/env bash\n{body}\n")
    path.chmod(0o755)


def _runtime_release(tmp_path: Path, containerd: str, runc: str) -> Path:
    """The files the runtime's URLs serve, as published: the static tarball and its .sha256sum, the unit, runc
    and the runc.sha256sum that lists every architecture."""
    import hashlib
    import tarfile

    release, build = tmp_path / "release", tmp_path / "build"
    release.mkdir()
    _executable(build / "bin/containerd", f'echo "containerd github.com/containerd/containerd/v2 v{containerd} 0123abcd"')
    _executable(build / "bin/containerd-shim-runc-v2", "exit 0")
    # ctr plugins ls as containerd prints it (cmd/ctr/commands/plugins/plugins.go): the CRI's STATUS is $T/cri-status,
    # ok unless a test says otherwise, and only while this containerd runs.
    _executable(build / "bin/ctr", r"""[[ -f "$T/active-containerd" ]] || { echo "ctr: connection refused" >&2; exit 1; }
printf 'TYPE                     ID      PLATFORMS      STATUS    \n'
printf 'io.containerd.cri.v1     images  -              %s    \n' "$(cat "$T/cri-status" 2>/dev/null || echo ok)"
printf 'io.containerd.grpc.v1    cri     linux/amd64    %s    \n' "$(cat "$T/cri-status" 2>/dev/null || echo ok)"
""")
    tarball = f"containerd-static-{containerd}-linux-amd64.tar.gz"
    with tarfile.open(release / tarball, "w:gz") as archive:
        archive.add(build / "bin", arcname="bin")
    digest = hashlib.sha256((release / tarball).read_bytes()).hexdigest()
    (release / f"{tarball}.sha256sum").write_text(f"{digest}  {tarball}\n")
    (release / "containerd.service").write_text(f"[Service]\n# containerd {containerd}\n")
    _executable(release / "runc.amd64", f'echo "runc version {runc}"; echo "commit: v{runc}-0"')
    runc_digest = hashlib.sha256((release / "runc.amd64").read_bytes()).hexdigest()
    (release / "runc.sha256sum").write_text(f"{'0' * 64}  runc.arm64\n{runc_digest}  runc.amd64\n")
    return release


RUNTIME_STUBS = r"""
fetch() { cp "$T/release/${1##*/}" "$2"; }
release_arch() { echo amd64; }
systemctl() {
  printf '%s\n' "$*" >>"$T/systemctl"
  case "$1 ${2:-}" in
    "is-active --quiet") [[ -f "$T/active-$3" ]] ;;
    "stop "*) rm -f "$T/active-$2" ;;
    "start "*) [[ ! -f "$T/fail-start" ]] || { rm -f "$T/fail-start"; return 1; }; touch "$T/active-$2" ;;
    *) return 0 ;;
  esac
}
sleep() { :; }
"""


def _runtime_node(tmp_path: Path) -> Path:
    """A node running containerd 2.1.3 and runc 1.5.0 with its unit, containerd active."""
    root = tmp_path / "root"
    _executable(root / "usr/local/bin/containerd", 'echo "containerd github.com/containerd/containerd/v2 v2.1.3 feedbeef"')
    _executable(root / "usr/local/bin/containerd-shim-runc-v2", "exit 0")
    _executable(root / "usr/local/sbin/runc", 'echo "runc version 1.5.0"')
    (root / "usr/local/lib/systemd/system").mkdir(parents=True)
    (root / "usr/local/lib/systemd/system/containerd.service").write_text("[Service]\n# containerd 2.1.3\n")
    (tmp_path / "active-containerd").touch()
    return root


def _pins(release: Path, containerd: str = "2.1.4", runc: str = "1.5.1") -> tuple[tuple[str, str], ...]:
    """The unit's and runc's SHA-256, as config/compat.py pins them for their URLs (the archive is left unpinned, as
    containerd 2.3.5's are, so its published checksum is the one checked)."""
    from config import compat
    digest = {name: hashlib.sha256((release / name).read_bytes()).hexdigest() for name in ("containerd.service", "runc.amd64")}
    return ((compat.containerd_unit_url(containerd), digest["containerd.service"]),
            (compat.runc_url(runc, "amd64"), digest["runc.amd64"]))


def _pinned_node(release: Path) -> LinuxNodeInit:
    return dataclasses.replace(make_node("ubuntu22", ()), runtime_sha256=_pins(release))


def _swap(tmp_path: Path, root: Path, release_runc: str = "1.5.1") -> subprocess.CompletedProcess[str]:
    release = _runtime_release(tmp_path, "2.1.4", release_runc)
    script = tmp_path / "prepare.sh"
    script.write_text(render_prepare_script(_pinned_node(release)))
    return subprocess.run(["bash", "-c", f'source "$1"\n{RUNTIME_STUBS}\nruntime_outdated || exit 9\nstage_runtime\nswap_runtime',
                           "bash", str(script)], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "T": str(tmp_path), "HYBRID_CLUSTER_TEST_ROOT": str(root)})


def _versions(root: Path) -> tuple[str, str]:
    containerd = subprocess.run([root / "usr/local/bin/containerd", "--version"], capture_output=True, text=True).stdout
    runc = subprocess.run([root / "usr/local/sbin/runc", "--version"], capture_output=True, text=True).stdout
    return containerd.split()[2], runc.split()[2]


def test_the_runtime_is_swapped_after_everything_is_staged_even_with_its_shims_running(tmp_path):
    root = _runtime_node(tmp_path)
    # A running shim: its file cannot be opened for writing (ETXTBSY), only replaced.
    shim = root / "usr/local/bin/containerd-shim-runc-v2"
    shim.write_bytes(Path("/bin/sleep").read_bytes())
    running = subprocess.Popen([shim, "30"])
    try:
        result = _swap(tmp_path, root)
    finally:
        running.kill()
    assert result.returncode == 0, result.stdout + result.stderr
    assert _versions(root) == ("v2.1.4", "1.5.1")
    assert (root / "usr/local/lib/systemd/system/containerd.service").read_text() == "[Service]\n# containerd 2.1.4\n"
    calls = (tmp_path / "systemctl").read_text().splitlines()
    assert calls == ["is-active --quiet containerd", "stop containerd", "daemon-reload", "start containerd"]
    assert not list(root.rglob("*.new")), "no half-placed file is left"


def test_a_runtime_that_does_not_start_is_put_back_and_started_again(tmp_path):
    root = _runtime_node(tmp_path)
    (tmp_path / "fail-start").touch()
    result = _swap(tmp_path, root)
    assert result.returncode == 1 and "did not start; the previous runtime is back" in result.stdout
    assert _versions(root) == ("v2.1.3", "1.5.0")
    assert (root / "usr/local/lib/systemd/system/containerd.service").read_text() == "[Service]\n# containerd 2.1.3\n"
    calls = (tmp_path / "systemctl").read_text().splitlines()
    assert calls[-2:] == ["daemon-reload", "start containerd"] and (tmp_path / "active-containerd").exists()


def test_a_runtime_that_starts_without_its_cri_is_stopped_put_back_and_started_again(tmp_path):
    """#39 item 8: containerd starts, and systemd says so, with its CRI plugin failed to load; the kubelet could not
    reach it. The swap waits for the CRI (ctr plugins ls) and puts the old runtime back when it never loads."""
    root = _runtime_node(tmp_path)
    (tmp_path / "cri-status").write_text("error")
    result = _swap(tmp_path, root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "started without its CRI plugin" in result.stdout and "the previous runtime is back" in result.stdout
    assert _versions(root) == ("v2.1.3", "1.5.0")
    calls = (tmp_path / "systemctl").read_text().splitlines()
    # Started, found without its CRI, stopped, the old binaries and unit back, started again.
    assert calls == ["is-active --quiet containerd", "stop containerd", "daemon-reload", "start containerd",
                     "stop containerd", "daemon-reload", "start containerd"]
    assert (tmp_path / "active-containerd").exists()


def test_a_runtime_whose_cri_loads_is_kept(tmp_path):
    root = _runtime_node(tmp_path)
    (tmp_path / "cri-status").write_text("ok")
    result = _swap(tmp_path, root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _versions(root) == ("v2.1.4", "1.5.1")


def test_a_release_that_installs_another_version_is_put_back(tmp_path):
    # runc's published binary reports another version than the pin: nothing new stays.
    root = _runtime_node(tmp_path)
    result = _swap(tmp_path, root, release_runc="1.4.9")
    assert result.returncode == 1 and "did not install; the previous runtime is back" in result.stdout
    assert _versions(root) == ("v2.1.3", "1.5.0") and (tmp_path / "active-containerd").exists()


def test_a_download_that_fails_its_checksum_stops_nothing(tmp_path):
    root = _runtime_node(tmp_path)
    (tmp_path / "other").mkdir()
    release = _runtime_release(tmp_path / "other", "2.1.4", "1.5.1")
    (tmp_path / "release").mkdir()
    for file in release.iterdir():
        (tmp_path / "release" / file.name).write_bytes(file.read_bytes())
    (tmp_path / "release/containerd-static-2.1.4-linux-amd64.tar.gz.sha256sum").write_text(
        f"{'1' * 64}  containerd-static-2.1.4-linux-amd64.tar.gz\n")
    result = _stage(tmp_path, root, _pinned_node(tmp_path / "release"))
    assert result.returncode != 0 and "containerd-static-2.1.4-linux-amd64.tar.gz does not match its published checksum" \
        in result.stdout + result.stderr
    assert not (tmp_path / "systemctl").exists(), "nothing was stopped"
    assert _versions(root) == ("v2.1.3", "1.5.0")


def _stage(tmp_path: Path, root: Path, node: LinuxNodeInit) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "prepare.sh"
    script.write_text(render_prepare_script(node))
    return subprocess.run(["bash", "-c", f'source "$1"\n{RUNTIME_STUBS}\nstage_runtime\nswap_runtime', "bash", str(script)],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "T": str(tmp_path), "HYBRID_CLUSTER_TEST_ROOT": str(root)})


def test_a_pinned_download_is_held_against_its_pin_not_the_checksum_beside_it(tmp_path):
    """runc's published runc.sha256sum lists the served (other) binary, but the pin is the one that counts."""
    root = _runtime_node(tmp_path)
    release = _runtime_release(tmp_path, "2.1.4", "1.5.1")
    pins = _pins(release)
    (release / "runc.amd64").write_text("#!/usr/bin/env bash\necho tampered\n")
    served = hashlib.sha256((release / "runc.amd64").read_bytes()).hexdigest()
    (release / "runc.sha256sum").write_text(f"{served}  runc.amd64\n")
    result = _stage(tmp_path, root, dataclasses.replace(make_node("ubuntu22", ()), runtime_sha256=pins))
    assert result.returncode != 0
    assert f"runc.amd64 has SHA-256 {served}, not the {pins[1][1]} config/compat.py pins" in result.stdout + result.stderr
    assert not (tmp_path / "systemctl").exists(), "nothing was stopped"
    # Every file pinned, the archive too (at the URL config/compat.py builds): nothing published is read.
    (tmp_path / "pinned").mkdir()
    good = _runtime_release(tmp_path / "pinned", "2.1.4", "1.5.1")
    for file in good.iterdir():
        (release / file.name).write_bytes(file.read_bytes())
    from config import compat
    archive = "containerd-static-2.1.4-linux-amd64.tar.gz"
    every = (*_pins(release), (compat.containerd_archive_url("2.1.4", "amd64"),
                               hashlib.sha256((release / archive).read_bytes()).hexdigest()))
    (release / f"{archive}.sha256sum").unlink()
    (release / "runc.sha256sum").unlink()
    staged = _stage(tmp_path, root, dataclasses.replace(make_node("ubuntu22", ()), runtime_sha256=every))
    assert staged.returncode == 0, staged.stdout + staged.stderr
    assert "published" not in staged.stdout + staged.stderr and _versions(root) == ("v2.1.4", "1.5.1")
    # The unit has no checksum published beside it: without a pin it is refused.
    unpinned = _stage(tmp_path, root, dataclasses.replace(make_node("ubuntu22", ()), runtime_sha256=every[1:]))
    assert unpinned.returncode != 0 and "no SHA-256 pinned for https://raw.githubusercontent.com/containerd/containerd/" \
        "v2.1.4/containerd.service" in unpinned.stdout + unpinned.stderr


# --- the runtime in the node's upgrade ------------------------------------------------------------------

RUNTIME_UPGRADE_STUBS = r"""
stage_runtime() { record stage_runtime; [[ ! -f "$T/stage-fails" ]] || exit 1; }
swap_runtime() { record swap_runtime; [[ ! -f "$T/swap-fails" ]] || exit 1; rm -f "$T/runtime-outdated"; }
systemctl() { record systemctl "$@"; [[ "$1 ${2:-}" != "is-active --quiet" ]] || [[ -f "$T/kubelet-active" ]]; }
"""


def _at_kubernetes_target(tmp_path: Path) -> str:
    for package in ("kubeadm", "kubelet", "kubectl"):
        (tmp_path / f"version-{package}").write_text("1.36.4\n")
    return 'running_kubelet_version() { echo v1.36.4; }\n'


def test_a_runtime_pin_change_alone_swaps_the_runtime_with_the_kubelet_stopped_and_runs_no_kubeadm(tmp_path):
    (tmp_path / "runtime-outdated").touch()
    (tmp_path / "kubelet-active").touch()
    calls = run_upgrade("rocky9", False, tmp_path, _at_kubernetes_target(tmp_path) + RUNTIME_UPGRADE_STUBS)
    assert not [c for c in calls if c.startswith("kubeadm")]
    assert calls == ["stage_runtime", "systemctl is-active --quiet kubelet", "systemctl stop kubelet", "swap_runtime",
                     "systemctl start kubelet"]


def test_with_both_changes_the_runtime_is_staged_first_and_swapped_after_kubeadm(tmp_path):
    (tmp_path / "runtime-outdated").touch()
    (tmp_path / "kubelet-active").touch()
    calls = run_upgrade("rocky9", False, tmp_path, RUNTIME_UPGRADE_STUBS)
    assert calls.index("stage_runtime") < calls.index("kubeadm upgrade node") < calls.index("swap_runtime")
    assert calls.index("systemctl stop kubelet") < calls.index("swap_runtime") < calls.index("systemctl start kubelet")


@pytest.mark.parametrize("failure", ["stage-fails", "swap-fails"])
def test_a_failed_runtime_change_leaves_the_kubelet_running(failure, tmp_path):
    (tmp_path / "runtime-outdated").touch()
    (tmp_path / "kubelet-active").touch()
    (tmp_path / failure).touch()
    with pytest.raises(AssertionError):
        run_upgrade("rocky9", False, tmp_path, _at_kubernetes_target(tmp_path) + RUNTIME_UPGRADE_STUBS)
    calls = (tmp_path / "calls").read_text().splitlines()
    stops = calls.count("systemctl stop kubelet")
    assert calls.count("systemctl start kubelet") == stops, calls
    if failure == "stage-fails":
        assert stops == 0, "nothing stops before the runtime is staged"


def test_the_upgrade_names_the_runtime_pins(tmp_path):
    script = render_upgrade_script(make_node("ubuntu22", ()), first_control_plane=False)
    assert bash_input(script, "CONTAINERD_VERSION") == "2.1.4" and bash_input(script, "RUNC_VERSION") == "1.5.1"


def test_the_converge_names_no_runtime_version_and_leaves_the_runtime(tmp_path):
    node = make_node("ubuntu22", ())
    converge = render_prepare_script(node, install_kubernetes=False)
    assert bash_input(converge, "CONTAINERD_VERSION") == "" and bash_input(converge, "RUNC_VERSION") == ""
    assert converge == render_prepare_script(dataclasses.replace(node, containerd_version="2.1.5", runc_version="1.5.2"),
                                             install_kubernetes=False)
    root = _runtime_node(tmp_path)
    result = run_sourced(converge, tmp_path, f'HYBRID_CLUSTER_TEST_ROOT={root}\n'
                         'RUNTIME_BIN="$HYBRID_CLUSTER_TEST_ROOT/usr/local/bin"\n'
                         'RUNC_PATH="$HYBRID_CLUSTER_TEST_ROOT/usr/local/sbin/runc"\n'
                         'CONTAINERD_UNIT="$HYBRID_CLUSTER_TEST_ROOT/usr/local/lib/systemd/system/containerd.service"\n'
                         'stage_runtime() { exit 7; }\ninstall_containerd')
    assert "stay as installed" in result.stdout and _versions(root) == ("v2.1.3", "1.5.0")


def test_an_active_ufw_is_turned_off_whatever_the_templates_language(tmp_path):
    """Review of #39 item 6: `ufw status` is translated (gettext), so on a template in another language an active ufw
    was never turned off; it is read in the C locale."""
    script = tmp_path / "prepare.sh"
    script.write_text(render_prepare_script(make_node("ubuntu22", ())))
    stubs = r"""
systemctl() { return 1; }
ufw() {
  case "$1" in
    status) if [[ "${LC_ALL:-}" == C ]]; then echo "Status: active"; else echo "Estado: activo"; fi ;;
    disable) echo "ufw disabled" >>"$T/ufw" ;;
  esac
}
"""
    result = subprocess.run(["bash", "-c", f'source "$1"\n{stubs}\ndisable_host_firewall', "bash", str(script)],
                            capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "T": str(tmp_path), "LANG": "es_ES.UTF-8", "LC_ALL": ""})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "ufw").read_text() == "ufw disabled\n"
