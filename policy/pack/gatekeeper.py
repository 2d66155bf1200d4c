"""Evaluates Gatekeeper ConstraintTemplates with a real Rego engine (regopy, the rego-cpp interpreter), in the input
shape Gatekeeper gives a template (``input.review``, ``input.parameters``, ``data.inventory``, each sourced where it
is built): the policy pack judges the program's workloads with it at preview, and the tests run every suite sample and
every declared workload through it, so preview, tests and the admission webhook read one Rego. ``evaluate_constraint``
is what the pack calls. It imports nothing of the program (the pack runs from its own folder: the vocabulary section
of rules.py).
"""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from regopy import Interpreter

REGO_ENGINE = "Rego"
ADMISSION_TARGET = "admission.k8s.gatekeeper.sh"


class TemplateError(AssertionError):
    """The template has no Rego v1 source, or the engine rejected it or failed while evaluating it."""


def rego_code(template: dict) -> dict:
    """The ``source`` of the template's Rego code entry for the admission target."""
    for target in template["spec"]["targets"]:
        if target.get("target") != ADMISSION_TARGET:
            continue
        for code in target.get("code", []):
            if code.get("engine") == REGO_ENGINE:
                return code["source"]
    raise TemplateError(f"{template['metadata']['name']}: no {REGO_ENGINE} code for {ADMISSION_TARGET}")


def rego_source(template: dict) -> str:
    """The template's Rego, which must be Rego v1: it sits at ``spec.targets[].code[engine=Rego].source.rego`` with
    ``source.version: "v1"`` (Gatekeeper website/docs/constrainttemplates.md, "Enable OPA Rego v1 syntax in
    ConstraintTemplates", Gatekeeper 3.19+). regopy parses Rego v1 only, which is one reason the templates use it."""
    source = rego_code(template)
    if source.get("version") != "v1":
        raise TemplateError(f"{template['metadata']['name']}: Rego source is not marked version v1")
    return source["rego"]


def package(template: dict) -> str:
    """The Rego package the template declares (its first ``package`` line)."""
    for line in rego_source(template).splitlines():
        words = line.split()
        if words[:1] == ["package"] and len(words) == 2:
            return words[1]
    raise TemplateError(f"{template['metadata']['name']}: Rego source declares no package")


def _group_version(obj: dict) -> tuple[str, str]:
    api_version = obj["apiVersion"]
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


def review(obj: dict, namespace: str | None = None, operation: str = "CREATE") -> dict:
    """The ``input.review`` Gatekeeper builds for ``obj``, the admission request under review: ``kind`` ({group,
    version, kind}), ``name``, ``namespace`` (empty for cluster-scoped objects), ``object``, ``operation``
    (https://open-policy-agent.github.io/gatekeeper/website/docs/input/, "Admission Review Input"). ``namespace``
    overrides the object's own (as for ``kubectl apply -n`` of an object without metadata.namespace)."""
    group, version = _group_version(obj)
    metadata = obj.get("metadata", {})
    return {
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "name": metadata.get("name", ""),
        "namespace": namespace if namespace is not None else metadata.get("namespace", ""),
        "operation": operation,
        "object": obj,
    }


def inventory_document(objects: Iterable[dict]) -> dict:
    """``data.inventory`` holding ``objects``, as Gatekeeper holds synced objects: cluster-scoped ones at
    ``data.inventory.cluster[<groupVersion>][<kind>][<name>]``, namespaced ones (those with metadata.namespace) at
    ``data.inventory.namespace[<namespace>][<groupVersion>][<kind>][<name>]`` (website/docs/sync.md, "Accessing
    replicated data")."""
    inventory: dict[str, Any] = {"cluster": {}, "namespace": {}}
    for obj in objects:
        metadata = obj["metadata"]
        if metadata.get("namespace"):
            scope = inventory["namespace"].setdefault(metadata["namespace"], {})
        else:
            scope = inventory["cluster"]
        scope.setdefault(obj["apiVersion"], {}).setdefault(obj["kind"], {})[metadata["name"]] = obj
    return inventory


def _package_of(name: str, source: str) -> str:
    for line in source.splitlines():
        words = line.split()
        if words[:1] == ["package"] and len(words) == 2:
            return words[1]
    raise TemplateError(f"{name}: a Rego module declares no package")


def rego_libs(template: dict) -> list[str]:
    """The library modules of the template's Rego source (``source.libs``), in order: each a module of package
    ``lib.<name>`` the template imports as ``data.lib.<name>`` (open-policy-agent/frameworks
    constraint/pkg/client/drivers/rego/schema/schema.go: "Libs holds supporting code for the main rego library")."""
    return list(rego_code(template).get("libs", []))


def evaluate(template: dict, obj: dict, inventory: Iterable[dict] = (), parameters: dict | None = None,
             namespace: str | None = None) -> list[str]:
    """The violation messages ``template`` reports for ``obj``, sorted.

    ``inventory`` lists the synced cluster objects (RuntimeClasses, ...); ``parameters`` is the
    constraint's spec.parameters, which Gatekeeper gives the template as ``input.parameters`` (Gatekeeper
    website/docs/howto.md, "The parameters field"). A template yields violations through its ``violation`` rule, each an object with ``msg``
    (website/docs/constrainttemplates.md). Match criteria are not applied here: see ``evaluate_constraint``.
    """
    rego = Interpreter()
    name = template["metadata"]["name"]
    try:
        for lib in rego_libs(template):
            if not _package_of(name, lib).startswith("lib."):
                raise TemplateError(f"{name}: a library's package must start with lib.")
            rego.add_module(_package_of(name, lib), lib)
        rego.add_module(package(template), rego_source(template))
        rego.add_data({"inventory": inventory_document(inventory)})
        rego.set_input({"review": review(obj, namespace), "parameters": parameters or {}})
        output = rego.query(f"violations := data.{package(template)}.violation")
    except TemplateError:
        raise
    except Exception as error:  # regopy raises RegoError on parse/compile errors
        raise TemplateError(f"{template['metadata']['name']}: {error}") from error
    if not output.ok():
        raise TemplateError(f"{template['metadata']['name']}: evaluation failed: {output}")
    if not output.results:
        return []
    violations = output.results[0].bindings.get("violations", [])
    for violation in violations:
        if not isinstance(violation, dict) or not isinstance(violation.get("msg"), str):
            raise TemplateError(f"{template['metadata']['name']}: violation without a msg string: {violation!r}")
    return sorted(v["msg"] for v in violations)


def _glob_match(pattern: str, name: str) -> bool:
    # Gatekeeper's namespace matchers take exact names or a trailing-"*" prefix glob (howto.md, "The
    # match field").
    return fnmatch.fnmatchcase(name, pattern) if pattern.endswith("*") else name == pattern


def matches(constraint: dict, obj: dict, namespace: str | None = None) -> bool:
    """Whether the constraint's ``spec.match`` kinds and namespaces select ``obj``. Gatekeeper's match logic beyond
    these is not emulated: kinds and namespaces are the two our constraints use."""
    match = constraint["spec"].get("match", {})
    group, _ = _group_version(obj)
    kinds = match.get("kinds")
    if kinds and not any(
        (group in k.get("apiGroups", []) or "*" in k.get("apiGroups", []))
        and (obj["kind"] in k.get("kinds", []) or "*" in k.get("kinds", []))
        for k in kinds
    ):
        return False
    ns = namespace if namespace is not None else obj.get("metadata", {}).get("namespace", "")
    if match.get("scope") == "Namespaced" and not ns:
        return False
    if "namespaces" in match and not any(_glob_match(p, ns) for p in match["namespaces"]):
        return False
    return not any(_glob_match(p, ns) for p in match.get("excludedNamespaces", []))


def evaluate_constraint(constraint: dict, template: dict, obj: dict, inventory: Iterable[dict] = (),
                        namespace: str | None = None) -> list[str]:
    """What ``constraint`` (an instance of ``template``) reports for ``obj``: nothing when its match does
    not select the object, else the template's violations with the constraint's parameters. Neither mutation nor the
    expansion of workloads into mock pods is emulated: our templates read the pod templates of workload kinds
    themselves, so none is needed."""
    kind = template["spec"]["crd"]["spec"]["names"]["kind"]
    if constraint["kind"] != kind:
        raise TemplateError(f"constraint kind {constraint['kind']} is not {kind}")
    if not matches(constraint, obj, namespace):
        return []
    return evaluate(template, obj, inventory, constraint["spec"].get("parameters", {}), namespace)
