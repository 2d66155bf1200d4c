# Configure and run containerd in a Windows node VM (its binaries: windows-containerd-binaries.ps1). Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec ConfigText Directories[] HostsDir HostsUpstreams[] HostsTexts[] CaDir CaNames[] CaTexts[] ManagedMarker
$HostsFiles = @{}
for ($i = 0; $i -lt $HostsUpstreams.Count; $i++) { $HostsFiles[$HostsUpstreams[$i]] = $HostsTexts[$i] }
$CaFiles = @{}
for ($i = 0; $i -lt $CaNames.Count; $i++) { $CaFiles[$CaNames[$i]] = $CaTexts[$i] }
$Step = 'containerd'
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
$GuestStep = {
    param([string]$ConfigText, [string[]]$Directories,
        [string]$HostsDir, [hashtable]$HostsFiles, [hashtable]$CaFiles, [string]$CaDir, [string]$ManagedMarker)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    #@ include lib/windows-guest-set-file.ps1
    ## The service reads $env:ProgramFiles\containerd\config.toml; `containerd.exe --register-service` registers
    ## it (containerd docs/getting-started.md; sig-windows-tools Install-Containerd.ps1).
    $containerdDir = Join-Path $env:ProgramFiles 'containerd'
    $exe = Join-Path $containerdDir 'containerd.exe'
    if (-not (Test-Path -LiteralPath $exe)) { throw "containerd is not installed in $containerdDir" }
    foreach ($directory in $Directories) {
        if (-not (Test-Path -LiteralPath $directory)) {
            $null = New-Item -ItemType Directory -Path $directory -Force
            $changes += "created $directory"
        }
    }
    $configChanged = Set-FileText (Join-Path $containerdDir 'config.toml') $ConfigText
    if ($configChanged) { $changes += 'wrote containerd config.toml' }
    ## The mirrors' CAs (render/containerd.py MIRROR_CA_DIR) before the hosts.toml files that name them.
    $caDirectory = Join-Path $HostsDir $CaDir
    foreach ($name in $CaFiles.Keys) {
        if (Set-FileText (Join-Path $caDirectory $name) $CaFiles[$name]) { $changes += "wrote the registry mirror CA $name" }
    }
    foreach ($upstream in $HostsFiles.Keys) {
        if (Set-FileText (Join-Path $HostsDir "$upstream\hosts.toml") $HostsFiles[$upstream]) { $changes += "wrote registry mirror hosts.toml for $upstream" }
    }
    ## A CA no hosts.toml names any more goes only after the hosts.toml files that named it are rewritten.
    if (Test-Path -LiteralPath $caDirectory) {
        foreach ($old in @(Get-ChildItem -LiteralPath $caDirectory -File | Where-Object { -not $CaFiles.ContainsKey($_.Name) })) {
            if ((Get-Content -LiteralPath $old.FullName -TotalCount 1) -like "$ManagedMarker*") {
                Remove-Item -LiteralPath $old.FullName -Force
                $changes += "removed the registry mirror CA $($old.Name)"
            }
        }
    }
    foreach ($stale in @(Get-ChildItem -LiteralPath $HostsDir -Directory | Where-Object { -not $HostsFiles.ContainsKey($_.Name) -and $_.Name -ne $CaDir })) {
        $hostsFile = Join-Path $stale.FullName 'hosts.toml'
        if ((Test-Path -LiteralPath $hostsFile) -and (Get-Content -LiteralPath $hostsFile -TotalCount 1) -like "$ManagedMarker*") {
            Remove-Item -LiteralPath $stale.FullName -Recurse -Force
            $changes += "removed registry mirror hosts.toml for $($stale.Name)"
        }
    }
    if (-not (Get-Service -Name containerd -ErrorAction SilentlyContinue)) {
        $null = Invoke-Checked $exe @('--register-service')
        $changes += 'registered the containerd service'
    }
    $containerd = Get-Service -Name containerd
    if ($containerd.StartType -ne 'Automatic') { Set-Service -Name containerd -StartupType Automatic }
    if ($configChanged -and $containerd.Status -eq 'Running') {
        Restart-Service -Name containerd -Force
        $changes += 'restarted containerd for the new config'
    } elseif ($containerd.Status -ne 'Running') {
        Start-Service -Name containerd
        $changes += 'started containerd'
    }
    $kubelet = Get-Service -Name kubelet -ErrorAction SilentlyContinue
    if ($kubelet -and $kubelet.StartType -eq 'Automatic' -and $kubelet.Status -ne 'Running') { Start-Service -Name kubelet }
    [pscustomobject]@{ Changes = $changes }
}
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @($ConfigText, $Directories, $HostsDir, $HostsFiles, $CaFiles, $CaDir, $ManagedMarker)
#@ include lib/windows-host-report.ps1
