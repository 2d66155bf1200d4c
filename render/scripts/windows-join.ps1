# Join a Windows node VM to the cluster with kubeadm. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec Template JoinLinePattern FlagPattern BinDir KubeletConf FlagsFile ServiceBase CriSocket JoinPlaceholders[]
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
$GuestStep = {
    param([string]$Template, [string]$Endpoint, [string]$Token, [string]$CaCertHash, [string]$BinDir,
        [string]$KubeletConf, [string]$FlagsFile, [string]$ServiceBase, [string]$CriSocket, [string]$FlagPattern,
        [string[]]$JoinPlaceholders)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    #@ include lib/windows-kubelet-flags.ps1
    $secrets = @($Token, $Token.Split('.')[1], $CaCertHash)
    if (Test-Path -LiteralPath $KubeletConf) {
        return [pscustomobject]@{ Changes = $changes; Joined = $false; Kubelet = [string](Get-Service -Name kubelet).Status }
    }
    $env:Path = "$BinDir;$env:Path"
    $kubeadm = Join-Path $BinDir 'kubeadm.exe'
    ## A partial earlier attempt (pki\ca.crt or the flags file present, kubelet.conf absent) would fail
    ## kubeadm's FileAvailable preflight checks, so it is reset first.
    if ((Test-Path -LiteralPath 'C:\etc\kubernetes\pki\ca.crt') -or (Test-Path -LiteralPath $FlagsFile)) {
        $null = Invoke-Checked $kubeadm @('reset', '--force', "--cri-socket=$CriSocket") $secrets
        $changes += 'reset a partial earlier join'
    }
    ## Its values go to the guest over PowerShell Direct and are substituted there into the JoinConfiguration,
    ## which is written to a directory whose ACL grants only BUILTIN\Administrators (S-1-5-32-544) and
    ## LocalSystem (S-1-5-18), with inheritance cut (DirectorySecurity.SetAccessRuleProtection(true, false),
    ## FileSystemAccessRule, Set-Acl:
    ## https://learn.microsoft.com/dotnet/api/system.security.accesscontrol.objectsecurity.setaccessruleprotection ,
    ## https://learn.microsoft.com/windows/win32/secauthz/well-known-sids ), and removed in `finally`.
    $config = $Template.Replace($JoinPlaceholders[0], $Token).Replace($JoinPlaceholders[1], $CaCertHash).Replace($JoinPlaceholders[2], $Endpoint)
    $workDir = Join-Path $env:ProgramData 'kubeadm-join'
    $null = New-Item -ItemType Directory -Path $workDir -Force
    $acl = New-Object System.Security.AccessControl.DirectorySecurity
    $acl.SetAccessRuleProtection($true, $false)
    foreach ($sid in @('S-1-5-32-544', 'S-1-5-18')) {
        $identity = New-Object System.Security.Principal.SecurityIdentifier($sid)
        $acl.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule($identity, 'FullControl', 'ContainerInherit, ObjectInherit', 'None', 'Allow')))
    }
    Set-Acl -LiteralPath $workDir -AclObject $acl
    $configFile = Join-Path $workDir 'join-config.yaml'
    try {
        [System.IO.File]::WriteAllText($configFile, $config, (New-Object System.Text.UTF8Encoding($false)))
        ## Why the join skips kubelet-wait-bootstrap and runs it after the kubelet service is enabled with
        ## kubeadm's flags: render/windows_bootstrap.py, the comment above render_join.
        $null = Invoke-Checked $kubeadm @('join', "--config=$configFile", '--skip-phases=kubelet-wait-bootstrap') $secrets
        $flags = @(Set-KubeletServiceFlags $FlagsFile $FlagPattern $ServiceBase)
        Set-Service -Name kubelet -StartupType Automatic
        Start-Service -Name kubelet
        $changes += "kubelet service enabled with kubeadm flags: $($flags -join ' ')"
        $null = Invoke-Checked $kubeadm @('join', 'phase', 'kubelet-wait-bootstrap', "--config=$configFile") $secrets
        $changes += 'kubelet finished its TLS bootstrap'
    } finally {
        Remove-Item -LiteralPath $workDir -Recurse -Force -ErrorAction SilentlyContinue
    }
    $deadline = (Get-Date).AddSeconds(120)
    while ((Get-Service -Name kubelet).Status -ne 'Running') {
        if ((Get-Date) -gt $deadline) { throw 'the kubelet service is not running 120 s after the join' }
        Start-Sleep -Seconds 5
    }
    [pscustomobject]@{ Changes = $changes; Joined = $true; Kubelet = 'Running' }
}
## The join line is stdin line 2, read with [Console]::In.ReadLine() like the password, matched with
## JOIN_LINE_PATTERN (render/windows_bootstrap.py, the $JoinLinePattern input) and never written anywhere.
$joinLine = [Console]::In.ReadLine()
if ([string]::IsNullOrEmpty($joinLine)) { throw 'Expected the kubeadm join line as the second line of stdin' }
$joinMatch = [regex]::Match($joinLine, $JoinLinePattern)
Remove-Variable -Name joinLine
if (-not $joinMatch.Success) {
    throw 'The second line of stdin is not a worker join line (kubeadm join HOST:PORT --token T --discovery-token-ca-cert-hash sha256:H); it is not shown because it carries a secret'
}
$apiPort = [int]($joinMatch.Groups[1].Value -replace '^.*:', '')
if ($apiPort -lt 1 -or $apiPort -gt 65535) { throw 'The API server port in the join line is out of range' }
Assert-VmRunning
Wait-PowerShellDirect
$guest = Invoke-Guest -Step $GuestStep -Arguments @($Template, $joinMatch.Groups[1].Value, $joinMatch.Groups[2].Value, $joinMatch.Groups[3].Value, $BinDir, $KubeletConf, $FlagsFile, $ServiceBase, $CriSocket, $FlagPattern, $JoinPlaceholders)
Remove-Variable -Name joinMatch
foreach ($change in $guest.Changes) { Write-Output "${VmName}: $change" }
if ($guest.Joined) {
    Write-Output "${VmName}: joined the cluster; kubelet service $($guest.Kubelet)"
} else {
    Write-Output "${VmName}: already joined ($KubeletConf exists), nothing to do; kubelet service $($guest.Kubelet)"
}
