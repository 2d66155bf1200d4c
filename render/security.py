"""Renders the control plane's and the kubelets' hardening: the API server's audit policy, Pod Security admission
configuration and authentication configuration (files on every control-plane node), the flags and volumes that name
them, the controller manager's and scheduler's flags, the kubelet settings every node's kubelet-config carries, and
the kernel settings the kubelet's protectKernelDefaults requires.

Owns the paths of those files and their content. Pure: plain values in, dicts and text out.
"""
from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from render import yaml_text
from render.kubeadm import HostPathMount
from vocab.checks import DNS_LABEL, require

# Sources in this file: the notes of issue #36; upstream paths are kubernetes/kubernetes at v1.36.3 unless said.

HARDENING_DIR = "/etc/kubernetes/hardening"
AUDIT_POLICY_FILE = f"{HARDENING_DIR}/audit-policy.yaml"
ADMISSION_FILE = f"{HARDENING_DIR}/admission.yaml"
AUTHENTICATION_FILE = f"{HARDENING_DIR}/authentication.yaml"
# The Secrets encryption configuration is not rendered here but composed on the nodes (render/scripts/lib/encryption.sh):
# its keys are made there and never pass through this program except as Pulumi secrets.
ENCRYPTION_DIR = "/etc/kubernetes/encryption"
ENCRYPTION_FILE = f"{ENCRYPTION_DIR}/config.yaml"
AUDIT_LOG_DIR = "/var/log/kubernetes/audit"
AUDIT_LOG_FILE = f"{AUDIT_LOG_DIR}/audit.log"
# The kubelet's CA, which also signs the kubelets' serving certificates (serverTLSBootstrap, render/resource_metrics.py).
CLUSTER_CA_FILE = "/etc/kubernetes/pki/ca.crt"

PSA_LEVELS = ("privileged", "baseline", "restricted")

# Strong TLS 1.2 suites: the six ECDHE AEAD suites RKE2 configures (k3s pkg/cli/server/server.go, "TLS config based on
# mozilla ssl-config generator"), all within the CIS benchmark's lists for the API server and the kubelet. TLS 1.3
# suites are not configurable in Go and stay as Go sets them. Go spells them as crypto/tls does (component-base
# cli/flag/ciphersuites_flag.go accepts every name of tls.CipherSuites()).
TLS_CIPHER_SUITES = (
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
)

# protectKernelDefaults' required values, in sysctl.d syntax order: those the kubelet checks when the setting is on
# (k8s.io/component-helpers node/util/sysctl/sysctl.go; the kubelet exits on a mismatch: pkg/kubelet/cm/
# container_manager_linux.go setupKernelTunables), so a node gets them before its kubelet restarts with the setting.
KERNEL_DEFAULTS = (
    ("vm.overcommit_memory", "1"),
    ("vm.panic_on_oom", "0"),
    ("kernel.panic", "10"),
    ("kernel.panic_on_oops", "1"),
    ("kernel.keys.root_maxkeys", "1000000"),
    ("kernel.keys.root_maxbytes", "25000000"),
)

# The paths anonymous requests may reach: the health endpoints the probes use, and the cluster-info ConfigMap that
# `kubeadm join` token discovery reads before it has a credential (client-go's Get of kube-public/cluster-info).
# ``--anonymous-auth=false`` cannot be used: the kubelet's liveness, readiness and startup probes of kube-apiserver
# carry no credential (kubeadm cmd/kubeadm/app/util/staticpod/utils.go createHTTPProbe; probes fail with 401 under
# anonymous-auth=false, kubernetes/kubeadm#798, kubernetes/kubernetes#100581), and token discovery reads
# kube-public/cluster-info anonymously (kubeadm cmd/kubeadm/app/discovery/token). RBAC still decides what those
# requests may read (system:public-info-viewer, kubeadm's cluster-info Role).
ANONYMOUS_PATHS = ("/livez", "/readyz", "/healthz", "/api/v1/namespaces/kube-public/configmaps/cluster-info")

# kube-controller-manager keeps at most this many terminated pods before deleting them; RKE2's value (CIS 1.3.1
# asks for one to be set; the default, 12500, is too high for a small control plane).
TERMINATED_POD_GC_THRESHOLD = 1000

# The kubelet's event limits, stated rather than left to the default (50 and 100: staging/src/k8s.io/kubelet/config/
# v1beta1/types.go eventRecordQPS, eventBurst). 0 would mean unlimited.
EVENT_RECORD_QPS = 50
EVENT_BURST = 100


@dataclass(frozen=True)
class AuditLog:
    max_age_days: int
    max_backups: int
    max_size_mb: int


@dataclass(frozen=True)
class PodSecurityDefaults:
    enforce: str
    audit: str
    warn: str
    exempt_namespaces: tuple[str, ...]   # names only; plan/security.py keeps each one's reason


@dataclass(frozen=True)
class ControlPlaneHardening:
    """What the control plane is given: the cluster-wide defaults of a kubeadm ClusterConfiguration's components, and
    the files on every control-plane node they name."""
    pod_security: PodSecurityDefaults
    audit_log: AuditLog | None           # None: no audit log (a relaxation)
    verify_kubelets: bool                # --kubelet-certificate-authority: only with CA-signed kubelet certificates


@dataclass(frozen=True)
class KubeletHardening:
    seccomp_default: bool
    pod_pids_limit: int


def _dump(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=4096)


def _check(hardening: ControlPlaneHardening) -> None:
    psa = hardening.pod_security
    for mode, level in (("enforce", psa.enforce), ("audit", psa.audit), ("warn", psa.warn)):
        require(level in PSA_LEVELS, f"pod security {mode} level {level!r} is not one of {PSA_LEVELS}")
    for name in psa.exempt_namespaces:
        require(bool(DNS_LABEL.match(name)), f"exempt namespace {name!r} is not a DNS-1123 label")
    require(len(set(psa.exempt_namespaces)) == len(psa.exempt_namespaces), "exempt namespaces repeat")
    # Mirror pods of kubeadm's static pods (host network, hostPath volumes) are not exempt from Pod Security
    # (pod-security-admission admission/admission.go ValidatePod has no mirror-pod case).
    require("kube-system" in psa.exempt_namespaces,
            "kube-system must be exempt: the mirror pods of the static control-plane pods are not")
    audit = hardening.audit_log
    if audit is not None:
        for name, value in (("max age", audit.max_age_days), ("max backups", audit.max_backups),
                            ("max size", audit.max_size_mb)):
            require(type(value) is int and value >= 1, f"audit log {name} must be a positive integer")


def audit_policy() -> dict[str, Any]:
    """The audit policy: nothing for the health checks and the high-volume reads of system components, metadata only
    for Secrets, ConfigMaps and tokens (never their bodies) and for every read, request bodies for other writes."""
    secret_like = [
        {"group": "", "resources": ["secrets", "configmaps", "serviceaccounts/token"]},
        {"group": "authentication.k8s.io", "resources": ["tokenreviews"]},
    ]
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"],
        "rules": [
            {"level": "None", "nonResourceURLs": ["/healthz*", "/livez*", "/readyz*", "/version", "/metrics"]},
            # kube-proxy, Linux (kubeadm's addon) and Windows (render/network.py), authenticates with the token of the
            # kube-system ServiceAccount kubeadm makes for it (its kubeconfig's tokenFile), not as system:kube-proxy.
            {"level": "None", "users": ["system:serviceaccount:kube-system:kube-proxy"], "verbs": ["watch"],
             "resources": [{"group": "", "resources": ["endpoints", "services", "services/status"]},
                           {"group": "discovery.k8s.io", "resources": ["endpointslices"]}]},
            {"level": "None", "userGroups": ["system:nodes"], "verbs": ["get"],
             "resources": [{"group": "", "resources": ["nodes", "nodes/status"]}]},
            {"level": "None", "users": ["system:kube-controller-manager", "system:kube-scheduler"],
             "verbs": ["get", "update"],
             "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
            {"level": "None", "resources": [{"group": "", "resources": ["events"]},
                                            {"group": "events.k8s.io", "resources": ["events"]}]},
            # Before any rule that records bodies: the first match wins (audit.k8s.io/v1 Policy: "A request may match
            # multiple rules, in which case the FIRST matching rule is used"), as kubernetes/kubernetes
            # cluster/gce/gci/configure-helper.sh create-master-audit-policy does.
            {"level": "Metadata", "resources": secret_like},
            {"level": "Metadata", "resources": [{"group": "", "resources": ["pods/exec", "pods/attach",
                                                                             "pods/portforward", "pods/proxy",
                                                                             "services/proxy", "nodes/proxy"]}]},
            {"level": "Metadata", "verbs": ["get", "list", "watch"]},
            {"level": "Request", "verbs": ["create", "update", "patch", "delete", "deletecollection"]},
            {"level": "Metadata"},
        ],
    }


def admission_configuration(psa: PodSecurityDefaults) -> dict[str, Any]:
    """The API server's AdmissionConfiguration: the PodSecurity plugin's cluster-wide defaults and exemptions
    (pod-security.admission.config.k8s.io/v1 PodSecurityConfiguration, staging/src/k8s.io/pod-security-admission/
    admission/api/v1/types.go). The defaults hold for every namespace without its own labels; exempt namespaces are
    few and each has a reason (plan/security.py)."""
    return {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [{
            "name": "PodSecurity",
            "configuration": {
                "apiVersion": "pod-security.admission.config.k8s.io/v1",
                "kind": "PodSecurityConfiguration",
                "defaults": {
                    "enforce": psa.enforce, "enforce-version": "latest",
                    "audit": psa.audit, "audit-version": "latest",
                    "warn": psa.warn, "warn-version": "latest",
                },
                "exemptions": {"usernames": [], "runtimeClasses": [], "namespaces": sorted(psa.exempt_namespaces)},
            },
        }],
    }


def authentication_configuration() -> dict[str, Any]:
    """The API server's AuthenticationConfiguration: anonymous requests only to ANONYMOUS_PATHS, through its
    ``anonymous.conditions`` (KEP-4633, AnonymousAuthConfigurableEndpoints, GA and locked on since 1.34:
    staging/src/k8s.io/apiserver/pkg/features/kube_features.go). The ``--anonymous-auth`` flag and this ``anonymous``
    section are mutually exclusive ("--anonymous-auth flag cannot be set when anonymous field is configured in
    authentication configuration file", pkg/kubeapiserver/options/authentication.go). A file with no JWT
    authenticator is valid (apiserver pkg/apis/apiserver/validation/validation.go: "We allow 0 authenticators")."""
    return {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AuthenticationConfiguration",
        "anonymous": {"enabled": True, "conditions": [{"path": path} for path in ANONYMOUS_PATHS]},
    }


def control_plane_files(hardening: ControlPlaneHardening) -> dict[str, str]:
    """The files every control-plane node holds in HARDENING_DIR before its API server starts: path -> content."""
    _check(hardening)
    files = {
        ADMISSION_FILE: _dump(admission_configuration(hardening.pod_security)),
        AUTHENTICATION_FILE: _dump(authentication_configuration()),
    }
    if hardening.audit_log is not None:
        files[AUDIT_POLICY_FILE] = _dump(audit_policy())
    return files


def files_digest(files: dict[str, str]) -> str:
    """A short digest of the control-plane files, which the nodes record with the settings they run."""
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]


def api_server_args(hardening: ControlPlaneHardening) -> dict[str, str]:
    """kube-apiserver flags on top of kubeadm's defaults (docs/security.md says which CIS check each one answers)."""
    _check(hardening)
    args = {
        "authentication-config": AUTHENTICATION_FILE,
        "admission-control-config-file": ADMISSION_FILE,
        # NodeRestriction is kubeadm's default, kept; a value given here replaces kubeadm's
        # (cmd/kubeadm/app/util/arguments.go ArgumentsToCommand).
        "enable-admission-plugins": "NodeRestriction,DenyServiceExternalIPs",
        "profiling": "false",
        "service-account-extend-token-expiration": "false",
        "tls-cipher-suites": ",".join(TLS_CIPHER_SUITES),
        "encryption-provider-config": ENCRYPTION_FILE,
    }
    if hardening.verify_kubelets:
        args["kubelet-certificate-authority"] = CLUSTER_CA_FILE
    audit = hardening.audit_log
    if audit is not None:
        # The API server rotates the log itself (--audit-log-maxage/maxbackup/maxsize).
        args.update({
            "audit-policy-file": AUDIT_POLICY_FILE,
            "audit-log-path": AUDIT_LOG_FILE,
            "audit-log-maxage": str(audit.max_age_days),
            "audit-log-maxbackup": str(audit.max_backups),
            "audit-log-maxsize": str(audit.max_size_mb),
        })
    return args


def api_server_volumes(hardening: ControlPlaneHardening) -> tuple[HostPathMount, ...]:
    """The hostPath mounts kube-apiserver needs for those files (kubeadm mounts only its own: apiServer.extraVolumes)."""
    volumes = [
        HostPathMount(name="hardening", host_path=HARDENING_DIR, mount_path=HARDENING_DIR, read_only=True,
                      path_type="Directory"),
        HostPathMount(name="encryption", host_path=ENCRYPTION_DIR, mount_path=ENCRYPTION_DIR, read_only=True,
                      path_type="Directory"),
    ]
    if hardening.audit_log is not None:
        volumes.append(HostPathMount(name="audit-log", host_path=AUDIT_LOG_DIR, mount_path=AUDIT_LOG_DIR,
                                     read_only=False, path_type="DirectoryOrCreate"))
    return tuple(volumes)


def controller_manager_args() -> dict[str, str]:
    return {"profiling": "false", "terminated-pod-gc-threshold": str(TERMINATED_POD_GC_THRESHOLD)}


def scheduler_args() -> dict[str, str]:
    return {"profiling": "false"}


def kubelet_settings(kubelet: KubeletHardening) -> dict[str, Any]:
    """The hardening keys of the cluster-wide KubeletConfiguration (kubelet.config.k8s.io/v1beta1 field names). On a
    Windows kubelet protectKernelDefaults, seccompDefault and podPidsLimit have no effect and fail nothing (no Windows
    validation reads them: pkg/kubelet/apis/config/validation/validation_windows.go; the Windows container manager
    never reads protectKernelDefaults and its pod container manager is a stub)."""
    require(type(kubelet.pod_pids_limit) is int and kubelet.pod_pids_limit >= 1, "podPidsLimit must be positive")
    settings: dict[str, Any] = {
        "eventBurst": EVENT_BURST,
        "eventRecordQPS": EVENT_RECORD_QPS,
        "podPidsLimit": kubelet.pod_pids_limit,
        "protectKernelDefaults": True,
        "tlsCipherSuites": list(TLS_CIPHER_SUITES),
    }
    if kubelet.seccomp_default:
        settings["seccompDefault"] = True
    return settings


# A pod's inline NFS volume is mounted by the kubelet from the node's own address (the API's NFSVolumeSource: "NFS
# represents an NFS mount on the host"), past every pod network policy, and Pod Security's baseline level allows it
# (pod-security-admission policy/check_restrictedVolumes.go limits volume types at restricted only): so a pod in an
# ordinary namespace could mount the etcd snapshot export, or any export its node may reach. A built-in
# ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in 1.30) refuses it outside the namespaces that need
# it; CSI volumes (the nfs-files StorageClass) are not inline NFS and stay allowed.
INLINE_NFS_POLICY = "hybrid-cluster-no-inline-nfs"
INLINE_NFS_EXPRESSION = "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.nfs))"


def inline_nfs_policy(allowed_namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding (Deny) for every namespace but ``allowed_namespaces``."""
    for name in allowed_namespaces:
        require(bool(DNS_LABEL.match(name)), f"{name!r} is not a namespace name")
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": INLINE_NFS_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                    "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]},
            "validations": [{"expression": INLINE_NFS_EXPRESSION,
                             "message": "inline NFS volumes are mounted from the node, past network policy: use a "
                                        "PersistentVolumeClaim (docs/security.md)",
                             "reason": "Forbidden"}],
        },
    }
    binding: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": INLINE_NFS_POLICY},
        "spec": {"policyName": INLINE_NFS_POLICY, "validationActions": ["Deny"]},
    }
    if allowed_namespaces:
        binding["spec"]["matchResources"] = {"namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": sorted(set(allowed_namespaces))}]}}
    return [policy, binding]


# The nftables table every Linux node loads to keep pods off its administrative ports whatever address they aim at
# (render/scripts/prepare-k8s-node.sh configure_pod_guard says why the Calico tier alone does not).
POD_GUARD_TABLE = "hybrid_cluster_pod_guard"


def pod_guard_rules(pod_networks: tuple[str, ...], ports: tuple[int, ...]) -> str:
    """The node's nftables file: the table made anew (declared, deleted, declared: nft -f applies a file atomically),
    one input chain before the filter hook's default priority, dropping TCP to ``ports`` from ``pod_networks``."""
    require(bool(pod_networks) and bool(ports), "the pod guard needs the pod networks and the ports")
    require(all(1 <= port <= 65535 for port in ports), f"not TCP ports: {ports}")
    networks = ", ".join(str(ipaddress.IPv4Network(network)) for network in pod_networks)
    return (f"# hybrid-cluster: pods may not reach this node's administrative ports (docs/security.md)\n"
            f"table inet {POD_GUARD_TABLE}\n"
            f"delete table inet {POD_GUARD_TABLE}\n"
            f"table inet {POD_GUARD_TABLE} {{\n"
            "  chain input {\n"
            "    type filter hook input priority -10; policy accept;\n"
            f"    ip saddr {{ {networks} }} tcp dport {{ {', '.join(str(port) for port in sorted(set(ports)))} }} drop\n"
            "  }\n"
            "}\n")


def sysctl_lines() -> list[str]:
    """KERNEL_DEFAULTS in sysctl.d syntax."""
    return [f"{key} = {value}" for key, value in KERNEL_DEFAULTS]


# The Secrets encryption key names the scripts accept (render/scripts/lib/encryption.sh valid_key_name).
_KEY_NAME = re.compile(r"^(identity|key-[A-Za-z0-9][A-Za-z0-9._-]{0,62})$")


def check_key_name(name: str) -> None:
    require(bool(_KEY_NAME.match(name)), f"{name!r} is not an encryption key name (identity or key-<label>)")


def check_hardening_files(files: dict[str, str]) -> None:
    """The control-plane files go to HARDENING_DIR only, each with a YAML document (control_plane_files)."""
    for path, text in files.items():
        require(path.rpartition("/")[0] == HARDENING_DIR and path.endswith(".yaml"),
                f"{path} is not a YAML file in {HARDENING_DIR}")
        require(isinstance(yaml_text.load(text), dict), f"{path} is not a YAML document")
