"""Tests for render/windows_bootstrap.py: every script parses with tree-sitter-powershell and fits the
SSH command line, secrets from stdin never reach an output line, every step checks before it changes,
the join-line pattern accepts what kubeadm prints and nothing else (checked with Python's re on the
very pattern the script carries), containerd's config is valid TOML naming Calico's CNI directories,
and the reset never blocks the VM's deletion."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path

import pytest

from plan.nodes import windows_params
from render import containerd
from render.hyperv import MAX_SSH_COMMAND_CHARS, script_from_ssh_command, ssh_command
from render.script_files import ps_array
from render.windows_bootstrap import (
    CALICO_WINDOWS_CNI_BIN_DIR,
    CALICO_WINDOWS_CNI_CONF_DIR,
    CONTAINERD_BINARIES_STEP,
    DEFAULT_CNI_BIN_DIR,
    DEFAULT_CNI_CONF_DIR,
    JOIN_LINE_PATTERN,
    KUBEADM_FLAG_PATTERN,
    UPGRADE_MARKER,
    WindowsNodeParams,
    render_join,
    render_prepare_steps,
    render_prepare_update,
    render_reset,
    render_runtime_upgrade,
    render_upgrade,
)
from tests.conftest import hk_prod_spec
from tests.validators import powershell_errors
from vocab.cluster import LINUX_CRI_SOCKET, WINDOWS_CRI_SOCKET

ROOT = Path(__file__).resolve().parents[2]
INSTALLATION_SCHEMA = ROOT / "tests" / "fixtures" / "schemas" / "operator.tigera.io_v1_Installation.json"

# hk-prod's hk-win-1 as the program builds it (Pulumi.hk-prod.yaml through components/cluster/bootstrap.py): Harbor
# proxy-cache mirrors, two NTP servers, dynamic ports 10000 + 20000 below the NodePort range.
_SPEC = hk_prod_spec()
HK_PROD = windows_params(_SPEC, _SPEC.nodes.windows[0])
# hk-win-3: Windows Server 2019 with its own pause tag, no mirrors, one NTP server.
WIN2019 = dataclasses.replace(
    HK_PROD, vm_name="hk-win-3", computer_name="HKWIN3", pause_image="registry.k8s.io/pause:3.10.1",
    ntp_servers=("10.10.10.5",), registry_mirrors=(),
)

# Hand-written stand-in for render/kubeadm.py's output (v1beta4, worker, Windows taint and labels).
JOIN_CONFIG = """apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: '@@JOIN_API_ENDPOINT@@'
    token: '@@JOIN_TOKEN@@'
    caCertHashes:
    - '@@JOIN_CA_CERT_HASH@@'
nodeRegistration:
  name: hk-win-1
  criSocket: npipe:////./pipe/containerd-containerd
  kubeletExtraArgs:
  - name: node-labels
    value: topology.kubernetes.io/zone=hk-1,node.os.distro=win2022
  taints:
  - key: node-role.kubernetes.io/windows
    value: 'true'
    effect: NoSchedule
"""


def _scripts(p: WindowsNodeParams) -> dict[str, str]:
    scripts = {f"prepare-{name}": script for name, script in render_prepare_steps(p)}
    scripts["join"] = render_join(p, JOIN_CONFIG)
    scripts["reset"] = render_reset(p)
    scripts["upgrade"] = render_upgrade(p)
    scripts["runtime-upgrade"] = render_runtime_upgrade(p)
    return scripts


SCRIPTS = {f"hk-prod/{k}": v for k, v in _scripts(HK_PROD).items()}
SCRIPTS.update({f"win2019/{k}": v for k, v in _scripts(WIN2019).items()})
HK = _scripts(HK_PROD)


def _ps_literal(script: str, variable: str) -> str:
    """The value of a `$Variable = '...'` header line, unquoted the way PowerShell reads it."""
    match = re.search(rf"^\${variable} = '((?:[^']|'')*)'$", script, re.MULTILINE)
    assert match, variable
    return match.group(1).replace("''", "'")


def _code_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]


# --- validity and size ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_tree_sitter_parse_has_no_error_or_missing_nodes(name: str) -> None:
    problem = "\n".join(powershell_errors(SCRIPTS[name])) or None
    assert problem is None, f"{name}: {problem}"


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_ssh_command_fits_and_round_trips(name: str) -> None:
    command = ssh_command(SCRIPTS[name])
    assert len(command) <= MAX_SSH_COMMAND_CHARS
    assert script_from_ssh_command(command) == SCRIPTS[name]


def test_hk_prod_scripts_leave_headroom_under_the_limit() -> None:
    for name, script in HK.items():
        assert len(ssh_command(script)) < 0.9 * MAX_SSH_COMMAND_CHARS, name


def test_too_many_mirrors_fail_at_render_time_not_on_the_host() -> None:
    mirrors = tuple((f"registry{i}.example.com", f"https://harbor.example.com/v2/proxy-{i}", True, None) for i in range(40))
    with pytest.raises(ValueError, match="over the"):
        render_prepare_steps(dataclasses.replace(HK_PROD, registry_mirrors=mirrors))


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_scripts_fail_loudly_from_the_first_statement(name: str) -> None:
    code = _code_lines(SCRIPTS[name])
    assert code[0] == "$ErrorActionPreference = 'Stop'"
    assert code[1] == "Set-StrictMode -Version Latest"
    # Every guest script block sets the same, since it runs in a fresh remote session.
    blocks = SCRIPTS[name].count("$GuestStep = {")
    assert blocks == 1
    guest = SCRIPTS[name].split("$GuestStep = {", 1)[1]
    assert "    $ErrorActionPreference = 'Stop'\n    Set-StrictMode -Version Latest\n" in guest


def test_prepare_steps_are_ordered_and_named() -> None:
    assert [name for name, _ in render_prepare_steps(HK_PROD)] == [
        "containers-feature", "host-settings", "containerd-binaries", "containerd", "kubernetes",
    ]


@pytest.mark.parametrize("name", sorted(HK))
def test_guest_arguments_match_the_script_block_parameters(name: str) -> None:
    script = HK[name]
    guest = script.split("$GuestStep = {", 1)[1]
    params = re.match(r"\s*param\(([^)]*)\)", guest)
    expected = len(re.findall(r"\[[a-z\[\]]+\]\$\w+", params.group(1))) if params else 0
    call = re.search(r"Invoke-Guest -Step \$GuestStep -Arguments @\((.*)\)$", script, re.MULTILINE)
    assert call, name
    given = [a for a in call.group(1).split(", ") if a.strip()]
    assert len(given) == expected, (name, given)


# --- secrets --------------------------------------------------------------------------------------

_WRITE = re.compile(r"Write-(Output|Host|Warning|Verbose|Information|Error)|\$changes \+=|throw ")


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_password_is_read_from_stdin_and_never_printed(name: str) -> None:
    script = SCRIPTS[name]
    assert script.count("$plainPassword = [Console]::In.ReadLine()") == 1
    for line in script.splitlines():
        if "plainPassword" in line:
            assert not re.search(r"Write-", line), line
        if "$GuestCredential" in line and "New-Object" not in line:
            assert "Invoke-Command -VMName $VmName -Credential $GuestCredential" in line, line


def test_join_line_is_read_second_and_never_printed() -> None:
    script = HK["join"]
    password = script.index("$plainPassword = [Console]::In.ReadLine()")
    join_line = script.index("$joinLine = [Console]::In.ReadLine()")
    assert password < join_line
    assert "Remove-Variable -Name joinLine" in script and "Remove-Variable -Name joinMatch" in script
    for line in script.splitlines():
        found = _WRITE.search(line)
        if found:  # what is written, thrown or reported from that point on
            for secret in ("joinLine", "joinMatch", "$Token", "$CaCertHash", "$Endpoint", "$config", "$Template"):
                assert secret not in line[found.start():], line
    # The token and hash reach nothing but the guest, the config text and kubeadm's redaction list.
    for line in script.splitlines():
        if "$Token" in line or "$CaCertHash" in line:
            assert any(use in line for use in ("param(", "$secrets = @(", "$config = $Template.Replace")), line


def test_kubeadm_output_is_redacted_before_it_can_reach_an_error() -> None:
    script = HK["join"]
    assert "$secrets = @($Token, $Token.Split('.')[1], $CaCertHash)" in script
    for call in re.findall(r"Invoke-Checked \$kubeadm .*", script):
        assert call.rstrip().endswith("$secrets"), call
    assert "$_.Replace($secret, '<redacted>')" in script


def test_join_config_is_written_to_an_administrators_only_directory_and_removed() -> None:
    script = HK["join"]
    assert "$acl.SetAccessRuleProtection($true, $false)" in script
    assert "@('S-1-5-32-544', 'S-1-5-18')" in script
    acl = script.index("Set-Acl -LiteralPath $workDir -AclObject $acl")
    write = script.index("[System.IO.File]::WriteAllText($configFile, $config")
    cleanup = script.index("} finally {\n        Remove-Item -LiteralPath $workDir -Recurse -Force")
    assert acl < write < cleanup


def test_no_script_reads_stdin_beyond_what_it_needs() -> None:
    for name, script in HK.items():
        expected = 2 if name == "join" else 1
        assert script.count("[Console]::In.ReadLine()") == expected, name


# --- join line ------------------------------------------------------------------------------------

TOKEN = "abcdef.0123456789abcdef"
HASH = "sha256:" + "0f" * 32


def test_rendered_pattern_is_the_python_constant() -> None:
    assert _ps_literal(HK["join"], "JoinLinePattern") == JOIN_LINE_PATTERN
    assert "$joinMatch = [regex]::Match($joinLine, $JoinLinePattern)" in HK["join"]


def test_pattern_uses_only_syntax_dotnet_and_python_read_alike() -> None:
    # No named groups ((?P<..> is Python-only, (?<..> would be a look-behind in Python), no \A/\z/\Z,
    # no inline flags; [regex]::Match is case-sensitive like re.
    for construct in ("(?P", "(?<", "\\A", "\\z", "\\Z", "(?i", "\\d", "\\w"):
        assert construct not in JOIN_LINE_PATTERN, construct
    assert re.compile(JOIN_LINE_PATTERN).groups == 3


@pytest.mark.parametrize(
    ("line", "endpoint"),
    [
        (f"kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH}", "10.30.30.10:6443"),
        # kubeadm token create --print-join-command ends the line with a space.
        (f"kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH} ", "10.30.30.10:6443"),
        (f"kubeadm join api.hk-prod.internal:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH}", "api.hk-prod.internal:6443"),
        (f"kubeadm join [fd00:30::10]:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH}", "[fd00:30::10]:6443"),
    ],
)
def test_pattern_accepts_what_kubeadm_prints(line: str, endpoint: str) -> None:
    match = re.match(JOIN_LINE_PATTERN, line)
    assert match
    assert match.groups() == (endpoint, TOKEN, HASH)


@pytest.mark.parametrize(
    "line",
    [
        "",
        "kubeadm join 10.30.30.10:6443",
        f"kubeadm join 10.30.30.10:6443 --token {TOKEN}",
        f"kubeadm join 10.30.30.10 --token {TOKEN} --discovery-token-ca-cert-hash {HASH}",
        f"kubeadm join 10.30.30.10:6443 --token ABCDEF.0123456789abcdef --discovery-token-ca-cert-hash {HASH}",
        f"kubeadm join 10.30.30.10:6443 --token abcdef.0123456789abcde --discovery-token-ca-cert-hash {HASH}",
        f"kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash sha256:{'0F' * 32}",
        f"kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash sha256:{'0f' * 31}",
        f"kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash md5:{'0f' * 16}",
        # Control-plane joins and extra options are not for Windows nodes.
        f"kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH} --control-plane "
        f"--certificate-key {'ab' * 32}",
        f"kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH} --discovery-token-ca-cert-hash {HASH}",
        f"kubeadm join 10.30.30.10:6443 --discovery-token-ca-cert-hash {HASH} --token {TOKEN}",
        f"kubeadm join 10.30.30.10:6443; Remove-Item C:\\ --token {TOKEN} --discovery-token-ca-cert-hash {HASH}",
        f"kubeadm join -10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH}",
        f"kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH}\nWrite-Output pwned",
        f"sudo kubeadm join 10.30.30.10:6443 --token {TOKEN} --discovery-token-ca-cert-hash {HASH}",
    ],
)
def test_pattern_rejects_malformed_lines(line: str) -> None:
    assert re.match(JOIN_LINE_PATTERN, line) is None


def test_port_range_is_checked_after_the_match() -> None:
    assert re.match(JOIN_LINE_PATTERN, f"kubeadm join 10.0.0.1:99999 --token {TOKEN} --discovery-token-ca-cert-hash {HASH}")
    assert "if ($apiPort -lt 1 -or $apiPort -gt 65535)" in HK["join"]


# --- join flow ------------------------------------------------------------------------------------


def test_join_is_guarded_by_kubelet_conf_before_anything_changes() -> None:
    script = HK["join"]
    assert _ps_literal(script, "KubeletConf") == r"C:\etc\kubernetes\kubelet.conf"
    guard = script.index("if (Test-Path -LiteralPath $KubeletConf) {")
    first_change = min(script.index(marker) for marker in (
        "Invoke-Checked $kubeadm", "New-Item -ItemType Directory -Path $workDir", "Set-Service",
    ))
    assert guard < first_change
    assert "Joined = $false" in script[guard:first_change]


def test_join_sequence_enables_the_kubelet_between_the_two_kubeadm_runs() -> None:
    script = HK["join"]
    order = [
        "@('reset', '--force', \"--cri-socket=$CriSocket\")",
        "@('join', \"--config=$configFile\", '--skip-phases=kubelet-wait-bootstrap')",
        "Set-KubeletServiceFlags $FlagsFile $FlagPattern $ServiceBase",
        "Set-Service -Name kubelet -StartupType Automatic",
        "Start-Service -Name kubelet",
        "@('join', 'phase', 'kubelet-wait-bootstrap', \"--config=$configFile\")",
        "while ((Get-Service -Name kubelet).Status -ne 'Running')",
    ]
    positions = [script.rindex(step) if "Set-KubeletServiceFlags" in step else script.index(step) for step in order]
    assert positions == sorted(positions)
    # The function (lib/windows-kubelet-flags.ps1) reads kubeadm's flags file and changes the service with them.
    function = script.split("function Set-KubeletServiceFlags", 1)[1].split("\n    }\n", 1)[0]
    _before(function, "Get-Content -LiteralPath $FlagsFile -Raw", "Invoke-CimMethod -InputObject $service -MethodName Change")
    assert _ps_literal(script, "CriSocket") == WINDOWS_CRI_SOCKET
    assert _ps_literal(script, "FlagsFile") == r"C:\var\lib\kubelet\kubeadm-flags.env"


def test_kubelet_service_command_line() -> None:
    base = _ps_literal(HK["join"], "ServiceBase")
    assert base == _ps_literal(HK["prepare-kubernetes"], "ServiceCommand")
    words = base.split(" ")
    assert words[0] == r"C:\k\kube-log-runner.exe" and words[2] == r"C:\k\kubelet.exe"
    assert "--windows-service" in words
    assert f"--container-runtime-endpoint={WINDOWS_CRI_SOCKET}" in words
    assert r"--kubeconfig=C:\etc\kubernetes\kubelet.conf" in words
    assert "--cgroups-per-qos=false" in words and "--resolv-conf=" in words
    # Removed from the kubelet in 1.35; passing it stops the kubelet from starting.
    assert not any(w.startswith("--pod-infra-container-image") for w in words)
    assert '"' not in base


@pytest.mark.parametrize(
    "flag",
    [
        "--container-runtime-endpoint=npipe:////./pipe/containerd-containerd",
        "--hostname-override=hk-win-1",
        "--node-ip=10.30.30.51",
        "--node-labels=topology.kubernetes.io/zone=hk-1,node.os.distro=win2022",
        "--register-with-taints=node-role.kubernetes.io/windows=true:NoSchedule",
    ],
)
def test_flag_pattern_accepts_kubeadm_flags(flag: str) -> None:
    assert re.match(KUBEADM_FLAG_PATTERN, flag)


@pytest.mark.parametrize("flag", ['--node-labels="a=b"', "--x=a b", "node-ip=1.2.3.4", "--Node-Ip=1", "--flag"])
def test_flag_pattern_rejects_anything_else(flag: str) -> None:
    assert not re.match(KUBEADM_FLAG_PATTERN, flag)


def test_join_config_template_reaches_the_script_verbatim() -> None:
    script = HK["join"]
    for line in JOIN_CONFIG.rstrip("\n").split("\n"):
        assert "'" + line.replace("'", "''") + "'" in script, line
    # The placeholders are inputs handed to the guest, which substitutes the join line's values there.
    assert "$JoinPlaceholders = @('@@JOIN_TOKEN@@', '@@JOIN_CA_CERT_HASH@@', '@@JOIN_API_ENDPOINT@@')" in script
    assert ("$config = $Template.Replace($JoinPlaceholders[0], $Token).Replace($JoinPlaceholders[1], $CaCertHash)"
            ".Replace($JoinPlaceholders[2], $Endpoint)") in script


@pytest.mark.parametrize(
    "change",
    [
        lambda y: y.replace("@@JOIN_TOKEN@@", "abcdef.0123456789abcdef"),
        lambda y: y.replace("@@JOIN_CA_CERT_HASH@@", "sha256:00"),
        lambda y: y.replace("@@JOIN_API_ENDPOINT@@", "10.0.0.1:6443"),
        lambda y: y.replace(WINDOWS_CRI_SOCKET, LINUX_CRI_SOCKET),
        lambda y: y.replace("kind: JoinConfiguration", "kind: InitConfiguration"),
        lambda y: y.replace("  name: hk-win-1", "  name: hk-win-1\t"),
    ],
)
def test_render_join_rejects_unusable_join_configs(change) -> None:
    with pytest.raises(ValueError):
        render_join(HK_PROD, change(JOIN_CONFIG))


# --- preparation: check before change ---------------------------------------------------------------


def _before(script: str, check: str, change: str) -> None:
    # In the code: the scripts' comments may name the same commands.
    code = "\n".join(_code_lines(script))
    assert code.index(check) < code.index(change), (check, change)


def test_containers_feature_step_restarts_from_the_host_only_when_needed() -> None:
    script = HK["prepare-containers-feature"]
    _before(script, "if (-not (Get-WindowsFeature -Name Containers).Installed) {", "Install-WindowsFeature -Name Containers")
    assert "$restartNeeded = [string]$install.RestartNeeded -ne 'No'" in script
    # The guest installs no Hyper-V feature (the comment explaining why names it).
    assert "Hyper-V" not in "\n".join(_code_lines(script)).replace("Hyper-V host", "")
    guard = script.index("if ($guest.RestartNeeded) {")
    assert script.index("Restart-Guest", guard) > guard
    assert "Restart-Computer -Force" in script
    assert "(Get-GuestBootTime) -ne $bootedAt" in script
    assert 'throw "Timed out after $PsDirectTimeoutSec s waiting for $VmName to restart"' in script
    assert "throw \"The Containers feature is still not installed" in script


def test_host_settings_step_checks_before_it_changes() -> None:
    script = HK["prepare-host-settings"]
    assert "$NtpServers = @('10.10.10.5', 'stdtime.gov.hk')" in script
    assert "$PortStart = 33000" in script and "$PortCount = 32536" in script
    _before(script, "if ($timeConfig.NtpServer -ne $peers -or $timeConfig.Type -ne 'NTP') {", "'w32tm.exe'")
    assert "'/syncfromflags:manual', '/update'" in script
    _before(script, "$current.DynamicPortRangeStartPort -ne $PortStart", "'netsh.exe' @('int', 'ipv4', 'set', 'dynamicport', $protocol")
    _before(script, "if (-not (Get-NetFirewallRule -Name $RuleNames[$i] -ErrorAction SilentlyContinue)) {",
            "New-NetFirewallRule -Name $RuleNames[$i]")
    assert "$RuleNames = @('kubernetes-kubelet-10250', 'windows-exporter-9182')" in script
    assert "$RulePorts = @(10250, 9182)" in script
    # The kubelet and windows_exporter only from the cluster's networks (the nodes' and the pods'), set again on an
    # existing rule, so a node of an earlier release loses its any-address rule.
    assert "$RuleSources = @('10.30.30.0/24', '10.244.0.0/16')" in script
    assert "-LocalPort $RulePorts[$i] -RemoteAddress $RuleSources -Action Allow -Enabled True" in script
    _before(script, "} else {\n            Set-NetFirewallRule -Name $RuleNames[$i]", "$guard = Get-NetFirewallRule")
    assert "Set-Service -Name W32Time -StartupType Automatic" in script


def test_containerd_step_configures_and_runs_the_installed_containerd() -> None:
    script = HK["prepare-containerd"]
    # The binaries are the step before's: this one names no release, so a pin change does not re-run it.
    assert "2.3.5" not in script and "TarballUrl" not in script
    _before(script, "if (-not (Test-Path -LiteralPath $exe)) { throw", "@('--register-service')")
    _before(script, "if (-not (Get-Service -Name containerd -ErrorAction SilentlyContinue)) {", "@('--register-service')")
    assert "if ((Test-Path -LiteralPath $Path) -and ([System.IO.File]::ReadAllText($Path) -ceq $Text)) { return $false }" in script
    assert "if ($configChanged -and $containerd.Status -eq 'Running') {" in script
    assert "$Directories = @('C:/opt/cni/bin', 'C:/etc/cni/net.d', 'C:\\etc\\containerd\\certs.d')" in script


@pytest.mark.parametrize("name", ["prepare-containerd-binaries", "runtime-upgrade"])
def test_containerd_binaries_are_staged_and_verified_before_anything_stops(name: str) -> None:
    script = HK[name]
    assert _ps_literal(script, "TarballUrl") == (
        "https://github.com/containerd/containerd/releases/download/v2.3.5/containerd-2.3.5-windows-amd64.tar.gz"
    )
    assert f"$KeepMemberVersion = {1 if name.startswith('prepare') else 0}" in script.splitlines()
    assert '"$TarballUrl.sha256sum"' in script
    step = script.split("$GuestStep = {", 1)[1]
    # In the step's own code (the functions are defined above it): stage, then stop the kubelet, swap, start.
    body = step.split("$containerdDir = Join-Path $env:ProgramFiles 'containerd'", 1)[1]
    _before(body, "$stage = Get-StagedContainerd $Version $TarballUrl", "Stop-Service -Name kubelet -Force")
    _before(body, "Stop-Service -Name kubelet -Force", "Install-StagedContainerd $stage $Version $containerdDir")
    # The kubelet is started again whatever the swap did (## notes are dropped at render time).
    assert "} finally {\n            if ($kubeletWasRunning) { Start-Service -Name kubelet }" in body
    # A member keeps its runtime in the preparation: only the chain moves it.
    _before(body, "$KeepMemberVersion -and (Test-Path -LiteralPath $KubeletConf)", "Get-StagedContainerd")
    assert _ps_literal(script, "KubeletConf") == r"C:\etc\kubernetes\kubelet.conf"
    # The download is verified before it is kept; the swap moves running binaries aside, never overwrites them.
    _before(step, "if ((Get-FileSha256 $partial) -ne $Digest) {", "Copy-Item -LiteralPath $partial -Destination $Path")
    install = step.split("function Install-StagedContainerd", 1)[1].split("\n}\n", 1)[0]
    _before(install, "Move-Item -LiteralPath $target -Destination $aside", "Copy-Item -LiteralPath $binary.FullName -Destination $target")
    _before(install, 'if ($installed -ne "v$Version") { throw', "Start-Service -Name containerd")
    # A daemon that starts with its CRI not loaded is a failed swap too (#39 item 8): waited for before the catch,
    # which stops the service before it puts the old binaries back.
    _before(install, "Start-Service -Name containerd", "Wait-CriServing $ContainerdDir")
    _before(install, "Wait-CriServing $ContainerdDir", "} catch {")
    assert "if ($fields.Count -ge 4 -and $fields[0] -eq 'io.containerd.grpc.v1' -and $fields[1] -eq 'cri')" in step
    # A ctr that cannot reach containerd yet (stderr, a terminating error under Stop in Windows PowerShell 5.1) is a
    # "not yet", retried, not a failed swap (review of #39).
    probe = step.split("function Test-CriServing", 1)[1].split("function Wait-CriServing", 1)[0]
    _before(probe, "$ErrorActionPreference = 'Continue'", "plugins ls 2>$null")
    _before(probe, "plugins ls 2>$null", "} catch {")
    assert probe.split("} catch {", 1)[1].split("}", 1)[0].strip() == "return $false"
    rollback = install.split("} catch {", 1)[1]
    _before(rollback, "Stop-Service -Name containerd -Force", "Move-Item -LiteralPath $pair[1]")
    _before(rollback, "Remove-Item -LiteralPath $target", "Move-Item -LiteralPath $pair[1] -Destination $pair[0] -Force")
    _before(rollback, "Move-Item -LiteralPath $pair[1]", "throw ")


def test_the_update_of_the_binaries_steps_installs_nothing_and_names_no_version() -> None:
    script = render_prepare_update(HK_PROD, CONTAINERD_BINARIES_STEP, HK["prepare-containerd-binaries"])
    assert "the upgrade chain moves them" in script and "2.3.5" not in script and "Invoke-" not in script
    assert "ReadLine" not in script and powershell_errors(script) == []
    newer = dataclasses.replace(HK_PROD, containerd_version="2.3.6")
    assert render_prepare_update(newer, CONTAINERD_BINARIES_STEP, "") == script
    # The other steps converge as created.
    assert render_prepare_update(HK_PROD, "containerd", HK["prepare-containerd"]) == HK["prepare-containerd"]


def test_kubernetes_step_pins_binaries_and_registers_a_disabled_kubelet() -> None:
    script = HK["prepare-kubernetes"]
    assert _ps_literal(script, "BaseUrl") == "https://dl.k8s.io/release/v1.36.4/bin/windows/amd64"
    assert "$Binaries = @('kubelet.exe', 'kubeadm.exe', 'kubectl.exe', 'kube-log-runner.exe')" in script
    assert '"$BaseUrl/$binary.sha256"' in script
    _before(script, "if ((Get-FileSha256 $path) -ne $digest) {", 'Save-Verified "$BaseUrl/$binary" $digest $path')
    _before(script, "if (-not (Get-Service -Name kubelet -ErrorAction SilentlyContinue)) {", "New-Service -Name kubelet")
    assert "-StartupType Disabled -DependsOn containerd" in script
    assert "@('failure', 'kubelet', 'reset=', '0', 'actions=', 'restart/10000')" in script
    for directory in (r"C:\var\log\kubelet", r"C:\var\lib\kubelet", r"C:\etc\kubernetes\pki", r"C:\etc\kubernetes\manifests"):
        assert f"'{directory}'" in script
    _before(script, "if (($machinePath -split ';') -notcontains $BinDir) {", "SetEnvironmentVariable('Path'")


@pytest.mark.parametrize("name", sorted(HK))
def test_native_commands_do_not_trip_on_stderr_and_are_judged_by_exit_code(name: str) -> None:
    script = HK[name]
    if "Invoke-Checked" in script:
        assert "        $ErrorActionPreference = 'Continue'\n" in script
        assert "$code = $LASTEXITCODE" in script and "if ($code -ne 0) {" in script
    # Native tools are never called bare, where a non-zero exit would go unnoticed.
    for tool in ("w32tm.exe", "netsh.exe", "sc.exe", "tar.exe", "curl.exe"):
        for line in script.splitlines():
            if tool in line and not line.lstrip().startswith("#"):
                assert "Invoke-Checked" in line, line


# --- containerd configuration ---------------------------------------------------------------------


def containerd_config_toml(p: WindowsNodeParams) -> str:
    return containerd.windows_config_toml(p.pause_image, p.cni_bin_dir, p.cni_conf_dir)


def registry_hosts_files(p: WindowsNodeParams) -> dict[str, str]:
    return containerd.registry_hosts_files(containerd.RegistryMirror(*mirror) for mirror in p.registry_mirrors)


def test_containerd_config_is_toml_with_calicos_cni_dirs() -> None:
    config = tomllib.loads(containerd_config_toml(HK_PROD))
    assert config["version"] == 3
    cri_images = config["plugins"]["io.containerd.cri.v1.images"]
    assert cri_images["pinned_images"]["sandbox"] == "registry.k8s.io/pause:3.10.2"
    assert cri_images["registry"]["config_path"] == containerd.WINDOWS_CERTS_DIR
    cni = config["plugins"]["io.containerd.cri.v1.runtime"]["cni"]
    assert cni == {"bin_dirs": ["C:/opt/cni/bin"], "conf_dir": "C:/etc/cni/net.d"}
    assert tomllib.loads(containerd_config_toml(WIN2019))["plugins"]["io.containerd.cri.v1.images"][
        "pinned_images"]["sandbox"] == "registry.k8s.io/pause:3.10.1"


def test_containerd_config_reaches_the_script_verbatim() -> None:
    script = HK["prepare-containerd"]
    for line in containerd_config_toml(HK_PROD).rstrip("\n").split("\n"):
        assert "'" + line.replace("'", "''") + "'" in script, line


def test_default_cni_dirs_are_the_operators_windows_defaults() -> None:
    # tigera/operator DefaultWindowsCNIDirectories: "/opt/cni/bin", "/etc/cni/net.d", resolved on the
    # system drive; containerd gets the same paths with the drive letter.
    assert (CALICO_WINDOWS_CNI_BIN_DIR, CALICO_WINDOWS_CNI_CONF_DIR) == ("/opt/cni/bin", "/etc/cni/net.d")
    assert DEFAULT_CNI_BIN_DIR == "C:/opt/cni/bin"
    assert DEFAULT_CNI_CONF_DIR == "C:/etc/cni/net.d"
    schema = json.loads(INSTALLATION_SCHEMA.read_text())
    windows = schema["properties"]["spec"]["properties"]["windowsNodes"]["properties"]
    assert "bin_dir" in windows["cniBinDir"]["description"]
    assert "conf_dir" in windows["cniConfigDir"]["description"]


def test_registry_hosts_files_one_per_upstream() -> None:
    files = registry_hosts_files(HK_PROD)
    assert sorted(files) == ["docker.io", "ghcr.io", "mcr.microsoft.com", "quay.io", "registry.k8s.io"]
    docker = tomllib.loads(files["docker.io"])
    assert docker["server"] == "https://registry-1.docker.io"
    # Harbor's CA from the stack, named relative to the hosts.toml (render/containerd.py MIRROR_CA_DIR).
    ca = containerd.mirror_ca_name(HK_PROD.registry_mirrors[0][3])
    assert docker["host"]["https://harbor.hk-prod.internal/v2/dockerhub-proxy"] == {
        "capabilities": ["pull", "resolve"], "override_path": True, "ca": f"../{containerd.MIRROR_CA_DIR}/{ca}",
    }
    assert f"$CaNames = {ps_array([ca])}" in HK["prepare-containerd"].splitlines()
    # The script builds its upstream -> hosts.toml table from two inputs paired by index.
    lines = HK["prepare-containerd"].splitlines()
    assert f"$HostsUpstreams = {ps_array(list(files))}" in lines
    assert "$HostsTexts = @(" + ", ".join(f"({ps_array(text.split(chr(10)))} -join \"`n\")" for text in files.values()) + ")" in lines
    assert "$HostsFiles = @{}" in lines
    assert "for ($i = 0; $i -lt $HostsUpstreams.Count; $i++) { $HostsFiles[$HostsUpstreams[$i]] = $HostsTexts[$i] }" in lines
    win2019 = SCRIPTS["win2019/prepare-containerd"].splitlines()
    assert "$HostsUpstreams = @()" in win2019 and "$HostsTexts = @()" in win2019 and "$HostsFiles = @{}" in win2019


# --- reset ----------------------------------------------------------------------------------------


def test_reset_never_blocks_the_vm_deletion() -> None:
    script = HK["reset"]
    assert "$PsDirectTimeoutSec = 300" in script
    body = script.split("$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue", 1)[1]
    assert body.count("exit 0") == 3  # absent, not running, unreachable
    assert "try {\n    Wait-PowerShellDirect\n} catch {" in body
    # Guest cleanup actions report failures as warnings instead of throwing.
    guest = script.split("$GuestStep = {", 1)[1]
    assert guest.count("catch { $problems += ") == 4
    assert "foreach ($problem in $guest.Problems) { Write-Warning" in script


def test_reset_cleans_kubeadm_kubelet_hns_and_cni_state() -> None:
    script = HK["reset"]
    assert "@('reset', '--force', \"--cri-socket=$CriSocket\")" in script
    _before(script, "if ($kubelet -and $kubelet.Status -ne 'Stopped') { Stop-Service -Name kubelet -Force",
            "Set-Service -Name kubelet -StartupType Disabled")
    assert "$NetworkPatterns = @('Calico*', 'External')" in script
    assert "if (Get-Command -Name Get-HnsNetwork -ErrorAction SilentlyContinue) {" in script
    _before(script, "$endpoint | Remove-HnsEndpoint", "$network | Remove-HnsNetwork")
    assert "$policyLists | Remove-HnsPolicyList" in script
    assert _ps_literal(script, "CniConfDir") == DEFAULT_CNI_CONF_DIR
    assert "$StateDirs = @('C:\\var\\run\\calico', 'C:\\var\\lib\\calico')" in script
    assert "if (Test-Path -LiteralPath $path) { Remove-Item" in script


# --- inputs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"vm_name": "hk win"},
        {"vm_name": "hk*"},
        {"computer_name": "THIS-NAME-IS-TOO-LONG"},
        {"kubernetes_version": "v1.36.4"},
        {"kubernetes_version": "1.36"},
        {"containerd_version": "1.7.28"},
        {"pause_image": "registry.k8s.io/pause:3.10.2'; Remove-Item C:\\"},
        {"ntp_servers": ()},
        {"ntp_servers": ("time one",)},
        {"dynamic_port_start": 1024},
        {"dynamic_port_count": 254},
        {"dynamic_port_start": 60000, "dynamic_port_count": 6000},
        {"registry_mirrors": (("docker.io:5000", "https://harbor/v2/x", True, None),)},
        {"registry_mirrors": (("docker.io", "ftp://harbor/v2/x", True, None),)},
        {"registry_mirrors": (("docker.io", "https://harbor/v2/x", "yes", None),)},
        {"cni_bin_dir": "opt/cni/bin"},
        {"cni_conf_dir": "C:\\etc\\cni\\net.d'"},
    ],
)
def test_invalid_inputs_are_rejected(change: dict) -> None:
    params = dataclasses.replace(HK_PROD, **change)
    for render in (render_prepare_steps, render_reset, lambda p: render_join(p, JOIN_CONFIG)):
        with pytest.raises((ValueError, TypeError)):
            render(params)


def test_upgrade_replaces_the_binaries_at_the_target_then_runs_kubeadm_upgrade_node_once() -> None:
    target = dataclasses.replace(HK_PROD, kubernetes_version="1.37.1")
    script = render_upgrade(target)
    assert _ps_literal(script, "BaseUrl") == "https://dl.k8s.io/release/v1.37.1/bin/windows/amd64"
    assert _ps_literal(script, "UpgradeTo") == "1.37.1"
    assert _ps_literal(script, "Marker") == UPGRADE_MARKER
    assert _ps_literal(script, "FlagsFile") == r"C:\var\lib\kubelet\kubeadm-flags.env"
    # "Upgrading Windows nodes": the binaries (each replaced only when its published SHA-256 differs, the
    # kubelet stopped for its own), then `kubeadm upgrade node`, the service's flags from kubeadm, and only
    # then the kubelet started; the marker last.
    step = script.split("$GuestStep = {", 1)[1]
    assert "    $ErrorActionPreference = 'Stop'\n" in step
    _before(step, "Save-Verified", "if (-not $UpgradeTo) {")
    upgrade = step.split("if (-not $UpgradeTo) {", 1)[1]
    _before(upgrade, "-ceq $UpgradeTo", "@('upgrade', 'node')")
    _before(upgrade, "@('upgrade', 'node')", "Set-KubeletServiceFlags $FlagsFile $FlagPattern $ServiceCommand")
    started = "Start-Service -Name kubelet\n    $changes += 'started the kubelet with"
    _before(upgrade, "Set-KubeletServiceFlags $FlagsFile $FlagPattern $ServiceCommand", started)
    _before(upgrade, started, "Set-Content -LiteralPath $Marker -Value $UpgradeTo")
    # In the preparation (no UpgradeTo) a kubelet the step stopped starts again at once.
    prepare = HK["prepare-kubernetes"]
    assert _ps_literal(prepare, "UpgradeTo") == ""
    assert powershell_errors(script) == []
