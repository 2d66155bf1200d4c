# Upgrade the Kubernetes node in a Windows node VM. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec BaseUrl BinDir Binaries[] Directories[] ServiceCommand UpgradeTo Marker FlagsFile FlagPattern Machine
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
## The Windows node's side of a rolling upgrade, in the order of "Upgrading Windows nodes"
## (https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/upgrading-windows-nodes/: the new kubeadm.exe,
## `kubeadm upgrade node` "to sync new kubelet configuration", then the kubelet stopped, replaced and started):
## one guest step (lib/windows-kubernetes-binaries.ps1) replaces each binary whose SHA-256 differs, leaving a
## kubelet it stopped stopped, runs `kubeadm upgrade node`, gives the service kubeadm's flags file
## (lib/windows-kubelet-flags.ps1) and starts the kubelet. The chain drains the node before and uncordons it
## after (components/cluster/upgrade.py).
Write-Output "Upgrading the node in $VmName (machine $Machine) to $UpgradeTo"
#@ include lib/windows-kubernetes-binaries.ps1
