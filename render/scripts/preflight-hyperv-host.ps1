# Preflight, on one Hyper-V host: what the program's Hyper-V steps need here. Reads only, unless MountImages: then each
# golden image is attached read-only for a moment to read its Windows build. Prints one JSON line.
## Each part is read on its own (a failing cmdlet is reported, the rest still read). Windows PowerShell 5.1's
## ConvertTo-Json writes enums as numbers and has no -EnumsAsStrings (PowerShell 6.2+), so every enum is cast to
## [string]; non-ASCII characters are escaped so the console's code page cannot change the one line parsed.
##   https://learn.microsoft.com/powershell/module/microsoft.powershell.utility/convertto-json?view=powershell-5.1
## OpenSSH's DefaultShell is read before (tools/preflight/hosts.py): this probe runs only under PowerShell.
## Get-WindowsFeature Hyper-V / Hyper-V-PowerShell (.InstallState), Win32_ComputerSystem.HypervisorPresent, the vmms
## service, Get-VMSwitch .SwitchType (Private, Internal, External), Get-VHD .VhdFormat/.VhdType/.Attached/.FileSize/
## .Size, Get-Volume -FilePath .SizeRemaining.
## The build is read as the first-boot disk is made (hyperv-first-boot-disk.ps1): Mount-VHD -ReadOnly -NoDriveLetter,
## the last Basic partition on a folder access path, ntoskrnl.exe's file version, then everything undone; under the
## same machine-wide mutex, since a golden image and a copy of it share a GPT disk GUID.
#@ include lib/hyperv-preamble.ps1
#@ inputs SwitchName VmFolder GoldenKeys[] GoldenPaths[] MountImages VmNames[] Addresses[] Gateway DnsServers[] DnsNames[]
function Read-Part([scriptblock]$Part) {
    try { & $Part } catch { [ordered]@{ error = $_.Exception.Message } }
}
$report = [ordered]@{ v = 1 }
$report.hyperv = Read-Part {
    $features = @(Get-WindowsFeature -Name 'Hyper-V', 'Hyper-V-PowerShell' | ForEach-Object {
        [ordered]@{ name = [string]$_.Name; state = [string]$_.InstallState } })
    $service = Get-Service -Name vmms -ErrorAction SilentlyContinue
    [ordered]@{
        features = $features
        module = [bool](Get-Module -ListAvailable -Name Hyper-V)
        hypervisorPresent = [bool](Get-CimInstance -ClassName Win32_ComputerSystem).HypervisorPresent
        vmms = $(if ($service) { [string]$service.Status } else { $null })
    }
}
$report.switch = Read-Part {
    $found = @(Get-VMSwitch -Name $SwitchName -ErrorAction SilentlyContinue)
    [ordered]@{ count = $found.Count; types = @($found | ForEach-Object { [string]$_.SwitchType }) }
}
$report.vms = Read-Part { [ordered]@{ names = @(Get-VM -ErrorAction SilentlyContinue | Where-Object { $VmNames -contains $_.Name } | ForEach-Object { [string]$_.Name }) } }
$report.folder = Read-Part {
    $path = $VmFolder
    while ($path -and -not (Test-Path -LiteralPath $path)) { $path = Split-Path -Parent $path }
    if (-not $path) { throw "no part of $VmFolder exists" }
    $volume = Get-Volume -FilePath $path
    [ordered]@{ checked = $path; free = [int64]$volume.SizeRemaining; fileSystem = [string]$volume.FileSystem }
}
$report.golden = [ordered]@{}
for ($i = 0; $i -lt $GoldenKeys.Count; $i++) {
    $golden = $GoldenPaths[$i]
    $report.golden[$GoldenKeys[$i]] = Read-Part {
        if (-not (Test-Path -LiteralPath $golden -PathType Leaf)) { return [ordered]@{ exists = $false } }
        $vhd = Get-VHD -Path $golden
        $image = [ordered]@{ exists = $true; format = [string]$vhd.VhdFormat; type = [string]$vhd.VhdType
                             attached = [bool]$vhd.Attached; fileSize = [int64]$vhd.FileSize; size = [int64]$vhd.Size }
        if ($MountImages -and -not $vhd.Attached -and $image.format -eq 'VHDX' -and $image.type -ne 'Differencing') {
            $image.build = Read-Part {
                $lock = New-Object System.Threading.Mutex($false, 'Global\hybrid-cluster-first-boot-disk')
                $held = $false
                try {
                    try { $held = $lock.WaitOne([TimeSpan]::FromSeconds(20)) } catch [System.Threading.AbandonedMutexException] { $held = $true }
                    if (-not $held) { throw 'a first-boot disk is being made on this host; run the preflight again later' }
                    $dir = Join-Path $env:ProgramData ('hybrid-cluster\preflight-' + [guid]::NewGuid().ToString('N'))
                    $null = New-Item -ItemType Directory -Path $dir
                    try {
                        $disk = Mount-VHD -Path $golden -ReadOnly -NoDriveLetter -Passthru | Get-Disk
                        $partition = @(Get-Partition -DiskNumber $disk.Number | Where-Object { [string]$_.Type -eq 'Basic' } | Sort-Object Offset)[-1]
                        $partition | Add-PartitionAccessPath -AccessPath $dir
                        try {
                            $kernel = Join-Path $dir 'Windows\System32\ntoskrnl.exe'
                            if (-not (Test-Path -LiteralPath $kernel)) { throw 'the last partition holds no Windows' }
                            $version = [System.Diagnostics.FileVersionInfo]::GetVersionInfo($kernel)
                            [ordered]@{ build = '{0}.{1}.{2}' -f $version.FileMajorPart, $version.FileMinorPart, $version.FileBuildPart }
                        } finally { $partition | Remove-PartitionAccessPath -AccessPath $dir }
                    } finally {
                        if ((Get-VHD -Path $golden).Attached) { Dismount-VHD -Path $golden }
                        Remove-Item -LiteralPath $dir -Force -ErrorAction SilentlyContinue
                    }
                } finally {
                    if ($held) { $lock.ReleaseMutex() }
                    $lock.Dispose()
                }
            }
        }
        $image
    }
}
## The network part runs on one host only (Addresses empty elsewhere): the Windows nodes' addresses and the gateway.
## Every address is pinged at once (Ping.SendPingAsync, .NET 4.5 and later; 5.1's Test-Connection has no timeout and
## pings one at a time), which makes Windows resolve its link-layer address when it is on a network of the host;
## Get-NetNeighbor then says whether anything answered (Reachable...) or not (Incomplete, Unreachable), also for a
## machine that drops ICMP. Resolve-DnsName -Server -DnsOnly -QuickTimeout asks one server, without the hosts file.
if ($Addresses.Count -gt 0) {
    $targets = @($Addresses) + @($Gateway)
    $pings = @(foreach ($address in $targets) {
        try { (New-Object System.Net.NetworkInformation.Ping).SendPingAsync($address, 1000) } catch { }
    })
    try { [System.Threading.Tasks.Task]::WaitAll([System.Threading.Tasks.Task[]]$pings, 5000) | Out-Null } catch { }
    $report.addresses = [ordered]@{}
    foreach ($address in $targets) {
        $report.addresses[$address] = Read-Part {
            $route = Find-NetRoute -RemoteIPAddress $address -ErrorAction SilentlyContinue | Where-Object { $_.PSObject.Properties.Name -contains 'NextHop' } | Select-Object -First 1
            $neighbor = Get-NetNeighbor -IPAddress $address -ErrorAction SilentlyContinue | Select-Object -First 1
            [ordered]@{ onLink = [bool]($route -and ($route.NextHop -eq '0.0.0.0'))
                        state = $(if ($neighbor) { [string]$neighbor.State } else { $null })
                        mac = $(if ($neighbor) { [string]$neighbor.LinkLayerAddress } else { $null }) }
        }
    }
    $report.dns = @(foreach ($server in $DnsServers) {
        foreach ($name in $DnsNames) {
            $answer = Read-Part {
                $records = @(Resolve-DnsName -Name $name -Type A -Server $server -DnsOnly -QuickTimeout -ErrorAction Stop)
                [ordered]@{ addresses = @($records | Where-Object { [string]$_.Type -eq 'A' } | ForEach-Object { [string]$_.IPAddress }) }
            }
            [ordered]@{ server = $server; name = $name; answer = $answer }
        }
    })
}
$json = ConvertTo-Json -InputObject $report -Depth 8 -Compress
[regex]::Replace($json, '[^\x00-\x7F]', { param($m) '\u{0:x4}' -f [int][char]$m.Value })
