function Invoke-Checked([string]$File, [string[]]$Arguments, [string[]]$Redact = @()) {
    $ErrorActionPreference = 'Continue'
    $lines = @(& $File @Arguments 2>&1 | ForEach-Object { "$_" })
    $code = $LASTEXITCODE
    $command = "$(Split-Path -Leaf $File) $($Arguments -join ' ')"
    foreach ($secret in $Redact) {
        $lines = @($lines | ForEach-Object { $_.Replace($secret, '<redacted>') })
        $command = $command.Replace($secret, '<redacted>')
    }
    if ($code -ne 0) {
        $tail = ($lines | Select-Object -Last 25) -join "`n"
        throw "$command exited with code ${code}:`n$tail"
    }
    $lines
}
