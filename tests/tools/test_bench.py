"""The benchmark's own logic: generated stacks are valid, the critical path is right, radii are minimal."""
from __future__ import annotations

import gc
import json

import pytest

import tuning
from config.loader import load
from tools import bench, cpu_shares
from tools.mock.program import Recording, Resource, run_declarations
from tools.synth import plain
from tuning import gc_thresholds


@pytest.mark.parametrize("nodes", [3, 30, 300])
def test_generated_stacks_are_valid(nodes):
    spec = load(bench.raw(bench.generate_stack(nodes))).spec
    assert len(spec.linux_nodes) + len(spec.nodes.windows) == nodes
    assert spec.nodes.windows and spec.nodes.linux
    assert {n.zone for n in spec.linux_nodes} == {"hk-1", "hk-2"}
    # Hosts grow with the VMs they carry.
    assert len(spec.proxmox.nodes) * bench.LINUX_VMS_PER_PROXMOX_NODE >= len(spec.linux_nodes)
    assert len(spec.hyperv.hosts) * bench.WINDOWS_VMS_PER_HYPERV_HOST >= len(spec.nodes.windows)


def _resource(name: str, deps: list[str], type_: str = "command:remote:Command") -> Resource:
    return Resource(urn=name, type=type_, name=name, parent="", dependencies=deps, property_dependencies={},
                    inputs={}, custom=True, protect=False, delete_before_replace=False, ignore_changes=[],
                    additional_secret_outputs=[], provider="")


def test_critical_path_follows_the_heaviest_chain():
    recording = Recording(resources=[
        _resource("a-vm", []), _resource("b-init", ["a-vm"]), _resource("c-join", ["b-init"]),
        _resource("d-join-credentials", ["a-vm"]),
    ])
    chain = bench.critical_path(recording)
    assert chain.names == ["a-vm", "b-init", "c-join"]
    assert chain.seconds == 600 + 240 + 120
    assert bench.serial_seconds(recording) == chain.seconds + 5


def test_every_single_change_touches_only_its_minimal_set():
    for row in bench.blast_radius(10):
        assert row["equal"], row


@pytest.mark.slow
def test_the_benchmark_page_says_what_the_code_says_and_the_fleet_targets_hold():
    """docs/benchmarks.md's graph section is what tools.bench renders now (run `python -m tools.bench` after a
    change that moves it); only the measured timings below it are this machine's. And the targets: the modelled
    patch upgrade at 300 nodes within 1.5 times the 30-node one and under two hours; creating 300 nodes takes less
    than three times as long as creating 30 (hosts grow with the nodes, work is bounded per host)."""
    recordings = {n: bench.run_program(bench.raw(bench.generate_stack(n)), stack=bench.CLUSTER) for n in (3, 30, 300)}
    rows = [bench.graph_row(n, recording) for n, recording in recordings.items()]
    expected = bench.graph_markdown(rows, bench.blast_radius(30), 30)
    page = (bench.ROOT / "docs" / "benchmarks.md").read_text()
    start, end = page.index(bench.GRAPH_BEGIN), page.index(bench.GRAPH_END) + len(bench.GRAPH_END)
    assert page[start:end] + "\n" == expected

    targets = bench.graph_targets(rows)
    assert targets["upgrade_ratio_ok"] and targets["upgrade_300_ok"], targets
    by_nodes = {row["nodes"]: row for row in rows}
    assert by_nodes[300]["create_seconds"] < 3 * by_nodes[30]["create_seconds"]
    assert by_nodes[300]["upgrade_serial_seconds"] > 10 * by_nodes[300]["upgrade_seconds"]    # the waves do the work
    # The declared dependencies grow with the graph, not with its square: consecutive waves meet at a gate
    # (components/cluster/waves.py) instead of every node of one naming every node of the other.
    edges = {n: sum(len(r.dependencies) for r in recording.resources) / len(recording.resources)
             for n, recording in recordings.items()}
    assert edges[300] <= 1.3 * edges[30], edges


@pytest.mark.slow
def test_a_thousand_nodes_evaluate_at_pythons_default_recursion_limit():
    """The graph is as deep as the waves, and the cycle check walks nothing (tuning/cycle_check.py): no
    recursion limit is raised anywhere."""
    import sys
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1000)   # what a fresh interpreter starts with
        recording = bench.run_program(bench.raw(bench.generate_stack(1000)), stack=bench.CLUSTER)
    finally:
        sys.setrecursionlimit(limit)
    assert not recording.plan.errors
    assert len([r for r in recording.resources if r.name.endswith("-vm-restart")]) > 600


def test_bounded_create_keeps_each_host_and_the_first_control_plane_within_its_lanes():
    """Scheduled as the engine would (everything as soon as what it depends on is done), no Proxmox node runs
    more clones, no Hyper-V host more VM creations, and the first control-plane node no more join credentials or
    readiness waits at once than provisioning allows."""
    values = bench.generate_stack(60)
    values["provisioning"] = {"clonesPerProxmoxNode": 3, "copiesPerHypervHost": 2, "controlPlaneSessions": 5}
    recording = bench.run_program(bench.raw(values), stack=bench.CLUSTER)
    spans = bench.schedule(recording)
    by_name = {r.name: r for r in recording.resources}

    def most_at_once(names: list[str]) -> int:
        events = sorted([(spans[n][0], 1) for n in names] + [(spans[n][1], -1) for n in names])
        running = peak = 0
        for _, step in events:
            running += step
            peak = max(peak, running)
        return peak

    nodes = {n["name"]: n for pool in values["nodes"].values() for n in pool}
    for host in {n.get("proxmoxNode") for n in nodes.values()} - {None}:
        vms = [f"{bench.CLUSTER}-{name}-vm" for name, n in nodes.items() if n.get("proxmoxNode") == host]
        assert 3 <= len(vms) and most_at_once(vms) <= 3, host
    for host in {n.get("hypervHost") for n in nodes.values()} - {None}:
        vms = [f"{bench.CLUSTER}-{name}-vm" for name, n in nodes.items() if n.get("hypervHost") == host]
        assert most_at_once(vms) <= 2, host
    sessions = [name for name in by_name if name.startswith(f"{bench.CLUSTER}-kubeadm-")
                and name.endswith(("-join-credentials", "-drain")) and "cp-" not in name]
    credentials = [n for n in sessions if n.endswith("-join-credentials")]
    waits = [n for n in sessions if n.endswith("-drain")]
    assert len(waits) > 50 and most_at_once(credentials) <= 5 and most_at_once(waits) <= 5


def test_the_program_runs_with_its_tuning_and_puts_the_process_back_itself(monkeypatch):
    """__main__.py applies tuning/'s adjustments on a fleet where they pay, no full collection walks the heap during
    the run, and once every resource is registered the program itself puts back the collector's thresholds and the
    SDK's cycle check (the harness does not: an Automation API host's process goes on as this one does). A small
    stack, and one the program refuses, change nothing."""
    from pulumi.runtime import rpc

    from tuning import cycle_check
    calls: list[tuple[int, ...]] = []
    real = gc.set_threshold
    monkeypatch.setattr(gc, "set_threshold", lambda *values: (calls.append(values), real(*values)))
    installed: list[bool] = []
    monkeypatch.setattr(cycle_check, "install", lambda real_install=cycle_check.install: installed.append(real_install())
                        or installed[-1])
    before, sdk_check = gc.get_threshold(), rpc.declare_dependency
    full: list[dict] = []

    def note(phase: str, info: dict) -> None:
        # A full collection while the program's thresholds hold (after they are put back, Python's own may run one).
        if phase == "start" and info["generation"] == 2 and gc.get_threshold() == gc_thresholds.THRESHOLDS:
            full.append(info)

    large = max(tuning.MIN_NODES.values()) + 3
    gc.callbacks.append(note)
    try:
        bench.run_program(bench.raw(bench.generate_stack(large)), stack=bench.CLUSTER)
    finally:
        gc.callbacks.remove(note)
    assert rpc.declare_dependency is sdk_check and gc.get_threshold() == before
    assert installed == [True]
    if gc_thresholds.GENERATIONAL:
        assert calls == [gc_thresholds.THRESHOLDS, before] and full == []
    else:   # an interpreter the thresholds were not measured on keeps its own
        assert calls == []

    # Below the cycle check's fleet size, only what pays there.
    calls.clear(), installed.clear()
    small = tuning.MIN_NODES["cycle_check"] - 20
    assert small >= tuning.MIN_NODES["gc_thresholds"]
    bench.run_program(bench.raw(bench.generate_stack(small)), stack=bench.CLUSTER)
    assert installed == [] and rpc.declare_dependency is sdk_check and gc.get_threshold() == before
    assert calls == ([gc_thresholds.THRESHOLDS, before] if gc_thresholds.GENERATIONAL else [])
    calls.clear()
    values = bench.generate_stack(large)
    values["cluster"]["name"] = "Not A Label"
    with pytest.raises(Exception, match="cluster.name"):
        bench.run_program(bench.raw(values), stack=bench.CLUSTER)
    assert calls == [] and installed == [] and gc.get_threshold() == before


def test_the_program_declares_one_gate_per_wave_and_chain():
    """The gates the bench's minimal sets expect come from the rollout plan alone; the program declares exactly
    those (components/cluster/waves.py)."""
    values = bench.generate_stack(20)
    recording = bench.run_program(bench.raw(values), stack=bench.CLUSTER)
    assert bench._wave_gates(recording) == bench.expected_gates(values)
    assert len(bench.expected_gates(values)) >= 3 * 5


def test_the_baseline_registers_as_many_resources_with_the_programs_inputs(tmp_path):
    """The bare program (#40): one custom resource per resource the program registers, each carrying that resource's
    inputs as plain data, under the same mock engine; the page reports the program's CPU per resource against it."""
    dump = tmp_path / "declared.json"
    measured = bench.measure_one(3, dump=dump)
    declared = json.loads(dump.read_text())
    assert len(declared) == measured["timing"]["resources"]
    assert any("cloud-config" in json.dumps(d["inputs"]) for d in declared)      # the user-data travels as input
    floor = bench.measure_baseline(dump, 3)
    assert floor["resources"] == len(declared) and floor["cpu_ms_per_resource"] > 0
    row = {"resources": 1, "wall_seconds": 1, "bare_cpu_ms_per_resource": 1.4}
    timings = [{**row, "nodes": 30, "cpu_ms_per_resource": 2.0, "cpu_seconds": 2, "peak_rss_mib": 100, "bare_ratio": 1.4},
               {**row, "nodes": 300, "cpu_ms_per_resource": 2.2, "cpu_seconds": 9, "peak_rss_mib": 500, "bare_ratio": 1.6}]
    targets = bench.timing_targets(timings)
    assert targets["bare_ratios"] == {30: 1.4, 300: 1.6} and targets["bare_ratio_ok"] is False
    assert "1.60 at 300 nodes" in bench.markdown({
        "graph": [], "blast_radius": [], "blast_radius_nodes": 30, "timings": timings, "runs": 1,
        "machine": {"cpu": "x", "cores": 2, "memory": "1 GiB", "python": "3.11"}})


def test_the_replay_registers_the_programs_graph_through_the_command_class(tmp_path):
    """The second floor (replay_program): the program's resources, each with the same parent and dependencies; each
    remote command through pulumi_command's class, with the very inputs the program gave it."""
    dump = tmp_path / "declared.json"
    bench.measure_one(3, dump=dump)
    declared = json.loads(dump.read_text())
    recording = run_declarations(lambda: bench.replay_program(declared, 3), stack=bench.CLUSTER)
    # Each replayed resource is named after its index in the program's list.
    index = {r.urn: int(r.name.removeprefix("replay-")) for r in recording.resources}
    assert sorted(index.values()) == list(range(len(declared)))
    commands = 0
    for replay in recording.resources:
        program = declared[index[replay.urn]]
        assert replay.custom == program["custom"]
        assert index.get(replay.parent) == program["parent"]
        assert sorted(index[urn] for urn in replay.dependencies) == program["dependencies"]
        inputs = plain(replay.inputs, secret=lambda s: plain(s.value))
        if program["type"] == bench.COMMAND_TYPE:
            commands += 1
            assert replay.type == bench.COMMAND_TYPE and inputs == program["inputs"]
        elif program["custom"]:
            assert replay.type == bench.BARE_TYPE and inputs == program["inputs"]
        else:
            assert replay.type == (program["type"] if program["remote"] else bench.REPLAY_COMPONENT_TYPE)
    assert commands > 50                      # the largest kind of resource (4,886 of 7,092 at 300 nodes)
    assert any(d["remote"] for d in declared)                     # the Helm v4 charts, provider components
    assert sum(len(d["dependencies"]) for d in declared) > len(declared)
    floor = bench.measure_baseline(dump, 3, replay=True)
    assert floor["resources"] == len(declared)


def test_a_sampled_run_puts_its_cpu_in_the_programs_sdks_and_engines_shares(monkeypatch):
    """measure_shares (#40): one run sampled by tools/cpu_shares.py with the bench's categories, whose paths match the
    program's and the SDK's files (a wrong site-packages or repository path leaves the SDK's share at 0). It asks for
    monkeypatch so that its run is run, not answered by an earlier identical one (tests/conftest.py)."""
    measured = bench.measure_shares(3)
    shares = measured["shares"]
    assert measured["samples"] > 20                     # about a second of CPU, a sample every 4 ms or so
    assert list(shares) == bench.SHARES and sum(shares.values()) == pytest.approx(100, abs=0.5)
    assert shares[bench.PROGRAM_SHARE] > 1 and shares[bench.SDK_SHARE] > 20, shares
    assert shares[cpu_shares.UNATTRIBUTED] < 3, shares       # the last interval: a few milliseconds of a second


def test_the_page_says_where_the_cpu_goes_and_what_the_graph_alone_costs():
    row = {"resources": 1, "wall_seconds": 1, "bare_cpu_ms_per_resource": 1.0, "peak_rss_mib": 100}
    shares = {name: 0.0 for name in bench.SHARES} | {bench.PROGRAM_SHARE: 10.0, cpu_shares.IMPORTS: 5.0,
                                                    bench.SDK_SHARE: 85.0}
    timings = [{**row, "nodes": 30, "cpu_ms_per_resource": 2.0, "cpu_seconds": 2, "bare_ratio": 2.0, "shares": shares,
                "shares_samples": 1234,
                "replay_cpu_ms_per_resource": 1.6, "replay_ratio": 1.25},
               {**row, "nodes": 300, "cpu_ms_per_resource": 2.0, "cpu_seconds": 9, "bare_ratio": 2.0}]
    assert bench.timing_targets(timings)["replay_over_bare"] == {30: 1.6}         # 300 has no replay
    page = bench.markdown({"graph": [], "blast_radius": [], "blast_radius_nodes": 30, "timings": timings, "runs": 1,
                           "machine": {"cpu": "x", "cores": 2, "memory": "1 GiB", "python": "3.11"}})
    assert "| 30 | 10.0 | 5.0 | 85.0 | 0.0 | 0.0 | 0.0 | 1234 |" in page and "own code: 10.0% at 30 nodes" in page
    assert "(1.60 at 30 nodes)" in page and "adds: 1.25 at 30 nodes" in page
