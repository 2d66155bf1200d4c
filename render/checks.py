"""Input checks the renderers share: a rendered object or script is refused before it is built wrong."""
from __future__ import annotations

import re

# Kubernetes DNS-1123 label: namespaces, RuntimeClasses, most object names
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def require(condition: bool, message: str) -> None:
    """Raise ValueError(message) unless condition holds."""
    if not condition:
        raise ValueError(message)
