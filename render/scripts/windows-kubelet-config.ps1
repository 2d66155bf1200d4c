# Bring the kubelet of a Windows node VM to the cluster's kubelet configuration. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec BinDir SettingsDigest WantedLines[] AbsentKeys[] ServerTlsBootstrap Machine CertificateTimeoutSec SettleSec
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
## The Windows side of kubelet-config-node.sh, in the same order: `kubeadm upgrade node phase kubelet-config`
## downloads the kubelet-config ConfigMap into C:\var\lib\kubelet\config.yaml (the path the kubelet service's
## --config names, render/windows_bootstrap.py; kubeadm prefixes the kubelet's paths with the drive letter on
## Windows, cmd/kubeadm/app/componentconfigs/kubelet_windows.go), the kubelet service restarts (no Pod stops,
## so the node is not drained) and must stay running, and with serverTLSBootstrap the step waits for the certificate
## the kubelet keeps as pki\kubelet-server-current.pem once the kubelet serving approver has approved its request. The
## kubelet's certificate code has no OS-specific part (pkg/kubelet/certificate/kubelet.go). The settings are checked
## line by line as kubeadm writes them (render/kubelet_config.py). Idempotent like the Linux step.
$Step = 'kubelet configuration'
$GuestStep = {
    param([string]$BinDir, [string]$SettingsDigest, [string[]]$WantedLines, [string[]]$AbsentKeys,
          [bool]$ServerTlsBootstrap, [int]$CertificateTimeoutSec, [int]$SettleSec)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    $config = 'C:\var\lib\kubelet\config.yaml'
    $certificate = 'C:\var\lib\kubelet\pki\kubelet-server-current.pem'
    ## The settings (by digest) the kubelet was last restarted (and certified) with, as on Linux.
    $applied = 'C:\var\lib\kubelet\hybrid-cluster-kubelet-config'
    if (-not (Test-Path -LiteralPath $config)) { throw "$config is missing: the node has not joined the cluster" }
    function Test-Settings {
        $lines = Get-Content -LiteralPath $config
        foreach ($line in $WantedLines) { if ($lines -cnotcontains $line) { return $false } }
        foreach ($key in $AbsentKeys) { if ($lines | Where-Object { $_.StartsWith("${key}:", [StringComparison]::Ordinal) }) { return $false } }
        $true
    }
    ## kubelet-server-current.pem is a symbolic link to the dated file (client-go certificate store, updateSymlink), and a
    ## link's Length is 0 on Windows: the content is read through it instead.
    function Test-Certificate {
        $text = Get-Content -LiteralPath $certificate -Raw -ErrorAction SilentlyContinue
        [bool]$text -and $text.Contains('-----BEGIN CERTIFICATE-----')
    }
    $recorded = Get-Content -LiteralPath $applied -Raw -ErrorAction SilentlyContinue
    if ($recorded -and ($recorded.Trim() -eq $SettingsDigest) -and (Test-Settings) -and
        (-not $ServerTlsBootstrap -or (Test-Certificate))) {
        return [pscustomobject]@{ Changes = $changes }
    }
    if (-not (Test-Settings)) {
        $null = Invoke-Checked (Join-Path $BinDir 'kubeadm.exe') @('upgrade', 'node', 'phase', 'kubelet-config')
        $changes += 'kubeadm upgrade node phase kubelet-config'
        if (-not (Test-Settings)) {
            throw "the cluster's kubelet-config does not have the stack's settings after the download: its sync step on the first control-plane node must run first"
        }
    }
    Remove-Item -LiteralPath $applied -Force -ErrorAction SilentlyContinue
    Restart-Service -Name kubelet -Force
    # The same process still running after the settle time: a kubelet that exits at start and is started again by
    # the service's recovery actions has a new process id each time (Win32_Service.ProcessId).
    $started = (Get-CimInstance -ClassName Win32_Service -Filter "Name='kubelet'").ProcessId
    Start-Sleep -Seconds $SettleSec
    $service = Get-CimInstance -ClassName Win32_Service -Filter "Name='kubelet'"
    if ($service.State -ne 'Running' -or $service.ProcessId -eq 0 -or $service.ProcessId -ne $started) {
        throw "the kubelet did not stay running after its restart: see its log under C:\var\log\kubelet"
    }
    $changes += 'restarted the kubelet'
    if ($ServerTlsBootstrap) {
        $deadline = (Get-Date).AddSeconds($CertificateTimeoutSec)
        while (-not (Test-Certificate)) {
            if ((Get-Date) -gt $deadline) {
                throw "no approved serving certificate after $CertificateTimeoutSec s: journalctl -u hybrid-cluster-kubelet-serving-approver on a control-plane node says why its request is pending"
            }
            Start-Sleep -Seconds 5
        }
        $changes += 'the kubelet serves a certificate from the cluster CA'
    }
    Set-Content -LiteralPath $applied -Value $SettingsDigest -NoNewline
    [pscustomobject]@{ Changes = $changes }
}
Write-Output "${VmName} (machine $Machine): kubelet settings $SettingsDigest"
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @($BinDir, $SettingsDigest, $WantedLines, $AbsentKeys, $ServerTlsBootstrap, $CertificateTimeoutSec, $SettleSec)
#@ include lib/windows-host-report.ps1
