# On a Hyper-V host no longer in use: the tool hyperv-host-tool.ps1 put there removed, and its folder once empty.
#@ include lib/hyperv-preamble.ps1
#@ inputs ToolPath
Remove-Item -LiteralPath $ToolPath -Force -ErrorAction SilentlyContinue
$folder = Split-Path -Parent $ToolPath
if ((Test-Path -LiteralPath $folder) -and -not (Get-ChildItem -LiteralPath $folder)) { Remove-Item -LiteralPath $folder -Force }
Write-Output "$ToolPath removed"
