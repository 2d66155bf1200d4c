# Create or converge a Hyper-V VM. See render/hyperv.py for its comments.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName VmRoot VmDir VhdPath StopTimeoutSec ComputerName GoldenVhdx SwitchName VlanId CpuCount MemoryMB MemoryBytes DiskGB DiskBytes IpAddress PrefixLength Gateway DnsServers[] HeartbeatTimeoutSec PsDirectTimeoutSec
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-stop-vm.ps1
#@ include lib/hyperv-guest-wait.ps1
$GuestConverge = {
    param([string]$ComputerName, [string]$IpAddress, [int]$PrefixLength, [string]$Gateway, [string[]]$DnsServers, [string]$MacAddress)
    $ErrorActionPreference = 'Stop'
    Set-StrictMode -Version Latest
    $changes = @()

    Update-HostStorageCache
    $maxSize = (Get-PartitionSupportedSize -DriveLetter C).SizeMax
    if ((Get-Partition -DriveLetter C).Size -lt ($maxSize - 1048576)) {
        Resize-Partition -DriveLetter C -Size $maxSize
        $changes += "extended C: to $maxSize bytes"
    }

    if ($MacAddress -notmatch '^[0-9A-F]{12}$' -or $MacAddress -eq '000000000000') { throw "no MAC address for this VM's adapter: '$MacAddress'" }
    $matching = @(Get-NetAdapter | Where-Object { ($_.MacAddress -replace '-') -eq $MacAddress })
    $adapter = @($matching | Where-Object { $_.InterfaceDescription -like 'Hyper-V Virtual Ethernet*' })
    if ($adapter.Count -eq 0) { $adapter = $matching }
    if ($adapter.Count -ne 1) { throw "expected one guest adapter with MAC $MacAddress (or one vSwitch vNIC), found $($adapter.Count)" }
    $adapter = $adapter[0]
    $ifIndex = $adapter.ifIndex
    if ((Get-NetIPInterface -InterfaceIndex $ifIndex -AddressFamily IPv4).Dhcp -ne 'Disabled') {
        Set-NetIPInterface -InterfaceIndex $ifIndex -AddressFamily IPv4 -Dhcp Disabled
        $changes += 'disabled DHCP'
    }
    foreach ($address in @(Get-NetIPAddress -InterfaceIndex $ifIndex -AddressFamily IPv4 -ErrorAction SilentlyContinue)) {
        if ($address.IPAddress -ne $IpAddress -or $address.PrefixLength -ne $PrefixLength) {
            Remove-NetIPAddress -InterfaceIndex $ifIndex -IPAddress $address.IPAddress -Confirm:$false
            $changes += "removed $($address.IPAddress)/$($address.PrefixLength)"
        }
    }
    if (-not (Get-NetIPAddress -InterfaceIndex $ifIndex -AddressFamily IPv4 -IPAddress $IpAddress -ErrorAction SilentlyContinue)) {
        $null = New-NetIPAddress -InterfaceIndex $ifIndex -AddressFamily IPv4 -IPAddress $IpAddress -PrefixLength $PrefixLength
        $changes += "set $IpAddress/$PrefixLength"
    }
    $routes = @(Get-NetRoute -InterfaceIndex $ifIndex -DestinationPrefix '0.0.0.0/0' -ErrorAction SilentlyContinue)
    foreach ($route in $routes) {
        if ($route.NextHop -ne $Gateway) {
            Remove-NetRoute -InterfaceIndex $ifIndex -DestinationPrefix '0.0.0.0/0' -NextHop $route.NextHop -Confirm:$false
            $changes += "removed gateway $($route.NextHop)"
        }
    }
    if (-not ($routes | Where-Object { $_.NextHop -eq $Gateway })) {
        $null = New-NetRoute -InterfaceIndex $ifIndex -DestinationPrefix '0.0.0.0/0' -NextHop $Gateway
        $changes += "set gateway $Gateway"
    }
    $currentDns = @((Get-DnsClientServerAddress -InterfaceIndex $ifIndex -AddressFamily IPv4).ServerAddresses)
    if (($currentDns -join ',') -ne ($DnsServers -join ',')) {
        Set-DnsClientServerAddress -InterfaceIndex $ifIndex -ServerAddresses $DnsServers
        $changes += "set DNS servers $($DnsServers -join ', ')"
    }

    $renamePending = $false
    if ($env:COMPUTERNAME -ne $ComputerName) {
        Rename-Computer -NewName $ComputerName -Force -WarningAction SilentlyContinue
        $renamePending = $true
        $changes += "renamed computer $env:COMPUTERNAME -> $ComputerName (restart pending)"
    }
    [pscustomobject]@{ Changes = $changes; RenamePending = $renamePending }
}
$null = New-Item -ItemType Directory -Path $VmDir -Force
$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if (-not $vm) {
    if (Test-Path -LiteralPath $VhdPath) {
        Write-Output "Reusing $VhdPath from an earlier run"
    } else {
        if (-not (Test-Path -LiteralPath $GoldenVhdx)) { throw "Golden image $GoldenVhdx does not exist" }
        Write-Output "Copying $GoldenVhdx to $VhdPath"
        $partialPath = "$VhdPath.partial"
        Copy-Item -LiteralPath $GoldenVhdx -Destination $partialPath -Force
        Move-Item -LiteralPath $partialPath -Destination $VhdPath
    }
    Write-Output "Creating VM $VmName"
    $vm = New-VM -Name $VmName -Generation 2 -MemoryStartupBytes $MemoryBytes -VHDPath $VhdPath -Path $VmRoot -SwitchName $SwitchName
} elseif (-not (Get-VMHardDiskDrive -VMName $VmName | Where-Object { $_.Path -eq $VhdPath })) {
    throw "VM $VmName exists but is not attached to $VhdPath; refusing to converge a VM this script did not create"
}

$offChanges = @()
if ((Get-VMProcessor -VMName $VmName).Count -ne $CpuCount) { $offChanges += "processor count -> $CpuCount" }
$memory = Get-VMMemory -VMName $VmName
if ($memory.DynamicMemoryEnabled -or $memory.Startup -ne $MemoryBytes) { $offChanges += "static memory -> $MemoryMB MB" }
$firmware = Get-VMFirmware -VMName $VmName
if ($firmware.SecureBoot -ne 'On' -or $firmware.SecureBootTemplate -ne 'MicrosoftWindows') { $offChanges += 'Secure Boot (MicrosoftWindows)' }
$vm = Get-VM -Name $VmName
if ($vm.AutomaticStartAction -ne 'Start' -or $vm.AutomaticStopAction -ne 'ShutDown' -or $vm.CheckpointType -ne 'Disabled') {
    $offChanges += 'automatic start/stop actions and checkpoints'
}
if ($offChanges.Count -gt 0) {
    if ($vm.State -ne 'Off') {
        if (Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock { Test-Path 'C:\etc\kubernetes\kubelet.conf' }) {
            throw "$VmName is a joined node and needs to be off for: $($offChanges -join '; '). Drain it, stop the VM, run the update again, uncordon it (README: Day-2 operations)"
        }
        Stop-VmBounded -Reason ('these settings need the VM off: ' + ($offChanges -join '; '))
    }
    Set-VMProcessor -VMName $VmName -Count $CpuCount
    Set-VMMemory -VMName $VmName -DynamicMemoryEnabled $false -StartupBytes $MemoryBytes
    Set-VMFirmware -VMName $VmName -EnableSecureBoot On -SecureBootTemplate 'MicrosoftWindows'
    Set-VM -Name $VmName -AutomaticStartAction Start -AutomaticStopAction ShutDown -AutomaticCheckpointsEnabled $false -CheckpointType Disabled
    Write-Output ('Applied: ' + ($offChanges -join '; '))
}

$adapters = @(Get-VMNetworkAdapter -VMName $VmName)
if ($adapters.Count -ne 1) { throw "VM $VmName has $($adapters.Count) network adapters; expected exactly one" }
if ($adapters[0].SwitchName -ne $SwitchName) {
    Connect-VMNetworkAdapter -VMName $VmName -SwitchName $SwitchName
    Write-Output "Connected $VmName to switch $SwitchName"
}
$vlan = Get-VMNetworkAdapterVlan -VMName $VmName
if ($VlanId -eq 0) {
    if ($vlan.OperationMode -ne 'Untagged') {
        Set-VMNetworkAdapterVlan -VMName $VmName -Untagged
        Write-Output "Set $VmName NIC to untagged"
    }
} elseif ($vlan.OperationMode -ne 'Access' -or $vlan.AccessVlanId -ne $VlanId) {
    Set-VMNetworkAdapterVlan -VMName $VmName -Access -VlanId $VlanId
    Write-Output "Set $VmName NIC to access VLAN $VlanId"
}

$vhd = Get-VHD -Path $VhdPath
if ($vhd.Size -lt $DiskBytes) {
    Resize-VHD -Path $VhdPath -SizeBytes $DiskBytes
    Write-Output "Grew $VhdPath to $DiskGB GiB"
} elseif ($vhd.Size -gt $DiskBytes) {
    Write-Warning "$VhdPath is $($vhd.Size) bytes, more than the requested $DiskGB GiB; disks are never shrunk"
}

if ((Get-VM -Name $VmName).State -ne 'Running') {
    Start-VM -Name $VmName
    Write-Output "Started $VmName"
}
Wait-Heartbeat
Wait-PowerShellDirect

$macAddress = (Get-VMNetworkAdapter -VMName $VmName).MacAddress
$guest = @(Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock $GuestConverge -ArgumentList $ComputerName, $IpAddress, $PrefixLength, $Gateway, $DnsServers, $macAddress)[-1]
foreach ($change in $guest.Changes) { Write-Output "Guest: $change" }
if ($guest.RenamePending) {
    Stop-VmBounded -Reason "restart to apply computer name $ComputerName"
    Start-VM -Name $VmName
    Wait-Heartbeat
    Wait-PowerShellDirect -ExpectedName $ComputerName
}

Write-Output ('VM {0}: state {1}, computer name {2}, IPv4 {3}/{4}' -f $VmName, (Get-VM -Name $VmName).State, $ComputerName, $IpAddress, $PrefixLength)
