"""Scale and speed benchmark: how the declared graph grows with node count, and how far one change reaches.

    python -m tools.bench                 # 3, 30 and 300 nodes; writes build/bench.json and docs/benchmarks.md
    python -m tools.bench --sizes 3 30    # a quicker run

Everything is measured on the graph the program declares under the mock engine, so it needs no hardware:
- evaluation time (wall and CPU) and peak memory of one program run, each size in its own process;
- the longest dependency chain, in resources and in estimated seconds (DURATIONS), next to the sum of all
  estimates (what a tool that does one thing at a time would take);
- the blast radius of single changes: what a change touches, next to the minimal set it should touch.
"""
from __future__ import annotations

import argparse
import copy
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

from tools.mockrun import Recording, changed_resources, placeholder_secrets, run_program

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = "bench"

# Estimated seconds per resource, first match wins: (type, name suffix, seconds, what it stands for).
# They are planning figures for a datacenter like hk-prod (local ZFS clones, a Harbor mirror), not
# measurements; what matters is that one table prices every graph the same way.
DURATIONS: list[tuple[str, str, float, str]] = [
    ("proxmoxve:index/vmLegacy:VmLegacy", "", 90, "full clone of a template and first boot"),
    # The upgrade chain has no create step (components/upgrade.py): nothing runs when it is declared.
    ("command:remote:Command", "-drain-for-upgrade", 0, "upgrade chain: nothing on create (drains on a version change)"),
    ("command:remote:Command", "-node-upgrade", 0, "upgrade chain: nothing on create (upgrades on a version change)"),
    ("command:remote:Command", "-runtime-upgrade", 0, "upgrade chain: nothing on create (Windows containerd on a pin change)"),
    ("command:remote:Command", "-uncordon-after-upgrade", 0, "upgrade chain: nothing on create (uncordons on a version change)"),
    # The reboot chain has no create step either (components/maintenance.py).
    ("command:remote:Command", "-drain-for-restart", 0, "reboot chain: nothing on create (drains when VM settings change)"),
    ("command:remote:Command", "-vm-restart", 0, "reboot chain: nothing on create (qm reboot when VM settings change)"),
    ("command:remote:Command", "-uncordon-after-restart", 0, "reboot chain: nothing on create (uncordons after the restart)"),
    ("proxmoxve:index/fileLegacy:FileLegacy", "", 3, "snippet upload over SSH"),
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
    ("command:remote:Command", "-kubeconfig", 2, "read admin.conf"),
    ("kubernetes:helm.sh/v3:Release", "", 150, "Helm release until its workloads are ready"),
    ("kubernetes:helm.sh/v4:Chart", "", 20, "chart rendered locally, its objects applied (CRDs)"),
    ("kubernetes:operator.tigera.io/v1:Installation", "", 240, "Calico rolled out by the operator"),
    ("kubernetes:apps/v1:DaemonSet", "", 120, "DaemonSet rollout"),
    ("kubernetes:apps/v1:Deployment", "", 180, "Deployment available (Windows image pulls dominate)"),
    ("kubernetes:", "", 3, "any other Kubernetes object"),
    ("pulumi:providers:", "", 1, "provider configuration"),
    ("pulumi-python:dynamic:", "", 1, "version pin"),
]


def estimate(type_: str, name: str, custom: bool) -> float:
    if not custom:
        return 0.0  # components do nothing themselves
    for pattern, suffix, seconds, _ in DURATIONS:
        if type_.startswith(pattern) and name.endswith(suffix):
            return seconds
    return 5.0


@dataclass(frozen=True)
class Chain:
    seconds: float
    resources: int
    names: list[str]


def critical_path(recording: Recording) -> Chain:
    """The longest chain of dependencies, weighted by DURATIONS."""
    by_urn = recording.by_urn()
    best: dict[str, tuple[float, int, str | None]] = {}

    def visit(urn: str) -> tuple[float, int, str | None]:
        if urn in best:
            return best[urn]
        r = by_urn[urn]
        deps = [d for d in set(r.dependencies) if d in by_urn]
        prior = max((visit(d) + (d,) for d in deps), key=lambda t: (t[0], t[1]), default=(0.0, 0, None, None))
        own = estimate(r.type, r.name, r.custom)
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


def serial_seconds(recording: Recording) -> float:
    return sum(estimate(r.type, r.name, r.custom) for r in recording.resources)


# The machines guard (components/guards.py) records every node's identity and size: any node change
# updates it, and it runs nothing.
GUARD = f"{CLUSTER}-machines"

# The patch upgrade the blast-radius scenario makes: from the patch before the reference stack's to it.
PATCH_UPGRADE = ("1.36.3", "1.36.4")


def generate_stack(nodes: int, windows_share: float = 0.3) -> dict:
    """A valid stack of `nodes` nodes: 3 control-plane (1 below 10 nodes), Linux and Windows workers
    alternating over two zones, addresses in a /16 node network."""
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
    hosts = IPv4Network("10.30.0.0/16").hosts()
    for _ in range(20):
        next(hosts)  # .1-.20 stay free: gateway, VIP
    addresses = [str(next(hosts)) for _ in range(nodes)]
    zones = ["hk-1", "hk-2"]
    proxmox = {"hk-1": "pve-hk1-a", "hk-2": "pve-hk2-a"}
    hyperv = {"hk-1": "hv-hk1-a", "hk-2": "hv-hk2-a"}
    size = {"cpu": 4, "memoryMb": 8192, "diskGb": 80}
    values["nodes"] = {"controlPlane": [], "linux": [], "windows": []}
    for i in range(nodes):
        zone = zones[i % 2]
        if i < control_plane:
            pool, node = "controlPlane", {"name": f"cp-{i + 1}", "proxmoxNode": proxmox[zone], "vmId": 1000 + i, "distro": "ubuntu22"}
        elif i < control_plane + linux:
            pool, node = "linux", {"name": f"lnx-{i + 1:03d}", "proxmoxNode": proxmox[zone], "vmId": 1000 + i,
                                   "distro": "ubuntu22" if i % 3 else "rocky9"}
        else:
            pool, node = "windows", {"name": f"win-{i + 1:03d}", "hypervHost": hyperv[zone], "version": "win2022"}
        values["nodes"][pool].append({**node, "zone": zone, "ip": addresses[i], **size})
    return values


def _reference() -> dict:
    """The reference stack's settings, the starting point of every generated stack."""
    from config.loader import from_stack_file
    return dict(from_stack_file(ROOT / "Pulumi.hk-prod.yaml").values)


def raw(values: dict):
    from config.loader import RawConfig
    return RawConfig(values=values, secure_keys=frozenset())


def measure_one(nodes: int) -> dict:
    """One size, in this process: timings, memory, resource count, critical path."""
    values = generate_stack(nodes)
    wall, cpu = time.perf_counter(), time.process_time()
    recording = run_program(raw(values), stack=CLUSTER)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    chain = critical_path(recording)
    return {
        "nodes": nodes,
        "resources": len(recording.resources),
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "critical_path_seconds": chain.seconds,
        "critical_path_resources": chain.resources,
        "critical_path": chain.names,
        "serial_seconds": serial_seconds(recording),
    }


# Single changes: (description, change to the stack values, the minimal set of resource names it must touch).
def _node_resources(recording: Recording, node: str) -> set[str]:
    return {r.name for r in recording.resources if f"-{node}-" in f"{r.name}-"}


@dataclass(frozen=True)
class Scenario:
    """One single change: what it does to the stack values and to the secrets, and the minimal set of resource
    names it must touch (given, or computed from the run after the change)."""

    description: str
    minimal: set[str] | Callable[[Recording], set[str]]
    change: Callable[[dict], None] | None = None
    secrets: dict[str, str] = field(default_factory=dict)


COMMAND = "command:remote:Command"


def _carrying(recording: Recording, key: str, text: str) -> set[str]:
    """Commands whose input `key` carries `text` (a secret's placeholder), unless they ignore its changes."""
    def value(r) -> str:
        v = r.inputs.get(key)
        return repr(getattr(v, "value", v))
    return {r.name for r in recording.resources
            if r.type == COMMAND and text in value(r) and key not in r.ignore_changes}


def _scenarios(values: dict, base: Recording) -> list[Scenario]:
    linux = values["nodes"]["linux"]
    first_linux, last_linux = linux[0]["name"], linux[-1]["name"]
    placeholders = placeholder_secrets()

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
        v["access"]["bastion"] = {"host": "10.30.0.5", "user": "jump"}

    def version_dependent(after: Recording) -> set[str]:
        # What legitimately follows the version: the pin and the record it moves to after the chain, the
        # upgrade chain (each node drained, upgraded and uncordoned in turn), Windows kube-proxy's image tag,
        # the certificate expiry report and the provider's credential (an upgrade renews the certificates).
        # kubeadm init, first-boot snippets and the Windows binaries steps keep the versions they were
        # created with (ignore_changes).
        names = {f"{CLUSTER}-kubernetes-version", f"{CLUSTER}-kubernetes-version-upgraded", f"{CLUSTER}-kubeadm-kubeconfig"}
        names |= {r.name for r in after.resources if r.name.startswith(f"{CLUSTER}-certificates-") and r.custom}
        # (A Windows node's runtime step names only the containerd pin, which a patch leaves.)
        names |= {r.name for r in after.resources
                  if r.name.startswith(f"{CLUSTER}-upgrade-") and not r.name.endswith("-runtime-upgrade")}
        names |= {r.name for r in after.resources if r.name.endswith("-kube-proxy-windows") and "daemonset" in r.name}
        return names

    restarts = ("drain-for-restart", "vm-restart", "uncordon-after-restart")
    return [
        # The VM stores the new size as pending; that worker's restart steps (drain, qm reboot, uncordon) apply it.
        Scenario("one worker's memory", {f"{CLUSTER}-{first_linux}-vm", GUARD,
                                          *(f"{CLUSTER}-restarts-{first_linux}-{step}" for step in restarts)}, memory),
        Scenario("the Calico MTU", {f"{CLUSTER}-network-installation"}, mtu),
        Scenario("add a Windows worker", lambda after: _node_resources(after, "win-new") | {GUARD}, add_windows),
        Scenario("remove a Linux worker", _node_resources(base, last_linux) | {GUARD}, remove_linux),
        Scenario("rotate the SMB password", smb_secret_names(base), secrets={"smbPassword": "rotated"}),
        Scenario("a Kubernetes patch version", version_dependent, patch_version),
        # Credentials (docs/lifecycle.md: Rotating credentials): every command that dials with the credential runs
        # its update, which finds its work done; the provider's kubeconfig read ignores the connection.
        Scenario("rotate the node SSH key", _carrying(base, "connection", placeholders["nodeSshPrivateKey"]),
                 secrets={"nodeSshPrivateKey": "rotated"}),
        Scenario("add a bastion", lambda after: _carrying(after, "connection", "'proxy'"), bastion),
        Scenario("rotate the Windows admin password", _carrying(base, "stdin", placeholders["windowsAdminPassword"]),
                 secrets={"windowsAdminPassword": "rotated",
                          "windowsAdminPasswordPrevious": placeholders["windowsAdminPassword"]}),
    ]


def refused_at_preview(before: dict, after: dict) -> str | None:
    """What the version pin's check says of the change, as a real preview would run it."""
    from components.version_pin import STATE_FORMAT, STATE_FORMAT_KEY, VERSION_KEY, KubernetesVersionPinProvider

    failures = KubernetesVersionPinProvider().check(
        {VERSION_KEY: before["cluster"]["kubernetesVersion"], STATE_FORMAT_KEY: STATE_FORMAT},
        {VERSION_KEY: after["cluster"]["kubernetesVersion"]}).failures
    return failures[0].reason if failures else None


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
        expected = scenario.minimal(after) if callable(scenario.minimal) else scenario.minimal
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


def markdown(report: dict) -> str:
    lines = ["# Benchmarks", "", "Made by `python -m tools.bench` (see docs/offline.md). The graph is the one the program "
             "declares; durations are the estimates in `tools/bench.py` `DURATIONS`, not measurements.", "",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores, {report['machine']['memory']}, "
             f"Python {report['machine']['python']}.", "", "## Scale", "",
             "| nodes | resources | evaluation wall s | CPU s | peak RSS MiB | critical path (resources) "
             "| critical path est. | one-at-a-time est. |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in report["sizes"]:
        lines.append(f"| {row['nodes']} | {row['resources']} | {row['wall_seconds']} | {row['cpu_seconds']} | "
                     f"{row['peak_rss_mib']} | {row['critical_path_resources']} | {row['critical_path_seconds'] / 60:.0f} min | "
                     f"{row['serial_seconds'] / 3600:.1f} h |")
    per_resource = [f"{row['nodes']} nodes: {1000 * row['wall_seconds'] / row['resources']:.1f} ms" for row in report["sizes"]]
    lines += ["", "Evaluation time per declared resource (flat means no work grows faster than the graph): "
              + ", ".join(per_resource) + ". Profiled with cProfile at 300 nodes, the time goes to Pulumi's own "
              "resource registration and to rendering each node's scripts; the per-node YAML is emitted by "
              "libyaml."]
    targets = report["targets"]
    lines += ["", f"Critical path at the largest size vs the smallest: {targets['critical_path_ratio']:.3f} "
              f"(target ≤ 1.10: {'met' if targets['critical_path_ok'] else 'NOT met'}).", "",
              f"Longest chain at {report['sizes'][-1]['nodes']} nodes: " + " → ".join(report['sizes'][-1]['critical_path']), "",
              f"## Blast radius ({report['blast_radius_nodes']} nodes)", "",
              "| change | resources touched | minimal set | equal | at preview |", "|---|---:|---:|---|---|"]
    for row in report["blast_radius"]:
        verdict = "refused by the version pin" if row["refused"] else "planned"
        lines.append(f"| {row['change']} | {len(row['touched'])} | {len(row['minimal'])} | "
                     f"{'yes' if row['equal'] else 'NO'} | {verdict} |")
    lines += ["", "Touched resources per change:", ""]
    for row in report["blast_radius"]:
        lines.append(f"- {row['change']}: {', '.join(row['touched']) or '(none)'}")
    lines += ["", "## Estimated durations", "", "| resource | name ends with | seconds | stands for |", "|---|---|---:|---|"]
    for type_, suffix, seconds, what in DURATIONS:
        lines.append(f"| `{type_}` | `{suffix}` | {seconds:.0f} | {what} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 30, 300])
    parser.add_argument("--blast-nodes", type=int, default=30, help="stack size for the blast-radius runs")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size in this process
    parser.add_argument("--json", type=Path, default=ROOT / "build" / "bench.json")
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure_one(args.one)))
        return 0

    sizes = []
    for nodes in sorted(args.sizes):
        # Each size in a fresh process, so peak memory and timings are its own.
        out = subprocess.run([sys.executable, "-m", "tools.bench", "--one", str(nodes)], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        sizes.append(json.loads(out.strip().splitlines()[-1]))
        print(f"{nodes} nodes: {sizes[-1]['resources']} resources, {sizes[-1]['wall_seconds']} s", file=sys.stderr)
    ratio = sizes[-1]["critical_path_seconds"] / sizes[0]["critical_path_seconds"]
    radius = blast_radius(args.blast_nodes)
    report = {"machine": machine(), "sizes": sizes, "blast_radius_nodes": args.blast_nodes, "blast_radius": radius,
              "targets": {"critical_path_ratio": ratio, "critical_path_ok": ratio <= 1.10,
                          "blast_radius_ok": all(r["equal"] for r in radius)}}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(markdown(report))
    print(markdown(report))
    return 0 if report["targets"]["critical_path_ok"] and report["targets"]["blast_radius_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
