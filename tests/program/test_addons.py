"""Every optional section alone and with each other one: what each add-on needs is declared (config/rules.py NEEDS)
and, once declared, present in the program and awaited before it is used (#39 item 1)."""
import copy
import itertools

import pytest

from config import compat
from config.loader import load
from config.rules import HELM_RELEASE_NAME_MAX, HELM_RELEASES, NEEDS, helm_releases
from tests.conftest import hk_prod_values, problems, raw_config
from tools.mock.program import Recording, run_program

# The optional sections, as key paths of the stack file; resourceMetrics is on unless switched off. Each as hk-prod
# has it, and tls.acme as below (hk-prod's tls is `ca`).
OPTIONAL = ("storage", "observability.metrics", "observability.logs", "policy", "tls", "loadBalancer", "workloads",
            "resourceMetrics", "customMetrics", "progressiveDelivery", "tracing", "etcdBackup", "backup")
ACME = {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com"}


def _get(values: dict, path: str):
    head, _, rest = path.partition(".")
    return values.get(head) if not rest else (values.get(head) or {}).get(rest)


def _put(values: dict, source: dict, path: str) -> None:
    head, _, rest = path.partition(".")
    if not rest:
        values[head] = copy.deepcopy(source[head])
    else:
        values.setdefault(head, {})[rest] = copy.deepcopy(source[head][rest])


def with_sections(*paths: str) -> dict:
    """hk-prod with only `paths` of the optional sections (and what each needs, config/rules.py NEEDS), each as hk-prod
    has it."""
    source = hk_prod_values()
    values = copy.deepcopy(source)
    for path in OPTIONAL:
        values.pop(path.partition(".")[0], None)
    values["resourceMetrics"] = {"enabled": False}
    wanted = list(paths)
    while wanted:
        path = wanted.pop()
        if path == "resourceMetrics":
            values["resourceMetrics"] = {"enabled": True}
        elif path == "tls.acme":
            values["tls"] = {"acme": ACME}
        else:
            _put(values, source, path)
        wanted += [need for need, _ in NEEDS.get(path, ()) if need not in paths]
    return values


def test_every_optional_section_of_hk_prod_is_one_this_test_knows():
    source = hk_prod_values()
    assert all(_get(source, path) is not None for path in OPTIONAL if path != "resourceMetrics")
    assert set(NEEDS) <= {*OPTIONAL, "tls.acme"} and all(n in OPTIONAL for needs in NEEDS.values() for n, _ in needs)


# Where each API group's CustomResourceDefinitions come from: the chart (config.compat.CHARTS key) that installs them.
# constraints.gatekeeper.sh's come from each ConstraintTemplate (Gatekeeper makes one CRD per template).
CRD_CHARTS = {
    "projectcalico.org": "calico-crds", "crd.projectcalico.org": "calico-crds", "operator.tigera.io": "tigera-operator",
    "gateway.networking.k8s.io": "envoy-gateway-crds", "gateway.envoyproxy.io": "envoy-gateway-crds",
    "cert-manager.io": "cert-manager", "acme.cert-manager.io": "cert-manager", "policy.cert-manager.io": "approver-policy",
    "monitoring.coreos.com": "kube-prometheus-stack", "metallb.io": "metallb", "velero.io": "velero", "keda.sh": "keda",
    "argoproj.io": "argo-rollouts", "templates.gatekeeper.sh": "gatekeeper", "config.gatekeeper.sh": "gatekeeper",
    "mutations.gatekeeper.sh": "gatekeeper", "longhorn.io": "longhorn",
}
# What a release's own values make it need at start-up: (chart, predicate on its values, API group).
VALUE_NEEDS = (
    # cert-manager v1.21.1 exits when its Gateway API support is on and the CRDs are absent (pkg/controller/context.go).
    ("cert-manager", lambda v: v.get("config", {}).get("gatewayAPI", {}).get("enabled"), "gateway.networking.k8s.io"),
)
# What an object reads at run time, from a release that need not be awaited but must be in the program: (predicate on
# the resource, chart, why).
RUNTIME_NEEDS = (
    (lambda r: r.type.endswith(":HorizontalPodAutoscaler")
     and any(m["type"] == "Resource" for m in r.inputs["spec"].get("metrics", ())),
     "metrics-server", "the resource metrics API"),
    (lambda r: r.type.endswith(":ScaledObject")
     and any(t["type"] == "prometheus" for t in r.inputs["spec"]["triggers"]), "kube-prometheus-stack", "Prometheus"),
    (lambda r: r.type.endswith(":ScaledObject")
     and any(t["type"] == "cpu" for t in r.inputs["spec"]["triggers"]), "metrics-server", "the resource metrics API"),
)
BUILT_IN_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


def _is_chart(resource, key: str) -> bool:
    chart = compat.CHARTS[key]
    return resource.type.startswith("kubernetes:helm.sh/") and resource.inputs.get("chart") in {
        chart.chart, chart.archive, f"{chart.repo}/{chart.chart}"}


def dependency_problems(recording: Recording) -> list[str]:
    """Each custom resource, and each release whose values need an API group, waits for what installs that group's
    CRDs; each namespaced object waits for what creates its namespace; what an object reads at run time is installed."""
    found: list[str] = []
    templates = {r.inputs["spec"]["crd"]["spec"]["names"]["kind"]: r
                 for r in recording.by_type("kubernetes:templates.gatekeeper.sh/v1:ConstraintTemplate")}

    def needs(resource, group: str, what: str) -> None:
        if group == "constraints.gatekeeper.sh":
            sources = [templates[what]] if what in templates else []
        else:
            sources = [r for r in recording.resources if _is_chart(r, CRD_CHARTS[group])]
        if not sources:
            found.append(f"{resource.name}: no resource installs {group}'s CRDs ({what})")
        elif not any(s.urn in recording.waits_for(resource.urn) for s in sources):
            found.append(f"{resource.name}: does not wait for {sources[0].name}, which installs {group} ({what})")

    namespaces: dict[str, list] = {}
    for r in recording.resources:
        if r.type == "kubernetes:core/v1:Namespace":
            namespaces.setdefault(r.inputs["metadata"]["name"], []).append(r)
        elif r.type.startswith("kubernetes:helm.sh/") and r.inputs.get("namespace"):
            namespaces.setdefault(r.inputs["namespace"], []).append(r)
    for r in recording.resources:
        if not r.type.startswith("kubernetes:"):
            continue
        api, kind = r.type.removeprefix("kubernetes:").rsplit(":", 1)
        group = api.rpartition("/")[0]
        if "." in group and not group.endswith(".k8s.io") and group != "helm.sh":
            needs(r, group, kind)
        for key, predicate, needed in VALUE_NEEDS:
            if _is_chart(r, key) and predicate(r.inputs.get("values") or {}):
                needs(r, needed, f"values of {key}")
        for predicate, key, what in RUNTIME_NEEDS:
            if predicate(r) and not any(_is_chart(c, key) for c in recording.resources):
                found.append(f"{r.name}: reads {what}, and no {key} is installed")
        metadata = r.inputs.get("metadata")
        namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
        if isinstance(namespace, str) and namespace not in BUILT_IN_NAMESPACES:
            creators = [c for c in namespaces.get(namespace, ()) if c is not r]
            if not creators:
                found.append(f"{r.name}: nothing creates its namespace {namespace}")
            elif not any(c.urn in recording.waits_for(r.urn) for c in creators):
                found.append(f"{r.name}: does not wait for {creators[0].name}, which creates its namespace {namespace}")
    return found


def test_hk_prod_meets_every_dependency(hk_recording):
    assert dependency_problems(hk_recording) == []


def longest_cluster_name(values: dict) -> int:
    """The longest cluster name config/rules.py allows for these sections."""
    spec = load(raw_config(values)).spec
    return HELM_RELEASE_NAME_MAX - max(len(name) - len(spec.cluster.name) for _, name in helm_releases(spec))


def release_names(recording: Recording) -> set[str]:
    return {r.inputs["name"] for r in recording.resources if r.type == "kubernetes:helm.sh/v3:Release"}


def name_problems(recording: Recording) -> list[str]:
    """Names past their limits: a Helm release's 53, an object name's 253 (a DNS subdomain), a label value's 63, a
    VM's 63 (its host name, a DNS label)."""
    found = [f"release {n}: {len(n)} > {HELM_RELEASE_NAME_MAX}" for n in release_names(recording)
             if len(n) > HELM_RELEASE_NAME_MAX]
    for r in recording.resources:
        metadata = r.inputs.get("metadata") if r.type.startswith("kubernetes:") else None
        if isinstance(metadata, dict):
            if len(metadata.get("name") or "") > 253:
                found.append(f"{r.name}: object name over 253")
            found += [f"{r.name}: label {k} over 63" for k, v in (metadata.get("labels") or {}).items()
                      if isinstance(v, str) and len(v) > 63]
        if r.type == "proxmoxve:index/vmLegacy:VmLegacy" and len(r.inputs["name"]) > 63:
            found.append(f"{r.name}: VM name over 63")
    return found


@pytest.mark.parametrize("section", [*OPTIONAL, "tls.acme"])
def test_each_optional_section_alone_loads_renders_and_meets_its_dependencies(section):
    """At the longest cluster name the section allows and a 63-character node name: every name within its limit,
    the longest release exactly at Helm's (the rule is no stricter than it must be), and the releases rendered those
    config/rules.py HELM_RELEASES says the stack has."""
    values = with_sections(section)
    values["cluster"]["name"] = "c" * longest_cluster_name(values)
    values["nodes"]["linux"][0]["name"] = "n" * 63
    assert problems(values) == []
    recording = run_program(raw_config(values))
    assert dependency_problems(recording) == []
    assert name_problems(recording) == []
    releases = release_names(recording)
    assert releases == {name for _, name in helm_releases(load(raw_config(values)).spec)}
    assert max(len(n) for n in releases) == HELM_RELEASE_NAME_MAX


def test_every_section_with_releases_is_one_the_stack_file_has():
    """Each key of HELM_RELEASES is a section of the stack file that section_on can read (a misspelt key would never
    be on, and its releases never counted)."""
    from config.model import StackSpec
    from config.rules import section_on
    spec = load(raw_config(hk_prod_values())).spec
    assert isinstance(spec, StackSpec)
    assert all(section_on(spec, s) for s in HELM_RELEASES if s is not None)


def test_every_section_together_at_the_longest_cluster_name():
    values = hk_prod_values()
    values["cluster"]["name"] = "c" * longest_cluster_name(values)
    values["nodes"]["linux"][0]["name"] = "n" * 63
    recording = run_program(raw_config(values))
    assert name_problems(recording) == [] and max(len(n) for n in release_names(recording)) == HELM_RELEASE_NAME_MAX


def test_a_cluster_name_too_long_for_the_sections_is_refused_with_its_limit():
    """One character past the limit each section's releases set is refused at cluster.name, naming the release
    and the limit; the same name is accepted without that section (an existing cluster's name is not refused for
    a release it does not have: 439599a's fixed limit did that)."""
    for section in OPTIONAL:
        values = with_sections(section)
        room = longest_cluster_name(values)
        values["cluster"]["name"] = "c" * (room + 1)
        refused = [p for p in problems(values) if p.startswith("cluster.name:")]
        assert len(refused) == 1 and f"at most {room} characters" in refused[0] and "past Helm's 53" in refused[0]
    values = with_sections("observability.metrics")
    values["cluster"]["name"] = "homelab-production-cluster"     # 26 characters: 26 + 36 is past 53
    assert any("with observability.metrics on, the Helm release homelab-production-cluster-observability-kube-"
               "prometheus-stack would have 62" in p for p in problems(values))
    del values["observability"]
    assert problems(values) == []


PAIRS = list(itertools.combinations(OPTIONAL, 2))


def test_each_pair_of_optional_sections_loads():
    for pair in PAIRS:
        assert problems(with_sections(*pair)) == [], pair


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_each_pair_of_optional_sections_renders_and_meets_its_dependencies(pair):
    assert dependency_problems(run_program(raw_config(with_sections(*pair)))) == []


@pytest.mark.parametrize("section, needed", [(s, n) for s, needs in NEEDS.items() for n, _ in needs])
def test_a_section_without_what_it_needs_is_refused_at_its_key_path(section, needed):
    values = with_sections(section)
    if needed == "resourceMetrics":
        values["resourceMetrics"] = {"enabled": False}
    else:
        head, _, rest = needed.partition(".")
        if rest:
            del values[head][rest]
        else:
            del values[head]
    reason = dict(NEEDS[section])[needed]
    assert any(p.startswith(f"{section}: {reason}") for p in problems(values)), problems(values)


def test_the_cluster_names_documented_limits_are_the_rules():
    from config.model import ClusterSpec
    described = " ".join((ClusterSpec.model_fields["name"].description or "").split())
    assert f"up to {longest_cluster_name(with_sections('resourceMetrics'))} characters with the defaults" in described
    assert f"{longest_cluster_name(with_sections())} with resourceMetrics off and no optional section" in described
    assert f"at most {longest_cluster_name(with_sections('observability.metrics'))} with observability.metrics" in described
    assert longest_cluster_name(hk_prod_values()) == longest_cluster_name(with_sections("observability.metrics"))
