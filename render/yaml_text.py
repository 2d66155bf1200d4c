"""Which PyYAML loader and dumper the renderers use: libyaml's safe ones when PyYAML has them (its wheels do), else
PyYAML's own. The same documents either way; libyaml's are many times faster, which a fleet's renderings feel."""
from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SAFE_DUMPER: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text: str) -> Any:
    """One YAML document, as yaml.safe_load reads it."""
    return yaml.load(text, Loader=SAFE_LOADER)
