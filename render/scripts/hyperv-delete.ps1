# Delete a Hyper-V VM, its VHDX and its folder. The Kubernetes node was drained and deleted earlier, by the
# node resource that depends on this VM. Rendered by render/hyperv.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName VmRoot VmDir VhdPath StopTimeoutSec
#@ include lib/hyperv-stop-vm.ps1
# Remove-VM -Name -Force deletes the VM's configuration; it leaves virtual hard disks in place, hence the
# explicit Remove-Item of the VHDX and the VM folder.
# Source: https://learn.microsoft.com/powershell/module/hyper-v/remove-vm?view=windowsserver2022-ps
$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if ($vm) {
    if ($vm.State -ne 'Off') { Stop-VmBounded -Reason 'deleting the VM' }
    Remove-VM -Name $VmName -Force
    Write-Output "Removed VM $VmName"
} else {
    Write-Output "VM $VmName is already absent"
}
if (Test-Path -LiteralPath $VhdPath) {
    Remove-Item -LiteralPath $VhdPath -Force
    Write-Output "Removed $VhdPath"
}
if (Test-Path -LiteralPath $VmDir) {
    Remove-Item -LiteralPath $VmDir -Recurse -Force
    Write-Output "Removed $VmDir"
}
