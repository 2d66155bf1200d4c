"""How many pods a Windows node can hold under Calico's VXLAN: a fact the config layer checks a stack
against and the renderers size the Windows kubelet by."""
from __future__ import annotations

# A Windows node networks its pods from one block only, and loses four of its addresses: "four IPs per
# Windows node-owned block must be reserved for internal purposes" and "kube-proxy currently only
# supports a single IP block per host" (https://docs.tigera.io/calico/latest/getting-started/kubernetes/
# windows-calico/limitations, rows "IPs reserved for Windows" and "Single IP block per host"): a /26
# block leaves 60 pod addresses per Windows node.
CALICO_WINDOWS_RESERVED_IPS_PER_BLOCK = 4
# KubeletConfiguration maxPods, "Default: 110" (kubernetes/kubernetes
# staging/src/k8s.io/kubelet/config/v1beta1/types.go).
KUBELET_DEFAULT_MAX_PODS = 110


def windows_pod_capacity(block_size: int) -> int:
    """Pod addresses a Windows node has: its single block minus the addresses Windows reserves."""
    # 2 to the power of the host bits, as a shift: an int to the type checker (int ** int may be a float).
    return (1 << (32 - block_size)) - CALICO_WINDOWS_RESERVED_IPS_PER_BLOCK


def windows_max_pods(block_size: int) -> int:
    """The Windows kubelet's maxPods: never more pods than the node has addresses for. HostProcess pods
    (calico-node-windows, kube-proxy, windows_exporter, Fluent Bit) use the host network and need no
    address but still count, so the bound is conservative by those few pods, never optimistic."""
    capacity = windows_pod_capacity(block_size)
    if capacity < 1:
        raise ValueError(f"a /{block_size} block leaves no pod address on a Windows node")
    return min(KUBELET_DEFAULT_MAX_PODS, capacity)
