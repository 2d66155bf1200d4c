## Runs in the guest: writes a file's text (UTF-8, no BOM) only when it differs; $true when it wrote.
function Set-FileText([string]$Path, [string]$Text) {
    if ((Test-Path -LiteralPath $Path) -and ([System.IO.File]::ReadAllText($Path) -ceq $Text)) { return $false }
    $null = New-Item -ItemType Directory -Path (Split-Path -Parent $Path) -Force
    [System.IO.File]::WriteAllText($Path, $Text, (New-Object System.Text.UTF8Encoding($false)))
    $true
}
