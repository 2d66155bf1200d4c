"""The example stacks (examples/*/Pulumi.*.yaml, and the reference stack at the root): each loads, runs under
the mock engine with exactly the secrets it needs (config.secret_keys), and declares what its sections turn on
and nothing for what they leave out. Subsystems left out cost nothing: no resource, no secret."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from config.loader import PROJECT, from_stack_file, load
from config.secret_keys import SECRET_KEYS, required_secrets
from tests.conftest import ROOT, hk_prod_values, raw_config
from tools.mock.program import Recording, run_program

EXAMPLES = sorted(ROOT.glob("examples/*/Pulumi.*.yaml"))
LAB = ROOT / "examples" / "lab" / "Pulumi.lab.yaml"
# The components of the optional subsystems, by the section that turns each on.
OPTIONAL = {"storage": "hybrid:platform:Storage", "observability": "hybrid:platform:Observability",
            "policy": "hybrid:platform:Policy", "workloads": "hybrid:platform:SampleWorkloads",
            "custom_metrics": "hybrid:platform:CustomMetrics", "backup": "hybrid:platform:Backups",
            "progressive_delivery": "hybrid:platform:ProgressiveDelivery", "tracing": "hybrid:platform:Tracing"}


def values_of(path: Path) -> dict:
    document = yaml.safe_load(path.read_text())
    prefix = f"{PROJECT}:"
    return {k[len(prefix):]: v for k, v in document["config"].items() if k.startswith(prefix)}


def run(values: dict, secret_keys=None) -> Recording:
    spec = load(raw_config(values)).spec
    return run_program(raw_config(values), stack=spec.cluster.name,
                       secret_keys=required_secrets(spec) if secret_keys is None else secret_keys)


def test_the_examples_are_there():
    assert LAB in EXAMPLES
    # The reference stack is the root one (tests and `make synth` use it); examples/ points at it.
    assert (ROOT / "examples" / "README.md").read_text().count("Pulumi.hk-prod.yaml") >= 1


@pytest.mark.parametrize("path", [*EXAMPLES, ROOT / "Pulumi.hk-prod.yaml"], ids=lambda p: p.name)
def test_each_example_renders_with_only_the_secrets_it_needs(path):
    loaded = load(from_stack_file(path))
    # hk-prod's documented warnings: KEDA, Velero and Argo Rollouts untested on its minor (tests/config/test_validation.py); and
    # with Windows nodes, the Windows kube-proxy image's tag unconfirmed.
    assert [w for w in loaded.warnings
            if w.path not in ("customMetrics", "backup", "progressiveDelivery") or path.name != "Pulumi.hk-prod.yaml"
            if not (w.path == "cluster.kubernetesVersion" and "kube-proxy image" in w.message)] == []
    recording = run(values_of(path))
    assert not recording.plan.errors, recording.plan.errors
    types = {r.type for r in recording.resources}
    for section, component in OPTIONAL.items():
        assert (component in types) == (getattr(loaded.spec, section) is not None), section


def test_the_lab_is_the_minimal_shape():
    spec = load(from_stack_file(LAB)).spec
    assert len(spec.nodes.control_plane) == 1 and spec.cluster.api_vip is None
    assert len(spec.nodes.linux) == 1 and len(spec.nodes.windows) == 1 and spec.zones == ["lab"]
    assert spec.network.management is None and spec.network.nodes.vlan_id is None
    assert all(getattr(spec, section) is None for section in (*OPTIONAL, "etcd_backup"))
    assert not spec.registry.mirrors
    assert required_secrets(spec) == ["proxmoxApiToken", "proxmoxSshPrivateKey", "nodeSshPrivateKey",
                                      "hypervSshPrivateKey", "windowsAdminPassword"]


@pytest.mark.parametrize("missing", ["proxmoxApiToken", "hypervSshPrivateKey", "windowsAdminPassword"])
def test_a_needed_secret_left_unset_stops_the_program(missing):
    values = values_of(LAB)
    keys = [k for k in required_secrets(load(raw_config(values)).spec) if k != missing]
    with pytest.raises(Exception, match=missing):
        run(values, secret_keys=keys)


@pytest.mark.parametrize("section, secrets", [
    ("backup", {"backupAccessKeyId", "backupSecretAccessKey", "veleroRepositoryPassword"}),
    ("storage", {"smbUsername", "smbPassword"}),
    ("observability", {"grafanaAdminPassword"}),
    ("policy", set()),
    ("workloads", set()),
])
def test_each_optional_section_needs_only_its_own_secrets(section, secrets):
    hk = hk_prod_values()
    lab = values_of(LAB)
    with_section = copy.deepcopy(lab)
    if section == "policy":
        with_section[section] = {"enforcementAction": "dryrun", "namespaces": ["linux-prod"]}
    elif section == "storage":
        with_section[section] = {"smb": hk["storage"]["smb"], "defaultClass": "shared-files"}
    elif section == "observability":
        with_section[section] = {"metrics": {}}
    elif section == "backup":
        with_section[section] = {"primary": {"endpoint": "http://192.168.1.30:9000", "bucket": "velero-lab"}}
    else:
        with_section[section] = {}
    before = set(required_secrets(load(raw_config(lab)).spec))
    after = set(required_secrets(load(raw_config(with_section)).spec))
    assert after - before == secrets
    recording = run(with_section)
    assert not recording.plan.errors
    assert OPTIONAL[section] in {r.type for r in recording.resources}


def test_observability_parts_are_independent():
    lab = values_of(LAB)
    # A private address: its certificate is from the lab's own CA (config/rules.py private_endpoints_have_a_ca).
    lab["observability"] = {"logs": {"kind": "loki", "host": "192.168.1.30", "port": 3100,
                                     "caCertificate": hk_prod_values()["observability"]["logs"]["caCertificate"]}}
    recording = run(lab)
    names = {r.name for r in recording.resources}
    assert any("fluent-bit" in n for n in names)
    assert not any("kube-prometheus-stack" in n or "grafana" in n for n in names)
    assert "grafanaAdminPassword" not in required_secrets(load(raw_config(lab)).spec)


def test_storage_backends_are_independent():
    lab = values_of(LAB)
    lab["storage"] = {"nfs": {"server": "192.168.1.30", "path": "/srv/k8s"}, "defaultClass": "nfs-files"}
    names = {r.name for r in run(lab).resources}
    assert "lab-storage-csi-driver-nfs" in names
    assert not any("smb" in n or "longhorn" in n for n in names)


def test_secret_table_covers_every_key():
    # One table (config.secret_keys): the loader's refusals and docs/configuration.md's list come from it.
    assert set(SECRET_KEYS) == {"proxmoxApiToken", "proxmoxSshPrivateKey", "nodeSshPrivateKey", "hypervSshPrivateKey",
                                "hypervSshPassword", "windowsAdminPassword", "windowsAdminPasswordPrevious",
                                "bastionSshPrivateKey", "smbUsername", "smbPassword", "grafanaAdminPassword",
                                "tlsCaCertificate", "tlsCaKey", "backupAccessKeyId", "backupSecretAccessKey",
                                "offsiteAccessKeyId", "offsiteSecretAccessKey", "etcdOffsiteAccessKeyId",
                                "etcdOffsiteSecretAccessKey", "veleroRepositoryPassword"}


# --- one control-plane node is a first-class shape: day-2 operations run on the lab as on hk-prod -----------

@pytest.fixture(scope="module")
def lab_created() -> Recording:
    return run(values_of(LAB))


def _run_on(created: Recording, values: dict) -> Recording:
    spec = load(raw_config(values)).spec
    return run_program(raw_config(values), stack=spec.cluster.name, state=created.state,
                       secret_keys=required_secrets(spec))


def test_the_lab_upgrades_its_only_control_plane_node_then_its_workers(lab_created):
    values = values_of(LAB)
    values["cluster"]["kubernetesVersion"] = "1.37.1"
    upgraded = _run_on(lab_created, values)
    assert not upgraded.plan.errors, upgraded.plan.errors
    for node in ("lab-cp-1", "lab-lnx-1", "lab-win-1"):
        for part in ("drain-for-upgrade", "node-upgrade", "uncordon-after-upgrade"):
            assert upgraded.plan.of(f"lab-upgrade-{node}-{part}") == ["update"], (node, part)
    # In order: the control-plane node first (kubeadm upgrade apply), each node behind its drain.
    first = upgraded.named("lab-upgrade-lab-cp-1-uncordon-after-upgrade").urn
    assert first in upgraded.waits_for(upgraded.named("lab-upgrade-lab-lnx-1-drain-for-upgrade").urn)
    assert not [r for r in upgraded.resources if r.name.endswith(("-vm", "-init", "-join")) and
                upgraded.plan.of(r.name) not in ([], ["same"])]


def test_the_lab_renews_the_certificates_of_its_only_control_plane_node(lab_created):
    values = values_of(LAB)
    values["cluster"]["certificateRenewal"] = "2027-10"
    renewed = _run_on(lab_created, values)
    assert not renewed.plan.errors, renewed.plan.errors
    renewal = renewed.named("lab-kubeadm-lab-cp-1-certificate-renewal")
    assert renewal.urn in renewed.named("lab-kubeadm-kubeconfig").dependencies
