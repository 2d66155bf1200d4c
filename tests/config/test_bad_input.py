"""Bad input never crashes, never passes silently, never leaks: every class of broken stack a user can write
ends in a SpecError naming each problem at its key path (or file:line), without repeating a value that could
be a credential, and every stack the config layer accepts runs through the whole program under mocks."""
from __future__ import annotations

import copy
import random
import subprocess
import sys

import pytest
import yaml

from config.loader import SpecError, from_stack_file, load
from tests.conftest import HK_PROD, ROOT, hk_prod_values, leaves, problems, raw_config
from tools.mock.program import run_program


def _set(path: tuple, value):
    def mutate(values: dict) -> None:
        parent = values
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
    return mutate


# Values that once got past the config layer and then crashed a renderer (components call them while declaring
# resources): each is now refused at its key path. The value column is what must not appear in the message.
RENDERER_REFUSALS = [
    ("nodes.windows[0].memoryMb", _set(("nodes", "windows", 0, "memoryMb"), 16385), "even number of MB"),
    ("nodes.windows[0].computerName", _set(("nodes", "windows", 0, "computerName"), "bad name!"), "NetBIOS"),
    ("nodes.windows[0].computerName", _set(("nodes", "windows", 0, "computerName"), "12345"), "not only digits"),
    ("hyperv.hosts[0].switchName", _set(("hyperv", "hosts", 0, "switchName"), ""), "without surrounding spaces"),
    ("hyperv.hosts[0].switchName", _set(("hyperv", "hosts", 0, "switchName"), "vSwitch*"), "wildcard"),
    ("hyperv.hosts[0].vmFolder", _set(("hyperv", "hosts", 0, "vmFolder"), ""), "absolute Windows path"),
    ("hyperv.hosts[0].vmFolder", _set(("hyperv", "hosts", 0, "vmFolder"), "Hyper-V\\hk"), "absolute Windows path"),
    ("hyperv.hosts[0].goldenImages.win2022", _set(("hyperv", "hosts", 0, "goldenImages", "win2022"), ""),
     "absolute Windows path"),
    ("hyperv.hosts[0].nicOffload.adapters[0]", _set(("hyperv", "hosts", 0, "nicOffload", "adapters"), [" "]),
     "without surrounding spaces"),
    ("hyperv.hosts[0].user", _set(("hyperv", "hosts", 0, "user"), ""), "Windows user name"),
    ("observability.logs.host", _set(("observability", "logs", "host"), ""), "host name"),
    ("observability.logs.host", _set(("observability", "logs", "host"), "loki;rm -rf /"), "host name"),
    ("ntpServers[1]", _set(("ntpServers",), ["10.10.10.5", "ntp one"]), "host name"),
    ("ntpServers[0]", _set(("ntpServers",), [""]), "host name"),
    ("network.searchDomain", _set(("network", "searchDomain"), "hk.例子.com"), "lower-case DNS name"),
    ("network.searchDomain", _set(("network", "searchDomain"), "HK.example"), "lower-case DNS name"),
    ("access.adminUser", _set(("access", "adminUser"), "root"), "must not be root"),
    ("observability.logs.tenant", _set(("observability", "logs", "tenant"), "ops:S3cr3t-Passw0rd"),
     "Loki tenant ID"),
    ("registry.mirrors[0].endpoint",
     _set(("registry", "mirrors", 0, "endpoint"), "https://admin:Harbor12345@harbor.hk-prod.internal"), "without user:password@"),
    ("registry.mirrors[0].upstream", _set(("registry", "mirrors", 0, "upstream"), "docker.io:443"), "no port"),
    ("workloads.sampleHost", _set(("workloads",), {"sampleHost": "Api Host"}), "DNS name"),
    ("storage.nfs.server", _set(("storage", "nfs", "server"), "nfs server"), "host name"),
    ("proxmox.datastores.snippets", _set(("proxmox", "datastores", "snippets"), "Local Snippets"), "Proxmox ID"),
    ("policy.namespaces[2]", _set(("policy", "namespaces"), ["win-prod", "linux-prod", "linux-prod"]), "listed twice"),
    ("network.nodes.proxmoxBridge", _set(("network", "nodes", "proxmoxBridge"), "vmbr30; reboot"), "a Linux bridge name"),
]


@pytest.mark.parametrize("path, mutate, fragment", RENDERER_REFUSALS, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(RENDERER_REFUSALS)])
def test_values_renderers_refuse_are_refused_by_config_at_their_key_path(hk_values, path, mutate, fragment):
    mutate(hk_values)
    found = problems(hk_values)
    assert any(p.startswith(f"{path}: ") and fragment in p for p in found), found


SECRET_LIKE = ["S3cr3t-Passw0rd", "Harbor12345", "rm -rf"]


@pytest.mark.parametrize("path, mutate, fragment", RENDERER_REFUSALS[-10:-4])
def test_a_refused_credential_like_value_is_not_repeated(hk_values, path, mutate, fragment):
    mutate(hk_values)
    text = "\n".join(problems(hk_values))
    assert text and not any(secret in text for secret in SECRET_LIKE), text


# Values the config layer used to accept although they are wrong: strict types, bounds, clashes.
SILENT_ACCEPTS = [
    ("nodes.linux[0].cpu", _set(("nodes", "linux", 0, "cpu"), True), "valid integer"),
    ("nodes.linux[0].memoryMb", _set(("nodes", "linux", 0, "memoryMb"), 8192.0), "valid integer"),
    ("nodes.linux[0].diskGb", _set(("nodes", "linux", 0, "diskGb"), "120"), "valid integer"),
    ("proxmox.insecure", _set(("proxmox", "insecure"), "yes"), "valid boolean"),
    ("proxmox.insecure", _set(("proxmox", "insecure"), 1), "valid boolean"),
    ("storage.allowExpansion", _set(("storage", "allowExpansion"), "true"), "valid boolean"),
    ("nodes.linux[0].memoryMb", _set(("nodes", "linux", 0, "memoryMb"), 32768 * 1024), "less than or equal to 1048576"),
    ("nodes.linux[0].diskGb", _set(("nodes", "linux", 0, "diskGb"), 120 * 1024 * 1024), "less than or equal to 65536"),
    ("nodes.windows[0].cpu", _set(("nodes", "windows", 0, "cpu"), 256), "less than or equal to 240"),
    ("proxmox.sshUser", _set(("proxmox", "sshUser"), ""), "user name"),
    ("access.bastion.user", _set(("access", "bastion"), {"host": "bastion.hk-prod.internal", "user": ""}), "user name"),
    ("cluster.kubernetesVersion", _set(("cluster", "kubernetesVersion"), "1.36.99"), "not a known 1.36 release"),
    ("nodes.controlPlane[0].managementIp", _set(("nodes", "controlPlane", 0, "managementIp"), "10.10.10.11"),
     "already proxmox.nodes[0].address"),
    ("nodes.controlPlane[1].managementIp", _set(("nodes", "controlPlane", 1, "managementIp"), "10.10.10.31"),
     "already hyperv.hosts[0].address"),
    ("nodes.linux[0].managementIp", _set(("nodes", "linux", 0, "managementIp"), "10.10.10.53"),
     "already network.dnsServers[0]"),
    ("hyperv.hosts[1].address", _set(("hyperv", "hosts", 1, "address"), "10.10.10.12"), "also proxmox.nodes[1].address"),
    ("proxmox.endpoint", _set(("proxmox", "endpoint"), "https://root@pam:hunter2@10.10.10.11:8006/"), "without user:password@"),
    ("proxmox.endpoint", _set(("proxmox", "endpoint"), "http://10.10.10.11:8006/"), "https URL"),
]


@pytest.mark.parametrize("path, mutate, fragment", SILENT_ACCEPTS, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(SILENT_ACCEPTS)])
def test_values_that_used_to_pass_silently_are_errors(hk_values, path, mutate, fragment):
    mutate(hk_values)
    found = problems(hk_values)
    assert any(p.startswith(f"{path}: ") and fragment in p for p in found), found


def test_the_newest_known_patch_and_older_ones_of_a_minor_are_accepted(hk_values):
    from config import compat
    newest = compat.KUBERNETES["1.36"].patch
    for version in (newest, "1.36.0"):
        hk_values["cluster"]["kubernetesVersion"] = version
        assert problems(hk_values) == []


# --- the stack file itself ------------------------------------------------------------------------------------


def _stack_file(tmp_path, text: str):
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(text)
    return path


def _file_problems(path) -> list[str]:
    try:
        load(from_stack_file(path))
    except SpecError as error:
        return [str(p) for p in error.problems]
    return []


def test_a_yaml_syntax_error_is_reported_at_its_line_without_quoting_it(tmp_path):
    text = HK_PROD.read_text().replace("    mtu: 1450\n", "    mtu: 1450\n   broken: [hunter2\n", 1)
    found = _file_problems(_stack_file(tmp_path, text))
    assert len(found) == 1 and found[0].startswith("Pulumi.bad.yaml:"), found
    assert "not valid YAML" in found[0] and "hunter2" not in found[0]
    line = int(found[0].split(":")[1])
    assert abs(line - (text.splitlines().index("   broken: [hunter2") + 1)) <= 2


def test_duplicate_keys_are_each_reported_with_both_lines(tmp_path):
    lines = HK_PROD.read_text().splitlines()
    at = lines.index("    mtu: 1450")
    lines.insert(at + 1, "    mtu: 9000")
    at = lines.index("  hybrid-cluster:zones: [hk-1, hk-2]")
    lines.insert(at + 1, "  hybrid-cluster:zones: [hk-1]")
    found = _file_problems(_stack_file(tmp_path, "\n".join(lines) + "\n"))
    assert len(found) == 2, found
    assert found[0].startswith(f"Pulumi.bad.yaml:{lines.index('    mtu: 9000') + 1}: key 'mtu' is written twice")
    assert f"first on line {lines.index('    mtu: 1450') + 1}" in found[0]
    assert "key 'hybrid-cluster:zones' is written twice" in found[1]


@pytest.mark.parametrize("text, fragment", [
    ("- just\n- a list\n", "a stack file is a mapping"),
    ("config: [1, 2]\n", "config: section must be a mapping"),
])
def test_a_file_that_is_not_a_stack_file_is_an_error(tmp_path, text, fragment):
    found = _file_problems(_stack_file(tmp_path, text))
    assert len(found) == 1 and fragment in found[0], found


def test_a_mistyped_namespace_is_an_error_with_a_suggestion_not_dropped(tmp_path):
    text = HK_PROD.read_text().replace("  hybrid-cluster:policy:", "  hybrid-clustr:policy:", 1)
    found = _file_problems(_stack_file(tmp_path, text))
    assert found == ["hybrid-clustr:policy: unknown config namespace 'hybrid-clustr': did you mean hybrid-cluster:policy?"]


def test_provider_namespaces_are_refused_because_the_program_never_reads_them(tmp_path):
    text = HK_PROD.read_text() + "  kubernetes:context: hk-prod\n"
    found = _file_problems(_stack_file(tmp_path, text))
    assert found == ["kubernetes:context: unknown config namespace 'kubernetes': this program reads only "
                     "hybrid-cluster: keys (it configures its providers itself)"]


def test_a_plain_credential_under_another_namespace_is_refused_without_echoing_it(tmp_path):
    text = HK_PROD.read_text() + "  proxmoxve:apiToken: root@pam!ci=0f4e2b1c-hunter2\n  pulumi:accessToken: pul-hunter2\n"
    found = _file_problems(_stack_file(tmp_path, text))
    assert [p.split(":")[0] + ":" + p.split(":")[1] for p in found] == ["proxmoxve:apiToken", "pulumi:accessToken"]
    assert "written in clear" in found[0] and "--secret pulumi:accessToken" in found[1]
    assert not any("hunter2" in p for p in found)


def test_pulumi_namespace_entries_are_allowed_and_secured_foreign_values_are_refused_as_unread(tmp_path):
    text = (HK_PROD.read_text() + "  pulumi:tags: {team: platform}\n"
            + "  proxmoxve:apiToken:\n    secure: v1:AAAAbase64==\n")
    found = _file_problems(_stack_file(tmp_path, text))
    assert len(found) == 1 and found[0].startswith("proxmoxve:apiToken: unknown config namespace"), found
    assert "written in clear" not in found[0]


def test_the_pulumi_runtime_path_applies_the_same_namespace_rules(monkeypatch):
    from pulumi.runtime import config as runtime_config

    from config.loader import from_pulumi_runtime
    monkeypatch.setattr(runtime_config, "get_config_env", dict)
    monkeypatch.setattr(runtime_config, "get_config_secret_keys_env", list)
    runtime_config.set_all_config({"hybrid-cluster:zones": '["hk-1"]', "hybrid-clustre:zones": '["hk-2"]',
                                   "kubernetes:kubeconfig": "apiVersion: v1"}, [])
    raw = from_pulumi_runtime()
    assert dict(raw.values) == {"zones": '["hk-1"]'}
    assert [str(p) for p in raw.problems] == [
        "hybrid-clustre:zones: unknown config namespace 'hybrid-clustre': did you mean hybrid-cluster:zones?",
        "kubernetes:kubeconfig: unknown config namespace 'kubernetes': this program reads only hybrid-cluster: keys "
        "(it configures its providers itself); it also looks like a credential written in clear: remove it from the "
        "stack file"]


def test_synth_refuses_credentials_in_a_url_and_writes_nothing(tmp_path):
    document = yaml.safe_load(HK_PROD.read_text())
    document["config"]["hybrid-cluster:proxmox"]["endpoint"] = "https://root@pam:Hunter2Secret@10.10.10.11:8006/"
    stack = tmp_path / "Pulumi.creds.yaml"
    stack.write_text(yaml.safe_dump(document))
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "tools.synth", "--stack-file", str(stack), "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    assert "proxmox.endpoint: must be an https URL" in result.stderr
    assert "Hunter2Secret" not in result.stderr + result.stdout
    assert not out.exists()


def test_synth_reports_a_broken_stack_file_as_problems_not_a_traceback(tmp_path):
    stack = tmp_path / "Pulumi.broken.yaml"
    stack.write_text(HK_PROD.read_text() + "  hybrid-cluster:zones: [hk-1]\n")
    result = subprocess.run([sys.executable, "-m", "tools.synth", "--stack-file", str(stack), "--out", str(tmp_path / "o")],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "key 'hybrid-cluster:zones' is written twice" in result.stderr


# --- no problem message repeats a value that could be a credential ----------------------------------------------


# Shapes a pasted credential takes: a URL with user:password, a token with '!' and '=', a base64 blob.
CANARIES = ["https://admin:Canary-Pw-1@harbor.example/", "root@pam!ci=canary-0f4e", "Q2FuYXJ5LXNlY3JldA+/=="]


@pytest.mark.parametrize("canary", CANARIES)
def test_no_problem_message_repeats_a_credential_typed_into_any_text_key(canary):
    """Every text value of the reference stack, replaced by a credential-like string, one at a time: the
    stack is refused (or accepted), and no message of any problem contains the string."""
    base = hk_prod_values()
    for path, value in leaves(base):
        if not isinstance(value, str):
            continue
        values = copy.deepcopy(base)
        _set(path, canary)(values)
        text = "\n".join(problems(values))
        assert canary not in text, (path, text)


# --- whole program: anything config accepts, the program declares ---------------------------------------------

TEXT_POOL = ["", " ", "x", "X-1", "hk-1", "hk-2", "a" * 70, "ä", "a b", "root", "0", "10.30.30.99", "C:\\k8s", "\\\\srv\\s",
             "*", "-a", "loki.example", "https://h.example/p", "vmbr10", "win2022", "ubuntu22", "1.36.3", "10.0.0.0/8"]
INT_POOL = [0, 1, 2, 3, 7, 20, 24, 26, 28, 29, 30, 511, 1023, 1025, 1450, 4096, 16385, 32768, 65535, 65536, 10 ** 7]


def _mutations(rng: random.Random, values: dict, count: int) -> None:
    found = list(leaves(values))
    for path, value in rng.sample(found, min(count, len(found))):
        try:
            parent = values
            for key in path[:-1]:
                parent = parent[key]
            choice = rng.random()
            if choice < 0.15 and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif choice < 0.25 and isinstance(parent, list) and parent:
                parent.append(copy.deepcopy(parent[path[-1]]))
            elif isinstance(value, bool):
                parent[path[-1]] = not value
            elif isinstance(value, int):
                parent[path[-1]] = rng.choice([*INT_POOL, value + 1, value - 1, value * 2])
            else:
                parent[path[-1]] = rng.choice([*TEXT_POOL, value.upper() if isinstance(value, str) else value])
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced this path's parent


@pytest.mark.slow
def test_random_stacks_are_refused_with_key_paths_or_declared_by_the_whole_program():
    """Mutated copies of hk-prod: each either fails with SpecError (every problem at a key path) or runs
    through __main__.py under the mock engine with no exception and no error logged."""
    rng = random.Random(20261203)
    base = hk_prod_values()
    declared = refused = 0
    for _ in range(400):
        values = copy.deepcopy(base)
        _mutations(rng, values, rng.choice([1, 1, 1, 2]))
        try:
            load(raw_config(values))
        except SpecError as error:
            refused += 1
            assert all(p.path and p.message for p in error.problems), error
            continue
        if declared >= 30:
            continue  # bound the run time: the declared stacks are the expensive part
        recording = run_program(raw_config(values))
        errors = [message for severity, message in recording.logs if severity == "error"]
        assert not errors, (values, errors)
        assert recording.resources
        declared += 1
    assert declared >= 20 and refused >= 100, (declared, refused)
