"""How the program learns a Linux node's SSH host key, which every connection to the node pins: the script that
reads the key the node generated at its first boot, through the QEMU guest agent on its Proxmox node
(render/scripts/guest-host-key.sh)."""
from __future__ import annotations

from render.readiness import CLOUD_INIT_TIMEOUT_SECONDS
from render.script_files import render_script
from vocab.checks import check_timeout, check_vm_id


def render_guest_host_key(vm_id: int, wait_timeout_seconds: int = CLOUD_INIT_TIMEOUT_SECONDS) -> str:
    """Bash run on the Proxmox node holding VM `vm_id`: wait for its guest agent and its cloud-init, then print
    its ed25519 (or ECDSA) host key as `<type> <base64>`. The wait covers a whole first boot, in which the
    preparation script may be what starts the agent."""
    check_vm_id(vm_id)
    check_timeout(wait_timeout_seconds)
    return render_script("guest-host-key.sh", VMID=vm_id, WAIT_TIMEOUT=wait_timeout_seconds)
