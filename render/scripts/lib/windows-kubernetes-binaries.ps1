## Included by windows-kubernetes.ps1 (preparation step 4, $UpgradeTo empty) and windows-upgrade.ps1
## ($UpgradeTo the version, with $Marker, $FlagsFile and $FlagPattern), so that one guest step does both.
$Step = 'Kubernetes binaries and kubelet service'
$GuestStep = {
    param([string]$BaseUrl, [string]$BinDir, [string[]]$Binaries, [string[]]$Directories, [string]$ServiceCommand,
        [string]$UpgradeTo, [string]$Marker, [string]$FlagsFile, [string]$FlagPattern)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    #@ include lib/windows-guest-download.ps1
    #@ include lib/windows-kubelet-flags.ps1
    foreach ($directory in @($BinDir) + $Directories) {
        if (-not (Test-Path -LiteralPath $directory)) {
            $null = New-Item -ItemType Directory -Path $directory -Force
            $changes += "created $directory"
        }
    }
    ## A binary is replaced only when its SHA-256 differs from the published one; a running kubelet is
    ## stopped first (its executable is locked) and started again afterwards; in an upgrade only once
    ## `kubeadm upgrade node` has written the new configuration.
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
    ## C:\k goes on the machine PATH as in PrepareNode.ps1: kubeadm's preflight runs `kubelet --version`.
    $machinePath = [Environment]::GetEnvironmentVariable('Path', 'Machine')
    if (($machinePath -split ';') -notcontains $BinDir) {
        [Environment]::SetEnvironmentVariable('Path', "$machinePath;$BinDir", 'Machine')
        $changes += "added $BinDir to the machine PATH"
    }
    ## The service: New-Service -Name -BinaryPathName -StartupType Disabled -DependsOn containerd
    ## (https://learn.microsoft.com/powershell/module/microsoft.powershell.management/new-service?view=powershell-5.1);
    ## the join enables it once kubeadm has written the node's flags (render/windows_bootstrap.py, the comment
    ## above render_join). Restart on failure as the GCE Windows node setup does:
    ## `sc.exe failure kubelet reset= 0 actions= restart/10000` (kubernetes/kubernetes
    ## cluster/gce/windows/k8s-node-setup.psm1).
    if (-not (Get-Service -Name kubelet -ErrorAction SilentlyContinue)) {
        $null = New-Service -Name kubelet -DisplayName 'kubelet' -BinaryPathName $ServiceCommand -StartupType Disabled -DependsOn containerd
        $null = Invoke-Checked 'sc.exe' @('failure', 'kubelet', 'reset=', '0', 'actions=', 'restart/10000')
        $changes += 'registered the kubelet service (disabled until the join)'
    }
    if (-not $UpgradeTo) {
        if ($restartKubelet) { Start-Service -Name kubelet }
        return [pscustomobject]@{ Changes = $changes }
    }
    ## Upgrade, in the order of "Upgrading Windows nodes" (windows-upgrade.ps1 has the source). $Marker records
    ## the version the last complete upgrade reached, so a re-run for another reason (a rotated guest
    ## password) leaves a finished node alone, but for a kubelet an interrupted run left stopped.
    if ((Test-Path -LiteralPath $Marker) -and ((Get-Content -LiteralPath $Marker -Raw).Trim() -ceq $UpgradeTo)) {
        if ((Get-Service -Name kubelet).Status -ne 'Running') {
            Start-Service -Name kubelet
            $changes += 'started the kubelet'
        }
        return [pscustomobject]@{ Changes = $changes }
    }
    $null = Invoke-Checked (Join-Path $BinDir 'kubeadm.exe') @('upgrade', 'node')
    $changes += 'kubeadm upgrade node'
    $flags = @(Set-KubeletServiceFlags $FlagsFile $FlagPattern $ServiceCommand)
    $changes += "kubelet service flags: $($flags -join ' ')"
    Stop-Service -Name kubelet -Force
    Start-Service -Name kubelet
    $changes += 'started the kubelet with its new configuration'
    Set-Content -LiteralPath $Marker -Value $UpgradeTo -NoNewline
    [pscustomobject]@{ Changes = $changes }
}
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @($BaseUrl, $BinDir, $Binaries, $Directories, $ServiceCommand, $UpgradeTo, $Marker, $FlagsFile, $FlagPattern)
#@ include lib/windows-host-report.ps1
