## Runs in the guest, inside every step's script block. Windows PowerShell turns each stderr line of a
## native command into an error record, which $ErrorActionPreference = 'Stop' makes fatal; kubeadm and
## containerd log to stderr, so native commands run with 'Continue' and are judged by their exit code.
function Invoke-Checked([string]$File, [string[]]$Arguments, [string[]]$Redact = @()) {
    $ErrorActionPreference = 'Continue'
    $lines = @(& $File @Arguments 2>&1 | ForEach-Object { "$_" })
    $code = $LASTEXITCODE
    $command = "$(Split-Path -Leaf $File) $($Arguments -join ' ')"
    ## Redact replaces secret strings in output that may end up in an error message.
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
