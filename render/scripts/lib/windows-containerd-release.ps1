## Runs in the guest, after lib/windows-guest-native.ps1 and lib/windows-guest-download.ps1. A containerd
## release goes into $ContainerdDir in two phases, as on the Linux nodes (lib/prepare-helpers.sh):
## Get-StagedContainerd downloads, verifies and unpacks it with nothing stopped; Install-StagedContainerd then
## stops containerd, moves each installed binary aside, puts the new one in its place, checks the version and
## starts containerd again, and on any failure puts the old binaries back, starts containerd and throws.
## Release asset: github.com/containerd/containerd/releases/download/v<V>/containerd-<V>-windows-amd64.tar.gz
## with <asset>.sha256sum beside it; it holds bin\*.exe (containerd docs/getting-started.md, "Installing
## containerd on Windows"). Moving aside, not overwriting: Windows refuses to overwrite or delete the file of
## a running executable but lets it be renamed (the running pods' shims hold containerd-shim-runhcs-v1.exe):
## inconshreveable/go-update issue #14, dlang/tools commit 085dc5d.
function Get-ContainerdVersion([string]$Exe) {
    if (-not (Test-Path -LiteralPath $Exe)) { return '' }
    ## `containerd --version` prints "containerd <module> v<V> <commit>".
    $words = @(((Invoke-Checked $Exe @('--version')) -join ' ') -split '\s+')
    if ($words.Count -ge 3) { return $words[2] }
    ''
}
## The binaries earlier installs moved aside, deleted once nothing runs them any more (now or on a later run).
function Remove-AsideBinaries([string]$ContainerdDir) {
    if (-not (Test-Path -LiteralPath $ContainerdDir)) { return }
    foreach ($old in @(Get-ChildItem -LiteralPath $ContainerdDir -Filter '*.old')) {
        Remove-Item -LiteralPath $old.FullName -Force -ErrorAction SilentlyContinue
    }
}
function Get-StagedContainerd([string]$Version, [string]$TarballUrl) {
    $stage = Join-Path $env:TEMP "containerd-$Version"
    if (Test-Path -LiteralPath $stage) { Remove-Item -LiteralPath $stage -Recurse -Force }
    $null = New-Item -ItemType Directory -Path $stage -Force
    $tarball = Join-Path $stage 'containerd.tar.gz'
    Save-Verified $TarballUrl (Get-PublishedSha256 "$TarballUrl.sha256sum" (Join-Path $stage 'sha256sum')) $tarball
    $null = Invoke-Checked 'tar.exe' @('-xzf', $tarball, '-C', $stage)
    if (@(Get-ChildItem -LiteralPath (Join-Path $stage 'bin') -Filter '*.exe').Count -eq 0) { throw "$TarballUrl holds no bin\*.exe" }
    $stage
}
## containerd starts, and the service reports Running, with a CRI plugin that failed to load: the kubelet could not
## reach it. ctr.exe (from the same release) lists each plugin's STATUS, ok or error/skip, and the CRI is TYPE
## io.containerd.grpc.v1, ID cri (containerd cmd/ctr/commands/plugins/plugins.go; lib/prepare-helpers.sh does the same).
## A ctr that cannot reach containerd yet writes to stderr, which Windows PowerShell 5.1 turns into a terminating error
## under the step's ErrorActionPreference Stop even when redirected (lib/windows-guest-native.ps1 says more): here it
## only means "not yet", so this function continues past it and retries.
function Test-CriServing([string]$ContainerdDir) {
    $ErrorActionPreference = 'Continue'
    try {
        $lines = & (Join-Path $ContainerdDir 'ctr.exe') plugins ls 2>$null
    } catch {
        return $false
    }
    if ($LASTEXITCODE -ne 0) { return $false }
    foreach ($line in @($lines)) {
        $fields = -split $line
        if ($fields.Count -ge 4 -and $fields[0] -eq 'io.containerd.grpc.v1' -and $fields[1] -eq 'cri') {
            return ($fields[-1] -eq 'ok')
        }
    }
    $false
}
function Wait-CriServing([string]$ContainerdDir) {
    for ($attempt = 0; $attempt -lt 30; $attempt++) {
        if (Test-CriServing $ContainerdDir) { return }
        Start-Sleep -Seconds 2
    }
    throw 'containerd started without its CRI plugin (ctr plugins ls)'
}
function Install-StagedContainerd([string]$Stage, [string]$Version, [string]$ContainerdDir) {
    $null = New-Item -ItemType Directory -Path $ContainerdDir -Force
    $service = Get-Service -Name containerd -ErrorAction SilentlyContinue
    $wasRunning = [bool]($service -and $service.Status -ne 'Stopped')
    ## -Force also stops the services that depend on containerd (the kubelet): the caller starts those again.
    if ($wasRunning) { Stop-Service -Name containerd -Force }
    $moved = @()
    $placed = @()
    try {
        foreach ($binary in @(Get-ChildItem -LiteralPath (Join-Path $Stage 'bin') -Filter '*.exe')) {
            $target = Join-Path $ContainerdDir $binary.Name
            if (Test-Path -LiteralPath $target) {
                $aside = "$target.$([guid]::NewGuid().ToString('N')).old"
                Move-Item -LiteralPath $target -Destination $aside
                $moved += , @($target, $aside)
            }
            Copy-Item -LiteralPath $binary.FullName -Destination $target
            $placed += $target
        }
        $installed = Get-ContainerdVersion (Join-Path $ContainerdDir 'containerd.exe')
        if ($installed -ne "v$Version") { throw "containerd.exe reports '$installed' after the install, not v$Version" }
        if ($wasRunning) {
            Start-Service -Name containerd
            Wait-CriServing $ContainerdDir
        }
    } catch {
        $failure = "$_"
        Stop-Service -Name containerd -Force -ErrorAction SilentlyContinue
        foreach ($target in $placed) { Remove-Item -LiteralPath $target -Force -ErrorAction SilentlyContinue }
        foreach ($pair in $moved) { Move-Item -LiteralPath $pair[1] -Destination $pair[0] -Force }
        if ($wasRunning) { Start-Service -Name containerd }
        throw "containerd $Version did not install ($failure); the previous containerd is back"
    }
    Remove-Item -LiteralPath $Stage -Recurse -Force
    Remove-AsideBinaries $ContainerdDir
}
