# Activate Windows in a node VM, by KMS or AVMA. Rendered by render/windows_activation.py (sources there).
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName Mode KeyEditions[] KeyValues[] KmsHost KmsPort AvmaTimeoutSec KvpService HeartbeatTimeoutSec PsDirectTimeoutSec
## Edition -> public key (KeyEditions[i] takes KeyValues[i]).
$ProductKeys = @{}
for ($i = 0; $i -lt $KeyEditions.Count; $i++) { $ProductKeys[$KeyEditions[$i]] = $KeyValues[$i] }
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1

## Runs in the guest. Every licensing call goes through Invoke-Licensing so a non-zero ReturnValue stops
## the script; Activate() is only called when the status is not already licensed (KMS activation renews
## itself afterwards: a re-run changes nothing).
$GuestActivate = {
    param([string]$Mode, [hashtable]$ProductKeys, [string]$KmsHost, [int]$KmsPort, [int]$AvmaTimeoutSec)
    $ErrorActionPreference = 'Stop'
    Set-StrictMode -Version Latest
    function Invoke-Licensing($Target, [string]$Method, [hashtable]$Arguments = @{}) {
        $result = Invoke-CimMethod -InputObject $Target -MethodName $Method -Arguments $Arguments
        if ($result.ReturnValue -ne 0) { throw "$Method returned $($result.ReturnValue)" }
    }
    $filter = "ApplicationID='55c92734-d682-4d71-983e-d6ec3f16059f' AND PartialProductKey IS NOT NULL"
    function Get-WindowsLicense { @(Get-CimInstance -ClassName SoftwareLicensingProduct -Filter $filter) }
    $changes = @()

    $edition = (Get-WindowsEdition -Online).Edition
    if (-not $ProductKeys.ContainsKey($edition)) {
        throw "no $Mode key for edition $edition (known: $($ProductKeys.Keys -join ', ')); convert an evaluation image with DISM /Set-Edition first"
    }
    $key = $ProductKeys[$edition]
    $service = Get-CimInstance -ClassName SoftwareLicensingService
    $license = Get-WindowsLicense
    if ($license.Count -ne 1 -or $license[0].PartialProductKey -ne $key.Substring($key.Length - 5)) {
        Invoke-Licensing $service 'InstallProductKey' @{ ProductKey = $key }
        $changes += "installed the $Mode key of $edition"
    }
    if ($Mode -eq 'kms' -and ($service.KeyManagementServiceMachine -ne $KmsHost -or $service.KeyManagementServicePort -ne $KmsPort)) {
        Invoke-Licensing $service 'SetKeyManagementServiceMachine' @{ MachineName = $KmsHost }
        Invoke-Licensing $service 'SetKeyManagementServicePort' @{ PortNumber = [uint32]$KmsPort }
        $changes += "set the KMS host to ${KmsHost}:$KmsPort"
    }
    Invoke-Licensing $service 'RefreshLicenseStatus'
    $license = Get-WindowsLicense
    if ($license.Count -ne 1) { throw "expected one installed Windows product key, found $($license.Count)" }
    if ($license[0].LicenseStatus -ne 1) {
        if ($Mode -eq 'kms') {
            Invoke-Licensing $license[0] 'Activate'
            $changes += "activated against ${KmsHost}:$KmsPort"
        } else {
            $deadline = (Get-Date).AddSeconds($AvmaTimeoutSec)
            while ($license[0].LicenseStatus -ne 1) {
                if ((Get-Date) -gt $deadline) {
                    throw "not activated by the Hyper-V host within $AvmaTimeoutSec s (AVMA needs an activated Datacenter host; see event 12309 in the guest's Application log)"
                }
                Start-Sleep -Seconds 10
                Invoke-Licensing $service 'RefreshLicenseStatus'
                $license = Get-WindowsLicense
            }
            $changes += 'activated by the Hyper-V host (AVMA)'
        }
        $license = Get-WindowsLicense
        if ($license[0].LicenseStatus -ne 1) { throw "Windows is still not activated (LicenseStatus $($license[0].LicenseStatus))" }
    }
    $changes
}
if ($Mode -eq 'avma') {
    $kvp = Get-VMIntegrationService -VMName $VmName -Name $KvpService
    if (-not $kvp.Enabled) {
        Enable-VMIntegrationService -VMName $VmName -Name $KvpService
        Write-Output "${VmName}: enabled the $KvpService integration service (AVMA runs over it)"
    }
}
Wait-Heartbeat
Wait-PowerShellDirect
$changes = @(Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock $GuestActivate -ArgumentList $Mode, $ProductKeys, $KmsHost, $KmsPort, $AvmaTimeoutSec)
foreach ($change in $changes) { Write-Output "${VmName}: $change" }
if ($changes.Count -eq 0) { Write-Output "${VmName}: already activated ($Mode)" }
