"""render/logging.py: Fluent Bit on both OSes. Built-in objects pass kubernetes-validate strictly (1.36);
the rendered classic configs are parsed into sections and every key is checked against the keys Fluent Bit
documents for that plugin; placement (OS, build, taint) and the shared output are asserted."""
from __future__ import annotations

import copy
import dataclasses

import kubernetes_validate
import pytest

from config import compat
from render import logging as logs
from render.scheduling import windows_toleration
from vocab.labels import OS_LABEL, WINDOWS_BUILD_LABEL, WINDOWS_TAINT_KEY

K8S = "1.36.0"   # hk-prod runs 1.36.4

# hk-prod's Windows builds, with the images the compatibility matrix pins for them.
HK_BUILDS = {key: (compat.WINDOWS[key].build, compat.WINDOWS[key].fluent_bit_image)
             for key in ("win2019", "win2022")}

LOKI = logs.LogOutput(kind="loki", host="loki-gateway.monitoring.svc.cluster.local", port=80,
                      labels=(("cluster", "hk-prod"),), tenant="hk-prod")
ELASTIC = logs.LogOutput(kind="elasticsearch", host="10.30.40.20", port=9200, tls=True, index_prefix="hk-prod")
FORWARD = logs.LogOutput(kind="forward", host="fluentd.logging.svc.cluster.local", port=24224)
OUTPUTS = {"loki": LOKI, "elasticsearch": ELASTIC, "forward": FORWARD}

# --- the keys Fluent Bit documents, per plugin ------------------------------------------------------------------
# Keys are case-insensitive in Fluent Bit, so the table is lower case. Each entry names the page it is from.
_TLS = {"tls", "tls.verify", "tls.debug", "tls.ca_file", "tls.crt_file", "tls.key_file", "tls.key_passwd",
        "tls.vhost"}   # https://docs.fluentbit.io/manual/administration/transport-security
_OUTPUT_COMMON = {"name", "match", "match_regex", "alias", "retry_limit", "workers"} | _TLS
# ^ https://docs.fluentbit.io/manual/administration/configuring-fluent-bit/classic-mode/configuration-file
#   (OUTPUT: Name, Match, Match_Regex) and .../administration/scheduling-and-retries (Retry_Limit)
ALLOWED_KEYS: dict[tuple[str, str], set[str]] = {
    # https://docs.fluentbit.io/manual/administration/configuring-fluent-bit/yaml/service-section
    ("SERVICE", ""): {"flush", "grace", "daemon", "dns.mode", "log_file", "log_level", "parsers_file",
                      "plugins_file", "streams_file", "http_server", "http_listen", "http_port", "health_check",
                      "hc_errors_count", "hc_retry_failure_count", "hc_period", "storage.path", "storage.sync",
                      "storage.checksum", "storage.metrics", "storage.backlog.mem_limit", "coro_stack_size"},
    # https://docs.fluentbit.io/manual/pipeline/inputs/tail
    ("INPUT", "tail"): {"name", "tag", "alias", "buffer_chunk_size", "buffer_max_size", "path", "path_key",
                        "exclude_path", "offset_key", "read_from_head", "refresh_interval", "rotate_wait",
                        "ignore_older", "skip_long_lines", "skip_empty_lines", "db", "db.sync", "db.locking",
                        "db.journal_mode", "db.compare_filename", "mem_buf_limit", "exit_on_eof", "parser",
                        "key", "inotify_watcher", "tag_regex", "static_batch_size", "multiline.parser"},
    # https://docs.fluentbit.io/manual/pipeline/filters/kubernetes
    ("FILTER", "kubernetes"): {"name", "match", "alias", "buffer_size", "kube_url", "kube_ca_file",
                               "kube_ca_path", "kube_token_file", "kube_tag_prefix", "merge_log",
                               "merge_log_key", "merge_log_trim", "merge_parser", "keep_log", "tls.debug",
                               "tls.verify", "tls.verify_hostname", "use_journal", "cache_use_docker_id",
                               "regex_parser", "k8s-logging.parser", "k8s-logging.exclude", "labels",
                               "annotations", "kube_meta_preload_cache_dir", "dummy_meta", "dns_retries",
                               "dns_wait_time", "use_kubelet", "use_tag_for_meta", "kubelet_port",
                               "kubelet_host", "kube_meta_cache_ttl", "kube_token_ttl", "kube_token_command",
                               "kube_meta_namespace_cache_ttl", "namespace_labels", "namespace_annotations",
                               "namespace_metadata_only", "owner_references"},
    # https://docs.fluentbit.io/manual/pipeline/outputs/loki
    ("OUTPUT", "loki"): _OUTPUT_COMMON | {"host", "uri", "port", "http_user", "http_passwd", "bearer_token",
                                          "header", "tenant_id", "labels", "label_keys", "label_map_path",
                                          "structured_metadata", "structured_metadata_map_keys", "remove_keys",
                                          "drop_single_key", "line_format", "auto_kubernetes_labels",
                                          "tenant_id_key", "compress"},
    # https://docs.fluentbit.io/manual/pipeline/outputs/elasticsearch
    ("OUTPUT", "es"): _OUTPUT_COMMON | {"host", "port", "path", "compress", "buffer_size", "pipeline",
                                        "cloud_id", "cloud_auth", "http_user", "http_passwd", "http_api_key",
                                        "index", "type", "logstash_format", "logstash_prefix",
                                        "logstash_prefix_key", "logstash_prefix_separator", "logstash_dateformat",
                                        "time_key", "time_key_format", "time_key_nanos", "include_tag_key",
                                        "tag_key", "generate_id", "id_key", "write_operation", "replace_dots",
                                        "trace_output", "trace_error", "current_time_index",
                                        "suppress_type_name"},
    # https://docs.fluentbit.io/manual/pipeline/outputs/forward
    ("OUTPUT", "forward"): _OUTPUT_COMMON | {"host", "port", "time_as_integer", "upstream", "unix_path", "tag",
                                             "send_options", "require_ack_response", "compress", "shared_key",
                                             "empty_shared_key", "username", "password", "self_hostname"},
}


def parse_classic(text: str) -> list[tuple[str, dict[str, str]]]:
    """Sections of a Fluent Bit classic config: [(SECTION, {key: value})], keys lower-cased. Refuses
    anything that is not a header, an indented "Key Value" line, a comment or a blank line, and a key set
    twice in one section (only Parsers_File may repeat, and we never repeat it)."""
    sections: list[tuple[str, dict[str, str]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("[") and line.rstrip().endswith("]"):
            sections.append((line.strip()[1:-1].upper(), {}))
            continue
        assert line.startswith("    ") and sections, f"line {number} is neither header nor entry: {line!r}"
        key, _, value = line.strip().partition(" ")
        assert value.strip(), f"line {number}: key {key!r} has no value"
        entries = sections[-1][1]
        assert key.lower() not in entries, f"line {number}: {key} set twice"
        entries[key.lower()] = value.strip()
    return sections


def check_documented(text: str) -> list[tuple[str, dict[str, str]]]:
    sections = parse_classic(text)
    for section, entries in sections:
        plugin = "" if section == "SERVICE" else entries.get("name", "")
        allowed = ALLOWED_KEYS.get((section, plugin))
        assert allowed is not None, f"[{section}] {plugin!r} has no documented-keys table"
        unknown = set(entries) - allowed
        assert not unknown, f"[{section}] {plugin}: undocumented keys {sorted(unknown)}"
    return sections


def valid(obj: dict) -> dict:
    kubernetes_validate.validate(copy.deepcopy(obj), K8S, strict=True)
    return obj


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def linux_fluent_bit_conf(values: dict) -> str:
    """fluent-bit.conf as the chart's configmap.yaml assembles it."""
    config = values["config"]
    return "\n".join(config[part] for part in ("service", "inputs", "filters", "outputs"))


# --- the test parser itself ----------------------------------------------------------------------------------

def test_parser_refuses_undocumented_and_malformed_config():
    with pytest.raises(AssertionError, match="undocumented"):
        check_documented("[INPUT]\n    Name tail\n    Paht /var/log/*.log\n")
    with pytest.raises(AssertionError, match="set twice"):
        parse_classic("[INPUT]\n    Name tail\n    Path a\n    path b\n")
    with pytest.raises(AssertionError, match="neither header"):
        parse_classic("[INPUT]\nName tail\n")


# --- Kubernetes objects -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_windows_objects_pass_strict_validation(kind):
    for obj in logs.fluent_bit_windows(HK_BUILDS, OUTPUTS[kind]):
        valid(obj)


def test_logging_namespace_is_privileged_because_of_host_paths():
    ns = valid(logs.logging_namespace())
    assert ns["metadata"]["name"] == logs.LOGGING_NAMESPACE
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    # Both renderers really mount hostPath, which is what forces the privileged level.
    windows_ds = by_kind(logs.fluent_bit_windows(HK_BUILDS, LOKI), "DaemonSet")[0]
    assert any("hostPath" in v for v in windows_ds["spec"]["template"]["spec"]["volumes"])
    assert any("hostPath" in v for v in logs.fluent_bit_linux_values(LOKI, compat.FLUENT_BIT_LINUX_IMAGE)["daemonSetVolumes"])


def test_every_windows_object_lives_in_logging():
    for obj in logs.fluent_bit_windows(HK_BUILDS, LOKI):
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == logs.LOGGING_NAMESPACE, obj["kind"]


def test_one_windows_daemonset_per_build_selecting_that_build_with_its_image():
    daemonsets = by_kind(logs.fluent_bit_windows(HK_BUILDS, LOKI), "DaemonSet")
    assert len(daemonsets) == len(HK_BUILDS)
    seen = {}
    for ds in daemonsets:
        pod = ds["spec"]["template"]["spec"]
        build = pod["nodeSelector"][WINDOWS_BUILD_LABEL]
        assert pod["nodeSelector"][OS_LABEL] == "windows"
        assert pod["os"] == {"name": "windows"}
        assert windows_toleration() in pod["tolerations"]
        key = next(k for k, (b, _) in HK_BUILDS.items() if b == build)
        assert pod["containers"][0]["image"] == HK_BUILDS[key][1]
        assert ds["metadata"]["name"].endswith(key)
        # The selector must match the template, and differ between builds, or the DaemonSets fight.
        assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
        seen[key] = ds["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"]
    assert set(seen) == set(HK_BUILDS) and len(set(seen.values())) == len(seen)


def test_windows_pods_request_resources_mount_logs_and_positions():
    for ds in by_kind(logs.fluent_bit_windows(HK_BUILDS, LOKI), "DaemonSet"):
        pod = ds["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert set(container["resources"]["requests"]) == {"cpu", "memory"}
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["varlog"]["hostPath"]["path"] == mounts["varlog"]["mountPath"] == "C:\\var\\log"
        assert mounts["varlog"]["readOnly"] is True
        assert volumes["positions"]["hostPath"]["type"] == "DirectoryOrCreate"
        assert volumes["config"]["configMap"]["name"] == logs.WINDOWS_NAME
        assert pod["serviceAccountName"] == logs.WINDOWS_NAME
        # The binary reads the mounted config, and the positions DB lives on the hostPath.
        conf_path = container["args"][container["args"].index("-c") + 1]
        assert conf_path.startswith(mounts["config"]["mountPath"] + "\\")
        conf = by_kind(logs.fluent_bit_windows(HK_BUILDS, LOKI), "ConfigMap")[0]["data"]
        assert conf_path.rsplit("\\", 1)[1] in conf
        tail = next(e for s, e in parse_classic(conf["fluent-bit.conf"]) if e.get("name") == "tail")
        assert tail["db"].startswith(mounts["positions"]["mountPath"] + "\\")


def test_windows_rbac_lets_the_kubernetes_filter_read_pods_and_namespaces():
    objects = logs.fluent_bit_windows(HK_BUILDS, LOKI)
    role = by_kind(objects, "ClusterRole")[0]
    binding = by_kind(objects, "ClusterRoleBinding")[0]
    rule = role["rules"][0]
    assert set(rule["resources"]) == {"pods", "namespaces"} and set(rule["verbs"]) == {"get", "list", "watch"}
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": logs.WINDOWS_NAME,
                                    "namespace": logs.LOGGING_NAMESPACE}]


def test_config_change_rolls_windows_pods():
    before = by_kind(logs.fluent_bit_windows(HK_BUILDS, LOKI), "DaemonSet")[0]
    after = by_kind(logs.fluent_bit_windows(HK_BUILDS, dataclasses.replace(LOKI, port=3100)), "DaemonSet")[0]
    annotation = "checksum/config"
    assert (before["spec"]["template"]["metadata"]["annotations"][annotation]
            != after["spec"]["template"]["metadata"]["annotations"][annotation])


# --- Linux chart values --------------------------------------------------------------------------------------

def test_linux_values_select_linux_and_never_tolerate_the_windows_taint():
    values = logs.fluent_bit_linux_values(LOKI, compat.FLUENT_BIT_LINUX_IMAGE)
    assert values["kind"] == "DaemonSet"
    assert values["nodeSelector"] == {OS_LABEL: "linux"}
    for toleration in values["tolerations"]:
        assert toleration.get("key") != WINDOWS_TAINT_KEY
        assert toleration.get("key"), "an empty key with Exists tolerates every taint, the Windows one too"
    assert set(values["resources"]["requests"]) == {"cpu", "memory"}


def test_every_pod_creating_chart_value_is_pinned():
    values = logs.fluent_bit_linux_values(LOKI, compat.FLUENT_BIT_LINUX_IMAGE)

    def get(path: str):
        node = values
        for part in path.split("."):
            node = node[part]
        return node

    pinned = {path: get(path) for path in logs.LINUX_POD_CREATING_VALUES}
    assert pinned == {"kind": "DaemonSet", "testFramework.enabled": False, "hotReload.enabled": False,
                      "initContainers": [], "extraContainers": []}


def test_linux_volumes_are_the_mounted_ones_and_cover_log_and_db_paths():
    values = logs.fluent_bit_linux_values(LOKI, compat.FLUENT_BIT_LINUX_IMAGE)
    volumes = {v["name"] for v in values["daemonSetVolumes"]}
    mounts = {m["name"]: m["mountPath"] for m in values["daemonSetVolumeMounts"]}
    assert volumes == set(mounts)
    tail = next(e for s, e in parse_classic(values["config"]["inputs"]) if e.get("name") == "tail")
    assert tail["path"].startswith(mounts["varlog"] + "/")
    assert tail["db"].startswith(mounts["positions"] + "/")


def test_linux_image_override_and_default():
    assert logs.fluent_bit_linux_values(LOKI, compat.FLUENT_BIT_LINUX_IMAGE)["image"]["repository"] == "docker.io/fluent/fluent-bit"
    mirrored = logs.fluent_bit_linux_values(LOKI, "harbor.hk.example:443/dockerhub/fluent/fluent-bit:5.2.1")
    assert mirrored["image"]["repository"] == "harbor.hk.example:443/dockerhub/fluent/fluent-bit"
    assert mirrored["image"]["tag"] == "5.2.1"
    pinned = logs.fluent_bit_linux_values(LOKI, "docker.io/fluent/fluent-bit@sha256:" + "a" * 64)
    assert pinned["image"]["digest"] == "sha256:" + "a" * 64 and "tag" not in pinned["image"]
    with pytest.raises(ValueError, match="tag or a digest"):
        logs.fluent_bit_linux_values(LOKI, "harbor.hk.example:443/fluent/fluent-bit")





# --- the Fluent Bit pipeline -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_every_rendered_key_is_documented_for_its_plugin(kind):
    out = OUTPUTS[kind]
    linux = check_documented(linux_fluent_bit_conf(logs.fluent_bit_linux_values(out, compat.FLUENT_BIT_LINUX_IMAGE)))
    windows = check_documented(logs.windows_config(out))
    for sections in (linux, windows):
        assert [s for s, _ in sections] == ["SERVICE", "INPUT", "FILTER", "OUTPUT"]


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_both_oses_ship_to_the_same_output(kind):
    out = OUTPUTS[kind]
    linux = parse_classic(logs.fluent_bit_linux_values(out, compat.FLUENT_BIT_LINUX_IMAGE)["config"]["outputs"])
    windows = [e for s, e in parse_classic(logs.windows_config(out)) if s == "OUTPUT"]
    assert len(linux) == 1 and windows == [linux[0][1]]
    entries = windows[0]
    assert entries["host"] == out.host and entries["port"] == str(out.port)
    assert entries["tls"] == ("On" if out.tls else "Off")
    assert entries["name"] == {"loki": "loki", "elasticsearch": "es", "forward": "forward"}[kind]


def test_output_specific_settings():
    loki = dict(parse_classic(logs.output_section(LOKI))[0][1])
    assert loki["tenant_id"] == "hk-prod"
    assert "cluster=hk-prod" in loki["labels"] and "job=fluent-bit" in loki["labels"]
    es = dict(parse_classic(logs.output_section(ELASTIC))[0][1])
    assert es["logstash_prefix"] == "hk-prod" and es["tls.verify"] == "On"


def _expand_tail_tag(tag: str, path: str) -> str:
    """Tail tag expansion: '*' becomes the file path with separators as dots (tail "Tag"); on Windows the
    drive's colon goes (fluent/fluent-bit#2226: c:\\var\\log\\containers\\* gives kube.c.var.log.containers)."""
    flat = path.replace(":", "").replace("\\", ".").replace("/", ".").lstrip(".")
    return tag.replace("*", flat)


@pytest.mark.parametrize("os_name", ["linux", "windows"])
def test_kubernetes_filter_prefix_matches_the_tail_tag(os_name):
    conf = (linux_fluent_bit_conf(logs.fluent_bit_linux_values(LOKI, compat.FLUENT_BIT_LINUX_IMAGE)) if os_name == "linux"
            else logs.windows_config(LOKI))
    sections = {s: e for s, e in parse_classic(conf) if s in ("INPUT", "FILTER")}
    tail, kube = sections["INPUT"], sections["FILTER"]
    assert tail["multiline.parser"] == "cri"   # containerd writes CRI-format logs
    directory = tail["path"].rsplit("*", 1)[0]
    sample = directory + "web-0_win-prod_app-" + "0" * 64 + ".log"
    tag = _expand_tail_tag(tail["tag"], sample)
    assert tag.startswith(kube["kube_tag_prefix"])
    assert tag[len(kube["kube_tag_prefix"]):].startswith("web-0_win-prod_app-")
    assert kube["match"] == tail["tag"]


def test_windows_filter_reaches_the_api_by_fqdn():
    kube = next(e for s, e in parse_classic(logs.windows_config(LOKI)) if s == "FILTER")
    assert kube["kube_url"] == "https://kubernetes.default.svc.cluster.local:443"
    assert kube["kube_token_file"].startswith("C:\\var\\run\\secrets\\kubernetes.io\\serviceaccount\\")


# --- input checks --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, message", [
    ({"kind": "syslog"}, "not one of"),
    ({"port": 0}, "not a TCP port"),
    ({"host": "loki.monitoring.svc"}, "partial in-cluster name"),
    ({"host": "loki.monitoring.svc.cluster"}, "partial in-cluster name"),
    ({"host": "bad host"}, "not an IP or DNS name"),
    ({"labels": (("cluster name", "x"),)}, "label name"),
    ({"labels": (("cluster", "a,b"),)}, "plain value"),
    ({"labels": (("job", "x"),)}, "set by this module"),
])
def test_bad_loki_output_is_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        logs.output_section(dataclasses.replace(LOKI, **bad))


def test_options_of_other_outputs_are_refused():
    with pytest.raises(ValueError, match="tenant"):
        logs.output_section(dataclasses.replace(FORWARD, tenant="x"))
    with pytest.raises(ValueError, match="index_prefix"):
        logs.output_section(dataclasses.replace(LOKI, tenant=None, labels=(), index_prefix="x"))


def test_bad_windows_builds_are_refused():
    with pytest.raises(ValueError, match="no Windows builds"):
        logs.fluent_bit_windows({}, LOKI)
    with pytest.raises(ValueError, match="share one Windows build"):
        logs.fluent_bit_windows({"a": ("10.0.20348", "i:1"), "b": ("10.0.20348", "i:2")}, LOKI)
    with pytest.raises(ValueError, match="not a Windows build"):
        logs.fluent_bit_windows({"win2022": ("20348", "i:1")}, LOKI)


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_the_api_servers_audit_log_is_shipped_under_its_own_stream(kind):
    """security.auditLog with observability.logs: the control-plane nodes' audit log, read as JSON lines, to the same
    server under its own Loki job or Elasticsearch index, never through the kubernetes filter."""
    out = OUTPUTS[kind]
    values = logs.fluent_bit_linux_values(out, compat.FLUENT_BIT_LINUX_IMAGE, "/var/log/kubernetes/audit/audit.log")
    sections = check_documented(linux_fluent_bit_conf(values))
    assert [s for s, _ in sections] == ["SERVICE", "INPUT", "INPUT", "FILTER", "OUTPUT", "OUTPUT"]
    audit_input = sections[2][1]
    assert audit_input["path"] == "/var/log/kubernetes/audit/audit.log" and audit_input["parser"] == "json"
    assert audit_input["tag"] == logs.AUDIT_TAG and not audit_input["tag"].startswith("kube.")
    audit_output = sections[5][1]
    assert audit_output["match"] == logs.AUDIT_TAG and audit_output["host"] == out.host
    if kind == "loki":
        assert "job=kube-apiserver-audit" in audit_output["labels"] and "namespace=" not in audit_output["labels"]
    if kind == "elasticsearch":
        assert audit_output["logstash_prefix"] == f"{out.index_prefix}-audit"
    # The pods mount /var/log, read-only: the audit log's directory is inside it.
    assert {"name": "varlog", "mountPath": "/var/log", "readOnly": True} in values["daemonSetVolumeMounts"]
    with pytest.raises(ValueError):
        logs.fluent_bit_linux_values(out, compat.FLUENT_BIT_LINUX_IMAGE, "/etc/kubernetes/audit.log")


# --- TLS to the log server with the site's CA -----------------------------------------------------------------

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_the_log_servers_ca_reaches_both_oses_and_every_output_checks_it():
    out = dataclasses.replace(ELASTIC, ca_certificate=CA)
    values = logs.fluent_bit_linux_values(out, compat.FLUENT_BIT_LINUX_IMAGE, audit_log="/var/log/kubernetes/audit/audit.log")
    linux = [e for s, e in check_documented(linux_fluent_bit_conf(values)) if s == "OUTPUT"]
    assert len(linux) == 2 and all(e["tls"] == "On" and e["tls.verify"] == "On" for e in linux)
    assert {e["tls.ca_file"] for e in linux} == {"/fluent-bit/ca/ca.crt"}
    config_map = valid(logs.ca_config_map(out))
    assert config_map["metadata"] == {"name": logs.CA_CONFIG_MAP, "namespace": logs.LOGGING_NAMESPACE}
    assert config_map["data"] == {"ca.crt": CA}
    assert {"name": "ca", "configMap": {"name": logs.CA_CONFIG_MAP}} in values["daemonSetVolumes"]
    assert {"name": "ca", "mountPath": "/fluent-bit/ca", "readOnly": True} in values["daemonSetVolumeMounts"]
    assert "checksum/ca" in values["podAnnotations"]
    objects = logs.fluent_bit_windows(HK_BUILDS, out)
    (windows_map,) = by_kind(objects, "ConfigMap")
    assert windows_map["data"]["ca.crt"] == CA
    (windows,) = [e for s, e in check_documented(windows_map["data"]["fluent-bit.conf"]) if s == "OUTPUT"]
    assert windows["tls.ca_file"] == "C:\\fluent-bit\\config\\ca.crt"
    # Without a CA: the system's, and no ConfigMap of ours.
    assert logs.ca_config_map(ELASTIC) is None and "tls.ca_file" not in logs.output_section(ELASTIC)
    with pytest.raises(ValueError):
        logs.ca_config_map(dataclasses.replace(LOKI, ca_certificate=CA))        # no tls
    with pytest.raises(ValueError):
        logs.ca_config_map(dataclasses.replace(ELASTIC, ca_certificate="not a pem"))
