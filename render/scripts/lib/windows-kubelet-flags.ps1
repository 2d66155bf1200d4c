## Set-KubeletServiceFlags FLAGSFILE FLAGPATTERN SERVICEBASE: the kubelet service's command line becomes
## SERVICEBASE plus the flags kubeadm wrote to FLAGSFILE, as the kubelet reads them on Linux (the flags file
## holds KUBELET_KUBEADM_ARGS="...", kubernetes/kubernetes#88287; PrepareNode.ps1's StartKubelet.ps1 trims
## exactly that). Each flag must match FLAGPATTERN. The command line is changed with Win32_Service.Change
## PathName (https://learn.microsoft.com/windows/win32/cimwin32prov/change-method-in-class-win32-service),
## which takes the string as is, unlike sc.exe behind Windows PowerShell's native argument quoting.
## Returns the flags.
function Set-KubeletServiceFlags([string]$FlagsFile, [string]$FlagPattern, [string]$ServiceBase) {
    $flagsLine = (Get-Content -LiteralPath $FlagsFile -Raw).Trim()
    if ($flagsLine -notmatch '^KUBELET_KUBEADM_ARGS="([^"]*)"$') { throw "$FlagsFile does not hold one KUBELET_KUBEADM_ARGS line" }
    $flags = @($Matches[1].Trim() -split ' +' | Where-Object { $_ })
    foreach ($flag in $flags) {
        if ($flag -cnotmatch $FlagPattern) { throw "refusing to put '$flag' from $FlagsFile on the kubelet service command line" }
    }
    $service = Get-CimInstance -ClassName Win32_Service -Filter "Name='kubelet'"
    $result = Invoke-CimMethod -InputObject $service -MethodName Change -Arguments @{ PathName = (@($ServiceBase) + $flags) -join ' ' }
    if ($result.ReturnValue -ne 0) { throw "Win32_Service.Change of the kubelet service returned $($result.ReturnValue)" }
    $flags
}
