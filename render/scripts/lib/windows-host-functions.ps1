## Runs on the host (Invoke-Guest, Assert-VmRunning).
function Invoke-Guest([scriptblock]$Step, [object[]]$Arguments) {
    @(Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock $Step -ArgumentList $Arguments)[-1]
}
## The VM resource (render/hyperv.py) starts the VM; a step that finds it stopped fails at once instead of
## waiting for PowerShell Direct for half an hour.
function Assert-VmRunning {
    $state = (Get-VM -Name $VmName).State
    if ($state -ne 'Running') { throw "VM $VmName is $state; the VM resource starts it, converge that first" }
}
