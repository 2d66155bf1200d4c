# Install or move containerd's binaries in a Windows node VM. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec Version TarballUrl KubeletConf KeepMemberVersion Machine
$Step = 'containerd binaries'
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
## Two callers. The preparation ($KeepMemberVersion 1) installs $Version on a new instance, and leaves a
## member's containerd (its $KubeletConf exists) as it is: only the upgrade chain moves a member's runtime.
## The upgrade chain ($KeepMemberVersion 0, components/cluster/upgrade.py) runs it on a drained node before the
## Kubernetes step. Either way the release is downloaded and verified with everything running; only then
## are the kubelet and containerd stopped, the binaries swapped (lib/windows-containerd-release.ps1, which
## puts the old ones back on any failure) and both started again. A node at the version changes nothing.
Write-Output "containerd of $VmName (machine $Machine): $Version"
$GuestStep = {
    param([string]$Version, [string]$TarballUrl, [string]$KubeletConf, [int]$KeepMemberVersion)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    #@ include lib/windows-guest-download.ps1
    #@ include lib/windows-containerd-release.ps1
    $containerdDir = Join-Path $env:ProgramFiles 'containerd'
    Remove-AsideBinaries $containerdDir
    $installed = Get-ContainerdVersion (Join-Path $containerdDir 'containerd.exe')
    if ($installed -eq "v$Version") {
        ## Already there.
    } elseif ($installed -and $KeepMemberVersion -and (Test-Path -LiteralPath $KubeletConf)) {
        $changes += "containerd $installed stays on this member until the upgrade chain moves it to v$Version"
    } else {
        $stage = Get-StagedContainerd $Version $TarballUrl
        $kubelet = Get-Service -Name kubelet -ErrorAction SilentlyContinue
        $kubeletWasRunning = [bool]($kubelet -and $kubelet.Status -ne 'Stopped')
        if ($kubeletWasRunning) { Stop-Service -Name kubelet -Force }
        try {
            Install-StagedContainerd $stage $Version $containerdDir
        } finally {
            ## On the new runtime, or on the old one put back: the kubelet runs again either way.
            if ($kubeletWasRunning) { Start-Service -Name kubelet }
        }
        $changes += "installed containerd v$Version (was: $(if ($installed) { $installed } else { 'none' }))"
    }
    [pscustomobject]@{ Changes = $changes }
}
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @($Version, $TarballUrl, $KubeletConf, $KeepMemberVersion)
#@ include lib/windows-host-report.ps1
