"""Rewrites the admin kubeconfig kubeadm writes so that it reaches the API through the cluster endpoint."""
from __future__ import annotations

import yaml


def point_at_server(kubeconfig: str, server: str) -> str:
    """The same kubeconfig with every cluster's server set to `server` (e.g. https://VIP:6443).

    kubeadm writes controlPlaneEndpoint into admin.conf already; rewriting keeps the provider on the
    endpoint even for a kubeconfig read from a cluster initialised with another address.
    """
    document = yaml.safe_load(kubeconfig)
    if not isinstance(document, dict) or not document.get("clusters"):
        raise ValueError("not a kubeconfig: no clusters")
    for entry in document["clusters"]:
        entry["cluster"]["server"] = server
    return yaml.safe_dump(document, sort_keys=False)
