"""Renders the in-cluster placement policy: the OPA Gatekeeper chart's Helm values (the pin is config.compat's), the
Gatekeeper Config that syncs RuntimeClasses into ``data.inventory``, the three ConstraintTemplates kept under
policy/gatekeeper/ (gatekeeper-library layout: ``<name>/template.yaml``, ``suite.yaml``, ``samples/<case>/``) with their
readiness annotation, one Constraint per template (names, parameters) for the prod namespaces, and the admission probes
that wait for the policy to be in force. Pure: no Pulumi and no ``config`` imports; it reads the template files of this
repository and returns plain Kubernetes objects / Helm values, which components turn into pulumi_kubernetes resources.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from render import availability, yaml_text
from render.script_files import render_script
from vocab.checks import DNS_LABEL
from vocab.labels import (
    OS_LABEL,
    WINDOWS_TAINT_EFFECT,
    WINDOWS_TAINT_KEY,
    WINDOWS_TAINT_VALUE,
)

GATEKEEPER_NAMESPACE = "gatekeeper-system"

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "policy" / "gatekeeper"

# Readiness of a template. Creating a constraint before Gatekeeper has created its CRD fails with "no matches for kind"
# (open-policy-agent/gatekeeper#315, #1147). Gatekeeper reports the CRD with ``status.created: true`` on the template
# (status schema in the shared CRD), so every template waits for it (pulumi-kubernetes v4 user-defined readiness,
# pulumi/pulumi-kubernetes#3134, kubectl-wait jsonpath semantics; same key as render.network) and the constraints
# depend on their template. The Config needs only the chart's CRDs.
PULUMI_WAIT_FOR = "pulumi.com/waitFor"
TEMPLATE_CREATED = "jsonpath={.status.created}=true"

ENFORCEMENT_ACTIONS = ("dryrun", "warn", "deny")

# Namespace naming enforced by render.scheduling (_check_namespace): Windows namespaces are win-*, Linux
# ones linux-*.
WINDOWS_NAMESPACE_PREFIXES = ("win-",)
LINUX_NAMESPACE_PREFIXES = ("linux-",)

OPERATING_SYSTEMS = ("linux", "windows")

# Windows Server builds and the tag components that name them. Build numbers are major.minor.build as
# the kubelet reports node.kubernetes.io/windows-build (vocab/labels.py). Sources: Windows Server 2019 is
# version 1809, build 10.0.17763, with base image tags "1809", "ltsc2019" and "10.0.17763.<rev>"
# (MicrosoftDocs/Virtualization-Documentation virtualization/windowscontainers/deploy-containers/
# version-compatibility.md, "Practical application" and "Choose which container OS version to use");
# ltsc2022 images are 10.0.20348 (ghcr.io/containerd/windows/nanoserver:ltsc2022 is published as
# windows/10.0.20348.1850/amd64); Windows Server 2025 is 10.0.26100 (actions/runner-images win25
# releases, "OS Version: 10.0.26100"), tagged ltsc2025 (docker-library windowsservercore-ltsc2025 /
# nanoserver-ltsc2025 variants). Variant prefixes such as "windowsservercore-ltsc2022" or
# "nanoserver-ltsc2022" match through the ltsc marker: the template matches whole "-"/"_" separated
# tag components.
WINDOWS_BUILD_TAGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("10.0.17763", ("ltsc2019", "1809", "10.0.17763")),
    ("10.0.20348", ("ltsc2022", "10.0.20348")),
    ("10.0.26100", ("ltsc2025", "10.0.26100")),
)

# Pods and every built-in workload kind with a pod template: the Rego reads ``spec.template.spec``
# (``spec.jobTemplate.spec.template.spec`` for CronJob), so ``kubectl apply`` of a bad Deployment is refused instead of
# its ReplicaSet silently failing to create pods. Gatekeeper's expansion (ExpansionTemplate -> mock Pod,
# website/docs/expansion.md; chart value enableGeneratorResourceExpansion, "beta feature", default true in the chart
# README) would do the same from a Pod-only constraint, but it adds a cluster object whose absence silently turns the
# check off, and the mock pod is only as good as the mutators that imitate admission; reading the template directly is
# exact for what we check and is what tests/gatekeeper_eval.py evaluates, rule for rule.
MATCH_KINDS: tuple[dict[str, list[str]], ...] = (
    {"apiGroups": [""], "kinds": ["Pod", "ReplicationController"]},
    {"apiGroups": ["apps"], "kinds": ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"]},
    {"apiGroups": ["batch"], "kinds": ["Job", "CronJob"]},
)

# Constraint kind -> (constraint name, template folder under TEMPLATE_DIR).
CONSTRAINTS: dict[str, tuple[str, str]] = {
    "K8sRequiredNodeSelector": ("prod-required-os", "requirednodeselector"),
    "K8sWindowsToleration": ("prod-windows-toleration", "windowstoleration"),
    "K8sWindowsImageBuild": ("prod-windows-image-build", "windowsimagebuild"),
}

# Constraints are served as constraints.gatekeeper.sh/v1beta1 (website/docs/howto.md, "Constraints").
CONSTRAINT_API_VERSION = "constraints.gatekeeper.sh/v1beta1"


# Requests equal to the chart's own defaults for these two deployments (controllerManager/audit
# .resources: 100m CPU, 512Mi memory, memory limit 512Mi), stated here so the footprint is visible and
# does not move with a chart upgrade; no CPU limit, so policy evaluation bursts are not throttled.
_COMPONENT_RESOURCES = {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}}


def _linux() -> dict[str, str]:
    return {OS_LABEL: "linux"}


def gatekeeper_values(budget: bool) -> dict[str, Any]:
    """Helm values for the gatekeeper chart: every Gatekeeper pod on Linux nodes, explicit resources, audit
    limited to the kinds constraints match.

    The chart always renders a budget for the webhook's controller-manager pods (three replicas, spread over nodes
    by its default affinity), ``pdb.controllerManager.minAvailable`` (templates/gatekeeper-controller-manager-
    poddisruptionbudget.yaml at v3.23.0, default 1), and cannot say unhealthyPodEvictionPolicy. It is 1 where every
    wave leaves Gatekeeper a node (`budget`, plan/platform.py survives_every_wave) and 0 elsewhere: on a single
    worker its default would stop that worker's drain for good. A second budget of this program's over the same pods
    would make each of them unevictable (render/availability.py)."""
    # The chart (config.compat CHARTS["gatekeeper"]): its version equals Gatekeeper's release version
    # (open-policy-agent/gatekeeper docs/Release_Management.md: "X.Y.Z ... is the version of the Gatekeeper image and the
    # Chart version"). The chart index lists 3.23.0 (2026-07-09, https://open-policy-agent.github.io/gatekeeper/charts/
    # index.yaml); v3.23.1 is the newest patch found: third-party deployment repositories pull
    # ``openpolicyagent/gatekeeper:v3.23.1``, and sighupio/module-policy release v1.19.0 (26 Nov) ships Gatekeeper v3.23.1
    # stating "compatibility with Kubernetes versions 1.33.x through 1.36.x". Kubernetes 1.36: Gatekeeper assumes every
    # supported release compatible with every supported Kubernetes minor (Release_Management.md, "Supported Kubernetes
    # Versions"), and 3.23 is the current minor; 3.24 had only a beta (3.24.0-beta.0,
    # 2026-07-13, chart index) in the newest index seen.
    return {
        "pdb": {"controllerManager": {"minAvailable": availability.MIN_AVAILABLE if budget else 0}},
        # Controller, audit and every hook Job on Linux nodes through the chart's per-component nodeSelector values
        # (chart README "Parameters": controllerManager/audit/postInstall/postUpgrade/preUninstall/crds .nodeSelector);
        # the chart already defaults them to kubernetes.io/os: linux, pinned here so a chart change cannot move them
        # onto Windows.
        "controllerManager": {"nodeSelector": _linux(), "resources": copy.deepcopy(_COMPONENT_RESOURCES)},
        "audit": {"nodeSelector": _linux(), "resources": copy.deepcopy(_COMPONENT_RESOURCES)},
        "postInstall": {"nodeSelector": _linux()},
        "postUpgrade": {"nodeSelector": _linux()},
        "preUninstall": {"nodeSelector": _linux()},
        "crds": {"nodeSelector": _linux()},
        # Audit lists only the kinds some constraint matches instead of every resource in the cluster
        # (chart README: auditMatchKindOnly, "Only check resources of the kinds specified in all
        # constraints defined in the cluster").
        "auditMatchKindOnly": True,
    }


def sync_config() -> dict[str, Any]:
    """The Gatekeeper Config replicating RuntimeClasses into data.inventory for the templates."""
    # The chart creates no Config (its templates/ directory has none) and exposes no sync value, so it is ours; it must be
    # named ``config`` in Gatekeeper's namespace (website/docs/sync.md, "Replicating Data with Config"). SyncSet is the
    # newer, "preferred" alpha alternative (same page); Config is used because the same object also carries any future
    # process exemptions (website/docs/api.md, Config). Our Rego needs RuntimeClasses only: namespaces are recognised by
    # name prefix, so Namespaces are not synced. Each template also declares the data it needs in
    # ``metadata.gatekeeper.sh/requires-sync-data`` (pkg/cachemanager/parser/syncannotationreader.go: quoted JSON list of
    # GVK clauses).
    return {
        "apiVersion": "config.gatekeeper.sh/v1alpha1",
        "kind": "Config",
        "metadata": {"name": "config", "namespace": GATEKEEPER_NAMESPACE},
        "spec": {"sync": {"syncOnly": [{"group": "node.k8s.io", "version": "v1", "kind": "RuntimeClass"}]}},
    }


# --- waiting for the policy to be in force -----------------------------------------------------------------
#
# A constraint that follows runtimeClassName reads the RuntimeClass from data.inventory, which Gatekeeper
# fills asynchronously once the Config exists (website/docs/sync.md); a pod checked before that is denied
# for a RuntimeClass that "does not exist". Workloads therefore wait until a pod exactly like theirs is
# admitted: a server-side dry run goes through every admission webhook (Gatekeeper's is `sideEffects: None`,
# so it receives dry-run requests) and persists nothing.
ADMISSION_PROBE_TIMEOUT_SECONDS = 600
PROBE_SUFFIX = "-admission-probe"     # a name no object of the program has


def probe_pods(workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One Pod per Deployment/DaemonSet/StatefulSet in ``workloads``: its pod template as the pod it creates."""
    pods = []
    for obj in workloads:
        if obj.get("kind") not in ("Deployment", "DaemonSet", "StatefulSet"):
            continue
        template = obj["spec"]["template"]
        pods.append(probe_object({"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"],
                                               "labels": dict(template.get("metadata", {}).get("labels", {}))},
                                  "spec": copy.deepcopy(template["spec"])}))
    return pods


def render_dry_run_probe(objects: list[dict[str, Any]], what: str,
                         timeout_seconds: int = ADMISSION_PROBE_TIMEOUT_SECONDS) -> str:
    """On the first control-plane node: submit each object as a server-side dry run until the API server admits
    it, or fail after ``timeout_seconds`` with the last refusal (``what`` names the objects in that message).
    Creates nothing, so it has no delete; running it twice checks twice. Each object's name must be one nothing
    has (a dry-run create of an existing object is refused as it)."""
    if not objects:
        raise ValueError("an admission probe needs at least one object")
    if not isinstance(timeout_seconds, int) or timeout_seconds < 1:
        raise ValueError(f"timeout {timeout_seconds!r} must be a positive number of seconds")
    for obj in objects:
        if not obj["metadata"]["name"].endswith(PROBE_SUFFIX):
            raise ValueError(f"{obj['metadata']['name']}: a probe object's name ends in {PROBE_SUFFIX}")
    return render_script("admission-probe.sh", TIMEOUT_SECONDS=timeout_seconds, WHAT=what,
                         OBJECTS=[json.dumps(obj, sort_keys=True) for obj in objects])


def probe_object(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` under a name nothing has, for render_dry_run_probe."""
    return {**obj, "metadata": {**obj["metadata"], "name": f"{obj['metadata']['name']}{PROBE_SUFFIX}"}}


def render_admission_probe(pods: list[dict[str, Any]], timeout_seconds: int = ADMISSION_PROBE_TIMEOUT_SECONDS) -> str:
    """The samples' pods (probe_pods) admitted by the placement policy (synced and in force)."""
    for pod in pods:
        if pod.get("kind") != "Pod" or not DNS_LABEL.match(pod["metadata"].get("namespace", "")):
            raise ValueError("admission probes are namespaced Pods")
    return render_dry_run_probe(pods, "a pod like the workload's (policy not in force, or it denies the workload)",
                                timeout_seconds)


def _load_template(folder: str) -> dict[str, Any]:
    path = TEMPLATE_DIR / folder / "template.yaml"
    template = yaml_text.load(path.read_text())
    if not isinstance(template, dict) or template.get("kind") != "ConstraintTemplate":
        raise ValueError(f"{path} is not a ConstraintTemplate")
    return template


# A template may carry Rego v1 (since Gatekeeper 3.19) at ``spec.targets[].code[{engine: Rego, source: {version: "v1",
# rego}}]`` (website/docs/constrainttemplates.md, "Enable OPA Rego v1 syntax"); the CRD accepts it (``code[].source``
# preserves unknown fields in tests/fixtures/schemas/templates.gatekeeper.sh_v1_ConstraintTemplate.json).
def templates() -> list[dict[str, Any]]:
    """The ConstraintTemplates under policy/gatekeeper, each marked ready once Gatekeeper has created its
    constraint CRD."""
    rendered = []
    for kind, (_, folder) in sorted(CONSTRAINTS.items()):
        template = _load_template(folder)
        declared = template["spec"]["crd"]["spec"]["names"]["kind"]
        if declared != kind:
            raise ValueError(f"policy/gatekeeper/{folder}/template.yaml declares {declared}, expected {kind}")
        annotations = template["metadata"].setdefault("annotations", {})
        annotations[PULUMI_WAIT_FOR] = TEMPLATE_CREATED
        rendered.append(template)
    return rendered


def _parameters(kind: str) -> dict[str, Any]:
    if kind == "K8sRequiredNodeSelector":
        return {"operatingSystems": list(OPERATING_SYSTEMS)}
    if kind == "K8sWindowsToleration":
        return {
            "taint": {"key": WINDOWS_TAINT_KEY, "value": WINDOWS_TAINT_VALUE, "effect": WINDOWS_TAINT_EFFECT},
            "windowsNamespacePrefixes": list(WINDOWS_NAMESPACE_PREFIXES),
            "linuxNamespacePrefixes": list(LINUX_NAMESPACE_PREFIXES),
        }
    if kind == "K8sWindowsImageBuild":
        return {"builds": [{"build": build, "tagMarkers": list(markers)} for build, markers in WINDOWS_BUILD_TAGS]}
    raise ValueError(f"no parameters for constraint kind {kind}")


def constraints(action: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
    """One constraint per template, enforcing ``action`` on Pods and pod-template workloads in
    ``namespaces``."""
    if action not in ENFORCEMENT_ACTIONS:
        raise ValueError(f"enforcement action {action!r} is not one of {ENFORCEMENT_ACTIONS}")
    if not namespaces:
        raise ValueError("constraints need at least one namespace: an empty list would match every namespace")
    for ns in namespaces:
        if not DNS_LABEL.match(ns):
            raise ValueError(f"namespace {ns!r} is not a DNS-1123 label")
    if len(set(namespaces)) != len(namespaces):
        raise ValueError(f"duplicate namespaces: {namespaces}")
    rendered = []
    for kind, (name, _) in sorted(CONSTRAINTS.items()):
        rendered.append({
            "apiVersion": CONSTRAINT_API_VERSION,
            "kind": kind,
            "metadata": {"name": name},
            "spec": {
                "enforcementAction": action,
                "match": {
                    "scope": "Namespaced",
                    "kinds": copy.deepcopy(list(MATCH_KINDS)),
                    "namespaces": list(namespaces),
                },
                "parameters": _parameters(kind),
            },
        })
    return rendered

