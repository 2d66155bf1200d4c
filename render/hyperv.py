"""Pure renderer of the PowerShell that creates, converges and deletes a Windows Server
worker VM on a Hyper-V host, and of the host NIC offload tweak, plus the SSH command line
that carries such a script to the host.

Owns: the rendered script text and the command-line encoding only. Nothing here talks to
Hyper-V or imports Pulumi; components/ wires the strings into pulumi-command
``remote.Command`` (create/update = ``render_create``, delete = ``render_delete``; the guest
Administrator password goes in ``stdin``, never in the command or environment).

Prerequisites this module relies on (documented, not checked here):
  * The host's Win32-OpenSSH ``DefaultShell`` is ``powershell.exe`` (Windows PowerShell 5.1).
  * The golden VHDX is a sysprepped Windows Server 2019/2022 image whose unattend completes
    OOBE and sets the local Administrator password that is passed on stdin; its C: partition
    is the last partition on the disk (no recovery partition after it) so it can be extended.
  * The Kubernetes node is drained/deleted by another resource before ``render_delete`` runs.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from dataclasses import dataclass
from render.checks import NETBIOS_NAME, WILDCARD_CHARS, WINDOWS_PATH, is_plain_text

# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HypervVm:
    vm_name: str  # Hyper-V VM name, e.g. "hk-prod-win-1"
    computer_name: str  # guest NetBIOS name, <= 15 chars
    vm_folder: str  # e.g. r"D:\Hyper-V\hk-prod"; the VM lives in <vm_folder>\<vm_name>
    golden_vhdx: str  # sysprepped golden image, e.g. r"D:\golden\ws2022-datacenter.vhdx"
    switch_name: str  # external vSwitch
    vlan_id: int | None  # access VLAN for the VM NIC (None = untagged)
    cpu_count: int
    memory_mb: int  # static memory: Kubernetes nodes must not use dynamic memory
    disk_gb: int  # OS disk size; the copied golden VHDX is grown to this, never shrunk
    ip_address: str  # static IPv4, e.g. "10.30.30.51"
    prefix_length: int  # e.g. 24
    gateway: str
    dns_servers: tuple[str, ...]


@dataclass(frozen=True)
class HostNicOffload:
    adapter_names: tuple[str, ...]  # physical adapters behind the external vSwitch


# Bounded waits. A first boot of a sysprepped image runs specialize + OOBE (with one reboot)
# before the Administrator account exists, so PowerShell Direct gets the longest budget.
HEARTBEAT_TIMEOUT_SECONDS = 600
POWERSHELL_DIRECT_TIMEOUT_SECONDS = 1800
GRACEFUL_STOP_TIMEOUT_SECONDS = 300

# ---------------------------------------------------------------------------------------
# SSH command line
# ---------------------------------------------------------------------------------------
#
# How the script reaches the host, and why this limit:
#  * remote.Command sends ``ssh_command(script)`` as the SSH "exec" string. Win32-OpenSSH
#    starts the DefaultShell directly (no cmd.exe in between) with CreateProcess; for a
#    PowerShell DefaultShell it passes "-c" and the command as one argument, quoting it when it
#    contains spaces and escaping only backslashes and double quotes, i.e. the process command
#    line is `"<DefaultShell>" -c "<command>"`.
#    Source: PowerShell/openssh-portable contrib/win32/win32compat/w32-doexec.c (do_exec_windows,
#    SH_PS branch) and contrib/win32/win32compat/misc.c (build_commandline_string).
#    Our command contains only letters, digits, spaces, '-', '+', '/' and '=', so nothing is
#    escaped. The 8191-character cmd.exe limit therefore does not apply: cmd.exe is not
#    involved when DefaultShell is powershell.exe.
#    Source (8191 is cmd.exe's limit): https://learn.microsoft.com/troubleshoot/windows-client/shell-experience/command-line-string-limitation
#    Source (DefaultShell registry value): https://github.com/PowerShell/Win32-OpenSSH/wiki/DefaultShell
#  * CreateProcessW: "The maximum length of this string is 32,767 characters, including the
#    Unicode terminating null character."
#    Source: https://learn.microsoft.com/windows/win32/api/processthreadsapi/nf-processthreadsapi-createprocessw
#  * The outer powershell.exe then starts the inner `powershell.exe ... -EncodedCommand` as a
#    native command through .NET Framework Process.Start, whose Arguments "must be less than
#    32,699" characters. Source: dotnet/runtime ProcessStartInfo.cs (Arguments remarks), same
#    text as https://learn.microsoft.com/dotnet/api/system.diagnostics.processstartinfo.arguments
#  Derived ceiling: 32767 - 1 (NUL) - len('"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe" -c ""')
#  = 32701 characters for the command itself (the inner Process.Start limit, 32699 + 15, is
#  looser). We stay at 32000 to leave room for a longer DefaultShell path and for
#  Win32-OpenSSH versions that repeat argv[0]. That allows scripts of about 11,900 UTF-16 code
#  units (-EncodedCommand expands 1 char -> 2 bytes -> 8/3 base64 chars).
MAX_SSH_COMMAND_CHARS = 32_000

# -EncodedCommand "Accepts a Base64-encoded string version of a command ... The string must be
# formatted using UTF-16LE character encoding."
# Source: https://learn.microsoft.com/powershell/module/microsoft.powershell.core/about/about_powershell_exe?view=powershell-5.1
# Why a nested powershell.exe rather than feeding the script to the DefaultShell: base64 has no
# character any shell (PowerShell, or cmd.exe if DefaultShell was left at its default) would
# interpret, so quoting cannot break. stdin stays available to the script: Windows PowerShell
# starts a native command that is first in its pipeline without redirecting its input
# (PowerShell NativeCommandProcessor.CalculateIORedirection: redirectInput is false when there
# is no pipeline input), and a child started with UseShellExecute=false "inherits the standard
# input" of its parent (ProcessStartInfo remarks, dotnet/runtime ProcessStartInfo.cs). Ansible
# relies on exactly this over Win32-OpenSSH: it runs `PowerShell -NoProfile -NonInteractive
# -ExecutionPolicy Unrestricted -EncodedCommand <bootstrap>` and streams its payload on stdin,
# which the bootstrap reads as $input (ansible/ansible lib/ansible/plugins/shell/powershell.py
# _encode_script, lib/ansible/executor/powershell/bootstrap_wrapper.ps1).
# Known stdin problem, and why it does not bite: powershell.exe with redirected stdin waits for
# EOF (the old "-InputFormat None" workaround, psake/psake#72, StackStorm/st2#1695).
# pulumi-command sets session.Stdin = strings.NewReader(stdin) (pulumi/pulumi-command
# provider/pkg/provider/remote/commandOutputs.go), and golang.org/x/crypto ssh/session.go
# (Session.stdin) copies that reader to the channel and then calls CloseWrite (EOF); with no
# stdin it copies an empty buffer, i.e. sends EOF at once.
_POWERSHELL_PREFIX = (
    "powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand "
)


def ssh_command(script: str) -> str:
    """The exec string for remote.Command: the script as a UTF-16LE base64 -EncodedCommand."""
    encoded = base64.b64encode(script.encode("utf-16-le")).decode("ascii")
    command = _POWERSHELL_PREFIX + encoded
    if len(command) > MAX_SSH_COMMAND_CHARS:
        raise ValueError(
            f"encoded command is {len(command)} characters, over the {MAX_SSH_COMMAND_CHARS}-"
            f"character limit of the Win32-OpenSSH -> powershell.exe command line; shorten the "
            f"script ({len(script)} characters)"
        )
    return command


def script_from_ssh_command(command: str) -> str | None:
    """The script inside a command made by ssh_command, or None for any other command."""
    if not command.startswith(_POWERSHELL_PREFIX):
        return None
    return base64.b64decode(command[len(_POWERSHELL_PREFIX):]).decode("utf-16-le")


# ---------------------------------------------------------------------------------------
# PowerShell literals and input validation
# ---------------------------------------------------------------------------------------

# PowerShell ends a single-quoted string at ' and at the typographic quotes U+2018, U+2019,
# U+201A and U+201B; inside the string each is written twice.
# Source: PowerShell/PowerShell src/System.Management.Automation/engine/parser/CharTraits.cs
# (IsSingleQuote); the same five characters are doubled by ansible/ansible
# lib/ansible/plugins/shell/powershell.py (_escape).
_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def ps_quote(value: str) -> str:
    """A PowerShell single-quoted literal whose value is exactly ``value``."""
    if _CONTROL_CHARS.search(value):
        raise ValueError(f"control character in PowerShell string value {value!r}")
    return "'" + "".join(ch * 2 if ch in _SINGLE_QUOTES else ch for ch in value) + "'"


def _ps_array(values: tuple[str, ...]) -> str:
    return "@(" + ", ".join(ps_quote(v) for v in values) + ")"


# Hyper-V's -Name/-VMName parameters and Get-NetAdapter -Name take wildcards, so names are kept
# to characters that can never be a wildcard (or a path separator: the VM folder is derived
# from the VM name and deleted recursively).
_VM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def _ipv4(value: str, what: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(value)
    except ValueError as exc:
        raise ValueError(f"{what} {value!r} is not an IPv4 address") from exc


def _require_text(value: str, what: str) -> None:
    if not is_plain_text(value):
        raise ValueError(f"{what} must be non-empty without surrounding spaces: {value!r}")


def _validate_vm(vm: HypervVm) -> None:
    if not _VM_NAME.match(vm.vm_name):
        raise ValueError(f"vm_name {vm.vm_name!r} must match {_VM_NAME.pattern}")
    if not NETBIOS_NAME.match(vm.computer_name):
        raise ValueError(
            f"computer_name {vm.computer_name!r} must be a NetBIOS name: 1-15 letters, "
            "digits or hyphens, not only digits"
        )
    for what, path in (("vm_folder", vm.vm_folder), ("golden_vhdx", vm.golden_vhdx)):
        _require_text(path, what)
        if not WINDOWS_PATH.match(path):
            raise ValueError(f"{what} {path!r} must be an absolute Windows path")
    _require_text(vm.switch_name, "switch_name")
    if vm.vlan_id is not None and not 1 <= vm.vlan_id <= 4094:
        raise ValueError(f"vlan_id {vm.vlan_id} must be 1-4094 or None")
    if vm.cpu_count < 1:
        raise ValueError("cpu_count must be at least 1")
    # Hyper-V assigns memory in 2 MB units.
    if vm.memory_mb < 512 or vm.memory_mb % 2:
        raise ValueError("memory_mb must be an even number of MB, at least 512")
    if vm.disk_gb < 1:
        raise ValueError("disk_gb must be at least 1")
    address = _ipv4(vm.ip_address, "ip_address")
    if not 1 <= vm.prefix_length <= 32:
        raise ValueError("prefix_length must be 1-32")
    gateway = _ipv4(vm.gateway, "gateway")
    network = ipaddress.IPv4Network(f"{address}/{vm.prefix_length}", strict=False)
    if gateway not in network or gateway == address:
        raise ValueError(f"gateway {gateway} must be another address in {network}")
    if not vm.dns_servers:
        raise ValueError("dns_servers must not be empty")
    for server in vm.dns_servers:
        _ipv4(server, "dns server")


def _vm_paths(vm: HypervVm) -> tuple[str, str]:
    vm_dir = vm.vm_folder.rstrip("\\") + "\\" + vm.vm_name
    return vm_dir, vm_dir + "\\" + vm.vm_name + ".vhdx"


# ---------------------------------------------------------------------------------------
# Script bodies. Only the headers are rendered from inputs; the bodies below are constant
# text that reads the header variables, so no input ever lands inside PowerShell code.
# ---------------------------------------------------------------------------------------

_PREAMBLE = """$ErrorActionPreference = 'Stop'
Set-StrictMode -Version Latest
$ProgressPreference = 'SilentlyContinue'
"""

# Stop-VM shuts down "through the guest operating system"; -Force gives the guest "five minutes
# to save data and shut down"; -TurnOff "is equivalent to disconnecting the power"; -AsJob
# "Runs the cmdlet as a background job".
# Source: https://learn.microsoft.com/powershell/module/hyper-v/stop-vm?view=windowsserver2022-ps
_STOP_VM_FUNCTION = """function Stop-VmBounded([string]$Reason) {
    Write-Output "Stopping ${VmName}: $Reason"
    $job = Stop-VM -Name $VmName -Force -AsJob
    if (-not (Wait-Job -Job $job -Timeout $StopTimeoutSec)) { Stop-Job -Job $job }
    Remove-Job -Job $job -Force
    if ((Get-VM -Name $VmName).State -ne 'Off') {
        Write-Output "Guest shutdown did not finish within $StopTimeoutSec s; turning $VmName off"
        Stop-VM -Name $VmName -TurnOff -Force
    }
}
"""

# Heartbeat: Get-VMIntegrationService -VMName -Name returns the integration service object.
# Source: https://learn.microsoft.com/powershell/module/hyper-v/get-vmintegrationservice?view=windowsserver2022-ps
# PowerShell Direct: Invoke-Command -VMName <name> -Credential <guest credential>; it needs the
# VM running on this host and a guest that has completed setup.
# Source: https://learn.microsoft.com/virtualization/hyper-v-on-windows/user-guide/powershell-direct
_WAIT_FUNCTIONS = """function Wait-Heartbeat {
    $deadline = (Get-Date).AddSeconds($HeartbeatTimeoutSec)
    while ((Get-VMIntegrationService -VMName $VmName -Name 'Heartbeat').PrimaryStatusDescription -ne 'OK') {
        if ((Get-Date) -gt $deadline) {
            throw "Timed out after $HeartbeatTimeoutSec s waiting for the Heartbeat integration service of $VmName to report OK"
        }
        Start-Sleep -Seconds 5
    }
}
function Wait-PowerShellDirect([string]$ExpectedName = '') {
    $deadline = (Get-Date).AddSeconds($PsDirectTimeoutSec)
    $lastError = 'no answer yet'
    while ($true) {
        try {
            $guestName = Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock { $env:COMPUTERNAME }
            if (-not $ExpectedName -or $guestName -eq $ExpectedName) { return }
            $lastError = "guest still reports computer name $guestName"
        } catch {
            $lastError = $_.Exception.Message
        }
        if ((Get-Date) -gt $deadline) {
            throw "Timed out after $PsDirectTimeoutSec s waiting for PowerShell Direct in ${VmName}: $lastError"
        }
        Start-Sleep -Seconds 10
    }
}
"""

# Sources for the host-side converge below (all Hyper-V module, Windows Server 2022 reference):
#  New-VM -Name -Generation (1 or 2) -MemoryStartupBytes -VHDPath (existing VHD) -Path
#    ("directory to store the files for the new virtual machine") -SwitchName:
#    https://learn.microsoft.com/powershell/module/hyper-v/new-vm?view=windowsserver2022-ps
#  Set-VMMemory -VMName -DynamicMemoryEnabled -StartupBytes ("the total amount of memory to be
#    assigned to a virtual machine with dynamic memory disabled"); Get-VMMemory .Startup:
#    https://learn.microsoft.com/powershell/module/hyper-v/set-vmmemory?view=windowsserver2022-ps
#  Set-VMProcessor -VMName -Count:
#    https://learn.microsoft.com/powershell/module/hyper-v/set-vmprocessor?view=windowsserver2022-ps
#  Connect-VMNetworkAdapter -VMName -SwitchName:
#    https://learn.microsoft.com/powershell/module/hyper-v/connect-vmnetworkadapter?view=windowsserver2022-ps
#  Set-VMNetworkAdapterVlan -VMName -Access -VlanId / -Untagged ("Access, Trunk, Private VLAN
#    ... and untagged are mutually exclusive"); Get-VMNetworkAdapterVlan .OperationMode and
#    .AccessVlanId:
#    https://learn.microsoft.com/powershell/module/hyper-v/set-vmnetworkadaptervlan?view=windowsserver2022-ps
#  Set-VMFirmware -VMName -EnableSecureBoot On -SecureBootTemplate <name> (Generation 2 only):
#    https://learn.microsoft.com/powershell/module/hyper-v/set-vmfirmware?view=windowsserver2022-ps
#    The template for Windows guests is "Microsoft Windows" (MicrosoftWindows as the
#    -SecureBootTemplate value): https://learn.microsoft.com/windows-server/virtualization/hyper-v/learn-more/generation-2-virtual-machine-security-settings-for-hyper-v
#  Set-VM -AutomaticStartAction (Nothing|StartIfRunning|Start) -AutomaticStopAction
#    (TurnOff|Save|ShutDown) -AutomaticCheckpointsEnabled -CheckpointType Disabled ("Block
#    creation of checkpoints"):
#    https://learn.microsoft.com/powershell/module/hyper-v/set-vm?view=windowsserver2022-ps
#    These, like processor count and static memory, are only changed with the VM off; a new VM
#    (Off after New-VM) gets them from the same block that converges an existing one.
# A VM whose guest has joined the cluster (C:\etc\kubernetes\kubelet.conf, written by kubeadm join)
# is never stopped by the converge: with it running, such a change stops with instructions instead
# (drain, stop, update, uncordon: one node at a time, by the operator), so no Pulumi run can take
# down several Windows nodes at once or one that still carries workloads.
#  Get-VHD -Path (.Size) and Resize-VHD -Path -SizeBytes: a VHDX on the SCSI chain of a running
#    VM (every Generation 2 disk) can be resized online:
#    https://learn.microsoft.com/powershell/module/hyper-v/resize-vhd?view=windowsserver2022-ps
#  Get-VMHardDiskDrive -VMName (.Path), Start-VM -Name, Get-VM -Name (.State,
#    .AutomaticStartAction, .AutomaticStopAction, .CheckpointType), Get-VMProcessor (.Count),
#    Get-VMFirmware (.SecureBoot, .SecureBootTemplate), Get-VMNetworkAdapter (.SwitchName):
#    https://learn.microsoft.com/powershell/module/hyper-v/?view=windowsserver2022-ps
# Automatic actions: Start + ShutDown so a host reboot shuts the node down cleanly and brings
# it back; checkpoints off because restoring a Kubernetes node from a checkpoint rewinds
# kubelet/containerd state behind the control plane's back.
_CREATE_BODY = """$null = New-Item -ItemType Directory -Path $VmDir -Force
$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if (-not $vm) {
    if (Test-Path -LiteralPath $VhdPath) {
        Write-Output "Reusing $VhdPath from an earlier run"
    } else {
        if (-not (Test-Path -LiteralPath $GoldenVhdx)) { throw "Golden image $GoldenVhdx does not exist" }
        Write-Output "Copying $GoldenVhdx to $VhdPath"
        $partialPath = "$VhdPath.partial"
        Copy-Item -LiteralPath $GoldenVhdx -Destination $partialPath -Force
        Move-Item -LiteralPath $partialPath -Destination $VhdPath
    }
    Write-Output "Creating VM $VmName"
    $vm = New-VM -Name $VmName -Generation 2 -MemoryStartupBytes $MemoryBytes -VHDPath $VhdPath -Path $VmRoot -SwitchName $SwitchName
} elseif (-not (Get-VMHardDiskDrive -VMName $VmName | Where-Object { $_.Path -eq $VhdPath })) {
    throw "VM $VmName exists but is not attached to $VhdPath; refusing to converge a VM this script did not create"
}

$offChanges = @()
if ((Get-VMProcessor -VMName $VmName).Count -ne $CpuCount) { $offChanges += "processor count -> $CpuCount" }
$memory = Get-VMMemory -VMName $VmName
if ($memory.DynamicMemoryEnabled -or $memory.Startup -ne $MemoryBytes) { $offChanges += "static memory -> $MemoryMB MB" }
$firmware = Get-VMFirmware -VMName $VmName
if ($firmware.SecureBoot -ne 'On' -or $firmware.SecureBootTemplate -ne 'MicrosoftWindows') { $offChanges += 'Secure Boot (MicrosoftWindows)' }
$vm = Get-VM -Name $VmName
if ($vm.AutomaticStartAction -ne 'Start' -or $vm.AutomaticStopAction -ne 'ShutDown' -or $vm.CheckpointType -ne 'Disabled') {
    $offChanges += 'automatic start/stop actions and checkpoints'
}
if ($offChanges.Count -gt 0) {
    if ($vm.State -ne 'Off') {
        if (Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock { Test-Path 'C:\\etc\\kubernetes\\kubelet.conf' }) {
            throw "$VmName is a joined node and needs to be off for: $($offChanges -join '; '). Drain it, stop the VM, run the update again, uncordon it (README: Day-2 operations)"
        }
        Stop-VmBounded -Reason ('these settings need the VM off: ' + ($offChanges -join '; '))
    }
    Set-VMProcessor -VMName $VmName -Count $CpuCount
    Set-VMMemory -VMName $VmName -DynamicMemoryEnabled $false -StartupBytes $MemoryBytes
    Set-VMFirmware -VMName $VmName -EnableSecureBoot On -SecureBootTemplate 'MicrosoftWindows'
    Set-VM -Name $VmName -AutomaticStartAction Start -AutomaticStopAction ShutDown -AutomaticCheckpointsEnabled $false -CheckpointType Disabled
    Write-Output ('Applied: ' + ($offChanges -join '; '))
}

$adapters = @(Get-VMNetworkAdapter -VMName $VmName)
if ($adapters.Count -ne 1) { throw "VM $VmName has $($adapters.Count) network adapters; expected exactly one" }
if ($adapters[0].SwitchName -ne $SwitchName) {
    Connect-VMNetworkAdapter -VMName $VmName -SwitchName $SwitchName
    Write-Output "Connected $VmName to switch $SwitchName"
}
$vlan = Get-VMNetworkAdapterVlan -VMName $VmName
if ($null -eq $VlanId) {
    if ($vlan.OperationMode -ne 'Untagged') {
        Set-VMNetworkAdapterVlan -VMName $VmName -Untagged
        Write-Output "Set $VmName NIC to untagged"
    }
} elseif ($vlan.OperationMode -ne 'Access' -or $vlan.AccessVlanId -ne $VlanId) {
    Set-VMNetworkAdapterVlan -VMName $VmName -Access -VlanId $VlanId
    Write-Output "Set $VmName NIC to access VLAN $VlanId"
}

$vhd = Get-VHD -Path $VhdPath
if ($vhd.Size -lt $DiskBytes) {
    Resize-VHD -Path $VhdPath -SizeBytes $DiskBytes
    Write-Output "Grew $VhdPath to $DiskGB GiB"
} elseif ($vhd.Size -gt $DiskBytes) {
    Write-Warning "$VhdPath is $($vhd.Size) bytes, more than the requested $DiskGB GiB; disks are never shrunk"
}

if ((Get-VM -Name $VmName).State -ne 'Running') {
    Start-VM -Name $VmName
    Write-Output "Started $VmName"
}
Wait-Heartbeat
Wait-PowerShellDirect

$macAddress = (Get-VMNetworkAdapter -VMName $VmName).MacAddress
$guest = @(Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock $GuestConverge -ArgumentList $ComputerName, $IpAddress, $PrefixLength, $Gateway, $DnsServers, $macAddress)[-1]
foreach ($change in $guest.Changes) { Write-Output "Guest: $change" }
if ($guest.RenamePending) {
    Stop-VmBounded -Reason "restart to apply computer name $ComputerName"
    Start-VM -Name $VmName
    Wait-Heartbeat
    Wait-PowerShellDirect -ExpectedName $ComputerName
}

Write-Output ('VM {0}: state {1}, computer name {2}, IPv4 {3}/{4}' -f $VmName, (Get-VM -Name $VmName).State, $ComputerName, $IpAddress, $PrefixLength)
"""

# Runs inside the guest through PowerShell Direct. Sources (Windows Server 2022 reference):
#  Update-HostStorageCache ("equivalent to a VDS Rescan"), needed after an online Resize-VHD:
#    https://learn.microsoft.com/powershell/module/storage/update-hoststoragecache
#  Get-PartitionSupportedSize -DriveLetter (.SizeMax), Get-Partition -DriveLetter (.Size),
#    Resize-Partition -DriveLetter -Size:
#    https://learn.microsoft.com/powershell/module/storage/resize-partition
#  Get-NetAdapter (.MacAddress as "00-15-5D-..", .InterfaceDescription, .ifIndex):
#    https://learn.microsoft.com/powershell/module/netadapter/get-netadapter
#  Get-VMNetworkAdapter (.MacAddress as 12 hex digits, all zeros for a dynamic address not yet
#    assigned; read after the VM has started, when Hyper-V has assigned and kept it):
#    https://learn.microsoft.com/powershell/module/hyper-v/get-vmnetworkadapter
#  Calico's HNS network puts a vSwitch on the guest NIC; its host vNIC takes the NIC's MAC and IP
#    (projectcalico/calico#9693: "the virtual ethernet adapter and the original physical ethernet
#    adapter will have ... same mac address"; Azure/acs-engine#4046 shows "vEthernet (Ethernet 2)",
#    "Hyper-V Virtual Ethernet Adapter #2", holding the node address). So the guest adapter is the one
#    with the VM's MAC address (-eq compares strings case-insensitively), and once that vNIC exists
#    (a joined node) the vNIC is the one to use:
#    Windows moved the address there. Counting "Up" adapters would find two on every joined node.
# Comments stay here, not in the script: the encoded command must fit CreateProcess's limit.
#  Set-NetIPInterface -InterfaceIndex -AddressFamily -Dhcp Disabled; Get-NetIPInterface .Dhcp:
#    https://learn.microsoft.com/powershell/module/nettcpip/set-netipinterface
#  New-NetIPAddress -InterfaceIndex -IPAddress -PrefixLength -AddressFamily:
#    https://learn.microsoft.com/powershell/module/nettcpip/new-netipaddress
#  Remove-NetIPAddress -InterfaceIndex -IPAddress ("To remove a specific IP address object, use
#    the IPv4 Address parameter"), Get-NetIPAddress -InterfaceIndex -AddressFamily -IPAddress:
#    https://learn.microsoft.com/powershell/module/nettcpip/remove-netipaddress
#  New-NetRoute -InterfaceIndex -DestinationPrefix -NextHop, Get-/Remove-NetRoute (the default
#    gateway is the 0.0.0.0/0 route; managed separately so a changed gateway is replaced
#    instead of New-NetIPAddress -DefaultGateway failing on an existing route):
#    https://learn.microsoft.com/powershell/module/nettcpip/remove-netroute
#  Set-DnsClientServerAddress -InterfaceIndex -ServerAddresses; Get-DnsClientServerAddress
#    -InterfaceIndex -AddressFamily (.ServerAddresses):
#    https://learn.microsoft.com/powershell/module/dnsclient/set-dnsclientserveraddress
#  Rename-Computer -NewName -Force (takes effect after a restart, which the host performs with
#    Stop-VM/Start-VM so it can wait for the guest deterministically):
#    https://learn.microsoft.com/powershell/module/microsoft.powershell.management/rename-computer?view=powershell-5.1
# Byte counts are written out (1048576) instead of PowerShell's 1MB suffix: the suffix is valid
# PowerShell, but tree-sitter-powershell (used by the tests to validate every script) rejects a
# suffixed number after a binary operator, which would hide real syntax errors behind it.
_GUEST_SCRIPTBLOCK = """$GuestConverge = {
    param([string]$ComputerName, [string]$IpAddress, [int]$PrefixLength, [string]$Gateway, [string[]]$DnsServers, [string]$MacAddress)
    $ErrorActionPreference = 'Stop'
    Set-StrictMode -Version Latest
    $changes = @()

    Update-HostStorageCache
    $maxSize = (Get-PartitionSupportedSize -DriveLetter C).SizeMax
    if ((Get-Partition -DriveLetter C).Size -lt ($maxSize - 1048576)) {
        Resize-Partition -DriveLetter C -Size $maxSize
        $changes += "extended C: to $maxSize bytes"
    }

    if ($MacAddress -notmatch '^[0-9A-F]{12}$' -or $MacAddress -eq '000000000000') { throw "no MAC address for this VM's adapter: '$MacAddress'" }
    $matching = @(Get-NetAdapter | Where-Object { ($_.MacAddress -replace '-') -eq $MacAddress })
    $adapter = @($matching | Where-Object { $_.InterfaceDescription -like 'Hyper-V Virtual Ethernet*' })
    if ($adapter.Count -eq 0) { $adapter = $matching }
    if ($adapter.Count -ne 1) { throw "expected one guest adapter with MAC $MacAddress (or one vSwitch vNIC), found $($adapter.Count)" }
    $adapter = $adapter[0]
    $ifIndex = $adapter.ifIndex
    if ((Get-NetIPInterface -InterfaceIndex $ifIndex -AddressFamily IPv4).Dhcp -ne 'Disabled') {
        Set-NetIPInterface -InterfaceIndex $ifIndex -AddressFamily IPv4 -Dhcp Disabled
        $changes += 'disabled DHCP'
    }
    foreach ($address in @(Get-NetIPAddress -InterfaceIndex $ifIndex -AddressFamily IPv4 -ErrorAction SilentlyContinue)) {
        if ($address.IPAddress -ne $IpAddress -or $address.PrefixLength -ne $PrefixLength) {
            Remove-NetIPAddress -InterfaceIndex $ifIndex -IPAddress $address.IPAddress -Confirm:$false
            $changes += "removed $($address.IPAddress)/$($address.PrefixLength)"
        }
    }
    if (-not (Get-NetIPAddress -InterfaceIndex $ifIndex -AddressFamily IPv4 -IPAddress $IpAddress -ErrorAction SilentlyContinue)) {
        $null = New-NetIPAddress -InterfaceIndex $ifIndex -AddressFamily IPv4 -IPAddress $IpAddress -PrefixLength $PrefixLength
        $changes += "set $IpAddress/$PrefixLength"
    }
    $routes = @(Get-NetRoute -InterfaceIndex $ifIndex -DestinationPrefix '0.0.0.0/0' -ErrorAction SilentlyContinue)
    foreach ($route in $routes) {
        if ($route.NextHop -ne $Gateway) {
            Remove-NetRoute -InterfaceIndex $ifIndex -DestinationPrefix '0.0.0.0/0' -NextHop $route.NextHop -Confirm:$false
            $changes += "removed gateway $($route.NextHop)"
        }
    }
    if (-not ($routes | Where-Object { $_.NextHop -eq $Gateway })) {
        $null = New-NetRoute -InterfaceIndex $ifIndex -DestinationPrefix '0.0.0.0/0' -NextHop $Gateway
        $changes += "set gateway $Gateway"
    }
    $currentDns = @((Get-DnsClientServerAddress -InterfaceIndex $ifIndex -AddressFamily IPv4).ServerAddresses)
    if (($currentDns -join ',') -ne ($DnsServers -join ',')) {
        Set-DnsClientServerAddress -InterfaceIndex $ifIndex -ServerAddresses $DnsServers
        $changes += "set DNS servers $($DnsServers -join ', ')"
    }

    $renamePending = $false
    if ($env:COMPUTERNAME -ne $ComputerName) {
        Rename-Computer -NewName $ComputerName -Force -WarningAction SilentlyContinue
        $renamePending = $true
        $changes += "renamed computer $env:COMPUTERNAME -> $ComputerName (restart pending)"
    }
    [pscustomobject]@{ Changes = $changes; RenamePending = $renamePending }
}
"""

# The password is the first line of stdin (remote.Command's `stdin`), so it is never on a
# command line, in the environment or in Pulumi's logged command. ConvertTo-SecureString
# -AsPlainText -Force and PSCredential are what Invoke-Command -Credential takes.
# Source: https://learn.microsoft.com/powershell/module/microsoft.powershell.security/convertto-securestring?view=powershell-5.1
_READ_PASSWORD = """$plainPassword = [Console]::In.ReadLine()
if ([string]::IsNullOrEmpty($plainPassword)) { throw 'Expected the guest Administrator password as the first line of stdin' }
$GuestCredential = New-Object System.Management.Automation.PSCredential('Administrator', (ConvertTo-SecureString -String $plainPassword -AsPlainText -Force))
Remove-Variable -Name plainPassword
"""

# Remove-VM -Name -Force deletes the VM's configuration; it leaves virtual hard disks in place,
# hence the explicit Remove-Item of the VHDX and the VM folder.
# Source: https://learn.microsoft.com/powershell/module/hyper-v/remove-vm?view=windowsserver2022-ps
_DELETE_BODY = """$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if ($vm) {
    if ($vm.State -ne 'Off') { Stop-VmBounded -Reason 'deleting the VM' }
    Remove-VM -Name $VmName -Force
    Write-Output "Removed VM $VmName"
} else {
    Write-Output "VM $VmName is already absent"
}
if (Test-Path -LiteralPath $VhdPath) {
    Remove-Item -LiteralPath $VhdPath -Force
    Write-Output "Removed $VhdPath"
}
if (Test-Path -LiteralPath $VmDir) {
    Remove-Item -LiteralPath $VmDir -Recurse -Force
    Write-Output "Removed $VmDir"
}
"""


def _vm_header(vm: HypervVm, purpose: str) -> str:
    vm_dir, vhd_path = _vm_paths(vm)
    return (
        f"# {purpose} Rendered by render/hyperv.py.\n"
        + _PREAMBLE
        + f"$VmName = {ps_quote(vm.vm_name)}\n"
        + f"$VmRoot = {ps_quote(vm.vm_folder)}\n"
        + f"$VmDir = {ps_quote(vm_dir)}\n"
        + f"$VhdPath = {ps_quote(vhd_path)}\n"
        + f"$StopTimeoutSec = {GRACEFUL_STOP_TIMEOUT_SECONDS}\n"
    )


def render_create(vm: HypervVm) -> str:
    """Idempotent create-or-converge script (also the update script). Reads the guest
    Administrator password from the first line of stdin."""
    _validate_vm(vm)
    vlan = "$null" if vm.vlan_id is None else str(vm.vlan_id)
    header = (
        _vm_header(vm, f"Create or converge Hyper-V VM {vm.vm_name}.")
        + f"$ComputerName = {ps_quote(vm.computer_name)}\n"
        + f"$GoldenVhdx = {ps_quote(vm.golden_vhdx)}\n"
        + f"$SwitchName = {ps_quote(vm.switch_name)}\n"
        + f"$VlanId = {vlan}\n"
        + f"$CpuCount = {vm.cpu_count}\n"
        + f"$MemoryMB = {vm.memory_mb}\n"
        + f"$MemoryBytes = {vm.memory_mb * 1024 * 1024}\n"
        + f"$DiskGB = {vm.disk_gb}\n"
        + f"$DiskBytes = {vm.disk_gb * 1024 ** 3}\n"
        + f"$IpAddress = {ps_quote(vm.ip_address)}\n"
        + f"$PrefixLength = {vm.prefix_length}\n"
        + f"$Gateway = {ps_quote(vm.gateway)}\n"
        + f"$DnsServers = {_ps_array(vm.dns_servers)}\n"
        + f"$HeartbeatTimeoutSec = {HEARTBEAT_TIMEOUT_SECONDS}\n"
        + f"$PsDirectTimeoutSec = {POWERSHELL_DIRECT_TIMEOUT_SECONDS}\n"
    )
    return (
        header
        + _READ_PASSWORD
        + _STOP_VM_FUNCTION
        + _WAIT_FUNCTIONS
        + _GUEST_SCRIPTBLOCK
        + _CREATE_BODY
    )


def render_delete(vm: HypervVm) -> str:
    """Stop (gracefully, then hard after a bounded wait) and remove the VM, its VHDX and its
    folder; a no-op when they are already gone."""
    _validate_vm(vm)
    header = _vm_header(
        vm,
        f"Delete Hyper-V VM {vm.vm_name}. The Kubernetes node was drained and deleted "
        "earlier, by the node resource that depends on this VM.",
    )
    return header + _STOP_VM_FUNCTION + _DELETE_BODY


# ---------------------------------------------------------------------------------------
# Host NIC offload
# ---------------------------------------------------------------------------------------
#
# Standardized keywords *LsoV2IPv4 / *LsoV2IPv6 ("Large Send Offload V2"): 0 = Disabled,
# 1 (default) = Enabled. Keywords are driver-independent; display names and display values
# are not. Source: https://learn.microsoft.com/windows-hardware/drivers/network/using-registry-values-to-enable-and-disable-task-offloading
# Get-/Set-NetAdapterAdvancedProperty -Name -RegistryKeyword -RegistryValue; -RegistryKeyword
# accepts wildcards (so '*LsoV2IPv4' is also a pattern: the exact keyword is filtered after the
# query); without -NoRestart the adapter is restarted so the value takes effect ("Many advanced
# properties require restarting the network adapter"), which briefly interrupts traffic through
# that adapter, including VMs on the vSwitch. It only happens when a value actually changes.
# Source: https://learn.microsoft.com/powershell/module/netadapter/set-netadapteradvancedproperty?view=windowsserver2022-ps
_LSO_KEYWORDS = ("*LsoV2IPv4", "*LsoV2IPv6")
_LSO_DISABLED = "0"
_LSO_ENABLED = "1"

_OFFLOAD_BODY = """foreach ($adapterName in $AdapterNames) {
    $null = Get-NetAdapter -Name $adapterName
    foreach ($keyword in $Keywords) {
        $property = @(Get-NetAdapterAdvancedProperty -Name $adapterName -RegistryKeyword $keyword -ErrorAction SilentlyContinue | Where-Object { $_.RegistryKeyword -eq $keyword })
        if ($property.Count -eq 0) {
            Write-Warning "$adapterName does not expose $keyword; nothing to change"
            continue
        }
        if (@($property[0].RegistryValue)[0] -eq $DesiredValue) {
            Write-Output "${adapterName}: $keyword is already $DesiredValue"
            continue
        }
        Set-NetAdapterAdvancedProperty -InputObject $property[0] -RegistryValue $DesiredValue
        Write-Output "${adapterName}: set $keyword to $DesiredValue (adapter restarted)"
    }
}
"""


def _validate_offload(o: HostNicOffload) -> None:
    if not o.adapter_names:
        raise ValueError("adapter_names must not be empty")
    for name in o.adapter_names:
        _require_text(name, "adapter name")
        if WILDCARD_CHARS & set(name):
            raise ValueError(f"adapter name {name!r} contains a wildcard character")


def _render_offload(o: HostNicOffload, value: str, purpose: str) -> str:
    _validate_offload(o)
    return (
        f"# {purpose} Rendered by render/hyperv.py.\n"
        + _PREAMBLE
        + f"$AdapterNames = {_ps_array(o.adapter_names)}\n"
        + f"$Keywords = {_ps_array(_LSO_KEYWORDS)}\n"
        + f"$DesiredValue = {ps_quote(value)}\n"
        + _OFFLOAD_BODY
    )


def render_offload_disable(o: HostNicOffload) -> str:
    """Set Large Send Offload v2 (IPv4 and IPv6) to Disabled on the vSwitch's physical NICs."""
    return _render_offload(
        o, _LSO_DISABLED, "Disable Large Send Offload v2 on the external vSwitch uplinks."
    )


def render_offload_restore(o: HostNicOffload) -> str:
    """The matching delete: Large Send Offload v2 back to Enabled (the keyword default)."""
    return _render_offload(
        o, _LSO_ENABLED, "Restore Large Send Offload v2 on the external vSwitch uplinks."
    )


# ---------------------------------------------------------------------------------------
# Shared with the other renderers that act in the same guest over PowerShell Direct
# (render/windows_bootstrap.py). The texts are the ones the VM scripts above use, so every
# script reads the guest password and waits for the guest the same way. The wait functions
# read $VmName, $GuestCredential, $HeartbeatTimeoutSec and $PsDirectTimeoutSec.
# ---------------------------------------------------------------------------------------

SCRIPT_PREAMBLE = _PREAMBLE
READ_GUEST_PASSWORD = _READ_PASSWORD
GUEST_WAIT_FUNCTIONS = _WAIT_FUNCTIONS


def check_vm_name(vm_name: str) -> None:
    """Raise ValueError unless ``vm_name`` is a Hyper-V VM name render_create accepts."""
    if not _VM_NAME.match(vm_name):
        raise ValueError(f"vm_name {vm_name!r} must match {_VM_NAME.pattern}")


def check_computer_name(computer_name: str) -> None:
    """Raise ValueError unless ``computer_name`` is a NetBIOS name render_create accepts."""
    if not NETBIOS_NAME.match(computer_name):
        raise ValueError(
            f"computer_name {computer_name!r} must be a NetBIOS name: 1-15 letters, "
            "digits or hyphens, not only digits"
        )
