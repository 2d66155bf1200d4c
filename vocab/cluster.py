"""Names several layers must agree on: where each node's container runtime listens, and the namespace the
Windows HostProcess system pods share."""
from __future__ import annotations

# containerd's CRI endpoints: its default socket on Linux and its named pipe on Windows (containerd
# defaults; kubeadm's nodeRegistration.criSocket and the Windows kubelet's --container-runtime-endpoint).
LINUX_CRI_SOCKET = "unix:///var/run/containerd/containerd.sock"
WINDOWS_CRI_SOCKET = "npipe:////./pipe/containerd-containerd"

# The privileged namespace of windows_exporter, a HostProcess DaemonSet Pod Security `baseline` refuses
# (render/scheduling.py, render/metrics.py); Windows kube-proxy and the CSI node plugin run in kube-system,
# calico-node-windows in calico-system, Fluent Bit in logging.
WINDOWS_SYSTEM_NAMESPACE = "windows-system"
