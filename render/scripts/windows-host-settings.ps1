# Time, DNS suffix, dynamic ports and node firewall rules in a Windows node VM. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec NtpServers[] SearchDomain TimeZone PortStart PortCount RuleNames[] RulePorts[] RuleSources[] GuardName GuardSources[] GuardPorts[]
$Step = 'time, port and firewall settings'
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
## w32time: `w32tm /config /manualpeerlist:<space-delimited peers> /syncfromflags:manual /update`;
## the configuration lives in HKLM\SYSTEM\CurrentControlSet\Services\W32Time\Parameters (NtpServer,
## Type = NTP for a manual peer list):
## https://learn.microsoft.com/windows-server/networking/windows-time-service/windows-time-service-tools-and-settings
## The service is made Automatic (Set-Service -StartupType; Get-Service .StartType):
## https://learn.microsoft.com/powershell/module/microsoft.powershell.management/set-service?view=powershell-5.1
## Dynamic ports: `netsh int ipv4 set dynamicport tcp|udp start=N num=M`
## (https://learn.microsoft.com/troubleshoot/windows-server/networking/default-dynamic-port-range-tcpip-chang),
## read back with Get-NetTCPSetting / Get-NetUDPSetting .DynamicPortRangeStartPort and
## .DynamicPortRangeNumberOfPorts, which do not depend on the display language:
## https://learn.microsoft.com/powershell/module/nettcpip/get-netudpsetting
## Firewall: New-NetFirewallRule -Name -Direction Inbound -Protocol TCP -LocalPort 10250 -Action Allow,
## as PrepareNode.ps1 and image-builder tasks/kubelet.yml open the kubelet port, here only from the cluster's networks
## (-RemoteAddress, $RuleSources), set again on every run as the guard below is:
## https://learn.microsoft.com/powershell/module/netsecurity/new-netfirewallrule
## The pod guard ($GuardName): a Block rule for TCP to the administrative ports from the pod network
## (render/windows_bootstrap.py POD_GUARD_FIREWALL_RULE says why), made when missing and otherwise set again with
## Set-NetFirewallRule, which changes nothing when the rule is as wanted (Windows stores an address as
## address/mask, so reading it back would not compare with the CIDR):
## https://learn.microsoft.com/powershell/module/netsecurity/set-netfirewallrule
## DNS suffix: Set-DnsClientGlobalSetting -SuffixSearchList, read back with Get-DnsClientGlobalSetting
## .SuffixSearchList: the suffix a short name is tried with, as the Linux nodes search network.searchDomain; left as it
## is without one:
## https://learn.microsoft.com/powershell/module/dnsclient/set-dnsclientglobalsetting
## Time zone: Set-TimeZone -Id <Windows ID> (Windows PowerShell 5.1), read back with Get-TimeZone .Id; the ID is the
## CLDR match of the stack's IANA `timezone` (vocab/time_zones.py), as the Linux nodes' timedatectl set-timezone:
## https://learn.microsoft.com/powershell/module/microsoft.powershell.management/set-timezone
## Profiles: Get-NetFirewallProfile .Name, .Enabled:
## https://learn.microsoft.com/powershell/module/netsecurity/get-netfirewallprofile
$GuestStep = {
    param([string[]]$NtpServers, [string]$SearchDomain, [string]$TimeZone, [int]$PortStart, [int]$PortCount, [string[]]$RuleNames, [int[]]$RulePorts,
        [string[]]$RuleSources, [string]$GuardName, [string[]]$GuardSources, [int[]]$GuardPorts)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
## The first boot's answer file held this node's password (hyperv-first-boot-disk.ps1); OOBE has used it, and
## Microsoft's "Windows Setup Automation Overview" advises deleting the cached copy after Setup.
    $answer = 'C:\Windows\Panther\unattend.xml'
    if (Test-Path -LiteralPath $answer) {
        Remove-Item -LiteralPath $answer -Force
        $changes += 'removed the first boot answer file'
    }
    $w32time = Get-Service -Name W32Time
    if ($w32time.StartType -ne 'Automatic') {
        Set-Service -Name W32Time -StartupType Automatic
        $changes += 'w32time service set to Automatic'
    }
    if ((Get-Service -Name W32Time).Status -ne 'Running') {
        Start-Service -Name W32Time
        $changes += 'started w32time'
    }
    $peers = $NtpServers -join ' '
    $timeConfig = Get-ItemProperty -Path 'HKLM:\SYSTEM\CurrentControlSet\Services\W32Time\Parameters'
    if ($timeConfig.NtpServer -ne $peers -or $timeConfig.Type -ne 'NTP') {
        $null = Invoke-Checked 'w32tm.exe' @('/config', "/manualpeerlist:$peers", '/syncfromflags:manual', '/update')
        $changes += "w32time peers set to $peers"
    }
    if ($SearchDomain -and (@((Get-DnsClientGlobalSetting).SuffixSearchList) -join ',') -ne $SearchDomain) {
        Set-DnsClientGlobalSetting -SuffixSearchList @($SearchDomain)
        $changes += "DNS suffix search list set to $SearchDomain"
    }
    if ($TimeZone -and (Get-TimeZone).Id -ne $TimeZone) {
        Set-TimeZone -Id $TimeZone
        $changes += "time zone set to $TimeZone"
    }
    foreach ($protocol in @('tcp', 'udp')) {
        if ($protocol -eq 'tcp') { $current = Get-NetTCPSetting -SettingName Internet } else { $current = @(Get-NetUDPSetting)[0] }
        if ($current.DynamicPortRangeStartPort -ne $PortStart -or $current.DynamicPortRangeNumberOfPorts -ne $PortCount) {
            $null = Invoke-Checked 'netsh.exe' @('int', 'ipv4', 'set', 'dynamicport', $protocol, "start=$PortStart", "num=$PortCount")
            $changes += "$protocol dynamic ports set to $PortStart + $PortCount"
        }
    }
    for ($i = 0; $i -lt $RuleNames.Count; $i++) {
        if (-not (Get-NetFirewallRule -Name $RuleNames[$i] -ErrorAction SilentlyContinue)) {
            $null = New-NetFirewallRule -Name $RuleNames[$i] -DisplayName $RuleNames[$i] -Direction Inbound -Protocol TCP -LocalPort $RulePorts[$i] -RemoteAddress $RuleSources -Action Allow -Enabled True
            $changes += "firewall rule $($RuleNames[$i]) allows TCP $($RulePorts[$i]) in from $($RuleSources -join ',')"
        } else {
            Set-NetFirewallRule -Name $RuleNames[$i] -Direction Inbound -Protocol TCP -LocalPort $RulePorts[$i] -RemoteAddress $RuleSources -Action Allow -Enabled True
        }
    }
    $guard = Get-NetFirewallRule -Name $GuardName -ErrorAction SilentlyContinue
    if ($GuardSources.Count -gt 0) {
        if (-not $guard) {
            $null = New-NetFirewallRule -Name $GuardName -DisplayName $GuardName -Direction Inbound -Protocol TCP -LocalPort $GuardPorts -RemoteAddress $GuardSources -Action Block -Enabled True
            $changes += "firewall rule $GuardName blocks TCP $($GuardPorts -join ',') from $($GuardSources -join ',')"
        } else {
            Set-NetFirewallRule -Name $GuardName -Direction Inbound -Protocol TCP -LocalPort $GuardPorts -RemoteAddress $GuardSources -Action Block -Enabled True
        }
        # A rule of a profile that is off does nothing: said on every run, since turning a profile on is the site's call.
        $off = @(Get-NetFirewallProfile | Where-Object { -not $_.Enabled } | ForEach-Object { $_.Name })
        if ($off.Count -gt 0) {
            $changes += "warning: firewall profile(s) $($off -join ', ') off, where $GuardName blocks nothing"
        }
    } elseif ($guard) {
        Remove-NetFirewallRule -Name $GuardName
        $changes += "firewall rule $GuardName removed (security.networkPolicy is off)"
    }
    [pscustomobject]@{ Changes = $changes }
}
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @($NtpServers, $SearchDomain, $TimeZone, $PortStart, $PortCount, $RuleNames, $RulePorts, $RuleSources, $GuardName, $GuardSources, $GuardPorts)
#@ include lib/windows-host-report.ps1
