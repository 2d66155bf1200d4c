"""Renders the cluster's kubelet configuration after init: the keys this program manages in the kube-system ConfigMap
kubelet-config (serverTLSBootstrap for resourceMetrics; the hardening of render/security.py), the step that keeps them
the stack's, and each node's step that brings its kubelet to them (render/scripts/kubelet-config-sync.sh,
kubelet-config-node.sh; the Windows node's is render/windows_bootstrap.py render_kubelet_config).

kubeadm uploads the cluster-wide KubeletConfiguration to that ConfigMap at init, and every node downloads it at its
join and at each `kubeadm upgrade node` into /var/lib/kubelet/config.yaml (kubeadm "Reconfiguring a kubeadm cluster":
edit the kubelet-config ConfigMap, then on each node `kubeadm upgrade node phase kubelet-config` and a kubelet
restart). A node's step checks its file line by line against the lines kubeadm writes for these keys: kubeadm
marshals the document through sigs.k8s.io/yaml (yaml.v2: keys sorted, booleans true/false, a list's items at the key's
own indentation), so a managed key reads `key: value`, or `key:` followed by `- item` lines. Every managed key holds a
value only when on: a false boolean is omitted from the file (the KubeletConfiguration's bool fields are `omitempty`,
staging/src/k8s.io/kubelet/config/v1beta1/types.go), so a key left out here is absent there. Pure.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from render.node_steps import POLL_SECONDS, poll_attempts
from render.script_files import render_script
from render.security import KERNEL_DEFAULTS
from vocab.checks import check_machine, check_node_name, check_timeout, require

# Every key this program has ever managed in the kubelet-config document: one left out of the wanted settings is
# removed (its kubelet default applies again).
MANAGED_KEYS = ("eventBurst", "eventRecordQPS", "podPidsLimit", "protectKernelDefaults", "seccompDefault",
                "serverTLSBootstrap", "tlsCipherSuites")
# The field manager of the kubelet-config edit (kubelet-config-sync.sh): who owns it in managedFields.
FIELD_MANAGER = "hybrid-cluster"
# How long a Linux node's step waits for its approved serving certificate.
SERVING_CERTIFICATE_TIMEOUT_SECONDS = 300
# How long a restarted kubelet must stay up before the step counts it as running (it exits at start when its
# configuration or the kernel settings protectKernelDefaults checks are wrong, and systemd restarts it).
KUBELET_SETTLE_SECONDS = 20

KubeletSetting = bool | int | tuple[str, ...]


@dataclass(frozen=True)
class KubeletSettings:
    """The managed keys' wanted values: each key of MANAGED_KEYS that is on, and nothing else."""
    values: tuple[tuple[str, KubeletSetting], ...]

    def get(self, key: str) -> KubeletSetting | None:
        return dict(self.values).get(key)

    @property
    def server_tls_bootstrap(self) -> bool:
        return self.get("serverTLSBootstrap") is True


def kubelet_settings(values: Mapping[str, object]) -> KubeletSettings:
    """KubeletSettings from a mapping of managed keys (lists become tuples)."""
    pairs: list[tuple[str, KubeletSetting]] = []
    for key in sorted(values):
        value = values[key]
        require(key in MANAGED_KEYS, f"{key} is not a kubelet-config key this program manages ({MANAGED_KEYS})")
        if isinstance(value, (list, tuple)):
            require(bool(value) and all(isinstance(item, str) and item.isidentifier() for item in value),
                    f"{key}: a list of plain words")
            pairs.append((key, tuple(value)))
        elif isinstance(value, bool):
            require(value, f"{key}: a false boolean is left out, not written (kubeadm omits it)")
            pairs.append((key, value))
        elif isinstance(value, int):
            pairs.append((key, value))
        else:
            raise ValueError(f"{key}: {value!r} is neither a boolean, an integer nor a list of words")
    return KubeletSettings(values=tuple(pairs))


def settings_lines(settings: KubeletSettings) -> list[str]:
    """The lines kubeadm writes into a node's config.yaml for the settings (module docstring)."""
    lines: list[str] = []
    for key, value in settings.values:
        if isinstance(value, tuple):
            lines += [f"{key}:", *(f"- {item}" for item in value)]
        elif isinstance(value, bool):
            lines.append(f"{key}: true")
        else:
            lines.append(f"{key}: {value}")
    return lines


def absent_keys(settings: KubeletSettings) -> list[str]:
    """The managed keys the settings leave out, which a node's file must not hold."""
    wanted = {key for key, _ in settings.values}
    return [key for key in MANAGED_KEYS if key not in wanted]


def settings_digest(settings: KubeletSettings) -> str:
    return hashlib.sha256("\n".join(settings_lines(settings)).encode()).hexdigest()[:16]


def _settings_json(settings: KubeletSettings) -> str:
    return json.dumps({key: list(value) if isinstance(value, tuple) else value for key, value in settings.values},
                      sort_keys=True)


def render_kubelet_config_sync(settings: KubeletSettings) -> str:
    """On the first control-plane node: the kubelet-config ConfigMap's managed keys made the stack's."""
    return render_script("kubelet-config-sync.sh", WANTED_JSON=_settings_json(settings),
                         MANAGED_KEYS=list(MANAGED_KEYS), FIELD_MANAGER=FIELD_MANAGER)


def kernel_settings(settings: KubeletSettings) -> list[str]:
    """`key=value` of every kernel setting the kubelet insists on with protectKernelDefaults, else none."""
    return [f"{key}={value}" for key, value in KERNEL_DEFAULTS] if settings.get("protectKernelDefaults") else []


def render_kubelet_config_node(node_name: str, settings: KubeletSettings, machine: str = "unnamed",
                               timeout_seconds: int = SERVING_CERTIFICATE_TIMEOUT_SECONDS,
                               settle_seconds: int = KUBELET_SETTLE_SECONDS) -> str:
    """On a Linux node: its kubelet brought to the cluster's kubelet-config and restarted, checked to stay up, and with
    serverTLSBootstrap its CA-signed serving certificate waited for (render/scripts/kubelet-config-node.sh)."""
    check_node_name(node_name)
    check_machine(machine)
    check_timeout(timeout_seconds)
    return render_script("kubelet-config-node.sh", NODE_NAME=node_name, MACHINE=machine,
                         SETTINGS_DIGEST=settings_digest(settings), WANTED_LINES=settings_lines(settings),
                         ABSENT_KEYS=absent_keys(settings), KERNEL_SETTINGS=kernel_settings(settings),
                         SERVER_TLS_BOOTSTRAP=int(settings.server_tls_bootstrap), ATTEMPTS=poll_attempts(timeout_seconds),
                         POLL_SECONDS=POLL_SECONDS, TIMEOUT=timeout_seconds, SETTLE_SECONDS=settle_seconds)
