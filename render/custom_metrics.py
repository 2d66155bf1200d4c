"""Renders autoscaling on Prometheus metrics (config `customMetrics`): KEDA's Helm values and disruption budgets, the
PodMonitor through which Prometheus scrapes the Gateway's Envoy proxies, and the ScaledObject that scales a sample on
CPU and its request rate, with the names they share (the PromQL of a route's request rate, the Prometheus address).
Pure: plain values in, dicts out; the chart pin is config.compat.CHARTS["keda"].
"""
from __future__ import annotations

from typing import Any

from render import availability
from vocab.checks import DNS_LABEL, require

# KEDA, not prometheus-adapter: prometheus-adapter has had no release since v0.12.0 (2024-05) and SIG Instrumentation
# means to deprecate it, pointing its users to KEDA (kubernetes-sigs/prometheus-adapter#701 "Deprecate Prometheus
# Adapter", triage/accepted: "suggest users to fulfill their use-cases using KEDA"). KEDA is released monthly and scales
# any Deployment through the Kubernetes API, Windows ones included ("we do still help them scale Windows workloads given
# we manage scaling through Kubernetes APIs", kedacore/keda#2666). It serves external.metrics.k8s.io, which only one
# server per cluster may (keda-docs FAQ), and leaves metrics.k8s.io to metrics-server.
KEDA_NAMESPACE = "keda"   # the install guide's (`helm install keda kedacore/keda --namespace keda`)
SCALED_OBJECT_API_VERSION = "keda.sh/v1alpha1"
POD_MONITOR_API_VERSION = "monitoring.coreos.com/v1"
# The governing Service the Prometheus operator creates for every Prometheus in its namespace (prometheus-operator
# pkg/prometheus statefulset.go `governingServiceName`; port 9090 "web"): its name does not depend on the Helm release's
# name, which kube-prometheus-stack truncates.
PROMETHEUS_SERVICE = "prometheus-operated"
PROMETHEUS_PORT = 9090
# Envoy Gateway's proxies serve Prometheus metrics on their container port `metrics` (19001) at /stats/prometheus, and
# the PodMonitor selects them as the one in its proxy-metric task does (examples/kubernetes/metric/pod-monitor.yaml:
# pods labelled app.kubernetes.io/name envoy and app.kubernetes.io/component proxy).
ENVOY_PROXY_LABELS = {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy"}
ENVOY_METRICS_PORT = "metrics"
ENVOY_METRICS_PATH = "/stats/prometheus"
# The window of the rate: four scrapes at the PodMonitor's interval, so one missed scrape does not empty it.
SCRAPE_INTERVAL = "15s"
RATE_WINDOW = "2m"


# KEDA's three Deployments, by their values key, and the `app` label each one's pods carry (keda/values.yaml
# operator.name and webhooks.name at v2.20.2; the metrics server's pods are `<operator.name>-metrics-apiserver`,
# templates/metrics-server/deployment.yaml).
KEDA_COMPONENTS = {"operator": "keda-operator", "metricsServer": "keda-operator-metrics-apiserver",
                   "webhooks": "keda-admission-webhooks"}


def keda_values(budget: bool) -> dict[str, Any]:
    """Values for the keda chart (kedacore/charts keda/values.yaml at v2.20.2). Its CRDs are chart templates
    (``crds.install``, default true) with no keep policy, so uninstalling the chart would delete every ScaledObject
    in the cluster; Helm keeps a resource annotated ``helm.sh/resource-policy: keep`` (Helm docs, "Tell Helm Not To
    Uninstall a Resource"), set through ``crds.additionalAnnotations``. Nothing names an OS: the chart pins its operator,
    metrics server and webhooks to Linux (templates: ``nodeSelector: kubernetes.io/os: linux``), and a second
    ``kubernetes.io/os`` key would be a duplicate in its nodeSelector.

    With ``budget`` (plan/platform.py survives_every_wave), each of the three runs two replicas spread over nodes, with
    a budget of this program's (keda_disruption_budgets): the operator is leader-elected, one active and one standing
    by; the metrics server (external.metrics.k8s.io, which every ScaledObject's HPA reads) "can run multiple replicas",
    one serving, the other there for a failover (keda-docs content/docs/2.20/operate/cluster.md, High Availability);
    the admission webhooks serve from each. The chart's own budgets cannot say unhealthyPodEvictionPolicy
    (templates/*/poddisruptionbudget.yaml), so they stay off (their values unset)."""
    values: dict[str, Any] = {"crds": {"install": True, "additionalAnnotations": {"helm.sh/resource-policy": "keep"}}}
    if budget:
        for key, app in KEDA_COMPONENTS.items():
            values[key] = {"replicaCount": availability.REPLICAS, "affinity": availability.host_spread({"app": app})}
    return values


def keda_disruption_budgets() -> list[dict[str, Any]]:
    """A budget of one for each of KEDA's Deployments (keda_values with ``budget``)."""
    return [availability.disruption_budget(app, KEDA_NAMESPACE, {"app": app}) for app in KEDA_COMPONENTS.values()]


def prometheus_address(monitoring_namespace: str) -> str:
    require(bool(DNS_LABEL.match(monitoring_namespace)), f"{monitoring_namespace!r} is not a namespace name")
    return f"http://{PROMETHEUS_SERVICE}.{monitoring_namespace}.svc:{PROMETHEUS_PORT}"


def envoy_pod_monitor(gateway_namespace: str) -> dict[str, Any]:
    """The PodMonitor through which Prometheus scrapes the Envoy proxies of the Gateway's namespace (render/metrics.py
    lets Prometheus select every PodMonitor)."""
    require(bool(DNS_LABEL.match(gateway_namespace)), f"{gateway_namespace!r} is not a namespace name")
    return {
        "apiVersion": POD_MONITOR_API_VERSION,
        "kind": "PodMonitor",
        "metadata": {"name": "envoy-proxies", "namespace": gateway_namespace},
        "spec": {
            "selector": {"matchLabels": dict(ENVOY_PROXY_LABELS)},
            "podMetricsEndpoints": [{"port": ENVOY_METRICS_PORT, "path": ENVOY_METRICS_PATH, "interval": SCRAPE_INTERVAL}],
        },
    }


def route_request_rate(namespace: str, route: str) -> str:
    """PromQL: the requests per second an HTTPRoute's rules sent to their backends, over every Envoy proxy, where every
    request passes. Envoy Gateway names a route's upstream cluster ``httproute/<namespace>/<name>/rule/<index>``
    (EnvoyProxy ``telemetry.metrics.clusterStatName`` default
    ``%ROUTE_KIND%/%ROUTE_NAMESPACE%/%ROUTE_NAME%/rule/%ROUTE_RULE_NUMBER%``, api/v1alpha1/envoyproxy_metric_types.go
    at v1.9.0), and ``envoy_cluster_upstream_rq_total`` counts its requests."""
    for value in (namespace, route):
        require(bool(DNS_LABEL.match(value)), f"{value!r} is not a DNS-1123 label")
    return (f'sum(rate(envoy_cluster_upstream_rq_total{{envoy_cluster_name=~"httproute/{namespace}/{route}/rule/[0-9]+"}}'
            f"[{RATE_WINDOW}]))")


def scaled_object(name: str, namespace: str, labels: dict[str, str], min_replicas: int, max_replicas: int,
                  cpu_utilization: int, prometheus: str, requests_per_second: int,
                  scale_target: dict[str, str]) -> dict[str, Any]:
    """A ScaledObject scaling ``scale_target`` (the Deployment ``name``, or its Rollout) on CPU (percent of its request)
    and on the HTTPRoute ``name``'s request rate (``requests_per_second`` per replica: the prometheus trigger's default
    metricType is AverageValue). KEDA scales any resource with a /scale subresource (scaledobject-spec.md)."""
    require(1 <= min_replicas <= max_replicas, f"{name}: replicas {min_replicas}..{max_replicas} are not a range")
    require(1 <= cpu_utilization <= 100 and requests_per_second >= 1, f"{name}: targets must be positive")
    return {
        "apiVersion": SCALED_OBJECT_API_VERSION,
        "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            # KEDA's HPA (by default `keda-hpa-<name>`, controllers/keda/hpa.go) under the sample's name, as its CPU
            # autoscaler without KEDA: the program deletes the one before it makes the other (render/workloads.py
            # AUTOSCALER_KIND_FIELDS), so they never meet.
            "advanced": {"horizontalPodAutoscalerConfig": {"name": name}},
            "scaleTargetRef": dict(scale_target),
            "minReplicaCount": min_replicas,
            "maxReplicaCount": max_replicas,
            # Both triggers in one ScaledObject: KEDA makes the one HorizontalPodAutoscaler, which takes the larger of
            # the two proposals, so the target never has two autoscalers fighting over it. The cpu trigger needs
            # metrics-server (scalers/cpu.md: "The Kubernetes Metrics Server must be installed"). Metadata values are
            # strings (the CRD's `metadata: additionalProperties: type: string`).
            "triggers": [
                {"type": "cpu", "metricType": "Utilization", "metadata": {"value": str(cpu_utilization)}},
                {"type": "prometheus", "metadata": {"serverAddress": prometheus,
                                                    "query": route_request_rate(namespace, name),
                                                    "threshold": str(requests_per_second)}},
            ],
        },
    }
