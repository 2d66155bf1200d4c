"""Gatekeeper policy: the ConstraintTemplates under policy/gatekeeper are valid against the shared
ConstraintTemplate CRD, their Rego (v1) is evaluated by a real engine (regopy) in Gatekeeper's input
shape against every sample of their gator suites and against the workloads this program deploys, and
render.policy renders the chart pin, values, Config and prod Constraints consistently with them.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from crd_schema import SCHEMA_DIR, strict_schema, validate_custom_resource
from gatekeeper_eval import (
    TemplateError,
    evaluate,
    evaluate_constraint,
    inventory_document,
    matches,
    package,
    rego_code,
    rego_libs,
    rego_source,
    review,
)

from config import compat
from render import network, policy, scheduling, workloads
from vocab.labels import (
    OS_LABEL,
    WINDOWS_BUILD_LABEL,
    WINDOWS_TAINT_EFFECT,
    WINDOWS_TAINT_KEY,
    WINDOWS_TAINT_VALUE,
)
from vocab.namespaces import parse_quantity

TEMPLATE_SCHEMA = "templates.gatekeeper.sh_v1_ConstraintTemplate.json"
KUBERNETES_VERSION = "1.36.0"
POLICY_DIR = policy.TEMPLATE_DIR
TEMPLATE_FOLDERS = sorted(folder for _, folder in policy.CONSTRAINTS.values())
LIB = POLICY_DIR / "lib" / "placement.rego"
SYNC_ANNOTATION = "metadata.gatekeeper.sh/requires-sync-data"


def _load_all(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def _load_one(path: Path) -> dict:
    docs = _load_all(path)
    assert len(docs) == 1, f"{path} holds {len(docs)} documents, expected one"
    return docs[0]


def _template(folder: str) -> dict:
    return _load_one(POLICY_DIR / folder / "template.yaml")


def _suite_cases() -> list[tuple[str, str, dict, dict]]:
    """(folder, test name, test, case) for every case of every suite."""
    cases = []
    for folder in TEMPLATE_FOLDERS:
        suite = _load_one(POLICY_DIR / folder / "suite.yaml")
        for test in suite["tests"]:
            for case in test["cases"]:
                cases.append((folder, test["name"], test, case))
    return cases


SUITE_CASES = _suite_cases()


# --- the template files --------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_template_is_valid_against_the_strict_crd_schema(folder):
    validate_custom_resource(_template(folder), TEMPLATE_SCHEMA)


def test_strict_schema_catches_a_misspelt_field():
    # The check above only means something if a typo fails it.
    template = _template(TEMPLATE_FOLDERS[0])
    template["spec"]["targets"][0]["codes"] = template["spec"]["targets"][0].pop("code")
    with pytest.raises(AssertionError, match="codes"):
        validate_custom_resource(template, TEMPLATE_SCHEMA)


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_template_uses_rego_v1_in_the_code_field_only(folder):
    template = _template(folder)
    assert template["apiVersion"] == "templates.gatekeeper.sh/v1"
    (target,) = template["spec"]["targets"]
    assert target["target"] == "admission.k8s.gatekeeper.sh"
    # Rego may sit in `rego` or in `code`, not both (CRD description of code); v1 needs `code`.
    assert "rego" not in target
    assert [c["engine"] for c in target["code"]] == ["Rego"]
    source = rego_code(template)
    assert source["version"] == "v1"
    assert set(source) == {"version", "rego", "libs"}


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_template_names_follow_gatekeeper_conventions(folder):
    template = _template(folder)
    kind = template["spec"]["crd"]["spec"]["names"]["kind"]
    # Gatekeeper requires metadata.name to be the lower-cased constraint kind; the library uses the
    # same string as the Rego package.
    assert template["metadata"]["name"] == kind.lower()
    assert package(template) == kind.lower()
    assert policy.CONSTRAINTS[kind][1] == folder


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_rego_references_no_data_but_the_inventory_and_its_library(folder):
    # A template sees only input, data.inventory and its libs (data.lib.<name>).
    template = _template(folder)
    code = "\n".join(line.split("#", 1)[0] for line in rego_source(template).splitlines())
    assert set(re.findall(r"\bdata\.[A-Za-z_.]+", code)) == {"data.lib.placement"}
    lib_code = "\n".join(line.split("#", 1)[0] for line in rego_libs(template)[0].splitlines())
    assert set(re.findall(r"\bdata\.[A-Za-z_]+", lib_code)) == {"data.inventory"}
    assert "http.send" not in code + lib_code  # disabled in the chart's default disabledBuiltins


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_rego_produces_violations_with_msg(folder):
    source = rego_source(_template(folder))
    assert re.search(r'^\s*violation contains \{"msg": msg\} if \{', source, re.MULTILINE)


def test_every_template_carries_the_one_placement_library_verbatim():
    """policy/gatekeeper/lib/placement.rego is the source; each template's libs is that file, byte for byte
    (`python -m tools.rego_libs` copies it), and no template re-declares a helper of its own."""
    from tools import rego_libs as sync
    lib = LIB.read_text()
    assert lib.startswith("package lib.placement\n")
    for folder in TEMPLATE_FOLDERS:
        template = _template(folder)
        assert rego_libs(template) == [lib], f"{folder}: stale copy of lib/placement.rego: run python -m tools.rego_libs"
        assert "import data.lib.placement" in rego_source(template)
        for helper in ("template_kinds :=", "runtime_class :=  data", "term_values(", "expression_allows("):
            assert helper not in rego_source(template), (folder, helper)
    assert sync.stale_templates() == []


def test_the_sync_tool_rewrites_a_stale_copy_and_nothing_else(tmp_path):
    import shutil

    from tools import rego_libs as sync
    root = tmp_path / "gatekeeper"
    shutil.copytree(POLICY_DIR, root)
    target = root / TEMPLATE_FOLDERS[0] / "template.yaml"
    original = target.read_text()
    (root / "lib" / "placement.rego").write_text(LIB.read_text() + "\n# a new line\n")
    assert sync.stale_templates(root) == sorted(root / folder / "template.yaml" for folder in TEMPLATE_FOLDERS)
    assert sync.main(["--root", str(root), "--check"]) == 1
    assert sync.main(["--root", str(root)]) == 0
    assert sync.stale_templates(root) == []
    updated = target.read_text()
    assert updated.startswith(original[: original.index("            libs:")])
    assert rego_libs(yaml.safe_load(updated)) == [LIB.read_text() + "\n# a new line\n"]


def _structural(schema: dict, path: str = "parameters") -> list[str]:
    problems = [] if "type" in schema else [f"{path}: no type"]
    for name, child in schema.get("properties", {}).items():
        problems += _structural(child, f"{path}.{name}")
    if "items" in schema:
        problems += _structural(schema["items"], f"{path}[]")
    return problems


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_parameter_schema_is_structural(folder):
    # v1 templates need a structural parameters schema: a type at every level
    # (website/docs/constrainttemplates.md, "v1 Constraint Template").
    schema = _template(folder)["spec"]["crd"]["spec"]["validation"]["openAPIV3Schema"]
    assert schema["type"] == "object"
    assert _structural(schema) == []


def _sync_requirements(template: dict) -> list[list[dict]]:
    # Parsed the way Gatekeeper does: surrounding newlines and quotes trimmed, then strict JSON into
    # [[{groups, versions, kinds}]] (pkg/cachemanager/parser/syncannotationreader.go).
    raw = template["metadata"]["annotations"][SYNC_ANNOTATION].strip('\n"')
    requirements = json.loads(raw)
    for requirement in requirements:
        for clause in requirement:
            assert set(clause) <= {"groups", "versions", "kinds"}, clause
    return requirements


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_declared_sync_data_is_what_the_config_syncs(folder):
    synced = {(g["group"], g["version"], g["kind"]) for g in policy.sync_config()["spec"]["sync"]["syncOnly"]}
    for requirement in _sync_requirements(_template(folder)):
        options = {(g, v, k) for clause in requirement
                   for g in clause["groups"] for v in clause["versions"] for k in clause["kinds"]}
        assert options & synced, f"{folder} requires one of {options}, none of which is synced"
    source = rego_libs(_template(folder))[0]
    assert 'data.inventory.cluster["node.k8s.io/v1"].RuntimeClass' in source


# --- gator suites, evaluated with regopy --------------------------------------------------------------------

def _expected_violations(assertion: dict) -> str | int:
    # YAML 1.1 loaders (PyYAML here) read the suites' bare yes/no as booleans.
    expected = assertion.get("violations", "yes")
    if expected is True or expected == "yes":
        return "yes"
    if expected is False or expected == "no":
        return "no"
    return int(expected)


def _check_assertion(messages: list[str], assertion: dict) -> None:
    # gator semantics (website/docs/gator.md, "Cases"): `message` is a regular expression searched in
    # each violation message; `violations` is yes (>= 1), no (0) or an exact count of matching ones.
    pattern = assertion.get("message", "")
    matching = [m for m in messages if re.search(pattern, m)] if pattern else list(messages)
    expected = _expected_violations(assertion)
    if expected == "yes":
        assert matching, f"expected a violation matching {pattern!r}, got {messages}"
    elif expected == "no":
        assert not matching, f"expected no violation matching {pattern!r}, got {matching}"
    else:
        assert len(matching) == expected, f"expected {expected} violations matching {pattern!r}, got {matching}"


@pytest.mark.parametrize(("folder", "test_name", "test", "case"), SUITE_CASES,
                         ids=[f"{f}/{c['name']}" for f, _, _, c in SUITE_CASES])
def test_suite_case(folder, test_name, test, case):
    base = POLICY_DIR / folder
    template = _load_one(base / test["template"])
    constraint = _load_one(base / test["constraint"])
    obj = _load_one(base / case["object"])
    inventory = [o for path in case.get("inventory", []) for o in _load_all(base / path)]
    assert matches(constraint, obj), f"{case['object']} is outside the sample constraint's match"
    messages = evaluate_constraint(constraint, template, obj, inventory)
    for assertion in case["assertions"]:
        _check_assertion(messages, assertion)


def _expects_violations(case: dict) -> bool:
    return any(_expected_violations(a) not in ("no", 0) for a in case["assertions"])


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_every_sample_is_a_suite_case_with_the_expectation_its_name_says(folder):
    base = POLICY_DIR / folder
    cases = [c for f, _, _, c in SUITE_CASES if f == folder]
    by_object = {c["object"]: c for c in cases}
    referenced = set(by_object) | {p for c in cases for p in c.get("inventory", [])}
    referenced |= {t["constraint"] for t in _load_one(base / "suite.yaml")["tests"]}
    samples = {str(p.relative_to(base)) for p in (base / "samples").rglob("*.yaml")}
    assert samples == referenced, f"samples not in the suite: {samples - referenced}; missing: {referenced - samples}"
    allowed = [o for o in by_object if Path(o).name.startswith("example_allowed")]
    disallowed = [o for o in by_object if Path(o).name.startswith("example_disallowed")]
    assert allowed and disallowed and len(allowed) + len(disallowed) == len(by_object)
    for obj in allowed:
        assert not _expects_violations(by_object[obj]), obj
        assert [_expected_violations(a) for a in by_object[obj]["assertions"]] == ["no"], obj
    for obj in disallowed:
        assert _expects_violations(by_object[obj]), obj
        # Each rejected sample pins down what the message says, not only that there is one.
        assert any(a.get("message") for a in by_object[obj]["assertions"]), obj


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_sample_objects_are_valid_kubernetes(folder):
    for path in sorted((POLICY_DIR / folder / "samples").rglob("example_*.yaml")):
        for obj in _load_all(path):
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("folder", TEMPLATE_FOLDERS)
def test_sample_constraint_is_the_rendered_constraint_bar_namespaces(folder):
    base = POLICY_DIR / folder
    (test,) = _load_one(base / "suite.yaml")["tests"]
    sample = _load_one(base / test["constraint"])
    (rendered,) = [c for c in policy.constraints("deny", ("win-prod",)) if c["kind"] == sample["kind"]]
    assert sample["apiVersion"] == rendered["apiVersion"]
    assert sample["metadata"]["name"] == rendered["metadata"]["name"]
    assert sample["spec"]["parameters"] == rendered["spec"]["parameters"]
    assert sample["spec"]["match"]["kinds"] == rendered["spec"]["match"]["kinds"]
    assert sample["spec"]["match"]["scope"] == rendered["spec"]["match"]["scope"]


# --- the engine itself, and Gatekeeper's input shape ----------------------------------------------------------

def test_review_has_gatekeepers_fields():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "win-prod"}}
    assert review(deployment) == {
        "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
        "name": "a", "namespace": "win-prod", "operation": "CREATE", "object": deployment,
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert review(pod, namespace="linux-prod")["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert review(pod, namespace="linux-prod")["namespace"] == "linux-prod"


def test_inventory_document_has_the_synced_data_layout():
    rc = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "win2022"}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
    assert inventory_document([rc, cm]) == {
        "cluster": {"node.k8s.io/v1": {"RuntimeClass": {"win2022": rc}}},
        "namespace": {"n": {"v1": {"ConfigMap": {"c": cm}}}},
    }


def test_engine_rejects_a_broken_template():
    template = copy.deepcopy(_template(TEMPLATE_FOLDERS[0]))
    code = template["spec"]["targets"][0]["code"][0]["source"]
    code["rego"] = code["rego"].replace("violation contains", "violation contains contains", 1)
    with pytest.raises(TemplateError):
        evaluate(template, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})


def _pod(namespace: str, spec: dict, kind: str = "Pod") -> dict:
    pod_spec = {"containers": [{"name": "c", "image": "mcr.microsoft.com/windows/nanoserver:ltsc2022"}], **spec}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace}, "spec": pod_spec}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w", "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec}}}


REQUIRED_OS = "requirednodeselector"
TOLERATION = "windowstoleration"
IMAGE_BUILD = "windowsimagebuild"


def _runtime_classes() -> list[dict]:
    return scheduling.runtime_classes([scheduling.WindowsBuildParams("win2019", "10.0.17763"),
                                       scheduling.WindowsBuildParams("win2022", "10.0.20348")])


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"])
def test_every_matched_kind_has_its_pod_spec_read(kind):
    unplaced = _pod("linux-prod", {}, kind)
    placed = _pod("linux-prod", {"nodeSelector": {OS_LABEL: "linux"}}, kind)
    assert evaluate(_template(REQUIRED_OS), unplaced)
    assert evaluate(_template(REQUIRED_OS), placed) == []


def test_namespace_comes_from_the_request_when_the_object_has_none():
    pod = _pod("", {"nodeSelector": {OS_LABEL: "linux"}})
    del pod["metadata"]["namespace"]
    messages = evaluate(_template(TOLERATION), pod, namespace="win-prod")
    assert any("namespace win-prod, which holds Windows workloads" in m for m in messages)


@pytest.mark.parametrize(("toleration", "tolerated"), [
    ({"key": WINDOWS_TAINT_KEY, "operator": "Equal", "value": WINDOWS_TAINT_VALUE, "effect": WINDOWS_TAINT_EFFECT}, True),
    ({"key": WINDOWS_TAINT_KEY, "value": WINDOWS_TAINT_VALUE}, True),       # operator defaults to Equal, any effect
    ({"key": WINDOWS_TAINT_KEY, "operator": "Exists"}, True),
    ({"operator": "Exists"}, True),                                         # empty key + Exists: every taint
    ({"key": WINDOWS_TAINT_KEY, "operator": "Equal", "value": "false"}, False),
    ({"key": WINDOWS_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "node-role.kubernetes.io/other", "operator": "Exists"}, False),
])
def test_toleration_matching_follows_the_kubernetes_rules(toleration, tolerated):
    pod = _pod("win-prod", {"nodeSelector": {OS_LABEL: "windows"}, "tolerations": [toleration]})
    messages = evaluate(_template(TOLERATION), pod)
    assert (messages == []) is tolerated, messages


@pytest.mark.parametrize(("image", "builds"), [
    ("mcr.microsoft.com/windows/servercore:ltsc2019", {"10.0.17763"}),
    ("mcr.microsoft.com/windows/nanoserver:1809", {"10.0.17763"}),
    ("mcr.microsoft.com/windows/nanoserver:10.0.17763.437", {"10.0.17763"}),
    ("mcr.microsoft.com/dotnet/aspnet:10.0-windowsservercore-ltsc2022", {"10.0.20348"}),
    ("mcr.microsoft.com/dotnet/samples:aspnetapp-10.0-nanoserver-ltsc2022", {"10.0.20348"}),
    ("mcr.microsoft.com/windows/servercore:10.0.20348.1809", {"10.0.20348"}),   # revision, not version 1809
    ("mcr.microsoft.com/windows/nanoserver:LTSC2025", {"10.0.26100"}),
    ("harbor.hk-prod.internal:5000/mcr-proxy/windows/nanoserver", set()),        # registry port, no tag
    ("mcr.microsoft.com/dotnet/aspnet:10.0", set()),
    ("mcr.microsoft.com/windows/nanoserver@sha256:" + "0" * 64, set()),
])
def test_image_tag_builds(image, builds):
    # Pinned to a build that is none of these, a Windows pod is refused exactly when the tag names one.
    pod = _pod("win-prod", {"nodeSelector": {OS_LABEL: "windows", WINDOWS_BUILD_LABEL: "10.0.99999"}})
    pod["spec"]["containers"][0]["image"] = image
    messages = evaluate(_template(IMAGE_BUILD), pod)
    assert {m.split("built for Windows ")[1].split(",")[0] for m in messages} == builds, messages


# --- render.policy --------------------------------------------------------------------------------------------

def test_templates_are_the_files_with_a_readiness_wait():
    rendered = policy.templates()
    assert [t["spec"]["crd"]["spec"]["names"]["kind"] for t in rendered] == sorted(policy.CONSTRAINTS)
    for template in rendered:
        annotations = template["metadata"]["annotations"]
        assert annotations[policy.PULUMI_WAIT_FOR] == "jsonpath={.status.created}=true"
        validate_custom_resource(template, TEMPLATE_SCHEMA)
        on_disk = _template(policy.CONSTRAINTS[template["spec"]["crd"]["spec"]["names"]["kind"]][1])
        del annotations[policy.PULUMI_WAIT_FOR]
        assert template == on_disk
    # status.created is what the wait reads; it must exist in the CRD's status schema.
    status = strict_schema(json.loads((SCHEMA_DIR / TEMPLATE_SCHEMA).read_text()))["properties"]["status"]
    assert status["properties"]["created"]["type"] == "boolean"


@pytest.mark.parametrize("action", policy.ENFORCEMENT_ACTIONS)
def test_constraints_for_the_prod_namespaces(action):
    namespaces = ("win-prod", "linux-prod")
    rendered = policy.constraints(action, namespaces)
    assert sorted(c["kind"] for c in rendered) == sorted(policy.CONSTRAINTS)
    assert len({c["metadata"]["name"] for c in rendered}) == 3
    templates = {t["spec"]["crd"]["spec"]["names"]["kind"]: t for t in policy.templates()}
    for constraint in rendered:
        assert constraint["apiVersion"] == "constraints.gatekeeper.sh/v1beta1"
        assert constraint["spec"]["enforcementAction"] == action
        match = constraint["spec"]["match"]
        assert match["namespaces"] == list(namespaces) and match["scope"] == "Namespaced"
        kinds = {(g, k) for entry in match["kinds"] for g in entry["apiGroups"] for k in entry["kinds"]}
        assert kinds == {("", "Pod"), ("", "ReplicationController"), ("apps", "Deployment"),
                         ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet"),
                         ("batch", "Job"), ("batch", "CronJob")}
        # The API server validates parameters against the template's schema; do the same, strictly.
        schema = strict_schema(templates[constraint["kind"]]["spec"]["crd"]["spec"]["validation"]["openAPIV3Schema"])
        jsonschema.Draft202012Validator(schema).validate(constraint["spec"]["parameters"])


def test_constraint_parameters_carry_the_cluster_vocabulary():
    by_kind = {c["kind"]: c["spec"]["parameters"] for c in policy.constraints("warn", ("win-prod",))}
    assert by_kind["K8sRequiredNodeSelector"] == {"operatingSystems": ["linux", "windows"]}
    taint = by_kind["K8sWindowsToleration"]["taint"]
    assert taint == {"key": WINDOWS_TAINT_KEY, "value": WINDOWS_TAINT_VALUE, "effect": WINDOWS_TAINT_EFFECT}
    builds = {b["build"]: b["tagMarkers"] for b in by_kind["K8sWindowsImageBuild"]["builds"]}
    # Every Windows build the compatibility matrix knows has tag markers.
    assert {w.build for w in compat.WINDOWS.values()} <= set(builds)
    assert builds["10.0.17763"] == ["ltsc2019", "1809", "10.0.17763"]
    assert builds["10.0.20348"] == ["ltsc2022", "10.0.20348"]


@pytest.mark.parametrize(("action", "namespaces"), [
    ("enforce", ("win-prod",)), ("", ("win-prod",)), ("deny", ()), ("deny", ("Win-Prod",)),
    ("deny", ("win-prod", "win-prod")),
])
def test_constraints_refuse_bad_input(action, namespaces):
    with pytest.raises(ValueError):
        policy.constraints(action, namespaces)





def test_gatekeeper_values_keep_every_pod_on_linux():
    values = policy.gatekeeper_values(budget=True)
    for component in ("controllerManager", "audit", "postInstall", "postUpgrade", "preUninstall", "crds"):
        assert values[component]["nodeSelector"] == {OS_LABEL: "linux"}, component
    for component in ("controllerManager", "audit"):
        resources = values[component]["resources"]
        assert set(resources["requests"]) == {"cpu", "memory"}
        assert parse_quantity(resources["limits"]["memory"]) >= parse_quantity(
            resources["requests"]["memory"])
        assert "cpu" not in resources["limits"]
    assert values["auditMatchKindOnly"] is True
    assert values["controllerManager"]["resources"] is not values["audit"]["resources"]


def test_sync_config_syncs_runtime_classes_into_the_inventory():
    config = policy.sync_config()
    assert config["apiVersion"] == "config.gatekeeper.sh/v1alpha1" and config["kind"] == "Config"
    # Gatekeeper reconciles only a Config named "config" in its own namespace (website/docs/sync.md).
    assert config["metadata"] == {"name": "config", "namespace": policy.GATEKEEPER_NAMESPACE}
    assert config["spec"]["sync"]["syncOnly"] == [{"group": "node.k8s.io", "version": "v1", "kind": "RuntimeClass"}]


# --- this program's own workloads -----------------------------------------------------------------------------

SAMPLES = workloads.SampleParams(
    win_namespace="win-prod", linux_namespace="linux-prod", win_runtime_class="win2022",
    win_image=compat.SAMPLE_WINDOWS_IMAGE, linux_image=compat.SAMPLE_LINUX_IMAGE,
)


def _program_workloads() -> list[dict]:
    objects = workloads.api_win(SAMPLES) + workloads.api_linux(SAMPLES)
    version = "1.36.4"
    for build in compat.WINDOWS.values():
        if build.kube_proxy_image:
            objects += network.windows_kube_proxy(version, build.kube_proxy_image, "10.244.0.0/16")
            break
    return objects


def _pod_workloads(objects: list[dict]) -> list[dict]:
    return [o for o in objects if o["kind"] in ("Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet",
                                                 "Job", "CronJob")]


def test_program_workloads_pass_every_prod_constraint():
    objects = _program_workloads()
    templates = {t["spec"]["crd"]["spec"]["names"]["kind"]: t for t in policy.templates()}
    constraints = policy.constraints("deny", (SAMPLES.win_namespace, SAMPLES.linux_namespace))
    checked = 0
    for constraint in constraints:
        for obj in objects:
            assert evaluate_constraint(constraint, templates[constraint["kind"]], obj, _runtime_classes()) == [], (
                constraint["kind"], obj["kind"], obj["metadata"]["name"])
            checked += matches(constraint, obj)
    # Both sample Deployments are matched by all three constraints; Services and kube-system are not.
    assert checked == 2 * len(constraints)


def test_program_pod_workloads_are_placed_correctly_wherever_they_run():
    # kube-system is outside the prod constraints, but Windows kube-proxy must still be placeable.
    for template in policy.templates():
        for obj in _pod_workloads(_program_workloads()):
            assert evaluate(template, obj, _runtime_classes()) == [], (template["metadata"]["name"], obj["metadata"])


def test_program_workloads_are_refused_once_broken():
    # The same objects, broken the ways the constraints exist for, are refused with a message saying so.
    win, _, linux, _ = workloads.api_win(SAMPLES) + workloads.api_linux(SAMPLES)
    templates = {folder: _template(folder) for folder in TEMPLATE_FOLDERS}

    no_os = copy.deepcopy(linux)
    del no_os["spec"]["template"]["spec"]["nodeSelector"]
    assert any("does not choose an operating system" in m for m in evaluate(templates[REQUIRED_OS], no_os))

    wrong_build = copy.deepcopy(win)
    wrong_build["spec"]["template"]["spec"]["runtimeClassName"] = "win2019"
    assert any("pinned to node.kubernetes.io/windows-build=10.0.17763" in m
               for m in evaluate(templates[IMAGE_BUILD], wrong_build, _runtime_classes()))

    no_runtime_class = copy.deepcopy(win)
    del no_runtime_class["spec"]["template"]["spec"]["runtimeClassName"]
    no_runtime_class["spec"]["template"]["spec"]["nodeSelector"] = {OS_LABEL: "windows"}
    assert any("does not tolerate their taint" in m
               for m in evaluate(templates[TOLERATION], no_runtime_class, _runtime_classes()))

    linux_in_win = copy.deepcopy(linux)
    linux_in_win["metadata"]["namespace"] = SAMPLES.win_namespace
    assert any("which holds Windows workloads" in m for m in evaluate(templates[TOLERATION], linux_in_win))


# --- the samples wait until the policy admits pods like theirs ---------------------------------------------

def _sample_pods():
    params = workloads.SampleParams(
        win_namespace="win-prod", linux_namespace="linux-prod", win_runtime_class="win2022",
        win_image=compat.SAMPLE_WINDOWS_IMAGE, linux_image=compat.SAMPLE_LINUX_IMAGE,
        linux_distros=("ubuntu22", "rocky9"), host=None)
    return policy.probe_pods([*workloads.api_win(params), *workloads.api_linux(params)])


def test_probe_pods_are_the_sample_pod_templates_and_pass_strict_validation():
    import kubernetes_validate
    pods = _sample_pods()
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods] == [
        ("win-prod", "api-win-admission-probe"), ("linux-prod", "api-linux-admission-probe")]
    for pod in pods:
        kubernetes_validate.validate(copy.deepcopy(pod), "1.36.0", strict=True)
    assert pods[0]["spec"]["runtimeClassName"] == "win2022"


def _run_probe(tmp_path, script: str, refusals: int):
    import shutil
    import subprocess
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (tmp_path / "etc" / "kubernetes").mkdir(parents=True)
    (tmp_path / "etc" / "kubernetes" / "admin.conf").write_text("apiVersion: v1\n")
    (stubs / "kubectl").write_text(f"""#!/usr/bin/env bash
set -euo pipefail
count=$(( $(cat "$STUBS/count" 2>/dev/null || echo 0) + 1 ))
echo "$count" >"$STUBS/count"
printf '%s\\n' "$*" >>"$STUBS/calls"
cat >>"$STUBS/stdin"
if (( count <= {refusals} )); then
  echo 'admission webhook "validation.gatekeeper.sh" denied the request: RuntimeClass win2022 does not exist' >&2
  exit 1
fi
echo "pod/probe created (server dry run)"
""")
    (stubs / "sleep").write_text("#!/usr/bin/env bash\n/bin/sleep 0.3\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    from tests.validators import TEST_ROOT_VARIABLE
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "STUBS": str(stubs), TEST_ROOT_VARIABLE: str(tmp_path)}
    result = subprocess.run([shutil.which("bash"), "-c", script], env=env, capture_output=True, text=True, timeout=60)
    calls = (stubs / "calls").read_text().splitlines() if (stubs / "calls").exists() else []
    return result, calls, stubs


def test_the_probe_retries_refusals_until_every_pod_is_admitted_and_creates_nothing(tmp_path):
    from tests.validators import shellcheck
    script = policy.render_admission_probe(_sample_pods())
    (tmp_path / "probe.sh").write_text(script)
    shellcheck(tmp_path / "probe.sh")
    result, calls, stubs = _run_probe(tmp_path, script, refusals=2)
    assert result.returncode == 0, result.stderr
    assert len(calls) == 4  # two refusals, then each of the two pods once
    assert all("create --dry-run=server -o name -f -" in call for call in calls)
    assert result.stdout.count("admitted (dry run)") == 2
    assert '"runtimeClassName": "win2022"' in (stubs / "stdin").read_text()


def test_the_probe_fails_loudly_with_the_last_refusal_when_the_policy_never_admits(tmp_path):
    script = policy.render_admission_probe(_sample_pods(), timeout_seconds=1)
    result, calls, _ = _run_probe(tmp_path, script, refusals=1000)
    assert result.returncode != 0
    assert "RuntimeClass win2022 does not exist" in result.stderr
    assert "still refused after 1s" in result.stderr
    assert 2 <= len(calls) < 20


def test_the_probe_refuses_what_it_cannot_probe():
    with pytest.raises(ValueError):
        policy.render_admission_probe([])
    with pytest.raises(ValueError):
        policy.render_admission_probe(_sample_pods(), timeout_seconds=0)
