"""Holds the cluster's Kubernetes version and lets it change only the way kubeadm can follow.

A kubeadm cluster moves to another version through `kubeadm upgrade`, node by node (the upgrade chain,
components/cluster/upgrade.py), and only forwards: to a newer patch of the same minor, or to the next minor.
"Skipping MINOR versions when upgrading is unsupported" and downgrades are not a kubeadm operation
(https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-upgrade/, "Before you begin";
https://kubernetes.io/releases/version-skew-policy/). Any other change must stop `pulumi preview` with
a clear message before anything runs; a dynamic provider's `check` sees the previous and the new inputs
during preview, which is exactly that.
"""
from __future__ import annotations

import re
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

VERSION_KEY = "kubernetesVersion"
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


def upgrade_refusal(old: str, new: str) -> str | None:
    """Why the cluster cannot go from `old` to `new`, or None when kubeadm can upgrade it."""
    old_match, new_match = _VERSION.match(old), _VERSION.match(new)
    if old_match is None or new_match is None:
        return f"cannot compare Kubernetes versions {old!r} and {new!r}"
    (old_major, old_minor, old_patch), (new_major, new_minor, new_patch) = (
        tuple(int(part) for part in m.groups()) for m in (old_match, new_match))
    if (new_major, new_minor, new_patch) < (old_major, old_minor, old_patch):
        return (f"the cluster runs Kubernetes {old}; {new} would be a downgrade, which kubeadm does not do. "
                f"Set cluster.kubernetesVersion back to {old}.")
    if new_major != old_major or new_minor > old_minor + 1:
        return (f"the cluster runs Kubernetes {old}; kubeadm upgrades one minor at a time, so {new} must wait: "
                f"upgrade to {old_major}.{old_minor + 1} first (a patch release of the next minor).")
    return None


# The shape of the state this program writes. A state written before it (per-node steps keyed on the VM's
# VMID, kubeadm init keyed and reset on delete) must be migrated first, or the first run would replace every
# node's membership: tools/migrate_state.py, docs/lifecycle.md "Upgrading from an earlier release".
STATE_FORMAT_KEY = "stateFormat"
STATE_FORMAT = 2


def pin_failures(olds: dict[str, Any], news: dict[str, Any]) -> list[tuple[str, str]]:
    """(property, reason) for every reason the pin refuses a run: an unmigrated state, a version change
    kubeadm cannot follow."""
    olds = olds or {}
    failures = []
    if olds and olds.get(STATE_FORMAT_KEY) != STATE_FORMAT:
        failures.append((STATE_FORMAT_KEY, "this stack's state was written by an earlier release of this program; run "
                                           "`python -m tools.migrate_state` on an export of it first (docs/lifecycle.md, "
                                           "\"Upgrading from an earlier release\"). Nothing was changed."))
    old, new = olds.get(VERSION_KEY), news.get(VERSION_KEY)
    if isinstance(old, str) and isinstance(new, str) and old != new:
        reason = upgrade_refusal(old, new)
        if reason is not None:
            failures.append((VERSION_KEY, reason + " Nothing was changed."))
    return failures


class KubernetesVersionPinProvider(ResourceProvider):
    # Pulumi stores this provider in the state (dill); the provider process that runs `check` loads it
    # from the project directory, so keep this module's path stable and its code self-contained.
    serialize_as_secret_always = False

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        return CheckResult(news, [CheckFailure(key, reason) for key, reason in pin_failures(olds, news)])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=olds.get(VERSION_KEY) != news.get(VERSION_KEY))

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"kubernetes-{props[VERSION_KEY]}", outs=props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=news)


class KubernetesVersionPin(Resource, module="hybrid", name="KubernetesVersionPin"):
    kubernetesVersion: pulumi.Output[str]

    def __init__(self, name: str, version: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(KubernetesVersionPinProvider(), name, {VERSION_KEY: version, STATE_FORMAT_KEY: STATE_FORMAT},
                         opts)
