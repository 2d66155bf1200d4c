# Make a running guest take the current windowsAdminPassword (the first line of stdin), before the VM's
# converge and every later step sign in with it. A guest that refuses it but takes windowsAdminPasswordPrevious
# (the optional second line) gets the current one set; a VM not created yet is left to the converge, which
# signs in with the password its golden image carries. README, Day-2: rotating credentials.
## Set-LocalUser -Name -Password (Microsoft.PowerShell.LocalAccounts, Windows Server 2016 and later):
## https://learn.microsoft.com/powershell/module/microsoft.powershell.localaccounts/set-localuser . The
## password travels as an argument over PowerShell Direct's VMBus channel, never on a command line.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec
#@ include lib/hyperv-read-guest-password.ps1
$previousPassword = [Console]::In.ReadLine()
$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if (-not $vm -or $vm.State -ne 'Running') {
    Write-Output "${VmName}: not running yet; the converge signs in with the golden image's password"
    return
}
#@ include lib/hyperv-guest-wait.ps1
Wait-Heartbeat
function Test-GuestCredential([System.Management.Automation.PSCredential]$Credential) {
    try {
        $null = Invoke-Command -VMName $VmName -Credential $Credential -ScriptBlock { $env:COMPUTERNAME }
        return $true
    } catch {
        return $false
    }
}
if (Test-GuestCredential $GuestCredential) {
    Write-Output "${VmName}: the guest takes the current Administrator password"
    return
}
if ([string]::IsNullOrEmpty($previousPassword)) {
    throw "${VmName}: the guest refuses windowsAdminPassword. If it still has an earlier password, set windowsAdminPasswordPrevious to it and run the update again"
}
$previous = New-Object System.Management.Automation.PSCredential('Administrator', (ConvertTo-SecureString -String $previousPassword -AsPlainText -Force))
Remove-Variable -Name previousPassword
if (-not (Test-GuestCredential $previous)) {
    throw "${VmName}: the guest refuses both windowsAdminPassword and windowsAdminPasswordPrevious"
}
$current = $GuestCredential.GetNetworkCredential().Password
Invoke-Command -VMName $VmName -Credential $previous -ArgumentList $current -ScriptBlock {
    param([string]$Password)
    Set-LocalUser -Name 'Administrator' -Password (ConvertTo-SecureString -String $Password -AsPlainText -Force)
}
Remove-Variable -Name current
if (-not (Test-GuestCredential $GuestCredential)) { throw "${VmName}: the guest still refuses the current password after it was set" }
Write-Output "${VmName}: the guest had the previous Administrator password; it now has the current one"
