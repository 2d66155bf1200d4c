"""The sample workloads (on when the stack has a workloads section): api-win on Windows Server 2022 and api-linux on Java 17,
each with a Service, and an Envoy Gateway Gateway on Linux nodes routing to both (HTTPRoutes). They prove a new cluster end to end:
Windows pods start only once Windows nodes of their build are Ready and Windows kube-proxy runs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_command as command

from config import compat
from plan.platform import SAMPLE_WINDOWS_VERSION, SamplesPlan
from plan.release import windows_release
from render import custom_metrics, policy, progressive_delivery, workloads
from render.shell import bash_command

from ..cluster.bootstrap import ControlPlaneAccess
from .k8s import crd_chart, helm_release, kubernetes_object, resource_name, type_token
from .scheduling import Scheduling


class SampleWorkloads(pulumi.ComponentResource):
    """Declared in two steps, so that what needs the Gateway API's CRDs can wait for them before the samples are
    declared (cert-manager's Gateway API support, components/platform/tls.py): the component and the CRDs, then `declare`,
    which declares the rest and registers the outputs."""

    def __init__(self, name: str, plan: SamplesPlan, provider: pulumi.ProviderResource,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:SampleWorkloads", name, None, opts)
        # Kept for `declare` (not in Resource's own _name or _provider).
        self._declared_as = (name, plan, provider)
        # Gateway API's standard channel and Envoy Gateway's CRDs, rendered locally and applied as plain
        # objects (like Calico's), so a pin bump upgrades them; kept when the samples are switched off.
        self.gateway_api_crds = crd_chart(f"{name}-envoy-gateway-crds", compat.CHARTS["envoy-gateway-crds"],
                                          workloads.GATEWAY_NAMESPACE, workloads.envoy_gateway_crd_values(),
                                          provider=provider, parent=self)

    def declare(self, scheduling: Scheduling, node_ready: Mapping[str, pulumi.Resource],
                windows_networking: Sequence[pulumi.Resource], access: ControlPlaneAccess,
                policy_declared: Sequence[pulumi.Resource], load_balancer: Sequence[pulumi.Resource] = (),
                issuer: Sequence[pulumi.Resource] = (), autoscaling_ready: Sequence[pulumi.Resource] = (),
                progressive_delivery_ready: Sequence[pulumi.Resource] = ()) -> None:
        (name, plan, provider), crds = self._declared_as, self.gateway_api_crds
        params = plan.params

        # An autoscaled Deployment's replica count is its autoscaler's: Pulumi states it at creation only. With
        # server-side apply, pulumi-kubernetes drops an ignored field from its apply once another manager owns it (the
        # HorizontalPodAutoscaler's kube-controller-manager, through the scale subresource), so an update neither
        # resets the count nor conflicts with that manager (pulumi/pulumi-kubernetes#2566, fixing #2491).
        # With progressive delivery the Rollout takes the Deployment over and the controller scales the Deployment to 0;
        # the Rollout's count is then its autoscaler's.
        scaled = plan.autoscaling is not None or plan.blue_green is not None

        # And the blue-green Services' selectors are the controller's: it pins each to a version with a key of its own,
        # and a Service's selector is an atomic map (core/v1 types.go `+mapType=atomic`), so its update owns the whole
        # selector; left out of Pulumi's apply, the controller's stays (pulumi/pulumi-kubernetes#2566).
        def ignored(obj: dict) -> list[str]:
            if scaled and obj["kind"] in ("Deployment", "Rollout"):
                return ["spec.replicas"]
            if plan.blue_green is not None and obj["kind"] == "Service":
                return ["spec.selector"]
            return []

        def declare(objs: list[dict], depends_on: list[pulumi.Resource]) -> list[pulumi.Resource]:
            return [kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider, parent=self,
                                      depends_on=depends_on, ignore_changes=ignored(obj))
                    for obj in objs]

        linux_ready = [node_ready[n] for n in plan.linux_nodes]
        envoy_gateway = helm_release(
            f"{name}-envoy-gateway", compat.CHARTS["envoy-gateway"], workloads.GATEWAY_NAMESPACE,
            workloads.envoy_gateway_values(plan.budget), provider=provider, parent=self, depends_on=[crds, *linux_ready])
        # The EnvoyProxy, GatewayClass and Gateway are the chart's CRDs: after the chart. The Gateway is
        # awaited until Programmed (its pulumi.com/waitFor).
        gateway: list[pulumi.Resource] = []
        # With a LoadBalancer implementation the Gateway is Programmed once its Service has an address from the
        # pool: it waits for the pool.
        for obj in workloads.gateway_objects(params, node_port_range=plan.node_ports, load_balancer=plan.load_balancer,
                                             tls_issuer=plan.tls_issuer, proxy_budget=plan.budget):
            gateway += declare([obj], [envoy_gateway, *gateway, *load_balancer, *issuer])
        windows_nodes = plan.windows_nodes
        linux_objects = workloads.api_linux(params)
        windows_objects = workloads.api_win(params) if windows_nodes else []
        # The placement constraints deny a Windows pod whose RuntimeClass Gatekeeper has not synced yet:
        # the samples start once a dry run of each of their pods is admitted.
        namespaces = [scheduling.namespaces[params.linux_namespace]]
        if windows_nodes:
            namespaces += [scheduling.namespaces[params.win_namespace], scheduling.runtime_classes[SAMPLE_WINDOWS_VERSION]]
        probe_script = policy.render_admission_probe(policy.probe_pods([*linux_objects, *windows_objects]))
        admitted = command.remote.Command(
            f"{name}-admission-probe",
            connection=access.connection,
            create=bash_command(probe_script),
            update=bash_command(probe_script),
            logging=command.remote.Logging.STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[access.init, *policy_declared, *namespaces]),
        )
        services = declare(linux_objects, [*namespaces[:1], *linux_ready, admitted])
        if windows_nodes:
            services += declare(windows_objects, [
                *namespaces[1:], *[node_ready[n] for n in windows_nodes], *windows_networking, admitted])
        rollouts: list[pulumi.Resource] = []
        if plan.blue_green is not None:
            # Each Deployment taken over by a blue-green Rollout, with its preview Service, once the controller runs.
            sample_objects = [*linux_objects, *windows_objects]
            services += declare([progressive_delivery.preview_service(obj) for obj in sample_objects
                                 if obj["kind"] == "Service"], [*namespaces])
            rollouts = declare([progressive_delivery.blue_green_rollout(obj, plan.blue_green.auto_promotion,
                                                                        plan.blue_green.scale_down_delay_seconds)
                                for obj in sample_objects if obj["kind"] == "Deployment"],
                               [*services, *progressive_delivery_ready])
        routes = [obj for obj in workloads.http_routes(params, https=plan.tls_issuer is not None,
                                                       preview=plan.blue_green is not None)
                  if windows_nodes or obj["metadata"]["namespace"] != params.win_namespace]
        declare(routes, [*gateway, *services])
        if plan.autoscaling is not None and plan.autoscaling.linux_request_rate is not None:
            # Prometheus scrapes the Gateway's Envoy proxies, where api-linux's request rate is measured.
            declare([custom_metrics.envoy_pod_monitor(workloads.GATEWAY_NAMESPACE)], [envoy_gateway, *autoscaling_ready])
        if plan.autoscaling is not None:
            # Each after its Deployment (KEDA's admission webhook reads the target's CPU requests) and, for KEDA's,
            # after KEDA's CRDs and webhook (`autoscaling_ready`).
            # A sample's autoscaler is one resource whichever kind it is (its CPU HorizontalPodAutoscaler, or with
            # customMetrics the ScaledObject whose HPA KEDA makes under the same name): the other kind is its alias,
            # and a change of kind deletes the old before the new is made (render/workloads.py other_autoscaler).
            for scaler in workloads.autoscalers(params, plan.autoscaling, rollout=plan.blue_green is not None):
                namespace = scaler["metadata"]["namespace"]
                if namespace == params.win_namespace and not windows_nodes:
                    continue
                other = workloads.other_autoscaler(scaler)
                kubernetes_object(
                    f"{name}-{resource_name(scaler)}", scaler, provider=provider, parent=self,
                    depends_on=[*services, *rollouts, *(autoscaling_ready if scaler["kind"] == "ScaledObject" else ())],
                    aliases=[pulumi.Alias(name=f"{name}-{resource_name(other)}", type_=type_token(other))],
                    replace_on_changes=list(workloads.AUTOSCALER_KIND_FIELDS), delete_before_replace=True)
        self.register_outputs({"windows_sample": bool(windows_nodes),
                               "gateway_node_port": None if plan.load_balancer else workloads.GATEWAY_HTTP_NODE_PORT,
                               "windows_build": windows_release(SAMPLE_WINDOWS_VERSION).build})
