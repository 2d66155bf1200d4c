"""Scripts that report when a freshly created machine has finished preparing itself."""
from __future__ import annotations


def render_wait_for_cloud_init(timeout_seconds: int = 1800) -> str:
    """Bash run over SSH on a new Linux node: wait for cloud-init's final stage and fail if it failed.

    `cloud-init status --wait` exits 0 when done, 1 on a critical error and 2 when it finished with
    recoverable errors ("degraded"); 2 only exists from cloud-init 23.4 on
    (https://docs.cloud-init.io/en/latest/reference/cli.html#status). Our node preparation script exits
    non-zero on any failure, which cloud-init reports as an error (1), so 2 is a warning here.
    """
    return f"""set -euo pipefail
rc=0
timeout {timeout_seconds} cloud-init status --wait --long || rc=$?
case "$rc" in
  0) echo "cloud-init finished" ;;
  2) echo "cloud-init finished with recoverable errors (see /var/log/cloud-init.log)" >&2 ;;
  124) echo "cloud-init did not finish within {timeout_seconds}s" >&2; exit 1 ;;
  *) echo "cloud-init failed (status $rc): see /var/log/cloud-init-output.log" >&2; exit 1 ;;
esac
test -f /var/lib/cloud/instance/boot-finished
"""
