"""The policy pack (policy/pack): its pure rules on what the hk-prod program really declares, mutated copies
that each break one rule, the facts the pack copies from the program, and the pack itself served over the
analyzer gRPC protocol the Pulumi engine speaks, without an engine.
"""
from __future__ import annotations

import copy
import dataclasses
import io
import json
import runpy
import sys

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from tests.conftest import ROOT, hk_prod_values, raw_config, with_legacy_windows_build
from tools.mock import program as mockrun
from tools.mock.program import placeholder_secrets, run_program

PACK = ROOT / "policy" / "pack"
if str(PACK) not in sys.path:
    # The pack imports `rules` as a top-level module (the CLI runs it from its own folder); the tests use
    # that same module object, so rules.UNKNOWN is one sentinel.
    sys.path.insert(0, str(PACK))

import rules  # noqa: E402  (the pack's folder must be on sys.path first)

# --- the program's resources in the shape the rules take ------------------------------------------------


def _as_policy_sees(value):
    # The SDK unwraps secrets before a validation sees them (deserialize_properties without
    # proxy_secrets); an unknown stays unknown.
    if isinstance(value, mockrun.Secret):
        return _as_policy_sees(value.value)
    if isinstance(value, mockrun.Unknown):
        return rules.UNKNOWN
    if isinstance(value, dict):
        return {k: _as_policy_sees(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_policy_sees(v) for v in value]
    return value


def declared_resources(recording: mockrun.Recording) -> list[rules.Declared]:
    return [
        rules.Declared(type=r.type, name=r.name, urn=r.urn, props=_as_policy_sees(r.inputs), protect=r.protect,
                       additional_secret_outputs=tuple(r.additional_secret_outputs), ignore_changes=tuple(r.ignore_changes))
        for r in recording.resources
    ]


@pytest.fixture(scope="module")
def recording() -> mockrun.Recording:
    # Two Windows builds, so that the build-matching rule has a wrong build to find.
    return run_program(raw_config(with_legacy_windows_build(hk_prod_values())))


@pytest.fixture(scope="module")
def hk_prod(recording) -> list[rules.Declared]:
    return declared_resources(recording)


SECRET_VALUES = rules.secret_values_from_config(
    {f"{rules.PROJECT}:{k}": v for k, v in placeholder_secrets({"windowsAdminPasswordPrevious": "FAKE-previous-password"}).items()})


def violated(resources: list[rules.Declared]) -> dict[str, list[rules.Finding]]:
    return {name: found for name, found in rules.evaluate(resources, SECRET_VALUES).items() if found}


def named(resources: list[rules.Declared], name: str) -> rules.Declared:
    matches = [r for r in resources if r.name == name]
    assert len(matches) == 1, name
    return matches[0]


def replaced(resources: list[rules.Declared], name: str, **changes) -> list[rules.Declared]:
    """A copy of `resources` with one resource changed; props are deep-copied so mutations stay local."""
    out = []
    for r in resources:
        if r.name == name:
            r = dataclasses.replace(r, props=copy.deepcopy(r.props), **changes)
        out.append(r)
    return out


API_LINUX = "hk-prod-samples-deployment-linux-prod-api-linux"
API_WIN = "hk-prod-samples-deployment-win-prod-api-win"
CONTROL_PLANE_VM = "hk-prod-hk-cp-2-vm"
JOIN_CREDENTIALS = "hk-prod-kubeadm-hk-lnx-1-join-credentials"
WINDOWS_VM_COMMAND = "hk-prod-hk-win-1-vm"


def pod_spec(resource: rules.Declared) -> dict:
    return resource.props["spec"]["template"]["spec"]


# --- the facts the pack copies stay equal to the program's --------------------------------------------------

def test_vocabulary_matches_the_program(recording):
    from pulumi_command.remote import Logging

    from components.cluster import bootstrap
    from config.loader import PROJECT, SECRET_KEYS

    assert rules.PROJECT == PROJECT
    assert set(rules.SECRET_CONFIG_KEYS) == set(SECRET_KEYS)
    assert set(rules.SECRET_STDOUT_SUFFIXES) == {*mockrun.STAND_IN_STDOUT, mockrun.KEY_RING_SUFFIX}
    assert bootstrap.SECRET_STDOUT == ["stdout"]
    assert rules.STDOUT_FREE_LOGGING <= {member.value for member in Logging}
    assert rules.STDOUT_FREE_LOGGING.isdisjoint({Logging.STDOUT.value, Logging.STDOUT_AND_STDERR.value})
    # The type tokens the pack looks for are the ones the program declares.
    types = {r.type for r in recording.resources}
    assert {rules.TEMPLATE_TYPE, rules.RUNTIME_CLASS_TYPE} <= types
    assert len({t for t in types if t.startswith(rules.CONSTRAINT_TYPE_PREFIX)}) == 3


# --- hk-prod passes, and each rule had something to judge ---------------------------------------------------

def test_hk_prod_passes_every_rule(hk_prod):
    assert violated(hk_prod) == {}


def _constraint_name(kind: str) -> str:
    from render import policy
    return policy.CONSTRAINTS[kind][0]


def test_every_rule_has_something_to_judge_in_hk_prod(hk_prod):
    templates = [r for r in hk_prod if r.type == rules.TEMPLATE_TYPE]
    constraints = [r for r in hk_prod if r.type.startswith(rules.CONSTRAINT_TYPE_PREFIX)]
    assert len(templates) == len(constraints) == 3
    assert all(c.props["spec"]["enforcementAction"] == "deny" for c in constraints)
    assert {r.props["metadata"]["name"] for r in hk_prod if r.type == rules.RUNTIME_CLASS_TYPE} == {"win2019", "win2022"}
    # The samples live in the constrained namespaces; api-win reaches Windows, its toleration and its build
    # only through its RuntimeClass, so the inventory is what admits it.
    api_win = named(hk_prod, API_WIN)
    assert "nodeSelector" not in pod_spec(api_win) and "tolerations" not in pod_spec(api_win)
    from render import policy as rendered
    namespaces = set(constraints[0].props["spec"]["match"]["namespaces"])
    assert {named(hk_prod, API_LINUX).props["metadata"]["namespace"], api_win.props["metadata"]["namespace"]} <= namespaces
    without_inventory = [r for r in hk_prod if r.type != rules.RUNTIME_CLASS_TYPE]
    found = violated(without_inventory)[rules.GATEKEEPER_RULE]
    assert {f.urn for f in found} == {api_win.urn}
    assert any("is not in Gatekeeper's inventory" in f.message for f in found)
    assert rendered.CONSTRAINTS  # the constraint names the findings carry come from here
    vms = [r for r in hk_prod if r.type == rules.PROXMOX_VM_TYPE and rules.CONTROL_PLANE_TAG in r.props["tags"]]
    assert len(vms) == 3 and all(vm.protect for vm in vms)
    credential_commands = [r for r in hk_prod if r.type == rules.COMMAND_TYPE
                           and r.name.endswith(rules.SECRET_STDOUT_SUFFIXES)]
    assert len(credential_commands) == 11
    assert any(r.name == 'hk-prod-control-plane-encryption-keys' for r in credential_commands)
    # The secret rule searched for real values and found them, only in their carriers.
    assert set(SECRET_VALUES) == set(rules.SECRET_CONFIG_KEYS)
    # windowsAdminPassword itself reaches no resource: each Windows node signs in with its own password derived from
    # it (render/hyperv.py), which the pack cannot know; the derived ones travel on secret stdin (the test below).
    assert not any(SECRET_VALUES["windowsAdminPassword"] in str(r.props) for r in hk_prod)
    assert any(SECRET_VALUES["smbPassword"] in str(r.props.get("stringData")) for r in hk_prod)


# --- mutated copies break exactly the expected constraint ------------------------------------------------------

def _findings_by_constraint(resources) -> dict[str, list[rules.Finding]]:
    found = violated(resources)
    assert set(found) <= {rules.GATEKEEPER_RULE}, found
    by_constraint: dict[str, list[rules.Finding]] = {}
    for finding in found.get(rules.GATEKEEPER_RULE, []):
        by_constraint.setdefault(finding.message.split(":", 1)[0], []).append(finding)
    return by_constraint


def test_deployment_without_os_breaks_only_the_required_os_constraint(hk_prod):
    resources = replaced(hk_prod, API_LINUX)
    del pod_spec(named(resources, API_LINUX))["nodeSelector"]
    found = _findings_by_constraint(resources)
    assert set(found) == {_constraint_name("K8sRequiredNodeSelector"), _constraint_name("K8sWindowsToleration")}
    assert [f.urn for f in found[_constraint_name("K8sRequiredNodeSelector")]] == [named(hk_prod, API_LINUX).urn]
    assert "does not choose an operating system" in found[_constraint_name("K8sRequiredNodeSelector")][0].message
    # linux-prod holds Linux workloads: a pod that chooses no OS is also in the wrong place there.
    assert "which holds Linux workloads" in found[_constraint_name("K8sWindowsToleration")][0].message


def test_windows_pod_without_toleration_breaks_only_the_toleration_constraint(hk_prod):
    resources = replaced(hk_prod, API_WIN)
    spec = pod_spec(named(resources, API_WIN))
    del spec["runtimeClassName"]
    # Same OS and build as before, by nodeSelector now: only the toleration the RuntimeClass added is gone.
    spec["nodeSelector"] = {"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"}
    found = _findings_by_constraint(resources)
    assert set(found) == {_constraint_name("K8sWindowsToleration")}
    assert "node-role.kubernetes.io/windows=true:NoSchedule" in found[_constraint_name("K8sWindowsToleration")][0].message


def test_windows_pod_on_the_wrong_build_breaks_only_the_image_build_constraint(hk_prod):
    resources = replaced(hk_prod, API_WIN)
    pod_spec(named(resources, API_WIN))["runtimeClassName"] = "win2019"
    found = _findings_by_constraint(resources)
    assert set(found) == {_constraint_name("K8sWindowsImageBuild")}
    message = found[_constraint_name("K8sWindowsImageBuild")][0].message
    assert "10.0.20348" in message and "10.0.17763" in message


def test_windows_pod_in_a_linux_namespace_breaks_only_the_namespace_rule(hk_prod):
    resources = replaced(hk_prod, API_WIN)
    named(resources, API_WIN).props["metadata"]["namespace"] = "linux-prod"
    found = _findings_by_constraint(resources)
    assert set(found) == {_constraint_name("K8sWindowsToleration")}
    assert "linux-prod, which holds Linux workloads" in found[_constraint_name("K8sWindowsToleration")][0].message


def test_node_affinity_operators_are_read_the_same_at_preview_and_admission(hk_prod):
    """The cases the pack and the Rego once disagreed on now come out of one Rego: NotIn [windows] is a Linux
    choice, In [linux, windows] is no choice, and a build pinned by required node affinity is a pin."""
    def with_affinity(name, expressions, drop=("nodeSelector",)):
        resources = replaced(hk_prod, name)
        spec = pod_spec(named(resources, name))
        for key in drop:
            spec.pop(key, None)
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}
        return resources

    os_key = "kubernetes.io/os"
    assert violated(with_affinity(API_LINUX, [{"key": os_key, "operator": "NotIn", "values": ["windows"]}])) == {}
    either = _findings_by_constraint(with_affinity(API_LINUX, [{"key": os_key, "operator": "In", "values": ["linux", "windows"]}]))
    assert "does not choose an operating system" in either[_constraint_name("K8sRequiredNodeSelector")][0].message
    pinned = with_affinity(API_WIN, [{"key": os_key, "operator": "In", "values": ["windows"]},
                                     {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]}],
                           drop=("runtimeClassName",))
    pod_spec(named(pinned, API_WIN))["tolerations"] = [{"key": "node-role.kubernetes.io/windows", "operator": "Exists"}]
    assert violated(pinned) == {}


def test_undeclared_runtime_class_is_found_by_the_constraints_that_follow_it(hk_prod):
    resources = replaced(hk_prod, API_WIN)
    pod_spec(named(resources, API_WIN))["runtimeClassName"] = "win2025"
    found = _findings_by_constraint(resources)
    assert _constraint_name("K8sRequiredNodeSelector") in found
    assert any("RuntimeClass \"win2025\" is not in Gatekeeper's inventory" in f.message for fs in found.values() for f in fs)


def test_constraints_that_only_warn_or_audit_refuse_nothing_at_preview(hk_prod):
    resources = replaced(hk_prod, API_LINUX)
    del pod_spec(named(resources, API_LINUX))["nodeSelector"]
    relaxed = []
    for r in resources:
        if r.type.startswith(rules.CONSTRAINT_TYPE_PREFIX):
            r = dataclasses.replace(r, props=copy.deepcopy(r.props))
            r.props["spec"]["enforcementAction"] = "warn"
        relaxed.append(r)
    assert violated(relaxed) == {}


def test_unprotected_control_plane_vm_breaks_only_the_protection_rule(hk_prod):
    found = violated(replaced(hk_prod, CONTROL_PLANE_VM, protect=False))
    assert set(found) == {"control-plane-vm-protected"}
    assert [f.urn for f in found["control-plane-vm-protected"]] == [named(hk_prod, CONTROL_PLANE_VM).urn]


def test_unprotected_worker_vm_is_fine(hk_prod):
    worker = next(r for r in hk_prod if r.type == rules.PROXMOX_VM_TYPE and "worker" in r.props["tags"])
    assert worker.protect is False
    assert rules.control_plane_protection_findings([worker]) == []


def test_a_control_plane_vm_the_stack_retires_or_has_lost_may_be_unprotected(hk_prod):
    resources = replaced(hk_prod, CONTROL_PLANE_VM, protect=False)
    guard = next(r for r in resources if r.type == rules.MACHINES_GUARD_TYPE)
    node = named(resources, CONTROL_PLANE_VM).props["name"]
    for flag in ("retire", "lost"):
        marked = [dataclasses.replace(r, props=copy.deepcopy(r.props)) if r is guard else r for r in resources]
        next(r for r in marked if r.type == rules.MACHINES_GUARD_TYPE).props["nodes"][node][flag] = True
        assert violated(marked) == {}, flag


def test_join_credentials_logging_stdout_breaks_only_the_stdout_rule(hk_prod):
    resources = replaced(hk_prod, JOIN_CREDENTIALS)
    named(resources, JOIN_CREDENTIALS).props["logging"] = "stdoutAndStderr"
    found = violated(resources)
    assert set(found) == {"secret-stdout-not-logged"}
    assert len(found["secret-stdout-not-logged"]) == 1


def test_credential_command_without_logging_or_secret_stdout_gets_both_findings(hk_prod):
    resources = replaced(hk_prod, JOIN_CREDENTIALS, additional_secret_outputs=("connection",))
    del named(resources, JOIN_CREDENTIALS).props["logging"]
    messages = [f.message for f in violated(resources)["secret-stdout-not-logged"]]
    assert len(messages) == 2
    assert "unset (pulumi-command logs stdout and stderr)" in messages[0]
    assert "additionalSecretOutputs" in messages[1]


def test_secret_pasted_into_a_script_breaks_only_the_secret_rule(hk_prod):
    password = SECRET_VALUES["windowsAdminPassword"]
    resources = replaced(hk_prod, WINDOWS_VM_COMMAND)
    command = named(resources, WINDOWS_VM_COMMAND)
    command.props["create"] = command.props["create"] + f"\n$password = '{password}'\n"
    found = violated(resources)
    assert set(found) == {"secret-config-confined"}
    [finding] = found["secret-config-confined"]
    assert "'windowsAdminPassword' appears in create" in finding.message
    assert password not in finding.message


def _dialling_commands(resources: list[rules.Declared]) -> list[rules.Declared]:
    return [r for r in resources if r.type == rules.COMMAND_TYPE and any(r.props.get(k) for k in rules.DIALLING_INPUTS)]


def test_every_command_that_dials_is_pinned_and_one_without_a_host_key_is_refused(hk_prod):
    dialling = _dialling_commands(hk_prod)
    # Linux nodes (pinned to the key the program made for each), Proxmox nodes and Hyper-V hosts all dial.
    hosts = {r.props["connection"]["host"] for r in dialling}
    assert {"10.10.10.11", "10.10.10.12", "10.10.10.31", "10.10.10.32", "10.30.30.11", "10.30.30.21"} <= hosts
    assert all(r.props["connection"].get("hostKey") for r in dialling)
    prepare = "hk-prod-hk-cp-1-prepare"
    unpinned = replaced(hk_prod, prepare)
    del named(unpinned, prepare).props["connection"]["hostKey"]
    [finding] = violated(unpinned)[rules.HOST_KEY_RULE]
    assert finding.urn == named(hk_prod, prepare).urn and "10.30.30.11 without connection.hostKey" in finding.message
    # A bastion without its key is refused the same way; a stack that relaxes pinning is not.
    via_bastion = replaced(hk_prod, prepare)
    named(via_bastion, prepare).props["connection"]["proxy"] = {"host": "10.10.10.2", "user": "jump"}
    [finding] = violated(via_bastion)[rules.HOST_KEY_RULE]
    assert "10.10.10.2 without connection.proxy.hostKey" in finding.message
    assert rules.evaluate(unpinned, SECRET_VALUES, host_keys=False)[rules.HOST_KEY_RULE] == []
    # A command that never dials (a wave gate: no create, update or delete) needs no key.
    gates = [r for r in hk_prod if r.type == rules.COMMAND_TYPE and r not in dialling]
    assert gates and all(not r.props["connection"].get("hostKey") for r in gates)


def test_a_cluster_the_previous_release_built_passes_on_its_first_pinned_run():
    """The inputs the pack judges are the engine's after ignore_changes: the commands that keep the connection they
    were created with (kubeadm init, the key ring; the host key install on an older node, which trusts it once) never
    dial it again, and pass; every command that dials is pinned (the provider's credential is issued anew in that run,
    pinned)."""
    from tests.program.test_control_plane import previous_release_run
    run = previous_release_run()
    judged = [dataclasses.replace(r, props=_as_policy_sees(run.state[r.urn].inputs)) for r in declared_resources(run)
              if r.urn in run.state]
    assert rules.evaluate(judged, SECRET_VALUES)[rules.HOST_KEY_RULE] == []
    unpinned = [r.name for r in judged if r.type == rules.COMMAND_TYPE and not r.props["connection"].get("hostKey")
                and any(r.props.get(k) for k in rules.DIALLING_INPUTS)]
    assert {"hk-prod-kubeadm-init", "hk-prod-hk-cp-1-host-key-install"} <= set(unpinned)
    assert "hk-prod-kubeadm-kubeconfig" not in unpinned
    assert all("connection" in named(judged, n).ignore_changes and not named(judged, n).props.get("delete")
               for n in unpinned)


def test_the_commands_that_keep_their_connection_are_the_ones_the_pack_names(hk_prod):
    kept = {r.name for r in hk_prod if r.type == rules.COMMAND_TYPE and "connection" in r.ignore_changes
            and not r.props.get("delete")}
    assert kept and all(name.endswith(rules.CONNECTION_KEPT_SUFFIXES) for name in kept), kept
    for suffix in rules.CONNECTION_KEPT_SUFFIXES:
        assert any(name.endswith(suffix) for name in kept), suffix
    # A lost node's frozen commands never run again: not judged.
    from components.machines.lifecycle import COMMAND_INPUTS
    assert rules.FROZEN_INPUTS <= set(COMMAND_INPUTS)
    # Another command that ignores its connection is still judged.
    other = dataclasses.replace(named(hk_prod, "hk-prod-hk-cp-1-prepare"), ignore_changes=("connection", "create"))
    props = copy.deepcopy(other.props)
    del props["connection"]["hostKey"]
    assert rules.unpinned_connections(dataclasses.replace(other, props=props), True)


def test_the_pack_reads_the_relaxation_from_the_stack_config():
    assert rules.host_keys_required({})
    assert rules.host_keys_required({f"{rules.PROJECT}:security": json.dumps({"selinux": "enforcing"})})
    assert not rules.host_keys_required({f"{rules.PROJECT}:security": json.dumps({"pinHostKeys": False})})
    assert not rules.host_keys_required({f"{rules.PROJECT}:security": {"pinHostKeys": False}})


def test_unknown_pod_template_is_left_for_the_update(hk_prod):
    resources = replaced(hk_prod, API_LINUX)
    pod_spec(named(resources, API_LINUX))["nodeSelector"] = rules.UNKNOWN
    assert violated(resources) == {}


# --- where the SDK cannot look, the tests do: the program marks its secrets -------------------------------------

def test_every_secret_config_value_reaches_only_secret_marked_carriers(recording):
    values = placeholder_secrets()

    def carriers(value, path=(), secret=False):
        if isinstance(value, mockrun.Secret):
            yield from carriers(value.value, path, True)
        elif isinstance(value, dict):
            for key, item in value.items():
                yield from carriers(item, (*path, key), secret)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from carriers(item, (*path, str(index)), secret)
        elif isinstance(value, str):
            for key, secret_value in values.items():
                if secret_value in value:
                    yield key, path, secret

    seen = set()
    for r in recording.resources:
        for key, path, secret in carriers(r.inputs):
            assert secret, f"{r.name}: {key} at {'.'.join(path)} is not marked secret"
            assert any(path[:len(c)] == c for c in rules.SECRET_CARRIERS.get(r.type, ())), (r.name, path)
            seen.add((r.type, key))
    assert ("pulumi:providers:proxmoxve", "proxmoxApiToken") in seen
    assert (rules.COMMAND_TYPE, "nodeSshPrivateKey") in seen
    # windowsAdminPassword never leaves; each Windows node's own password, derived from it, travels only on secret stdin.
    assert (rules.COMMAND_TYPE, "windowsAdminPassword") not in seen
    from render.hyperv import node_admin_password
    for node in ("hk-win-1", "hk-win-2", "hk-win-3"):
        password = node_admin_password(values["windowsAdminPassword"], node, 1)
        stdin = [r.inputs.get("stdin") for r in recording.resources]
        carrying = [value for value in stdin if password in repr(getattr(value, "value", value))]
        assert carrying and all(isinstance(value, mockrun.Secret) for value in carrying), node
        assert not [r.name for r in recording.resources
                    if password in repr({k: v for k, v in r.inputs.items() if k != "stdin"})], node


def test_join_commands_take_their_credentials_on_secret_stdin(recording):
    joins = [r for r in recording.by_type(rules.COMMAND_TYPE) if r.name.endswith("-join")]
    assert len(joins) == 9
    assert all(isinstance(r.inputs["stdin"], mockrun.Secret) for r in joins)


# --- every suite sample, through the gator-style evaluation and through the pack ---------------------------

def _declared(obj: dict, name: str) -> rules.Declared:
    group, _, version = obj["apiVersion"].rpartition("/")
    props = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    return rules.Declared(type=f"kubernetes:{group or 'core'}/{version}:{obj['kind']}", name=name, urn=f"urn:{name}",
                          props=props)


def _suite_cases():
    import yaml

    from render import policy
    cases = []
    for folder in sorted(f for _, f in policy.CONSTRAINTS.values()):
        base = policy.TEMPLATE_DIR / folder
        suite = yaml.safe_load((base / "suite.yaml").read_text())
        for test in suite["tests"]:
            for case in test["cases"]:
                cases.append((base, test, case))
    return cases


SUITE = _suite_cases()


@pytest.mark.parametrize("base, test, case", SUITE, ids=[f"{b.name}/{c['name']}" for b, _, c in SUITE])
def test_every_suite_sample_gets_the_same_verdict_from_the_pack_as_from_the_template(base, test, case):
    import yaml
    from gatekeeper_eval import evaluate_constraint
    template = yaml.safe_load((base / test["template"]).read_text())
    constraint = yaml.safe_load((base / test["constraint"]).read_text())
    obj = yaml.safe_load((base / case["object"]).read_text())
    inventory = [doc for path in case.get("inventory", []) for doc in yaml.safe_load_all((base / path).read_text()) if doc]
    expected = evaluate_constraint(constraint, template, obj, inventory)
    resources = [_declared(template, "template"), _declared(constraint, "constraint"), _declared(obj, "object"),
                 *(_declared(o, f"inventory-{i}") for i, o in enumerate(inventory))]
    found = rules.gatekeeper_findings(resources)
    assert sorted(f.message for f in found) == sorted(f"{constraint['metadata']['name']}: {m}" for m in expected)
    assert all(f.urn == "urn:object" for f in found)
    wants_violations = any(a.get("violations") not in ("no", 0) for a in case["assertions"])
    assert bool(found) == wants_violations, (case["name"], found)


# --- the pack itself ----------------------------------------------------------------------------------------------

def load_pack() -> dict:
    # Any run_name but "__main__": the module then only declares POLICIES (PolicyPack() never returns).
    return runpy.run_path(str(PACK), run_name="policy_pack_under_test")


def test_pack_declares_every_rule_as_a_mandatory_policy():
    import pulumi_policy

    pack = load_pack()
    policies = {p.name: p for p in pack["POLICIES"]}
    assert set(policies) == {rules.GATEKEEPER_RULE, rules.PROTECTION_RULE, *rules.RESOURCE_RULES, rules.SECRET_CONFIG_RULE,
                             rules.HOST_KEY_RULE}
    assert all(p.enforcement_level == pulumi_policy.EnforcementLevel.MANDATORY for p in policies.values())
    assert isinstance(policies[rules.GATEKEEPER_RULE], pulumi_policy.StackValidationPolicy)
    assert isinstance(policies[rules.PROTECTION_RULE], pulumi_policy.StackValidationPolicy)
    assert all(isinstance(policies[n], pulumi_policy.ResourceValidationPolicy)
               for n in [*rules.RESOURCE_RULES, rules.SECRET_CONFIG_RULE, rules.HOST_KEY_RULE])
    # Every file the CLI needs is there.
    assert (PACK / "PulumiPolicy.yaml").is_file() and (PACK / "requirements.txt").is_file()
    # The Rego engine the pack evaluates with is in its own requirements, at the tests' pin.
    pins = {line.split("==")[0]: line for line in (ROOT / "requirements-dev.txt").read_text().splitlines() if "==" in line}
    assert pins["regopy"] in (PACK / "requirements.txt").read_text().splitlines()


def _wire(value):
    """A recorded input as the engine marshals it for an analyzer (secrets kept, unknowns as sentinels)."""
    from pulumi_policy import deserialize, proxy

    if isinstance(value, mockrun.Secret):
        return {deserialize.SPECIAL_SIG_KEY: deserialize.SPECIAL_SECRET_SIG, "value": _wire(value.value)}
    if isinstance(value, mockrun.Unknown):
        return proxy.UNKNOWN_STRING_VALUE
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def _struct(props: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(_wire(props))
    return s


def _options(r: mockrun.Resource, protect: bool | None = None) -> analyzer_pb2.AnalyzerResourceOptions:
    return analyzer_pb2.AnalyzerResourceOptions(protect=r.protect if protect is None else protect,
                                                additionalSecretOutputs=r.additional_secret_outputs)


def test_pack_serves_over_grpc_and_judges_the_program(recording, monkeypatch):
    """PolicyPack() is built for real: it starts its gRPC server on 127.0.0.1 and would sleep forever.
    Its sleep is where this test talks to it, as the engine would, then interrupts it."""
    import pulumi_policy.policy as sdk

    pack = load_pack()
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({f"{rules.PROJECT}:{k}": v for k, v in placeholder_secrets().items()}))
    stdout = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", stdout)
    answers: dict = {}

    def engine_calls(_seconds):
        port = int(stdout.buffer.getvalue().decode().strip())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            analyzer = analyzer_pb2_grpc.AnalyzerStub(channel)
            answers["info"] = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
            stack = [analyzer_pb2.AnalyzerResource(type=r.type, name=r.name, urn=r.urn, properties=_struct(r.inputs),
                                                   options=_options(r)) for r in recording.resources]
            answers["stack"] = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=stack))
            bad_win = copy.deepcopy(recording.named(API_WIN))
            bad_win.inputs["spec"]["template"]["spec"]["runtimeClassName"] = "win2019"
            mutated = [analyzer_pb2.AnalyzerResource(type=r.type, name=r.name, urn=r.urn, properties=_struct(r.inputs))
                       for r in [*recording.by_type(rules.RUNTIME_CLASS_TYPE), *recording.by_type(rules.TEMPLATE_TYPE),
                                 *[c for c in recording.resources if c.type.startswith(rules.CONSTRAINT_TYPE_PREFIX)],
                                 bad_win]]
            answers["stack_bad"] = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=mutated))
            answers["each"] = [analyzer.Analyze(analyzer_pb2.AnalyzeRequest(
                type=r.type, name=r.name, urn=r.urn, properties=_struct(r.inputs), options=_options(r)))
                for r in recording.resources]
            unpinned = copy.deepcopy(recording.named("hk-prod-hk-cp-1-prepare"))
            del unpinned.inputs["connection"].value["hostKey"]
            answers["unpinned"] = analyzer.Analyze(analyzer_pb2.AnalyzeRequest(
                type=unpinned.type, name=unpinned.name, urn=unpinned.urn, properties=_struct(unpinned.inputs),
                options=_options(unpinned)))
            vm = recording.named(CONTROL_PLANE_VM)
            answers["vm_bad"] = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[
                analyzer_pb2.AnalyzerResource(type=r.type, name=r.name, urn=r.urn, properties=_struct(r.inputs),
                                              options=_options(r, protect=False) if r is vm else _options(r))
                for r in recording.resources]))
        raise KeyboardInterrupt  # PolicyPack stops its server and returns on this

    monkeypatch.setattr(sdk.time, "sleep", engine_calls)
    pack["serve"]()

    info = answers["info"]
    assert info.name == pack["PACK_NAME"]
    assert {p.name for p in info.policies} == {p.name for p in pack["POLICIES"]}
    assert list(answers["stack"].diagnostics) == []
    assert [d.message for r in answers["each"] for d in r.diagnostics] == []
    # The secret rule ran (config reached it), it was not skipped as not applicable.
    assert not any(n.policy_name == rules.SECRET_CONFIG_RULE for r in answers["each"] for n in r.not_applicable)
    [bad] = answers["stack_bad"].diagnostics
    assert bad.policyName == rules.GATEKEEPER_RULE and bad.urn == recording.named(API_WIN).urn
    assert "pinned to node.kubernetes.io/windows-build=10.0.17763" in bad.message
    assert bad.enforcementLevel == analyzer_pb2.MANDATORY
    [unpinned] = answers["unpinned"].diagnostics
    assert unpinned.policyName == rules.HOST_KEY_RULE and "without connection.hostKey" in unpinned.message
    [vm_bad] = answers["vm_bad"].diagnostics
    assert vm_bad.policyName == "control-plane-vm-protected"
