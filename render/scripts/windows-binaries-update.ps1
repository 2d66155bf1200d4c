# The update of a Windows node's version-bound preparation steps (containerd's binaries, the Kubernetes
# binaries): nothing. The binaries are installed when the step is created (for each VM instance, at the
# stack's versions) and move only with the upgrade chain, one drained node at a time (components/upgrade.py).
# What re-runs this step (a rotated credential, new script text) must not touch a running kubelet or
# containerd, least of all on every Windows node at once.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName What
Write-Output "${VmName}: the $What stay as they are (the upgrade chain moves them)"
