# Install the Containers feature in a Windows node VM. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
## Get-WindowsFeature .Installed and Install-WindowsFeature -Name Containers, as sig-windows-tools
## hostprocess/Install-Containerd.ps1 does; Hyper-V is not installed in the guest: process-isolated
## containers only need the Containers feature, and this VM has no nested virtualization.
## Install-WindowsFeature returns .Success, .ExitCode and .RestartNeeded (No/Yes/Maybe):
## https://learn.microsoft.com/powershell/module/servermanager/install-windowsfeature ; anything but
## 'No' is treated as a restart.
## The restart is driven from the host: Restart-Computer -Force inside the guest
## (https://learn.microsoft.com/powershell/module/microsoft.powershell.management/restart-computer?view=powershell-5.1),
## then PowerShell Direct is polled until Win32_OperatingSystem.LastBootUpTime changes
## (https://learn.microsoft.com/windows/win32/cimwin32prov/win32-operatingsystem), which proves the
## guest went down and came back rather than answering before it shut down.
$GuestStep = {
    #@ include lib/windows-guest-start.ps1
    $restartNeeded = $false
    if (-not (Get-WindowsFeature -Name Containers).Installed) {
        $install = Install-WindowsFeature -Name Containers
        if (-not $install.Success) { throw "Install-WindowsFeature Containers failed with exit code $($install.ExitCode)" }
        $restartNeeded = [string]$install.RestartNeeded -ne 'No'
        $changes += "installed the Containers feature (restart needed: $($install.RestartNeeded))"
    }
    [pscustomobject]@{ Changes = $changes; RestartNeeded = $restartNeeded }
}
function Get-GuestBootTime {
    Invoke-Guest -Step { (Get-CimInstance -ClassName Win32_OperatingSystem).LastBootUpTime } -Arguments @()
}
function Restart-Guest {
    $bootedAt = Get-GuestBootTime
    Write-Output "${VmName}: restarting the guest to finish the Containers feature"
    ## The session may drop while the guest shuts down; the boot time below is the real check.
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
