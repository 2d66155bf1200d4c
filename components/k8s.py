"""Turns the plain Kubernetes objects and pinned charts the renderers return into pulumi_kubernetes resources."""
from __future__ import annotations

import re
from typing import Any, Sequence

import pulumi
import pulumi_kubernetes as kubernetes

# apiVersion group -> pulumi_kubernetes module
_MODULES = {
    "": "core",
    "apps": "apps",
    "batch": "batch",
    "networking.k8s.io": "networking",
    "node.k8s.io": "node",
    "policy": "policy",
    "rbac.authorization.k8s.io": "rbac",
    "scheduling.k8s.io": "scheduling",
    "storage.k8s.io": "storage",
    "admissionregistration.k8s.io": "admissionregistration",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def resource_name(obj: dict[str, Any]) -> str:
    """A stable Pulumi name for an object: kind, namespace and name."""
    meta = obj["metadata"]
    parts = [obj["kind"].lower(), meta.get("namespace"), meta["name"]]
    return "-".join(p for p in parts if p)


def kubernetes_object(name: str, obj: dict[str, Any], *, provider: pulumi.ProviderResource, parent: pulumi.Resource,
                      depends_on: Sequence[pulumi.Resource] = (), patch: bool = False,
                      aliases: Sequence[pulumi.Alias] = ()) -> pulumi.CustomResource:
    """One object as its typed resource (a `...Patch` resource with patch=True); custom kinds as CustomResource."""
    group, _, version = obj["apiVersion"].rpartition("/")
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on),
                                  aliases=list(aliases) or None)
    module_name = _MODULES.get(group)
    cls = None
    if module_name is not None:
        cls = getattr(getattr(getattr(kubernetes, module_name), version, None), obj["kind"] + ("Patch" if patch else ""), None)
    fields = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if cls is None:
        if patch:
            raise ValueError(f"no patch resource for {obj['apiVersion']} {obj['kind']}")
        return kubernetes.apiextensions.CustomResource(
            name, api_version=obj["apiVersion"], kind=obj["kind"], opts=opts, **fields)
    return cls(name, opts=opts, **{_snake(k): v for k, v in fields.items()})


def helm_release(name: str, chart: dict[str, str], values: dict, *, provider: pulumi.ProviderResource,
                 parent: pulumi.Resource, depends_on: list[pulumi.Resource] | None = None) -> kubernetes.helm.v3.Release:
    """A pinned Helm release of one of the render modules' charts."""
    return kubernetes.helm.v3.Release(
        name,
        name=name,
        chart=chart["chart"],
        version=chart["version"],
        repository_opts=kubernetes.helm.v3.RepositoryOptsArgs(repo=chart["repo"]),
        namespace=chart["namespace"],
        create_namespace=True,
        values=values,
        # A Release waits until its workloads are ready (skipAwait is off); Jobs such as admission-webhook
        # setup are awaited too.
        wait_for_jobs=True,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on or []),
    )
