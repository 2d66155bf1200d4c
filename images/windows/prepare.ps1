# Inside the golden image build (images/windows/windows.pkr.hcl): what every Windows node needs before
# its first boot. Safe to run twice.
$ErrorActionPreference = 'Stop'
Set-StrictMode -Version Latest

# The Containers feature (process-isolated Windows containers); render/windows_bootstrap.py checks it
# again and only installs and reboots when it is missing.
if (-not (Get-WindowsFeature -Name Containers).Installed) {
    $install = Install-WindowsFeature -Name Containers
    if (-not $install.Success) { throw "Install-WindowsFeature Containers failed with exit code $($install.ExitCode)" }
    Write-Output "Installed the Containers feature (restart needed: $($install.RestartNeeded))"
}

# C: must stay the last partition, so render/hyperv.py can extend it after growing the VHDX.
$last = Get-Partition -DiskNumber (Get-Partition -DriveLetter C).DiskNumber | Sort-Object -Property Offset | Select-Object -Last 1
if ($last.DriveLetter -ne 'C') { throw "C: is not the last partition on its disk (partition $($last.PartitionNumber) follows it)" }

# After setup on each clone: remove what the build opened for Packer (autounattend.pkrtpl.xml): every WinRM
# listener, the build's self-signed certificate and its firewall rule, and make sure Basic authentication and
# unencrypted WinRM are off (SetupComplete.cmd runs once, as SYSTEM, at the end of setup:
# https://learn.microsoft.com/windows-hardware/manufacture/desktop/add-a-custom-script-to-windows-setup).
$scripts = 'C:\Windows\Setup\Scripts'
$null = New-Item -ItemType Directory -Path $scripts -Force
Set-Content -Path (Join-Path $scripts 'SetupComplete.cmd') -Encoding ASCII -Value @(
    '@echo off',
    'powershell.exe -NoProfile -ExecutionPolicy Bypass -Command "Remove-Item -Path WSMan:\Localhost\Listener\* -Recurse -Force; Set-Item WSMan:\localhost\Service\Auth\Basic $false; Set-Item WSMan:\localhost\Service\AllowUnencrypted $false; Get-ChildItem Cert:\LocalMachine\My | Where-Object { $_.Subject -eq ''CN=packer-build'' } | Remove-Item; Remove-NetFirewallRule -Name packer-winrm-https -ErrorAction SilentlyContinue; Disable-NetFirewallRule -Name WINRM-HTTP-In-TCP"'
)
Write-Output 'Golden image prepared'
