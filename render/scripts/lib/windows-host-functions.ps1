function Invoke-Guest([scriptblock]$Step, [object[]]$Arguments) {
    @(Invoke-Command -VMName $VmName -Credential $GuestCredential -ScriptBlock $Step -ArgumentList $Arguments)[-1]
}
function Assert-VmRunning {
    $state = (Get-VM -Name $VmName).State
    if ($state -ne 'Running') { throw "VM $VmName is $state; the VM resource starts it, converge that first" }
}
