"""Strict typed models of the configuration files the API server reads besides kubeadm's (render/security.py), and the
audit policy's rule matching, for the tests. Unknown fields, wrong types and unknown apiVersion/kind pairs are errors
(the API server decodes these files strictly).

Field names are the json tags of the upstream Go types, read at these tags:
  kubernetes/apiserver v0.36.3 (Kubernetes 1.36.3): pkg/apis/apiserver/v1/types.go (AdmissionConfiguration,
      AuthenticationConfiguration's anonymous section), pkg/apis/apiserver/v1/types_encryption.go
      (EncryptionConfiguration), pkg/apis/audit/v1/types.go (Policy, PolicyRule, GroupResources, Level, Stage)
  kubernetes/pod-security-admission v0.36.2: admission/api/v1/types.go (PodSecurityConfiguration)
Rule matching follows pkg/audit/policy/checker.go (the first rule that matches decides; a rule's empty list matches
everything; nonResourceURLs may end in `*`; a resource "pods/exec" is matched by "pods/exec" or "*/exec" or "pods/*").
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


# --- EncryptionConfiguration ------------------------------------------------------------------------------------

class Key(Strict):
    name: str
    secret: str


class Keys(Strict):
    keys: list[Key] = Field(min_length=1)


class Identity(Strict):
    pass


class Kms(Strict):
    apiVersion: str | None = None
    name: str
    cachesize: int | None = None
    endpoint: str
    timeout: str | None = None


class Provider(Strict):
    aesgcm: Keys | None = None
    aescbc: Keys | None = None
    secretbox: Keys | None = None
    identity: Identity | None = None
    kms: Kms | None = None


class ResourceConfiguration(Strict):
    resources: list[str] = Field(min_length=1)
    providers: list[Provider] = Field(min_length=1)


class EncryptionConfiguration(Strict):
    apiVersion: Literal["apiserver.config.k8s.io/v1"]
    kind: Literal["EncryptionConfiguration"]
    resources: list[ResourceConfiguration] = Field(min_length=1)


# --- AdmissionConfiguration and the PodSecurity plugin's ---------------------------------------------------------

PsaLevel = Literal["privileged", "baseline", "restricted"]


class PodSecurityDefaults(Strict):
    enforce: PsaLevel | None = None
    enforce_version: str | None = Field(default=None, alias="enforce-version")
    audit: PsaLevel | None = None
    audit_version: str | None = Field(default=None, alias="audit-version")
    warn: PsaLevel | None = None
    warn_version: str | None = Field(default=None, alias="warn-version")


class PodSecurityExemptions(Strict):
    usernames: list[str] | None = None
    namespaces: list[str] | None = None
    runtimeClasses: list[str] | None = None


class PodSecurityConfiguration(Strict):
    apiVersion: Literal["pod-security.admission.config.k8s.io/v1"]
    kind: Literal["PodSecurityConfiguration"]
    defaults: PodSecurityDefaults
    exemptions: PodSecurityExemptions


class AdmissionPlugin(Strict):
    name: str
    path: str | None = None
    configuration: PodSecurityConfiguration | None = None


class AdmissionConfiguration(Strict):
    apiVersion: Literal["apiserver.config.k8s.io/v1"]
    kind: Literal["AdmissionConfiguration"]
    plugins: list[AdmissionPlugin]


# --- AuthenticationConfiguration (the anonymous section this program writes) ----------------------------------

class AnonymousCondition(Strict):
    path: str


class Anonymous(Strict):
    enabled: bool
    conditions: list[AnonymousCondition] | None = None


class AuthenticationConfiguration(Strict):
    apiVersion: Literal["apiserver.config.k8s.io/v1"]
    kind: Literal["AuthenticationConfiguration"]
    jwt: list[dict] | None = None
    anonymous: Anonymous | None = None


# --- audit.k8s.io/v1 Policy ---------------------------------------------------------------------------------------

Level = Literal["None", "Metadata", "Request", "RequestResponse"]
Stage = Literal["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"]


class GroupResources(Strict):
    group: str | None = None
    resources: list[str] | None = None
    resourceNames: list[str] | None = None


class PolicyRule(Strict):
    level: Level
    users: list[str] | None = None
    userGroups: list[str] | None = None
    verbs: list[str] | None = None
    resources: list[GroupResources] | None = None
    namespaces: list[str] | None = None
    nonResourceURLs: list[str] | None = None
    omitStages: list[Stage] | None = None
    omitManagedFields: bool | None = None


class Policy(Strict):
    apiVersion: Literal["audit.k8s.io/v1"]
    kind: Literal["Policy"]
    metadata: dict | None = None
    rules: list[PolicyRule]
    omitStages: list[Stage] | None = None
    omitManagedFields: bool | None = None


def _matches_resource(rule: PolicyRule, group: str, resource: str, subresource: str, namespace: str, name: str) -> bool:
    """ruleMatchesResource: namespaces, then the group/resource pairs with "*", "*/sub" and "res/*"."""
    if rule.namespaces and namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    combined = f"{resource}/{subresource}" if subresource else resource
    for gr in rule.resources:
        if (gr.group or "") != group:
            continue
        if not gr.resources:
            return True
        for res in gr.resources:
            if gr.resourceNames and name not in gr.resourceNames:
                continue
            if res in (combined, "*"):
                return True
            if subresource and res.startswith("*/") and res[2:] == subresource:
                return True
            if res.endswith("/*") and res[:-2] == resource:
                return True
    return False


def audit_level(policy: Policy, *, user: str = "alice", groups: tuple[str, ...] = ("system:authenticated",),
                verb: str = "get", group: str = "", resource: str | None = None, subresource: str = "",
                namespace: str = "", name: str = "", path: str | None = None) -> str:
    """The level the first matching rule gives a request (pkg/audit/policy/checker.go ruleMatches): a resource
    request when `resource` is given, else a non-resource request for `path`."""
    for rule in policy.rules:
        if rule.users and user not in rule.users:
            continue
        if rule.userGroups and not set(groups) & set(rule.userGroups):
            continue
        if rule.verbs and verb not in rule.verbs:
            continue
        if rule.namespaces or rule.resources:
            if resource is None or not _matches_resource(rule, group, resource, subresource, namespace, name):
                continue
        elif rule.nonResourceURLs:
            if path is None or not any(path == url or (url.endswith("*") and path.startswith(url[:-1]))
                                       for url in rule.nonResourceURLs):
                continue
        return rule.level
    return "None"
