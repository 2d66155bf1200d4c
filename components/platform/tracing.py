"""Distributed tracing (config `tracing`): the OpenTelemetry Collector as a gateway Deployment on Linux nodes, exporting
to the configured backend (render/tracing.py says why one gateway). The samples send to it (components/platform/workloads.py).
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi

from config import compat
from plan.platform import TracingPlan
from render import tracing

from .k8s import helm_release, kubernetes_object, resource_name


class Tracing(pulumi.ComponentResource):
    def __init__(self, name: str, plan: TracingPlan, provider: pulumi.ProviderResource,
                 linux_ready: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:Tracing", name, None, opts)
        created = kubernetes_object(f"{name}-{resource_name(tracing.namespace())}", tracing.namespace(),
                                    provider=provider, parent=self)
        before: list[pulumi.Resource] = [*linux_ready, created]
        values = tracing.collector_values(compat.OTEL_COLLECTOR_IMAGE_REPOSITORY, compat.OTEL_COLLECTOR_COMMAND,
                                          plan.endpoint, plan.insecure,
                                          ca_file=tracing.CA_FILE if plan.ca_certificate else None)
        if plan.ca_certificate is not None:
            config_map, mounts = tracing.backend_ca(plan.ca_certificate)
            before.append(kubernetes_object(f"{name}-{resource_name(config_map)}", config_map, provider=provider,
                                            parent=self, depends_on=[created]))
            values.update(mounts)
        helm_release(f"{name}-opentelemetry-collector", compat.CHARTS["opentelemetry-collector"], tracing.NAMESPACE, values,
                     provider=provider, parent=self, depends_on=before)
        self.register_outputs({"otlp": tracing.collector_address(tracing.OTLP_GRPC_PORT)})
