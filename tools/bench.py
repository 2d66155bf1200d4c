"""Scale and speed benchmark: how the declared graph grows with node count, and how far one change reaches.

    python -m tools.bench                 # 3, 30 and 300 nodes; writes build/bench.json and docs/benchmarks.md
    python -m tools.bench --sizes 3 30    # a quicker run

Everything is measured on the graph the program declares under the mock engine, so it needs no hardware:
- evaluation time (wall and CPU) and peak memory of a program run, each run in its own process (the least CPU
  of --runs), and at the largest size once more with Python's default garbage-collector thresholds; from 30 nodes
  against two floors, the bare program and the program's graph replayed (bare_program, replay_program), and with
  one more run sampled for where its CPU goes (measure_shares: the program's own code, imports, the SDK);
- the longest dependency chain, in resources and in estimated seconds (DURATIONS), next to the sum of all
  estimates (what a tool that does one thing at a time would take);
- the blast radius of single changes: what a change touches, next to the minimal set it should touch.
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from pathlib import Path

import pulumi
import pulumi_command

import tuning
from components.cluster.waves import GATE_MARK, gate_name
from tools import cpu_shares
from tools.mock.program import (
    Recording,
    Resource,
    carries,
    changed_resources,
    placeholder,
    placeholder_secrets,
    run_declarations,
    run_program,
)
from tools.mock.providers import new_host_key
from tools.synth import plain
from vocab.cluster import snake_case

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = "bench"
# The program's CPU per resource may be at most this many times the bare program's (#40): what the program adds to
# the SDK's own registration of each resource.
BARE_RATIO_TARGET = 1.5

# Estimated seconds per resource, first match wins: (type, name suffix, seconds, what it stands for).
# They are planning figures for a datacenter like hk-prod (local ZFS clones, a Harbor mirror), not
# measurements; what matters is that one table prices every graph the same way.
DURATIONS: list[tuple[str, str, float, str]] = [
    ("proxmoxve:index/vmLegacy:VmLegacy", "", 90, "full clone of a template and first boot"),
    # The upgrade chain has no create step (components/cluster/upgrade.py): nothing runs when it is declared.
    ("command:remote:Command", "-drain-for-upgrade", 0, "upgrade chain: nothing on create (drains on a version change)"),
    ("command:remote:Command", "-node-upgrade", 0, "upgrade chain: nothing on create (upgrades on a version change)"),
    ("command:remote:Command", "-runtime-upgrade", 0, "upgrade chain: nothing on create (Windows containerd on a pin change)"),
    ("command:remote:Command", "-uncordon-after-upgrade", 0, "upgrade chain: nothing on create (uncordons on a version change)"),
    # The reboot chain has no create step either (components/cluster/restarts.py).
    ("command:remote:Command", "-drain-for-restart", 0, "reboot chain: nothing on create (drains when VM settings change)"),
    ("command:remote:Command", "-vm-restart", 0, "reboot chain: nothing on create (qm reboot when VM settings change)"),
    ("command:remote:Command", "-uncordon-after-restart", 0, "reboot chain: nothing on create (uncordons after the restart)"),
    ("proxmoxve:index/fileLegacy:FileLegacy", "", 3, "snippet upload over SSH"),
    ("tls:index/privateKey:PrivateKey", "", 1, "a node's SSH host key, made locally"),
    ("command:remote:Command", "-host-key-install", 5, "the node presents its host key (or gets it in place)"),
    ("command:remote:Command", "-cloud-init", 420, "cloud-init: packages, containerd, kubeadm"),
    ("command:remote:Command", "-prepare", 20, "node preparation re-run (a no-op after first boot)"),
    ("command:remote:Command", "-nic-offload", 20, "Hyper-V host NIC settings"),
    ("command:remote:Command", "-vm", 600, "Windows VM: copy golden VHDX, create, boot, name, address"),
    ("command:remote:Command", "-prepare-containers-feature", 420, "Containers feature and its reboot"),
    ("command:remote:Command", "-prepare-host-settings", 30, "w32time, ports, firewall"),
    ("command:remote:Command", "-prepare-containerd-binaries", 150, "containerd download, check and install"),
    ("command:remote:Command", "-prepare-containerd", 30, "containerd configuration and service"),
    ("command:remote:Command", "-prepare-kubernetes", 150, "kubelet/kubeadm download and service"),
    ("command:remote:Command", "-init", 240, "kubeadm init"),
    ("command:remote:Command", "-join-credentials", 5, "kubeadm token create"),
    ("command:remote:Command", "-join", 120, "kubeadm join"),
    ("command:remote:Command", "-drain", 180, "node registered and Ready"),
    ("command:remote:Command", "-registration", 1, "nothing on create (deregisters on delete)"),
    ("command:remote:Command", "-ready", 180, "node Ready"),
    ("command:remote:Command", "-kubeconfig", 2, "issue the provider's credential"),
    ("kubernetes:helm.sh/v3:Release", "", 150, "Helm release until its workloads are ready"),
    ("kubernetes:helm.sh/v4:Chart", "", 20, "chart rendered locally, its objects applied (CRDs)"),
    ("kubernetes:operator.tigera.io/v1:Installation", "", 240, "Calico rolled out by the operator"),
    ("kubernetes:apps/v1:DaemonSet", "", 120, "DaemonSet rollout"),
    ("kubernetes:apps/v1:Deployment", "", 180, "Deployment available (Windows image pulls dominate)"),
    ("kubernetes:", "", 3, "any other Kubernetes object"),
    ("pulumi:providers:", "", 1, "provider configuration"),
    ("pulumi-python:dynamic:", "", 1, "version pin"),
]


# A patch upgrade, per step as it runs on `update` (the steps do nothing on create), from the figures issue #28
# gathered from upstream docs: a drain 1-3 min, the package upgrade and kubelet restart 1-2 min on Linux and
# 3-6 min on Windows, uncordon and Ready 1 min. Middle values; the first control-plane node's `kubeadm upgrade
# apply` (every control-plane static Pod and the add-ons) takes longer than a node's `upgrade node`.
UPGRADE_DURATIONS: list[tuple[str, float, str]] = [
    ("-upgrade-{first}-node-upgrade", 300, "first control-plane node: kubeadm upgrade apply, packages, kubelet"),
    ("-drain-for-upgrade", 120, "drain (PodDisruptionBudgets respected)"),
    ("-runtime-upgrade", 90, "Windows: containerd staged and swapped"),
    ("-node-upgrade", 90, "Linux: packages, kubeadm upgrade node, kubelet restart (Windows: binaries, 180)"),
    ("-uncordon-after-upgrade", 60, "Ready at the new version, uncordon"),
]
WINDOWS_NODE_UPGRADE = 180.0


def upgrade_estimate(name: str, first_control_plane: str) -> float:
    """Seconds a patch upgrade spends in this resource (0: not part of the upgrade)."""
    if not name.startswith(f"{CLUSTER}-upgrade-"):
        return 0.0
    for suffix, seconds, _ in UPGRADE_DURATIONS:
        if name.endswith(suffix.replace("{first}", first_control_plane)):
            if suffix == "-node-upgrade" and "-win-" in name:
                return WINDOWS_NODE_UPGRADE
            return seconds
    return 0.0


def estimate(type_: str, name: str, custom: bool) -> float:
    if not custom or GATE_MARK in name:
        return 0.0  # components and the gates between waves (components/cluster/waves.py) do nothing themselves
    for pattern, suffix, seconds, _ in DURATIONS:
        if type_.startswith(pattern) and name.endswith(suffix):
            return seconds
    return 5.0


@dataclass(frozen=True)
class Chain:
    seconds: float
    resources: int
    names: list[str]


def critical_path(recording: Recording, weight: Callable[[Resource], float] | None = None) -> Chain:
    """The longest chain of dependencies, weighted by DURATIONS (or `weight`)."""
    by_urn = recording.by_urn()
    best: dict[str, tuple[float, int, str | None]] = {}

    def visit(urn: str) -> tuple[float, int, str | None]:
        if urn in best:
            return best[urn]
        r = by_urn[urn]
        deps = [d for d in set(r.dependencies) if d in by_urn]
        prior = max((visit(d) + (d,) for d in deps), key=lambda t: (t[0], t[1]), default=(0.0, 0, None, None))
        own = weight(r) if weight is not None else estimate(r.type, r.name, r.custom)
        best[urn] = (prior[0] + own, prior[1] + (1 if r.custom else 0), prior[3])
        return best[urn]

    sys.setrecursionlimit(max(10000, len(by_urn) * 4))
    end = max(by_urn, key=lambda u: visit(u)[0])
    seconds, count, _ = visit(end)
    names: list[str] = []
    cursor: str | None = end
    while cursor is not None:
        names.append(by_urn[cursor].name)
        cursor = best[cursor][2]
    return Chain(seconds=seconds, resources=count, names=list(reversed(names)))


# A readiness wait ends when its node is Ready, about this long after its join, or at once (one poll) when it starts
# later than that: waits queued behind each other in a session lane mostly find their nodes Ready.
READY_AFTER_JOIN = 180.0
POLL_SECONDS = 5.0


def schedule(recording: Recording) -> dict[str, tuple[float, float]]:
    """Each resource's modelled (start, end) in seconds when the stack is created: it starts when all it depends
    on has ended (the engine's default parallelism is unbounded) and lasts its DURATIONS estimate, except a node's
    readiness wait, which ends when the node is Ready (READY_AFTER_JOIN after its join) or one poll after it
    starts, whichever is later."""
    by_urn = recording.by_urn()
    pending = {urn: {d for d in set(r.dependencies) if d in by_urn} for urn, r in by_urn.items()}
    dependents: dict[str, list[str]] = {urn: [] for urn in by_urn}
    for urn, deps in pending.items():
        for dep in deps:
            dependents[dep].append(urn)
    remaining = {urn: len(deps) for urn, deps in pending.items()}
    ready = [urn for urn, count in remaining.items() if count == 0]
    spans: dict[str, tuple[float, float]] = {}
    while ready:
        urn = ready.pop()
        r = by_urn[urn]
        start = max((spans[d][1] for d in pending[urn]), default=0.0)
        if r.custom and r.type == "command:remote:Command" and r.name.endswith("-drain") and "-kubeadm-" in r.name:
            joins = [spans[d][1] for d in pending[urn] if by_urn[d].name.endswith("-join")]
            end = max(start + POLL_SECONDS, (max(joins) if joins else start) + READY_AFTER_JOIN)
        else:
            end = start + estimate(r.type, r.name, r.custom)
        spans[urn] = (start, end)
        for dependent in dependents[urn]:
            remaining[dependent] -= 1
            if remaining[dependent] == 0:
                ready.append(dependent)
    if len(spans) != len(by_urn):
        raise ValueError("the recorded graph has a cycle")
    return {by_urn[urn].name: span for urn, span in spans.items()}


def create_seconds(recording: Recording) -> float:
    """The modelled wall time of creating the stack (schedule)."""
    return max((end for _, end in schedule(recording).values()), default=0.0)


def serial_seconds(recording: Recording) -> float:
    return sum(estimate(r.type, r.name, r.custom) for r in recording.resources)


def upgrade_model(recording: Recording) -> dict:
    """A patch upgrade under the program's waves: the longest chain of its steps, next to running every node's
    steps one after another."""
    first = next(r.name for r in recording.resources if r.name.endswith("-drain-for-upgrade")).removeprefix(
        f"{CLUSTER}-upgrade-").removesuffix("-drain-for-upgrade")
    def weight(r: Resource) -> float:
        return upgrade_estimate(r.name, first) if r.custom else 0.0
    chain = critical_path(recording, weight)
    serial = sum(weight(r) for r in recording.resources)
    return {"upgrade_seconds": chain.seconds, "upgrade_serial_seconds": serial,
            "upgrade_steps_in_chain": sum(1 for name in chain.names if upgrade_estimate(name, first) > 0)}



# The machines guard (components/guards.py) records every node's identity and size: any node change
# updates it, and it runs nothing.
GUARD = f"{CLUSTER}-machines"
# The kubelet serving approver's inventory on each control-plane node lists every node (render/serving_approver.py): a
# node added or removed rewrites it there (one step per control-plane node; no role or program changes).
APPROVER_PREFIX = f"{CLUSTER}-kubelet-serving-approver-"


def approvers(recording) -> set[str]:
    return {r.name for r in recording.resources
            if r.name.startswith(APPROVER_PREFIX) and r.type == "command:remote:Command"}

# The patch upgrade the blast-radius scenario makes: from the patch before the reference stack's to it.
PATCH_UPGRADE = ("1.36.3", "1.36.4")


# Hosts grow with the nodes, as a datacenter's would: one Proxmox node per 20 Linux VMs and one Hyper-V host per
# 12 Windows VMs in each zone (planning figures for 8-vCPU nodes on two-socket hosts).
LINUX_VMS_PER_PROXMOX_NODE = 20
WINDOWS_VMS_PER_HYPERV_HOST = 12


def generate_stack(nodes: int, windows_share: float = 0.3) -> dict:
    """A valid stack of `nodes` nodes: 3 control-plane (1 below 10 nodes), Linux and Windows workers
    alternating over two zones, addresses in a /16 node network, hosts in proportion to the VMs."""
    values = json.loads(json.dumps(_reference()))
    control_plane = 1 if nodes < 10 else 3
    workers = nodes - control_plane
    windows = max(1, round(workers * windows_share)) if workers > 1 else 0
    linux = workers - windows
    values["cluster"].update(name=CLUSTER, kubernetesVersion=PATCH_UPGRADE[0], podCidr="10.128.0.0/14",
                             apiVip="10.30.0.10" if control_plane > 1 else None)
    if control_plane == 1:
        del values["cluster"]["apiVip"]
    values["network"]["nodes"].update(cidr="10.30.0.0/16", gateway="10.30.0.1")
    # As many Longhorn replicas as the zones with a Linux worker allow (one such zone below 4 nodes).
    values["storage"]["longhorn"] = {}
    values["loadBalancer"] = {"addresses": ["10.30.255.100-10.30.255.200"]}
    hosts = IPv4Network("10.30.0.0/16").hosts()
    for _ in range(20):
        next(hosts)  # .1-.20 stay free: gateway, VIP
    addresses = [str(next(hosts)) for _ in range(nodes)]
    zones = ["hk-1", "hk-2"]
    # Which pool each node is in, zone by alternation, as before; then hosts per zone in proportion.
    pools = ["controlPlane"] * control_plane + ["linux"] * linux + ["windows"] * windows
    linux_in_zone = {zone: sum(1 for i, p in enumerate(pools) if p != "windows" and zones[i % 2] == zone) for zone in zones}
    windows_in_zone = {zone: sum(1 for i, p in enumerate(pools) if p == "windows" and zones[i % 2] == zone) for zone in zones}
    proxmox_nodes = {zone: [f"pve-{zone}-{k + 1:02d}" for k in range(max(1, -(-linux_in_zone[zone] // LINUX_VMS_PER_PROXMOX_NODE)))]
                     for zone in zones}
    hyperv_hosts = {zone: [f"hv-{zone}-{k + 1:02d}" for k in range(max(1, -(-windows_in_zone[zone] // WINDOWS_VMS_PER_HYPERV_HOST)))]
                    for zone in zones}
    management = IPv4Network("10.10.10.0/24")
    proxmox_list = [name for zone in zones for name in proxmox_nodes[zone]]
    hyperv_list = [name for zone in zones for name in hyperv_hosts[zone]]
    # Each host its own (stand-in) host key, as a site pins them.
    values["proxmox"]["nodes"] = [{"name": name, "zone": name.split("-")[1] + "-" + name.split("-")[2],
                                   "address": str(management.network_address + 11 + k), "hostKey": new_host_key(name, 1)}
                                  for k, name in enumerate(proxmox_list)]
    values["proxmox"]["templates"] = [{"distro": distro, "vmId": 9000 + 2 * k + d, "node": name}
                                      for k, name in enumerate(proxmox_list) for d, distro in enumerate(("ubuntu22", "rocky9"))]
    reference_host = values["hyperv"]["hosts"][0]
    values["hyperv"]["hosts"] = [{**reference_host, "name": name, "zone": name.split("-")[1] + "-" + name.split("-")[2],
                                  "address": str(management.network_address + 101 + k), "hostKey": new_host_key(name, 1)}
                                 for k, name in enumerate(hyperv_list)]
    size = {"cpu": 4, "memoryMb": 8192, "diskGb": 80}
    values["nodes"] = {"controlPlane": [], "linux": [], "windows": []}
    placed = {zone: 0 for zone in zones}
    placed_windows = {zone: 0 for zone in zones}
    for i, pool in enumerate(pools):
        zone = zones[i % 2]
        node: dict[str, str | int]
        if pool == "windows":
            host = hyperv_hosts[zone][placed_windows[zone] % len(hyperv_hosts[zone])]
            placed_windows[zone] += 1
            node = {"name": f"win-{i + 1:03d}", "hypervHost": host, "version": "win2022"}
        else:
            proxmox_node = proxmox_nodes[zone][placed[zone] % len(proxmox_nodes[zone])]
            placed[zone] += 1
            distro = "ubuntu22" if pool == "controlPlane" or i % 3 else "rocky9"
            name = f"cp-{i + 1}" if pool == "controlPlane" else f"lnx-{i + 1:03d}"
            node = {"name": name, "proxmoxNode": proxmox_node, "vmId": 1000 + i, "distro": distro}
        values["nodes"][pool].append({**node, "zone": zone, "ip": addresses[i], **size})
    return values


def _reference() -> dict:
    """The reference stack's settings, the starting point of every generated stack."""
    from config.loader import from_stack_file
    return dict(from_stack_file(ROOT / "Pulumi.hk-prod.yaml").values)


def raw(values: dict):
    from config.loader import RawConfig
    return RawConfig(values=values, secure_keys=frozenset())


def graph_row(nodes: int, recording: Recording) -> dict:
    """What the graph of one size says, the same on every machine: its size, hosts, waves, and the modelled
    create and upgrade times."""
    from config.loader import load
    from plan.rollout import stack_waves
    spec = load(raw(generate_stack(nodes))).spec
    chain = critical_path(recording)
    return {
        "nodes": nodes,
        "resources": len(recording.resources),
        "proxmox_nodes": len(spec.proxmox.nodes),
        "hyperv_hosts": len(spec.hyperv.hosts),
        "waves": len(stack_waves(spec)),
        "create_seconds": create_seconds(recording),
        "critical_path_resources": chain.resources,
        "serial_seconds": serial_seconds(recording),
        **upgrade_model(recording),
    }


BARE_TYPE = "bench:index:Bare"


class Bare(pulumi.CustomResource):
    """The floors' custom resource. A resource class of its own, as every provider SDK's is: the SDK computes a
    registration's source position only from the third `__init__` on the stack up (runtime/resource.py
    _get_stack_trace), which a bare pulumi.CustomResource never reaches, so a floor would leave out a cost every real
    registration pays."""

    def __init__(self, name: str, props: dict, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(BARE_TYPE, name, props, opts)


def bare_program(declared: list[dict], nodes: int) -> None:
    """The baseline: a bare Pulumi program that registers as many custom resources as the program declares, each
    with the inputs of one of the program's (the same size, the same nesting), flat and untyped (no parent, no
    dependency, no option, one resource type), under the same runtime adjustments (tuning/). What it costs is the SDK's
    and the mock engine's registration of that many resources alone: a floor. The program's figure also holds what
    its graph's parents, dependencies, aliases and typed classes cost the SDK, and importing its modules."""
    tuned = tuning.install(nodes)
    for index, resource_ in enumerate(declared):
        Bare(f"bare-{index}", resource_["inputs"])
    tuning.restore_when_registered(tuned)


REPLAY_COMPONENT_TYPE = "bench:index:Component"
COMMAND_TYPE = "command:remote:Command"


def _command_args(inputs: dict) -> dict:
    """A remote command's recorded inputs as pulumi_command's Command takes them (an input it does not know fails)."""
    args = {snake_case(key): value for key, value in inputs.items()}
    connection = {snake_case(key): value for key, value in args["connection"].items()}
    if connection.get("proxy") is not None:
        connection["proxy"] = pulumi_command.remote.ProxyConnectionArgs(
            **{snake_case(key): value for key, value in connection["proxy"].items()})
    args["connection"] = pulumi_command.remote.ConnectionArgs(**connection)
    return args


def replay_program(declared: list[dict], nodes: int) -> None:
    """The second floor: the program's graph replayed with nothing of the program. The same resources in the same
    order, each with its parent and its dependencies, its remote commands (most of its resources) through
    pulumi_command's own class, its components as components and every other resource as the bare program's class,
    under the same runtime adjustments. What the program costs beyond it is its own work: configuration, plans,
    rendering, the Outputs it wires between resources, the other typed classes and importing its modules."""
    class Component(pulumi.ComponentResource):
        def __init__(self, name: str, opts: pulumi.ResourceOptions) -> None:
            super().__init__(REPLAY_COMPONENT_TYPE, name, None, opts)

    class RemoteComponent(pulumi.ComponentResource):
        # A provider's component (a Helm chart of kubernetes' helm.sh/v4), registered as the program registers it: a
        # dependency on it stays one (a local component's is recorded as its children: runtime/rpc.py
        # _expand_dependencies).
        def __init__(self, type_: str, name: str, props: dict, opts: pulumi.ResourceOptions) -> None:
            super().__init__(type_, name, props, opts, remote=True)

    tuned = tuning.install(nodes)
    made: list[pulumi.Resource] = []
    for index, resource_ in enumerate(declared):
        parent = resource_["parent"]
        opts = pulumi.ResourceOptions(parent=None if parent is None else made[parent],
                                      depends_on=[made[d] for d in resource_["dependencies"]] or None)
        name = f"replay-{index}"
        if resource_["type"] == COMMAND_TYPE:
            made.append(pulumi_command.remote.Command(name, opts=opts, **_command_args(resource_["inputs"])))
        elif resource_["custom"]:
            made.append(Bare(name, resource_["inputs"], opts))
        elif resource_["remote"]:
            made.append(RemoteComponent(resource_["type"], name, resource_["inputs"], opts))
        else:
            made.append(Component(name, opts))
    tuning.restore_when_registered(tuned)


def measure_baseline(path: Path, nodes: int, replay: bool = False) -> dict:
    """The bare program (or with `replay`, replay_program) over the resources `--one --dump` wrote, in this
    process."""
    declared = json.loads(path.read_text())
    program = replay_program if replay else bare_program
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    # Every measured run pays what a real run pays per registration, its source position included (tools/mock/sdk.py,
    # and the resource classes of bare_program and replay_program).
    recording = run_declarations(lambda: program(declared, nodes), stack=CLUSTER, source_positions=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    registered = len(recording.resources) if replay else sum(r.type == BARE_TYPE for r in recording.resources)
    assert registered == len(declared), (registered, len(declared))
    return {"nodes": nodes, "resources": registered, "cpu_seconds": round(cpu, 2), "wall_seconds": round(wall, 2),
            "cpu_ms_per_resource": round(1000 * cpu / registered, 2)}


def declared_graph(recording: Recording) -> list[dict]:
    """What bare_program and replay_program register: every resource of the recording, in registration order."""
    index = {r.urn: i for i, r in enumerate(recording.resources)}
    return [{"type": r.type, "custom": r.custom, "remote": r.remote,
             "parent": index.get(r.parent),
             "dependencies": sorted(index[urn] for urn in r.dependencies),
             "inputs": plain(r.inputs, secret=lambda s: plain(s.value))} for r in recording.resources]


def measure_one(nodes: int, default_gc: bool = False, dump: Path | None = None) -> dict:
    """One size, in this process: the graph's row, and the evaluation's timings and memory. default_gc: run with
    Python's default collector thresholds instead of the program's (tuning/gc_thresholds.py), to show what
    they save. dump: where to write the custom resources' inputs for the baseline (measure_baseline)."""
    values = generate_stack(nodes)
    if default_gc:
        from tuning import gc_thresholds
        gc_thresholds.THRESHOLDS = gc.get_threshold()
    wall, cpu = time.perf_counter(), time.process_time()
    recording = run_program(raw(values), stack=CLUSTER, source_positions=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # Peak memory read before the dump below, whose text would count as the program's.
    peak_rss_mib = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if dump is not None:
        # Every resource the program registers, in order: its inputs (a component's are its own), and for the replay
        # its type, kind, parent and dependencies, as indexes into the list.
        dump.write_text(json.dumps(declared_graph(recording)))
    return {
        "graph": graph_row(nodes, recording),
        "timing": {"nodes": nodes, "resources": len(recording.resources), "default_gc": default_gc,
                   "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
                   "cpu_ms_per_resource": round(1000 * cpu / len(recording.resources), 2),
                   "peak_rss_mib": peak_rss_mib},
        "critical_path": critical_path(recording).names,
    }


# Where a run's CPU goes (tools/cpu_shares.py): the program is its entry point and its layers; the SDK is Pulumi's and
# the providers' packages, and tuning/, whose equivalents do the SDK's work; the mock engine is tools/.
PROGRAM_SHARE, SDK_SHARE, ENGINE_SHARE = "the program's own code", "Pulumi SDK and provider classes", "mock engine"
SHARES = [PROGRAM_SHARE, cpu_shares.IMPORTS, SDK_SHARE, ENGINE_SHARE, cpu_shares.OTHER_THREADS,
          cpu_shares.UNATTRIBUTED]
_SITE = Path(pulumi.__file__).parent.parent
CPU_CATEGORIES = cpu_shares.by_path(
    [(str(ROOT / "__main__.py"), PROGRAM_SHARE)]
    + [(f"{ROOT / layer}/", PROGRAM_SHARE) for layer in ("components", "plan", "render", "config", "vocab")]
    + [(f"{ROOT / 'tuning'}/", SDK_SHARE), (f"{_SITE / 'pulumi'}/", SDK_SHARE), (f"{_SITE / 'pulumi_'}", SDK_SHARE),
       (f"{ROOT / 'tools'}/", ENGINE_SHARE)])


def measure_shares(nodes: int) -> dict:
    """One run of the program at `nodes`, in this process, sampled (tools/cpu_shares.py): the percentage of its CPU
    in each of SHARES, and how many samples they come from."""
    values = generate_stack(nodes)
    with cpu_shares.sampled(CPU_CATEGORIES) as shares:
        run_program(raw(values), stack=CLUSTER, source_positions=True)
    total = sum(shares.seconds.values())
    return {"nodes": nodes, "cpu_seconds": round(total, 2), "samples": shares.samples,
            "shares": {name: round(100 * shares.seconds.get(name, 0.0) / total, 1) for name in SHARES}}


# The floors each run is measured against (#40): the prefix of their figures in a timing row, and the internal
# option that measures one.
FLOORS = {"bare": "--baseline", "replay": "--replay"}


def _in_child(*options: str) -> dict:
    """`python -m tools.bench <options>` in a fresh process: the JSON it prints last."""
    out = subprocess.run([sys.executable, "-m", "tools.bench", *options], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def measure(nodes: int, runs: int, default_gc: bool = False, baseline: bool = False) -> dict:
    """The run with the least CPU of `runs` (with the highest peak memory of them), each in a fresh process so that
    peak memory and timings are its own; with `baseline`, after each run each floor over its resources (the bare
    program, and the program's graph replayed), in a fresh process too, and the least of each.
    The least, because on a shared machine other work only ever adds to a run's time (the timeit module's
    documentation gives the same reason for its minimum)."""
    options = ["--one", str(nodes)] + (["--default-gc"] if default_gc else [])
    if runs < 1:
        raise ValueError("--runs must be at least 1")
    best: dict | None = None
    floors: dict[str, dict] = {}       # FLOORS' prefix: the least of its runs
    most, memory = 0.0, 0.0
    dump = ROOT / "build" / f"bench-declared-{nodes}.json"
    dump.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(runs):
        measured = _in_child(*options, *(["--dump", str(dump)] if baseline else []))
        most = max(most, measured["timing"]["cpu_seconds"])
        memory = max(memory, measured["timing"]["peak_rss_mib"])
        if best is None or measured["timing"]["cpu_seconds"] < best["timing"]["cpu_seconds"]:
            best = measured
        if baseline:
            for prefix, option in FLOORS.items():
                floor = _in_child(option, str(dump), str(nodes))
                if prefix not in floors or floor["cpu_seconds"] < floors[prefix]["cpu_seconds"]:
                    floors[prefix] = floor
    assert best is not None
    # Time from the least of the runs; memory, which other work does not add to, from the most.
    best["timing"].update(cpu_seconds_most=most, peak_rss_mib=memory)
    if baseline:
        # One more run, sampled, for where its CPU goes (the sampler's own work is left out of it, not of its time).
        sampled = _in_child("--shares", str(nodes))
        best["timing"].update(shares=sampled["shares"], shares_samples=sampled["samples"])
    for prefix, floor in floors.items():
        best["timing"].update({f"{prefix}_cpu_ms_per_resource": floor["cpu_ms_per_resource"],
                               f"{prefix}_ratio": round(best["timing"]["cpu_ms_per_resource"]
                                                        / floor["cpu_ms_per_resource"], 2)})
    return best


# Single changes: (description, change to the stack values, the minimal set of resource names it must touch).
def _node_resources(recording: Recording, node: str) -> set[str]:
    """A node's resources: named after it, and the reservations of its VM id and address (components/guards.py)."""
    return {r.name for r in recording.resources
            if f"-{node}-" in f"{r.name}-" or (r.type.endswith(":MachineReservation") and r.inputs.get("holder") == node)}


@dataclass(frozen=True)
class Scenario:
    """One single change: what it does to the stack values and to the secrets, and the minimal set of resource
    names it must touch (given, or computed from the run after the change)."""

    description: str
    minimal: set[str] | Callable[[Recording, dict], set[str]]
    change: Callable[[dict], None] | None = None
    secrets: dict[str, str] = field(default_factory=dict)


COMMAND = "command:remote:Command"


def _carrying(recording: Recording, key: str, text: str) -> set[str]:
    """Commands whose input `key` carries `text` (a secret's placeholder), unless they ignore its changes."""
    return {r.name for r in recording.resources
            if r.type == COMMAND and carries(r.inputs.get(key), text) and key not in r.ignore_changes}


BASTION = "10.30.0.5"
REKEYED = new_host_key("reinstalled-host", 1)


def _policies_naming(recording: Recording, address: str) -> set[str]:
    """The Calico policies whose rules name an address (security.networkPolicy)."""
    return {r.name for r in recording.resources
            if r.type.startswith("kubernetes:projectcalico.org/v3:") and address in repr(r.inputs.get("spec"))}


def _wave_gates(recording: Recording) -> set[str]:
    """The gates between the waves of the rolling chains (components/cluster/waves.py) the program declared."""
    return {r.name for r in recording.resources if GATE_MARK in r.name}


def expected_gates(values: dict) -> set[str]:
    """The gates the stack's waves call for, from the rollout plan alone (not from what the program declared): one
    per wave of the upgrade and of the kubelet-config steps, one per Linux wave of the restarts."""
    from config.loader import load
    from plan.rollout import stack_waves
    spec = load(raw(values)).spec
    counts = {"upgrade": len(stack_waves(spec)), "kubelet-config": len(stack_waves(spec)),
              "restarts": len(stack_waves(spec, windows=False))}
    return {gate_name(f"{CLUSTER}-{chain}", index) for chain, count in counts.items() for index in range(count)}



def _scenarios(values: dict, base: Recording) -> list[Scenario]:
    linux = values["nodes"]["linux"]
    first_linux, last_linux = linux[0]["name"], linux[-1]["name"]
    placeholders = placeholder_secrets()

    def gates_moved(after: Recording, changed: dict) -> set[str]:
        # One gate per wave, numbered: a change to the number of waves adds or removes gates, which run nothing.
        return expected_gates(values) ^ expected_gates(changed)

    def memory(v: dict) -> None:
        v["nodes"]["linux"][0]["memoryMb"] *= 2

    def mtu(v: dict) -> None:
        v["calico"]["mtu"] = 1400

    def add_windows(v: dict) -> None:
        node = dict(v["nodes"]["windows"][0], name="win-new", ip="10.30.255.250")
        v["nodes"]["windows"].append(node)

    def remove_linux(v: dict) -> None:
        v["nodes"]["linux"].pop()

    def patch_version(v: dict) -> None:
        # The generated stack runs the patch before the matrix's pin; this upgrades it to the pin (the
        # version pin admits only forward moves kubeadm can make).
        v["cluster"]["kubernetesVersion"] = PATCH_UPGRADE[1]

    def bastion(v: dict) -> None:
        v["access"]["bastion"] = {"host": BASTION, "user": "jump", "hostKey": new_host_key("bastion", 1)}

    def rekey(section: str, hosts: str) -> Callable[[dict], None]:
        def change(v: dict) -> None:
            v[section][hosts][0]["hostKey"] = REKEYED
        return change

    def version_dependent(after: Recording, _: dict) -> set[str]:
        # What legitimately follows the version: the pin and the record it moves to after the chain, the
        # upgrade chain (each node drained, upgraded and uncordoned in turn), Windows kube-proxy's image tag,
        # the certificate expiry report (an upgrade renews the certificates; not the provider's own credential).
        # kubeadm init, first-boot snippets and the Windows binaries steps keep the versions they were
        # created with (ignore_changes).
        names = {f"{CLUSTER}-kubernetes-version", f"{CLUSTER}-kubernetes-version-upgraded"}
        names |= {r.name for r in after.resources if r.name.startswith(f"{CLUSTER}-certificates-") and r.custom}
        # (A Windows node's runtime step names only the containerd pin, which a patch leaves.)
        names |= {r.name for r in after.resources if r.name.startswith(f"{CLUSTER}-upgrade-")
                  and not r.name.endswith("-runtime-upgrade") and GATE_MARK not in r.name}
        names |= {r.name for r in after.resources if r.name.endswith("-kube-proxy-windows") and "daemonset" in r.name}
        return names

    def rollout(v: dict) -> None:
        v["rollout"] = {"maxUnavailable": "10%", "zones": "together"}

    def provider_credential(v: dict) -> None:
        v["cluster"]["providerCredential"] = "2027-12"

    def provisioning(v: dict) -> None:
        v["provisioning"] = {"clonesPerProxmoxNode": 2, "copiesPerHypervHost": 1, "controlPlaneSessions": 4}

    restarts = ("drain-for-restart", "vm-restart", "uncordon-after-restart")
    control_plane = [n["name"] for n in values["nodes"]["controlPlane"]]

    def security(**section) -> Callable[[dict], None]:
        def change(v: dict) -> None:
            v["security"] = {**v.get("security", {}), **section}
        return change

    def new_password(v: dict) -> None:
        v["nodes"]["windows"][0]["adminPasswordVersion"] = 2

    def grant(v: dict) -> None:
        v["tls"] = {**v["tls"], "allow": [{"namespace": "payments", "dnsNames": ["pay.example.internal"]}]}

    def control_plane_steps(*suffixes: str) -> set[str]:
        return {f"{CLUSTER}-control-plane-{node}{suffix}" for node in control_plane for suffix in suffixes}

    def kubelet_steps(after: Recording, _: dict) -> set[str]:
        # The cluster's kubelet configuration, then every node's kubelet in its wave.
        return {f"{CLUSTER}-kubeadm-kubelet-config"} | {
            r.name for r in after.resources if r.name.startswith(f"{CLUSTER}-kubelet-config-") and GATE_MARK not in r.name}

    return [
        # The VM stores the new size as pending; that worker's restart steps (drain, qm reboot, uncordon) apply it.
        Scenario("one worker's memory", {f"{CLUSTER}-{first_linux}-vm", GUARD,
                                          *(f"{CLUSTER}-restarts-{first_linux}-{step}" for step in restarts)}, memory),
        Scenario("the Calico MTU", {f"{CLUSTER}-network-installation"}, mtu),
        Scenario("add a Windows worker",
                 lambda after, v: _node_resources(after, "win-new") | {GUARD} | approvers(after) | gates_moved(after, v),
                 add_windows),
        Scenario("remove a Linux worker",
                 lambda after, v: _node_resources(base, last_linux) | {GUARD} | approvers(after) | gates_moved(after, v),
                 remove_linux),
        Scenario("rotate the SMB password", smb_secret_names(base), secrets={"smbPassword": "rotated"}),
        Scenario("a Kubernetes patch version", version_dependent, patch_version),
        # The credential issued and the others revoked; the provider then moves to it (an update with the new
        # credential, which two renders from scratch cannot show: tests/program/test_lifecycle.py has the run).
        Scenario("rotate the Kubernetes provider's credential",
                 {f"{CLUSTER}-kubeadm-kubeconfig", f"{CLUSTER}-kubeadm-kubeconfig-revoke-others"}, provider_credential),
        # Waves and lanes are the order of the graph, not anything a step runs: nothing runs, and only the gates
        # follow the number of waves.
        Scenario("the rollout's waves (10%, zones together)", gates_moved, rollout),
        Scenario("the provisioning lanes", set(), provisioning),
        # The hardening (config `security`, docs/security.md). A new key: made on the first control-plane node, read by
        # every API server, then written by each, then every Secret rewritten; no node other than the control plane. The
        # machines guard records the key (it refuses a new key in a run that removes a control-plane node).
        Scenario("rotate the Secrets encryption key",
                 {f"{CLUSTER}-control-plane-encryption-keys", f"{CLUSTER}-control-plane-encryption-rewrite", GUARD,
                  *control_plane_steps("-files", "", "-encryption-writer")},
                 security(secretsEncryption={"keyRotation": "2027-01"})),
        # The Pod Security exemptions are a file the API servers read: written everywhere, each API server restarted.
        Scenario("exempt a namespace from Pod Security", control_plane_steps("-files", ""),
                 security(podSecurity={"exemptNamespaces": ["legacy-agents"]})),
        # A flag: the ClusterConfiguration, then each control-plane node's static Pods.
        Scenario("keep the audit log longer", {f"{CLUSTER}-control-plane-kubeadm-config", *control_plane_steps("")},
                 security(auditLog={"maxAgeDays": 90})),
        Scenario("relax seccompDefault", kubelet_steps, security(seccompDefault=False)),
        # The deny policy, and each exception to a server named by DNS (let through to every protected network).
        Scenario("protect a further network", lambda after, _: _policies_naming(after, "172.16.0.0/16"),
                 security(networkPolicy={"protectedNetworks": ["172.16.0.0/16"]})),
        # Credentials (docs/lifecycle.md: Rotating credentials): every command that dials with the credential runs
        # its update, which finds its work done; the provider's kubeconfig read ignores the connection.
        Scenario("rotate the node SSH key", _carrying(base, "connection", placeholders["nodeSshPrivateKey"]),
                 secrets={"nodeSshPrivateKey": placeholder("nodeSshPrivateKey", "rotated")}),
        # The bastion is infrastructure too: the network policies that keep pods off it name its address.
        Scenario("add a bastion", lambda after, _: _carrying(after, "connection", BASTION) | _policies_naming(after, BASTION),
                 bastion),
        # A reinstalled host presents a new host key: the commands that dial it run their update. The reads of the
        # guests' keys ignore the connection (the keys are the guests'), a restart's drain carries its restart's
        # connection digest.
        Scenario("re-key a Proxmox node", lambda after, _: _carrying(after, "connection", REKEYED)
                 | {f"{CLUSTER}-restarts-{n['name']}-drain-for-restart" for pool in ("controlPlane", "linux")
                    for n in values["nodes"][pool] if n["proxmoxNode"] == values["proxmox"]["nodes"][0]["name"]},
                 rekey("proxmox", "nodes")),
        Scenario("re-key a Hyper-V host", lambda after, _: _carrying(after, "connection", REKEYED), rekey("hyperv", "hosts")),
        # The key pair the control-plane nodes upload their encrypted etcd snapshots with: their schedule steps only.
        Scenario("rotate the etcd snapshots' off-site key", _carrying(base, "stdin", placeholders["etcdOffsiteSecretAccessKey"]),
                 secrets={"etcdOffsiteSecretAccessKey": "rotated"}),
        # A namespace granted names from the cluster's issuer: its policy, the role that lets cert-manager use it, and
        # the dry run of the policies through approver-policy's webhook before they are written.
        Scenario("grant a namespace certificates",
                 {f"{CLUSTER}-tls-certificaterequestpolicy-hybrid-cluster-in-payments",
                  f"{CLUSTER}-tls-clusterrole-hybrid-cluster-certificate-policies",
                  f"{CLUSTER}-tls-approver-policy-webhook"}, grant),
        # Velero cannot change a repository's password: the one step that puts it in place runs, and refuses while
        # repositories made with the old one exist (docs/backup.md, "Repository password").
        Scenario("change Velero's repository password", {f"{CLUSTER}-backup-repository-password"},
                 secrets={"veleroRepositoryPassword": "rotated-repository-password"}),
        # Every Windows node's own password follows the secret: each step that signs in to a guest runs its update.
        Scenario("rotate the Windows admin password",
                 set().union(*(_carrying(base, "stdin", password) for password in windows_passwords(values, placeholders))),
                 secrets={"windowsAdminPassword": "rotated",
                          "windowsAdminPasswordPrevious": placeholders["windowsAdminPassword"]}),
        # One node's own password: that node's steps only.
        Scenario("give one Windows node a new password",
                 _carrying(base, "stdin", windows_passwords(values, placeholders)[1]), new_password),
    ]


def refused_at_preview(before: dict, after: dict) -> str | None:
    """What the version pin's check says of the change, as a real preview would run it."""
    from components.version_pin import STATE_FORMAT, STATE_FORMAT_KEY, VERSION_KEY, KubernetesVersionPinProvider

    failures = KubernetesVersionPinProvider().check(
        {VERSION_KEY: before["cluster"]["kubernetesVersion"], STATE_FORMAT_KEY: STATE_FORMAT},
        {VERSION_KEY: after["cluster"]["kubernetesVersion"]}).failures
    return failures[0].reason if failures else None


def windows_passwords(values: dict, placeholders: dict[str, str]) -> list[str]:
    """The shared secret, then each Windows node's own password derived from it (render/hyperv.py)."""
    from render.hyperv import node_admin_password
    secret = placeholders["windowsAdminPassword"]
    return [secret, *(node_admin_password(secret, n["name"], n.get("adminPasswordVersion", 1))
                      for n in values["nodes"]["windows"])]


def smb_secret_names(recording: Recording) -> set[str]:
    return {r.name for r in recording.resources if r.type == "kubernetes:core/v1:Secret" and "smb" in r.name}


def blast_radius(nodes: int) -> list[dict]:
    values = generate_stack(nodes)
    base = run_program(raw(values), stack=CLUSTER)
    rows = []
    for scenario in _scenarios(values, base):
        changed_values = copy.deepcopy(values)
        if scenario.change is not None:
            scenario.change(changed_values)
        after = run_program(raw(changed_values), secrets=scenario.secrets, stack=CLUSTER)
        touched = changed_resources(base, after)
        expected = scenario.minimal(after, changed_values) if callable(scenario.minimal) else scenario.minimal
        rows.append({"change": scenario.description, "touched": sorted(touched), "minimal": sorted(expected),
                     "equal": touched == expected, "refused": refused_at_preview(values, changed_values)})
    return rows


def machine() -> dict:
    model = "unknown"
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = "unknown"
    try:
        kib = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")))
        memory = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        pass
    return {"cpu": model, "cores": os.cpu_count(), "memory": memory, "python": platform.python_version(),
            "platform": platform.platform()}


# The part of docs/benchmarks.md that follows from the code alone: tests/tools/test_bench.py renders it again and
# fails when the file says something else.
GRAPH_BEGIN = "<!-- graph: generated by python -m tools.bench; tests/tools/test_bench.py checks it against the code -->"
GRAPH_END = "<!-- end of graph -->"


def _targets_pair(rows: list[dict]) -> tuple[dict, dict] | None:
    """The 30- and 300-node rows the targets compare, when both were measured."""
    by_nodes = {row["nodes"]: row for row in rows}
    small, large = by_nodes.get(30), by_nodes.get(300)
    return (small, large) if small is not None and large is not None else None


def graph_targets(rows: list[dict]) -> dict:
    pair = _targets_pair(rows)
    if pair is None:
        return {}
    small, large = pair
    ratio = large["upgrade_seconds"] / small["upgrade_seconds"]
    return {"upgrade_ratio": ratio, "upgrade_ratio_ok": ratio <= 1.5,
            "upgrade_300_ok": large["upgrade_seconds"] < 2 * 3600}


def graph_markdown(rows: list[dict], radius: list[dict], blast_nodes: int) -> str:
    lines = [GRAPH_BEGIN, "", "## Graph and modelled times", "",
             "| nodes | resources | Proxmox nodes | Hyper-V hosts | waves | create est. (critical path) "
             "| one-at-a-time est. | patch upgrade est. | upgrade one node at a time |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['nodes']} | {row['resources']} | {row['proxmox_nodes']} | {row['hyperv_hosts']} | "
                     f"{row['waves']} | {row['create_seconds'] / 60:.0f} min ({row['critical_path_resources']} "
                     f"resources) | {row['serial_seconds'] / 3600:.1f} h | {row['upgrade_seconds'] / 60:.0f} min | "
                     f"{row['upgrade_serial_seconds'] / 3600:.1f} h |")
    targets = graph_targets(rows)
    if targets:
        lines += ["", f"Patch upgrade at 300 nodes vs 30: {targets['upgrade_ratio']:.2f} (target ≤ 1.5: "
                  f"{'met' if targets['upgrade_ratio_ok'] else 'NOT met'}); at 300 nodes under 2 hours: "
                  f"{'met' if targets['upgrade_300_ok'] else 'NOT met'} (rollout defaults: 20% of each zone's OS pool "
                  "per wave, zones one at a time)."]
    lines += ["", "Create is bounded per host (provisioning defaults: 4 clones per Proxmox node, 2 VHDX copies per "
              "Hyper-V host, 8 sessions on the first control-plane node), so its critical path grows with the VMs "
              "per host and the joining workers per session lane, not with the fleet at once.",
              "", f"## Blast radius ({blast_nodes} nodes)", "",
              "| change | resources touched | minimal set | equal | at preview |", "|---|---:|---:|---|---|"]
    for row in radius:
        verdict = "refused by the version pin" if row["refused"] else "planned"
        lines.append(f"| {row['change']} | {len(row['touched'])} | {len(row['minimal'])} | "
                     f"{'yes' if row['equal'] else 'NO'} | {verdict} |")
    lines += ["", "Touched resources per change:", ""]
    for row in radius:
        lines.append(f"- {row['change']}: {', '.join(row['touched']) or '(none)'}")
    lines += ["", "## Estimated durations", "", "Create, per resource (first match wins):", "",
              "| resource | name ends with | seconds | stands for |", "|---|---|---:|---|"]
    for type_, suffix, seconds, what in DURATIONS:
        lines.append(f"| `{type_}` | `{suffix}` | {seconds:.0f} | {what} |")
    lines += ["", "A patch upgrade, per step on update:", "", "| step | seconds | stands for |", "|---|---:|---|"]
    for suffix, seconds, what in UPGRADE_DURATIONS:
        lines.append(f"| `{suffix}` | {seconds:.0f} | {what} |")
    return "\n".join(lines + ["", GRAPH_END]) + "\n"


def timing_targets(timings: list[dict]) -> dict:
    pair = _targets_pair([row for row in timings if not row.get("default_gc")])
    if pair is None:
        return {}
    small, large = pair
    ratio = large["cpu_ms_per_resource"] / small["cpu_ms_per_resource"]
    rows = [row for row in timings if not row.get("default_gc")]
    bare = {row["nodes"]: row["bare_ratio"] for row in rows if "bare_ratio" in row}
    replay = {row["nodes"]: row["replay_ratio"] for row in rows if "replay_ratio" in row}
    return {"cpu_per_resource_ratio": ratio, "cpu_per_resource_ok": ratio <= 1.3,
            "cpu_300_ok": large["cpu_seconds"] < 10, "memory_300_ok": large["peak_rss_mib"] < 1024,
            **({"bare_ratios": bare, "bare_ratio_ok": max(bare.values()) <= BARE_RATIO_TARGET} if bare else {}),
            # Reported beside the target, not targets of their own: what of the bare ratio is the program's own, and
            # what registering its graph alone costs (the replay against the bare program).
            **({"replay_ratios": replay} if replay else {}),
            **({"replay_over_bare": graph} if (graph := {
                row["nodes"]: round(row["replay_cpu_ms_per_resource"] / row["bare_cpu_ms_per_resource"], 2)
                for row in rows if "replay_cpu_ms_per_resource" in row and "bare_cpu_ms_per_resource" in row}) else {})}


def markdown(report: dict) -> str:
    timings = report["timings"]
    lines = ["# Benchmarks", "", "Made by `python -m tools.bench` (see docs/offline.md). The graph is the one the program "
             "declares under the mock engine; durations are the estimates in `tools/bench.py`, not measurements.", "",
             graph_markdown(report["graph"], report["blast_radius"], report["blast_radius_nodes"]).rstrip("\n"), "",
             "## Evaluation (measured on this machine)", "",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores, {report['machine']['memory']}, "
             f"Python {report['machine']['python']}. Shared and noisy: compare ratios, not absolute seconds.", "",
             "| nodes | resources | collector thresholds | wall s | CPU s | CPU s, the slowest run | CPU ms per resource "
             "| bare program's CPU ms per resource | ratio to it | graph replayed: CPU ms per resource | ratio to it "
             "| peak RSS MiB |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in timings:
        collector = "Python's defaults" if row.get("default_gc") else "the program's"
        lines.append(f"| {row['nodes']} | {row['resources']} | {collector} | {row['wall_seconds']} | "
                     f"{row['cpu_seconds']} | {row.get('cpu_seconds_most', row['cpu_seconds'])} | "
                     f"{row['cpu_ms_per_resource']} | {row.get('bare_cpu_ms_per_resource', '')} | "
                     f"{row.get('bare_ratio', '')} | {row.get('replay_cpu_ms_per_resource', '')} | "
                     f"{row.get('replay_ratio', '')} | {row['peak_rss_mib']} |")
    lines += ["", f"Each row is the run with the least CPU of {report.get('runs', 1)}, each run in its own process (the "
              "slowest run's CPU beside it shows how much this machine's other work added). "
              "The program sets the garbage collector's thresholds (tuning/gc_thresholds.py): it keeps what it "
              "allocates until the run ends, and with Python's defaults the collector walked that growing heap again "
              "and again (the last row)."]
    targets = timing_targets(timings)
    if targets:
        lines += ["", f"CPU per resource at 300 nodes vs 30: {targets['cpu_per_resource_ratio']:.2f} (target ≤ 1.3: "
                  f"{'met' if targets['cpu_per_resource_ok'] else 'NOT met'}); 300 nodes under 10 s of CPU: "
                  f"{'met' if targets['cpu_300_ok'] else 'NOT met'}; under 1 GiB: "
                  f"{'met' if targets['memory_300_ok'] else 'NOT met'}. Most of a run is the Pulumi SDK's registration "
                  "of each resource (an Output and four futures per property, serialization, asyncio tasks, source "
                  "positions), of its parent, its dependencies and its options too; the bare program below, which has "
                  "none of those, says how much more the program costs than registration alone."]
    if targets.get("bare_ratios"):
        ratios = ", ".join(f"{ratio:.2f} at {nodes} nodes" for nodes, ratio in sorted(targets["bare_ratios"].items()))
        lines += ["", "The bare program (`bare_program`) registers as many custom resources, each with the inputs of one "
                  "of the program's, flat and untyped, under the same mock engine and runtime adjustments: the SDK's "
                  "registration of that many resources, and nothing else. The program's CPU per resource against it: "
                  f"{ratios} (target ≤ {BARE_RATIO_TARGET}: {'met' if targets['bare_ratio_ok'] else 'NOT met'}). "
                  "The program's side also pays for its graph's parents, dependencies, aliases and typed resource "
                  "classes, and for importing its modules (a fixed cost, which is why the ratio falls with size). A "
                  "ratio depends far less on the machine than seconds do."]
    if targets.get("replay_ratios"):
        ratios = ", ".join(f"{ratio:.2f} at {nodes} nodes" for nodes, ratio in sorted(targets["replay_ratios"].items()))
        graph = ", ".join(f"{ratio:.2f} at {nodes} nodes"
                          for nodes, ratio in sorted(targets.get("replay_over_bare", {}).items()))
        lines += ["", "The graph replayed (`replay_program`) registers the same resources in the same order, each with "
                  "its parent and its dependencies, its remote commands through pulumi_command's own class and its "
                  "components as components, and nothing of the program: no configuration, plans, rendering or Outputs "
                  "wired between resources. Its CPU per resource over the bare program's is what the SDK and the "
                  f"command provider's class cost for this graph before the program does anything ({graph}); the "
                  f"program's CPU per resource against it, what the program's own work adds: {ratios}."]
    shared = [row for row in timings if "shares" in row]
    if shared:
        lines += ["", "Where the program's CPU goes, in percent, from one more run of each size from 30 nodes, sampled by "
                  "tools/cpu_shares.py (its docstring says how, and the biases measured): a sample goes to the nearest "
                  "frame of the program, of Pulumi's or a provider's package (with tuning/, whose equivalents do the "
                  "SDK's work) or of the mock engine; a module being loaded is imports; other threads are chiefly the "
                  "mock engine answering registrations on the SDK's thread pool.", "",
                  "| nodes | " + " | ".join(SHARES) + " | samples |", "|---:|" + "---:|" * (len(SHARES) + 1)]
        lines += [f"| {row['nodes']} | " + " | ".join(str(row["shares"][name]) for name in SHARES)
                  + f" | {row.get('shares_samples', '')} |" for row in shared]
        own = ", ".join(f"{row['shares'][PROGRAM_SHARE]}% at {row['nodes']} nodes" for row in shared)
        lines += ["", f"The program's own code: {own}. Imports are the modules a run loads, the provider SDKs' "
                  "(pulumi_kubernetes most) and the program's own, a cost fixed per run; what tools.bench "
                  "itself imports first (pulumi, pulumi_command, part of the program) is in none of the runs it "
                  "measures. The SDK's share is its work for what the program declares and wires: the graph's "
                  "registration (the replay above), the providers' typed resource classes and the Outputs and applies "
                  "between resources. A share comes from a single run: it moves by a point or two from run to run on "
                  "this machine."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 30, 300])
    parser.add_argument("--blast-nodes", type=int, default=30, help="stack size for the blast-radius runs")
    parser.add_argument("--runs", type=int, default=5, help="runs per size; the one with the least CPU is reported")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size in this process
    parser.add_argument("--default-gc", action="store_true", help=argparse.SUPPRESS)  # internal, with --one
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # internal, with --one: inputs for the baseline
    parser.add_argument("--baseline", nargs=2, metavar=("DUMP", "NODES"), help=argparse.SUPPRESS)  # internal
    parser.add_argument("--replay", nargs=2, metavar=("DUMP", "NODES"), help=argparse.SUPPRESS)  # internal
    parser.add_argument("--shares", type=int, help=argparse.SUPPRESS)  # internal: one sampled run of this size
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench.json")
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure_one(args.one, args.default_gc, args.dump)))
        return 0
    if args.shares is not None:
        print(json.dumps(measure_shares(args.shares)))
        return 0
    for floor, replay in ((args.baseline, False), (args.replay, True)):
        if floor is not None:
            print(json.dumps(measure_baseline(Path(floor[0]), int(floor[1]), replay=replay)))
            return 0

    rows, timings, paths = [], [], {}
    for nodes in sorted(args.sizes):
        measured = measure(nodes, args.runs, baseline=nodes >= 30)
        rows.append(measured["graph"])
        timings.append(measured["timing"])
        paths[nodes] = measured["critical_path"]
        print(f"{nodes} nodes: {rows[-1]['resources']} resources, {timings[-1]['cpu_seconds']} s CPU", file=sys.stderr)
    largest = max(args.sizes)
    timings.append(measure(largest, args.runs, default_gc=True)["timing"])
    print(f"{largest} nodes, default collector: {timings[-1]['cpu_seconds']} s CPU", file=sys.stderr)
    radius = blast_radius(args.blast_nodes)
    report = {"machine": machine(), "runs": args.runs, "graph": rows, "timings": timings, "critical_paths": paths,
              "blast_radius_nodes": args.blast_nodes, "blast_radius": radius,
              "targets": {**graph_targets(rows), **timing_targets(timings),
                          "blast_radius_ok": all(r["equal"] for r in radius)}}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(markdown(report))
    print(markdown(report))
    return 0 if all(v for k, v in report["targets"].items() if k.endswith("_ok")) else 1

if __name__ == "__main__":
    sys.exit(main())
