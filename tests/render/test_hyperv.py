"""Tests for render/hyperv.py: every rendered script parses cleanly with tree-sitter-powershell,
fails loudly, keeps the stdin password out of output, escapes literals, and fits the SSH
command line."""

from __future__ import annotations

import base64
import dataclasses
import re

import pytest
import tree_sitter_powershell
from tree_sitter import Language, Node, Parser

from plan.nodes import hyperv_vm
from render.hyperv import (
    MAX_SSH_COMMAND_CHARS,
    HostNicOffload,
    ps_quote,
    render_create,
    render_delete,
    render_offload_disable,
    render_offload_restore,
    script_from_ssh_command,
    ssh_command,
)
from render.script_files import render_script
from tests.conftest import ROOT, hk_prod_spec
from tests.validators import powershell_errors

PARSER = Parser(Language(tree_sitter_powershell.language()))

# hk-prod's hk-win-1 on its host, and that host's uplinks, as the program builds them (Pulumi.hk-prod.yaml
# through components/machines/nodes.py).
_SPEC = hk_prod_spec()
_HOST = _SPEC.hyperv.hosts[0]
HK_PROD_VM = hyperv_vm(_SPEC, _SPEC.nodes.windows[0], _HOST)
HK_PROD_NICS = HostNicOffload(adapter_names=tuple(_HOST.nic_offload.adapters))

# Awkward but legal values: apostrophes (ASCII and typographic), spaces, $ and backtick that
# must stay literal, and no VLAN.
QUOTED_VM = dataclasses.replace(
    HK_PROD_VM,
    vm_folder="D:\\Hyper-V\\O'Brien's lab $env:TEMP `n",
    golden_vhdx="\\\\filer\\golden\u2019s\\ws2019.vhdx",
    switch_name="Ext 'Trunk' \u2018A\u2019",
    vlan_id=None,
)

SCRIPTS = {
    "create": render_create(HK_PROD_VM),
    "delete": render_delete(HK_PROD_VM),
    "create-quoted": render_create(QUOTED_VM),
    "delete-quoted": render_delete(QUOTED_VM),
    "offload-disable": render_offload_disable(HK_PROD_NICS),
    "offload-restore": render_offload_restore(HK_PROD_NICS),
    "offload-quoted": render_offload_disable(HostNicOffload(("Ethernet 'uplink'",))),
}


def _walk(node: Node):
    yield node
    for child in node.children:
        yield from _walk(child)


def _string_literal_values(source: str) -> list[str]:
    """Values of every verbatim (single-quoted) string literal, as PowerShell reads them."""
    tree = PARSER.parse(source.encode("utf-8"))
    values = []
    for node in _walk(tree.root_node):
        if node.type == "verbatim_string_characters":
            text = node.text.decode("utf-8")
            assert text[0] == "'" and text[-1] == "'", text
            values.append(text[1:-1].replace("''", "'"))
    return values


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_tree_sitter_parse_has_no_error_or_missing_nodes(name: str) -> None:
    problem = "\n".join(powershell_errors(SCRIPTS[name])) or None
    assert problem is None, f"{name}: {problem}"


def test_parse_check_catches_broken_powershell() -> None:
    # Guards the guard: an unbalanced brace must be reported.
    assert powershell_errors("if ($true) {\n    Write-Output 'x'\n") != []


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_scripts_fail_loudly_from_the_first_statement(name: str) -> None:
    code_lines = [
        line for line in SCRIPTS[name].splitlines() if line.strip() and not line.startswith("#")
    ]
    assert code_lines[0] == "$ErrorActionPreference = 'Stop'"
    assert code_lines[1] == "Set-StrictMode -Version Latest"


def test_create_reads_password_from_stdin_and_never_prints_it() -> None:
    script = SCRIPTS["create"]
    assert "$plainPassword = [Console]::In.ReadLine()" in script
    password_lines = [line for line in script.splitlines() if "plainPassword" in line]
    for line in password_lines:
        assert not re.search(r"Write-(Output|Host|Warning|Verbose|Information)", line), line
    # The only consumers: the emptiness check, ConvertTo-SecureString, and its removal.
    assert len(password_lines) == 4
    assert "Remove-Variable -Name plainPassword" in script
    for line in script.splitlines():
        if re.search(r"Write-(Output|Host|Warning)", line):
            assert "Password" not in line and "Credential" not in line, line
    # The credential is only ever handed to PowerShell Direct, and to the host's first-boot tool (its SHA-256 checked
    # first), which writes the password XML-escaped into the new VM's answer file before the VM exists.
    handed = "& ([ScriptBlock]::Create([Text.Encoding]::UTF8.GetString($tool))) $GoldenVhdx $VhdPath $GuestCredential"
    for line in script.splitlines():
        if "$GuestCredential" in line and "New-Object" not in line and handed not in line:
            assert "Invoke-Command -VMName $VmName -Credential $GuestCredential" in line, line


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_no_secret_or_placeholder_leaks(name: str) -> None:
    script = SCRIPTS[name]
    for marker in ("{{", "}}", "${password", "PLACEHOLDER", "TODO", "%s", "{vm.", "<password>"):
        assert marker not in script, marker
    if not name.startswith("create"):
        assert "[Console]::In" not in script


def test_secret_free_summary_at_the_end() -> None:
    last = SCRIPTS["create"].rstrip().splitlines()[-1]
    assert last.startswith("Write-Output ('VM {0}: state {1}, computer name {2}, IPv4 {3}/{4}'")
    assert "$IpAddress" in last and "$ComputerName" in last


def test_ps_quote_doubles_every_powershell_single_quote() -> None:
    assert ps_quote("O'Brien") == "'O''Brien'"
    assert ps_quote("a\u2018b\u2019c\u201ad\u201be") == "'a\u2018\u2018b\u2019\u2019c\u201a\u201ad\u201b\u201be'"
    assert ps_quote("$env:X `n") == "'$env:X `n'"
    with pytest.raises(ValueError):
        ps_quote("line\nbreak")


def test_quoted_values_round_trip_through_the_parser() -> None:
    script = SCRIPTS["create-quoted"]
    literals = _string_literal_values(script)
    assert QUOTED_VM.vm_folder in literals
    assert QUOTED_VM.vm_folder + "\\hk-win-1" in literals
    assert QUOTED_VM.vm_folder + "\\hk-win-1\\hk-win-1.vhdx" in literals
    # tree-sitter-powershell only knows the ASCII quote, so values holding the typographic
    # quotes are checked against the escaping rule directly.
    assert f"$SwitchName = {ps_quote(QUOTED_VM.switch_name)}" in script
    assert "$GoldenVhdx = '\\\\filer\\golden\u2019\u2019s\\ws2019.vhdx'" in script
    # No VLAN is the input 0 (VLAN IDs are 1-4094), which the script turns into an untagged NIC.
    assert "$VlanId = 0" in script
    untagged = script.index("if ($VlanId -eq 0) {")
    assert script.index("Set-VMNetworkAdapterVlan -VMName $VmName -Untagged", untagged) < script.index("} elseif", untagged)
    assert "Ethernet 'uplink'" in _string_literal_values(SCRIPTS["offload-quoted"])


def test_rendered_header_values() -> None:
    script = SCRIPTS["create"]
    for line in (
        # hk-win-1 in Pulumi.hk-prod.yaml: no computerName (the node name), 8 vCPU, 16 GiB, 100 GB.
        "$VmName = 'hk-win-1'",
        "$ComputerName = 'hk-win-1'",
        "$VmDir = 'D:\\Hyper-V\\hk-prod\\hk-win-1'",
        "$VhdPath = 'D:\\Hyper-V\\hk-prod\\hk-win-1\\hk-win-1.vhdx'",
        "$VlanId = 30",
        "$CpuCount = 8",
        f"$MemoryBytes = {16384 * 1024 * 1024}",
        f"$DiskBytes = {100 * 1024 ** 3}",
        "$PrefixLength = 24",
        "$DnsServers = @('10.10.10.53', '10.10.10.54')",
    ):
        assert line in script.splitlines(), line


def test_create_checks_existing_vm_and_vhdx_before_creating() -> None:
    script = SCRIPTS["create"]
    get_vm = script.index("$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue")
    if_absent = script.index("if (-not $vm) {")
    vhd_check = script.index("if (Test-Path -LiteralPath $VhdPath) {")
    read = script.index("$tool = [IO.File]::ReadAllBytes($FirstBootTool)")
    tool_check = script.index("-ne $FirstBootToolSha256) { throw")
    copy = script.index("& ([ScriptBlock]::Create([Text.Encoding]::UTF8.GetString($tool))) $GoldenVhdx $VhdPath $GuestCredential")
    new_vm = script.index("New-VM -Name $VmName -Generation 2")
    assert get_vm < if_absent < vhd_check < read < tool_check < copy < new_vm
    # The host's tool makes the disk: the golden image copied under a temporary name (an interrupted copy is never
    # mistaken for done), given the node's password, then renamed.
    tool = render_script("hyperv-first-boot-disk.ps1")
    assert "$partial = [IO.Path]::ChangeExtension($VhdPath, '.partial.vhdx')" in tool   # Windows reads the extension
    steps = [tool.index(text) for text in ("$held = $lock.WaitOne(", "Copy-Item -LiteralPath $GoldenVhdx -Destination $partial",
                                           "Mount-VHD -Path $partial -NoDriveLetter", "$doc.Save($writer)",
                                           "if ($mounted -and $mounted.Attached) { Dismount-VHD -Path $partial }",
                                           "if ($held) { $lock.ReleaseMutex() }",
                                           "Move-Item -LiteralPath $partial -Destination $VhdPath")]
    assert steps == sorted(steps)
    assert "-VHDPath $VhdPath" in script and "-DynamicMemoryEnabled $false" in script
    assert "-SecureBootTemplate 'MicrosoftWindows'" in script
    assert "-CheckpointType Disabled" in script
    assert "-AutomaticStartAction Start -AutomaticStopAction ShutDown" in script


def test_create_stops_only_an_unjoined_vm_and_only_for_changes_that_need_it_off() -> None:
    script = SCRIPTS["create"]
    stop_call = script.index("Stop-VmBounded -Reason ('these settings need the VM off: '")
    guarded = script.rindex("if ($offChanges.Count -gt 0) {", 0, stop_call)
    assert script.index("$offChanges = @()") < guarded < stop_call
    running = script.index("if ($vm.State -ne 'Off') {", guarded)
    # A running VM whose guest joined the cluster is never stopped: the change stops with instructions.
    joined = script.index("Test-Path 'C:\\etc\\kubernetes\\kubelet.conf'", running)
    refusal = script.index('throw "$VmName is a joined node and needs to be off for:', joined)
    assert running < joined < refusal < stop_call
    assert "Drain it, stop the VM, run the update again, uncordon it" in script
    # A new VM (Off after New-VM) gets its settings from the same block: they appear once.
    assert script.count("Set-VMProcessor -VMName $VmName -Count $CpuCount") == 1
    # Disk growth and network changes happen online; shrinking is refused.
    assert "if ($vhd.Size -lt $DiskBytes) {" in script
    assert "disks are never shrunk" in script
    assert "-SizeBytes $DiskBytes" in script


def test_create_waits_with_bounded_timeouts_and_clear_errors() -> None:
    script = SCRIPTS["create"]
    assert "Get-VMIntegrationService -VMName $VmName -Name 'Heartbeat'" in script
    assert "throw \"Timed out after $HeartbeatTimeoutSec s waiting for the Heartbeat" in script
    assert "throw \"Timed out after $PsDirectTimeoutSec s waiting for PowerShell Direct" in script
    assert re.search(r"^\$HeartbeatTimeoutSec = \d+$", script, re.M)
    assert re.search(r"^\$PsDirectTimeoutSec = \d+$", script, re.M)
    # After a rename the guest is restarted and must come back under its new name.
    rename = script.index("if ($guest.RenamePending) {")
    assert script.index("Wait-PowerShellDirect -ExpectedName $ComputerName", rename) > rename


def test_guest_converge_is_idempotent_per_setting() -> None:
    script = SCRIPTS["create"]
    assert "Resize-Partition -DriveLetter C -Size $maxSize" in script
    assert "-Dhcp Disabled" in script
    assert "if ($address.IPAddress -ne $IpAddress -or $address.PrefixLength -ne $PrefixLength)" in script
    assert "New-NetIPAddress -InterfaceIndex $ifIndex -AddressFamily IPv4 -IPAddress $IpAddress -PrefixLength $PrefixLength" in script
    assert "New-NetRoute -InterfaceIndex $ifIndex -DestinationPrefix '0.0.0.0/0' -NextHop $Gateway" in script
    assert "if (($currentDns -join ',') -ne ($DnsServers -join ','))" in script
    assert "if ($env:COMPUTERNAME -ne $ComputerName)" in script
    assert "Rename-Computer -NewName $ComputerName -Force" in script


def test_delete_tolerates_absence_and_escalates_stop() -> None:
    script = SCRIPTS["delete"]
    assert "$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue" in script
    assert "if ($vm) {" in script and "is already absent" in script
    assert "if (Test-Path -LiteralPath $VhdPath) {" in script
    assert "if (Test-Path -LiteralPath $VmDir) {" in script
    assert "Remove-VM -Name $VmName -Force" in script
    assert "Stop-VM -Name $VmName -Force -AsJob" in script
    assert "Wait-Job -Job $job -Timeout $StopTimeoutSec" in script
    assert "Stop-VM -Name $VmName -TurnOff -Force" in script
    assert "drained" in script.splitlines()[0]
    assert "[Console]::In" not in script


def test_delete_refuses_what_the_program_did_not_make_before_stopping_anything() -> None:
    """A checkpoint or a disk an operator attached is refused before the VM stops; every other file removed is named."""
    script = SCRIPTS["delete"]
    refusals = [script.index("$checkpoints = @(Get-VMSnapshot -VMName $VmName"),
                script.index("Where-Object { $_.Path -ne $VhdPath }")]
    assert max(refusals) < script.index("Stop-VmBounded -Reason 'deleting the VM'") < script.index("    Remove-VM -Name $VmName")
    assert script.count("throw ") == 2 and "Remove-VMSnapshot" in script and "Remove-VMHardDiskDrive" in script
    assert script.index('Write-Output "Removing $($_.FullName)"') < script.index("Remove-Item -LiteralPath $VmDir")


def test_offload_scripts_use_registry_keywords_and_match() -> None:
    disable, restore = SCRIPTS["offload-disable"], SCRIPTS["offload-restore"]
    for script in (disable, restore):
        assert "$Keywords = @('*LsoV2IPv4', '*LsoV2IPv6')" in script
        assert "$AdapterNames = @('Ethernet 10G')" in script   # hyperv.hosts[0].nicOffload.adapters
        assert "-DisplayName" not in script and "-DisplayValue" not in script
        assert "Where-Object { $_.RegistryKeyword -eq $keyword }" in script
    assert "$DesiredValue = '0'" in disable
    assert "$DesiredValue = '1'" in restore
    # Identical apart from the value and comment: restore is the exact inverse of disable.
    def strip(script: str) -> list[str]:
        return [line for line in script.splitlines() if not line.startswith(("#", "$DesiredValue"))]
    assert strip(disable) == strip(restore)


def _decode(command: str) -> str:
    prefix = "powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand "
    assert command.startswith(prefix)
    encoded = command[len(prefix):]
    assert re.fullmatch(r"[A-Za-z0-9+/]+=*", encoded)
    return base64.b64decode(encoded, validate=True).decode("utf-16-le")


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_ssh_command_round_trips_and_fits(name: str) -> None:
    command = ssh_command(SCRIPTS[name])
    assert _decode(command) == SCRIPTS[name]
    assert script_from_ssh_command(command) == SCRIPTS[name]
    assert script_from_ssh_command("bash -s") is None
    assert len(command) <= MAX_SSH_COMMAND_CHARS
    # Nothing a shell could reinterpret: no quotes, backslashes, $, ;, &, | or newlines.
    assert re.fullmatch(r"[A-Za-z0-9 +/=.-]+", command)


def test_ssh_command_limit_is_below_the_createprocess_ceiling() -> None:
    shell = r'"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe" -c ""'
    assert MAX_SSH_COMMAND_CHARS <= 32767 - 1 - len(shell)
    assert MAX_SSH_COMMAND_CHARS > 8191  # cmd.exe is not in the path


def test_ssh_command_raises_over_the_limit() -> None:
    prefix_len = len(ssh_command(""))
    # Largest ASCII script that still fits: each char is 2 UTF-16 bytes, base64 4 chars per 3.
    fits = "#" * (((MAX_SSH_COMMAND_CHARS - prefix_len) // 4 * 3) // 2)
    assert len(ssh_command(fits)) <= MAX_SSH_COMMAND_CHARS
    with pytest.raises(ValueError, match="over the"):
        ssh_command(fits + "#" * 3)


def test_hk_prod_create_leaves_headroom() -> None:
    # Guard against the create script creeping toward the limit unnoticed.
    assert len(ssh_command(SCRIPTS["create"])) < 0.9 * MAX_SSH_COMMAND_CHARS


@pytest.mark.parametrize(
    "change",
    [
        {"vm_name": "bad name"},
        {"vm_name": "hk*"},
        {"vm_name": "..\\x"},
        {"computer_name": "THIS-NAME-IS-TOO-LONG"},
        {"computer_name": "12345"},
        {"vm_folder": "relative\\path"},
        {"vlan_id": 4095},
        {"memory_mb": 4095},
        {"ip_address": "10.30.30.300"},
        {"gateway": "10.31.0.1"},
        {"dns_servers": ()},
        {"switch_name": "vSwitch\nInjected"},
    ],
)
def test_invalid_inputs_are_rejected(change: dict) -> None:
    with pytest.raises(ValueError):
        render_create(dataclasses.replace(HK_PROD_VM, **change))


def test_invalid_adapter_names_are_rejected() -> None:
    with pytest.raises(ValueError):
        render_offload_disable(HostNicOffload(()))
    with pytest.raises(ValueError):
        render_offload_disable(HostNicOffload(("Ethernet*",)))


def test_guest_adapter_is_found_by_the_vms_mac_not_by_counting_connected_adapters() -> None:
    # On a joined node Calico's HNS network adds a vSwitch host vNIC with the same MAC; counting "Up"
    # adapters would throw on every such node.
    script = SCRIPTS["create"]
    assert "Status -eq 'Up'" not in script
    start = script.index("$macAddress = (Get-VMNetworkAdapter -VMName $VmName).MacAddress")
    assert start > script.index("Wait-PowerShellDirect\n"), "the MAC is read once the VM has started"
    assert "-ArgumentList $ComputerName, $IpAddress, $PrefixLength, $Gateway, $DnsServers, $macAddress" in script
    block = script[script.index("$GuestConverge = {"):]
    assert "[string]$MacAddress)" in block
    assert "Where-Object { ($_.MacAddress -replace '-') -eq $MacAddress }" in block
    # The vNIC, when present, wins: Windows moved the node address onto it.
    assert block.index("'Hyper-V Virtual Ethernet*'") < block.index("$ifIndex = $adapter.ifIndex")
    assert "if ($adapter.Count -ne 1) { throw" in block


# --- each node's own password (#37 item 5) ----------------------------------------------------------------------

def test_each_node_password_is_its_own_complex_and_follows_its_version():
    from render.hyperv import guest_passwords, node_admin_password
    a1, b1 = node_admin_password("s3cret", "hk-win-1", 1), node_admin_password("s3cret", "hk-win-2", 1)
    a2 = node_admin_password("s3cret", "hk-win-1", 2)
    assert len({a1, b1, a2, node_admin_password("other", "hk-win-1", 1)}) == 4
    assert a1 == node_admin_password("s3cret", "hk-win-1", 1)        # stable across runs
    for password in (a1, b1, a2):
        # Four character classes, longer than 14, no account name (Windows' complexity rule).
        assert re.search(r"[A-Z]", password) and re.search(r"[a-z]", password) and re.search(r"[0-9]", password)
        assert re.search(r"[^A-Za-z0-9]", password) and len(password) >= 14
        assert "administrator" not in password.lower() and "s3cret" not in password
    assert guest_passwords(a2, [a1, "", a2, "s3cret", a1]) == f"{a2}\n{a1}\ns3cret\n"


def test_the_first_boot_tool_is_checked_by_its_digest_and_installed_behind_an_acl():
    import hashlib

    from render.hyperv import FIRST_BOOT_TOOL, first_boot_tool, render_host_tool_install
    text, digest = first_boot_tool()
    assert digest == hashlib.sha256(text.encode()).hexdigest().upper()
    assert f"$FirstBootToolSha256 = '{digest}'" in SCRIPTS["create"]
    install = render_host_tool_install()
    assert not powershell_errors(install) and not powershell_errors(text)
    assert f"$ToolPath = '{FIRST_BOOT_TOOL}'" in install and f"$ToolSha256 = '{digest}'" in install
    assert "/inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' '*S-1-5-32-544:(OI)(CI)F'" in install
    # The golden image's answer file has the component the tool adds the node's UserAccounts to, and no password.
    answer = (ROOT / "images" / "windows" / "unattend.pkrtpl.xml").read_text()
    assert 'component name="Microsoft-Windows-Shell-Setup"' in answer and "Password" not in answer.split("-->", 1)[1]
    assert "[@pass='oobeSystem']/u:component[@name='Microsoft-Windows-Shell-Setup']" in text
