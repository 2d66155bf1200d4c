"""The preflight's command line: the stack and its secrets read, every host checked in parallel with a progress
display, one line per check (or `--json`), exit 1 on any failure."""
from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import TypeVar

from config.model import StackSpec
from config.secret_keys import SECRETS
from tools.preflight import hosts, network, proxmox_api, ssh
from tools.preflight.results import FAIL, WARN, Progress, Result, report
from tools.synth import add_stack_arguments, read_stack
from vocab.cluster import snake_case

TOKEN_KEY = "proxmoxApiToken"
T = TypeVar("T")


def env_name(key: str) -> str:
    """The environment variable a secret is read from first: proxmoxSshPrivateKey -> PROXMOX_SSH_PRIVATE_KEY."""
    return snake_case(key).upper()


def read_secret(key: str, stack: str | None) -> tuple[str | None, str]:
    """A secret from the environment when it is set there, else from the Pulumi CLI's stack config; and where it came
    from, or why the CLI gave none."""
    variable = env_name(key)
    value = os.environ.get(variable, "").strip()
    if value:
        return _text(value), f"the environment variable {variable}"
    if stack is None or not shutil.which("pulumi"):
        return None, f"neither {variable} nor the Pulumi CLI (not installed, or --stack-file without --stack)"
    try:
        done = subprocess.run(["pulumi", "config", "get", key, "--stack", stack], capture_output=True, text=True,
                              timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return None, f"`pulumi config get {key} --stack {stack}`, which did not answer in 60 s"
    if done.returncode == 0 and done.stdout.strip():
        return _text(done.stdout.strip()), f"the Pulumi CLI's config of stack {stack}"
    return None, f"`pulumi config get {key} --stack {stack}`: {done.stderr.strip() or 'empty'}"


def _text(value: str) -> str:
    """A secret as read, trimmed; a PEM or OpenSSH key keeps the final newline its format ends with."""
    return value + "\n" if value.endswith("-----") else value


def read_access(spec: StackSpec, stack: str | None) -> tuple[hosts.Access, list[str]]:
    """The SSH secrets the stack's hosts need, and a line for each saying where it came from."""
    wanted = [key for key in hosts.SSH_SECRETS if SECRETS[key].needed(spec)]
    found: dict[str, str] = {}
    missing: dict[str, str] = {}
    lines = []
    for key in wanted:
        value, source = read_secret(key, stack)
        if value is None:
            missing[key] = source
        else:
            found[key] = value
            lines.append(f"{key} from {source}")
    b = spec.access.bastion
    bastion = None
    if b is not None:
        bastion = ssh.Endpoint(b.host, b.port, b.user, b.host_key, private_key=found.get("bastionSshPrivateKey"))
    return hosts.Access(found.get("proxmoxSshPrivateKey"), found.get("hypervSshPrivateKey"),
                        found.get("hypervSshPassword"), bastion, missing), lines


def run_all(spec: StackSpec, token: str, access: hosts.Access, *, ca_file: str | None = None,
            mount_images: bool = False, progress: Progress | None = None, run: Callable[..., ssh.Completed] = ssh.run,
            dns_port: int = network.DNS_PORT) -> list[Result]:
    """Every check, each host in its own thread; read-only (but for --read-images' read-only mounts)."""
    proxmox_nodes = [n for n in spec.proxmox.nodes if n.name in proxmox_api.used_nodes(spec)]
    hyperv_hosts = [h for h in spec.hyperv.hosts if any(n.hyperv_host == h.name for n in spec.nodes.windows)]
    probe_node = proxmox_nodes[0] if proxmox_nodes else None
    api_label = proxmox_api.api_host(spec)
    network_label = f"network, from {probe_node.name}" if probe_node is not None else "network"

    def tell(label: str, results: list[Result]) -> None:
        if progress is not None:
            progress.done(label, results)

    def guarded(label: str, work: Callable[[], T], failed: Callable[[list[Result]], T], shown: bool = True) -> T:
        """One host's work (or one judgement): whatever it raises becomes a FAIL of that host, and the others' results
        stay; `shown`: the progress display hears of it."""
        found: list[Result] = []
        try:
            value = work()
            found = _results_of(value)
            return value
        except Exception as error:  # a defect or an unforeseen answer: reported, not a traceback that loses the rest
            found = [Result(label, "preflight", FAIL, f"internal error: {error!r}",
                            "report it with the output of --json; the other hosts' checks stand")]
            return failed(found)
        finally:
            if shown:
                tell(label, found)

    def hyperv_host(index: int) -> hosts.HypervFindings:
        host = hyperv_hosts[index]
        # The first host also reads the network from the Windows side: the Windows nodes' addresses.
        net = ([str(n.ip) for n in spec.nodes.windows], network.dns_names(spec)) if index == 0 else None
        return hosts.check_hyperv_host(spec, host, access, mount_images, network=net, run=run)

    def site_network() -> list[list[str]] | str:
        if probe_node is None or access.proxmox_key is None:
            return "no Proxmox node to read it from, or no proxmoxSshPrivateKey"
        endpoint = ssh.Endpoint(str(probe_node.address), 22, spec.proxmox.ssh_user, probe_node.host_key,
                                private_key=access.proxmox_key)
        return network.run_from_proxmox(spec, probe_node, endpoint, access.bastion, run=run, dns_port=dns_port)

    with ThreadPoolExecutor(max_workers=min(16, 2 + len(proxmox_nodes) + len(hyperv_hosts))) as pool:
        api_future = pool.submit(guarded, api_label, lambda: proxmox_api.run(spec, token, ca_file),
                                 proxmox_api.ApiFindings)
        node_futures = [pool.submit(guarded, n.name, functools.partial(hosts.check_proxmox_node, spec, n, access,
                                                                        run=run), lambda found: found)
                        for n in proxmox_nodes]
        host_futures = [pool.submit(guarded, h.name, functools.partial(hyperv_host, i), hosts.HypervFindings)
                        for i, h in enumerate(hyperv_hosts)]
        network_future = pool.submit(guarded, network_label, site_network, lambda found: "the probe failed")
        api_found = api_future.result()
        results = list(api_found.results)
        for future in node_futures:
            results += future.result()
        host_found = [f.result() for f in host_futures]
        for found in host_found:
            results += found.results
        existing = set(api_found.existing_vms)
        unknown: set[str] = set()
        for host, found in zip(hyperv_hosts, host_found, strict=True):
            vms = (found.report or {}).get("vms") or {}
            existing |= set(vms.get("names") or [])
            if found.report is None or "error" in vms:
                unknown |= {n.name for n in spec.nodes.windows if n.hyperv_host == host.name}
        lines = network_future.result()
        if probe_node is not None:
            results += guarded(network_label, lambda: network.judge_proxmox(spec, probe_node.name, lines, existing,
                                                                             unknown), lambda found: found, shown=False)
        if hyperv_hosts:
            label = f"network, from {hyperv_hosts[0].name}"
            report = host_found[0].report
            if report is None:
                results.append(Result(label, "network probe", WARN, "not run: the host's checks above stopped first",
                                      "fix them; the Proxmox node's check covers the addresses meanwhile"))
            else:
                results += guarded(label, lambda: network.judge_hyperv(spec, hyperv_hosts[0].name, report, existing,
                                                                       unknown), lambda found: found, shown=False)
    return results


def _results_of(value: object) -> list[Result]:
    """What a host's work found, for the progress display (the network's lines are judged at the end)."""
    if isinstance(value, (proxmox_api.ApiFindings, hosts.HypervFindings)):
        return value.results
    return [r for r in value if isinstance(r, Result)] if isinstance(value, list) else []


def progress_labels(spec: StackSpec) -> list[str]:
    nodes = proxmox_api.used_nodes(spec)
    hyperv = [h.name for h in spec.hyperv.hosts if any(n.hyperv_host == h.name for n in spec.nodes.windows)]
    return [proxmox_api.api_host(spec), *nodes, *hyperv, f"network, from {nodes[0]}" if nodes else "network"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.preflight", description=(__doc__ or "").split("\n\n")[0])
    add_stack_arguments(p)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--ca-file", metavar="PEM", help="the CA the Proxmox API's certificate is checked against, "
                                                    "instead of the system's")
    p.add_argument("--read-images", action="store_true",
                   help="read each golden image's Windows build: mounts it read-only on its Hyper-V host for a moment "
                        "(the one check that is not free of side effects; never while a `pulumi up` runs)")
    args = p.parse_args(argv)
    # paramiko logs a host's dropped connection at ERROR, which Python's last-resort handler would print: each is a
    # result here already.
    logging.getLogger("paramiko").setLevel(logging.CRITICAL)
    spec = read_stack(p, args)
    if spec is None:
        return 2
    token, source = read_secret(TOKEN_KEY, args.stack)
    if token is None:
        print(f"error: no Proxmox API token from {source}: set it with `pulumi config set --secret {TOKEN_KEY} "
              f"--stack <stack>`, or in {env_name(TOKEN_KEY)}", file=sys.stderr)
        return 2
    if args.ca_file is not None and not Path(args.ca_file).is_file():
        print(f"error: --ca-file {args.ca_file} is not a file", file=sys.stderr)
        return 2
    access, sources = read_access(spec, args.stack)
    for line in [f"{TOKEN_KEY} from {source}", *sources]:
        print(line, file=sys.stderr)
    results = run_all(spec, token, access, ca_file=args.ca_file, mount_images=args.read_images,
                      progress=Progress(progress_labels(spec)))
    print(json.dumps([asdict(r) for r in results], indent=2) if args.json else report(results))
    return 1 if any(r.status == FAIL for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
