$plainPassword = [Console]::In.ReadLine()
if ([string]::IsNullOrEmpty($plainPassword)) { throw 'Expected the guest Administrator password as the first line of stdin' }
$GuestCredential = New-Object System.Management.Automation.PSCredential('Administrator', (ConvertTo-SecureString -String $plainPassword -AsPlainText -Force))
Remove-Variable -Name plainPassword
