"""The order rolling and bounded operations take through the nodes (Kubernetes and runtime upgrades, VM-setting restarts):
control-plane nodes one at a time, the first first (kubeadm upgrade apply there, etcd quorum kept), then the
workers in waves, each wave a set of nodes drained, changed and uncordoned together.

Wave rules (config `rollout`):
- a pool is the workers of one zone and one OS; a wave takes at most `maxUnavailable` nodes of each pool
  (a percentage is of the pool, rounded down as Kubernetes rounds maxUnavailable, at least 1), and never a
  whole pool of more than one node;
- Linux and Windows workers go in the same waves (their drains do not compete for the same pods), except
  where that would leave a zone, or the cluster, with no Ready worker of any kind, or an OS with no Ready
  node: such a wave is split;
- zones one at a time (a zone's waves end before the next zone's begin) or together (each wave takes from
  every zone).
A node's steps in wave N wait for every node of wave N-1 to be uncordoned; a failed node stops the waves
after its own: Pulumi cancels the run at a failed step (steps under way finish, nothing new starts, so other
nodes of the wave may be left cordoned), and the steps' idempotence lets the next `up` resume.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from config.model import StackSpec
from vocab import checks

OS = Literal["linux", "windows"]


@dataclass(frozen=True)
class RolloutNode:
    name: str
    zone: str
    os: OS


@dataclass(frozen=True)
class RolloutPolicy:
    max_unavailable: int | str          # 3, or "20%"
    zones_together: bool = False


def batch_size(max_unavailable: int | str, pool: int) -> int:
    """Nodes of a pool of `pool` taken down at once: the count, or the share rounded down; at least 1; never the
    whole pool when it has more than one node."""
    if pool < 1:
        raise ValueError(f"an empty pool has no batch (pool {pool})")
    if not checks.is_max_unavailable(max_unavailable):
        raise ValueError(f"maxUnavailable {max_unavailable!r} is neither a node count nor a percentage from 1% to 100%")
    size = pool * int(max_unavailable[:-1]) // 100 if isinstance(max_unavailable, str) else max_unavailable
    return max(1, min(size, pool - 1 if pool > 1 else 1))


def _chunks(items: Sequence[RolloutNode], size: int) -> list[list[RolloutNode]]:
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def _safe(wave: list[RolloutNode], workers: Sequence[RolloutNode]) -> bool:
    """The wave leaves every zone that has two or more workers a Ready worker, the cluster a Ready worker, and
    each OS that has two or more nodes a Ready node of it."""
    down = {n.name for n in wave}
    if len(workers) > 1 and all(n.name in down for n in workers):
        return False
    for zone in {n.zone for n in wave}:
        members = [n for n in workers if n.zone == zone]
        if len(members) > 1 and all(n.name in down for n in members):
            return False
    for os_name in {n.os for n in wave}:
        members = [n for n in workers if n.os == os_name]
        if len(members) > 1 and all(n.name in down for n in members):
            return False
    return True


def _split(wave: list[RolloutNode], workers: Sequence[RolloutNode]) -> list[list[RolloutNode]]:
    """The wave, or consecutive smaller waves that are each safe: first by OS (Linux first), then by zone."""
    if _safe(wave, workers) or len(wave) == 1:
        return [wave]
    keys: tuple[Callable[[RolloutNode], object], ...] = (lambda n: n.os != "linux", lambda n: n.zone)
    for key in keys:
        groups: dict[object, list[RolloutNode]] = {}
        for node in wave:
            groups.setdefault(key(node), []).append(node)
        if len(groups) > 1:
            return [part for _, group in sorted(groups.items(), key=lambda kv: str(kv[0]))
                    for part in _split(group, workers)]
    half = len(wave) // 2
    return [*_split(wave[:half], workers), *_split(wave[half:], workers)]


def worker_waves(workers: Sequence[RolloutNode], zones: Sequence[str], policy: RolloutPolicy) -> list[list[str]]:
    """The workers' waves, each a list of node names, in order."""
    order = {zone: index for index, zone in enumerate(zones)}
    unknown = {n.zone for n in workers} - set(order)
    if unknown:
        raise ValueError(f"workers in zones not listed: {sorted(unknown)}")
    phases: list[list[str]] = [list(zones)] if policy.zones_together else [[zone] for zone in zones]
    waves: list[list[str]] = []
    for phase in phases:
        pools: list[list[list[RolloutNode]]] = []
        for zone in phase:
            for os_name in ("linux", "windows"):
                pool = sorted((n for n in workers if n.zone == zone and n.os == os_name), key=lambda n: n.name)
                if pool:
                    pools.append(_chunks(pool, batch_size(policy.max_unavailable, len(pool))))
        for index in range(max((len(p) for p in pools), default=0)):
            wave = [node for chunks in pools if index < len(chunks) for node in chunks[index]]
            waves += [[n.name for n in part] for part in _split(wave, workers)]
    return waves


def stack_waves(spec: StackSpec, windows: bool = True) -> list[list[str]]:
    """The stack's rolling order: each control-plane node alone, the first first, then the workers' waves (Windows
    workers only with `windows`). Lost nodes take no part: nothing may dial them."""
    control_plane = [[n.name] for n in spec.nodes.control_plane if not n.lost]
    workers = [RolloutNode(n.name, n.zone, "linux") for n in spec.nodes.linux if not n.lost]
    if windows:
        workers += [RolloutNode(n.name, n.zone, "windows") for n in spec.nodes.windows if not n.lost]
    policy = RolloutPolicy(spec.rollout.max_unavailable, zones_together=spec.rollout.zones == "together")
    return [*control_plane, *worker_waves(workers, spec.zones, policy)]


@dataclass(frozen=True)
class Rollout:
    """A rolling chain's plan: its waves of node names, and the host its gates name (the first control-plane node,
    which a gate never dials: components/cluster/waves.py)."""
    waves: list[list[str]]
    gate_host: str


def rollout(spec: StackSpec, windows: bool = True) -> Rollout:
    """The stack's rolling order (stack_waves) with its gates' host."""
    return Rollout(stack_waves(spec, windows), str(spec.nodes.control_plane[0].ip))


def lanes(names: Sequence[str], width: int) -> dict[str, str | None]:
    """Each name's predecessor in `width` parallel lanes (the name `width` places before it, or None): waiting for
    it keeps at most `width` of them running at once, in declaration order (a node added at the end changes no
    other node's predecessor)."""
    if width < 1:
        raise ValueError(f"lanes need a width of at least 1, not {width}")
    return {name: names[index - width] if index >= width else None for index, name in enumerate(names)}


def session_lanes(spec: StackSpec) -> dict[str, str | None]:
    """Each joining worker's predecessor in the lanes of sessions on the first control-plane node (its join
    credential and its readiness wait run there): Linux workers, then Windows workers, in declaration order."""
    names = [n.name for n in spec.nodes.linux] + [n.name for n in spec.nodes.windows]
    return lanes(names, spec.provisioning.control_plane_sessions)
