foreach ($change in $guest.Changes) { Write-Output "${VmName}: $change" }
if (@($guest.Changes | Where-Object { $_ }).Count -eq 0) { Write-Output "${VmName}: $Step already in place" }
