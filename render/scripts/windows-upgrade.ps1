# Upgrade the Kubernetes node in a Windows node VM. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec BaseUrl BinDir Binaries[] Directories[] ServiceCommand Version Marker Machine
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
## The Windows node's side of a rolling upgrade (kubeadm upgrade guide, "Upgrade worker nodes", and its
## Windows counterpart https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/upgrading-windows-nodes/:
## new kubeadm.exe, `kubeadm upgrade node`, new kubelet.exe, kubelet restarted): step 4's script at the
## new version (lib/windows-kubernetes-binaries.ps1) replaces each binary whose SHA-256 differs (stopping
## the kubelet for its own), then `kubeadm upgrade node` ($UpgradeStep) writes the new minor's kubelet
## configuration and the kubelet is (re)started. The chain drains the node before and uncordons it after
## (components/upgrade.py).
#@ include lib/windows-kubernetes-binaries.ps1
$UpgradeStep = {
    param([string]$BinDir, [string]$Version, [string]$Marker)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    ## A marker file ($Marker, UPGRADE_MARKER) records the version the last complete upgrade reached, so a
    ## re-run for another reason (a rotated guest password changes this step's stdin) leaves a finished
    ## node and its kubelet alone.
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
Write-Output "Upgrading the node in $VmName (machine $Machine) to $Version"
$Step = 'kubeadm upgrade node'
$guest = Invoke-Guest -Step $UpgradeStep -Arguments @($BinDir, $Version, $Marker)
#@ include lib/windows-host-report.ps1
