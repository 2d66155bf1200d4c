$Step = 'Kubernetes binaries and kubelet service'
$GuestStep = {
    param([string]$BaseUrl, [string]$BinDir, [string[]]$Binaries, [string[]]$Directories, [string]$ServiceCommand)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    #@ include lib/windows-guest-download.ps1
    foreach ($directory in @($BinDir) + $Directories) {
        if (-not (Test-Path -LiteralPath $directory)) {
            $null = New-Item -ItemType Directory -Path $directory -Force
            $changes += "created $directory"
        }
    }
    $restartKubelet = $false
    foreach ($binary in $Binaries) {
        $path = Join-Path $BinDir $binary
        $digest = Get-PublishedSha256 "$BaseUrl/$binary.sha256" "$path.sha256"
        if ((Get-FileSha256 $path) -ne $digest) {
            $kubelet = Get-Service -Name kubelet -ErrorAction SilentlyContinue
            if ($binary -eq 'kubelet.exe' -and $kubelet -and $kubelet.Status -ne 'Stopped') {
                Stop-Service -Name kubelet -Force
                $restartKubelet = $true
            }
            Save-Verified "$BaseUrl/$binary" $digest $path
            $changes += "installed $binary from $BaseUrl"
        }
    }
    $machinePath = [Environment]::GetEnvironmentVariable('Path', 'Machine')
    if (($machinePath -split ';') -notcontains $BinDir) {
        [Environment]::SetEnvironmentVariable('Path', "$machinePath;$BinDir", 'Machine')
        $changes += "added $BinDir to the machine PATH"
    }
    if (-not (Get-Service -Name kubelet -ErrorAction SilentlyContinue)) {
        $null = New-Service -Name kubelet -DisplayName 'kubelet' -BinaryPathName $ServiceCommand -StartupType Disabled -DependsOn containerd
        $null = Invoke-Checked 'sc.exe' @('failure', 'kubelet', 'reset=', '0', 'actions=', 'restart/10000')
        $changes += 'registered the kubelet service (disabled until the join)'
    }
    if ($restartKubelet) { Start-Service -Name kubelet }
    [pscustomobject]@{ Changes = $changes }
}
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @($BaseUrl, $BinDir, $Binaries, $Directories, $ServiceCommand)
#@ include lib/windows-host-report.ps1
