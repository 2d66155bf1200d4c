# Delete a Hyper-V VM, its VHDX and its folder. The Kubernetes node was drained and deleted earlier, by the
# node resource that depends on this VM. Rendered by render/hyperv.py. It deletes only what the program made (the VM,
# its system disk, its folder) and names every file it removes; a VM with a checkpoint or a disk the program did not
# attach is refused before anything stops, so nothing an operator added is lost with it.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName VmRoot VmDir VhdPath StopTimeoutSec
#@ include lib/hyperv-stop-vm.ps1
# Remove-VM -Name -Force deletes the VM's configuration; it leaves virtual hard disks in place, hence the
# explicit Remove-Item of the VHDX and the VM folder.
# Source: https://learn.microsoft.com/powershell/module/hyper-v/remove-vm?view=windowsserver2022-ps
$vm = Get-VM -Name $VmName -ErrorAction SilentlyContinue
if ($vm) {
    # Get-VMSnapshot -VMName: "Gets all checkpoints of virtual machine" (a checkpoint also moves the running disk to a
    # differencing .avhdx); Get-VMHardDiskDrive -VMName lists the attached disks with their Path.
    # Sources: https://learn.microsoft.com/powershell/module/hyper-v/get-vmsnapshot?view=windowsserver2022-ps,
    # https://learn.microsoft.com/powershell/module/hyper-v/get-vmharddiskdrive?view=windowsserver2022-ps
    $checkpoints = @(Get-VMSnapshot -VMName $VmName | ForEach-Object { $_.Name })
    if ($checkpoints.Count -gt 0) {
        throw "$VmName has checkpoints ($($checkpoints -join ', ')) that the program did not make and would delete with it: export what you need, then remove them (Remove-VMSnapshot) and run pulumi up again"
    }
    # A pass-through disk has no Path (its DiskNumber names it); an .avhdx with no checkpoint left is the system disk's
    # differencing disk whose merge has not finished: part of the system disk, never to be detached.
    $foreign = @(Get-VMHardDiskDrive -VMName $VmName | Where-Object { $_.Path -ne $VhdPath } | ForEach-Object {
        if (-not $_.Path) { "physical disk $($_.DiskNumber)" }
        elseif ($_.Path -like '*.avhdx') { "$($_.Path) (a checkpoint's differencing disk: let its merge finish, do not detach it)" }
        else { $_.Path } })
    if ($foreign.Count -gt 0) {
        throw "$VmName has disks the program did not attach ($($foreign -join ', ')): detach them to keep them (Remove-VMHardDiskDrive) or delete them yourself, then run pulumi up again"
    }
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
    # What else the folder holds (a partial copy of an interrupted create, files put there by hand): named, then gone.
    Get-ChildItem -LiteralPath $VmDir -Recurse -File | ForEach-Object { Write-Output "Removing $($_.FullName)" }
    Remove-Item -LiteralPath $VmDir -Recurse -Force
    Write-Output "Removed $VmDir"
}
