"""libyaml's safe loader and dumper when PyYAML has them (its wheels do), else PyYAML's own, for the renderers that
load or dump on every node: many times faster, the same documents. Dumps elsewhere stay with yaml.safe_dump, whose
exact text a node step's input may carry."""
from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SAFE_DUMPER: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text: str) -> Any:
    """One YAML document, as yaml.safe_load reads it."""
    return yaml.load(text, Loader=SAFE_LOADER)
