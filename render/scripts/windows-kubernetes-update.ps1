# The update of a Windows node's Kubernetes binaries step: nothing. The binaries are installed when the step
# is created (for each VM instance, at the stack's version) and move only with the upgrade chain, one drained
# node at a time (components/upgrade.py). What re-runs this step (a rotated credential, new script text) must
# not touch a running kubelet, least of all on every Windows node at once.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName
Write-Output "${VmName}: the Kubernetes binaries stay as they are (the upgrade chain moves them)"
