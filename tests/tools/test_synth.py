"""The offline synth of hk-prod, and every artefact in it checked by the real tool for its language."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import HK_PROD, ROOT
from tests.validators import cloud_init_schema, powershell_errors, shellcheck, shellcheck_equivalent
from tools import synth


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("synth") / "hk-prod"
    assert synth.main(["--stack", "hk-prod", "--out", str(target)]) == 0
    return target


def test_layout(out):
    for name in ("resources.json", "graph.mmd", "summary.txt"):
        assert (out / name).is_file()
    for folder in ("scripts", "manifests", "helm"):
        assert (out / folder).is_dir()


def test_resources_json_shape_and_no_secret_values(out):
    resources = json.loads((out / "resources.json").read_text())
    assert {"urn", "type", "name", "parent", "dependencies", "inputs"} <= set(resources[0])
    text = (out / "resources.json").read_text()
    assert "FAKE-" not in text
    provider = next(r for r in resources if r["name"] == "hk-prod-proxmox")
    assert re.fullmatch(r"\[secret:[0-9a-f]{16}\]", provider["inputs"]["apiToken"])


def test_every_remote_script_and_user_data_is_written(out):
    scripts = {p.name for p in (out / "scripts").iterdir()}
    for node in ("hk-cp-1", "hk-lnx-4"):
        assert f"hk-prod-{node}-user-data.yaml" in scripts
        assert f"hk-prod-{node}-cloud-init.create.sh" in scripts
    for node in ("hk-win-1", "hk-win-3"):
        assert {f"hk-prod-{node}-vm.{phase}.ps1" for phase in ("create", "update", "delete")} <= scripts
    assert {"hk-prod-hv-hk1-a-nic-offload.create.ps1", "hk-prod-hv-hk1-a-nic-offload.delete.ps1"} <= scripts
    assert not [s for s in scripts if s.endswith(".txt")], "a command that is neither bash nor PowerShell"


def test_shellcheck_passes_on_every_shell_script(out):
    scripts = sorted((out / "scripts").glob("*.sh"))
    assert len(scripts) >= 14  # a readiness wait and a preparation script per Linux node
    # Scripts that differ only in plain input values get the same findings: each such text is checked once.
    distinct = {shellcheck_equivalent(script.read_text()): script for script in scripts}
    assert len(distinct) < len(scripts)
    shellcheck(*distinct.values())


def test_every_powershell_script_parses(out):
    scripts = sorted((out / "scripts").glob("*.ps1"))
    # Per Windows node: VM create/update/delete, its preparation steps, join and reset; per host: offload pair.
    assert len([s for s in scripts if "-vm." in s.name]) == 3 * 3
    assert len([s for s in scripts if "nic-offload" in s.name]) == 2 * 2
    assert len([s for s in scripts if s.name.endswith("-join.create.ps1")]) == 3
    assert len([s for s in scripts if s.name.endswith("-join.delete.ps1")]) == 3
    for script in scripts:
        source = script.read_text()
        assert powershell_errors(source) == [], script.name
        head = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")][:3]
        assert "$ErrorActionPreference = 'Stop'" in head, (script.name, head)


def test_cloud_init_schema_passes_on_every_user_data(out):
    user_data = sorted((out / "scripts").glob("*-user-data.yaml"))
    assert len(user_data) == 7
    for path in user_data:
        assert path.read_text().startswith("#cloud-config\n")
        cloud_init_schema(path)


def test_summary_and_graph(out):
    summary = (out / "summary.txt").read_text()
    assert "+ hybrid:machines:Machines  hk-prod" in summary
    assert "hk-prod-hk-cp-1-vm [protected]" in summary
    graph = (out / "graph.mmd").read_text()
    assert graph.startswith("graph TD\n") and "-->" in graph and "-.->" in graph


def _invalid_stack(tmp_path: Path) -> Path:
    document = yaml.safe_load(HK_PROD.read_text())
    config = document["config"]
    config["hybrid-cluster:nodes"]["windows"][0]["zone"] = "hk-3"
    config["hybrid-cluster:nodes"]["linux"][0]["ip"] = "10.30.30.255"
    config["hybrid-cluster:calico"]["mtu"] = 1480
    config["hybrid-cluster:nodes"]["windows"][1]["hypervHost"] = "hv-nowhere"
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_invalid_stack_exits_2_with_key_paths_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "tools.synth", "--stack-file", str(_invalid_stack(tmp_path)), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 2, result.stderr
    for expected in ("nodes.windows[0].zone: unknown zone 'hk-3'",
                     "nodes.linux[0].ip: 10.30.30.255 is the broadcast address",
                     "calico.mtu: 1480 exceeds",
                     "nodes.windows[1].hypervHost: unknown Hyper-V host 'hv-nowhere'"):
        assert expected in result.stderr
    assert not out.exists()


def test_secret_flag_overrides_placeholder(tmp_path):
    out = tmp_path / "out"
    assert synth.main(["--out", str(out), "--secret", "proxmoxApiToken=root@pam!ci=00000000-0000-4000-8000-000000000000"]) == 0
    assert "root@pam!ci" not in (out / "resources.json").read_text()
    with pytest.raises(SystemExit):
        synth.main(["--out", str(out), "--secret", "notASecret=1"])


def _resource(type_: str, name: str, inputs: dict):
    from tools.mock.program import Resource
    return Resource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, parent="", dependencies=[],
                    property_dependencies={}, inputs=inputs, custom=True, protect=False,
                    delete_before_replace=False, ignore_changes=[], additional_secret_outputs=[], provider="")


def test_kubernetes_objects_and_helm_releases_are_rendered_without_secrets():
    from tools.mock.program import Secret
    secret = _resource("kubernetes:core/v1:Secret", "smb", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "smb", "namespace": "kube-system"},
        "stringData": Secret({"password": "hunter2"})})
    assert synth.manifest_of(secret) == {"apiVersion": "v1", "kind": "Secret",
                                         "metadata": {"name": "smb", "namespace": "kube-system"}, "stringData": "[secret]"}
    release = _resource(synth.HELM_RELEASE_TYPE, "calico", {
        "chart": "tigera-operator", "version": "v3.0.0", "namespace": "tigera-operator",
        "repositoryOpts": {"repo": "https://example.invalid/charts"}, "values": {"a": 1}})
    assert synth.manifest_of(release) is None
    assert synth.helm_release_of(release) == {"kind": "Release", "name": "calico", "chart": "tigera-operator",
                                              "repository": "https://example.invalid/charts", "version": "v3.0.0",
                                              "namespace": "tigera-operator", "values": {"a": 1}}
    assert synth.helm_release_of(secret) is None


@pytest.mark.parametrize("target", [".", "..", "/", "~", ".git", ".git/objects", "tests"])
def test_synth_refuses_to_replace_what_it_did_not_write(target, monkeypatch):
    # `--out .` once removed the whole checkout, .git included.
    out = Path(target).expanduser() if target.startswith(("/", "~")) else ROOT / target
    before = sorted(p.name for p in out.iterdir())
    assert synth.main(["--out", str(out)]) == 2
    assert sorted(p.name for p in out.iterdir()) == before
    assert (ROOT / ".git").exists() and (ROOT / "README.md").is_file()


def test_synth_refuses_a_foreign_non_empty_folder_and_replaces_only_its_own(tmp_path, capsys):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert synth.main(["--out", str(foreign)]) == 2
    assert "not written by tools.synth" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "mine"
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert synth.main(["--out", str(a_file)]) == 2 and a_file.read_text() == "x"
    own = tmp_path / "own"
    assert synth.main(["--out", str(own)]) == 0
    assert (own / synth.OUTPUT_MARKER).is_file()
    (own / "stale.txt").write_text("left by an older synth")
    assert synth.main(["--out", str(own)]) == 0, "its own output is replaced"
    assert not (own / "stale.txt").exists() and (own / "resources.json").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert synth.main(["--out", str(empty)]) == 0
