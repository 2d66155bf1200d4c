"""kube-bench's decision of one check, re-implemented for an offline node (tools/cis.py builds the node): the audit's
output as the node would print it, then kube-bench's tests on it.

The semantics are kube-bench's at aquasecurity/kube-bench a73ce378418c71c5861e6963753f50dec3badadf (the version
../shared/benchmarks/kube-bench holds), from check/check.go run/execute/runAuditCommands, check/test.go
(findValue, evaluate, compareOp) and cmd/util.go (getFiles, findConfigFile, getBinaries):
* manual and skip checks run nothing (WARN, INFO); an audit that fails makes the check FAIL (scored) or WARN;
* a test item reads its flag from the audit output (a substring; `--flag=value` or `key: value` gives the value, a
  bare `--flag` is "true"); only when the flag is absent does it read `path` (a jsonpath) from audit_config's output,
  then `env`; the last source tried decides;
* `set: false` passes when the flag is absent; a compare runs only when the flag is present;
* ops: eq/noteq (the found value lower-cased when it is a boolean), gte/gt/lt/lte on integers, has/nothave
  (substring), valid_elements (comma lists), bitmask (octal permissions no wider than allowed);
* use_multiple_values: every line must pass; bin_op and/or combines the items;
* an unscored check that fails is WARN, never FAIL.
Audits are read by their shape (AUDIT_SHAPES): a shape the node cannot answer offline (kubectl against a live API)
makes the check "-", which tools/cis.py answers with the project's position.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# kube-bench's TypeMap (cmd/util.go): file type -> (list option, default option, variable suffix).
_FILE_TYPES = {"config": ("confs", "defaultconf", "conf"), "service": ("svc", "defaultsvc", "svc"),
               "kubeconfig": ("kubeconfig", "defaultkubeconfig", "kubeconfig"), "ca": ("cafile", "defaultcafile", "cafile"),
               "datadir": ("datadirs", "defaultdatadir", "datadir")}
# Which section of kube-bench's config.yaml holds a target's components (config.yaml: master, node, etcd, controlplane,
# policies).
_SECTIONS = {"master": "master", "etcd": "etcd", "controlplane": "controlplane", "node": "node", "policies": "policies"}


def read_config(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


@dataclass(frozen=True)
class FileLike:
    mode: str
    owner: str
    content: str


class Host:
    """What a node holds, as the audits see it: its processes (`ps -ef` command lines) and files."""

    def __init__(self, processes: list[str], files: Mapping[str, Any], config: dict[str, Any], target: str):
        self.processes = processes
        self.files = dict(files)
        self.variables = self._substitutions(config, target)

    def exists(self, path: str) -> bool:
        return path in self.files or any(p.startswith(path.rstrip("/") + "/") for p in self.files)

    def _running(self, binary: str) -> bool:
        # verifyBin: `ps -C <first word> -o cmd` and a match of ^(\S*/)*<bin>.
        return any(re.match(rf"^(\S*/)*{re.escape(binary)}(\s|$)", line) for line in self.processes)

    def _substitutions(self, config: dict[str, Any], target: str) -> dict[str, str]:
        section = config.get(_SECTIONS[target]) or {}
        variables: dict[str, str] = {}
        for component in section.get("components", []):
            settings = section.get(component) or {}
            bins = settings.get("bins") or []
            if bins:
                running = next((b for b in bins if self._running(b)), None)
                variables[f"${component}bin"] = running or component
            for _, (list_key, default_key, suffix) in _FILE_TYPES.items():
                candidates = settings.get(list_key) or []
                found = next((c for c in candidates if self.exists(c)), None)
                if found is None:
                    found = settings.get(default_key) or (component if candidates else None)
                if found:
                    variables[f"${component}{suffix}"] = found
        return variables

    def substitute(self, text: str) -> str:
        # Longer names first: $apiserverbin before a hypothetical $apiserver...
        for key in sorted(self.variables, key=len, reverse=True):
            value = self.variables[key]
            text = text.replace(key, f"'{value}'" if " " in value else value)
        return text

    # --- the audit shapes -------------------------------------------------------------------------------------

    def stat(self, path: str, fmt: str) -> str:
        facts = self.files[path]
        return fmt.replace("%a", facts.mode).replace("%U:%G", facts.owner).replace("%n", path)

    def grep(self, word: str) -> list[str]:
        return [line for line in self.processes if word in line]

    def ps_command(self, binary: str) -> list[str]:
        # ps -fC <name>: processes whose command name is exactly <name>.
        return [line for line in self.processes if Path(line.split()[0]).name == binary]


Shape = tuple[re.Pattern[str], Callable[[Host, re.Match[str]], str | None]]


def _if_exists_stat(host: Host, match: re.Match[str]) -> str | None:
    path, fmt = match["path"], match["fmt"]
    if not host.exists(path):
        return match["else"] or ""
    return host.stat(path, fmt)


def _find_stat(host: Host, match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    root, name, fmt = groups.get("root") or groups["path"], groups.get("name"), groups["fmt"]
    pattern = re.compile("^" + re.escape(name).replace(r"\*", ".*") + "$") if name else None
    paths = sorted(p for p in host.files if p == root.rstrip("/") or p.startswith(root.rstrip("/") + "/"))
    if name:
        paths = [p for p in paths if pattern is not None and pattern.match(Path(p).name)]
    return "\n".join(host.stat(p, fmt) for p in paths)


def _admin_confs(host: Host, match: re.Match[str]) -> str | None:
    fmt = match["fmt"]
    return "\n".join(host.stat(p, fmt) for p in match["paths"].split() if host.exists(p))


def _ps_grep(host: Host, match: re.Match[str]) -> str | None:
    lines = [line for line in host.grep(match["word"]) if "grep" not in line]
    if not lines:
        raise AuditFailed(f"no process matches {match['word']}")
    return "\n".join(f"root 1 0 0 00:00 ? 00:00:00 {line}" for line in lines)


def _ps_c(host: Host, match: re.Match[str]) -> str | None:
    lines = host.ps_command(match["bin"])
    if not lines:
        raise AuditFailed(f"ps -fC {match['bin']} finds no process")
    return "\n".join(f"root 1 0 0 00:00 ? 00:00:00 {line}" for line in lines)


def _cat(host: Host, match: re.Match[str]) -> str | None:
    path = match["path"]
    if not host.exists(path):
        raise AuditFailed(f"cat: {path}: No such file or directory")
    return host.files[path].content


def _cat_if_exists(host: Host, match: re.Match[str]) -> str | None:
    path = match["path"]
    return host.files[path].content if host.exists(path) else ""


def _cni(host: Host, match: re.Match[str]) -> str | None:
    # Neither half finds anything: no process carries --cni-conf-dir (the kubelet flag is gone), and Calico's IPAM
    # writes nothing under /var/lib/cni/networks.
    if any("--cni-conf-dir" in line for line in host.processes) or host.exists("/var/lib/cni/networks"):
        return None
    return ""


def _etcd_data_dir(host: Host, match: re.Match[str]) -> str | None:
    fmt = match["fmt"]
    data_dir = ""
    for line in host.grep(host.variables.get("$etcdbin", "etcd")):
        found = re.search(r"--data-dir[= ](\S+)", line)
        if found and host.exists(found.group(1)):
            data_dir = found.group(1)
    if not data_dir:
        data_dir = host.variables.get("$etcddatadir", "")
    if not host.exists(data_dir):
        raise AuditFailed(f"stat: cannot stat '{data_dir}'")
    return host.stat(data_dir, fmt)


def _encryption_providers(host: Host, match: re.Match[str]) -> str | None:
    for line in host.grep(host.variables.get("$apiserverbin", "kube-apiserver")):
        found = re.search(r"--encryption-provider-config[= ](\S+)", line)
        if found and host.exists(found.group(1)):
            text = host.files[found.group(1)].content.splitlines()
            # grep -A1 'providers:' | tail -n1 | grep -o "[A-Za-z]*" | sed 's/^/provider=/'
            for index, line_text in enumerate(text):
                if "providers:" in line_text and index + 1 < len(text):
                    words = re.findall(r"[A-Za-z]+", text[index + 1])
                    return "\n".join(f"provider={w}" for w in words)
    return ""


def _ca_file(host: Host, match: re.Match[str]) -> str | None:
    fmt = match["fmt"]
    candidates = [line for line in host.grep("kubelet") if "apiserver" not in line and "--client-ca-file=" in line]
    ca = candidates[0].split("--client-ca-file=")[1].split()[0] if candidates else host.variables.get("$kubeletcafile", "")
    return host.stat(ca, fmt) if host.exists(ca) else ""


class AuditFailed(Exception):
    """The audit command exits non-zero on the node."""


AUDIT_SHAPES: list[Shape] = [
    (re.compile(r"^/bin/sh -c ['\"]if test -e (?P<path>\S+); then stat -c (?P<fmt>\S+) (?P=path);"
                r"(?: else echo \\?\"(?P<else>[^\"\\]+)\\?\";)? fi['\"]$"), _if_exists_stat),
    (re.compile(r"^/bin/sh -c 'if test -e (?P<path>\S+); then find (?P=path) -name '(?P<name>[^']+)' \| xargs stat -c "
                r"(?P<fmt>\S+); fi'$"), _find_stat),
    (re.compile(r"^find (?P<root>\S+)(?: -name '(?P<name>[^']+)')? \| xargs stat -c (?P<fmt>\S+)$"), _find_stat),
    (re.compile(r"^for adminconf in (?P<paths>[^;]+); do if test -e \$adminconf; then stat -c \"(?P<fmt>[^\"]+)\" "
                r"\$adminconf; fi; done$"), _admin_confs),
    (re.compile(r"^(?:/bin/)?ps -ef \| (?:/bin/)?grep (?P<word>\S+) \| (?:/bin/)?grep -v grep$"), _ps_grep),
    (re.compile(r"^/bin/ps -fC (?P<bin>\S+)$"), _ps_c),
    (re.compile(r"^/bin/cat (?P<path>\S+)$"), _cat),
    (re.compile(r"^/bin/sh -c 'if test -e (?P<path>\S+); then cat (?P=path); fi'$"), _cat_if_exists),
    (re.compile(r"^ps -ef \| grep \S+ \| grep -- --cni-conf-dir .*find /var/lib/cni/networks", re.S), _cni),
    (re.compile(r"^DATA_DIR=''.*stat -c (?P<fmt>\S+) \"\$DATA_DIR\"$", re.S), _etcd_data_dir),
    (re.compile(r"^ENCRYPTION_PROVIDER_CONFIG=.*provider=", re.S), _encryption_providers),
    (re.compile(r"^CAFILE=.*then stat -c (?P<fmt>\S+) \$CAFILE; fi$", re.S), _ca_file),
]


def run_audit(host: Host, audit: str) -> str | None:
    """The audit's output on the node; None when no shape models it (kubectl against a live API)."""
    text = host.substitute(audit.strip())
    if not text:
        return ""
    for pattern, answer in AUDIT_SHAPES:
        match = pattern.match(text)
        if match is not None:
            return answer(host, match)
    return None


# --- tests ---------------------------------------------------------------------------------------------------

_BOOLS = ("true", "false")


def compare(op: str, found: str, wanted: str) -> bool:
    if op in ("eq", "noteq"):
        lowered = found.lower()
        equal = (lowered == wanted) if lowered in _BOOLS else (found == wanted)
        return equal if op == "eq" else not equal
    if op in ("gt", "gte", "lt", "lte"):
        try:
            a, b = int(found.strip()), int(wanted.strip())
        except ValueError:
            return False
        return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]
    if op == "has":
        return wanted in found
    if op == "nothave":
        return wanted not in found
    if op == "regex":
        return re.search(wanted, found) is not None
    if op == "valid_elements":
        have = [x.strip() for x in found.strip().rstrip(",").split(",")] if found.strip().rstrip(",") else []
        allowed = [x.strip() for x in wanted.strip().rstrip(",").split(",")] if wanted.strip().rstrip(",") else []
        if not have and not allowed:
            return True
        if not have or not allowed:
            return False
        return all(x in allowed for x in have)
    if op == "bitmask":
        try:
            requested, maximum = int(found, 8), int(wanted, 8)
        except ValueError:
            return False
        return (maximum & requested) == requested
    return False


def _yaml_text(value: Any) -> str:
    """A YAML/JSON value as kube-bench's client-go jsonpath prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def find_path(text: str, path: str) -> tuple[bool, str]:
    """The jsonpath kube-bench reads from a config file: `{.a.b}` or `{range .list[:]}{}{','}{end}`."""
    if not text:
        return False, ""
    try:
        document = json.loads(text)
    except ValueError:
        document = yaml.safe_load(text)
    ranged = re.fullmatch(r"\{range \.(\w+)\[:\]\}\{\}\{','\}\{end\}", path)
    dotted = re.fullmatch(r"\{((?:\.\w+)+)\}", path)
    if ranged:
        items = document.get(ranged.group(1)) if isinstance(document, dict) else None
        value = "".join(f"{_yaml_text(item)}," for item in items) if isinstance(items, list) else ""
        return value != "", value
    if dotted:
        node: Any = document
        for part in dotted.group(1).split(".")[1:]:
            if not isinstance(node, dict) or part not in node:
                return False, ""
            node = node[part]
        value = _yaml_text(node)
        return value != "", value
    raise ValueError(f"jsonpath {path!r} is not modelled")


def find_flag(text: str, flag: str) -> tuple[bool, str]:
    if not text or not flag or flag not in text:
        return False, ""
    match = re.search("(" + flag + r")(=|: *)*([^\t\n\f\r ]*) *", text)
    if match is None:
        return False, ""
    if match.group(3):
        return True, match.group(3)
    return True, "true" if flag.startswith("--") else match.group(1)


def _evaluate(item: dict[str, Any], found: tuple[bool, str]) -> tuple[bool, bool]:
    """(test result, flag found) for one source."""
    present, value = found
    compare_spec = item.get("compare") or {}
    if item.get("set", True):
        if present and compare_spec.get("op"):
            return compare(compare_spec["op"], value, str(compare_spec.get("value", "")).strip()
                           if not isinstance(compare_spec.get("value"), bool)
                           else str(compare_spec["value"]).lower()), True
        return present, present
    return not present, present


def _item(item: dict[str, Any], audit: str, config: str, multiple: bool) -> tuple[bool, str]:
    """The item's result, and what it found (`flag=value`, `path=value` or `flag absent`)."""
    def on(text: str, finder: Callable[[str], tuple[bool, str]]) -> tuple[bool, bool, str]:
        text = text.rstrip(" \n")
        lines = text.split("\n") if multiple else [text]
        result, found = (False, False), (False, "")
        for line in lines:
            found = finder(line)
            result = _evaluate(item, found)
            if not result[0]:
                break
        return result[0], result[1], found[1]

    flag = item.get("flag", "")
    passed, present, value = on(audit, lambda s: find_flag(s, flag))
    name = flag
    if not present and item.get("path") and config:
        passed, present, value = on(config, lambda s: find_path(s, item["path"]))
        name = re.sub(r"^\{(range )?\.|(\[:\]).*$|\}$", "", item["path"])
    if not name.startswith("--") and name == flag:
        # A literal such as root:root or permissions: the value says it.
        return passed, (value if name != "permissions" else f"permissions={value}") if present else ""
    return passed, f"{name}={value.rstrip(',')}" if present else f"{name} absent"


@dataclass(frozen=True)
class Outcome:
    state: str          # PASS | FAIL | WARN | INFO | "-" (the audit cannot run offline)
    actual: str


def run_check(check: dict[str, Any], host: Host) -> Outcome:
    scored = bool(check.get("scored", False))
    fail = "FAIL" if scored else "WARN"
    kind = (check.get("type") or "").strip()
    tests = check.get("tests")
    if kind == "skip":
        return Outcome("INFO", "marked skip")
    if kind == "manual":
        return Outcome("WARN", "marked manual")
    if not tests or not tests.get("test_items"):
        return Outcome(fail, "no tests")
    try:
        audit = run_audit(host, check.get("audit", ""))
        config = run_audit(host, check["audit_config"]) if check.get("audit_config") else ""
    except AuditFailed as error:
        return Outcome(fail, str(error))
    if audit is None or config is None:
        return Outcome("-", "cannot run offline")
    # A test item substitutes its flag too (cmd/common.go runs the substitution over the whole controls text).
    items = [{**i, "flag": host.substitute(i["flag"])} if "flag" in i else i for i in tests["test_items"]]
    results = [_item(i, audit, config, bool(check.get("use_multiple_values"))) for i in items]
    op = tests.get("bin_op", "and") or "and"
    passed = all(r for r, _ in results) if op == "and" else any(r for r, _ in results)
    return Outcome("PASS" if passed else fail, "; ".join(dict.fromkeys(found for _, found in results if found)))
