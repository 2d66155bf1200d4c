"""Distributed tracing (config `tracing`): the OpenTelemetry Collector as a gateway Deployment on Linux nodes, exporting
to the configured backend (render/tracing.py says why one gateway). The samples send to it (components/workloads.py).
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from config import compat
from plan.platform import TracingPlan
from render import tracing

from .k8s import helm_release, kubernetes_object, resource_name

CA_MOUNT = "/etc/otel-backend-ca"


class Tracing(pulumi.ComponentResource):
    def __init__(self, name: str, plan: TracingPlan, provider: pulumi.ProviderResource,
                 linux_ready: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:Tracing", name, None, opts)
        # The namespace is always this program's object, so that adding or removing the CA never deletes it (and the
        # release in it).
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": tracing.NAMESPACE}}
        created = kubernetes_object(f"{name}-{resource_name(namespace)}", namespace, provider=provider, parent=self)
        before: list[pulumi.Resource] = [*linux_ready, created]
        values = tracing.collector_values(compat.OTEL_COLLECTOR_IMAGE_REPOSITORY, compat.OTEL_COLLECTOR_COMMAND,
                                          plan.endpoint, plan.insecure,
                                          ca_file=f"{CA_MOUNT}/ca.crt" if plan.ca_certificate else None)
        if plan.ca_certificate is not None:
            ca = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "otel-backend-ca", "namespace": tracing.NAMESPACE},
                  "data": {"ca.crt": plan.ca_certificate}}
            before.append(kubernetes_object(f"{name}-{resource_name(ca)}", ca, provider=provider, parent=self,
                                            depends_on=[created]))
            values["extraVolumes"] = [{"name": "backend-ca", "configMap": {"name": "otel-backend-ca"}}]
            values["extraVolumeMounts"] = [{"name": "backend-ca", "mountPath": CA_MOUNT, "readOnly": True}]
        collector = helm_release(f"{name}-opentelemetry-collector", compat.CHARTS["opentelemetry-collector"],
                                 tracing.NAMESPACE, values, provider=provider, parent=self, depends_on=before)
        self.collector = collector
        self.register_outputs({"otlp": tracing.collector_address(tracing.OTLP_GRPC_PORT)})
