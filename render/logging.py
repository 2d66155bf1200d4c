"""Renders log collection for both operating systems with Fluent Bit: Helm values for the fluent/fluent-bit
chart (the Linux DaemonSet) and plain Kubernetes objects for the Windows DaemonSets, one per Windows Server
build, all shipping to one configured output.

This module owns the ``logging`` namespace, the Fluent Bit pipeline both OSes run (classic-format config
text), the Windows ServiceAccount/RBAC/ConfigMap/DaemonSets and the input dataclass. It is pure: no Pulumi,
no ``config`` imports; dataclasses and plain values in, dicts out.
"""
from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

from render.scheduling import system_namespace, windows_toleration
from vocab.checks import DNS_LABEL, HOST_NAME, LOKI_TENANT, require
from vocab.labels import CONTROL_PLANE_TAINT_KEY, OS_LABEL, WINDOWS_BUILD_LABEL

LOGGING_NAMESPACE = "logging"
# The tag of the API server's audit events (linux_config): its own output, never the kubernetes filter's.
AUDIT_TAG = "audit.kube-apiserver"

# Values keys of the chart that create a pod or a container; fluent_bit_linux_values pins each one. kind
# (DaemonSet/Deployment/StatefulSet), testFramework.enabled (a `helm test` Pod of busybox:latest with no nodeSelector,
# templates/tests/test-connection.yaml), hotReload.enabled (a configmap-reload sidecar), initContainers, extraContainers.
LINUX_POD_CREATING_VALUES = ("kind", "testFramework.enabled", "hotReload.enabled", "initContainers",
                             "extraContainers")

OUTPUT_KINDS = ("loki", "elasticsearch", "forward")

# Fluent Bit's built-in HTTP server (the chart's metricsPort/service default); probes and metrics use it.
HTTP_PORT = 2020
CLUSTER_DOMAIN = "cluster.local"   # kubeadm's default networking.dnsDomain


# The kubelet writes container logs under /var/log/pods and keeps one symlink per container in /var/log/containers
# (kubernetes pkg/kubelet/kubelet.go DefaultContainerLogsDir, kuberuntime legacyLogSymlink); on Windows the same rooted
# paths land on the system drive, which is what Fluent Bit's Windows guide tails:
# C:\var\log\containers\<pod>_<namespace>_<container>-<id>.log (fluent/fluent-bit-docs
# installation/downloads/kubernetes.md, "Windows deployment"). The whole log directory is mounted at the same path, so
# the symlink targets in ...\log\pods resolve inside the container.
_LINUX_LOG_DIR = "/var/log"
_LINUX_POSITIONS_DIR = "/var/lib/fluent-bit"
_WINDOWS_LOG_DIR = "C:\\var\\log"
_WINDOWS_POSITIONS_DIR = "C:\\var\\lib\\fluent-bit"
_WINDOWS_CONFIG_DIR = "C:\\fluent-bit\\config"
# The Windows image installs to C:\fluent-bit: bin\fluent-bit.exe and etc\parsers.conf
# (fluent/fluent-bit dockerfiles/Dockerfile.windows).
_WINDOWS_BINARY = "C:\\fluent-bit\\bin\\fluent-bit.exe"
_WINDOWS_PARSERS = "C:\\fluent-bit\\etc\\parsers.conf"
# The service-account mount (/var/run/secrets/..., the kubernetes filter's default CA and token paths in
# kube_conf/kubernetes.h) spelled as the C: path the Windows container sees.
_WINDOWS_SA_DIR = "C:\\var\\run\\secrets\\kubernetes.io\\serviceaccount"
# The log server's CA, when the stack gives one: a ConfigMap of its own mounted here on Linux; a key of the Windows
# ConfigMap, which is mounted at _WINDOWS_CONFIG_DIR. Fluent Bit's `tls.ca_file` takes "absolute path to CA certificate
# file" (https://docs.fluentbit.io/manual/administration/transport-security).
CA_CONFIG_MAP = "fluent-bit-ca"
_CA_KEY = "ca.crt"
_LINUX_CA_DIR = "/fluent-bit/ca"
WINDOWS_NAME = "fluent-bit-windows"

_WINDOWS_BUILD = re.compile(r"^10\.0\.\d{5}$")
_LOKI_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")   # Loki/Prometheus label name syntax
_PLAIN_VALUE = re.compile(r"^[A-Za-z0-9_.:/@-]+$")        # no spaces, commas or newlines: safe in classic config




@dataclass(frozen=True)
class LogOutput:
    kind: str                                   # "loki" | "elasticsearch" | "forward"
    host: str                                   # an IP, or a DNS name Windows pods resolve (FQDN)
    port: int
    tls: bool = False
    labels: tuple[tuple[str, str], ...] = ()    # loki only: extra static stream labels
    tenant: str | None = None                   # loki only: X-Scope-OrgID
    index_prefix: str = "kubernetes"            # elasticsearch only: <prefix>-YYYY.MM.DD
    # forward: Shared_Key/Secure Forward auth is out of scope.
    cluster_domain: str = field(default=CLUSTER_DOMAIN)
    ca_certificate: str | None = None           # with tls: the PEM CA the server's certificate is checked against


def _validate_output(out: LogOutput) -> None:
    require(out.kind in OUTPUT_KINDS, f"log output kind {out.kind!r} is not one of {OUTPUT_KINDS}")
    require(isinstance(out.port, int) and 0 < out.port < 65536, f"log output port {out.port!r} is not a TCP port")
    try:
        ipaddress.ip_address(out.host)
    except ValueError:
        require(bool(HOST_NAME.match(out.host)), f"log output host {out.host!r} is not an IP or DNS name")
        # "Windows treats all names with a . as a FQDN and skips FQDN resolution"
        # (https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#dns-windows): a partial in-cluster
        # name (loki.monitoring.svc) would work on Linux and silently fail on Windows.
        partial = out.host.endswith((".svc", ".svc.cluster")) or (
            ".svc." in out.host and not out.host.endswith(f".svc.{out.cluster_domain}"))
        require(not partial, f"log output host {out.host!r} is a partial in-cluster name; Windows pods "
                              f"only resolve the FQDN <service>.<namespace>.svc.{out.cluster_domain}")
    require(not out.labels or out.kind == "loki", "labels only apply to a loki output")
    require(out.tenant is None or out.kind == "loki", "tenant only applies to a loki output")
    require(out.kind == "elasticsearch" or out.index_prefix == "kubernetes",
             "index_prefix only applies to an elasticsearch output")
    for key, value in out.labels:
        require(bool(_LOKI_LABEL.match(key)), f"loki label name {key!r} is not [a-zA-Z_][a-zA-Z0-9_]*")
        require(key not in ("job", "namespace"), f"loki label {key!r} is set by this module")
        require(bool(_PLAIN_VALUE.match(value)), f"loki label {key}={value!r} must be a plain value")
    if out.tenant is not None:
        require(bool(LOKI_TENANT.match(out.tenant)), "the loki tenant is not a Loki tenant ID")
    require(bool(_PLAIN_VALUE.match(out.index_prefix)), f"index prefix {out.index_prefix!r} must be a plain value")
    if out.ca_certificate is not None:
        require(out.tls, "a CA certificate only applies with tls")
        require(out.ca_certificate.lstrip().startswith("-----BEGIN CERTIFICATE-----"),
                "the log server's CA certificate must be PEM (-----BEGIN CERTIFICATE-----)")


# --- Fluent Bit classic configuration -------------------------------------------------------------------------
# Format: "[SECTION]" headers, then "Key Value" lines indented by four spaces
# (https://docs.fluentbit.io/manual/administration/configuring-fluent-bit/classic-mode/format-schema).

def _section(name: str, entries: list[tuple[str, str]]) -> str:
    width = max(len(key) for key, _ in entries)
    lines = [f"[{name}]"]
    for key, value in entries:
        require("\n" not in value and value.strip() == value and value != "",
                 f"[{name}] {key}: {value!r} cannot be written as a classic config value")
        lines.append(f"    {key.ljust(width)} {value}")
    return "\n".join(lines) + "\n"


def _on(flag: bool) -> str:
    return "On" if flag else "Off"


def _service(parsers_file: str) -> str:
    # SERVICE keys: https://docs.fluentbit.io/manual/administration/configuring-fluent-bit/yaml/service-section
    # (flush, daemon, log_level, parsers_file, http_server, http_listen, http_port, health_check).
    return _section("SERVICE", [
        ("Flush", "1"),
        ("Daemon", "Off"),
        ("Log_Level", "info"),
        ("Parsers_File", parsers_file),
        ("HTTP_Server", "On"),
        ("HTTP_Listen", "0.0.0.0"),
        ("HTTP_Port", str(HTTP_PORT)),
        ("Health_Check", "On"),
    ])


def _tail(path: str, db: str, tag: str = "kube.*", parser: tuple[str, str] = ("multiline.parser", "cri")) -> str:
    # tail keys: https://docs.fluentbit.io/manual/pipeline/inputs/tail (Tag, Path, multiline.parser, Parser, DB,
    # DB.locking, Mem_Buf_Limit, Skip_Long_Lines, Refresh_Interval). DB keeps offsets across restarts;
    # without it every file is re-read from the start. DB.locking: only Fluent Bit touches the file.
    # With containerd the files are in CRI format, hence the built-in cri multiline parser by default (tail.md,
    # "Multiline and Containers").
    return _section("INPUT", [
        ("Name", "tail"),
        ("Tag", tag),
        ("Path", path),
        parser,
        ("DB", db),
        ("DB.locking", "true"),
        ("Mem_Buf_Limit", "16MB"),
        ("Skip_Long_Lines", "On"),
        ("Refresh_Interval", "10"),
    ])


def _kubernetes_filter(tag_prefix: str, extra: list[tuple[str, str]]) -> str:
    # kubernetes filter keys: https://docs.fluentbit.io/manual/pipeline/filters/kubernetes (Match,
    # Kube_Tag_Prefix, Merge_Log, Keep_Log, K8S-Logging.Parser, K8S-Logging.Exclude, Kube_URL,
    # Kube_CA_File, Kube_Token_File, DNS_Retries, DNS_Wait_Time). The API calls need get/list/watch on
    # pods and namespaces (the chart's ClusterRole and ours).
    return _section("FILTER", [
        ("Name", "kubernetes"),
        ("Match", "kube.*"),
        ("Kube_Tag_Prefix", tag_prefix),
        *extra,
        ("Merge_Log", "On"),
        ("Keep_Log", "Off"),
        ("K8S-Logging.Parser", "On"),
        ("K8S-Logging.Exclude", "On"),
    ])


def output_section(out: LogOutput, audit: bool = False, ca_file: str | None = None) -> str:
    """The one [OUTPUT] section both OSes ship through, from the same LogOutput, so a Linux and a Windows record land in
    the same place (records tell their node apart by ``kubernetes.host``); `audit`: the one for the API server's audit
    log instead, to the same server under its own stream (Loki job) or index (Elasticsearch). `ca_file`: where this
    OS's pods find the log server's CA (with out.ca_certificate)."""
    _validate_output(out)
    require((ca_file is not None) == (out.ca_certificate is not None), "a CA file goes with the output's CA certificate")
    # Match/Retry_Limit are common to every output
    # (https://docs.fluentbit.io/manual/administration/scheduling-and-retries: "False" = no retry limit);
    # tls/tls.verify are the shared TLS keys (https://docs.fluentbit.io/manual/administration/transport-security).
    common = [("Match", AUDIT_TAG if audit else "kube.*"), ("Host", out.host), ("Port", str(out.port)),
              ("tls", _on(out.tls))]
    if out.tls:
        common.append(("tls.verify", "On"))
    if ca_file is not None:
        common.append(("tls.ca_file", ca_file))
    common.append(("Retry_Limit", "False"))
    if out.kind == "loki":
        # https://docs.fluentbit.io/manual/pipeline/outputs/loki: host, port, tls, labels, tenant_id,
        # line_format. Stream labels stay low-cardinality: job, namespace and the configured statics.
        labels = (["job=kube-apiserver-audit"] if audit
                  else ["job=fluent-bit", "namespace=$kubernetes['namespace_name']"])
        labels += [f"{key}={value}" for key, value in out.labels]
        entries = [("Name", "loki"), *common, ("labels", ", ".join(labels)), ("line_format", "json")]
        if out.tenant is not None:
            entries.append(("tenant_id", out.tenant))
    elif out.kind == "elasticsearch":
        # https://docs.fluentbit.io/manual/pipeline/outputs/elasticsearch: Logstash_Format/Logstash_Prefix
        # give daily indices <prefix>-YYYY.MM.DD; Suppress_Type_Name is required by Elasticsearch 8+;
        # Replace_Dots keeps label keys like app.kubernetes.io/name from clashing with object mappings.
        prefix = f"{out.index_prefix}-audit" if audit else out.index_prefix
        entries = [("Name", "es"), *common, ("Logstash_Format", "On"), ("Logstash_Prefix", prefix),
                   ("Suppress_Type_Name", "On"), ("Replace_Dots", "On")]
    else:
        # https://docs.fluentbit.io/manual/pipeline/outputs/forward: Host, Port, tls.
        entries = [("Name", "forward"), *common]
    return _section("OUTPUT", entries)


# --- Linux: Helm values for the fluent-bit chart ------------------------------------------------------------------

def _split_image(image: str) -> dict[str, str]:
    """Chart image values from a reference: repository + tag, or repository + digest."""
    if "@" in image:
        repository, digest = image.split("@", 1)
        require(digest.startswith("sha256:"), f"image {image!r}: digest must be sha256:...")
        return {"repository": repository, "digest": digest}
    slash = image.rfind("/")
    colon = image.rfind(":")
    require(colon > slash, f"image {image!r} must carry a tag or a digest")
    return {"repository": image[:colon], "tag": image[colon + 1:]}


def linux_config(out: LogOutput, audit_log: str | None = None) -> dict[str, str]:
    """The chart's config.* strings for Linux nodes. ``audit_log``: the API server's audit log on the control-plane
    nodes (render/security.py AUDIT_LOG_FILE), shipped too: one JSON event per line (the API server's default
    --audit-log-format json), read with the image's `json` parser; on a worker the file does not exist and the input
    finds nothing."""
    inputs = _tail(f"{_LINUX_LOG_DIR}/containers/*.log", f"{_LINUX_POSITIONS_DIR}/tail-containers.db")
    ca_file = f"{_LINUX_CA_DIR}/{_CA_KEY}" if out.ca_certificate is not None else None
    outputs = output_section(out, ca_file=ca_file)
    if audit_log is not None:
        require(audit_log.startswith(f"{_LINUX_LOG_DIR}/") and _PLAIN_VALUE.match(audit_log) is not None,
                f"the audit log {audit_log!r} must be a plain path under {_LINUX_LOG_DIR}, which the pods mount")
        inputs += _tail(audit_log, f"{_LINUX_POSITIONS_DIR}/tail-audit.db", tag=AUDIT_TAG, parser=("Parser", "json"))
        outputs += output_section(out, audit=True, ca_file=ca_file)
    return {
        "service": _service("/fluent-bit/etc/parsers.conf"),   # the image's own parsers file
        "inputs": inputs,
        # Tag kube.* + /var/log/containers/x.log expands to kube.var.log.containers.x.log (tail "Tag").
        "filters": _kubernetes_filter("kube.var.log.containers.", []),
        "outputs": outputs,
        "customParsers": "",
    }


def fluent_bit_linux_values(out: LogOutput, linux_image: str, audit_log: str | None = None) -> dict[str, Any]:
    """Helm values for the fluent-bit chart: a DaemonSet on every Linux node, never on a Windows one.
    ``linux_image`` is config.compat.FLUENT_BIT_LINUX_IMAGE (the chart's appVersion, from Docker Hub); ``audit_log``:
    linux_config's. The lead's component installs the ``fluent-bit`` chart (config.compat.CHARTS) with these values.

    The chart's pod template takes ``nodeSelector``, ``tolerations``, ``resources``,
    ``daemonSetVolumes``/``daemonSetVolumeMounts`` and renders ``config.service``/``inputs``/``filters``/``outputs``
    (classic format) into ``fluent-bit.conf`` (fluent/helm-charts charts/fluent-bit README.md values table,
    templates/_pod.tpl, configmap.yaml)."""
    _validate_output(out)
    return {
        "kind": "DaemonSet",
        "image": {**_split_image(linux_image), "pullPolicy": "IfNotPresent"},
        "testFramework": {"enabled": False},
        "hotReload": {"enabled": False},
        "initContainers": [],
        "extraContainers": [],
        "nodeSelector": {OS_LABEL: "linux"},
        # Control-plane nodes are Linux and their pods log too; the Windows taint is deliberately absent.
        "tolerations": [{"key": CONTROL_PLANE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "metricsPort": HTTP_PORT,
        # The chart rolls its pods when its config changes (checksum/config); the CA is ours, so its digest too.
        **({"podAnnotations": {"checksum/ca": hashlib.sha256(out.ca_certificate.encode()).hexdigest()}}
           if out.ca_certificate is not None else {}),
        "config": linux_config(out, audit_log),
        # Replaces the chart default (/var/log rw, /var/lib/docker/containers, /etc/machine-id): containerd
        # keeps logs under /var/log only, and offsets get their own writable directory.
        "daemonSetVolumes": [
            {"name": "varlog", "hostPath": {"path": _LINUX_LOG_DIR, "type": "Directory"}},
            {"name": "positions", "hostPath": {"path": _LINUX_POSITIONS_DIR, "type": "DirectoryOrCreate"}},
            *([{"name": "ca", "configMap": {"name": CA_CONFIG_MAP}}] if out.ca_certificate is not None else []),
        ],
        "daemonSetVolumeMounts": [
            {"name": "varlog", "mountPath": _LINUX_LOG_DIR, "readOnly": True},
            {"name": "positions", "mountPath": _LINUX_POSITIONS_DIR},
            *([{"name": "ca", "mountPath": _LINUX_CA_DIR, "readOnly": True}] if out.ca_certificate is not None else []),
        ],
    }


def ca_config_map(out: LogOutput) -> dict[str, Any] | None:
    """The Linux pods' copy of the log server's CA (mounted at _LINUX_CA_DIR); None without one."""
    _validate_output(out)
    if out.ca_certificate is None:
        return None
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CA_CONFIG_MAP, "namespace": LOGGING_NAMESPACE},
            "data": {_CA_KEY: out.ca_certificate}}


# --- Windows: plain objects ------------------------------------------------------------------------------------
# The chart cannot run on Windows (its command is /fluent-bit/bin/fluent-bit and its mounts are POSIX paths), so the
# Windows side is rendered here as plain objects.

def windows_config(out: LogOutput) -> str:
    """fluent-bit.conf for Windows nodes (same pipeline, Windows paths)."""
    # Windows pods skip resolving dotted names (see _validate_output), so the filter's default
    # https://kubernetes.default.svc:443 does not resolve there; Fluent Bit's Windows guide sets
    # Kube_URL https://kubernetes.default.svc.cluster.local:443 and DNS_Retries/DNS_Wait_Time for pods whose network comes
    # up late.
    kube_url = f"https://kubernetes.default.svc.{out.cluster_domain}:443"
    return "\n".join([
        _service(_WINDOWS_PARSERS),
        _tail("c:\\var\\log\\containers\\*.log", f"{_WINDOWS_POSITIONS_DIR}\\tail-containers.db"),
        # tail expands Tag kube.* with the file path, dots for separators; a Windows build of the kubernetes filter
        # expects the prefix kube.c.var.log.containers. for a c:\var\log\containers path (fluent/fluent-bit
        # plugins/filter_kubernetes/kube_conf.h FLB_KUBE_TAG_PREFIX under FLB_SYSTEM_WINDOWS; fluent/fluent-bit#2226
        # "in_tail emits events with a tag prefixed with kube.c.var.log.containers"). So the path above is written
        # exactly that way and the prefix is set explicitly.
        _kubernetes_filter("kube.c.var.log.containers.", [
            ("Kube_URL", kube_url),
            ("Kube_CA_File", f"{_WINDOWS_SA_DIR}\\ca.crt"),
            ("Kube_Token_File", f"{_WINDOWS_SA_DIR}\\token"),
            ("DNS_Retries", "10"),
            ("DNS_Wait_Time", "30"),
        ]),
        output_section(out, ca_file=f"{_WINDOWS_CONFIG_DIR}\\{_CA_KEY}" if out.ca_certificate is not None else None),
    ])


def _meta(name: str, namespaced: bool = True, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/name": WINDOWS_NAME, **(labels or {})}}
    if namespaced:
        meta["namespace"] = LOGGING_NAMESPACE
    return meta


def _windows_daemonset(key: str, build: str, image: str, config_hash: str) -> dict[str, Any]:
    selector = {"app.kubernetes.io/name": WINDOWS_NAME, "app.kubernetes.io/instance": key}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(f"{WINDOWS_NAME}-{key}", labels={"app.kubernetes.io/instance": key}),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                # A config change changes the hash and so rolls the pods (Fluent Bit reads its config once).
                "metadata": {"labels": selector, "annotations": {"checksum/config": config_hash}},
                "spec": {
                    "os": {"name": "windows"},
                    "serviceAccountName": WINDOWS_NAME,
                    # A process-isolated container, NOT HostProcess: fluent/fluent-bit publishes per-build images
                    # (windows-2022-<v>, config.compat) built FROM servercore:<ltsc> (fluent/fluent-bit
                    # dockerfiles/Dockerfile.windows), and process isolation needs the image build to equal the host
                    # build (https://kubernetes.io/docs/concepts/windows/user-guide/). Hence one DaemonSet per build,
                    # selecting its build and tolerating our Windows taint, else it never schedules.
                    "nodeSelector": {OS_LABEL: "windows", WINDOWS_BUILD_LABEL: build},
                    "tolerations": [windows_toleration()],
                    "containers": [{
                        "name": "fluent-bit",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": [_WINDOWS_BINARY],
                        "args": ["-c", f"{_WINDOWS_CONFIG_DIR}\\fluent-bit.conf"],
                        "ports": [{"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}],
                        # "/" answers on every Fluent Bit version; /api/v2/health is 5.x only and the
                        # win2019 image is 4.0.x (config.compat).
                        "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 30},
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 10},
                        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                      "limits": {"memory": "512Mi"}},
                        "volumeMounts": [
                            {"name": "varlog", "mountPath": _WINDOWS_LOG_DIR, "readOnly": True},
                            {"name": "positions", "mountPath": _WINDOWS_POSITIONS_DIR},
                            {"name": "config", "mountPath": _WINDOWS_CONFIG_DIR, "readOnly": True},
                        ],
                    }],
                    "volumes": [
                        {"name": "varlog", "hostPath": {"path": _WINDOWS_LOG_DIR, "type": "Directory"}},
                        {"name": "positions",
                         "hostPath": {"path": _WINDOWS_POSITIONS_DIR, "type": "DirectoryOrCreate"}},
                        {"name": "config", "configMap": {"name": WINDOWS_NAME}},
                    ],
                },
            },
        },
    }


def fluent_bit_windows(builds: dict[str, tuple[str, str]], out: LogOutput) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole(+Binding), ConfigMap and one DaemonSet per Windows build, all created by the lead's
    component. No object of this module carries a ``pulumi.com/waitFor``: nothing waits on logging, and pulumi-kubernetes awaits
    DaemonSets itself.

    builds: {"win2022": ("10.0.20348", "docker.io/fluent/fluent-bit:windows-2022-5.0.3"), ...}
    (config.compat WINDOWS[key].build / .fluent_bit_image)."""
    _validate_output(out)
    require(bool(builds), "no Windows builds: render no Windows logging objects instead")
    numbers = [build for build, _ in builds.values()]
    require(len(set(numbers)) == len(numbers), f"two build keys share one Windows build: {numbers}")
    for key, (build, image) in builds.items():
        require(bool(DNS_LABEL.match(key)), f"Windows build key {key!r} is not a DNS-1123 label")
        require(bool(_WINDOWS_BUILD.match(build)), f"{key}: {build!r} is not a Windows build like 10.0.20348")
        require(bool(image) and not image.endswith(":"), f"{key}: no Fluent Bit image")
    conf = windows_config(out)
    data = {"fluent-bit.conf": conf, **({_CA_KEY: out.ca_certificate} if out.ca_certificate is not None else {})}
    # The configuration's digest, and the CA's after it when there is one (so a stack without a CA keeps its pods).
    config_hash = hashlib.sha256((conf + (out.ca_certificate or "")).encode()).hexdigest()
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(WINDOWS_NAME)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(WINDOWS_NAME, namespaced=False),
            "rules": [{"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(WINDOWS_NAME, namespaced=False),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": WINDOWS_NAME},
            "subjects": [{"kind": "ServiceAccount", "name": WINDOWS_NAME, "namespace": LOGGING_NAMESPACE}],
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(WINDOWS_NAME), "data": data},
    ]
    for key in sorted(builds):
        build, image = builds[key]
        objects.append(_windows_daemonset(key, build, image, config_hash))
    return objects


def logging_namespace() -> dict[str, Any]:
    """The privileged namespace both DaemonSets run in: ``baseline`` forbids their hostPath volumes
    (https://kubernetes.io/docs/concepts/security/pod-security-standards/, "HostPath Volumes"). Running the Windows
    pods in ``windows-system`` instead would split one product over two namespaces and still leave the Linux DaemonSet
    needing a privileged one; ``logging`` holds only these agents. The lead's component creates it."""
    return system_namespace(LOGGING_NAMESPACE)


__all__ = [
    "CONTROL_PLANE_TAINT_KEY",
    "LINUX_POD_CREATING_VALUES",
    "LOGGING_NAMESPACE",
    "OUTPUT_KINDS",
    "WINDOWS_NAME",
    "LogOutput",
    "fluent_bit_linux_values",
    "fluent_bit_windows",
    "linux_config",
    "logging_namespace",
    "output_section",
    "windows_config",
]
