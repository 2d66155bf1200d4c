"""Pure renderer of the PowerShell (render/scripts/windows-*.ps1, from WindowsNodeParams) that turns a fresh Windows
Server worker VM into a Kubernetes node joined with kubeadm, and that cleans the node up again before the VM is deleted.

Owns: the rendered script text of the guest preparation steps, of the Windows ``kubeadm join`` and of its delete
script (``kubeadm reset`` plus HNS/CNI cleanup), and of the node's Kubernetes upgrade, containerd update and kubelet
configuration; nothing here talks to Windows or imports Pulumi.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from render import containerd
from render.hyperv import (
    HEARTBEAT_TIMEOUT_SECONDS,
    POWERSHELL_DIRECT_TIMEOUT_SECONDS,
    check_computer_name,
    check_vm_name,
    ssh_command,
)
from render.kubelet_config import (
    KUBELET_SETTLE_SECONDS,
    SERVING_CERTIFICATE_TIMEOUT_SECONDS,
    KubeletSettings,
    absent_keys,
    settings_digest,
    settings_lines,
)
from render.script_files import render_script
from vocab.checks import DNS_SUBDOMAIN, HTTP_ENDPOINT, REGISTRY_HOST, VERSION, check_image, check_machine, check_version, is_host
from vocab.cluster import WINDOWS_CRI_SOCKET

# ---------------------------------------------------------------------------------------
# Inputs and fixed locations
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowsNodeParams:
    vm_name: str
    computer_name: str
    kubernetes_version: str  # "1.36.4"
    containerd_version: str  # "2.3.5" (config.compat)
    pause_image: str  # config.compat.WINDOWS[...].pause_image
    ntp_servers: tuple[str, ...]
    dynamic_port_start: int
    dynamic_port_count: int
    registry_mirrors: tuple[tuple[str, str, bool, str | None], ...]  # (upstream, endpoint, override_path, CA PEM)
    cni_bin_dir: str  # must equal the Calico Installation's spec.windowsNodes.cniBinDir
    cni_conf_dir: str  # must equal the Calico Installation's spec.windowsNodes.cniConfigDir
    # Where the kubelet and windows_exporter rules admit connections from: the cluster's networks (the nodes', where
    # the API server and node-addressed scrapes come from, and the pods'). Empty: from anywhere.
    node_firewall_sources: tuple[str, ...] = ()
    # Inbound TCP the pod network may not reach on this node (security.networkPolicy; empty: no such rule).
    pod_guard_sources: tuple[str, ...] = ()
    pod_guard_ports: tuple[int, ...] = ()
    # The DNS suffix short names are tried with (network.searchDomain); "": the guest's own list is left.
    search_domain: str = ""
    # The Windows time zone ID of the stack's `timezone` (vocab/time_zones.py); "": the guest's own is left.
    time_zone: str = ""


# The Tigera operator fills an unset spec.windowsNodes with "/opt/cni/bin", "/etc/cni/net.d" and
# "/var/log/calico/cni" for every provider but AKS and EKS ("Default locations to match vanilla
# Kubernetes"): tigera/operator pkg/render/windows.go DefaultWindowsCNIDirectories, called from
# pkg/controller/installation/core_controller.go fillDefaults. They become hostPath volumes of the
# calico-node-windows HostProcess pods, which Windows resolves on the system drive (C:/opt/cni/bin);
# the Installation CRD describes both as having to match containerd's CNI bin/conf dirs
# (tests/fixtures/schemas/operator.tigera.io_v1_Installation.json, windowsNodes.cniBinDir/cniConfigDir).
# The Installation carries the operator's own forward-slash defaults (the paths the operator's Windows
# rendering is written and tested against), and containerd gets the same paths with the drive letter,
# as sig-windows-tools hostprocess/Install-Containerd.ps1 writes them ("c:/opt/cni/bin",
# "c:/etc/cni/net.d"). PowerShell and containerd accept '/' as the directory separator.
CALICO_WINDOWS_CNI_BIN_DIR = "/opt/cni/bin"
CALICO_WINDOWS_CNI_CONF_DIR = "/etc/cni/net.d"
WINDOWS_SYSTEM_DRIVE = "C:"
DEFAULT_CNI_BIN_DIR = WINDOWS_SYSTEM_DRIVE + CALICO_WINDOWS_CNI_BIN_DIR
DEFAULT_CNI_CONF_DIR = WINDOWS_SYSTEM_DRIVE + CALICO_WINDOWS_CNI_CONF_DIR


# kubelet/kubeadm/kubectl live in C:\k, as in sig-windows-tools PrepareNode.ps1 ($env:SystemDrive\k).
KUBERNETES_BIN_DIR = r"C:\k"
KUBELET_KUBECONFIG = r"C:\etc\kubernetes\kubelet.conf"
# kubeadm writes the node's flags here (KUBELET_KUBEADM_ARGS), among them --register-with-taints and --node-labels; a
# service command line cannot read it (image-builder issue #2011, "kubelet installed via sc.exe ... ignores
# KUBELET_KUBEADM_ARGS"), so the join copies them onto the service command line (the Join section below).
KUBEADM_FLAGS_FILE = r"C:\var\lib\kubelet\kubeadm-flags.env"
# Inbound TCP ports a Windows node serves, each with the firewall rule that opens it: the kubelet API, and
# windows_exporter, whose Kubernetes guide asks for 9182 to be opened on the node
# (prometheus-community/windows_exporter docs/kubernetes/kubernetes.md, "Configuring the firewall").
# They go with the node: removing the VM removes them.
NODE_FIREWALL_RULES: tuple[tuple[str, int], ...] = (
    ("kubernetes-kubelet-10250", 10250),
    ("windows-exporter-9182", 9182),
)

# The Block rule that keeps pods off a Windows node's administrative ports through any of its addresses, as the Linux
# nodes' pod guard does (render/security.py); a block rule wins over every allow rule (learn.microsoft.com, Windows
# Firewall rules, "Rule precedence for inbound rules": "Explicit block rules will take precedence over any conflicting
# allow rules").
POD_GUARD_FIREWALL_RULE = "hybrid-cluster-pod-guard"

# Directories the kubelet and kubeadm expect (PrepareNode.ps1 and image-builder tasks/kubelet.yml
# create C:\var\log\kubelet, C:\etc\kubernetes\pki and C:\etc\kubernetes\manifests). Their
# C:\var\lib\kubelet\etc\kubernetes\pki symlink is left out: it "is required in 1.22 and below due
# to invalid absolute path handling" (image-builder tasks/kubelet.yml, issue #853).
_KUBERNETES_DIRECTORIES = (
    r"C:\var\log\kubelet",
    r"C:\var\lib\kubelet",
    r"C:\etc\kubernetes\pki",
    r"C:\etc\kubernetes\manifests",
)

# dl.k8s.io/release/v<version>/bin/windows/amd64/<name> with <name>.sha256 beside it (a bare hex
# digest: kubernetes-sigs/cluster-api-provider-azure and rancher/rke2 release tooling append the file
# name before `sha256sum -c`). kube-log-runner.exe is fetched from the same place by image-builder
# tasks/sc.yml ("{{ kubernetes_base_url }}/kube-log-runner.exe").
_KUBERNETES_BINARIES = ("kubelet.exe", "kubeadm.exe", "kubectl.exe", "kube-log-runner.exe")

# The kubelet is registered with the Service Control Manager directly, the way upstream runs it without NSSM:
# kubernetes/kubernetes cluster/gce/windows/k8s-node-setup.psm1 (`sc.exe create kubelet binPath=
# "...\kube-log-runner.exe -log-file=... ...\kubelet.exe ..."`), kubernetes-sigs/image-builder
# images/capi/ansible/windows/roles/kubernetes/tasks/sc.yml and templates/RestartKubelet.ps1. sig-windows-tools
# hostprocess/PrepareNode.ps1 instead wraps a StartKubelet.ps1 in NSSM, a third-party binary with no published
# checksum, so it is not used.
# The kubelet service command line before kubeadm's flags are appended, after image-builder
# tasks/sc.yml and the kubernetes e2e Windows node runner: kube-log-runner writes the log file
# ("Windows services don't have a mechanism for redirecting output of a process",
# kubernetes/kubernetes staging/src/k8s.io/component-base/logs/kube-log-runner/README.md), the
# kubelet talks to the SCM itself (--windows-service). cgroups-per-qos/enforce-node-allocatable/
# resolv-conf are the Windows overrides every upstream Windows kubelet command line carries
# (PrepareNode.ps1, sc.yml). --pod-infra-container-image is gone: the flag was removed in 1.35
# (kubernetes/kubernetes#133779; sig-windows-tools#397 "causes kubelet to fail to start") and the
# sandbox image is containerd's pinned_images.sandbox instead. Empty values are written as `flag=`:
# the service command line has no shell, and the kubelet parses `--resolv-conf=` as "".
_KUBELET_SERVICE_BASE = " ".join(
    (
        r"C:\k\kube-log-runner.exe",
        r"--log-file=C:\var\log\kubelet\kubelet.log",
        r"C:\k\kubelet.exe",
        "--windows-service",
        r"--cert-dir=C:\var\lib\kubelet\pki",
        r"--config=C:\var\lib\kubelet\config.yaml",
        r"--bootstrap-kubeconfig=C:\etc\kubernetes\bootstrap-kubelet.conf",
        rf"--kubeconfig={KUBELET_KUBECONFIG}",
        f"--container-runtime-endpoint={WINDOWS_CRI_SOCKET}",
        "--enable-debugging-handlers",
        "--cgroups-per-qos=false",
        "--enforce-node-allocatable=",
        "--resolv-conf=",
    )
)

# The join line from `kubeadm token create --print-join-command`, worker form only (a Windows node
# is never a control-plane node). The token follows k8s.io/cluster-bootstrap token/api
# BootstrapTokenPattern `\A([a-z0-9]{6})\.([a-z0-9]{16})\z`; the hash is "sha256:" and 64 hex
# digits. One pattern for Python's re (tests) and .NET's Regex (the script, via [regex]::Match,
# case-sensitive like re): numbered groups only, ASCII classes only, anchors ^ and $ on one line.
JOIN_LINE_PATTERN = (
    r"^\s*kubeadm join "
    r"((?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5})"
    r" --token ([a-z0-9]{6}\.[a-z0-9]{16})"
    r" --discovery-token-ca-cert-hash (sha256:[a-f0-9]{64})\s*$"
)

# What may go from kubeadm-flags.env onto the service command line: `--name=value` words without
# quotes or spaces (kubeadm writes "--%s=%s" per flag). Anything else stops the join.
KUBEADM_FLAG_PATTERN = r'^--[a-z0-9-]+=[^\s"]*$'

# The JoinConfiguration's placeholders, in the order windows-join.ps1 replaces them ($JoinPlaceholders[0]
# by the token, [1] by the CA cert hash, [2] by the API endpoint), in the guest.
JOIN_PLACEHOLDERS = ("@@JOIN_TOKEN@@", "@@JOIN_CA_CERT_HASH@@", "@@JOIN_API_ENDPOINT@@")

# Calico for Windows (VXLAN) names its pod network "Calico" (KUBE_NETWORK "Calico.*",
# projectcalico/calico node/windows-packaging/CalicoWindows/config-hpc.ps1) and first creates an
# overlay network "External" to bring up the vSwitch (its network reset script, EnsureExternalNetwork).
# Its own uninstall removes every non-NAT HNS network after a reboot (uninstall-calico-hpc.ps1); the
# reset removes only these two. Calico keeps node state in the /var/run/calico and /var/lib/calico
# hostPaths of calico-node-windows (tigera/operator pkg/render/windows.go windowsVolumes).
_CALICO_HNS_NETWORKS = ("Calico*", "External")
_CALICO_STATE_DIRS = (r"C:\var\run\calico", r"C:\var\lib\calico")

# The reset waits less for PowerShell Direct than the preparation: the guest is up and set up.
RESET_POWERSHELL_DIRECT_TIMEOUT_SECONDS = 300

# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------

_WINDOWS_DIR = re.compile(r"^[A-Za-z]:[\\/][^'\"*?<>|\r\n\t]*$")


def _validate(p: WindowsNodeParams) -> None:
    check_vm_name(p.vm_name)
    check_computer_name(p.computer_name)
    check_version(p.kubernetes_version, "kubernetes_version")
    if not VERSION.match(p.containerd_version) or not p.containerd_version.startswith("2."):
        raise ValueError(
            f"containerd_version {p.containerd_version!r}: only containerd 2.x (config version 3) is "
            "rendered for Windows"
        )
    check_image(p.pause_image, "pause_image")
    if p.time_zone and not re.fullmatch(r"[A-Za-z0-9 ().+'-]{1,64}", p.time_zone):
        raise ValueError(f"{p.time_zone!r} is not a Windows time zone ID")
    if p.search_domain and not DNS_SUBDOMAIN.match(p.search_domain):
        raise ValueError(f"search domain {p.search_domain!r} is not a lower-case DNS name")
    if not p.ntp_servers:
        raise ValueError("at least one ntp server is required")
    for server in p.ntp_servers:
        if not is_host(server):
            raise ValueError(f"ntp server {server!r} is not a host name or address")
    if not 1025 <= p.dynamic_port_start <= 65535 - 254:
        raise ValueError("dynamic_port_start must be 1025-65281")
    if p.dynamic_port_count < 255 or p.dynamic_port_start + p.dynamic_port_count - 1 > 65535:
        raise ValueError("dynamic_port_count must be at least 255 and end at or below port 65535")
    for upstream, endpoint, override_path, _ in p.registry_mirrors:
        if not REGISTRY_HOST.match(upstream):
            raise ValueError(f"registry upstream {upstream!r} must be a host name without port")
        if not HTTP_ENDPOINT.match(endpoint):
            raise ValueError(f"mirror endpoint {endpoint!r} is not an http(s) URL")
        if not isinstance(override_path, bool):
            raise TypeError("override_path must be a bool")
    for what, path in (("cni_bin_dir", p.cni_bin_dir), ("cni_conf_dir", p.cni_conf_dir)):
        if not _WINDOWS_DIR.match(path) or path != path.strip():
            raise ValueError(f"{what} {path!r} must be an absolute Windows path without quotes")
    for network in (*p.node_firewall_sources, *p.pod_guard_sources):
        ipaddress.IPv4Network(network)   # raises on anything but an IPv4 network


def _checked(script: str) -> str:
    ssh_command(script)  # raises when the encoded command would not fit the SSH command line
    return script


def _host_inputs(p: WindowsNodeParams, ps_direct_timeout: int) -> dict[str, object]:
    """The inputs every script reads on the host: the VM, and the bounds of lib/hyperv-guest-wait.ps1."""
    return {"VmName": p.vm_name, "HeartbeatTimeoutSec": HEARTBEAT_TIMEOUT_SECONDS,
            "PsDirectTimeoutSec": ps_direct_timeout}


# ---------------------------------------------------------------------------------------
# The scripts: render/scripts/windows-*.ps1, rendered through render.script_files. Every value
# reaches a script as an input (a `$Name = <literal>` line at its top) and every guest script
# block gets its values through -ArgumentList. components/cluster/bootstrap.py runs every script on the Hyper-V host
# through render.hyperv.ssh_command; the scripts act in the guest over PowerShell Direct (`Invoke-Command -VMName ...
# -Credential ... -ScriptBlock {...} -ArgumentList ...`), the way render/hyperv.py converges the VM itself. Shared
# pieces are fragments in
# render/scripts/lib/: hyperv-preamble, hyperv-read-guest-password and hyperv-guest-wait
# (render/hyperv.py), windows-host-functions, windows-host-report, and inside the guest blocks
# windows-guest-start, windows-guest-native, windows-guest-download.
#
# Where the comments are: notes (`##` lines) in the files carry the sources and reasons, next to
# the code they explain, and are dropped at render time (render.script_files), so the size of the
# encoded command (render.hyperv.MAX_SSH_COMMAND_CHARS) is not spent on them. The shared fragments
# carry their own notes. The comments here explain the Python: validation, constants, parameters.
# ---------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------
# Step 1: Containers feature, with the restart it needs
# ---------------------------------------------------------------------------------------
#
# render/scripts/windows-containers-feature.ps1 (its notes, with their sources, are in the file).


def _render_containers_feature(p: WindowsNodeParams) -> str:
    return render_script("windows-containers-feature.ps1", **_host_inputs(p, POWERSHELL_DIRECT_TIMEOUT_SECONDS))


# ---------------------------------------------------------------------------------------
# Step 2: time, dynamic ports, firewall
# ---------------------------------------------------------------------------------------
#
# render/scripts/windows-host-settings.ps1 (its notes, with their sources, are in the file).


def _render_host_settings(p: WindowsNodeParams) -> str:
    return render_script(
        "windows-host-settings.ps1",
        **_host_inputs(p, POWERSHELL_DIRECT_TIMEOUT_SECONDS),
        NtpServers=list(p.ntp_servers),
        SearchDomain=p.search_domain,
        TimeZone=p.time_zone,
        PortStart=p.dynamic_port_start,
        PortCount=p.dynamic_port_count,
        RuleNames=[name for name, _ in NODE_FIREWALL_RULES],
        RulePorts=[port for _, port in NODE_FIREWALL_RULES],
        RuleSources=list(p.node_firewall_sources) or ["Any"],
        GuardName=POD_GUARD_FIREWALL_RULE,
        GuardSources=list(p.pod_guard_sources),
        GuardPorts=list(p.pod_guard_ports),
    )


# ---------------------------------------------------------------------------------------
# Step 3: containerd
# ---------------------------------------------------------------------------------------
#
# render/scripts/windows-containerd.ps1 (its notes, with their sources, are in the file).


def _render_containerd(p: WindowsNodeParams) -> str:
    mirrors = [containerd.RegistryMirror(*mirror) for mirror in p.registry_mirrors]
    hosts, cas = containerd.registry_hosts_files(mirrors), containerd.registry_ca_files(mirrors)
    return render_script(
        "windows-containerd.ps1",
        **_host_inputs(p, POWERSHELL_DIRECT_TIMEOUT_SECONDS),
        ConfigText=containerd.windows_config_toml(p.pause_image, p.cni_bin_dir, p.cni_conf_dir),
        Directories=[p.cni_bin_dir, p.cni_conf_dir, containerd.WINDOWS_CERTS_DIR],
        HostsDir=containerd.WINDOWS_CERTS_DIR,
        # The script builds its upstream -> hosts.toml table from the two lists, paired by index.
        HostsUpstreams=list(hosts),
        HostsTexts=list(hosts.values()),
        CaDir=containerd.MIRROR_CA_DIR, CaNames=list(cas), CaTexts=list(cas.values()),
        ManagedMarker=containerd.MANAGED_MARKER,
    )


# ---------------------------------------------------------------------------------------
# Step 4: kubelet, kubeadm, kubectl and the kubelet service
# ---------------------------------------------------------------------------------------
#
# render/scripts/windows-kubernetes.ps1, which includes lib/windows-kubernetes-binaries.ps1 (their
# notes, with their sources, are in the files). The kubelet service is registered disabled: the Join section says why.


def _kubernetes_inputs(p: WindowsNodeParams) -> dict[str, object]:
    """The inputs of lib/windows-kubernetes-binaries.ps1, which windows-kubernetes.ps1 and
    windows-upgrade.ps1 include."""
    return {
        **_host_inputs(p, POWERSHELL_DIRECT_TIMEOUT_SECONDS),
        "BaseUrl": f"https://dl.k8s.io/release/v{p.kubernetes_version}/bin/windows/amd64",
        "BinDir": KUBERNETES_BIN_DIR,
        "Binaries": list(_KUBERNETES_BINARIES),
        "Directories": list(_KUBERNETES_DIRECTORIES),
        "ServiceCommand": _KUBELET_SERVICE_BASE,
    }


def _render_kubernetes(p: WindowsNodeParams) -> str:
    return render_script("windows-kubernetes.ps1", **_kubernetes_inputs(p), UpgradeTo="", Marker="", FlagsFile="",
                         FlagPattern="")


# render/scripts/windows-upgrade.ps1 (its notes, with their sources, are in the file).
# The file in which the upgrade records the version its last complete run reached.
UPGRADE_MARKER = r"C:\var\lib\kubelet\hybrid-cluster-upgraded-to"


def render_upgrade(p: WindowsNodeParams, machine: str = "unnamed") -> str:
    """The host script that upgrades the joined Windows node in ``p.vm_name`` to ``p.kubernetes_version``.
    Idempotent: binaries already at the version are kept, and ``kubeadm upgrade node`` re-applies the
    same configuration. stdin line 1: the guest Administrator password."""
    _validate(p)
    check_machine(machine)
    script = render_script("windows-upgrade.ps1", **_kubernetes_inputs(p), UpgradeTo=p.kubernetes_version,
                           Marker=UPGRADE_MARKER, Machine=machine, FlagsFile=KUBEADM_FLAGS_FILE,
                           FlagPattern=KUBEADM_FLAG_PATTERN)
    return _checked(script)


def render_kubelet_config(p: WindowsNodeParams, settings: KubeletSettings, machine: str = "unnamed") -> str:
    """The host script that brings the kubelet of the joined Windows node in ``p.vm_name`` to the cluster's
    kubelet-config (``settings``, render/kubelet_config.py), restarts it and, with serverTLSBootstrap, waits for its
    serving certificate (render/scripts/windows-kubelet-config.ps1). stdin line 1: the guest Administrator password."""
    _validate(p)
    check_machine(machine)
    return _checked(render_script(
        "windows-kubelet-config.ps1", **_host_inputs(p, POWERSHELL_DIRECT_TIMEOUT_SECONDS), BinDir=KUBERNETES_BIN_DIR,
        SettingsDigest=settings_digest(settings), WantedLines=settings_lines(settings), AbsentKeys=absent_keys(settings),
        ServerTlsBootstrap=settings.server_tls_bootstrap, Machine=machine,
        # The wait for the approved serving certificate, as long as a Linux node's (the approver answers within its
        # period, render/serving_approver.py; the kubelet retries its request with backoff).
        CertificateTimeoutSec=SERVING_CERTIFICATE_TIMEOUT_SECONDS, SettleSec=KUBELET_SETTLE_SECONDS))


def render_containerd_binaries(p: WindowsNodeParams, machine: str = "unnamed", keep_member_version: bool = True) -> str:
    """The host script that installs containerd ``p.containerd_version`` in ``p.vm_name``
    (render/scripts/windows-containerd-binaries.ps1): staged and verified first, swapped with the kubelet
    stopped, the old binaries back on any failure. As a preparation step (``keep_member_version``) it
    leaves a member's runtime alone; the upgrade chain renders it with False for the drained node and its
    ``machine``. stdin line 1: the guest Administrator password."""
    _validate(p)
    check_machine(machine)
    return _checked(render_script(
        "windows-containerd-binaries.ps1", **_host_inputs(p, POWERSHELL_DIRECT_TIMEOUT_SECONDS),
        Version=p.containerd_version, TarballUrl=containerd.windows_release_url(p.containerd_version),
        KubeletConf=KUBELET_KUBECONFIG, KeepMemberVersion=int(keep_member_version), Machine=machine))


def render_runtime_upgrade(p: WindowsNodeParams, machine: str = "unnamed") -> str:
    """The upgrade chain's runtime step for a drained Windows node: render_containerd_binaries for it."""
    return render_containerd_binaries(p, machine, keep_member_version=False)


# The preparation steps that install version-bound binaries (the runtime; Kubernetes).
CONTAINERD_BINARIES_STEP = "containerd-binaries"
KUBERNETES_STEP = "kubernetes"


def render_binaries_update(p: WindowsNodeParams, what: str) -> str:
    """The update of a version-bound preparation step: nothing (render/scripts/windows-binaries-update.ps1)."""
    _validate(p)
    return _checked(render_script("windows-binaries-update.ps1", VmName=p.vm_name, What=what))


def render_prepare_update(p: WindowsNodeParams, step: str, script: str) -> str:
    """The update of preparation ``step`` (whose create is ``script``): the version-bound steps leave their
    binaries to the upgrade chain and name no version, so a pin change re-runs nothing; the others
    converge as created."""
    if step == KUBERNETES_STEP:
        return render_binaries_update(p, "Kubernetes binaries")
    if step == CONTAINERD_BINARIES_STEP:
        return render_binaries_update(p, "containerd binaries")
    return script


def render_prepare_steps(p: WindowsNodeParams) -> list[tuple[str, str]]:
    """The guest preparation as [(step_name, host_script)], to run in order; each step is idempotent
    and reads the guest Administrator password from the first line of stdin."""
    _validate(p)
    return [
        ("containers-feature", _checked(_render_containers_feature(p))),
        ("host-settings", _checked(_render_host_settings(p))),
        (CONTAINERD_BINARIES_STEP, render_containerd_binaries(p)),
        ("containerd", _checked(_render_containerd(p))),
        (KUBERNETES_STEP, _checked(_render_kubernetes(p))),
    ]


# ---------------------------------------------------------------------------------------
# Join
# ---------------------------------------------------------------------------------------
#
# render/scripts/windows-join.ps1 (its notes, with their sources, are in the file).
#
# Why the join is split in two: the kubelet service cannot read kubeadm's flags (KUBEADM_FLAGS_FILE), so preparation
# registers it *disabled*, and the join runs ``kubeadm join --skip-phases=kubelet-wait-bootstrap`` (kubeadm writes the
# flags file; its attempt to start the disabled service only prints "WARNING: unable to start the kubelet service",
# kubernetes/kubernetes cmd/kubeadm/app/phases/kubelet/kubelet.go TryStartKubelet), appends the flags to the service
# command line, starts the kubelet and then runs ``kubeadm join phase kubelet-wait-bootstrap``. The node therefore
# registers with its taint from the first moment. kubelet-wait-bootstrap is a separate phase that "will always run"
# since kubeadm 1.35 (kubernetes/kubernetes#134106, ControlPlaneKubeletLocalMode GA), which every supported minor
# (config.compat.KUBERNETES) is; ``--skip-*`` flags may be mixed with ``--config``
# (cmd/kubeadm/app/apis/kubeadm/validation/validation.go isAllowedFlag).


def render_join(p: WindowsNodeParams, join_config_yaml: str) -> str:
    """The Windows ``kubeadm join`` (create script of the join resource). stdin: line 1 the guest
    Administrator password, line 2 the join line. A node whose kubelet.conf exists is left alone."""
    _validate(p)
    for placeholder in JOIN_PLACEHOLDERS:
        if placeholder not in join_config_yaml:
            raise ValueError(f"join_config_yaml lacks the {placeholder} placeholder")
    if "kind: JoinConfiguration" not in join_config_yaml:
        raise ValueError("join_config_yaml is not a JoinConfiguration")
    if WINDOWS_CRI_SOCKET not in join_config_yaml:
        raise ValueError(f"join_config_yaml must set nodeRegistration.criSocket to {WINDOWS_CRI_SOCKET}")
    script = render_script(
        "windows-join.ps1",
        **_host_inputs(p, POWERSHELL_DIRECT_TIMEOUT_SECONDS),
        Template=join_config_yaml,
        JoinLinePattern=JOIN_LINE_PATTERN,
        FlagPattern=KUBEADM_FLAG_PATTERN,
        BinDir=KUBERNETES_BIN_DIR,
        KubeletConf=KUBELET_KUBECONFIG,
        FlagsFile=KUBEADM_FLAGS_FILE,
        ServiceBase=_KUBELET_SERVICE_BASE,
        CriSocket=WINDOWS_CRI_SOCKET,
        JoinPlaceholders=list(JOIN_PLACEHOLDERS),
    )
    return _checked(script)


# ---------------------------------------------------------------------------------------
# Reset (delete script of the join resource)
# ---------------------------------------------------------------------------------------
#
# render/scripts/windows-reset.ps1 (its notes, with their sources, are in the file).


def render_reset(p: WindowsNodeParams) -> str:
    """The join's delete script: ``kubeadm reset``, kubelet service stopped and disabled, Calico's
    HNS networks/endpoints, kube-proxy's policy lists and the CNI config removed. Idempotent; never
    blocks the VM's deletion (see the notes in render/scripts/windows-reset.ps1)."""
    _validate(p)
    script = render_script(
        "windows-reset.ps1",
        **_host_inputs(p, RESET_POWERSHELL_DIRECT_TIMEOUT_SECONDS),
        BinDir=KUBERNETES_BIN_DIR,
        CriSocket=WINDOWS_CRI_SOCKET,
        CniConfDir=p.cni_conf_dir,
        NetworkPatterns=list(_CALICO_HNS_NETWORKS),
        StateDirs=list(_CALICO_STATE_DIRS),
    )
    return _checked(script)
