# Upgrade the Kubernetes node in a Windows node VM. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec BaseUrl BinDir Binaries[] Directories[] ServiceCommand Version Marker
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
#@ include lib/windows-kubernetes-binaries.ps1
$UpgradeStep = {
    param([string]$BinDir, [string]$Version, [string]$Marker)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    if ((Test-Path -LiteralPath $Marker) -and ((Get-Content -LiteralPath $Marker -Raw).Trim() -ceq $Version)) {
        return [pscustomobject]@{ Changes = $changes }
    }
    $null = Invoke-Checked (Join-Path $BinDir 'kubeadm.exe') @('upgrade', 'node')
    $changes += 'kubeadm upgrade node'
    Restart-Service -Name kubelet
    $changes += 'restarted the kubelet'
    Set-Content -LiteralPath $Marker -Value $Version -NoNewline
    [pscustomobject]@{ Changes = $changes }
}
$Step = 'kubeadm upgrade node'
$guest = Invoke-Guest -Step $UpgradeStep -Arguments @($BinDir, $Version, $Marker)
#@ include lib/windows-host-report.ps1
