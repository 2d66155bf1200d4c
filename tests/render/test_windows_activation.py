"""render/windows_activation.py and its wiring: the script parses, installs the right public key per edition,
is idempotent, fails loudly; the stack key windows.activation is validated and adds one activation step per
Windows node that the Windows preparation waits for, and changing it touches only those steps."""
from __future__ import annotations

import re

import pytest

from render.hyperv import script_from_ssh_command
from render.windows_activation import (
    AVMA_KEYS,
    KMS_CLIENT_KEYS,
    WindowsActivation,
    product_keys,
    render_activation,
)
from tests.conftest import problems, raw_config
from tests.validators import powershell_errors
from tools.mock.program import Secret, changed_resources, run_program

KMS = WindowsActivation("hk-win-1", "win2022", "kms", "kms.hk-prod.internal", 1688)
AVMA = WindowsActivation("hk-win-3", "win2019", "avma")
WINDOWS_NODES = ("hk-win-1", "hk-win-2", "hk-win-3")


@pytest.mark.parametrize("activation", [KMS, AVMA], ids=["kms", "avma"])
def test_script_parses_and_fails_loudly(activation):
    script = render_activation(activation)
    assert powershell_errors(script) == []
    code = [line for line in script.splitlines() if line.strip() and not line.startswith("#")]
    assert code[:2] == ["$ErrorActionPreference = 'Stop'", "Set-StrictMode -Version Latest"]
    # Every licensing call's ReturnValue is checked, and the guest block fails loudly too.
    assert "if ($result.ReturnValue -ne 0) { throw" in script
    assert script.count("$ErrorActionPreference = 'Stop'") == 2


def _key_table(script):
    """The edition -> key table the script builds, from its two input lists (paired by index)."""
    def listed(name):
        (line,) = [line for line in script.splitlines() if line.startswith(f"${name} = @(")]
        return re.findall(r"'([^']*)'", line)
    editions, keys = listed("KeyEditions"), listed("KeyValues")
    assert len(editions) == len(keys)
    assert "for ($i = 0; $i -lt $KeyEditions.Count; $i++) { $ProductKeys[$KeyEditions[$i]] = $KeyValues[$i] }" in script
    return dict(zip(editions, keys, strict=False))


def test_kms_installs_the_gvlk_sets_the_host_and_activates_only_when_needed():
    script = render_activation(KMS)
    assert "$KeyEditions = @('ServerDatacenter', 'ServerStandard')" in script
    assert "$KeyValues = @('WX4NM-KYWYW-QJJR4-XV3QB-6VM33', 'VDYBN-27WPP-V4HQT-9VMD4-VMK7H')" in script
    assert _key_table(script) == {"ServerDatacenter": "WX4NM-KYWYW-QJJR4-XV3QB-6VM33",
                                  "ServerStandard": "VDYBN-27WPP-V4HQT-9VMD4-VMK7H"}
    assert "$KmsHost = 'kms.hk-prod.internal'" in script and "$KmsPort = 1688" in script
    # Idempotence: each change is guarded by a comparison with the guest's current state.
    assert "PartialProductKey -ne $key.Substring($key.Length - 5)" in script
    assert "$service.KeyManagementServiceMachine -ne $KmsHost -or $service.KeyManagementServicePort -ne $KmsPort" in script
    assert "if ($license[0].LicenseStatus -ne 1) {" in script
    assert "'SetKeyManagementServicePort' @{ PortNumber = [uint32]$KmsPort }" in script


def test_avma_uses_the_avma_key_and_the_key_value_pair_service():
    script = render_activation(AVMA)
    assert _key_table(script)["ServerDatacenter"] == "H3RNG-8C32Q-Q8FRX-6TDXV-WMBMW"
    assert _key_table(script) == AVMA_KEYS["win2019"]
    assert "$KvpService = 'Key-Value Pair Exchange'" in script
    assert "Enable-VMIntegrationService -VMName $VmName -Name $KvpService" in script
    assert "$KmsHost = ''" in script


def test_keys_are_per_version_and_mode():
    assert product_keys(KMS) == KMS_CLIENT_KEYS["win2022"]
    assert product_keys(AVMA) == AVMA_KEYS["win2019"]
    assert KMS_CLIENT_KEYS["win2022"]["ServerDatacenter"] != AVMA_KEYS["win2022"]["ServerDatacenter"]
    with pytest.raises(ValueError, match="no kms keys recorded for win2025"):
        render_activation(WindowsActivation("hk-win-1", "win2025", "kms", "kms.example"))


@pytest.mark.parametrize("bad, fragment", [
    (WindowsActivation("hk win", "win2022", "avma"), "vm_name"),
    (WindowsActivation("hk-win-1", "win2022", "kms"), "KMS host"),
    (WindowsActivation("hk-win-1", "win2022", "kms", "kms.example", 0), "KMS port"),
])
def test_bad_inputs_are_refused(bad, fragment):
    with pytest.raises(ValueError, match=fragment):
        render_activation(bad)


@pytest.mark.parametrize("activation, fragment", [
    ({"mode": "kms"}, "kmsHost is required with mode: kms"),
    ({"mode": "avma", "kmsHost": "kms.example"}, "kmsHost is only used with mode: kms"),
    ({"mode": "mak"}, "Input should be 'kms', 'avma' or 'none'"),
    ({"mode": "kms", "kmsHost": "kms example"}, "must be an IPv4 address or an ASCII host name"),
    ({"mode": "kms", "kmsHost": "kms.example", "kmsPort": 0}, "greater than or equal to 1"),
    ({"mode": "none", "productKey": "XXXXX"}, "unknown key"),
])
def test_activation_config_is_validated_at_its_key_path(hk_values, activation, fragment):
    hk_values["windows"]["activation"] = activation
    found = problems(hk_values)
    assert any(p.startswith("windows.activation") and fragment in p for p in found), found


def _record(values):
    return run_program(raw_config(values), stack="hk-prod")


def test_no_activation_step_by_default(hk_values):
    recording = _record(hk_values)
    assert not [r for r in recording.resources if r.name.endswith("-activation")]
    first_prepare = recording.named("hk-prod-kubeadm-windows-hk-win-1-prepare-containers-feature")
    assert recording.named("hk-prod-hk-win-1-vm").urn in first_prepare.dependencies


def test_kms_activation_is_one_step_per_node_before_its_preparation(hk_values):
    hk_values["windows"]["activation"] = {"mode": "kms", "kmsHost": "kms.hk-prod.internal"}
    recording = _record(hk_values)
    for node in WINDOWS_NODES:
        step = recording.named(f"hk-prod-{node}-activation")
        vm = recording.named(f"hk-prod-{node}-vm")
        assert step.parent == recording.named(f"hk-prod-{node}").urn
        assert vm.urn in step.dependencies
        assert isinstance(step.inputs["stdin"], Secret)
        script = script_from_ssh_command(step.inputs["create"])
        assert script is not None and f"$VmName = '{node}'" in script
        assert step.inputs["update"] == step.inputs["create"]
        prepare = recording.named(f"hk-prod-kubeadm-windows-{node}-prepare-containers-feature")
        assert step.urn in prepare.dependencies


def test_changing_the_kms_host_touches_only_the_activation_steps(hk_values):
    hk_values["windows"]["activation"] = {"mode": "kms", "kmsHost": "kms-a.hk-prod.internal"}
    before = _record(hk_values)
    hk_values["windows"]["activation"]["kmsHost"] = "kms-b.hk-prod.internal"
    after = _record(hk_values)
    assert changed_resources(before, after) == {f"hk-prod-{n}-activation" for n in WINDOWS_NODES}
