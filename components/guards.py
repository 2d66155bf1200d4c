"""Preview-time guards: dynamic resources whose provider `check` sees the state's previous inputs next to
the program's new ones, and so can refuse, before anything runs, a change the infrastructure cannot follow.
Their `check` functions are also what the mock engine runs (tools/mock/engine.py), so the tests see the same
refusals a preview would.

Pulumi stores a dynamic provider in the state (dill) and the provider process that runs `check` loads this
module from the project directory: keep its path stable and its checks self-contained.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

if TYPE_CHECKING:   # the provider process that loads this module runs the checks only: it needs no plan
    from plan.cluster import ClusterPlan, MachinesPlan

from .version_pin import KubernetesVersionPin, pin_failures

FIRST_KEY = "firstControlPlane"
NODES_KEY = "nodes"
ENCRYPTION_KEY = "secretsEncryptionKey"


def version_pin_check(olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
    return [reason for _, reason in pin_failures(olds, news)]


def machine_facts(plan: ClusterPlan) -> dict[str, Any]:
    """What the machines guard compares between runs: per node, what identifies its machine (VM id,
    address, host), its size, and whether the stack prepares its removal."""
    nodes: dict[str, Any] = {}
    for node in plan.machines.linux:
        vm = node.vm
        nodes[node.name] = {"os": "linux", "role": node.role, "vmId": vm.vm_id, "ip": node.ip, "host": vm.proxmox_node,
                            "cpu": vm.cpu, "memoryMb": vm.memory_mb, "diskGb": vm.disk_gb, "retire": node.retire,
                            "lost": node.lost}
    for windows_node in plan.machines.windows:
        nodes[windows_node.name] = {"os": "windows", "role": "worker", "ip": windows_node.ip, "host": windows_node.hyperv_host,
                                    "cpu": windows_node.cpu, "memoryMb": windows_node.memory_mb, "diskGb": windows_node.disk_gb,
                                    "retire": windows_node.retire, "lost": windows_node.lost}
    return {FIRST_KEY: plan.machines.linux[0].name, NODES_KEY: nodes, ENCRYPTION_KEY: plan.control_plane.encryption_key}


def _number(value: Any) -> Any:
    # The engine hands numbers over as doubles.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def machines_check(olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
    """Why the machines cannot go from the previous run's facts to these, one message per problem."""
    before: dict[str, Any] = (olds or {}).get(NODES_KEY) or {}
    after: dict[str, Any] = news.get(NODES_KEY) or {}
    if not before:
        return []
    failures: list[str] = []
    first_before, first_after = (olds or {}).get(FIRST_KEY), news.get(FIRST_KEY)
    if first_before and first_after != first_before:
        failures.append(
            f"the first control-plane node is {first_before}: kubeadm init ran there and every node's lifecycle "
            f"commands run there, so it cannot become {first_after}. Keep {first_before} first in "
            "nodes.controlPlane (docs/lifecycle.md: The first control-plane node).")
    removed = {name: facts for name, facts in before.items() if name not in after}
    for name, facts in removed.items():
        if facts.get("role") == "control-plane" and not (facts.get("retire") or facts.get("lost")):
            failures.append(
                f"{name} is a control-plane node: set retire: true on it (lost: true if its machine is gone) and "
                "run `pulumi up` once before removing it; its VM is protected until then.")
    key_before, key_after = (olds or {}).get(ENCRYPTION_KEY), news.get(ENCRYPTION_KEY)
    leaving = sorted(name for name, facts in removed.items()
                     if facts.get("role") == "control-plane" and not facts.get("lost"))
    if key_before and key_after != key_before and leaving:
        # The control-plane steps leave a removed node out, but its API server serves until its reset at the end of
        # the run: it would keep writing with the old key while the others write with the new one, which it cannot
        # read (components/cluster/control_plane.py).
        failures.append(
            f"the Secrets encryption key changes ({key_before} to {key_after}) in the run that removes "
            f"{', '.join(leaving)}, whose API server would keep writing with the old key until its reset: remove "
            "it in one run and change the key in the next.")
    for name, facts in after.items():
        old = before.get(name)
        if old is not None and old.get("lost") and not facts.get("lost"):
            failures.append(
                f"{name} was declared lost and taken out of service: remove it from the stack, then add it again "
                "to build a new machine for it.")
        for key, what in (("vmId", "VM id"), ("ip", "address")):
            value = _number(facts.get(key))
            if value is None or (old is not None and _number(old.get(key)) == value):
                continue
            holder = next((other for other, o in removed.items() if _number(o.get(key)) == value), None)
            if holder is not None:
                failures.append(
                    f"{name} takes {what} {value} from {holder}, which this run removes: Pulumi creates and "
                    f"replaces machines before it deletes removed ones, so the two would collide. Remove {holder} "
                    f"in one run and add {name} in the next, or give {name} another {what}.")
        if old is None or facts.get("os") != "linux":
            continue
        disk_before, disk_after = _number(old.get("diskGb")), _number(facts.get("diskGb"))
        if isinstance(disk_before, int) and isinstance(disk_after, int) and disk_after < disk_before:
            failures.append(f"{name}: diskGb {disk_after} is smaller than {disk_before}; a disk can only grow.")
        resized = disk_before != disk_after
        restarted = any(_number(old.get(k)) != _number(facts.get(k)) for k in ("cpu", "memoryMb"))
        if resized and restarted:
            # bpg vmUpdate: with reboot_after_update false and a CPU or memory change pending a restart, "cannot
            # resize disks while the VM is running because this change requires the VM to be powered off"; the
            # CPU and memory are written first, so the run would stop half-applied.
            failures.append(
                f"{name}: change the disk and the CPU or memory in separate runs. The disk grows online, but "
                "once a CPU or memory change is pending a restart the provider refuses to resize a running VM "
                "(reboot_after_update is off, so that no VM restarts outside the restart chain).")
    return failures


# A machine's VM id and address are each held by a reservation resource named after the value (machine_reservations),
# which the node's machines depend on, so the engine deletes it only once the machine's deletion has succeeded
# (dependents first: deployment_executor.go, step_generator.go ScheduleDeletes). A node that takes a value whose
# reservation is still in the state declares that same resource (one URN per value) with another holder, which its
# check refuses at preview: the removal that should have freed the value has not finished.
HOLDER_KEY = "holder"


def reservation_check(olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
    holder_before, holder_after = (olds or {}).get(HOLDER_KEY), news.get(HOLDER_KEY)
    if not holder_before or holder_before == holder_after:
        return []
    what, value = news.get("what"), _number(news.get("value"))
    return [f"{holder_after} takes {what} {value}, still held by {holder_before}: its removal has not finished (a "
            f"failed or interrupted delete left its machine in the state), or {holder_before} gives it up in this "
            f"same run, before its machine changes. Run `pulumi up` without {holder_after}'s change until "
            f"{holder_before} no longer holds it (docs/lifecycle.md, \"A removal that failed\"), or give "
            f"{holder_after} another {what}."]


# The cluster's name is in every resource's name (so its URN), each VM's name and kubeadm's clusterName. A stack whose
# cluster.name changes would declare a second cluster and delete the first at the end of the run (every node drained,
# reset and destroyed; only the control-plane VMs' protection stops part of it). The identity resource's own name
# holds no cluster name, so it keeps its URN through the change and its check sees both names.
CLUSTER_NAME_KEY = "clusterName"
IDENTITY_NAME = "cluster-identity"


def identity_check(olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
    before, after = (olds or {}).get(CLUSTER_NAME_KEY), news.get(CLUSTER_NAME_KEY)
    if not before or before == after:
        return []
    return [f"cluster.name changes from {before} to {after}: the name is part of every resource's identity (its URN, "
            "the VM names, kubeadm's clusterName), so this run would build a second cluster and delete this one. A "
            f"cluster cannot be renamed in place: keep cluster.name {before}. For a cluster under the new name, create "
            "a new stack with it (`pulumi stack init`), move the workloads with a backup and a restore (docs/backup.md), "
            "then `pulumi destroy` this stack."]


class _CheckedProvider(ResourceProvider):
    """A dynamic provider that only records its inputs; its `check` refuses what `guard` refuses."""

    serialize_as_secret_always = False
    guard: Callable[[dict[str, Any], dict[str, Any]], list[str]]
    key: str

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        return CheckResult(news, [CheckFailure(self.key, reason) for reason in type(self).guard(olds or {}, news)])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=olds != news)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=self.key, outs=props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=news)


class MachinesGuardProvider(_CheckedProvider):
    guard = staticmethod(machines_check)
    key = NODES_KEY


class MachinesGuard(Resource, module="hybrid", name="MachinesGuard"):
    """The machines' identities and sizes as the last run left them: refuses, at preview, a change that would
    collide with a machine being removed, move the first control-plane node, remove an unprepared
    control-plane node, or resize a disk together with CPU or memory."""

    def __init__(self, name: str, plan: ClusterPlan, opts: pulumi.ResourceOptions | None = None):
        super().__init__(MachinesGuardProvider(), name, machine_facts(plan), opts)


class ClusterIdentityProvider(_CheckedProvider):
    guard = staticmethod(identity_check)
    key = CLUSTER_NAME_KEY


class ClusterIdentity(Resource, module="hybrid", name="ClusterIdentity"):
    """The stack's cluster name as the last run left it: refuses, at preview, renaming the cluster (identity_check)."""

    def __init__(self, cluster_name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(ClusterIdentityProvider(), IDENTITY_NAME, {CLUSTER_NAME_KEY: cluster_name}, opts)


class MachineReservationProvider(_CheckedProvider):
    guard = staticmethod(reservation_check)
    key = HOLDER_KEY


class MachineReservation(Resource, module="hybrid", name="MachineReservation"):
    """One VM id or address, held by the node named in `holder` until that node's machine is deleted."""

    def __init__(self, name: str, holder: str, what: str, value: str | int,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__(MachineReservationProvider(), name, {HOLDER_KEY: holder, "what": what, "value": value}, opts)


def machine_reservations(plan: MachinesPlan, parent: pulumi.Resource) -> dict[str, tuple[pulumi.Resource, ...]]:
    """Per node, the reservations of its VM id (Linux) and address: one resource per value, named after it."""
    opts = pulumi.ResourceOptions(parent=parent)
    cluster = plan.cluster_name

    def address(name: str, ip: str) -> MachineReservation:
        return MachineReservation(f"{cluster}-address-{ip.replace('.', '-')}", name, "address", ip, opts)

    reservations: dict[str, tuple[pulumi.Resource, ...]] = {}
    for node in plan.linux:
        reservations[node.name] = (
            MachineReservation(f"{cluster}-vm-id-{node.vm.vm_id}", node.name, "VM id", node.vm.vm_id, opts),
            address(node.name, node.ip))
    for windows_node in plan.windows:
        reservations[windows_node.name] = (address(windows_node.name, windows_node.ip),)
    return reservations


# Per dynamic resource type, its check (the same function its provider's `check` calls).
DYNAMIC_CHECKS: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[str]]] = {
    f"pulumi-python:{KubernetesVersionPin._resource_type_name}": version_pin_check,
    f"pulumi-python:{MachinesGuard._resource_type_name}": machines_check,
    f"pulumi-python:{ClusterIdentity._resource_type_name}": identity_check,
    f"pulumi-python:{MachineReservation._resource_type_name}": reservation_check,
}
