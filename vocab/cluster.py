"""Names several layers must agree on: where each node's container runtime listens, the namespace the
Windows HostProcess system pods share, and how a camelCase key is spelled in snake case."""
from __future__ import annotations

import re

# containerd's CRI endpoints: its default socket on Linux and its named pipe on Windows (containerd
# defaults; kubeadm's nodeRegistration.criSocket and the Windows kubelet's --container-runtime-endpoint).
LINUX_CRI_SOCKET = "unix:///var/run/containerd/containerd.sock"
WINDOWS_CRI_SOCKET = "npipe:////./pipe/containerd-containerd"

# The privileged namespace of windows_exporter, a HostProcess DaemonSet Pod Security `baseline` refuses
# (render/scheduling.py, render/metrics.py); Windows kube-proxy and the CSI node plugin run in kube-system,
# calico-node-windows in calico-system, Fluent Bit in logging.
WINDOWS_SYSTEM_NAMESPACE = "windows-system"


def snake_case(name: str) -> str:
    """A camelCase key as the Python SDKs name the argument (apiVersion -> api_version), and, upper-cased, as an
    environment variable (proxmoxSshPrivateKey -> PROXMOX_SSH_PRIVATE_KEY)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
