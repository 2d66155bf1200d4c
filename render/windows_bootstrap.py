"""Pure renderer of the PowerShell that turns a fresh Windows Server worker VM into a Kubernetes node
joined with kubeadm, and that cleans the node up again before the VM is deleted.

Owns: the rendered script text of the guest preparation steps, of the Windows ``kubeadm join`` and of
its delete script (``kubeadm reset`` plus HNS/CNI cleanup); nothing here talks to Windows or imports
Pulumi. components/bootstrap.py runs every script on the Hyper-V host through
render.hyperv.ssh_command; the scripts act in the guest over PowerShell Direct
(``Invoke-Command -VMName ... -Credential ... -ScriptBlock {...} -ArgumentList ...``), the way
render/hyperv.py converges the VM itself. stdin: line 1 the guest Administrator password, and for the
join line 2 the join line printed by ``kubeadm token create --print-join-command``.

How the kubelet runs as a service, and why the join is split in two:
  * The kubelet is registered with the Service Control Manager directly (``kubelet.exe
    --windows-service`` behind ``kube-log-runner.exe``, which writes its log file), the way upstream
    runs it without NSSM: kubernetes/kubernetes cluster/gce/windows/k8s-node-setup.psm1 (``sc.exe
    create kubelet binPath= "...\\kube-log-runner.exe -log-file=... ...\\kubelet.exe ..."``),
    kubernetes-sigs/image-builder images/capi/ansible/windows/roles/kubernetes/tasks/sc.yml and
    templates/RestartKubelet.ps1. sig-windows-tools hostprocess/PrepareNode.ps1 instead wraps a
    StartKubelet.ps1 in NSSM, a third-party binary with no published checksum, so it is not used.
  * A service command line cannot read kubeadm's ``C:\\var\\lib\\kubelet\\kubeadm-flags.env``
    (KUBELET_KUBEADM_ARGS), and that file carries ``--register-with-taints`` and ``--node-labels``:
    image-builder issue #2011 ("kubelet installed via sc.exe ... ignores KUBELET_KUBEADM_ARGS").
    So preparation registers the service *disabled*, and the join runs ``kubeadm join
    --skip-phases=kubelet-wait-bootstrap`` (kubeadm writes the flags file; its attempt to start the
    disabled service only prints "WARNING: unable to start the kubelet service", kubernetes/kubernetes
    cmd/kubeadm/app/phases/kubelet/kubelet.go TryStartKubelet), appends the flags to the service command line, starts the kubelet
    and then runs ``kubeadm join phase kubelet-wait-bootstrap``. The node therefore registers with
    its taint from the first moment. kubelet-wait-bootstrap is a separate phase that "will always run"
    since kubeadm 1.35 (kubernetes/kubernetes#134106, ControlPlaneKubeletLocalMode GA), which every
    supported minor (config.compat.KUBERNETES) is; ``--skip-*`` flags may be mixed with ``--config``
    (cmd/kubeadm/app/apis/kubeadm/validation/validation.go isAllowedFlag).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from render.cloud_init import MANAGED_MARKER, RegistryMirror, registry_hosts_toml
from render.checks import HTTP_ENDPOINT, REGISTRY_HOST, is_host
from render.hyperv import (
    GUEST_WAIT_FUNCTIONS,
    HEARTBEAT_TIMEOUT_SECONDS,
    POWERSHELL_DIRECT_TIMEOUT_SECONDS,
    READ_GUEST_PASSWORD,
    SCRIPT_PREAMBLE,
    check_computer_name,
    check_vm_name,
    ps_quote,
    ssh_command,
)

# ---------------------------------------------------------------------------------------
# Inputs and fixed locations
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowsNodeParams:
    vm_name: str
    computer_name: str
    kubernetes_version: str  # "1.36.4"
    containerd_version: str  # "2.3.5" (config.compat)
    pause_image: str  # config.compat.WINDOWS[...].pause_image
    ntp_servers: tuple[str, ...]
    dynamic_port_start: int
    dynamic_port_count: int
    registry_mirrors: tuple[tuple[str, str, bool], ...]  # (upstream, endpoint, override_path)
    cni_bin_dir: str  # must equal the Calico Installation's spec.windowsNodes.cniBinDir
    cni_conf_dir: str  # must equal the Calico Installation's spec.windowsNodes.cniConfigDir


# The Tigera operator fills an unset spec.windowsNodes with "/opt/cni/bin", "/etc/cni/net.d" and
# "/var/log/calico/cni" for every provider but AKS and EKS ("Default locations to match vanilla
# Kubernetes"): tigera/operator pkg/render/windows.go DefaultWindowsCNIDirectories, called from
# pkg/controller/installation/core_controller.go fillDefaults. They become hostPath volumes of the
# calico-node-windows HostProcess pods, which Windows resolves on the system drive (C:/opt/cni/bin);
# the Installation CRD describes both as having to match containerd's CNI bin/conf dirs
# (tests/fixtures/schemas/operator.tigera.io_v1_Installation.json, windowsNodes.cniBinDir/cniConfigDir).
# The Installation carries the operator's own forward-slash defaults (the paths the operator's Windows
# rendering is written and tested against), and containerd gets the same paths with the drive letter,
# as sig-windows-tools hostprocess/Install-Containerd.ps1 writes them ("c:/opt/cni/bin",
# "c:/etc/cni/net.d"). PowerShell and containerd accept '/' as the directory separator.
CALICO_WINDOWS_CNI_BIN_DIR = "/opt/cni/bin"
CALICO_WINDOWS_CNI_CONF_DIR = "/etc/cni/net.d"
WINDOWS_SYSTEM_DRIVE = "C:"
DEFAULT_CNI_BIN_DIR = WINDOWS_SYSTEM_DRIVE + CALICO_WINDOWS_CNI_BIN_DIR
DEFAULT_CNI_CONF_DIR = WINDOWS_SYSTEM_DRIVE + CALICO_WINDOWS_CNI_CONF_DIR

# Next to the CNI directories, on the system drive, so containerd's config names no path under
# %ProgramFiles% (whose value the renderer cannot know). One <upstream>\hosts.toml per mirrored
# registry: containerd docs/hosts.md.
REGISTRY_HOSTS_DIR = r"C:\etc\containerd\certs.d"

# kubelet/kubeadm/kubectl live in C:\k, as in sig-windows-tools PrepareNode.ps1 ($env:SystemDrive\k).
KUBERNETES_BIN_DIR = r"C:\k"
CRI_SOCKET = "npipe:////./pipe/containerd-containerd"
KUBELET_KUBECONFIG = r"C:\etc\kubernetes\kubelet.conf"
KUBEADM_FLAGS_FILE = r"C:\var\lib\kubelet\kubeadm-flags.env"
# Inbound TCP ports a Windows node serves, each with the firewall rule that opens it: the kubelet API, and
# windows_exporter, whose Kubernetes guide asks for 9182 to be opened on the node
# (prometheus-community/windows_exporter docs/kubernetes/kubernetes.md, "Configuring the firewall").
# They go with the node: removing the VM removes them.
NODE_FIREWALL_RULES: tuple[tuple[str, int], ...] = (
    ("kubernetes-kubelet-10250", 10250),
    ("windows-exporter-9182", 9182),
)

# Directories the kubelet and kubeadm expect (PrepareNode.ps1 and image-builder tasks/kubelet.yml
# create C:\var\log\kubelet, C:\etc\kubernetes\pki and C:\etc\kubernetes\manifests). Their
# C:\var\lib\kubelet\etc\kubernetes\pki symlink is left out: it "is required in 1.22 and below due
# to invalid absolute path handling" (image-builder tasks/kubelet.yml, issue #853).
_KUBERNETES_DIRECTORIES = (
    r"C:\var\log\kubelet",
    r"C:\var\lib\kubelet",
    r"C:\etc\kubernetes\pki",
    r"C:\etc\kubernetes\manifests",
)

# dl.k8s.io/release/v<version>/bin/windows/amd64/<name> with <name>.sha256 beside it (a bare hex
# digest: kubernetes-sigs/cluster-api-provider-azure and rancher/rke2 release tooling append the file
# name before `sha256sum -c`). kube-log-runner.exe is fetched from the same place by image-builder
# tasks/sc.yml ("{{ kubernetes_base_url }}/kube-log-runner.exe").
_KUBERNETES_BINARIES = ("kubelet.exe", "kubeadm.exe", "kubectl.exe", "kube-log-runner.exe")

# The kubelet service command line before kubeadm's flags are appended, after image-builder
# tasks/sc.yml and the kubernetes e2e Windows node runner: kube-log-runner writes the log file
# ("Windows services don't have a mechanism for redirecting output of a process",
# kubernetes/kubernetes staging/src/k8s.io/component-base/logs/kube-log-runner/README.md), the
# kubelet talks to the SCM itself (--windows-service). cgroups-per-qos/enforce-node-allocatable/
# resolv-conf are the Windows overrides every upstream Windows kubelet command line carries
# (PrepareNode.ps1, sc.yml). --pod-infra-container-image is gone: the flag was removed in 1.35
# (kubernetes/kubernetes#133779; sig-windows-tools#397 "causes kubelet to fail to start") and the
# sandbox image is containerd's pinned_images.sandbox instead. Empty values are written as `flag=`:
# the service command line has no shell, and the kubelet parses `--resolv-conf=` as "".
_KUBELET_SERVICE_BASE = " ".join(
    (
        r"C:\k\kube-log-runner.exe",
        r"--log-file=C:\var\log\kubelet\kubelet.log",
        r"C:\k\kubelet.exe",
        "--windows-service",
        r"--cert-dir=C:\var\lib\kubelet\pki",
        r"--config=C:\var\lib\kubelet\config.yaml",
        r"--bootstrap-kubeconfig=C:\etc\kubernetes\bootstrap-kubelet.conf",
        rf"--kubeconfig={KUBELET_KUBECONFIG}",
        f"--container-runtime-endpoint={CRI_SOCKET}",
        "--enable-debugging-handlers",
        "--cgroups-per-qos=false",
        "--enforce-node-allocatable=",
        "--resolv-conf=",
    )
)

# The join line from `kubeadm token create --print-join-command`, worker form only (a Windows node
# is never a control-plane node). The token follows k8s.io/cluster-bootstrap token/api
# BootstrapTokenPattern `\A([a-z0-9]{6})\.([a-z0-9]{16})\z`; the hash is "sha256:" and 64 hex
# digits. One pattern for Python's re (tests) and .NET's Regex (the script, via [regex]::Match,
# case-sensitive like re): numbered groups only, ASCII classes only, anchors ^ and $ on one line.
JOIN_LINE_PATTERN = (
    r"^\s*kubeadm join "
    r"((?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5})"
    r" --token ([a-z0-9]{6}\.[a-z0-9]{16})"
    r" --discovery-token-ca-cert-hash (sha256:[a-f0-9]{64})\s*$"
)

# What may go from kubeadm-flags.env onto the service command line: `--name=value` words without
# quotes or spaces (kubeadm writes "--%s=%s" per flag). Anything else stops the join.
KUBEADM_FLAG_PATTERN = r'^--[a-z0-9-]+=[^\s"]*$'

JOIN_PLACEHOLDERS = ("@@JOIN_TOKEN@@", "@@JOIN_CA_CERT_HASH@@", "@@JOIN_API_ENDPOINT@@")

# Calico for Windows (VXLAN) names its pod network "Calico" (KUBE_NETWORK "Calico.*",
# projectcalico/calico node/windows-packaging/CalicoWindows/config-hpc.ps1) and first creates an
# overlay network "External" to bring up the vSwitch (its network reset script, EnsureExternalNetwork).
# Its own uninstall removes every non-NAT HNS network after a reboot (uninstall-calico-hpc.ps1); the
# reset removes only these two. Calico keeps node state in the /var/run/calico and /var/lib/calico
# hostPaths of calico-node-windows (tigera/operator pkg/render/windows.go windowsVolumes).
_CALICO_HNS_NETWORKS = ("Calico*", "External")
_CALICO_STATE_DIRS = (r"C:\var\run\calico", r"C:\var\lib\calico")

# The reset waits less for PowerShell Direct than the preparation: the guest is up and set up.
RESET_POWERSHELL_DIRECT_TIMEOUT_SECONDS = 300

# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------

_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_IMAGE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$")
_WINDOWS_DIR = re.compile(r"^[A-Za-z]:[\\/][^'\"*?<>|\r\n\t]*$")


def _validate(p: WindowsNodeParams) -> None:
    check_vm_name(p.vm_name)
    check_computer_name(p.computer_name)
    if not _VERSION.match(p.kubernetes_version):
        raise ValueError(f"kubernetes_version {p.kubernetes_version!r} must be MAJOR.MINOR.PATCH")
    if not _VERSION.match(p.containerd_version) or not p.containerd_version.startswith("2."):
        raise ValueError(
            f"containerd_version {p.containerd_version!r}: only containerd 2.x (config version 3) is "
            "rendered for Windows"
        )
    if not _IMAGE.match(p.pause_image):
        raise ValueError(f"pause_image {p.pause_image!r} is not an image reference")
    if not p.ntp_servers:
        raise ValueError("at least one ntp server is required")
    for server in p.ntp_servers:
        if not is_host(server):
            raise ValueError(f"ntp server {server!r} is not a host name or address")
    if not 1025 <= p.dynamic_port_start <= 65535 - 254:
        raise ValueError("dynamic_port_start must be 1025-65281")
    if p.dynamic_port_count < 255 or p.dynamic_port_start + p.dynamic_port_count - 1 > 65535:
        raise ValueError("dynamic_port_count must be at least 255 and end at or below port 65535")
    for upstream, endpoint, override_path in p.registry_mirrors:
        if not REGISTRY_HOST.match(upstream):
            raise ValueError(f"registry upstream {upstream!r} must be a host name without port")
        if not HTTP_ENDPOINT.match(endpoint):
            raise ValueError(f"mirror endpoint {endpoint!r} is not an http(s) URL")
        if not isinstance(override_path, bool):
            raise TypeError("override_path must be a bool")
    for what, path in (("cni_bin_dir", p.cni_bin_dir), ("cni_conf_dir", p.cni_conf_dir)):
        if not _WINDOWS_DIR.match(path) or path != path.strip():
            raise ValueError(f"{what} {path!r} must be an absolute Windows path without quotes")


def _checked(script: str) -> str:
    ssh_command(script)  # raises when the encoded command would not fit the SSH command line
    return script


# ---------------------------------------------------------------------------------------
# PowerShell building blocks
# ---------------------------------------------------------------------------------------


def _ps_array(values: tuple[str, ...] | list[str]) -> str:
    return "@(" + ", ".join(ps_quote(v) for v in values) + ")"


def _ps_text(text: str) -> str:
    """A PowerShell expression whose value is the multi-line ``text`` (LF line ends)."""
    lines = text.split("\n")
    return "(" + _ps_array(lines) + " -join \"`n\")"


def _header(p: WindowsNodeParams, purpose: str, ps_direct_timeout: int) -> str:
    return (
        f"# {purpose} Rendered by render/windows_bootstrap.py.\n"
        + SCRIPT_PREAMBLE
        + f"$VmName = {ps_quote(p.vm_name)}\n"
        + f"$HeartbeatTimeoutSec = {HEARTBEAT_TIMEOUT_SECONDS}\n"
        + f"$PsDirectTimeoutSec = {ps_direct_timeout}\n"
    )


# Runs on the host. The VM resource (render/hyperv.py) starts the VM; a step that finds it stopped
# fails at once instead of waiting for PowerShell Direct for half an hour.
_HOST_FUNCTIONS = """function Invoke-Guest([scriptblock]$Step, [object[]]$Arguments) {
    @(Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock $Step -ArgumentList $Arguments)[-1]
}
function Assert-VmRunning {
    $state = (Get-VM -Name $VmName).State
    if ($state -ne 'Running') { throw "VM $VmName is $state; the VM resource starts it, converge that first" }
}
"""

# Runs in the guest, inside every step's script block. Windows PowerShell turns each stderr line of a
# native command into an error record, which $ErrorActionPreference = 'Stop' makes fatal; kubeadm and
# containerd log to stderr, so native commands run with 'Continue' and are judged by their exit code.
# Redact replaces secret strings in output that may end up in an error message.
_GUEST_NATIVE = """    function Invoke-Checked([string]$File, [string[]]$Arguments, [string[]]$Redact = @()) {
        $ErrorActionPreference = 'Continue'
        $lines = @(& $File @Arguments 2>&1 | ForEach-Object { "$_" })
        $code = $LASTEXITCODE
        $command = "$(Split-Path -Leaf $File) $($Arguments -join ' ')"
        foreach ($secret in $Redact) {
            $lines = @($lines | ForEach-Object { $_.Replace($secret, '<redacted>') })
            $command = $command.Replace($secret, '<redacted>')
        }
        if ($code -ne 0) {
            $tail = ($lines | Select-Object -Last 25) -join "`n"
            throw "$command exited with code ${code}:`n$tail"
        }
        $lines
    }
"""

# Runs in the guest. Downloads use the curl.exe that ships with Windows Server 2019 and later, as
# sig-windows-tools Install-Containerd.ps1 and PrepareNode.ps1 do (Windows PowerShell 5.1's
# Invoke-WebRequest may not negotiate TLS 1.2). A download is kept only when its SHA-256 equals the
# published one (Get-FileHash: https://learn.microsoft.com/powershell/module/microsoft.powershell.utility/get-filehash?view=powershell-5.1).
_GUEST_DOWNLOAD = """    function Get-PublishedSha256([string]$Url, [string]$Scratch) {
        $null = Invoke-Checked 'curl.exe' @('--fail', '--silent', '--show-error', '--location', '--retry', '5', '--output', $Scratch, $Url)
        $digest = ((Get-Content -LiteralPath $Scratch -Raw).Trim() -split '\\s+')[0].ToLowerInvariant()
        Remove-Item -LiteralPath $Scratch -Force
        if ($digest -notmatch '^[0-9a-f]{64}$') { throw "$Url does not hold a SHA-256 digest" }
        $digest
    }
    function Get-FileSha256([string]$Path) {
        if (-not (Test-Path -LiteralPath $Path)) { return '' }
        (Get-FileHash -Algorithm SHA256 -LiteralPath $Path).Hash.ToLowerInvariant()
    }
    function Save-Verified([string]$Url, [string]$Digest, [string]$Path) {
        $partial = "$Path.partial"
        $null = Invoke-Checked 'curl.exe' @('--fail', '--silent', '--show-error', '--location', '--retry', '5', '--output', $partial, $Url)
        if ((Get-FileSha256 $partial) -ne $Digest) {
            Remove-Item -LiteralPath $partial -Force
            throw "SHA-256 of $Url does not match its published checksum"
        }
        Copy-Item -LiteralPath $partial -Destination $Path -Force
        Remove-Item -LiteralPath $partial -Force
    }
    function Set-FileText([string]$Path, [string]$Text) {
        if ((Test-Path -LiteralPath $Path) -and ([System.IO.File]::ReadAllText($Path) -ceq $Text)) { return $false }
        $null = New-Item -ItemType Directory -Path (Split-Path -Parent $Path) -Force
        [System.IO.File]::WriteAllText($Path, $Text, (New-Object System.Text.UTF8Encoding($false)))
        $true
    }
"""

_GUEST_START = """    $ErrorActionPreference = 'Stop'
    Set-StrictMode -Version Latest
    $ProgressPreference = 'SilentlyContinue'
    $changes = @()
"""

_HOST_REPORT = """foreach ($change in $guest.Changes) { Write-Output "${VmName}: $change" }
if (@($guest.Changes | Where-Object { $_ }).Count -eq 0) { Write-Output "${VmName}: $Step already in place" }
"""

# ---------------------------------------------------------------------------------------
# Step 1: Containers feature, with the restart it needs
# ---------------------------------------------------------------------------------------
#
# Get-WindowsFeature .Installed and Install-WindowsFeature -Name Containers, as sig-windows-tools
# hostprocess/Install-Containerd.ps1 does; Hyper-V is not installed in the guest: process-isolated
# containers only need the Containers feature, and this VM has no nested virtualization.
# Install-WindowsFeature returns .Success, .ExitCode and .RestartNeeded (No/Yes/Maybe):
# https://learn.microsoft.com/powershell/module/servermanager/install-windowsfeature ; anything but
# 'No' is treated as a restart.
# The restart is driven from the host: Restart-Computer -Force inside the guest
# (https://learn.microsoft.com/powershell/module/microsoft.powershell.management/restart-computer?view=powershell-5.1),
# then PowerShell Direct is polled until Win32_OperatingSystem.LastBootUpTime changes
# (https://learn.microsoft.com/windows/win32/cimwin32prov/win32-operatingsystem), which proves the
# guest went down and came back rather than answering before it shut down.
_FEATURE_GUEST = (
    "$GuestStep = {\n"
    + _GUEST_START
    + """    $restartNeeded = $false
    if (-not (Get-WindowsFeature -Name Containers).Installed) {
        $install = Install-WindowsFeature -Name Containers
        if (-not $install.Success) { throw "Install-WindowsFeature Containers failed with exit code $($install.ExitCode)" }
        $restartNeeded = [string]$install.RestartNeeded -ne 'No'
        $changes += "installed the Containers feature (restart needed: $($install.RestartNeeded))"
    }
    [pscustomobject]@{ Changes = $changes; RestartNeeded = $restartNeeded }
}
"""
)

_FEATURE_BODY = """function Get-GuestBootTime {
    Invoke-Guest -Step { (Get-CimInstance -ClassName Win32_OperatingSystem).LastBootUpTime } -Arguments @()
}
function Restart-Guest {
    $bootedAt = Get-GuestBootTime
    Write-Output "${VmName}: restarting the guest to finish the Containers feature"
    # The session may drop while the guest shuts down; the boot time below is the real check.
    try { Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock { Restart-Computer -Force } } catch { Write-Verbose $_.Exception.Message }
    $deadline = (Get-Date).AddSeconds($PsDirectTimeoutSec)
    while ($true) {
        Start-Sleep -Seconds 10
        try { if ((Get-GuestBootTime) -ne $bootedAt) { return } } catch { Write-Verbose $_.Exception.Message }
        if ((Get-Date) -gt $deadline) { throw "Timed out after $PsDirectTimeoutSec s waiting for $VmName to restart" }
    }
}
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @()
foreach ($change in $guest.Changes) { Write-Output "${VmName}: $change" }
if ($guest.RestartNeeded) {
    Restart-Guest
    $installed = Invoke-Guest -Step { (Get-WindowsFeature -Name Containers).Installed } -Arguments @()
    if (-not $installed) { throw "The Containers feature is still not installed in $VmName after the restart" }
}
Write-Output "${VmName}: Containers feature installed"
"""


def _render_containers_feature(p: WindowsNodeParams) -> str:
    return (
        _header(p, f"Install the Containers feature in {p.vm_name}.", POWERSHELL_DIRECT_TIMEOUT_SECONDS)
        + READ_GUEST_PASSWORD
        + GUEST_WAIT_FUNCTIONS
        + _HOST_FUNCTIONS
        + _FEATURE_GUEST
        + _FEATURE_BODY
    )


# ---------------------------------------------------------------------------------------
# Step 2: time, dynamic ports, firewall
# ---------------------------------------------------------------------------------------
#
# w32time: `w32tm /config /manualpeerlist:<space-delimited peers> /syncfromflags:manual /update`;
# the configuration lives in HKLM\SYSTEM\CurrentControlSet\Services\W32Time\Parameters (NtpServer,
# Type = NTP for a manual peer list):
# https://learn.microsoft.com/windows-server/networking/windows-time-service/windows-time-service-tools-and-settings
# The service is made Automatic (Set-Service -StartupType; Get-Service .StartType):
# https://learn.microsoft.com/powershell/module/microsoft.powershell.management/set-service?view=powershell-5.1
# Dynamic ports: `netsh int ipv4 set dynamicport tcp|udp start=N num=M`
# (https://learn.microsoft.com/troubleshoot/windows-server/networking/default-dynamic-port-range-tcpip-chang),
# read back with Get-NetTCPSetting / Get-NetUDPSetting .DynamicPortRangeStartPort and
# .DynamicPortRangeNumberOfPorts, which do not depend on the display language:
# https://learn.microsoft.com/powershell/module/nettcpip/get-netudpsetting
# Firewall: New-NetFirewallRule -Name -Direction Inbound -Protocol TCP -LocalPort 10250 -Action Allow,
# as PrepareNode.ps1 and image-builder tasks/kubelet.yml open the kubelet port:
# https://learn.microsoft.com/powershell/module/netsecurity/new-netfirewallrule
_HOST_SETTINGS_GUEST = (
    "$GuestStep = {\n"
    + "    param([string[]]$NtpServers, [int]$PortStart, [int]$PortCount, [string[]]$RuleNames, [int[]]$RulePorts)\n"
    + _GUEST_START
    + _GUEST_NATIVE
    + """    $w32time = Get-Service -Name W32Time
    if ($w32time.StartType -ne 'Automatic') {
        Set-Service -Name W32Time -StartupType Automatic
        $changes += 'w32time service set to Automatic'
    }
    if ((Get-Service -Name W32Time).Status -ne 'Running') {
        Start-Service -Name W32Time
        $changes += 'started w32time'
    }
    $peers = $NtpServers -join ' '
    $timeConfig = Get-ItemProperty -Path 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\W32Time\\Parameters'
    if ($timeConfig.NtpServer -ne $peers -or $timeConfig.Type -ne 'NTP') {
        $null = Invoke-Checked 'w32tm.exe' @('/config', "/manualpeerlist:$peers", '/syncfromflags:manual', '/update')
        $changes += "w32time peers set to $peers"
    }
    foreach ($protocol in @('tcp', 'udp')) {
        if ($protocol -eq 'tcp') { $current = Get-NetTCPSetting -SettingName Internet } else { $current = @(Get-NetUDPSetting)[0] }
        if ($current.DynamicPortRangeStartPort -ne $PortStart -or $current.DynamicPortRangeNumberOfPorts -ne $PortCount) {
            $null = Invoke-Checked 'netsh.exe' @('int', 'ipv4', 'set', 'dynamicport', $protocol, "start=$PortStart", "num=$PortCount")
            $changes += "$protocol dynamic ports set to $PortStart + $PortCount"
        }
    }
    for ($i = 0; $i -lt $RuleNames.Count; $i++) {
        if (-not (Get-NetFirewallRule -Name $RuleNames[$i] -ErrorAction SilentlyContinue)) {
            $null = New-NetFirewallRule -Name $RuleNames[$i] -DisplayName $RuleNames[$i] -Direction Inbound -Protocol TCP -LocalPort $RulePorts[$i] -Action Allow -Enabled True
            $changes += "firewall rule $($RuleNames[$i]) allows TCP $($RulePorts[$i]) in"
        }
    }
    [pscustomobject]@{ Changes = $changes }
}
"""
)


def _render_host_settings(p: WindowsNodeParams) -> str:
    return (
        _header(p, f"Time, dynamic ports and node firewall rules in {p.vm_name}.", POWERSHELL_DIRECT_TIMEOUT_SECONDS)
        + f"$NtpServers = {_ps_array(p.ntp_servers)}\n"
        + f"$PortStart = {p.dynamic_port_start}\n"
        + f"$PortCount = {p.dynamic_port_count}\n"
        + f"$RuleNames = {_ps_array(tuple(name for name, _ in NODE_FIREWALL_RULES))}\n"
        + f"$RulePorts = @({', '.join(str(port) for _, port in NODE_FIREWALL_RULES)})\n"
        + "$Step = 'time, port and firewall settings'\n"
        + READ_GUEST_PASSWORD
        + GUEST_WAIT_FUNCTIONS
        + _HOST_FUNCTIONS
        + _HOST_SETTINGS_GUEST
        + "Assert-VmRunning\nWait-PowerShellDirect\n"
        + "$guest = Invoke-Guest -Step $GuestStep -Arguments @($NtpServers, $PortStart, $PortCount, $RuleNames, $RulePorts)\n"
        + _HOST_REPORT
    )


# ---------------------------------------------------------------------------------------
# Step 3: containerd
# ---------------------------------------------------------------------------------------
#
# Release asset: github.com/containerd/containerd/releases/download/v<V>/containerd-<V>-windows-amd64.tar.gz
# with <asset>.sha256sum ("<digest>  <file>") beside it; the tarball holds bin\*.exe, which go to
# $env:ProgramFiles\containerd; `containerd.exe --register-service` registers the "containerd" service
# reading $env:ProgramFiles\containerd\config.toml: containerd docs/getting-started.md "Installing
# containerd on Windows", sig-windows-tools Install-Containerd.ps1 (tar.exe -xvf ... --strip=1).
# `containerd --version` prints "containerd <module> v<V> <commit>".
_CONTAINERD_GUEST = (
    "$GuestStep = {\n"
    + "    param([string]$Version, [string]$TarballUrl, [string]$ConfigText, [string[]]$Directories,\n"
    + "        [string]$HostsDir, [hashtable]$HostsFiles, [string]$ManagedMarker)\n"
    + _GUEST_START
    + _GUEST_NATIVE
    + _GUEST_DOWNLOAD
    + """    $containerdDir = Join-Path $env:ProgramFiles 'containerd'
    $exe = Join-Path $containerdDir 'containerd.exe'
    $installed = ''
    if (Test-Path -LiteralPath $exe) { $installed = (Invoke-Checked $exe @('--version')) -join ' ' }
    if ($installed -notmatch "(^|\\s)v$([regex]::Escape($Version))(\\s|$)") {
        $work = Join-Path $env:TEMP "containerd-$Version"
        if (Test-Path -LiteralPath $work) { Remove-Item -LiteralPath $work -Recurse -Force }
        $null = New-Item -ItemType Directory -Path $work -Force
        $tarball = Join-Path $work 'containerd.tar.gz'
        Save-Verified $TarballUrl (Get-PublishedSha256 "$TarballUrl.sha256sum" (Join-Path $work 'sha256sum')) $tarball
        $null = Invoke-Checked 'tar.exe' @('-xzf', $tarball, '-C', $work)
        if ((Get-Service -Name containerd -ErrorAction SilentlyContinue) -and (Get-Service -Name containerd).Status -ne 'Stopped') {
            Stop-Service -Name containerd -Force
        }
        $null = New-Item -ItemType Directory -Path $containerdDir -Force
        Copy-Item -Path (Join-Path $work 'bin\\*') -Destination $containerdDir -Force
        Remove-Item -LiteralPath $work -Recurse -Force
        $changes += "installed containerd $Version"
    }
    foreach ($directory in $Directories) {
        if (-not (Test-Path -LiteralPath $directory)) {
            $null = New-Item -ItemType Directory -Path $directory -Force
            $changes += "created $directory"
        }
    }
    $configChanged = Set-FileText (Join-Path $containerdDir 'config.toml') $ConfigText
    if ($configChanged) { $changes += 'wrote containerd config.toml' }
    foreach ($upstream in $HostsFiles.Keys) {
        if (Set-FileText (Join-Path $HostsDir "$upstream\\hosts.toml") $HostsFiles[$upstream]) { $changes += "wrote registry mirror hosts.toml for $upstream" }
    }
    foreach ($stale in @(Get-ChildItem -LiteralPath $HostsDir -Directory | Where-Object { -not $HostsFiles.ContainsKey($_.Name) })) {
        $hostsFile = Join-Path $stale.FullName 'hosts.toml'
        if ((Test-Path -LiteralPath $hostsFile) -and (Get-Content -LiteralPath $hostsFile -TotalCount 1) -like "$ManagedMarker*") {
            Remove-Item -LiteralPath $stale.FullName -Recurse -Force
            $changes += "removed registry mirror hosts.toml for $($stale.Name)"
        }
    }
    if (-not (Get-Service -Name containerd -ErrorAction SilentlyContinue)) {
        $null = Invoke-Checked $exe @('--register-service')
        $changes += 'registered the containerd service'
    }
    $containerd = Get-Service -Name containerd
    if ($containerd.StartType -ne 'Automatic') { Set-Service -Name containerd -StartupType Automatic }
    if ($configChanged -and $containerd.Status -eq 'Running') {
        Restart-Service -Name containerd -Force
        $changes += 'restarted containerd for the new config'
    } elseif ($containerd.Status -ne 'Running') {
        Start-Service -Name containerd
        $changes += 'started containerd'
    }
    $kubelet = Get-Service -Name kubelet -ErrorAction SilentlyContinue
    if ($kubelet -and $kubelet.StartType -eq 'Automatic' -and $kubelet.Status -ne 'Running') { Start-Service -Name kubelet }
    [pscustomobject]@{ Changes = $changes }
}
"""
)


def containerd_config_toml(p: WindowsNodeParams) -> str:
    """The Windows node's $env:ProgramFiles\\containerd\\config.toml for containerd 2.x.

    Only non-default keys; containerd merges them onto its built-in defaults. Config version 3 table
    names from containerd docs/cri/config.md ("Config versions", "Full configuration"):
    ``[plugins.'io.containerd.cri.v1.images'.pinned_images] sandbox``,
    ``[plugins.'io.containerd.cri.v1.images'.registry] config_path`` (docs/hosts.md) and
    ``[plugins.'io.containerd.cri.v1.runtime'.cni] conf_dir``. The CNI binary directory is
    ``bin_dirs``: ``bin_dir`` is deprecated since containerd 2.1 in favour of the list
    (containerd/containerd#11311; deprecation warning quoted in gardener/gardener#13826).
    Windows paths are TOML literal strings ('...'), which keep backslashes as they are.
    """
    _validate(p)
    return (
        f"# managed by render/windows_bootstrap.py; containerd {p.containerd_version} uses config version 3\n"
        "version = 3\n"
        "\n"
        "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n"
        f"  sandbox = '{p.pause_image}'\n"
        "\n"
        "[plugins.'io.containerd.cri.v1.images'.registry]\n"
        f"  config_path = '{REGISTRY_HOSTS_DIR}'\n"
        "\n"
        "[plugins.'io.containerd.cri.v1.runtime'.cni]\n"
        f"  bin_dirs = ['{p.cni_bin_dir}']\n"
        f"  conf_dir = '{p.cni_conf_dir}'\n"
    )


def registry_hosts_files(p: WindowsNodeParams) -> dict[str, str]:
    """certs.d/<upstream>/hosts.toml per mirrored upstream, the same text Linux nodes get."""
    grouped: dict[str, list[RegistryMirror]] = {}
    for upstream, endpoint, override_path in p.registry_mirrors:
        grouped.setdefault(upstream, []).append(RegistryMirror(upstream, endpoint, override_path))
    return {upstream: registry_hosts_toml(upstream, mirrors) for upstream, mirrors in grouped.items()}


def _render_containerd(p: WindowsNodeParams) -> str:
    version = p.containerd_version
    tarball = (
        f"https://github.com/containerd/containerd/releases/download/v{version}/"
        f"containerd-{version}-windows-amd64.tar.gz"
    )
    hosts = registry_hosts_files(p)
    hosts_table = "@{" + "; ".join(f"{ps_quote(k)} = {_ps_text(v)}" for k, v in hosts.items()) + "}"
    return (
        _header(p, f"Install containerd {version} in {p.vm_name}.", POWERSHELL_DIRECT_TIMEOUT_SECONDS)
        + f"$Version = {ps_quote(version)}\n"
        + f"$TarballUrl = {ps_quote(tarball)}\n"
        + f"$ConfigText = {_ps_text(containerd_config_toml(p))}\n"
        + f"$Directories = {_ps_array((p.cni_bin_dir, p.cni_conf_dir, REGISTRY_HOSTS_DIR))}\n"
        + f"$HostsDir = {ps_quote(REGISTRY_HOSTS_DIR)}\n"
        + f"$HostsFiles = {hosts_table}\n"
        + f"$ManagedMarker = {ps_quote(MANAGED_MARKER)}\n"
        + "$Step = 'containerd'\n"
        + READ_GUEST_PASSWORD
        + GUEST_WAIT_FUNCTIONS
        + _HOST_FUNCTIONS
        + _CONTAINERD_GUEST
        + "Assert-VmRunning\nWait-PowerShellDirect\n"
        + "$guest = Invoke-Guest -Step $GuestStep -Arguments @($Version, $TarballUrl, $ConfigText, $Directories, $HostsDir, $HostsFiles, $ManagedMarker)\n"
        + _HOST_REPORT
    )


# ---------------------------------------------------------------------------------------
# Step 4: kubelet, kubeadm, kubectl and the kubelet service
# ---------------------------------------------------------------------------------------
#
# A binary is replaced only when its SHA-256 differs from the published one; a running kubelet is
# stopped first (its executable is locked) and started again afterwards. C:\k goes on the machine
# PATH as in PrepareNode.ps1: kubeadm's preflight runs `kubelet --version`.
# The service: New-Service -Name -BinaryPathName -StartupType Disabled -DependsOn containerd
# (https://learn.microsoft.com/powershell/module/microsoft.powershell.management/new-service?view=powershell-5.1);
# the join enables it once kubeadm has written the node's flags (module docstring). Restart on
# failure as the GCE Windows node setup does: `sc.exe failure kubelet reset= 0 actions= restart/10000`
# (kubernetes/kubernetes cluster/gce/windows/k8s-node-setup.psm1).
_KUBERNETES_GUEST = (
    "$GuestStep = {\n"
    + "    param([string]$BaseUrl, [string]$BinDir, [string[]]$Binaries, [string[]]$Directories, [string]$ServiceCommand)\n"
    + _GUEST_START
    + _GUEST_NATIVE
    + _GUEST_DOWNLOAD
    + """    foreach ($directory in @($BinDir) + $Directories) {
        if (-not (Test-Path -LiteralPath $directory)) {
            $null = New-Item -ItemType Directory -Path $directory -Force
            $changes += "created $directory"
        }
    }
    $restartKubelet = $false
    foreach ($binary in $Binaries) {
        $path = Join-Path $BinDir $binary
        $digest = Get-PublishedSha256 "$BaseUrl/$binary.sha256" "$path.sha256"
        if ((Get-FileSha256 $path) -ne $digest) {
            $kubelet = Get-Service -Name kubelet -ErrorAction SilentlyContinue
            if ($binary -eq 'kubelet.exe' -and $kubelet -and $kubelet.Status -ne 'Stopped') {
                Stop-Service -Name kubelet -Force
                $restartKubelet = $true
            }
            Save-Verified "$BaseUrl/$binary" $digest $path
            $changes += "installed $binary from $BaseUrl"
        }
    }
    $machinePath = [Environment]::GetEnvironmentVariable('Path', 'Machine')
    if (($machinePath -split ';') -notcontains $BinDir) {
        [Environment]::SetEnvironmentVariable('Path', "$machinePath;$BinDir", 'Machine')
        $changes += "added $BinDir to the machine PATH"
    }
    if (-not (Get-Service -Name kubelet -ErrorAction SilentlyContinue)) {
        $null = New-Service -Name kubelet -DisplayName 'kubelet' -BinaryPathName $ServiceCommand -StartupType Disabled -DependsOn containerd
        $null = Invoke-Checked 'sc.exe' @('failure', 'kubelet', 'reset=', '0', 'actions=', 'restart/10000')
        $changes += 'registered the kubelet service (disabled until the join)'
    }
    if ($restartKubelet) { Start-Service -Name kubelet }
    [pscustomobject]@{ Changes = $changes }
}
"""
)


def _render_kubernetes(p: WindowsNodeParams) -> str:
    base_url = f"https://dl.k8s.io/release/v{p.kubernetes_version}/bin/windows/amd64"
    return (
        _header(p, f"Install Kubernetes {p.kubernetes_version} node binaries in {p.vm_name}.", POWERSHELL_DIRECT_TIMEOUT_SECONDS)
        + f"$BaseUrl = {ps_quote(base_url)}\n"
        + f"$BinDir = {ps_quote(KUBERNETES_BIN_DIR)}\n"
        + f"$Binaries = {_ps_array(_KUBERNETES_BINARIES)}\n"
        + f"$Directories = {_ps_array(_KUBERNETES_DIRECTORIES)}\n"
        + f"$ServiceCommand = {ps_quote(_KUBELET_SERVICE_BASE)}\n"
        + "$Step = 'Kubernetes binaries and kubelet service'\n"
        + READ_GUEST_PASSWORD
        + GUEST_WAIT_FUNCTIONS
        + _HOST_FUNCTIONS
        + _KUBERNETES_GUEST
        + "Assert-VmRunning\nWait-PowerShellDirect\n"
        + "$guest = Invoke-Guest -Step $GuestStep -Arguments @($BaseUrl, $BinDir, $Binaries, $Directories, $ServiceCommand)\n"
        + _HOST_REPORT
    )


# The Windows node's side of a rolling upgrade (kubeadm upgrade guide, "Upgrade worker nodes", and its
# Windows counterpart https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/upgrading-windows-nodes/:
# new kubeadm.exe, `kubeadm upgrade node`, new kubelet.exe, kubelet restarted): step 4's script at the
# new version replaces each binary whose SHA-256 differs (stopping the kubelet for its own), then
# `kubeadm upgrade node` writes the new minor's kubelet configuration and the kubelet is (re)started.
# The chain drains the node before and uncordons it after (components/upgrade.py).
# A marker file records the version the last complete upgrade reached, so a re-run for another reason
# (a rotated guest password changes this step's stdin) leaves a finished node and its kubelet alone.
UPGRADE_MARKER = r"C:\var\lib\kubelet\hybrid-cluster-upgraded-to"
_UPGRADE_GUEST = (
    "$UpgradeStep = {\n"
    + "    param([string]$BinDir, [string]$Version, [string]$Marker)\n"
    + _GUEST_START
    + _GUEST_NATIVE
    + """    if ((Test-Path -LiteralPath $Marker) -and ((Get-Content -LiteralPath $Marker -Raw).Trim() -ceq $Version)) {
        return [pscustomobject]@{ Changes = $changes }
    }
    $null = Invoke-Checked (Join-Path $BinDir 'kubeadm.exe') @('upgrade', 'node')
    $changes += 'kubeadm upgrade node'
    Restart-Service -Name kubelet
    $changes += 'restarted the kubelet'
    Set-Content -LiteralPath $Marker -Value $Version -NoNewline
    [pscustomobject]@{ Changes = $changes }
}
"""
)


def render_upgrade(p: WindowsNodeParams) -> str:
    """The host script that upgrades the joined Windows node in ``p.vm_name`` to ``p.kubernetes_version``.
    Idempotent: binaries already at the version are kept, and ``kubeadm upgrade node`` re-applies the
    same configuration. stdin line 1: the guest Administrator password."""
    _validate(p)
    script = (
        _render_kubernetes(p).replace(
            f"Install Kubernetes {p.kubernetes_version} node binaries in {p.vm_name}.",
            f"Upgrade the Kubernetes node in {p.vm_name} to {p.kubernetes_version}.", 1)
        + _UPGRADE_GUEST
        + "$Step = 'kubeadm upgrade node'\n"
        + f"$Version = {ps_quote(p.kubernetes_version)}\n"
        + f"$Marker = {ps_quote(UPGRADE_MARKER)}\n"
        + "$guest = Invoke-Guest -Step $UpgradeStep -Arguments @($BinDir, $Version, $Marker)\n"
        + _HOST_REPORT
    )
    return _checked(script)


# The preparation step that installs the version-bound Kubernetes binaries.
KUBERNETES_STEP = "kubernetes"


def render_prepare_steps(p: WindowsNodeParams) -> list[tuple[str, str]]:
    """The guest preparation as [(step_name, host_script)], to run in order; each step is idempotent
    and reads the guest Administrator password from the first line of stdin."""
    _validate(p)
    return [
        ("containers-feature", _checked(_render_containers_feature(p))),
        ("host-settings", _checked(_render_host_settings(p))),
        ("containerd", _checked(_render_containerd(p))),
        (KUBERNETES_STEP, _checked(_render_kubernetes(p))),
    ]


# ---------------------------------------------------------------------------------------
# Join
# ---------------------------------------------------------------------------------------
#
# The join line is stdin line 2, read with [Console]::In.ReadLine() like the password, matched with
# JOIN_LINE_PATTERN and never written anywhere. Its values go to the guest over PowerShell Direct and
# are substituted there into the JoinConfiguration, which is written to a directory whose ACL grants
# only BUILTIN\Administrators (S-1-5-32-544) and LocalSystem (S-1-5-18), with inheritance cut
# (DirectorySecurity.SetAccessRuleProtection(true, false), FileSystemAccessRule, Set-Acl:
# https://learn.microsoft.com/dotnet/api/system.security.accesscontrol.objectsecurity.setaccessruleprotection ,
# https://learn.microsoft.com/windows/win32/secauthz/well-known-sids ), and removed in `finally`.
# The flags file holds KUBELET_KUBEADM_ARGS="..." (kubernetes/kubernetes#88287; PrepareNode.ps1
# StartKubelet.ps1 trims exactly that). The service command line is changed with Win32_Service.Change
# PathName (https://learn.microsoft.com/windows/win32/cimwin32prov/change-method-in-class-win32-service),
# which takes the string as is, unlike sc.exe behind Windows PowerShell's native argument quoting.
# A partial earlier attempt (pki\ca.crt or the flags file present, kubelet.conf absent) would fail
# kubeadm's FileAvailable preflight checks, so it is reset first.
_JOIN_GUEST = (
    "$GuestStep = {\n"
    + "    param([string]$Template, [string]$Endpoint, [string]$Token, [string]$CaCertHash, [string]$BinDir,\n"
    + "        [string]$KubeletConf, [string]$FlagsFile, [string]$ServiceBase, [string]$CriSocket, [string]$FlagPattern)\n"
    + _GUEST_START
    + _GUEST_NATIVE
    + """    $secrets = @($Token, $Token.Split('.')[1], $CaCertHash)
    if (Test-Path -LiteralPath $KubeletConf) {
        return [pscustomobject]@{ Changes = $changes; Joined = $false; Kubelet = [string](Get-Service -Name kubelet).Status }
    }
    $env:Path = "$BinDir;$env:Path"
    $kubeadm = Join-Path $BinDir 'kubeadm.exe'
    if ((Test-Path -LiteralPath 'C:\\etc\\kubernetes\\pki\\ca.crt') -or (Test-Path -LiteralPath $FlagsFile)) {
        $null = Invoke-Checked $kubeadm @('reset', '--force', "--cri-socket=$CriSocket") $secrets
        $changes += 'reset a partial earlier join'
    }
    $config = $Template.Replace('@@JOIN_TOKEN@@', $Token).Replace('@@JOIN_CA_CERT_HASH@@', $CaCertHash).Replace('@@JOIN_API_ENDPOINT@@', $Endpoint)
    $workDir = Join-Path $env:ProgramData 'kubeadm-join'
    $null = New-Item -ItemType Directory -Path $workDir -Force
    $acl = New-Object System.Security.AccessControl.DirectorySecurity
    $acl.SetAccessRuleProtection($true, $false)
    foreach ($sid in @('S-1-5-32-544', 'S-1-5-18')) {
        $identity = New-Object System.Security.Principal.SecurityIdentifier($sid)
        $acl.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule($identity, 'FullControl', 'ContainerInherit, ObjectInherit', 'None', 'Allow')))
    }
    Set-Acl -LiteralPath $workDir -AclObject $acl
    $configFile = Join-Path $workDir 'join-config.yaml'
    try {
        [System.IO.File]::WriteAllText($configFile, $config, (New-Object System.Text.UTF8Encoding($false)))
        $null = Invoke-Checked $kubeadm @('join', "--config=$configFile", '--skip-phases=kubelet-wait-bootstrap') $secrets
        $flagsLine = (Get-Content -LiteralPath $FlagsFile -Raw).Trim()
        if ($flagsLine -notmatch '^KUBELET_KUBEADM_ARGS="([^"]*)"$') { throw "$FlagsFile does not hold one KUBELET_KUBEADM_ARGS line" }
        $flags = @($Matches[1].Trim() -split ' +' | Where-Object { $_ })
        foreach ($flag in $flags) {
            if ($flag -cnotmatch $FlagPattern) { throw "refusing to put '$flag' from $FlagsFile on the kubelet service command line" }
        }
        $service = Get-CimInstance -ClassName Win32_Service -Filter "Name='kubelet'"
        $result = Invoke-CimMethod -InputObject $service -MethodName Change -Arguments @{ PathName = (@($ServiceBase) + $flags) -join ' ' }
        if ($result.ReturnValue -ne 0) { throw "Win32_Service.Change of the kubelet service returned $($result.ReturnValue)" }
        Set-Service -Name kubelet -StartupType Automatic
        Start-Service -Name kubelet
        $changes += "kubelet service enabled with kubeadm flags: $($flags -join ' ')"
        $null = Invoke-Checked $kubeadm @('join', 'phase', 'kubelet-wait-bootstrap', "--config=$configFile") $secrets
        $changes += 'kubelet finished its TLS bootstrap'
    } finally {
        Remove-Item -LiteralPath $workDir -Recurse -Force -ErrorAction SilentlyContinue
    }
    $deadline = (Get-Date).AddSeconds(120)
    while ((Get-Service -Name kubelet).Status -ne 'Running') {
        if ((Get-Date) -gt $deadline) { throw 'the kubelet service is not running 120 s after the join' }
        Start-Sleep -Seconds 5
    }
    [pscustomobject]@{ Changes = $changes; Joined = $true; Kubelet = 'Running' }
}
"""
)

_JOIN_BODY = """$joinLine = [Console]::In.ReadLine()
if ([string]::IsNullOrEmpty($joinLine)) { throw 'Expected the kubeadm join line as the second line of stdin' }
$joinMatch = [regex]::Match($joinLine, $JoinLinePattern)
Remove-Variable -Name joinLine
if (-not $joinMatch.Success) {
    throw 'The second line of stdin is not a worker join line (kubeadm join HOST:PORT --token T --discovery-token-ca-cert-hash sha256:H); it is not shown because it carries a secret'
}
$apiPort = [int]($joinMatch.Groups[1].Value -replace '^.*:', '')
if ($apiPort -lt 1 -or $apiPort -gt 65535) { throw 'The API server port in the join line is out of range' }
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @($Template, $joinMatch.Groups[1].Value, $joinMatch.Groups[2].Value, $joinMatch.Groups[3].Value, $BinDir, $KubeletConf, $FlagsFile, $ServiceBase, $CriSocket, $FlagPattern)
Remove-Variable -Name joinMatch
foreach ($change in $guest.Changes) { Write-Output "${VmName}: $change" }
if ($guest.Joined) {
    Write-Output "${VmName}: joined the cluster; kubelet service $($guest.Kubelet)"
} else {
    Write-Output "${VmName}: already joined ($KubeletConf exists), nothing to do; kubelet service $($guest.Kubelet)"
}
"""


def render_join(p: WindowsNodeParams, join_config_yaml: str) -> str:
    """The Windows ``kubeadm join`` (create script of the join resource). stdin: line 1 the guest
    Administrator password, line 2 the join line. A node whose kubelet.conf exists is left alone."""
    _validate(p)
    for placeholder in JOIN_PLACEHOLDERS:
        if placeholder not in join_config_yaml:
            raise ValueError(f"join_config_yaml lacks the {placeholder} placeholder")
    if "kind: JoinConfiguration" not in join_config_yaml:
        raise ValueError("join_config_yaml is not a JoinConfiguration")
    if CRI_SOCKET not in join_config_yaml:
        raise ValueError(f"join_config_yaml must set nodeRegistration.criSocket to {CRI_SOCKET}")
    script = (
        _header(p, f"Join {p.vm_name} to the cluster with kubeadm.", POWERSHELL_DIRECT_TIMEOUT_SECONDS)
        + f"$Template = {_ps_text(join_config_yaml)}\n"
        + f"$JoinLinePattern = {ps_quote(JOIN_LINE_PATTERN)}\n"
        + f"$FlagPattern = {ps_quote(KUBEADM_FLAG_PATTERN)}\n"
        + f"$BinDir = {ps_quote(KUBERNETES_BIN_DIR)}\n"
        + f"$KubeletConf = {ps_quote(KUBELET_KUBECONFIG)}\n"
        + f"$FlagsFile = {ps_quote(KUBEADM_FLAGS_FILE)}\n"
        + f"$ServiceBase = {ps_quote(_KUBELET_SERVICE_BASE)}\n"
        + f"$CriSocket = {ps_quote(CRI_SOCKET)}\n"
        + READ_GUEST_PASSWORD
        + GUEST_WAIT_FUNCTIONS
        + _HOST_FUNCTIONS
        + _JOIN_GUEST
        + _JOIN_BODY
    )
    return _checked(script)


# ---------------------------------------------------------------------------------------
# Reset (delete script of the join resource)
# ---------------------------------------------------------------------------------------
#
# When it runs: the join's triggers are the VM id, and on destroy Pulumi deletes the drain (which
# already deleted the Node object), then this, then the VM. So the reset always precedes the deletion
# or replacement of the VM that holds all the state it cleans. Decision: a VM that is absent, not
# running, or not answering PowerShell Direct within RESET_POWERSHELL_DIRECT_TIMEOUT_SECONDS is left
# alone with a warning and the script succeeds; on a reachable guest every cleanup action is tried,
# a failing one is reported as a warning and the rest still run. Either way destroy goes on to delete
# the VM, instead of failing until someone repairs a node that is about to disappear.
# Cleanup: `kubeadm reset --force --cri-socket` (stops the kubelet, removes its containers and
# C:\etc\kubernetes, C:\var\lib\kubelet state), the kubelet service stopped and disabled again (the
# inverse of the join enabling it), HNS: Get-HnsEndpoint/Remove-HnsEndpoint, Get-HnsPolicyList/
# Remove-HnsPolicyList (kube-proxy's load balancers, which microsoft/SDN Kubernetes/windows/
# start-kubeproxy.ps1 also clears), Get-HnsNetwork/Remove-HnsNetwork
# (https://learn.microsoft.com/powershell/module/hostnetworkingservice/), then the CNI config files
# and Calico's node state directories.
_RESET_GUEST = (
    "$GuestStep = {\n"
    + "    param([string]$BinDir, [string]$CriSocket, [string]$CniConfDir, [string[]]$NetworkPatterns, [string[]]$StateDirs)\n"
    + _GUEST_START
    + _GUEST_NATIVE
    + """    $problems = @()
    $kubeadm = Join-Path $BinDir 'kubeadm.exe'
    if ((Test-Path -LiteralPath $kubeadm) -and ((Test-Path -LiteralPath 'C:\\etc\\kubernetes') -or (Test-Path -LiteralPath 'C:\\var\\lib\\kubelet'))) {
        try {
            $env:Path = "$BinDir;$env:Path"
            $null = Invoke-Checked $kubeadm @('reset', '--force', "--cri-socket=$CriSocket")
            $changes += 'kubeadm reset'
        } catch { $problems += "kubeadm reset: $($_.Exception.Message)" }
    }
    try {
        $kubelet = Get-Service -Name kubelet -ErrorAction SilentlyContinue
        if ($kubelet -and $kubelet.Status -ne 'Stopped') { Stop-Service -Name kubelet -Force; $changes += 'stopped the kubelet service' }
        if ($kubelet -and $kubelet.StartType -ne 'Disabled') { Set-Service -Name kubelet -StartupType Disabled; $changes += 'disabled the kubelet service' }
    } catch { $problems += "kubelet service: $($_.Exception.Message)" }
    if (Get-Command -Name Get-HnsNetwork -ErrorAction SilentlyContinue) {
        try {
            $networks = @(Get-HnsNetwork | Where-Object { $name = $_.Name; @($NetworkPatterns | Where-Object { $name -like $_ }).Count -gt 0 })
            $networkNames = @($networks | ForEach-Object { $_.Name })
            foreach ($endpoint in @(Get-HnsEndpoint)) {
                $attached = $endpoint.PSObject.Properties['VirtualNetworkName']
                if ($attached -and $networkNames -contains $attached.Value) { $endpoint | Remove-HnsEndpoint; $changes += "removed HNS endpoint $($endpoint.Id)" }
            }
            $policyLists = @(Get-HnsPolicyList)
            if ($policyLists.Count -gt 0) { $policyLists | Remove-HnsPolicyList; $changes += "removed $($policyLists.Count) HNS policy lists" }
            foreach ($network in $networks) { $network | Remove-HnsNetwork; $changes += "removed HNS network $($network.Name)" }
        } catch { $problems += "HNS: $($_.Exception.Message)" }
    }
    foreach ($path in @(Get-ChildItem -LiteralPath $CniConfDir -File -ErrorAction SilentlyContinue | ForEach-Object { $_.FullName }) + $StateDirs) {
        try {
            if (Test-Path -LiteralPath $path) { Remove-Item -LiteralPath $path -Recurse -Force; $changes += "removed $path" }
        } catch { $problems += "${path}: $($_.Exception.Message)" }
    }
    [pscustomobject]@{ Changes = $changes; Problems = $problems }
}
"""
)

_RESET_BODY = """$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if (-not $vm) {
    Write-Output "${VmName}: VM is absent, nothing to reset"
    exit 0
}
if ($vm.State -ne 'Running') {
    Write-Warning "${VmName}: VM is $($vm.State); skipping the node cleanup, the VM and its state are deleted next"
    exit 0
}
try {
    Wait-PowerShellDirect
} catch {
    Write-Warning "${VmName}: guest unreachable ($($_.Exception.Message)); skipping the node cleanup, the VM and its state are deleted next"
    exit 0
}
$guest = Invoke-Guest -Step $GuestStep -Arguments @($BinDir, $CriSocket, $CniConfDir, $NetworkPatterns, $StateDirs)
foreach ($change in $guest.Changes) { Write-Output "${VmName}: $change" }
foreach ($problem in $guest.Problems) { Write-Warning "${VmName}: $problem" }
Write-Output ('{0}: node reset finished with {1} change(s) and {2} problem(s)' -f $VmName, @($guest.Changes | Where-Object { $_ }).Count, @($guest.Problems | Where-Object { $_ }).Count)
"""


def render_reset(p: WindowsNodeParams) -> str:
    """The join's delete script: ``kubeadm reset``, kubelet service stopped and disabled, Calico's
    HNS networks/endpoints, kube-proxy's policy lists and the CNI config removed. Idempotent; never
    blocks the VM's deletion (see the comment above _RESET_GUEST)."""
    _validate(p)
    script = (
        _header(p, f"Reset the Kubernetes node in {p.vm_name} before its VM is deleted.", RESET_POWERSHELL_DIRECT_TIMEOUT_SECONDS)
        + f"$BinDir = {ps_quote(KUBERNETES_BIN_DIR)}\n"
        + f"$CriSocket = {ps_quote(CRI_SOCKET)}\n"
        + f"$CniConfDir = {ps_quote(p.cni_conf_dir)}\n"
        + f"$NetworkPatterns = {_ps_array(_CALICO_HNS_NETWORKS)}\n"
        + f"$StateDirs = {_ps_array(_CALICO_STATE_DIRS)}\n"
        + READ_GUEST_PASSWORD
        + GUEST_WAIT_FUNCTIONS
        + _HOST_FUNCTIONS
        + _RESET_GUEST
        + _RESET_BODY
    )
    return _checked(script)
