"""render.network: Calico objects against the strict Installation CRD schema, built-in objects against
kubernetes-validate (strict, the cluster's 1.36), OS placement, and which objects each input touches."""
from __future__ import annotations

import copy
import dataclasses
import json

import kubernetes_validate
import pytest

from plan.platform import calico_params
from render import network
from render.network import CalicoParams
from tests.conftest import hk_prod_spec
from tests.crd_schema import SCHEMA_DIR, CustomResourceInvalid, validate_custom_resource
from tests.validators import powershell_errors
from vocab import windows_pods

INSTALLATION_SCHEMA = "operator.tigera.io_v1_Installation.json"
KUBERNETES_VERSION = "1.36.4"
VALIDATE_VERSION = "1.36.0"
# config.compat's HostProcess kube-proxy image template (sig-windows-tools naming).
KUBE_PROXY_IMAGE = "docker.io/sigwindowstools/kube-proxy:v{version}-calico-hostprocess"

# hk-prod's Calico, as the program builds it (Pulumi.hk-prod.yaml through components/platform/network.py).
HK_PROD = calico_params(hk_prod_spec())


def kube_proxy(cluster_cidr: str = "10.244.0.0/16") -> list[dict]:
    return network.windows_kube_proxy(KUBERNETES_VERSION, KUBE_PROXY_IMAGE, cluster_cidr)


def render_all(p: CalicoParams) -> dict[str, object]:
    """Every renderer's output for p, keyed by renderer."""
    return {
        "operator_values": network.tigera_operator_values(p),
        "installation": network.installation(p),
        "ipam": network.ipam_strict_affinity(),
        "felix": network.felix_vxlan(p),
        "kube_proxy": kube_proxy(p.pod_cidr),
    }


def pod_spec(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


# --- Installation: strict CRD schema ---------------------------------------------------------------

def test_schema_directory_is_next_to_the_repository():
    assert (SCHEMA_DIR / INSTALLATION_SCHEMA).is_file()


@pytest.mark.parametrize("windows", [True, False])
def test_installation_passes_the_strict_crd_schema(windows):
    obj = network.installation(dataclasses.replace(HK_PROD, windows=windows))
    validate_custom_resource(obj, INSTALLATION_SCHEMA)
    # The schema's CEL rule (not evaluated by jsonschema) only admits these names.
    assert obj["metadata"]["name"] == "default"


@pytest.mark.parametrize("path, typo", [
    (("spec", "calicoNetwork"), "mut"),
    (("spec",), "serviceCIDR"),
    (("spec", "windowsNodes"), "cniConfDir"),
])
def test_strict_schema_rejects_a_typo_the_api_server_would_prune(path, typo):
    obj = network.installation(HK_PROD)
    target = obj
    for key in path:
        target = target[key]
    target[typo] = "x"
    with pytest.raises(CustomResourceInvalid) as caught:
        validate_custom_resource(obj, INSTALLATION_SCHEMA)
    assert any(typo in error for error in caught.value.errors), caught.value.errors


def test_strict_schema_rejects_a_value_outside_an_enum():
    obj = network.installation(HK_PROD)
    obj["spec"]["calicoNetwork"]["ipPools"][0]["encapsulation"] = "Vxlan"
    with pytest.raises(CustomResourceInvalid):
        validate_custom_resource(obj, INSTALLATION_SCHEMA)


def test_a_missing_schema_fails_instead_of_skipping(tmp_path):
    with pytest.raises(AssertionError, match="missing"):
        validate_custom_resource(network.installation(HK_PROD), tmp_path / "absent.json")


def test_installation_carries_the_configured_network():
    spec = network.installation(HK_PROD)["spec"]
    assert spec["variant"] == "Calico"
    assert spec["calicoNetwork"]["bgp"] == "Disabled"
    assert spec["calicoNetwork"]["mtu"] == 1450
    assert spec["calicoNetwork"]["ipPools"] == [{
        "cidr": "10.244.0.0/16", "encapsulation": "VXLAN", "natOutgoing": "Enabled",
        "blockSize": 26, "nodeSelector": "all()",
    }]
    assert spec["serviceCIDRs"] == ["10.96.0.0/12"]
    assert spec["calicoNetwork"]["windowsDataplane"] == "HNS"
    # The operator's own defaults (DefaultWindowsCNIDirectories), forward slashes, no drive letter.
    assert spec["windowsNodes"] == {
        "cniBinDir": "/opt/cni/bin",
        "cniConfigDir": "/etc/cni/net.d",
        "cniLogDir": "/var/log/calico/cni",
    }
    assert "kubernetesProvider" not in spec


def test_installation_waits_for_a_condition_its_schema_has():
    annotations = network.installation(HK_PROD)["metadata"]["annotations"]
    assert annotations[network.PULUMI_WAIT_FOR] == "condition=Ready"
    schema = json.loads((SCHEMA_DIR / INSTALLATION_SCHEMA).read_text())
    conditions = schema["properties"]["status"]["properties"]["conditions"]
    assert "Ready" in conditions["description"]


def test_without_windows_the_windows_parts_are_dropped():
    linux_only = dataclasses.replace(HK_PROD, windows=False)
    spec = network.installation(linux_only)["spec"]
    assert "windowsDataplane" not in spec["calicoNetwork"]
    assert "windowsNodes" not in spec
    kinds = [obj["kind"] for obj in network.calico_settings(linux_only)]
    assert kinds == ["FelixConfiguration"]


def test_windows_settings_include_strict_affinity():
    # The operator renders no Windows support without strict affinity; the order of creation is a
    # property of the graph (tests/program/test_platform.py).
    kinds = [obj["kind"] for obj in network.calico_settings(HK_PROD)]
    assert kinds == ["FelixConfiguration", "IPAMConfiguration"]


# --- Calico settings outside the Installation ------------------------------------------------------

def test_strict_affinity_sets_every_field_the_crd_requires():
    obj = network.ipam_strict_affinity()
    assert (obj["apiVersion"], obj["kind"], obj["metadata"]["name"]) == (
        "projectcalico.org/v3", "IPAMConfiguration", "default")
    assert obj["spec"] == {"strictAffinity": True, "autoAllocateBlocks": True}


def test_felix_configuration_carries_the_windows_vxlan_identity():
    obj = network.felix_vxlan(HK_PROD)
    assert (obj["apiVersion"], obj["kind"], obj["metadata"]["name"]) == (
        "projectcalico.org/v3", "FelixConfiguration", "default")
    assert obj["spec"] == {"vxlanVNI": 4096, "vxlanPort": 4789}


# --- Operator chart values -------------------------------------------------------------------------

def test_operator_values_leave_the_installation_to_us_and_point_at_the_api_ip():
    values = network.tigera_operator_values(HK_PROD)
    assert values["installation"] == {"enabled": False}
    assert values["kubernetesServiceEndpoint"] == {"host": "10.30.30.10", "port": "6443"}


def test_operator_runs_on_linux_and_does_not_tolerate_the_windows_taint():
    values = network.tigera_operator_values(HK_PROD)
    assert values["nodeSelector"] == {"kubernetes.io/os": "linux"}
    for toleration in values["tolerations"]:
        # A toleration without a key (or with Exists on the Windows key) would match the Windows taint.
        assert toleration.get("key") not in (None, network.WINDOWS_TAINT_KEY), toleration
    assert values["resources"]["requests"]





def test_api_host_must_be_an_ip():
    with pytest.raises(ValueError, match="IP address"):
        dataclasses.replace(HK_PROD, api_host="api.hk-prod.internal")


# --- kube-proxy on Windows -------------------------------------------------------------------------

def test_every_built_in_object_passes_strict_kubernetes_validation():
    for obj in kube_proxy():
        kubernetes_validate.validate(copy.deepcopy(obj), VALIDATE_VERSION, strict=True)


def test_kube_proxy_is_a_windows_hostprocess_daemonset():
    config_map, daemonset = kube_proxy()
    assert config_map["kind"] == "ConfigMap" and daemonset["kind"] == "DaemonSet"
    assert daemonset["metadata"]["namespace"] == "kube-system"
    spec = pod_spec(daemonset)
    assert spec["nodeSelector"] == {"kubernetes.io/os": "windows"}
    assert {"key": "node-role.kubernetes.io/windows", "operator": "Exists", "effect": "NoSchedule"} in spec[
        "tolerations"]
    assert spec["hostNetwork"] is True
    assert spec["securityContext"]["windowsOptions"] == {
        "hostProcess": True, "runAsUserName": "NT AUTHORITY\\system"}
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["serviceAccountName"] == "kube-proxy"
    (container,) = spec["containers"]
    assert container["image"] == "docker.io/sigwindowstools/kube-proxy:v1.36.4-calico-hostprocess"
    assert container["resources"]["requests"]
    # No waitFor: pulumi-kubernetes awaits DaemonSets itself.
    assert network.PULUMI_WAIT_FOR not in daemonset["metadata"].get("annotations", {})


def test_kube_proxy_serves_every_windows_build():
    spec = pod_spec(kube_proxy()[1])
    assert spec["nodeSelector"] == {"kubernetes.io/os": "windows"}
    assert "affinity" not in spec


def test_kube_proxy_mounts_the_script_it_runs():
    config_map, daemonset = kube_proxy()
    spec = pod_spec(daemonset)
    (container,) = spec["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v["configMap"]["name"] for v in spec["volumes"]}
    assert volumes["start-script"] == config_map["metadata"]["name"]
    script_key = next(iter(config_map["data"]))
    assert container["args"] == [f"$env:CONTAINER_SANDBOX_MOUNT_POINT{mounts['start-script']}/{script_key}"]
    assert volumes["kubeadm-kube-proxy"] == "kube-proxy"


def test_kube_proxy_script_parses_and_runs_kernelspace_on_the_calico_network():
    script = kube_proxy()[0]["data"]["start.ps1"]
    assert powershell_errors(script) == []
    assert script.startswith("$ErrorActionPreference = 'Stop'")
    for flag in ("--proxy-mode=kernelspace", "--network-name=$NetworkName", "--cluster-cidr=$ClusterCidr",
                 "--source-vip=$sourceVip", "--enable-dsr=true", "--hostname-override=$env:NODE_NAME"):
        assert flag in script
    lines = script.splitlines()
    assert "$ClusterCidr = '10.244.0.0/16'" in lines
    assert "$NetworkName = 'Calico'" in lines and "$HostEndpointName = 'Calico_ep'" in lines
    assert "$KubeadmConfigDir = 'var/lib/kube-proxy'" in lines
    assert "--feature-gates" not in script


def test_kube_proxy_rejects_a_bad_cluster_cidr():
    with pytest.raises(ValueError):
        kube_proxy(cluster_cidr="10.244.0.0/33")


# --- Which objects each input touches --------------------------------------------------------------

def test_an_mtu_change_changes_only_the_installation():
    before = render_all(HK_PROD)
    after = render_all(dataclasses.replace(HK_PROD, mtu=1400))
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"installation"}
    assert after["installation"]["spec"]["calicoNetwork"]["mtu"] == 1400


def test_a_vni_change_changes_only_the_felix_configuration():
    before = render_all(HK_PROD)
    after = render_all(dataclasses.replace(HK_PROD, vxlan_vni=4097))
    assert {name for name in before if before[name] != after[name]} == {"felix"}


@pytest.mark.parametrize("block_size,max_pods", [(26, 60), (27, 28), (29, 4), (24, 110), (20, 110)])
def test_windows_max_pods_is_the_single_block_minus_the_four_reserved_addresses(block_size, max_pods):
    assert windows_pods.windows_max_pods(block_size) == max_pods


def test_a_block_with_no_address_left_for_windows_pods_is_rejected():
    with pytest.raises(ValueError, match="no pod address"):
        windows_pods.windows_max_pods(30)
