"""Renders distributed tracing (config `tracing`): the OpenTelemetry Collector's Helm values, the tracing settings of the
samples' Gateway, and the OpenTelemetry Java agent for api-linux.

This module owns those renderers and the collector's address. Pure: plain values in, dicts out; the pins are
config.compat's (CHARTS["opentelemetry-collector"], OTEL_COLLECTOR_IMAGE, OTEL_JAVA_AGENT_IMAGE).

Design decisions, with their sources:

* One collector, a gateway Deployment on Linux nodes, that workloads of both operating systems send OTLP to through its
  Service, rather than an agent on every node. The collector is published for Windows (otelcol-k8s
  `-windows-2019-amd64`/`-windows-2022-amd64` tags, distributions/otelcol-k8s/.goreleaser.yaml) but not for Windows
  Server 2025, and the chart runs it as `/{{ command.name }}` with no Windows handling; a Windows pod reaches a Service
  over Calico like any pod, so one Linux gateway serves every build without an image per build.
* The chart needs ``mode`` and ``image.repository`` (NOTES.txt fails without them, values.yaml at 0.170.0); the k8s
  distribution with its ``otelcol-k8s`` command is the one its README installs. Its default ``config`` is merged with
  ours; receivers and pipelines we do not use (jaeger, zipkin, prometheus; logs and metrics) are removed with null,
  which works for a chart installed directly (the values.yaml note on helm/helm#12879 concerns subcharts only).
  ``memory_limiter``'s percentages need a memory limit, which ``resources`` sets. A fixed ``fullnameOverride`` gives
  the Service a name that does not depend on the release's.
* The Gateway traces every request it routes, to both samples (EnvoyProxy ``telemetry.tracing`` with an OpenTelemetry
  provider and ``backendRefs`` to the collector, Envoy Gateway site/content/en/v1.9/tasks/observability/proxy-trace.md;
  ``samplingRate`` in percent, default 100). api-linux also makes its own spans: the OpenTelemetry Java agent, copied
  by an init container from the operator's autoinstrumentation image (/javaagent.jar) and loaded through
  ``JAVA_TOOL_OPTIONS``, exports OTLP over HTTP (the agent's default since 2.0) to the collector's port 4318; its
  metrics and logs exporters are off (only traces are collected). api-win is traced at the Gateway only: the .NET
  automatic instrumentation installs through a PowerShell 5.1 module, which nanoserver does not have, and the sample
  image carries no OpenTelemetry SDK (opentelemetry-dotnet-instrumentation docs/README.md).
"""
from __future__ import annotations

from typing import Any

from vocab.checks import DNS_LABEL, require
from vocab.labels import OS_LABEL

NAMESPACE = "opentelemetry"
COLLECTOR = "otel-collector"          # fullnameOverride: the Service's name
OTLP_GRPC_PORT = 4317
OTLP_HTTP_PORT = 4318
# The OTLP/gRPC exporter's component type since collector v0.144.0, whose `otlp` is a deprecated alias that logs a
# warning (open-telemetry/opentelemetry-collector v0.158.0, the chart's appVersion: exporter/otlpexporter/metadata.yaml
# "type: otlp_grpc", "deprecated_type: otlp"; CHANGELOG v0.144.0, #14403). The receiver keeps its name `otlp`.
OTLP_GRPC_EXPORTER = "otlp_grpc"
AGENT_VOLUME = "otel-agent"
AGENT_DIR = "/otel"
CA_CONFIG_MAP = "otel-backend-ca"
CA_MOUNT = "/etc/otel-backend-ca"
CA_FILE = f"{CA_MOUNT}/ca.crt"


def namespace() -> dict[str, Any]:
    """The collector's namespace, always this program's object, so that adding or removing the backend's CA never
    deletes it (and the release in it)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


def backend_ca(pem: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ConfigMap carrying the backend's CA, and the chart values that mount it at CA_FILE (``extraVolumes``,
    ``extraVolumeMounts``)."""
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CA_CONFIG_MAP, "namespace": NAMESPACE},
                  "data": {"ca.crt": pem}}
    return config_map, {"extraVolumes": [{"name": "backend-ca", "configMap": {"name": CA_CONFIG_MAP}}],
                        "extraVolumeMounts": [{"name": "backend-ca", "mountPath": CA_MOUNT, "readOnly": True}]}


def collector_address(port: int) -> str:
    return f"http://{COLLECTOR}.{NAMESPACE}.svc:{port}"


def collector_values(image_repository: str, command: str, backend: str, insecure: bool,
                     ca_file: str | None = None) -> dict[str, Any]:
    """Values for the opentelemetry-collector chart (values.yaml at 0.170.0): a gateway receiving OTLP (gRPC 4317,
    HTTP 4318) and exporting traces over OTLP/gRPC to ``backend`` (host:port)."""
    host, _, port = backend.rpartition(":")
    require(bool(host) and port.isdigit(), f"{backend!r} is not host:port")
    tls: dict[str, Any] = {"insecure": insecure}
    if ca_file is not None:
        tls["ca_file"] = ca_file
    return {
        "mode": "deployment",
        "fullnameOverride": COLLECTOR,
        "image": {"repository": image_repository},
        "command": {"name": command},
        "replicaCount": 2,
        "nodeSelector": {OS_LABEL: "linux"},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "ports": {name: {"enabled": False} for name in ("jaeger-compact", "jaeger-thrift", "jaeger-grpc", "zipkin")},
        "config": {
            "receivers": {"jaeger": None, "zipkin": None, "prometheus": None},
            "exporters": {OTLP_GRPC_EXPORTER: {"endpoint": backend, "tls": tls}},
            "service": {"pipelines": {
                "logs": None, "metrics": None,
                "traces": {"receivers": ["otlp"], "processors": ["memory_limiter", "batch"], "exporters": [OTLP_GRPC_EXPORTER]},
            }},
        },
    }


def gateway_tracing(sampling_percent: int) -> dict[str, Any]:
    """The EnvoyProxy ``spec.telemetry`` that sends a span for each routed request to the collector."""
    require(0 <= sampling_percent <= 100, f"sampling {sampling_percent}% is not a percentage")
    return {"tracing": {"samplingRate": sampling_percent, "provider": {
        "type": "OpenTelemetry",
        "backendRefs": [{"name": COLLECTOR, "namespace": NAMESPACE, "port": OTLP_GRPC_PORT}],
    }}}


def java_agent(pod_spec: dict[str, Any], container: str, service_name: str, agent_image: str) -> dict[str, Any]:
    """``pod_spec`` with the OpenTelemetry Java agent in ``container``: copied by an init container into a shared
    emptyDir, loaded by JAVA_TOOL_OPTIONS, exporting traces to the collector. The init container keeps the pod's
    restricted Pod Security profile (the main container's security context) and states its resources (the namespace
    quota needs them)."""
    require(bool(DNS_LABEL.match(service_name)), f"{service_name!r} is not a DNS-1123 label")
    spec = {**pod_spec}
    [main] = [c for c in spec["containers"] if c["name"] == container]
    jar = f"{AGENT_DIR}/javaagent.jar"
    main = {**main,
            "env": [*main.get("env", []),
                    {"name": "JAVA_TOOL_OPTIONS", "value": f"-javaagent:{jar}"},
                    {"name": "OTEL_SERVICE_NAME", "value": service_name},
                    {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": collector_address(OTLP_HTTP_PORT)},
                    {"name": "OTEL_METRICS_EXPORTER", "value": "none"},
                    {"name": "OTEL_LOGS_EXPORTER", "value": "none"}],
            "volumeMounts": [*main.get("volumeMounts", []), {"name": AGENT_VOLUME, "mountPath": AGENT_DIR, "readOnly": True}]}
    spec["containers"] = [main if c["name"] == container else c for c in spec["containers"]]
    spec["initContainers"] = [*spec.get("initContainers", []), {
        "name": "otel-agent",
        "image": agent_image,
        "command": ["cp", "/javaagent.jar", jar],
        "securityContext": dict(main.get("securityContext", {})),
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}},
        "volumeMounts": [{"name": AGENT_VOLUME, "mountPath": AGENT_DIR}],
    }]
    spec["volumes"] = [*spec.get("volumes", []), {"name": AGENT_VOLUME, "emptyDir": {"sizeLimit": "64Mi"}}]
    return spec
