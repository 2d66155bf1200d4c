## Stop-VmBounded: Stop-VM shuts down "through the guest operating system"; -Force gives the guest "five
## minutes to save data and shut down"; -TurnOff "is equivalent to disconnecting the power"; -AsJob "Runs
## the cmdlet as a background job". Reads $VmName and $StopTimeoutSec.
## Source: https://learn.microsoft.com/powershell/module/hyper-v/stop-vm?view=windowsserver2022-ps
function Stop-VmBounded([string]$Reason) {
    Write-Output "Stopping ${VmName}: $Reason"
    $job = Stop-VM -Name $VmName -Force -AsJob
    if (-not (Wait-Job -Job $job -Timeout $StopTimeoutSec)) { Stop-Job -Job $job }
    Remove-Job -Job $job -Force
    if ((Get-VM -Name $VmName).State -ne 'Off') {
        Write-Output "Guest shutdown did not finish within $StopTimeoutSec s; turning $VmName off"
        Stop-VM -Name $VmName -TurnOff -Force
    }
}
