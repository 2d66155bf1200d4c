"""The Gatekeeper evaluator the policy pack runs (policy/pack/gatekeeper.py), for the tests: the same code
judges suite samples, declared workloads and the pack's findings. ``evaluate`` here defaults the
parameters to those of the prod constraint render.policy renders for the template."""
from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

_PACK = Path(__file__).resolve().parent.parent / "policy" / "pack"
if str(_PACK) not in sys.path:
    sys.path.insert(0, str(_PACK))

import gatekeeper as _gatekeeper  # noqa: E402  (policy/pack/gatekeeper.py)
from gatekeeper import (  # noqa: E402,F401  (re-exported for the tests)
    ADMISSION_TARGET,
    REGO_ENGINE,
    TemplateError,
    evaluate_constraint,
    inventory_document,
    matches,
    package,
    rego_code,
    rego_libs,
    rego_source,
    review,
)


def default_parameters(template: dict) -> dict:
    """The prod constraint's parameters for this template (render.policy), so callers checking our own
    workloads need not repeat them."""
    from render import policy

    kind = template["spec"]["crd"]["spec"]["names"]["kind"]
    for constraint in policy.constraints("deny", ("default",)):
        if constraint["kind"] == kind:
            return constraint["spec"].get("parameters", {})
    raise TemplateError(f"render.policy renders no constraint of kind {kind}")


def evaluate(template: dict, obj: dict, inventory: Iterable[dict] = (), parameters: dict | None = None,
             namespace: str | None = None) -> list[str]:
    return _gatekeeper.evaluate(template, obj, inventory,
                                default_parameters(template) if parameters is None else parameters, namespace)
