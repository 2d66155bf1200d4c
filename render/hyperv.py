"""Pure renderer of the PowerShell that creates, converges and deletes a Windows Server
worker VM on a Hyper-V host, and of the host NIC offload tweak, plus the SSH command line
that carries such a script to the host.

Owns: the scripts' inputs and validation, the command-line encoding, and each Windows node's own Administrator
password (node_admin_password); the script text lives in
render/scripts/hyperv-*.ps1 and render/scripts/lib/hyperv-*.ps1 and is rendered through
render.script_files. Nothing here talks to Hyper-V or imports Pulumi; components/ wires the
strings into pulumi-command ``remote.Command`` (create/update = ``render_create``, delete = ``render_delete``; the guest
Administrator password goes in ``stdin``, never in the command or environment).

Prerequisites this module relies on (documented, not checked here):
  * The host's Win32-OpenSSH ``DefaultShell`` is ``powershell.exe`` (Windows PowerShell 5.1).
  * The golden VHDX is a sysprepped Windows Server image (images/windows) whose answer file completes OOBE and
    holds no password: the host's first-boot tool adds each node's own (node_admin_password) to its copy before
    the VM first starts; its C: partition is the last on the disk (no recovery partition after it) so it can be
    extended.
  * The Kubernetes node is drained/deleted by another resource before ``render_delete`` runs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
from dataclasses import dataclass

from render.script_files import ps_quote, render_script  # noqa: F401 (ps_quote: imported from here too)
from vocab.checks import NETBIOS_NAME, WILDCARD_CHARS, WINDOWS_PATH, is_plain_text, require

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
# Input validation (PowerShell literals: render.script_files.ps_quote / ps_array)
# ---------------------------------------------------------------------------------------

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
# The VM scripts: render/scripts/hyperv-create.ps1 and hyperv-delete.ps1, with the shared
# fragments render/scripts/lib/hyperv-preamble.ps1, hyperv-read-guest-password.ps1,
# hyperv-stop-vm.ps1 and hyperv-guest-wait.ps1 (preamble, password and wait functions are also
# included by the scripts of render/windows_activation.py and render/windows_bootstrap.py, which
# act in the same guest). Every value reaches a script as an input (a `$Name = <literal>` line at
# its top), so no input ever lands inside PowerShell code. The sources and reasons behind each
# cmdlet are notes (##) next to the code in those files; notes are dropped at render time
# (render.script_files), so they cost nothing on the size-limited encoded command.
# ---------------------------------------------------------------------------------------


def _vm_inputs(vm: HypervVm) -> dict[str, object]:
    """The inputs hyperv-create.ps1 and hyperv-delete.ps1 share."""
    vm_dir, vhd_path = _vm_paths(vm)
    return {"VmName": vm.vm_name, "VmRoot": vm.vm_folder, "VmDir": vm_dir, "VhdPath": vhd_path,
            "StopTimeoutSec": GRACEFUL_STOP_TIMEOUT_SECONDS}


# Where each Hyper-V host keeps the first-boot disk tool (hyperv-first-boot-disk.ps1; hyperv-host-tool.ps1 puts it there).
FIRST_BOOT_TOOL = r"C:\ProgramData\hybrid-cluster\hyperv-first-boot-disk.ps1"


def first_boot_tool() -> tuple[str, str]:
    """The first-boot disk tool's text and its SHA-256 (upper-case hex, as Get-FileHash prints it)."""
    text = render_script("hyperv-first-boot-disk.ps1")
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest().upper()


def render_host_tool_install() -> str:
    """On a Hyper-V host: the first-boot disk tool at FIRST_BOOT_TOOL, in a folder only SYSTEM and Administrators may
    change (render/scripts/hyperv-host-tool.ps1)."""
    text, digest = first_boot_tool()
    return render_script("hyperv-host-tool.ps1", ToolPath=FIRST_BOOT_TOOL, ToolText=text, ToolSha256=digest)


def render_host_tool_remove() -> str:
    return render_script("hyperv-host-tool-remove.ps1", ToolPath=FIRST_BOOT_TOOL)


def render_create(vm: HypervVm) -> str:
    """Idempotent create-or-converge script (also the update script). Reads the guest
    Administrator password from the first line of stdin."""
    _validate_vm(vm)
    return render_script(
        "hyperv-create.ps1",
        **_vm_inputs(vm),
        ComputerName=vm.computer_name,
        GoldenVhdx=vm.golden_vhdx,
        FirstBootTool=FIRST_BOOT_TOOL,
        FirstBootToolSha256=first_boot_tool()[1],
        SwitchName=vm.switch_name,
        VlanId=0 if vm.vlan_id is None else vm.vlan_id,
        CpuCount=vm.cpu_count,
        MemoryMB=vm.memory_mb,
        MemoryBytes=vm.memory_mb * 1024 * 1024,
        DiskGB=vm.disk_gb,
        DiskBytes=vm.disk_gb * 1024 ** 3,
        IpAddress=vm.ip_address,
        PrefixLength=vm.prefix_length,
        Gateway=vm.gateway,
        DnsServers=list(vm.dns_servers),
        HeartbeatTimeoutSec=HEARTBEAT_TIMEOUT_SECONDS,
        PsDirectTimeoutSec=POWERSHELL_DIRECT_TIMEOUT_SECONDS,
    )


# What a node's password is derived for: the HMAC message's first field, so that the same secret used for anything
# else derives nothing in common with it.
_ADMIN_PASSWORD_PURPOSE = "hybrid-cluster windows node administrator password"


def node_admin_password(secret: str, node: str, version: int) -> str:
    """A Windows node's own local Administrator password: HMAC-SHA256 keyed with the stack's windowsAdminPassword over
    the node's name and password version, 32 characters of its URL-safe base64, and "-Aa1" so that it has every class
    Windows' complexity rule counts (three of upper case, lower case, digits and symbols: "Password must meet
    complexity requirements", Windows security policy settings reference). One node's password tells nothing of
    another's or of the secret; a new version, or a new secret, gives a new one."""
    require(bool(secret), "windowsAdminPassword is empty")
    require(isinstance(version, int) and version >= 1, f"password version {version!r} is not a positive number")
    message = f"{_ADMIN_PASSWORD_PURPOSE}\0{node}\0{version}".encode()
    digest = hmac.new(secret.encode(), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode()[:32] + "-Aa1"


def guest_passwords(current: str, earlier: list[str]) -> str:
    """The guest-password step's stdin: the node's password, then each one a running guest may still have."""
    lines = [current, *dict.fromkeys(p for p in earlier if p and p != current)]
    require(all("\n" not in line for line in lines), "a password holds a line break")
    return "".join(f"{line}\n" for line in lines)


def render_guest_password(vm: HypervVm) -> str:
    """Make a running guest take its node's Administrator password (stdin line 1), setting it when the guest takes
    only one of the earlier ones (the lines after, guest_passwords): the first step of every run."""
    _validate_vm(vm)
    return render_script("hyperv-guest-password.ps1", VmName=vm.vm_name, HeartbeatTimeoutSec=HEARTBEAT_TIMEOUT_SECONDS)


def render_delete(vm: HypervVm) -> str:
    """Stop (gracefully, then hard after a bounded wait) and remove the VM, its VHDX and its
    folder; a no-op when they are already gone."""
    _validate_vm(vm)
    return render_script("hyperv-delete.ps1", **_vm_inputs(vm))


# ---------------------------------------------------------------------------------------
# Host NIC offload: render/scripts/hyperv-nic-offload.ps1
# ---------------------------------------------------------------------------------------
#
# Standardized keywords *LsoV2IPv4 / *LsoV2IPv6 ("Large Send Offload V2"): 0 = Disabled,
# 1 (default) = Enabled. Keywords are driver-independent; display names and display values
# are not. Source: https://learn.microsoft.com/windows-hardware/drivers/network/using-registry-values-to-enable-and-disable-task-offloading
# Get-/Set-NetAdapterAdvancedProperty -Name -RegistryKeyword -RegistryValue (why the script filters
# the exact keyword and when it restarts an adapter: comments in the script).
_LSO_KEYWORDS = ("*LsoV2IPv4", "*LsoV2IPv6")
_LSO_DISABLED = "0"
_LSO_ENABLED = "1"


def _validate_offload(o: HostNicOffload) -> None:
    if not o.adapter_names:
        raise ValueError("adapter_names must not be empty")
    for name in o.adapter_names:
        _require_text(name, "adapter name")
        if WILDCARD_CHARS & set(name):
            raise ValueError(f"adapter name {name!r} contains a wildcard character")


def _render_offload(o: HostNicOffload, value: str) -> str:
    _validate_offload(o)
    return render_script("hyperv-nic-offload.ps1", AdapterNames=list(o.adapter_names),
                         Keywords=list(_LSO_KEYWORDS), DesiredValue=value)


def render_offload_disable(o: HostNicOffload) -> str:
    """Set Large Send Offload v2 (IPv4 and IPv6) to Disabled on the vSwitch's physical NICs."""
    return _render_offload(o, _LSO_DISABLED)


def render_offload_restore(o: HostNicOffload) -> str:
    """The matching delete: Large Send Offload v2 back to Enabled (the keyword default)."""
    return _render_offload(o, _LSO_ENABLED)


# ---------------------------------------------------------------------------------------
# Shared with the other renderers that act in the same guest over PowerShell Direct
# (render/windows_bootstrap.py, render/windows_activation.py): their scripts include the same
# lib/hyperv-*.ps1 fragments, so every script reads the guest password and waits for the guest
# the same way.
# ---------------------------------------------------------------------------------------

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
