"""Distributed tracing (config `tracing`, render/tracing.py): the collector's values, the Gateway's tracing checked
strictly against the EnvoyProxy schema, and api-linux with the Java agent still valid, restricted and within its quota."""
from __future__ import annotations

import dataclasses

import kubernetes_validate
import pytest

from config import compat
from render import tracing
from render.workloads import api_linux, gateway_objects
from tests.crd_schema import validate_custom_resource
from tests.render.test_workloads import K8S, PARAMS, pod_spec, psa_violations
from vocab.namespaces import parse_quantity

TRACED = dataclasses.replace(PARAMS, tracing_sampling=10, java_agent_image=compat.OTEL_JAVA_AGENT_IMAGE)


def test_the_collector_is_a_linux_gateway_exporting_traces_only():
    values = tracing.collector_values(compat.OTEL_COLLECTOR_IMAGE_REPOSITORY, compat.OTEL_COLLECTOR_COMMAND,
                                      "tempo.hk-prod.internal:4317", insecure=True)
    assert values["mode"] == "deployment" and values["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert values["image"] == {"repository": compat.OTEL_COLLECTOR_IMAGE_REPOSITORY}
    assert values["command"] == {"name": "otelcol-k8s"} and values["fullnameOverride"] == tracing.COLLECTOR
    config = values["config"]
    # otlp_grpc, not its deprecated alias otlp (collector v0.158.0, #39 item 8).
    assert config["exporters"] == {"otlp_grpc": {"endpoint": "tempo.hk-prod.internal:4317", "tls": {"insecure": True}}}
    assert config["receivers"] == {"jaeger": None, "zipkin": None, "prometheus": None}
    pipelines = config["service"]["pipelines"]
    assert pipelines["logs"] is None and pipelines["metrics"] is None
    assert pipelines["traces"] == {"receivers": ["otlp"], "processors": ["memory_limiter", "batch"], "exporters": ["otlp_grpc"]}
    # memory_limiter's percentages are of the memory limit.
    assert values["resources"]["limits"]["memory"]
    with_ca = tracing.collector_values("r", "c", "tempo:4317", insecure=False, ca_file="/etc/ca/ca.crt")
    assert with_ca["config"]["exporters"]["otlp_grpc"]["tls"] == {"insecure": False, "ca_file": "/etc/ca/ca.crt"}
    with pytest.raises(ValueError):
        tracing.collector_values("r", "c", "tempo", insecure=True)


def test_the_gateway_traces_requests_to_the_collector():
    [envoy_proxy] = [o for o in gateway_objects(TRACED) if o["kind"] == "EnvoyProxy"]
    validate_custom_resource(envoy_proxy, "gateway.envoyproxy.io_v1alpha1_EnvoyProxy.json")
    telemetry = envoy_proxy["spec"]["telemetry"]["tracing"]
    assert telemetry["samplingRate"] == 10
    assert telemetry["provider"] == {"type": "OpenTelemetry", "backendRefs": [
        {"name": "otel-collector", "namespace": "opentelemetry", "port": 4317}]}
    [untraced] = [o for o in gateway_objects(PARAMS) if o["kind"] == "EnvoyProxy"]
    assert "telemetry" not in untraced["spec"]


def test_api_linux_loads_the_java_agent_and_stays_restricted():
    deployment = api_linux(TRACED)[0]
    kubernetes_validate.validate(deployment, K8S, strict=True)
    spec = pod_spec(deployment)
    assert psa_violations(spec, "restricted") == []
    [init] = spec["initContainers"]
    assert init["image"] == compat.OTEL_JAVA_AGENT_IMAGE and init["command"] == ["cp", "/javaagent.jar", "/otel/javaagent.jar"]
    assert init["securityContext"]["allowPrivilegeEscalation"] is False
    for kind in ("requests", "limits"):
        assert parse_quantity(init["resources"][kind]["cpu"]) > 0
    [api] = spec["containers"]
    env = {e["name"]: e["value"] for e in api["env"]}
    assert env["JAVA_TOOL_OPTIONS"] == "-javaagent:/otel/javaagent.jar" and env["OTEL_SERVICE_NAME"] == "api-linux"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector.opentelemetry.svc:4318"
    assert {"name": "otel-agent", "mountPath": "/otel", "readOnly": True} in api["volumeMounts"]
    # Without tracing the pod is as it was.
    assert "initContainers" not in pod_spec(api_linux(PARAMS)[0])


def test_hk_prod_runs_the_collector_and_traces_the_samples(hk_recording):
    release = hk_recording.named("hk-prod-tracing-opentelemetry-collector")
    assert release.inputs["values"]["config"]["exporters"]["otlp_grpc"]["endpoint"] == "tempo.hk-prod.internal:4317"
    proxy = hk_recording.named("hk-prod-samples-envoyproxy-envoy-gateway-system-hybrid-samples")
    assert proxy.inputs["spec"]["telemetry"]["tracing"]["samplingRate"] == 10


def test_the_collector_namespace_is_declared_with_or_without_a_ca(hk_recording):
    namespace = hk_recording.named("hk-prod-tracing-namespace-opentelemetry")
    release = hk_recording.named("hk-prod-tracing-opentelemetry-collector")
    assert namespace.urn in release.dependencies
