## Wait-Heartbeat and Wait-PowerShellDirect read $VmName, $GuestCredential, $HeartbeatTimeoutSec and
## $PsDirectTimeoutSec.
## Heartbeat: Get-VMIntegrationService -VMName -Name returns the integration service object.
## Source: https://learn.microsoft.com/powershell/module/hyper-v/get-vmintegrationservice?view=windowsserver2022-ps
function Wait-Heartbeat {
    $deadline = (Get-Date).AddSeconds($HeartbeatTimeoutSec)
    while ((Get-VMIntegrationService -VMName $VmName -Name 'Heartbeat').PrimaryStatusDescription -ne 'OK') {
        if ((Get-Date) -gt $deadline) {
            throw "Timed out after $HeartbeatTimeoutSec s waiting for the Heartbeat integration service of $VmName to report OK"
        }
        Start-Sleep -Seconds 5
    }
}
## PowerShell Direct: Invoke-Command -VMName <name> -Credential <guest credential>; it needs the VM
## running on this host and a guest that has completed setup.
## Source: https://learn.microsoft.com/virtualization/hyper-v-on-windows/user-guide/powershell-direct
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
