"""The rules of the hybrid-cluster policy pack as pure functions: plain data in, violation messages out.

Owns the infrastructure rules and the small vocabulary they need (resource-type names, the project's secret config
keys); placement is the declared Gatekeeper constraints' own Rego, run by gatekeeper.py. It imports nothing from Pulumi
or from the program, so the tests run it on the resources the program declares under the mock engine, and
``__main__.py`` only adapts what the policy SDK hands over (``ResourceValidationArgs`` / ``PolicyResource``) into
``Declared`` and reports what the rules find.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gatekeeper  # this pack's gatekeeper.py (the pack folder is first on sys.path)

# --- values the engine does not know yet -----------------------------------------------------------------


class _Unknown:
    """A value not known until another resource exists (preview); ``__main__`` maps the SDK's unknowns to
    the one instance, UNKNOWN."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


def contains_unknown(value: Any) -> bool:
    if value is UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(contains_unknown(v) for v in value)
    return False


# --- the shape every rule takes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Declared:
    """One resource as the policy SDK shows it: type token, Pulumi name, URN, properties (camelCase, as
    the provider sees them), and the options rules look at. What a rule can see is the SDK's decision, not ours
    (pulumi_policy 1.21.0, policy.py).

    A resource policy's ``props`` are the resource's *inputs* after the provider's Check, before the step runs; a
    stack policy's are every resource's *outputs* at the end of the preview or update (pulumi/pulumi
    pkg/resource/deploy/step_generator.go: ``Properties: inputs`` for Analyze, ``Properties: v.Outputs`` for
    AnalyzeStack; deployment_executor.go calls AnalyzeResources after all steps)."""

    type: str
    name: str
    urn: str
    # Secrets arrive unwrapped: whether a value is secret is not visible. The engine sends secrets (`KeepSecrets: true`
    # in sdk/go/common/resource/plugin/analyzer_plugin.go), but the Python SDK's Analyze and AnalyzeStack call
    # `deserialize_properties(...)` without `proxy_secrets`, which unwraps each secret into its plain value; only
    # Remediate keeps the marker. pulumi/pulumi-policy#241 (open): "It's not currently possible to check if a stack
    # config value or property is a secret from policies". So no rule here claims to check that a value is marked
    # secret; the program's tests check that (tests/policy/test_pack.py).
    props: Mapping[str, Any]
    # Options are visible: PolicyResourceOptions.protect and .additional_secret_outputs, filled from the engine's
    # AnalyzerResourceOptions (`Protect: new.Protect`, `AdditionalSecretOutputs: new.AdditionalSecretOutputs` in
    # step_generator.go).
    protect: bool = False
    additional_secret_outputs: tuple[str, ...] = ()
    ignore_changes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """What a rule refuses. Every policy is mandatory: a finding in a preview fails the preview, so ``pulumi up``
    stops before any change."""

    urn: str
    message: str


# --- vocabulary (kept equal to the program's by the tests) -------------------------------------------------
#
# Copied, not imported: the CLI runs a pack from its own folder with its own virtualenv (`runpy.run_path(<pack dir>,
# run_name="__main__")` in pulumi/policy/__main__.py of the pulumi 3.272.0 SDK), so the program's own modules (render/,
# config/) are out of reach. tests/policy/test_pack.py keeps every copied constant equal to its origin.

# Resource type tokens (pulumi-kubernetes: kubernetes:<group>/<version>:<Kind>, core group as "core").
# Where each kind keeps its pod template.
POD_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "kubernetes:apps/v1:Deployment": ("spec", "template"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template"),
    "kubernetes:core/v1:ReplicationController": ("spec", "template"),
    "kubernetes:batch/v1:Job": ("spec", "template"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template"),
    "kubernetes:core/v1:Pod": (),
}
RUNTIME_CLASS_TYPE = "kubernetes:node.k8s.io/v1:RuntimeClass"
TEMPLATE_TYPE = "kubernetes:templates.gatekeeper.sh/v1:ConstraintTemplate"
CONSTRAINT_TYPE_PREFIX = "kubernetes:constraints.gatekeeper.sh/v1beta1:"
PROXMOX_VM_TYPE = "proxmoxve:index/vmLegacy:VmLegacy"
# components/guards.py MachinesGuard: per node, whether the stack retires it or declares it lost.
MACHINES_GUARD_TYPE = "pulumi-python:dynamic/hybrid:MachinesGuard"
COMMAND_TYPE = "command:remote:Command"

# Commands whose stdout is a credential (components/cluster/bootstrap.py: join credentials, admin kubeconfig;
# components/cluster/control_plane.py: the Secrets encryption key ring).
SECRET_STDOUT_SUFFIXES = ("-join-credentials", "-kubeconfig", "-encryption-keys")
# pulumi-command 1.2.1 remote.Command `logging` (Logging enum: stdout, stderr, stdoutAndStderr, none):
# "Defaults to logging both stdout and stderr" (pulumi_command/remote/command.py). Either of these two
# keeps stdout out of the logs.
STDOUT_FREE_LOGGING = frozenset({"stderr", "none"})
CONTROL_PLANE_TAG = "control-plane"   # components/machines/nodes.py tags every VM with its role

PROJECT = "hybrid-cluster"            # Pulumi.yaml name: config keys arrive as "hybrid-cluster:<key>"
SECRET_CONFIG_KEYS = (
    "proxmoxApiToken", "proxmoxSshPrivateKey", "hypervSshPrivateKey", "hypervSshPassword",
    "nodeSshPrivateKey", "windowsAdminPassword", "windowsAdminPasswordPrevious", "bastionSshPrivateKey",
    "smbUsername", "smbPassword", "grafanaAdminPassword", "tlsCaCertificate", "tlsCaKey",
    "backupAccessKeyId", "backupSecretAccessKey", "offsiteAccessKeyId", "offsiteSecretAccessKey",
    "etcdOffsiteAccessKeyId", "etcdOffsiteSecretAccessKey", "veleroRepositoryPassword",
)
# Shorter values (a user name like "smb") would match unrelated text; they are not searched for.
MIN_SEARCHED_SECRET_LENGTH = 8
# The only inputs a secret config value may reach, by resource type (property path prefixes). They are
# the inputs the program passes secrets through; the tests check that each is marked secret there.
SECRET_CARRIERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "pulumi:providers:proxmoxve": (("apiToken",), ("password",), ("ssh",)),
    COMMAND_TYPE: (
        ("connection", "privateKey"), ("connection", "password"),
        ("connection", "proxy", "privateKey"), ("connection", "proxy", "password"),
        ("stdin",),
    ),
    "kubernetes:core/v1:Secret": (("data",), ("stringData",)),
}


# --- placement: the declared Gatekeeper constraints, evaluated as the admission webhook would -------------
#
# No placement rule is written here: the pack takes the ConstraintTemplates, Constraints and RuntimeClasses
# the program declares and runs the templates' own Rego (gatekeeper.py, regopy) on every declared workload,
# with each constraint's parameters and match, RuntimeClasses as Gatekeeper's inventory. So preview refuses
# exactly what admission would, and a change to a template changes both at once.

GATEKEEPER_RULE = "gatekeeper-constraints-admit-workloads"


def _dict(value: Any) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def kubernetes_object(resource: Declared) -> dict[str, Any]:
    """The Kubernetes object a pulumi-kubernetes resource declares: its props, with apiVersion and kind
    from the type token (kubernetes:<group>/<version>:<Kind>, the core group spelled "core")."""
    _, group_version, kind = resource.type.split(":", 2)
    group, _, version = group_version.rpartition("/")
    api_version = version if group in ("", "core") else f"{group}/{version}"
    return {**dict(resource.props), "apiVersion": api_version, "kind": kind}


def _enforced(constraint: Mapping) -> bool:
    # Gatekeeper's default enforcementAction is deny; warn and dryrun admit the object.
    return _dict(constraint.get("spec")).get("enforcementAction", "deny") == "deny"


def gatekeeper_findings(resources: Sequence[Declared]) -> list[Finding]:
    """What the declared deny constraints would refuse among the declared workloads.

    A workload, constraint or RuntimeClass not fully known yet (preview) is left alone here: the stack
    policy runs again at the end of the update, on outputs that are known.
    """
    templates = {}
    for r in resources:
        if r.type == TEMPLATE_TYPE and not contains_unknown(r.props):
            template = kubernetes_object(r)
            templates[template["spec"]["crd"]["spec"]["names"]["kind"]] = template
    constraints = [kubernetes_object(r) for r in resources if r.type.startswith(CONSTRAINT_TYPE_PREFIX)]
    inventory = [kubernetes_object(r) for r in resources if r.type == RUNTIME_CLASS_TYPE]
    known_inventory = [obj for obj in inventory if not contains_unknown(obj)]
    findings = []
    for constraint in constraints:
        if contains_unknown(constraint) or not _enforced(constraint):
            continue
        template = templates.get(constraint["kind"])
        if template is None:
            findings.append(Finding(constraint.get("metadata", {}).get("name", "?"),
                                    f"constraint kind {constraint['kind']} has no declared ConstraintTemplate"))
            continue
        for r in resources:
            if r.type not in POD_TEMPLATE_PATHS:
                continue
            obj = kubernetes_object(r)
            if contains_unknown(obj) or contains_unknown(inventory):
                continue
            # No namespace means the provider's default one, "default" unless the provider says otherwise.
            namespace = _dict(obj.get("metadata")).get("namespace") or "default"
            for message in gatekeeper.evaluate_constraint(constraint, template, obj, known_inventory, namespace):
                findings.append(Finding(r.urn, f"{constraint['metadata']['name']}: {message}"))
    return findings


# --- infrastructure rules ----------------------------------------------------------------------------------------

ResourceRule = Callable[[Declared], list[str]]


def control_plane_protection_findings(resources: Sequence[Declared]) -> list[Finding]:
    """A Proxmox VM tagged control-plane is protected (deleting one removes an etcd member), unless the stack
    prepares its removal: the machines guard records the node as retiring or lost."""
    leaving = set()
    for r in resources:
        if r.type == MACHINES_GUARD_TYPE:
            for name, facts in _dict(r.props.get("nodes")).items():
                facts = _dict(facts)
                if facts.get("retire") is True or facts.get("lost") is True:
                    leaving.add(name)
    findings = []
    for r in resources:
        if r.type != PROXMOX_VM_TYPE:
            continue
        tags = r.props.get("tags")
        if not isinstance(tags, (list, tuple)) or CONTROL_PLANE_TAG not in tags or r.protect:
            continue
        if r.props.get("name") in leaving:
            continue
        findings.append(Finding(r.urn, f"VM {r.name} is a {CONTROL_PLANE_TAG} node but not protected: declare it with "
                                       "ResourceOptions(protect=True), or set retire: true on its node to remove it"))
    return findings


def secret_stdout_violations(r: Declared) -> list[str]:
    """A command whose stdout is a credential keeps stdout out of the logs and, through
    additionalSecretOutputs, encrypted in the state."""
    if r.type != COMMAND_TYPE or not r.name.endswith(SECRET_STDOUT_SUFFIXES):
        return []
    found = []
    logging = r.props.get("logging")
    if logging is UNKNOWN:
        pass
    elif logging not in STDOUT_FREE_LOGGING:
        shown = "unset (pulumi-command logs stdout and stderr)" if logging is None else repr(logging)
        found.append(f"command {r.name} prints a credential on stdout but its logging is {shown}: "
                     f"use logging {' or '.join(sorted(STDOUT_FREE_LOGGING))}")
    if "stdout" not in r.additional_secret_outputs:
        found.append(f"command {r.name} prints a credential on stdout but 'stdout' is not in its "
                     f"additionalSecretOutputs, so the state would keep it in plain text")
    return found


def _strings(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, str(index)))


def secret_values_from_config(config: Mapping[str, Any]) -> dict[str, str]:
    """Secret config key -> value, from the stack config the engine hands the pack, secrets decrypted: it decrypts
    the stack config and passes it as PULUMI_CONFIG (pkg/engine/deployment.go ``target.Config.Decrypt``;
    analyzer_plugin.go ``constructEnv``: "Config is passed as an environment variable (including unecrypted
    secrets)"), which ``pulumi.runtime.get_config_env()`` reads. secret_config_leaks searches for these values."""
    values = {}
    for key in SECRET_CONFIG_KEYS:
        value = config.get(f"{PROJECT}:{key}")
        if isinstance(value, str) and len(value) >= MIN_SEARCHED_SECRET_LENGTH:
            values[key] = value
    return values


def secret_config_leaks(r: Declared, secret_values: Mapping[str, str]) -> list[str]:
    """No secret config value appears in a resource input other than the inputs made to carry it
    (SECRET_CARRIERS): found anywhere else, it has been pasted into plain text. The message names the
    config key and the input, never the value."""
    carriers = SECRET_CARRIERS.get(r.type, ())
    found = []
    for path, text in _strings(r.props):
        if any(path[:len(c)] == c for c in carriers):
            continue
        for key, value in secret_values.items():
            if len(value) >= MIN_SEARCHED_SECRET_LENGTH and value in text:
                found.append(f"the value of secret config {key!r} appears in {'.'.join(path) or '(value)'} of "
                             f"{r.name}; pass it only through a secret input ({_carrier_list(r.type)})")
    return found


def _carrier_list(resource_type: str) -> str:
    carriers = SECRET_CARRIERS.get(resource_type)
    return ", ".join(".".join(c) for c in carriers) if carriers else f"none on {resource_type}"


# Inputs of a command that make it dial (pulumi-command v1.2.1: Delete does nothing, no dial, when `delete` is
# unset; Create and Update run `create` and `update`).
DIALLING_INPUTS = ("create", "update", "delete")
HOST_KEY_RULE = "ssh-host-key-pinned"
# The program's commands that ignore changes of their connection and have no delete (kubeadm init, the kubeconfig
# read, the Secrets key ring, the join lines, a node's host key install): an existing one keeps, and the pack sees, the
# connection it was created with, which it never dials again. Each is pinned when created, except a host key install
# on a node an earlier release made, which trusts it once (docs/security.md, "Host keys").
# A lost node's commands ignore every input and are retained on delete (components/machines/lifecycle.py dialling_node).
FROZEN_INPUTS = frozenset({"create", "update", "delete", "connection", "triggers"})
CONNECTION_KEPT_SUFFIXES = ("-init", "-kubeconfig", "-encryption-keys", "-join-credentials", "-host-key-install")


def host_keys_required(config: Mapping[str, Any]) -> bool:
    """Whether the stack pins every SSH connection: unless its `security` section says `pinHostKeys: false`. The
    engine hands an object-valued config key to the pack as its JSON text (PULUMI_CONFIG)."""
    security = config.get(f"{PROJECT}:security")
    if isinstance(security, str):
        try:
            security = json.loads(security)
        except ValueError:
            security = None
    return not (isinstance(security, Mapping) and security.get("pinHostKeys") is False)


def unpinned_connections(r: Declared, required: bool) -> list[str]:
    """A command that dials must name the host key of the server it dials, and of the bastion it dials through:
    without one, pulumi-command accepts any server (remote/connection.go: ssh.InsecureIgnoreHostKey).

    Not one of the program's commands that keep their connection (CONNECTION_KEPT_SUFFIXES, which ignore its changes
    and have no delete): the engine hands the pack the inputs after ignore_changes (pkg/resource/deploy/
    step_generator.go: processIgnoreChanges before analyzeAll), so an existing one shows the connection it was
    created with, which it never dials again (a replacement takes the program's inputs)."""
    if not required or r.type != COMMAND_TYPE or not any(r.props.get(k) for k in DIALLING_INPUTS):
        return []
    if r.name.endswith(CONNECTION_KEPT_SUFFIXES) and "connection" in r.ignore_changes and not r.props.get("delete"):
        return []
    if FROZEN_INPUTS <= set(r.ignore_changes):
        return []   # a lost node's command (components/machines/lifecycle.py): it never runs again, its delete included
    connection = r.props.get("connection")
    if not isinstance(connection, Mapping):
        return []
    found = []
    for where, hop in (("connection", connection), ("connection.proxy", connection.get("proxy"))):
        if isinstance(hop, Mapping) and not hop.get("hostKey"):
            found.append(f"command {r.name} dials {hop.get('host', 'a host')} without {where}.hostKey, so any "
                         "machine answering there receives its credentials: pin the host key (docs/security.md, "
                         "\"Host keys\"), or set security.pinHostKeys: false for a lab")
    return found


RESOURCE_RULES: dict[str, ResourceRule] = {
    "secret-stdout-not-logged": secret_stdout_violations,
}
PROTECTION_RULE = "control-plane-vm-protected"
SECRET_CONFIG_RULE = "secret-config-confined"


def evaluate(resources: Sequence[Declared], secret_values: Mapping[str, str],
             host_keys: bool = True) -> dict[str, list[Finding]]:
    """Every rule of the pack over a set of declared resources: rule name -> findings (empty when clean)."""
    results: dict[str, list[Finding]] = {GATEKEEPER_RULE: gatekeeper_findings(resources),
                                         PROTECTION_RULE: control_plane_protection_findings(resources)}
    for name, rule in RESOURCE_RULES.items():
        results[name] = [Finding(r.urn, m) for r in resources for m in rule(r)]
    results[SECRET_CONFIG_RULE] = [Finding(r.urn, m) for r in resources for m in secret_config_leaks(r, secret_values)]
    results[HOST_KEY_RULE] = [Finding(r.urn, m) for r in resources for m in unpinned_connections(r, host_keys)]
    return results
