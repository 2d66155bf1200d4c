# Install containerd in a Windows node VM. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec Version TarballUrl ConfigText Directories[] HostsDir HostsUpstreams[] HostsTexts[] ManagedMarker
$HostsFiles = @{}
for ($i = 0; $i -lt $HostsUpstreams.Count; $i++) { $HostsFiles[$HostsUpstreams[$i]] = $HostsTexts[$i] }
$Step = 'containerd'
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
$GuestStep = {
    param([string]$Version, [string]$TarballUrl, [string]$ConfigText, [string[]]$Directories,
        [string]$HostsDir, [hashtable]$HostsFiles, [string]$ManagedMarker)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    #@ include lib/windows-guest-download.ps1
    ## Release asset (the $TarballUrl input):
    ## github.com/containerd/containerd/releases/download/v<V>/containerd-<V>-windows-amd64.tar.gz
    ## with <asset>.sha256sum ("<digest>  <file>") beside it; the tarball holds bin\*.exe, which go to
    ## $env:ProgramFiles\containerd; `containerd.exe --register-service` registers the "containerd" service
    ## reading $env:ProgramFiles\containerd\config.toml: containerd docs/getting-started.md "Installing
    ## containerd on Windows", sig-windows-tools Install-Containerd.ps1 (tar.exe -xvf ... --strip=1).
    $containerdDir = Join-Path $env:ProgramFiles 'containerd'
    $exe = Join-Path $containerdDir 'containerd.exe'
    ## `containerd --version` prints "containerd <module> v<V> <commit>".
    $installed = ''
    if (Test-Path -LiteralPath $exe) { $installed = (Invoke-Checked $exe @('--version')) -join ' ' }
    if ($installed -notmatch "(^|\s)v$([regex]::Escape($Version))(\s|$)") {
        $work = Join-Path $env:TEMP "containerd-$Version"
        if (Test-Path -LiteralPath $work) { Remove-Item -LiteralPath $work -Recurse -Force }
        $null = New-Item -ItemType Directory -Path $work -Force
        $tarball = Join-Path $work 'containerd.tar.gz'
        Save-Verified $TarballUrl (Get-PublishedSha256 "$TarballUrl.sha256sum" (Join-Path $work 'sha256sum')) $tarball
        $null = Invoke-Checked 'tar.exe' @('-xzf', $tarball, '-C', $work)
        if ((Get-Service -Name containerd -ErrorAction SilentlyContinue) -and (Get-Service -Name containerd).Status -ne 'Stopped') {
            Stop-Service -Name containerd -Force
        }
        $null = New-Item -ItemType Directory -Path $containerdDir -Force
        Copy-Item -Path (Join-Path $work 'bin\*') -Destination $containerdDir -Force
        Remove-Item -LiteralPath $work -Recurse -Force
        $changes += "installed containerd $Version"
    }
    foreach ($directory in $Directories) {
        if (-not (Test-Path -LiteralPath $directory)) {
            $null = New-Item -ItemType Directory -Path $directory -Force
            $changes += "created $directory"
        }
    }
    $configChanged = Set-FileText (Join-Path $containerdDir 'config.toml') $ConfigText
    if ($configChanged) { $changes += 'wrote containerd config.toml' }
    foreach ($upstream in $HostsFiles.Keys) {
        if (Set-FileText (Join-Path $HostsDir "$upstream\hosts.toml") $HostsFiles[$upstream]) { $changes += "wrote registry mirror hosts.toml for $upstream" }
    }
    foreach ($stale in @(Get-ChildItem -LiteralPath $HostsDir -Directory | Where-Object { -not $HostsFiles.ContainsKey($_.Name) })) {
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
$guest = Invoke-Guest -Step $GuestStep -Arguments @($Version, $TarballUrl, $ConfigText, $Directories, $HostsDir, $HostsFiles, $ManagedMarker)
#@ include lib/windows-host-report.ps1
