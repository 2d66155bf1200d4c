# Reset the Kubernetes node in a Windows node VM before the VM is deleted. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec BinDir CriSocket CniConfDir NetworkPatterns[] StateDirs[]
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
## When it runs: the join's triggers are the VM id, and on destroy Pulumi deletes the drain (which
## already deleted the Node object), then this, then the VM. So the reset always precedes the deletion
## or replacement of the VM that holds all the state it cleans. Decision: a VM that is absent, not
## running, or not answering PowerShell Direct within $PsDirectTimeoutSec
## (RESET_POWERSHELL_DIRECT_TIMEOUT_SECONDS) is left alone with a warning and the script succeeds; on a
## reachable guest every cleanup action is tried, a failing one is reported as a warning and the rest
## still run. Either way destroy goes on to delete the VM, instead of failing until someone repairs a
## node that is about to disappear.
## Cleanup: `kubeadm reset --force --cri-socket` (stops the kubelet, removes its containers and
## C:\etc\kubernetes, C:\var\lib\kubelet state), the kubelet service stopped and disabled again (the
## inverse of the join enabling it), HNS: Get-HnsEndpoint/Remove-HnsEndpoint, Get-HnsPolicyList/
## Remove-HnsPolicyList (kube-proxy's load balancers, which microsoft/SDN Kubernetes/windows/
## start-kubeproxy.ps1 also clears), Get-HnsNetwork/Remove-HnsNetwork
## (https://learn.microsoft.com/powershell/module/hostnetworkingservice/), then the CNI config files
## and Calico's node state directories.
$GuestStep = {
    param([string]$BinDir, [string]$CriSocket, [string]$CniConfDir, [string[]]$NetworkPatterns, [string[]]$StateDirs)
    #@ include lib/windows-guest-start.ps1
    #@ include lib/windows-guest-native.ps1
    $problems = @()
    $kubeadm = Join-Path $BinDir 'kubeadm.exe'
    if ((Test-Path -LiteralPath $kubeadm) -and ((Test-Path -LiteralPath 'C:\etc\kubernetes') -or (Test-Path -LiteralPath 'C:\var\lib\kubelet'))) {
        try {
            $env:Path = "$BinDir;$env:Path"
            $null = Invoke-Checked $kubeadm @('reset', '--force', "--cri-socket=$CriSocket")
            $changes += 'kubeadm reset'
        } catch { $problems += "kubeadm reset: $($_.Exception.Message)" }
    }
    try {
        $kubelet = Get-Service -Name kubelet -ErrorAction SilentlyContinue
        if ($kubelet -and $kubelet.Status -ne 'Stopped') { Stop-Service -Name kubelet -Force; $changes += 'stopped the kubelet service' }
        if ($kubelet -and $kubelet.StartType -ne 'Disabled') { Set-Service -Name kubelet -StartupType Disabled; $changes += 'disabled the kubelet service' }
    } catch { $problems += "kubelet service: $($_.Exception.Message)" }
    if (Get-Command -Name Get-HnsNetwork -ErrorAction SilentlyContinue) {
        try {
            $networks = @(Get-HnsNetwork | Where-Object { $name = $_.Name; @($NetworkPatterns | Where-Object { $name -like $_ }).Count -gt 0 })
            $networkNames = @($networks | ForEach-Object { $_.Name })
            foreach ($endpoint in @(Get-HnsEndpoint)) {
                $attached = $endpoint.PSObject.Properties['VirtualNetworkName']
                if ($attached -and $networkNames -contains $attached.Value) { $endpoint | Remove-HnsEndpoint; $changes += "removed HNS endpoint $($endpoint.Id)" }
            }
            $policyLists = @(Get-HnsPolicyList)
            if ($policyLists.Count -gt 0) { $policyLists | Remove-HnsPolicyList; $changes += "removed $($policyLists.Count) HNS policy lists" }
            foreach ($network in $networks) { $network | Remove-HnsNetwork; $changes += "removed HNS network $($network.Name)" }
        } catch { $problems += "HNS: $($_.Exception.Message)" }
    }
    foreach ($path in @(Get-ChildItem -LiteralPath $CniConfDir -File -ErrorAction SilentlyContinue | ForEach-Object { $_.FullName }) + $StateDirs) {
        try {
            if (Test-Path -LiteralPath $path) { Remove-Item -LiteralPath $path -Recurse -Force; $changes += "removed $path" }
        } catch { $problems += "${path}: $($_.Exception.Message)" }
    }
    [pscustomobject]@{ Changes = $changes; Problems = $problems }
}
$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if (-not $vm) {
    Write-Output "${VmName}: VM is absent, nothing to reset"
    exit 0
}
if ($vm.State -ne 'Running') {
    Write-Warning "${VmName}: VM is $($vm.State); skipping the node cleanup, the VM and its state are deleted next"
    exit 0
}
try {
    Wait-PowerShellDirect
} catch {
    Write-Warning "${VmName}: guest unreachable ($($_.Exception.Message)); skipping the node cleanup, the VM and its state are deleted next"
    exit 0
}
$guest = Invoke-Guest -Step $GuestStep -Arguments @($BinDir, $CriSocket, $CniConfDir, $NetworkPatterns, $StateDirs)
foreach ($change in $guest.Changes) { Write-Output "${VmName}: $change" }
foreach ($problem in $guest.Problems) { Write-Warning "${VmName}: $problem" }
Write-Output ('{0}: node reset finished with {1} change(s) and {2} problem(s)' -f $VmName, @($guest.Changes | Where-Object { $_ }).Count, @($guest.Problems | Where-Object { $_ }).Count)
