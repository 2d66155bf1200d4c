# Install the Kubernetes node binaries in a Windows node VM. Rendered by render/windows_bootstrap.py.
#@ include lib/hyperv-preamble.ps1
#@ inputs VmName HeartbeatTimeoutSec PsDirectTimeoutSec BaseUrl BinDir Binaries[] Directories[] ServiceCommand UpgradeTo Marker FlagsFile FlagPattern
#@ include lib/hyperv-read-guest-password.ps1
#@ include lib/hyperv-guest-wait.ps1
#@ include lib/windows-host-functions.ps1
#@ include lib/windows-kubernetes-binaries.ps1
