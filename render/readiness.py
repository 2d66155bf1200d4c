"""When a freshly created Linux machine has finished preparing itself: the script that waits for it
(render/scripts/cloud-init-wait.sh) and the inputs of the wait it shares with the kubeadm scripts
(render/scripts/lib/wait-for-cloud-init.sh)."""
from __future__ import annotations

from render.linux_node import PREPARE_SCRIPT_PATH
from render.script_files import render_script

# A first boot pulls containerd, runc and the kube packages over the site's internet link, which may be slow and far
# from the download servers (the reference site's crosses a border).
CLOUD_INIT_TIMEOUT_SECONDS = 1800


def cloud_init_wait_inputs() -> dict[str, object]:
    """The inputs of lib/wait-for-cloud-init.sh."""
    return {"CLOUD_INIT_TIMEOUT": CLOUD_INIT_TIMEOUT_SECONDS, "PREPARE_SCRIPT": PREPARE_SCRIPT_PATH}


def render_wait_for_cloud_init() -> str:
    """Bash run over SSH on a new Linux node: wait for cloud-init's final stage and fail if it failed."""
    return render_script("cloud-init-wait.sh", **cloud_init_wait_inputs())
