function Wait-Heartbeat {
    $deadline = (Get-Date).AddSeconds($HeartbeatTimeoutSec)
    while ((Get-VMIntegrationService -VMName $VmName -Name 'Heartbeat').PrimaryStatusDescription -ne 'OK') {
        if ((Get-Date) -gt $deadline) {
            throw "Timed out after $HeartbeatTimeoutSec s waiting for the Heartbeat integration service of $VmName to report OK"
        }
        Start-Sleep -Seconds 5
    }
}
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
