"""Renders the steps that keep every control-plane node's settings the stack's after init, for a cluster built by
an earlier release as for one built today: the Secrets encryption key ring, the files the API server reads, the
ClusterConfiguration's component sections, each node's static Pods, and a change of encryption key in its phases
(render/scripts/encryption-keys.sh, control-plane-files.sh, kubeadm-config-sync.sh, control-plane-node.sh,
encryption-writer.sh, encryption-rewrite.sh). components/cluster/control_plane.py orders them. Pure: values in, script text
out; what the files hold is render/security.py's.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from render.linux_bootstrap import static_pod_restart_inputs
from render.node_steps import POLL_SECONDS
from render.script_files import render_script
from render.security import check_hardening_files, check_key_name, files_digest
from vocab.checks import check_node_name, require

# The field manager of the ClusterConfiguration edit (kubeadm-config-sync.sh): who owns it in managedFields.
FIELD_MANAGER = "hybrid-cluster"
# How often a namespace's Secrets are rewritten again after a conflicting write (encryption-rewrite.sh).
REWRITE_ATTEMPTS = 5
_COMPONENT_SECTIONS = ("apiServer", "controllerManager", "scheduler")


def components_digest(components: dict[str, Any]) -> str:
    """A short digest of the ClusterConfiguration's component sections (render.kubeadm.control_plane_components)."""
    return hashlib.sha256(json.dumps(components, sort_keys=True).encode()).hexdigest()[:16]


def render_encryption_keys(target: str) -> str:
    """On the first control-plane node: the target key made, and the key ring printed (a secret Output)."""
    check_key_name(target)
    return render_script("encryption-keys.sh", TARGET=target)


def render_control_plane_files(node_name: str, files: dict[str, str]) -> str:
    """On one control-plane node: its API server's files and the `read` phase of its encryption configuration
    (stdin: the key ring)."""
    check_node_name(node_name)
    check_hardening_files(files)
    return render_script("control-plane-files.sh", NODE=node_name, HARDENING_PATHS=list(files),
                         HARDENING_TEXTS=[text.rstrip("\n") for text in files.values()])


def render_kubeadm_config_sync(components: dict[str, Any]) -> str:
    """On the first control-plane node: the ClusterConfiguration's component sections made ``components``."""
    require(set(components) <= set(_COMPONENT_SECTIONS) and "apiServer" in components,
            f"the component sections are {_COMPONENT_SECTIONS}, with apiServer")
    return render_script("kubeadm-config-sync.sh", COMPONENTS_JSON=json.dumps(components, sort_keys=True),
                         FIELD_MANAGER=FIELD_MANAGER)


def render_control_plane_node(node_name: str, components: dict[str, Any], files: dict[str, str]) -> str:
    """On one control-plane node: its static Pods rewritten from the ClusterConfiguration, its API server restarted
    for changed files."""
    check_node_name(node_name)
    return render_script("control-plane-node.sh", NODE=node_name, COMPONENTS_DIGEST=components_digest(components),
                         FILES_DIGEST=files_digest(files), **static_pod_restart_inputs())


def render_encryption_writer(node_name: str) -> str:
    """On one control-plane node: the `write` phase of its encryption configuration (stdin: the key ring)."""
    check_node_name(node_name)
    return render_script("encryption-writer.sh", NODE=node_name, **static_pod_restart_inputs())


def render_encryption_rewrite(target: str) -> str:
    """On the first control-plane node: every Secret rewritten with ``target``, once."""
    check_key_name(target)
    return render_script("encryption-rewrite.sh", TARGET=target, ATTEMPTS=REWRITE_ATTEMPTS, POLL_SECONDS=POLL_SECONDS)
