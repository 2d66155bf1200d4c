# Make a running guest take its node's Administrator password (the first line of stdin), before the VM's converge
# and every later step sign in with it. A guest that refuses it but takes one of the earlier passwords (the lines
# after: the node's previous version, those derived from windowsAdminPasswordPrevious, the one password nodes of
# earlier releases shared) gets the node's set; a VM not created yet is left to the converge, which gives a new VM
# its password before its first boot; a VM that exists but is not running stops the step. docs/lifecycle.md, "Rotating credentials".
## Set-LocalUser -Name -Password (Microsoft.PowerShell.LocalAccounts, Windows Server 2016 and later):
## https://learn.microsoft.com/powershell/module/microsoft.powershell.localaccounts/set-localuser . The
## password travels as an argument over PowerShell Direct's VMBus channel, never on a command line.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec
#@ include lib/hyperv-read-guest-password.ps1
$earlier = @()
while ($null -ne ($line = [Console]::In.ReadLine()) -and $line -ne '') { $earlier += $line }
$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if (-not $vm) {
    Write-Output "${VmName}: not created yet; the converge gives a new VM its password before it first starts"
    return
}
## A stopped guest cannot be asked, and the converge would start it and sign in with a password it may not have yet:
## stop here, so that this step runs again once the VM runs.
if ($vm.State -ne 'Running') { throw "${VmName} is $($vm.State): start it (Start-VM) and run the update again, so that its password can be checked before the converge signs in" }
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
$previous = $null
foreach ($candidate in $earlier) {
    $credential = New-Object System.Management.Automation.PSCredential('Administrator', (ConvertTo-SecureString -String $candidate -AsPlainText -Force))
    if (Test-GuestCredential $credential) { $previous = $credential; break }
}
Remove-Variable -Name earlier
Remove-Variable -Name candidate -ErrorAction SilentlyContinue
if ($null -eq $previous) {
    throw "${VmName}: the guest refuses its node's Administrator password and every earlier one. A node of an earlier release has windowsAdminPassword itself: rotate it (windowsAdminPasswordPrevious set to it, a new windowsAdminPassword; docs/lifecycle.md) and run the update again"
}
$current = $GuestCredential.GetNetworkCredential().Password
Invoke-Command -VMName $VmName -Credential $previous -ArgumentList $current -ScriptBlock {
    param([string]$Password)
    Set-LocalUser -Name 'Administrator' -Password (ConvertTo-SecureString -String $Password -AsPlainText -Force)
}
Remove-Variable -Name current
if (-not (Test-GuestCredential $GuestCredential)) { throw "${VmName}: the guest still refuses its password after it was set" }
Write-Output "${VmName}: the guest had an earlier Administrator password; it now has its node's own"
