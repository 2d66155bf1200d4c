"""The scheduling layer: what lets a pod say which OS it needs and land only there. It owns the node labels
a kubelet may not set on itself (kept in step with config), one RuntimeClass per Windows build in the stack,
and the namespaces (win-* for Windows pods, linux-* for Linux pods, a privileged one for Windows
HostProcess system pods) with their quotas, defaults and Pod Security levels.
"""
from __future__ import annotations

from collections.abc import Mapping

import pulumi

from plan.platform import SchedulingPlan
from render import scheduling
from vocab.cluster import WINDOWS_SYSTEM_NAMESPACE

from .k8s import kubernetes_object, resource_name


class Scheduling(pulumi.ComponentResource):
    def __init__(self, name: str, plan: SchedulingPlan, provider: pulumi.ProviderResource, nodes: list[dict[str, str]],
                 node_ready: Mapping[str, pulumi.Resource], instances: Mapping[str, pulumi.Output[str]],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:Scheduling", name, None, opts)

        def declare(obj: dict, depends_on: list[pulumi.Resource] | None = None, patch: bool = False):
            # A node's label patch is never deleted through the provider (which would take the labels off the Node:
            # pulumi-kubernetes relinquishes a patch's fields): a node's removal drops it from the state, before its
            # drain, without touching the Node, so the labels stay until the Node goes, and with them the pods placed
            # by them (Longhorn's manager, which must run there while the drain moves the node's replicas away:
            # render/scripts/lib/longhorn-evict.sh).
            return kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider, parent=self,
                                     depends_on=depends_on or [], patch=patch, retain_on_delete=patch)

        self.runtime_classes = {
            obj["metadata"]["name"]: declare(obj)
            for obj in scheduling.runtime_classes(
                scheduling.WindowsBuildParams(key=k, build=b) for k, b in plan.windows_builds.items())
        }

        self.namespaces: dict[str, pulumi.Resource] = {}
        for params in plan.namespaces:
            namespace, *policies = scheduling.namespace(params)
            self.namespaces[params.name] = declare(namespace)
            for obj in policies:
                declare(obj, [self.namespaces[params.name]])
        if plan.windows:
            self.namespaces[WINDOWS_SYSTEM_NAMESPACE] = declare(scheduling.system_namespace(WINDOWS_SYSTEM_NAMESPACE))

        # Each node's labels once the node is Ready: NodePatch resources have no await of their own
        # (pulumi/pulumi-kubernetes#2455), so the wait is the node's readiness command. The patch names
        # the machine instance (render.scheduling.MACHINE_ANNOTATION): a re-created machine registers a new
        # Node, and the changed annotation updates the patch, which applies every label to it again.
        self.node_labels = {
            node["name"]: declare(
                scheduling.with_machine(
                    scheduling.node_labels(node["name"], node["role"], node["zone"], node["distro"], node["os"]),
                    instances[node["name"]]),
                [node_ready[node["name"]]], patch=True)
            for node in nodes
        }
        self.register_outputs({"runtime_classes": sorted(self.runtime_classes), "namespaces": sorted(self.namespaces)})
