## Create or converge a Hyper-V VM (create and update of the VM resource). Rendered by render/hyperv.py.
## The notes (##) are dropped when the script is rendered: the encoded command must fit CreateProcess's
## limit (render.hyperv.MAX_SSH_COMMAND_CHARS).
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName VmRoot VmDir VhdPath StopTimeoutSec ComputerName GoldenVhdx FirstBootTool FirstBootToolSha256 SwitchName VlanId CpuCount MemoryMB MemoryBytes DiskGB DiskBytes IpAddress PrefixLength Gateway DnsServers[] HeartbeatTimeoutSec PsDirectTimeoutSec
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-stop-vm.ps1
#@ include lib/hyperv-guest-wait.ps1
## $GuestConverge runs inside the guest through PowerShell Direct. Sources (Windows Server 2022 reference)
## are next to each step.
## Byte counts are written out (1048576) instead of PowerShell's 1MB suffix: the suffix is valid
## PowerShell, but tree-sitter-powershell (used by the tests to validate every script) rejects a
## suffixed number after a binary operator, which would hide real syntax errors behind it.
$GuestConverge = {
    param([string]$ComputerName, [string]$IpAddress, [int]$PrefixLength, [string]$Gateway, [string[]]$DnsServers, [string]$MacAddress)
    $ErrorActionPreference = 'Stop'
    Set-StrictMode -Version Latest
    $changes = @()

## Update-HostStorageCache ("equivalent to a VDS Rescan"), needed after an online Resize-VHD:
##   https://learn.microsoft.com/powershell/module/storage/update-hoststoragecache
## Get-PartitionSupportedSize -DriveLetter (.SizeMax), Get-Partition -DriveLetter (.Size),
## Resize-Partition -DriveLetter -Size:
##   https://learn.microsoft.com/powershell/module/storage/resize-partition
    Update-HostStorageCache
    $maxSize = (Get-PartitionSupportedSize -DriveLetter C).SizeMax
    if ((Get-Partition -DriveLetter C).Size -lt ($maxSize - 1048576)) {
        Resize-Partition -DriveLetter C -Size $maxSize
        $changes += "extended C: to $maxSize bytes"
    }

## Get-NetAdapter (.MacAddress as "00-15-5D-..", .InterfaceDescription, .ifIndex):
##   https://learn.microsoft.com/powershell/module/netadapter/get-netadapter
## Get-VMNetworkAdapter (.MacAddress as 12 hex digits, all zeros for a dynamic address not yet
## assigned; read after the VM has started, when Hyper-V has assigned and kept it):
##   https://learn.microsoft.com/powershell/module/hyper-v/get-vmnetworkadapter
## Calico's HNS network puts a vSwitch on the guest NIC; its host vNIC takes the NIC's MAC and IP
## (projectcalico/calico#9693: "the virtual ethernet adapter and the original physical ethernet
## adapter will have ... same mac address"; Azure/acs-engine#4046 shows "vEthernet (Ethernet 2)",
## "Hyper-V Virtual Ethernet Adapter #2", holding the node address). So the guest adapter is the one
## with the VM's MAC address (-eq compares strings case-insensitively), and once that vNIC exists
## (a joined node) the vNIC is the one to use: Windows moved the address there. Counting "Up"
## adapters would find two on every joined node.
    if ($MacAddress -notmatch '^[0-9A-F]{12}$' -or $MacAddress -eq '000000000000') { throw "no MAC address for this VM's adapter: '$MacAddress'" }
    $matching = @(Get-NetAdapter | Where-Object { ($_.MacAddress -replace '-') -eq $MacAddress })
    $adapter = @($matching | Where-Object { $_.InterfaceDescription -like 'Hyper-V Virtual Ethernet*' })
    if ($adapter.Count -eq 0) { $adapter = $matching }
    if ($adapter.Count -ne 1) { throw "expected one guest adapter with MAC $MacAddress (or one vSwitch vNIC), found $($adapter.Count)" }
    $adapter = $adapter[0]
    $ifIndex = $adapter.ifIndex
## Set-NetIPInterface -InterfaceIndex -AddressFamily -Dhcp Disabled; Get-NetIPInterface .Dhcp:
##   https://learn.microsoft.com/powershell/module/nettcpip/set-netipinterface
    if ((Get-NetIPInterface -InterfaceIndex $ifIndex -AddressFamily IPv4).Dhcp -ne 'Disabled') {
        Set-NetIPInterface -InterfaceIndex $ifIndex -AddressFamily IPv4 -Dhcp Disabled
        $changes += 'disabled DHCP'
    }
## Remove-NetIPAddress -InterfaceIndex -IPAddress ("To remove a specific IP address object, use
## the IPv4 Address parameter"), Get-NetIPAddress -InterfaceIndex -AddressFamily -IPAddress:
##   https://learn.microsoft.com/powershell/module/nettcpip/remove-netipaddress
## New-NetIPAddress -InterfaceIndex -IPAddress -PrefixLength -AddressFamily:
##   https://learn.microsoft.com/powershell/module/nettcpip/new-netipaddress
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
## New-NetRoute -InterfaceIndex -DestinationPrefix -NextHop, Get-/Remove-NetRoute (the default
## gateway is the 0.0.0.0/0 route; managed separately so a changed gateway is replaced
## instead of New-NetIPAddress -DefaultGateway failing on an existing route):
##   https://learn.microsoft.com/powershell/module/nettcpip/remove-netroute
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
## Set-DnsClientServerAddress -InterfaceIndex -ServerAddresses; Get-DnsClientServerAddress
## -InterfaceIndex -AddressFamily (.ServerAddresses):
##   https://learn.microsoft.com/powershell/module/dnsclient/set-dnsclientserveraddress
    $currentDns = @((Get-DnsClientServerAddress -InterfaceIndex $ifIndex -AddressFamily IPv4).ServerAddresses)
    if (($currentDns -join ',') -ne ($DnsServers -join ',')) {
        Set-DnsClientServerAddress -InterfaceIndex $ifIndex -ServerAddresses $DnsServers
        $changes += "set DNS servers $($DnsServers -join ', ')"
    }

## Rename-Computer -NewName -Force (takes effect after a restart, which the host performs with
## Stop-VM/Start-VM so it can wait for the guest deterministically):
##   https://learn.microsoft.com/powershell/module/microsoft.powershell.management/rename-computer?view=powershell-5.1
    $renamePending = $false
    if ($env:COMPUTERNAME -ne $ComputerName) {
        Rename-Computer -NewName $ComputerName -Force -WarningAction SilentlyContinue
        $renamePending = $true
        $changes += "renamed computer $env:COMPUTERNAME -> $ComputerName (restart pending)"
    }
    [pscustomobject]@{ Changes = $changes; RenamePending = $renamePending }
}
## Host side. Sources (all Hyper-V module, Windows Server 2022 reference):
## New-VM -Name -Generation (1 or 2) -MemoryStartupBytes -VHDPath (existing VHD) -Path
## ("directory to store the files for the new virtual machine") -SwitchName:
##   https://learn.microsoft.com/powershell/module/hyper-v/new-vm?view=windowsserver2022-ps
## Get-VMHardDiskDrive -VMName (.Path), Start-VM -Name, Get-VM -Name (.State,
## .AutomaticStartAction, .AutomaticStopAction, .CheckpointType), Get-VMProcessor (.Count),
## Get-VMFirmware (.SecureBoot, .SecureBootTemplate), Get-VMNetworkAdapter (.SwitchName):
##   https://learn.microsoft.com/powershell/module/hyper-v/?view=windowsserver2022-ps
$null = New-Item -ItemType Directory -Path $VmDir -Force
$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if (-not $vm) {
    if (Test-Path -LiteralPath $VhdPath) {
        Write-Output "Reusing $VhdPath from an earlier run"
    } else {
## The golden image copied with the node's own password in its first boot's answer file, by the host's tool
## (hyperv-first-boot-disk.ps1, installed by hyperv-host-tool.ps1): read once, its SHA-256 checked, and that text run
## as a script block (no script file is executed, so no execution policy applies, and nothing can swap it between).
        $tool = [IO.File]::ReadAllBytes($FirstBootTool)
        if ([BitConverter]::ToString([Security.Cryptography.SHA256]::Create().ComputeHash($tool)).Replace('-', '') -ne $FirstBootToolSha256) { throw "$FirstBootTool changed" }
        & ([ScriptBlock]::Create([Text.Encoding]::UTF8.GetString($tool))) $GoldenVhdx $VhdPath $GuestCredential
    }
    Write-Output "Creating VM $VmName"
    $vm = New-VM -Name $VmName -Generation 2 -MemoryStartupBytes $MemoryBytes -VHDPath $VhdPath -Path $VmRoot -SwitchName $SwitchName
} elseif (-not (Get-VMHardDiskDrive -VMName $VmName | Where-Object { $_.Path -eq $VhdPath })) {
    throw "VM $VmName exists but is not attached to $VhdPath; refusing to converge a VM it did not create"
}

## These settings, like processor count and static memory, are only changed with the VM off; a new VM
## (Off after New-VM) gets them from the same block that converges an existing one.
## Set-VMProcessor -VMName -Count:
##   https://learn.microsoft.com/powershell/module/hyper-v/set-vmprocessor?view=windowsserver2022-ps
## Set-VMMemory -VMName -DynamicMemoryEnabled -StartupBytes ("the total amount of memory to be
## assigned to a virtual machine with dynamic memory disabled"); Get-VMMemory .Startup:
##   https://learn.microsoft.com/powershell/module/hyper-v/set-vmmemory?view=windowsserver2022-ps
## Set-VMFirmware -VMName -EnableSecureBoot On -SecureBootTemplate <name> (Generation 2 only):
##   https://learn.microsoft.com/powershell/module/hyper-v/set-vmfirmware?view=windowsserver2022-ps
##   The template for Windows guests is "Microsoft Windows" (MicrosoftWindows as the
##   -SecureBootTemplate value): https://learn.microsoft.com/windows-server/virtualization/hyper-v/learn-more/generation-2-virtual-machine-security-settings-for-hyper-v
## Set-VM -AutomaticStartAction (Nothing|StartIfRunning|Start) -AutomaticStopAction
## (TurnOff|Save|ShutDown) -AutomaticCheckpointsEnabled -CheckpointType Disabled ("Block
## creation of checkpoints"):
##   https://learn.microsoft.com/powershell/module/hyper-v/set-vm?view=windowsserver2022-ps
## Automatic actions: Start + ShutDown so a host reboot shuts the node down cleanly and brings
## it back; checkpoints off because restoring a Kubernetes node from a checkpoint rewinds
## kubelet/containerd state behind the control plane's back.
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
## A VM whose guest has joined the cluster (C:\etc\kubernetes\kubelet.conf, written by kubeadm join)
## is never stopped by the converge: with it running, such a change stops with instructions instead
## (drain, stop, update, uncordon: one node at a time, by the operator), so no Pulumi run can take
## down several Windows nodes at once or one that still carries workloads.
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

## Connect-VMNetworkAdapter -VMName -SwitchName:
##   https://learn.microsoft.com/powershell/module/hyper-v/connect-vmnetworkadapter?view=windowsserver2022-ps
$adapters = @(Get-VMNetworkAdapter -VMName $VmName)
if ($adapters.Count -ne 1) { throw "VM $VmName has $($adapters.Count) network adapters; expected exactly one" }
if ($adapters[0].SwitchName -ne $SwitchName) {
    Connect-VMNetworkAdapter -VMName $VmName -SwitchName $SwitchName
    Write-Output "Connected $VmName to switch $SwitchName"
}
## Set-VMNetworkAdapterVlan -VMName -Access -VlanId / -Untagged ("Access, Trunk, Private VLAN
## ... and untagged are mutually exclusive"); Get-VMNetworkAdapterVlan .OperationMode and .AccessVlanId:
##   https://learn.microsoft.com/powershell/module/hyper-v/set-vmnetworkadaptervlan?view=windowsserver2022-ps
## $VlanId 0 means untagged (Set-VMNetworkAdapterVlan -Untagged): VLAN IDs are 1-4094, so 0 is
## never a VLAN, and the inputs have no null.
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

## Get-VHD -Path (.Size) and Resize-VHD -Path -SizeBytes: a VHDX on the SCSI chain of a running
## VM (every Generation 2 disk) can be resized online:
##   https://learn.microsoft.com/powershell/module/hyper-v/resize-vhd?view=windowsserver2022-ps
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
