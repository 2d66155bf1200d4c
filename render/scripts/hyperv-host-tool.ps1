# On a Hyper-V host: a tool the node converges run (ToolText) at ToolPath, in a folder only SYSTEM and the
# Administrators may change, and checked by its SHA-256 once written. Safe to run again; the delete removes the file.
## icacls: /inheritance:r drops the inherited entries (C:\ProgramData lets Users create files), /grant:r sets full
## control for SYSTEM (S-1-5-18) and the Administrators group (S-1-5-32-544) on the folder and what it holds:
##   https://learn.microsoft.com/windows-server/administration/windows-commands/icacls
#@ include lib/hyperv-preamble.ps1
#@ inputs ToolPath ToolText ToolSha256
$folder = Split-Path -Parent $ToolPath
$null = New-Item -ItemType Directory -Path $folder -Force
## The owner is set first: whoever made the folder before (C:\ProgramData lets any user) could change its ACL again.
$null = & icacls.exe $folder /setowner '*S-1-5-32-544' /T
if ($LASTEXITCODE -ne 0) { throw "icacls could not give $folder to the Administrators (exit code $LASTEXITCODE)" }
$null = & icacls.exe $folder /inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' '*S-1-5-32-544:(OI)(CI)F'
if ($LASTEXITCODE -ne 0) { throw "icacls could not restrict $folder (exit code $LASTEXITCODE)" }
[IO.File]::WriteAllText($ToolPath, $ToolText, (New-Object System.Text.UTF8Encoding($false)))
if ((Get-FileHash -LiteralPath $ToolPath -Algorithm SHA256).Hash -ne $ToolSha256) { throw "$ToolPath does not hold what was written" }
Write-Output "$ToolPath in place (SHA-256 $ToolSha256)"
