"""render.metrics: every PromQL expression parses (promql-parser, the Rust PromQL parser), built-in objects
pass kubernetes-validate strictly for the cluster's 1.36, the CRD objects have the structure
prometheus-operator's API documents, every pod the chart creates selects Linux, windows-exporter selects
Windows and tolerates the Windows taint, and the dashboard only reads metrics its collectors produce."""
from __future__ import annotations

import copy
import json
import re

import kubernetes_validate
import promql_parser
import pytest
import yaml

from config import compat
from render import etcd_backup, metrics
from render.scheduling import PSA_MODES
from vocab.labels import OS_LABEL, WINDOWS_TAINT_EFFECT, WINDOWS_TAINT_KEY, WINDOWS_TAINT_VALUE

VALIDATE_VERSION = "1.36.0"
IMAGE = compat.WINDOWS["win2022"].windows_exporter_image


def exporter_values() -> dict:
    return metrics.kube_prometheus_stack_values(windows_exporter_image=IMAGE)["prometheus-windows-exporter"]


def dig(values: dict, path: tuple[str, ...]) -> dict:
    for key in path:
        values = values[key]
    return values


def selectors(expr: str) -> list[promql_parser.VectorSelector]:
    found: list[promql_parser.VectorSelector] = []

    def visit(node):
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def metric_names(expr: str) -> set[str]:
    return {s.name for s in selectors(expr)}


SNAPSHOTS = metrics.etcd_snapshot_alerts(etcd_backup.SNAPSHOT_METRIC, 12)


def all_rules() -> list[dict]:
    return [rule for group in metrics.alert_rules(SNAPSHOTS)["spec"]["groups"] for rule in group["rules"]]


def dashboard_model() -> dict:
    return json.loads(metrics.windows_dashboard()["data"]["windows-nodes.json"])


def grafana_expr(expr: str) -> str:
    """A dashboard query as Prometheus receives it: Grafana substitutes its template variables first."""
    return expr.replace("$__rate_interval", "5m").replace("$node", ".*")


def dashboard_exprs() -> list[str]:
    return [target["expr"] for panel in dashboard_model()["panels"] for target in panel["targets"]]


# --- PromQL ------------------------------------------------------------------------------------------------

def test_the_parser_rejects_broken_promql():
    # Guards the tests below: a parser that accepted anything would prove nothing.
    with pytest.raises(ValueError):
        promql_parser.parse("sum(rate(windows_cpu_time_total[5m])")
    with pytest.raises(ValueError):
        promql_parser.parse('up{job="a"} and on (node')


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r["alert"])
def test_every_alert_expression_parses(rule):
    assert selectors(rule["expr"]), rule["expr"]


@pytest.mark.parametrize("expr", dashboard_exprs())
def test_every_dashboard_expression_parses(expr):
    assert selectors(grafana_expr(expr))


def test_etcd_snapshot_alerts_read_the_metric_the_snapshot_program_writes():
    stale, missing = SNAPSHOTS["rules"]
    assert metric_names(stale["expr"]) == {etcd_backup.SNAPSHOT_METRIC}
    assert stale["expr"].endswith(f"> {12 * 3600}"), "twice the default six-hourly period, in seconds"
    # A node that never stored one is found through kube-state-metrics' control-plane role.
    assert metric_names(missing["expr"]) == {"kube_node_role", etcd_backup.SNAPSHOT_METRIC}
    assert missing["for"] == "12h"
    for rule in SNAPSHOTS["rules"]:
        for selector in selectors(rule["expr"]):
            if selector.name == etcd_backup.SNAPSHOT_METRIC:
                assert 'job="node-exporter"' in str(selector)
    assert "hybrid-etcd-snapshots" not in [g["name"] for g in metrics.alert_rules()["spec"]["groups"]]
    with pytest.raises(ValueError, match="positive"):
        metrics.etcd_snapshot_alerts(etcd_backup.SNAPSHOT_METRIC, 0)


def test_the_node_variable_query_names_an_exported_metric():
    variable = next(v for v in dashboard_model()["templating"]["list"] if v["name"] == "node")
    match = re.fullmatch(r"label_values\((.+), node\)", variable["query"]["query"])
    assert match, variable["query"]
    assert metric_names(match.group(1)) <= set(metrics.WINDOWS_METRIC_COLLECTOR)


# --- windows_exporter metrics come from enabled collectors -------------------------------------------------

def windows_metrics_in(exprs: list[str]) -> set[str]:
    return {name for expr in exprs for name in metric_names(grafana_expr(expr)) if name.startswith("windows_")}


def test_every_dashboard_panel_reads_windows_exporter_metrics_of_enabled_collectors():
    for panel in dashboard_model()["panels"]:
        for target in panel["targets"]:
            names = metric_names(grafana_expr(target["expr"]))
            assert names and all(n.startswith("windows_") for n in names), (panel["title"], names)
            for name in names:
                assert metrics.WINDOWS_METRIC_COLLECTOR[name] in metrics.WINDOWS_EXPORTER_COLLECTORS, name


def test_alerts_read_only_windows_metrics_of_enabled_collectors():
    used = windows_metrics_in([r["expr"] for r in all_rules()])
    assert used == {"windows_logical_disk_free_bytes", "windows_logical_disk_size_bytes"}
    assert all(metrics.WINDOWS_METRIC_COLLECTOR[name] in metrics.WINDOWS_EXPORTER_COLLECTORS for name in used)


def test_the_dashboard_covers_cpu_memory_disk_and_network():
    used = windows_metrics_in(dashboard_exprs())
    assert {metrics.WINDOWS_METRIC_COLLECTOR[name] for name in used} == {"cpu", "memory", "logical_disk", "net"}


def test_windows_queries_select_the_exporters_job():
    for expr in dashboard_exprs() + [r["expr"] for r in all_rules()]:
        for selector in selectors(grafana_expr(expr)):
            if selector.name.startswith("windows_"):
                assert f'job="{metrics.WINDOWS_EXPORTER_JOB}"' in str(selector), str(selector)


def test_the_removed_cs_collector_is_not_enabled():
    assert "cs" not in metrics.WINDOWS_EXPORTER_COLLECTORS
    assert "cs" not in yaml.safe_load(exporter_values()["config"])["collectors"]["enabled"].split(",")
    required = {"cpu", "logical_disk", "memory", "net", "os", "system", "container"}
    assert required <= set(metrics.WINDOWS_EXPORTER_COLLECTORS)


# --- alerts ---------------------------------------------------------------------------------------------

def test_prometheus_rule_has_the_structure_the_crd_documents():
    rule = metrics.alert_rules()
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["namespace"] == metrics.MONITORING_NAMESPACE
    assert set(rule["spec"]) == {"groups"}
    names = [g["name"] for g in rule["spec"]["groups"]]
    assert len(names) == len(set(names))
    for group in rule["spec"]["groups"]:
        assert set(group) == {"name", "rules"}
        for r in group["rules"]:
            # PrometheusRule Rule: alert, expr, for, labels, annotations (prometheus-operator api.md, Rule).
            assert set(r) == {"alert", "expr", "for", "labels", "annotations"}
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", r["alert"])
            assert isinstance(r["expr"], str)
            assert promql_parser.parse_duration(r["for"])
            assert r["labels"]["severity"] in ("warning", "critical")
            assert all(isinstance(v, str) for v in {**r["labels"], **r["annotations"]}.values())
            assert {"summary", "description"} <= set(r["annotations"])
    alerts = [r["alert"] for r in all_rules()]
    assert len(alerts) == len(set(alerts))


def test_node_not_ready_is_split_per_os_on_the_exported_os_label():
    rules = {r["alert"]: r for r in all_rules()}
    os_label = metrics.prometheus_label_name(OS_LABEL)
    assert os_label == "label_kubernetes_io_os"
    for os_name in ("linux", "windows"):
        rule = rules[f"{os_name.capitalize()}NodeNotReady"]
        assert rule["labels"]["os"] == os_name
        labels = {s.name: str(s) for s in selectors(rule["expr"])}
        assert set(labels) == {"kube_node_status_condition", "kube_node_labels"}
        assert f'{os_label}="{os_name}"' in labels["kube_node_labels"]
        assert 'condition="Ready"' in labels["kube_node_status_condition"]
    # The label the join reads is one kube-state-metrics is told to export.
    allowlist = metrics.kube_prometheus_stack_values()["kube-state-metrics"]["metricLabelsAllowlist"]
    assert allowlist == [f"nodes=[{','.join(metrics.NODE_LABELS_EXPORTED)}]"]
    assert OS_LABEL in metrics.NODE_LABELS_EXPORTED


def test_disk_pressure_alerts_exist_for_both_operating_systems():
    rules = {r["alert"]: r for r in all_rules()}
    assert metric_names(rules["LinuxFilesystemAlmostFull"]["expr"]) == {
        "node_filesystem_avail_bytes", "node_filesystem_size_bytes", "node_filesystem_readonly"}
    for os_name in ("Linux", "Windows"):
        assert 'condition="DiskPressure"' in rules[f"{os_name}NodeDiskPressure"]["expr"]
    assert str(metrics.DISK_FREE_RATIO) in rules["WindowsVolumeAlmostFull"]["expr"]


def test_calico_windows_alert_compares_ready_with_desired_for_its_daemonset():
    rule = next(r for r in all_rules() if r["alert"] == "CalicoWindowsNodeNotReady")
    found = selectors(rule["expr"])
    assert {s.name for s in found} == {
        "kube_daemonset_status_number_ready", "kube_daemonset_status_desired_number_scheduled"}
    for s in found:
        assert 'daemonset="calico-node-windows"' in str(s) and 'namespace="calico-system"' in str(s)


def test_scheduling_alerts_catch_unschedulable_pods_and_missing_windows_tolerations():
    rules = {r["alert"]: r for r in all_rules()}
    assert metric_names(rules["PodUnschedulable"]["expr"]) == {"kube_pod_status_unschedulable", "kube_pod_status_phase"}
    toleration = rules["WindowsPodMissingToleration"]["expr"]
    assert metric_names(toleration) == {"kube_pod_status_unschedulable", "kube_pod_tolerations"}
    assert f'key="{WINDOWS_TAINT_KEY}"' in toleration


# --- kube-prometheus-stack values ---------------------------------------------------------------------------




@pytest.mark.parametrize("path", metrics.POD_CREATING_KEYS, ids=".".join)
def test_every_pod_creating_part_of_the_chart_runs_on_linux_with_requests(path):
    part = dig(metrics.kube_prometheus_stack_values(), path)
    assert part["nodeSelector"] == {OS_LABEL: "linux"}
    requests = part["resources"]["requests"]
    assert set(requests) == {"cpu", "memory"}
    # A Linux pod must not tolerate the Windows taint (the node-exporter chart's default would).
    for toleration in part.get("tolerations", []):
        assert toleration.get("key") not in (None, WINDOWS_TAINT_KEY), toleration


def test_node_exporter_keeps_the_control_plane_but_not_windows():
    tolerations = metrics.kube_prometheus_stack_values()["prometheus-node-exporter"]["tolerations"]
    assert tolerations == [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]


def test_our_monitors_and_rules_are_selected_in_every_namespace():
    spec = metrics.kube_prometheus_stack_values()["prometheus"]["prometheusSpec"]
    for kind in ("serviceMonitor", "podMonitor", "rule"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False
        assert spec[f"{kind}NamespaceSelector"] == {}


def test_grafana_reads_its_admin_from_the_existing_secret_and_loads_labelled_dashboards():
    grafana = metrics.kube_prometheus_stack_values(grafana_admin_secret="grafana-admin-hk")["grafana"]
    assert grafana["admin"] == {
        "existingSecret": "grafana-admin-hk", "userKey": "admin-user", "passwordKey": "admin-password"}
    assert "adminPassword" not in grafana
    dashboards = grafana["sidecar"]["dashboards"]
    assert dashboards["enabled"] is True
    assert (dashboards["label"], dashboards["labelValue"]) == (metrics.GRAFANA_DASHBOARD_LABEL, "1")
    assert grafana["testFramework"] == {"enabled": False}


def test_unreachable_kubeadm_scrapers_are_off_with_their_rules():
    values = metrics.kube_prometheus_stack_values()
    for scraper in ("kubeEtcd", "kubeControllerManager", "kubeScheduler", "kubeProxy"):
        assert values[scraper] == {"enabled": False}
    assert not any(values["defaultRules"]["rules"].values())
    # A stack without Windows nodes gets no Windows monitoring at all (no subchart, no rules).
    assert values["windowsMonitoring"] == {"enabled": False} and "prometheus-windows-exporter" not in values


def test_retention_is_passed_through_and_checked():
    assert metrics.kube_prometheus_stack_values("30d")["prometheus"]["prometheusSpec"]["retention"] == "30d"
    for bad in ("15 days", "", "0", "15D"):
        with pytest.raises(ValueError):
            metrics.kube_prometheus_stack_values(bad)
    with pytest.raises(ValueError):
        metrics.kube_prometheus_stack_values(grafana_admin_secret="Grafana Admin")


def test_values_carry_no_password():
    # The chart's default admin password ("prom-operator") and any literal one stay out: Grafana reads the Secret.
    text = json.dumps(metrics.kube_prometheus_stack_values())
    assert "prom-operator" not in text and '"adminPassword"' not in text


# --- windows-exporter -----------------------------------------------------------------------------------------

def test_windows_monitoring_turns_on_the_charts_windows_rules_dashboards_and_exporter_together():
    values = metrics.kube_prometheus_stack_values(windows_exporter_image=IMAGE)
    # kube-prometheus-stack values.yaml: windowsMonitoring.enabled deploys the exporter subchart and the
    # Windows dashboards; the recording rules also need defaultRules.rules.windows.
    assert values["windowsMonitoring"] == {"enabled": True}
    assert values["defaultRules"]["rules"]["windows"] is True
    kubernetes_validate.validate(copy.deepcopy(metrics.windows_dashboard()), VALIDATE_VERSION, strict=True)


def test_the_exporter_is_scraped_as_the_job_the_charts_rules_and_ours_select():
    exporter = exporter_values()
    # The subchart's ServiceMonitor takes the job from the pod label named by jobLabel.
    assert exporter["prometheus"]["monitor"]["enabled"] is True
    assert exporter["podLabels"][exporter["prometheus"]["monitor"]["jobLabel"]] == metrics.WINDOWS_EXPORTER_JOB
    assert metrics.WINDOWS_EXPORTER_JOB == "windows-exporter"
    assert exporter["prometheus"]["monitor"]["relabelings"] == [
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}]
    rules = json.dumps(metrics.alert_rules()) + json.dumps(metrics.windows_dashboard())
    assert 'job=\\"windows-exporter\\"' in rules or 'job="windows-exporter"' in rules


def test_the_exporter_runs_our_pinned_image_and_the_collectors_every_rule_needs():
    exporter = exporter_values()
    image = exporter["image"]
    assert f"{image['registry']}/{image['repository']}:{image['tag']}" == IMAGE
    collectors = set(yaml.safe_load(exporter["config"])["collectors"]["enabled"].split(","))
    assert collectors == set(metrics.WINDOWS_EXPORTER_COLLECTORS)
    # The chart's own Windows rules and dashboards need these two beyond the defaults (values.yaml:
    # "Enable memory and container metrics as required by the default Prometheus rules and Grafana dashboards").
    assert {"memory", "container"} <= collectors
    with pytest.raises(ValueError):
        metrics.kube_prometheus_stack_values(windows_exporter_image="windows-exporter")


def test_the_exporter_lands_on_windows_nodes_only_tolerating_only_the_windows_taint():
    exporter = exporter_values()
    assert exporter["nodeSelector"] == {OS_LABEL: "windows"}
    assert exporter["tolerations"] == [{"key": WINDOWS_TAINT_KEY, "operator": "Equal", "value": WINDOWS_TAINT_VALUE,
                                        "effect": WINDOWS_TAINT_EFFECT}]
    assert set(exporter["resources"]["requests"]) == {"cpu", "memory"}
    assert exporter["service"] == {"port": metrics.WINDOWS_EXPORTER_PORT, "portName": metrics.WINDOWS_EXPORTER_PORT_NAME}


def test_windows_exporter_namespace_is_the_privileged_windows_system_namespace():
    from render.scheduling import system_namespace
    from vocab.cluster import WINDOWS_SYSTEM_NAMESPACE

    assert exporter_values()["namespaceOverride"] == WINDOWS_SYSTEM_NAMESPACE
    labels = system_namespace(WINDOWS_SYSTEM_NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"


def test_monitoring_namespace_is_privileged_for_node_exporter():
    namespace = metrics.monitoring_namespace()
    assert namespace["metadata"]["name"] == metrics.MONITORING_NAMESPACE
    assert all(namespace["metadata"]["labels"][f"pod-security.kubernetes.io/{mode}"] == "privileged"
               for mode in PSA_MODES)


def test_the_exporter_port_is_opened_by_the_node_itself():
    from render.windows_bootstrap import NODE_FIREWALL_RULES
    assert metrics.WINDOWS_EXPORTER_PORT in {port for _, port in NODE_FIREWALL_RULES}



# --- dashboard ----------------------------------------------------------------------------------------------

def test_dashboard_configmap_is_labelled_for_the_grafana_sidecar():
    configmap = metrics.windows_dashboard()
    assert configmap["metadata"]["labels"] == {metrics.GRAFANA_DASHBOARD_LABEL: metrics.GRAFANA_DASHBOARD_LABEL_VALUE}
    assert configmap["metadata"]["namespace"] == metrics.MONITORING_NAMESPACE
    assert list(configmap["data"]) == ["windows-nodes.json"]


def test_dashboard_json_is_a_grafana_dashboard_with_unique_panels():
    model = dashboard_model()
    assert {"uid", "title", "panels", "templating", "schemaVersion"} <= set(model)
    ids = [panel["id"] for panel in model["panels"]]
    assert len(ids) == len(set(ids))
    for panel in model["panels"]:
        assert panel["type"] == "timeseries" and panel["targets"]
        assert [t["refId"] for t in panel["targets"]] == [chr(ord("A") + i) for i in range(len(panel["targets"]))]
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}


def test_the_windows_dashboard_shows_the_viewers_time():
    """Review of #39 item 6: the dashboard was fixed to UTC while the nodes' logs follow the stack's `timezone`;
    Grafana's "browser" shows each viewer's own time."""
    assert dashboard_model()["timezone"] == "browser"
