"""The rules of the hybrid-cluster policy pack as pure functions: plain data in, violation messages out.

This module owns the rule logic and the small vocabulary it needs (label, taint and resource-type names,
the Windows build table, the project's secret config keys). It imports nothing from Pulumi, so tests run
it on the resources the program declares under the mock engine, and ``__main__.py`` only adapts what the
policy SDK hands over (``ResourceValidationArgs`` / ``PolicyResource``) into ``Declared`` and reports.

It cannot import the program's own modules (render/, config/): the CLI runs a pack from its own folder
with its own virtualenv (``runpy.run_path(<pack dir>, run_name="__main__")`` in pulumi/policy/__main__.py
of the pulumi 3.272.0 SDK). tests/test_policy_pack.py keeps every copied constant equal to its origin.

What each rule can and cannot see is decided by the SDK, not by us (pulumi_policy 1.21.0, policy.py):

* A resource policy sees the resource's *inputs* after the provider's Check, before the step runs; a
  stack policy sees every resource's *outputs* at the end of the preview or update
  (pulumi/pulumi pkg/resource/deploy/step_generator.go: ``Properties: inputs`` for Analyze,
  ``Properties: v.Outputs`` for AnalyzeStack; deployment_executor.go calls AnalyzeResources after all
  steps). A mandatory finding in a preview fails the preview, so ``pulumi up`` stops before any change.
* Options are visible: ``PolicyResourceOptions.protect`` and ``.additional_secret_outputs``, filled from
  the engine's ``AnalyzerResourceOptions`` (``Protect: new.Protect``,
  ``AdditionalSecretOutputs: new.AdditionalSecretOutputs`` in step_generator.go).
* Whether a value is *secret* is not: the engine sends secrets (``KeepSecrets: true`` in
  sdk/go/common/resource/plugin/analyzer_plugin.go) but the Python SDK's Analyze and AnalyzeStack call
  ``deserialize_properties(...)`` without ``proxy_secrets``, which unwraps each secret into its plain
  value. Only Remediate keeps the marker. pulumi/pulumi-policy#241 (open): "It's not currently possible
  to check if a stack config value or property is a secret from policies". So no rule here claims to
  check that a value is marked secret; the program's tests check that (tests/test_policy_pack.py).
* Stack config is visible, secrets decrypted: the engine decrypts the stack config and passes it to
  policy packs as PULUMI_CONFIG (pkg/engine/deployment.go ``target.Config.Decrypt``;
  analyzer_plugin.go ``constructEnv``: "Config is passed as an environment variable (including
  unecrypted secrets)"), read by ``pulumi.runtime.get_config_env()``. That is what
  ``secret_config_leaks`` uses: a secret config value that shows up anywhere except the inputs made to
  carry it has been pasted into plain text (a script body, a manifest).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    the provider sees them; secrets already unwrapped), and the options rules look at."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    protect: bool = False
    additional_secret_outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    urn: str
    message: str


# --- vocabulary (kept equal to render/labels.py, config/compat.py, config/loader.py by the tests) --------

OS_LABEL = "kubernetes.io/os"
WINDOWS_BUILD_LABEL = "node.kubernetes.io/windows-build"
WINDOWS_TAINT = {"key": "node-role.kubernetes.io/windows", "value": "true", "effect": "NoSchedule"}
OPERATING_SYSTEMS = frozenset({"linux", "windows"})
WINDOWS_NAMESPACE_PREFIX = "win-"
LINUX_NAMESPACE_PREFIX = "linux-"

# Image tag marker -> Windows build (major.minor.build, as in node.kubernetes.io/windows-build).
# ltsc2019/ltsc2022/ltsc2025 and their builds are config/compat.py WINDOWS (ltsc_tag, build) with that
# file's sources; "1809" is the other tag Microsoft uses for 2019 images ("Windows 10, Server 2019 | 1809
# | 10.0.17763", Siemens-Healthineers/K2s os-support table; render/workloads.py _WINDOWS_TAG_MARKERS).
WINDOWS_BUILD_BY_TAG_MARKER = {
    "ltsc2019": "10.0.17763",
    "1809": "10.0.17763",
    "ltsc2022": "10.0.20348",
    "ltsc2025": "10.0.26100",
}
_TAG_MARKER = re.compile(r"(?:^|[-_.])(ltsc20\d\d|1809)(?=$|[-_.])", re.IGNORECASE)
# A full build in the tag, e.g. servercore:10.0.20348.2227; "10.0-nanoserver" (a .NET version) is not one.
_TAG_BUILD = re.compile(r"(?:^|[^\d.])(10\.0\.\d{5})(?!\d)")

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
PROXMOX_VM_TYPE = "proxmoxve:index/vmLegacy:VmLegacy"
COMMAND_TYPE = "command:remote:Command"

# Commands whose stdout is a credential (components/bootstrap.py: join credentials, admin kubeconfig).
SECRET_STDOUT_SUFFIXES = ("-join-credentials", "-kubeconfig")
# pulumi-command 1.2.1 remote.Command `logging` (Logging enum: stdout, stderr, stdoutAndStderr, none):
# "Defaults to logging both stdout and stderr" (pulumi_command/remote/command.py). Either of these two
# keeps stdout out of the logs.
STDOUT_FREE_LOGGING = frozenset({"stderr", "none"})
CONTROL_PLANE_TAG = "control-plane"   # components/machines.py tags every VM with its role

PROJECT = "hybrid-cluster"            # Pulumi.yaml name: config keys arrive as "hybrid-cluster:<key>"
SECRET_CONFIG_KEYS = (
    "proxmoxApiToken", "proxmoxSshPrivateKey", "hypervSshPrivateKey", "hypervSshPassword",
    "nodeSshPrivateKey", "windowsAdminPassword", "bastionSshPrivateKey", "smbUsername", "smbPassword",
    "grafanaAdminPassword",
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


# --- helpers ---------------------------------------------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else []


def _dict(value: Any) -> Mapping:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class Workload:
    urn: str
    kind: str
    name: str
    namespace: str
    pod_spec: Mapping[str, Any]


def workload(resource: Declared) -> Workload | None:
    """The pod template of a workload resource; None for anything else."""
    path = POD_TEMPLATE_PATHS.get(resource.type)
    if path is None:
        return None
    template = _get(resource.props, *path) if path else resource.props
    metadata = _dict(resource.props.get("metadata"))
    # No namespace means the provider's default one, "default" unless the provider says otherwise.
    namespace = metadata.get("namespace") or "default"
    return Workload(urn=resource.urn, kind=resource.type.rsplit(":", 1)[-1], name=str(metadata.get("name") or resource.name),
                    namespace=namespace, pod_spec=_dict(_get(template, "spec")))


def runtime_classes(resources: Iterable[Declared]) -> dict[str, Mapping[str, Any]]:
    """RuntimeClass name -> its ``scheduling`` block, for every RuntimeClass declared."""
    found: dict[str, Mapping[str, Any]] = {}
    for r in resources:
        if r.type == RUNTIME_CLASS_TYPE:
            name = _get(r.props, "metadata", "name")
            if isinstance(name, str):
                found[name] = _dict(r.props.get("scheduling"))
    return found


# Label constraints as "only these values" or "any value except these": the set of label values a node
# may have for the pod to land there. Values outside our vocabulary (another OS, another build) stay
# representable, so a typo is a contradiction, not a pass.

@dataclass(frozen=True)
class Allowed:
    values: frozenset[str]
    complement: bool   # True: every value except `values`

    def __and__(self, other: Allowed) -> Allowed:
        if not self.complement and not other.complement:
            return Allowed(self.values & other.values, False)
        if self.complement and other.complement:
            return Allowed(self.values | other.values, True)
        only, excluded = (self, other) if not self.complement else (other, self)
        return Allowed(only.values - excluded.values, False)

    def __or__(self, other: Allowed) -> Allowed:
        if not self.complement and not other.complement:
            return Allowed(self.values | other.values, False)
        if self.complement and other.complement:
            return Allowed(self.values & other.values, True)
        only, excluded = (self, other) if not self.complement else (other, self)
        return Allowed(excluded.values - only.values, True)

    def within(self, universe: frozenset[str]) -> frozenset[str]:
        return universe - self.values if self.complement else self.values & universe

    def single(self) -> str | None:
        return next(iter(self.values)) if not self.complement and len(self.values) == 1 else None


ANY = Allowed(frozenset(), True)
NONE = Allowed(frozenset(), False)


def _expression_allows(expression: Mapping, key: str) -> Allowed:
    # NodeSelectorRequirement operators (k8s.io/api core/v1 NodeSelectorOperator). Gt/Lt compare
    # integers, which no label here holds: treated as no constraint.
    if expression.get("key") != key:
        return ANY
    operator, values = expression.get("operator"), frozenset(str(v) for v in _list(expression.get("values")))
    if operator == "In":
        return Allowed(values, False)
    if operator == "NotIn":
        return Allowed(values, True)
    if operator == "DoesNotExist":
        return NONE
    return ANY


def _affinity_allows(pod_spec: Mapping, key: str) -> Allowed:
    """Required node affinity on one label: terms are ORed, a term's expressions ANDed
    (https://kubernetes.io/docs/reference/kubernetes-api/definitions/node-selector-v1/ "The terms are
    ORed"; https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/ "expressions are ANDed")."""
    terms = _list(_get(pod_spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                       "nodeSelectorTerms"))
    if not terms:
        return ANY
    allowed = NONE
    for term in terms:
        term_allows = ANY
        for expression in _list(_dict(term).get("matchExpressions")):
            term_allows = term_allows & _expression_allows(_dict(expression), key)
        allowed = allowed | term_allows
    return allowed


@dataclass(frozen=True)
class Placement:
    os: Allowed
    build: Allowed
    tolerations: tuple[Mapping[str, Any], ...]
    runtime_class: str | None
    runtime_class_declared: bool


def placement(pod_spec: Mapping, runtime_classes_by_name: Mapping[str, Mapping]) -> Placement:
    """Where a pod may land once the RuntimeClass admission step has merged its class's
    ``scheduling.nodeSelector`` into the pod's and appended ``scheduling.tolerations`` (RuntimeClass
    ``scheduling`` field descriptions, Kubernetes API reference; render/scheduling.py)."""
    rc_name = pod_spec.get("runtimeClassName")
    rc = runtime_classes_by_name.get(rc_name) if isinstance(rc_name, str) else None
    selectors = [_dict(pod_spec.get("nodeSelector")), _dict(_get(rc, "nodeSelector"))]

    def allowed(key: str) -> Allowed:
        result = _affinity_allows(pod_spec, key)
        for selector in selectors:
            if key in selector:
                result = result & Allowed(frozenset({str(selector[key])}), False)
        return result

    tolerations = tuple(_dict(t) for t in [*_list(pod_spec.get("tolerations")), *_list(_get(rc, "tolerations"))])
    return Placement(os=allowed(OS_LABEL), build=allowed(WINDOWS_BUILD_LABEL), tolerations=tolerations,
                     runtime_class=rc_name if isinstance(rc_name, str) else None, runtime_class_declared=rc is not None)


def targeted_os(p: Placement) -> str | None:
    """"linux" or "windows" when the pod can land on exactly one of them."""
    reachable = p.os.within(OPERATING_SYSTEMS)
    return next(iter(reachable)) if len(reachable) == 1 else None


def tolerates(toleration: Mapping, taint: Mapping) -> bool:
    """k8s.io/api core/v1 toleration.go ToleratesTaint: empty effect matches every effect, empty key (with
    Exists) every key; Exists matches any value, Equal (or no operator) the same value."""
    if toleration.get("effect") and toleration.get("effect") != taint["effect"]:
        return False
    if toleration.get("key") and toleration.get("key") != taint["key"]:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and str(toleration.get("value") or "") == taint["value"]


def image_windows_build(image: str) -> str | None:
    """The Windows build an image's tag names (ltsc2022 -> 10.0.20348), or None when the tag does not tell."""
    reference = image.split("@", 1)[0]
    last = reference.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    tag = last.split(":", 1)[1]
    build = _TAG_BUILD.search(tag)
    if build:
        return build.group(1)
    marker = _TAG_MARKER.search(tag)
    return WINDOWS_BUILD_BY_TAG_MARKER.get(marker.group(1).lower()) if marker else None


# --- placement rules (the same rules as the Gatekeeper constraint templates) ---------------------------------

PlacementRule = Callable[[Workload, Mapping[str, Mapping]], list[str]]


def os_target_violations(w: Workload, rcs: Mapping[str, Mapping]) -> list[str]:
    """The pod targets kubernetes.io/os through nodeSelector, required node affinity, or the RuntimeClass
    it names - which must be one the program declares."""
    p = placement(w.pod_spec, rcs)
    found = []
    if p.runtime_class is not None and not p.runtime_class_declared:
        found.append(f"runtimeClassName {p.runtime_class!r} names no RuntimeClass this program declares "
                     f"(declared: {', '.join(sorted(rcs)) or 'none'})")
    reachable = p.os.within(OPERATING_SYSTEMS)
    if not reachable:
        found.append(f"its nodeSelector, node affinity and RuntimeClass together leave no OS it can run on "
                     f"({OS_LABEL} must be one of {', '.join(sorted(OPERATING_SYSTEMS))})")
    elif len(reachable) > 1:
        found.append(f"does not target {OS_LABEL}: set it in nodeSelector, in a required node affinity, or "
                     f"through a declared RuntimeClass, or the pod may land on either OS")
    return found


def windows_toleration_violations(w: Workload, rcs: Mapping[str, Mapping]) -> list[str]:
    """A pod that targets Windows, or lives in a win-* namespace, tolerates the Windows node taint, itself
    or through its RuntimeClass."""
    p = placement(w.pod_spec, rcs)
    if targeted_os(p) != "windows" and not w.namespace.startswith(WINDOWS_NAMESPACE_PREFIX):
        return []
    if any(tolerates(t, WINDOWS_TAINT) for t in p.tolerations):
        return []
    taint = f"{WINDOWS_TAINT['key']}={WINDOWS_TAINT['value']}:{WINDOWS_TAINT['effect']}"
    return [(f"targets Windows but tolerates no {taint} (every Windows node carries it): add the toleration "
             f"or use a RuntimeClass that adds it")]


def namespace_os_violations(w: Workload, rcs: Mapping[str, Mapping]) -> list[str]:
    """A pod in a win-* namespace targets Windows, one in a linux-* namespace Linux. A pod that targets no
    single OS is the os-target rule's finding, not this one's."""
    expected = ("windows" if w.namespace.startswith(WINDOWS_NAMESPACE_PREFIX)
                else "linux" if w.namespace.startswith(LINUX_NAMESPACE_PREFIX) else None)
    actual = targeted_os(placement(w.pod_spec, rcs))
    if expected is None or actual is None or actual == expected:
        return []
    return [f"namespace {w.namespace} is for {expected} pods, but the pod targets {actual}"]


def windows_image_build_violations(w: Workload, rcs: Mapping[str, Mapping]) -> list[str]:
    """A Windows pod whose image tag names a Windows build targets exactly that build through its
    RuntimeClass, nodeSelector or node affinity on node.kubernetes.io/windows-build: process-isolated
    containers start only on a host of their own build."""
    p = placement(w.pod_spec, rcs)
    if targeted_os(p) != "windows":
        return []
    found = []
    for container in [*_list(w.pod_spec.get("initContainers")), *_list(w.pod_spec.get("containers"))]:
        image = _dict(container).get("image")
        wanted = image_windows_build(image) if isinstance(image, str) else None
        if wanted is None or p.build.single() == wanted:
            continue
        named = (f"names {', '.join(sorted(p.build.values))}" if not p.build.complement and p.build.values
                 else "names no single Windows build")
        found.append(f"container {_dict(container).get('name')!r} image {image} is built for Windows {wanted}, "
                     f"but the pod's RuntimeClass/nodeSelector/affinity {named} ({WINDOWS_BUILD_LABEL})")
    return found


PLACEMENT_RULES: dict[str, PlacementRule] = {
    "workload-targets-os": os_target_violations,
    "windows-workload-tolerates-taint": windows_toleration_violations,
    "namespace-matches-os": namespace_os_violations,
    "windows-image-matches-build": windows_image_build_violations,
}


def placement_findings(rule: PlacementRule, resources: Sequence[Declared]) -> list[Finding]:
    """Run one placement rule over every workload among `resources`, RuntimeClasses looked up among them.

    A workload whose pod template or RuntimeClass is not fully known yet (preview) is skipped here: the
    stack policy runs again at the end of the update, on outputs that are known.
    """
    rcs = runtime_classes(resources)
    findings = []
    for r in resources:
        w = workload(r)
        if w is None or contains_unknown(w.pod_spec) or contains_unknown(w.namespace):
            continue
        rc_name = w.pod_spec.get("runtimeClassName")
        if isinstance(rc_name, str) and contains_unknown(rcs.get(rc_name)):
            continue
        findings += [Finding(w.urn, f"{w.kind} {w.namespace}/{w.name}: {m}") for m in rule(w, rcs)]
    return findings


# --- infrastructure rules ----------------------------------------------------------------------------------------

ResourceRule = Callable[[Declared], list[str]]


def control_plane_protection_violations(r: Declared) -> list[str]:
    """A Proxmox VM tagged control-plane is protected: deleting one removes an etcd member."""
    if r.type != PROXMOX_VM_TYPE:
        return []
    tags = r.props.get("tags")
    if not isinstance(tags, (list, tuple)) or CONTROL_PLANE_TAG not in tags:
        return []
    if r.protect:
        return []
    return [f"VM {r.name} is a {CONTROL_PLANE_TAG} node but not protected: declare it with ResourceOptions(protect=True)"]


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
    """Secret config key -> value, from the stack config the engine hands the pack (PULUMI_CONFIG)."""
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


RESOURCE_RULES: dict[str, ResourceRule] = {
    "control-plane-vm-protected": control_plane_protection_violations,
    "secret-stdout-not-logged": secret_stdout_violations,
}
SECRET_CONFIG_RULE = "secret-config-confined"


def evaluate(resources: Sequence[Declared], secret_values: Mapping[str, str]) -> dict[str, list[Finding]]:
    """Every rule of the pack over a set of declared resources: rule name -> findings (empty when clean)."""
    results: dict[str, list[Finding]] = {name: placement_findings(rule, resources) for name, rule in PLACEMENT_RULES.items()}
    for name, rule in RESOURCE_RULES.items():
        results[name] = [Finding(r.urn, m) for r in resources for m in rule(r)]
    results[SECRET_CONFIG_RULE] = [Finding(r.urn, m) for r in resources for m in secret_config_leaks(r, secret_values)]
    return results
