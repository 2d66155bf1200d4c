"""Preview-time guards: dynamic resources whose provider `check` sees the state's previous inputs next to
the program's new ones, and so can refuse, before anything runs, a change the infrastructure cannot follow.
Their `check` functions are also what the mock engine runs (tools/engine.py), so the tests see the same
refusals a preview would.
"""
from __future__ import annotations

from typing import Any, Callable

from .version_pin import VERSION_KEY, KubernetesVersionPin, upgrade_refusal


def version_pin_check(olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
    old, new = (olds or {}).get(VERSION_KEY), news.get(VERSION_KEY)
    if isinstance(old, str) and isinstance(new, str) and old != new:
        reason = upgrade_refusal(old, new)
        if reason is not None:
            return [reason + " Nothing was changed."]
    return []


# Per dynamic resource type, its check (the same function its provider's `check` calls).
DYNAMIC_CHECKS: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[str]]] = {
    f"pulumi-python:{KubernetesVersionPin._resource_type_name}": version_pin_check,
}
