# Set Large Send Offload v2 (IPv4 and IPv6) on the external vSwitch uplinks to $DesiredValue: '0' disables
# it (create), '1', the keyword default, restores it (delete). Rendered by render/hyperv.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs AdapterNames[] Keywords[] DesiredValue
# -RegistryKeyword accepts wildcards (so '*LsoV2IPv4' is also a pattern): the exact keyword is filtered
# after the query. Without -NoRestart the adapter is restarted so the value takes effect ("Many advanced
# properties require restarting the network adapter"), which briefly interrupts traffic through that
# adapter, including VMs on the vSwitch; it only happens when a value actually changes.
# Source: https://learn.microsoft.com/powershell/module/netadapter/set-netadapteradvancedproperty?view=windowsserver2022-ps
foreach ($adapterName in $AdapterNames) {
    $null = Get-NetAdapter -Name $adapterName
    foreach ($keyword in $Keywords) {
        $property = @(Get-NetAdapterAdvancedProperty -Name $adapterName -RegistryKeyword $keyword -ErrorAction SilentlyContinue | Where-Object { $_.RegistryKeyword -eq $keyword })
        if ($property.Count -eq 0) {
            Write-Warning "$adapterName does not expose $keyword; nothing to change"
            continue
        }
        if (@($property[0].RegistryValue)[0] -eq $DesiredValue) {
            Write-Output "${adapterName}: $keyword is already $DesiredValue"
            continue
        }
        Set-NetAdapterAdvancedProperty -InputObject $property[0] -RegistryValue $DesiredValue
        Write-Output "${adapterName}: set $keyword to $DesiredValue (adapter restarted)"
    }
}
