## Sets $GuestCredential. The password is the first line of stdin (remote.Command's `stdin`), so it is
## never on a command line, in the environment or in Pulumi's logged command. ConvertTo-SecureString
## -AsPlainText -Force and PSCredential are what Invoke-Command -Credential takes.
## Source: https://learn.microsoft.com/powershell/module/microsoft.powershell.security/convertto-securestring?view=powershell-5.1
$plainPassword = [Console]::In.ReadLine()
if ([string]::IsNullOrEmpty($plainPassword)) { throw 'Expected the guest Administrator password as the first line of stdin' }
$GuestCredential = New-Object System.Management.Automation.PSCredential('Administrator', (ConvertTo-SecureString -String $plainPassword -AsPlainText -Force))
Remove-Variable -Name plainPassword
