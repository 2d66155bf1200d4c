"""Holds the cluster's Kubernetes version and refuses to change it until rolling upgrades exist.

A kubeadm cluster cannot move to another Kubernetes version by re-rendering its configuration: that
takes `kubeadm upgrade` node by node. Until the program can do that, a changed
`cluster.kubernetesVersion` must stop `pulumi preview` with a clear message, before anything runs. A
dynamic provider's `check` sees the previous and the new inputs during preview, which is exactly that.
"""
from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, Resource, ResourceProvider

VERSION_KEY = "kubernetesVersion"


class KubernetesVersionPinProvider(ResourceProvider):
    # Pulumi stores this provider in the state (dill); the provider process that runs `check` loads it
    # from the project directory, so keep this module's path stable and its code self-contained.
    serialize_as_secret_always = False

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        old, new = (olds or {}).get(VERSION_KEY), news.get(VERSION_KEY)
        if old and new and old != new:
            reason = (
                f"the cluster runs Kubernetes {old}; changing cluster.kubernetesVersion to {new} would need "
                f"`kubeadm upgrade` node by node, which this program does not do yet. Nothing was changed: set "
                f"cluster.kubernetesVersion back to {old}, or upgrade by hand following the kubeadm upgrade guide."
            )
            return CheckResult(news, [CheckFailure(VERSION_KEY, reason)])
        return CheckResult(news, [])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=olds.get(VERSION_KEY) != news.get(VERSION_KEY))

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"kubernetes-{props[VERSION_KEY]}", outs=props)


class KubernetesVersionPin(Resource, module="hybrid", name="KubernetesVersionPin"):
    kubernetesVersion: pulumi.Output[str]

    def __init__(self, name: str, version: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(KubernetesVersionPinProvider(), name, {VERSION_KEY: version}, opts)
