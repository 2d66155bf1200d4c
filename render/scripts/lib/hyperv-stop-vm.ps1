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
