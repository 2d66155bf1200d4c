"""Turns the plain Kubernetes objects and pinned charts the renderers return into pulumi_kubernetes resources."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes

from config.compat import HelmChart
from vocab.cluster import snake_case
from vocab.labels import OS_LABEL

# apiVersion group -> pulumi_kubernetes module
_MODULES = {
    "": "core",
    "apps": "apps",
    "autoscaling": "autoscaling",
    "batch": "batch",
    "networking.k8s.io": "networking",
    "node.k8s.io": "node",
    "policy": "policy",
    "rbac.authorization.k8s.io": "rbac",
    "scheduling.k8s.io": "scheduling",
    "storage.k8s.io": "storage",
    "admissionregistration.k8s.io": "admissionregistration",
}


def resource_name(obj: dict[str, Any]) -> str:
    """A stable Pulumi name for an object: kind, namespace and name."""
    meta = obj["metadata"]
    parts = [obj["kind"].lower(), meta.get("namespace"), meta["name"]]
    return "-".join(p for p in parts if p)


# How long a rollout onto Windows nodes may take. Windows images are large (Fluent Bit's is built on
# Server Core, fluent/fluent-bit dockerfiles/Dockerfile.windows), and a node's first pull of one goes
# through the site's registry mirror while it fills over a slow link; pulumi-kubernetes' default await
# would give up on a rollout that is only slow. The provider takes customTimeouts over its defaults
# (pulumi/pulumi-kubernetes#672: "1. Use CustomTimeouts passes in ResourceOpts 2. Use the annotations
# 3. Use the defaults"). Helm releases that carry Windows DaemonSets get the same budget.
WINDOWS_ROLLOUT_MINUTES = 45


def runs_on_windows(obj: dict[str, Any]) -> bool:
    """A DaemonSet whose pods run on Windows nodes (spec.os.name or the OS node selector says so)."""
    if obj.get("kind") != "DaemonSet":
        return False
    pod = obj.get("spec", {}).get("template", {}).get("spec", {})
    return pod.get("os", {}).get("name") == "windows" or pod.get("nodeSelector", {}).get(OS_LABEL) == "windows"


def type_token(obj: dict[str, Any]) -> str:
    """The Pulumi type of an object's resource: `kubernetes:<group or core>/<version>:<Kind>`, as pulumi-kubernetes
    names its typed resources and its CustomResource (`kubernetes:{api_version}:{kind}`)."""
    group, _, version = obj["apiVersion"].rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{obj['kind']}"


def kubernetes_object(name: str, obj: dict[str, Any], *, provider: pulumi.ProviderResource, parent: pulumi.Resource,
                      depends_on: Sequence[pulumi.Resource] = (), patch: bool = False,
                      aliases: Sequence[pulumi.Alias] = (), ignore_changes: Sequence[str] = (),
                      retain_on_delete: bool = False, replace_on_changes: Sequence[str] = (),
                      delete_before_replace: bool = False) -> pulumi.CustomResource:
    """One object as its typed resource (a `...Patch` resource with patch=True); custom kinds as CustomResource.
    A Windows DaemonSet is awaited for WINDOWS_ROLLOUT_MINUTES."""
    group, _, version = obj["apiVersion"].rpartition("/")
    timeout = f"{WINDOWS_ROLLOUT_MINUTES}m"
    opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on),
                                  aliases=list(aliases) or None, ignore_changes=list(ignore_changes) or None,
                                  retain_on_delete=retain_on_delete or None,
                                  replace_on_changes=list(replace_on_changes) or None,
                                  delete_before_replace=delete_before_replace or None,
                                  custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout)
                                  if runs_on_windows(obj) else None)
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
    return cls(name, opts=opts, **{snake_case(k): v for k, v in fields.items()})


def helm_release(name: str, chart: HelmChart, namespace: str, values: dict, *, provider: pulumi.ProviderResource,
                 parent: pulumi.Resource, depends_on: list[pulumi.Resource] | None = None,
                 windows_workloads: bool = False) -> kubernetes.helm.v3.Release:
    """A Helm release of one of the charts pinned in config.compat.CHARTS, in the render module's namespace.
    `windows_workloads`: the release deploys pods onto Windows nodes, so Helm waits WINDOWS_ROLLOUT_MINUTES."""
    # An OCI chart is named by its full reference and has no repository (Helm: `helm install NAME
    # oci://registry/path/chart --version V`); a released archive by its URL (Helm: "By absolute URL",
    # pulumi-kubernetes' chart resolution); a classic one by name within its repository.
    direct = chart.archive is not None or chart.repo.startswith("oci://")
    return kubernetes.helm.v3.Release(
        name,
        name=name,
        chart=chart.archive or (f"{chart.repo}/{chart.chart}" if chart.repo.startswith("oci://") else chart.chart),
        version=chart.version,
        repository_opts=None if direct else kubernetes.helm.v3.RepositoryOptsArgs(repo=chart.repo),
        namespace=namespace,
        create_namespace=True,
        values=values,
        # A Release waits until its workloads are ready (skipAwait is off); Jobs such as admission-webhook
        # setup are awaited too.
        wait_for_jobs=True,
        # Seconds Helm waits for the release's workloads (Release `timeout`; None, an input Pulumi leaves out, keeps the default 300).
        timeout=WINDOWS_ROLLOUT_MINUTES * 60 if windows_workloads else None,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on or []),
    )


def retain_on_delete(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult:
    """Every object a CRD chart renders survives its removal from the program: deleting a CRD deletes every
    resource of its kind in the cluster."""
    return pulumi.ResourceTransformResult(
        props=args.props, opts=pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(retain_on_delete=True)))


def crd_chart(name: str, chart: HelmChart, namespace: str, values: dict | None = None, *,
              provider: pulumi.ProviderResource, parent: pulumi.Resource) -> kubernetes.helm.v4.Chart:
    """A chart of CustomResourceDefinitions, rendered locally (Chart v4) and applied as plain objects, each kept
    on delete: unlike a Helm release (which never upgrades the CRDs in a chart's crds/ folder, Helm's "Custom
    Resource Definitions" best practices), a pin bump upgrades them, and no release Secret holds them."""
    oci = chart.repo.startswith("oci://")
    return kubernetes.helm.v4.Chart(
        name,
        chart=f"{chart.repo}/{chart.chart}" if oci else chart.chart,
        version=chart.version,
        repository_opts=None if oci else kubernetes.helm.v4.RepositoryOptsArgs(repo=chart.repo),
        namespace=namespace,
        values=values or {},
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, transforms=[retain_on_delete]),
    )
