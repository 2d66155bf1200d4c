"""The node lifecycle steps that run on the first control-plane node, for a Linux or a Windows node alike:
waiting for a new node to register and be Ready, draining it before its removal, taking a lost machine's
Node out of service, deregistering it, and the upgrade chain's drain and uncordon. Each returns a bash
script (render/scripts/node-*.sh) for ``render.shell.bash_command``, run as root with admin.conf.

Bounded waits: kubectl's global `--request-timeout` is "the length of time to wait before giving up on a
single server request" and defaults to 0, no timeout (https://kubernetes.io/docs/reference/kubectl/kubectl/),
so every kubectl call in the scripts sets it; a loop of N attempts with a pause between them is then
bounded too, and tests can stub `sleep`.
"""
from __future__ import annotations

import math

from render.script_files import render_script
from vocab.checks import check_machine, check_node_name, check_timeout, check_version

POLL_SECONDS = 5


def poll_attempts(timeout_seconds: int) -> int:
    """How many POLL_SECONDS pauses a wait of ``timeout_seconds`` takes (at least one)."""
    return max(1, math.ceil(timeout_seconds / POLL_SECONDS))


def render_wait_for_node(node_name: str, timeout_seconds: int = 900, ready_timeout_seconds: int = 1800) -> str:
    """On the first control-plane node: wait up to ``timeout_seconds`` until the Node object
    ``node_name`` exists, then up to ``ready_timeout_seconds`` until it is Ready
    (render/scripts/node-wait-registered.sh), so that what depends on a node starts only on a working
    node. Ready needs the node's CNI: on a Windows node after its first image pulls, hence the longer
    default.
    """
    check_node_name(node_name)
    check_timeout(timeout_seconds)
    check_timeout(ready_timeout_seconds)

    return render_script("node-wait-registered.sh", NODE=node_name, TIMEOUT=timeout_seconds,
                         ATTEMPTS=poll_attempts(timeout_seconds), POLL_SECONDS=POLL_SECONDS,
                         READY_TIMEOUT=ready_timeout_seconds)


# How long a removal waits for Longhorn to rebuild a worker's replicas elsewhere before it fails (the next run resumes).
LONGHORN_EVICTION_SECONDS = 4 * 3600


def render_drain(node_name: str, timeout_seconds: int = 600, etcd_pod: str | None = None,
                 longhorn_namespace: str | None = None, longhorn_timeout_seconds: int = LONGHORN_EVICTION_SECONDS) -> str:
    """On the first control-plane node: cordon and drain the Node ``node_name``, if it exists
    (render/scripts/node-drain.sh): the delete side of a node's readiness wait, so the first step when a
    node is removed, before ``kubeadm reset`` on the node (render_reset) and render_deregister.

    With ``etcd_pod`` (a control-plane node's drain) the removal is refused, before anything is cordoned,
    unless the other etcd members keep quorum. PodDisruptionBudgets are respected and never bypassed: the
    operator fixes the blocker and runs the destroy again. With ``longhorn_namespace`` (a Linux worker of a stack
    with Longhorn) its Longhorn replicas are evicted first and the drain waits until none is left on it
    (render/scripts/lib/longhorn-evict.sh), ``longhorn_timeout_seconds`` at most.
    """
    check_node_name(node_name)
    check_timeout(timeout_seconds)
    if etcd_pod is not None:
        check_node_name(etcd_pod)

    if longhorn_namespace is not None:
        check_node_name(longhorn_namespace)
        check_timeout(longhorn_timeout_seconds)
    return render_script("node-drain.sh", NODE=node_name, TIMEOUT=timeout_seconds, ETCD_POD=etcd_pod or "",
                         SKIP_WAIT_SECONDS=SKIP_WAIT_SECONDS, OUT_OF_SERVICE_TAINT=OUT_OF_SERVICE_TAINT,
                         LONGHORN_NAMESPACE=longhorn_namespace or "",
                         LONGHORN_ATTEMPTS=poll_attempts(longhorn_timeout_seconds), POLL_SECONDS=POLL_SECONDS)


# The non-graceful node shutdown taint, as `key=value:effect` (render/scripts/node-mark-lost.sh says why).
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"
# How long a drain of a NotReady node waits for a pod's deletion its kubelet cannot confirm.
SKIP_WAIT_SECONDS = 60


def render_mark_lost(node_name: str, etcd_pod: str | None = None) -> str:
    """On the first control-plane node: take the Node of a machine declared lost out of service
    (render/scripts/node-mark-lost.sh); refused while the Node is Ready. With ``etcd_pod`` (a control-plane
    node) its etcd member is removed too, quorum checked."""
    check_node_name(node_name)
    if etcd_pod is not None:
        check_node_name(etcd_pod)
    return render_script("node-mark-lost.sh", NODE=node_name, OUT_OF_SERVICE_TAINT=OUT_OF_SERVICE_TAINT,
                         ETCD_POD=etcd_pod or "")


# The annotation the upgrade chain leaves on a Node it cordoned, naming the version it upgrades to: the
# uncordon step lifts only a cordon the chain set, never one an operator set for reasons of their own.
UPGRADE_ANNOTATION = "hybrid-cluster.io/upgrading-to"


def annotation_jsonpath(annotation: str) -> str:
    """The kubectl JSONPath of one annotation of an object; kubectl JSONPath escapes the dots of a key
    with a backslash (kubectl jsonpath reference)."""
    return "{.metadata.annotations." + annotation.replace(".", "\\.") + "}"


_UPGRADE_MARK_JSONPATH = annotation_jsonpath(UPGRADE_ANNOTATION)
def _check_node_args(node_name: str, timeout_seconds: int, etcd_pod: str | None = None) -> None:
    check_node_name(node_name)
    check_timeout(timeout_seconds)
    if etcd_pod is not None:
        check_node_name(etcd_pod)


def render_upgrade_drain(node_name: str, version: str, runtime: str, timeout_seconds: int = 600,
                         etcd_pod: str | None = None, machine: str = "unnamed") -> str:
    """On the first control-plane node, before a node's upgrade: unless the Node's kubelet already runs
    ``version`` on containerd ``runtime`` (and no earlier run of the chain left it cordoned), mark it with UPGRADE_ANNOTATION,
    cordon and drain it. For a control-plane node the etcd quorum without it is checked first: its
    etcd member restarts when kubeadm upgrades the static Pods. The drain is render_drain's (same
    flags, PodDisruptionBudgets respected, no eviction bypass)."""
    check_version(version)
    check_version(runtime, "runtime version")
    _check_node_args(node_name, timeout_seconds, etcd_pod)
    check_machine(machine)
    return render_script("node-upgrade-drain.sh", NODE=node_name, TARGET=f"v{version}", RUNTIME=runtime,
                         TIMEOUT=timeout_seconds,
                         ETCD_POD=etcd_pod or "", MARK_ANNOTATION=UPGRADE_ANNOTATION,
                         MARK_JSONPATH=_UPGRADE_MARK_JSONPATH, MACHINE=machine)


def render_upgrade_uncordon(node_name: str, version: str, runtime: str, timeout_seconds: int = 900,
                            machine: str = "unnamed") -> str:
    """On the first control-plane node, after a node's upgrade: wait until the Node is Ready with kubelet
    ``version`` on containerd ``runtime``, then lift the cordon the chain set (UPGRADE_ANNOTATION), and only that one. A node that
    does not come back stops the chain here: no further node is drained."""
    check_version(version)
    check_version(runtime, "runtime version")
    _check_node_args(node_name, timeout_seconds)
    check_machine(machine)
    return render_script("node-upgrade-uncordon.sh", NODE=node_name, TARGET=f"v{version}", RUNTIME=runtime,
                         TIMEOUT=timeout_seconds,
                         ATTEMPTS=poll_attempts(timeout_seconds), POLL_SECONDS=POLL_SECONDS,
                         MARK_ANNOTATION=UPGRADE_ANNOTATION, MARK_JSONPATH=_UPGRADE_MARK_JSONPATH, MACHINE=machine)


def render_deregister(node_name: str, etcd_pod: str | None = None) -> str:
    """On the first control-plane node: the last step of removing a node, after ``kubeadm reset`` ran on
    it. With ``etcd_pod`` (a control-plane node) the node's etcd member is removed by name if reset could
    not remove it (a node that was already dead, or a reset that failed half-way), never below quorum;
    then the Node object is deleted (``kubectl delete node NAME --ignore-not-found``,
    https://kubernetes.io/docs/reference/kubectl/generated/kubectl_delete/). A second run finds neither
    and does nothing."""
    check_node_name(node_name)
    if etcd_pod is not None:
        check_node_name(etcd_pod)

    return render_script("node-deregister.sh", NODE=node_name, ETCD_POD=etcd_pod or "")
