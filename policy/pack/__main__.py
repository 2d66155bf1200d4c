"""The hybrid-cluster policy pack: the Gatekeeper constraints the program declares, their templates' own Rego run
on every workload this program declares, and the infrastructure rules (protected control-plane VMs,
credentials kept out of logs and out of plain text, every SSH connection pinned to its host key), enforced at
`pulumi preview --policy-pack policy/pack`.

This module owns only the wiring: it turns what pulumi_policy hands a validation into rules.Declared and
reports what the pure functions in rules.py find. Every policy is mandatory.

PolicyPack(...) serves the pack and never returns: it starts a gRPC server, prints its port and sleeps
until interrupted (pulumi_policy 1.21.0 policy.py, PolicyPack.__init__). So it is built only when the CLI
runs this file as __main__ (pulumi/policy/__main__.py: ``runpy.run_path(program, run_name="__main__")``),
and importing the module (tests) only declares POLICIES.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi.runtime
import rules  # this pack's rules.py: runpy puts the pack folder first on sys.path
from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

PACK_NAME = "hybrid-cluster-policies"


def plain(value: Any) -> Any:
    """The SDK's property proxies as plain dicts and lists. Reading an unknown value through a proxy
    raises UnknownValueError (pulumi_policy proxy.py); here it becomes rules.UNKNOWN so one unknown field
    does not hide every other finding."""
    if isinstance(value, Mapping):
        result = {}
        for key in value:
            try:
                result[key] = plain(value[key])
            except UnknownValueError:
                result[key] = rules.UNKNOWN
        return result
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = []
        for index in range(len(value)):
            try:
                items.append(plain(value[index]))
            except UnknownValueError:
                items.append(rules.UNKNOWN)
        return items
    return value


def declared(resource: ResourceValidationArgs | PolicyResource) -> rules.Declared:
    return rules.Declared(
        type=resource.resource_type,
        name=resource.name,
        urn=resource.urn,
        props=plain(resource.props),
        protect=bool(resource.opts.protect),
        additional_secret_outputs=tuple(resource.opts.additional_secret_outputs),
        ignore_changes=tuple(resource.opts.ignore_changes or ()),
    )


def _describe(rule) -> str:
    """A rule function's docstring on one line: the policy's description in the CLI's report."""
    return " ".join((rule.__doc__ or rule.__name__).split())


def gatekeeper_policy() -> StackValidationPolicy:
    # A stack policy: templates, constraints and RuntimeClasses are other resources of the stack.
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        wanted = [r for r in args.resources
                  if r.resource_type in rules.POD_TEMPLATE_PATHS
                  or r.resource_type in (rules.RUNTIME_CLASS_TYPE, rules.TEMPLATE_TYPE)
                  or r.resource_type.startswith(rules.CONSTRAINT_TYPE_PREFIX)]
        for finding in rules.gatekeeper_findings([declared(r) for r in wanted]):
            report_violation(finding.message, finding.urn)

    return StackValidationPolicy(name=rules.GATEKEEPER_RULE, description=_describe(rules.gatekeeper_findings),
                                 validate=validate, enforcement_level=EnforcementLevel.MANDATORY)


def protection_policy() -> StackValidationPolicy:
    # A stack policy: whether a control-plane VM may be unprotected is recorded on the machines guard.
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        wanted = [r for r in args.resources if r.resource_type in (rules.PROXMOX_VM_TYPE, rules.MACHINES_GUARD_TYPE)]
        for finding in rules.control_plane_protection_findings([declared(r) for r in wanted]):
            report_violation(finding.message, finding.urn)

    return StackValidationPolicy(name=rules.PROTECTION_RULE, description=_describe(rules.control_plane_protection_findings),
                                 validate=validate, enforcement_level=EnforcementLevel.MANDATORY)


def resource_policy(name: str, rule: rules.ResourceRule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        for message in rule(declared(args)):
            report_violation(message, None)

    return ResourceValidationPolicy(name=name, description=_describe(rule),
                                    validate=validate, enforcement_level=EnforcementLevel.MANDATORY)


def configured_policy(name: str, rule: Callable[[rules.Declared, Any], list[str]], setting: Callable[[Mapping[str, Any]], Any],
                      unset: str | None = None) -> ResourceValidationPolicy:
    """A resource rule that also takes a setting read from the stack's config, as the engine passes it decrypted in
    PULUMI_CONFIG (rules.py); `unset`: the reason to report the policy not applicable when the setting is empty."""
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        value = setting(pulumi.runtime.get_config_env())
        if unset is not None and not value:
            args.not_applicable(unset)
        for message in rule(declared(args), value):
            report_violation(message, None)

    return ResourceValidationPolicy(name=name, description=_describe(rule), validate=validate,
                                    enforcement_level=EnforcementLevel.MANDATORY)


POLICIES = [
    gatekeeper_policy(),
    protection_policy(),
    *(resource_policy(name, rule) for name, rule in rules.RESOURCE_RULES.items()),
    configured_policy(rules.SECRET_CONFIG_RULE, rules.secret_config_leaks, rules.secret_values_from_config,
                      unset="no secret config values reached the policy pack"),
    configured_policy(rules.HOST_KEY_RULE, rules.unpinned_connections, rules.host_keys_required),
]


def serve() -> None:
    PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=EnforcementLevel.MANDATORY)


if __name__ == "__main__":
    serve()
