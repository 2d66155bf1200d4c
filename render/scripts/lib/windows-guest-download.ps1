## Runs in the guest (Get-PublishedSha256, Get-FileSha256, Save-Verified, and Set-FileText from its own fragment). Downloads use the
## curl.exe that ships with Windows Server 2019 and later, as sig-windows-tools Install-Containerd.ps1 and
## PrepareNode.ps1 do (Windows PowerShell 5.1's Invoke-WebRequest may not negotiate TLS 1.2).
function Get-PublishedSha256([string]$Url, [string]$Scratch) {
    $null = Invoke-Checked 'curl.exe' @('--fail', '--silent', '--show-error', '--location', '--retry', '5', '--output', $Scratch, $Url)
    $digest = ((Get-Content -LiteralPath $Scratch -Raw).Trim() -split '\s+')[0].ToLowerInvariant()
    Remove-Item -LiteralPath $Scratch -Force
    if ($digest -notmatch '^[0-9a-f]{64}$') { throw "$Url does not hold a SHA-256 digest" }
    $digest
}
## A download is kept only when its SHA-256 equals the published one (Get-FileHash:
## https://learn.microsoft.com/powershell/module/microsoft.powershell.utility/get-filehash?view=powershell-5.1).
function Get-FileSha256([string]$Path) {
    if (-not (Test-Path -LiteralPath $Path)) { return '' }
    (Get-FileHash -Algorithm SHA256 -LiteralPath $Path).Hash.ToLowerInvariant()
}
function Save-Verified([string]$Url, [string]$Digest, [string]$Path) {
    $partial = "$Path.partial"
    $null = Invoke-Checked 'curl.exe' @('--fail', '--silent', '--show-error', '--location', '--retry', '5', '--output', $partial, $Url)
    if ((Get-FileSha256 $partial) -ne $Digest) {
        Remove-Item -LiteralPath $partial -Force
        throw "SHA-256 of $Url does not match its published checksum"
    }
    Copy-Item -LiteralPath $partial -Destination $Path -Force
    Remove-Item -LiteralPath $partial -Force
}
#@ include lib/windows-guest-set-file.ps1
