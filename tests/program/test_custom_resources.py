"""Every custom resource the program declares, validated strictly against its upstream CRD schema
(tests/fixtures/schemas, vendored with their sources): an unknown field is an error, because the API server
would silently prune it."""
from __future__ import annotations

import pytest

from tests.conftest import hk_prod_values, raw_config, with_legacy_windows_build
from tests.crd_schema import validate_custom_resource
from tools.mock.program import Secret, run_program

# apiVersion/kind -> vendored schema.
SCHEMAS = {
    "operator.tigera.io/v1/Installation": "operator.tigera.io_v1_Installation.json",
    "templates.gatekeeper.sh/v1/ConstraintTemplate": "templates.gatekeeper.sh_v1_ConstraintTemplate.json",
    "config.gatekeeper.sh/v1alpha1/Config": "config.gatekeeper.sh_v1alpha1_Config.json",
    "gateway.networking.k8s.io/v1/GatewayClass": "gateway.networking.k8s.io_v1_GatewayClass.json",
    "gateway.networking.k8s.io/v1/Gateway": "gateway.networking.k8s.io_v1_Gateway.json",
    "gateway.networking.k8s.io/v1/HTTPRoute": "gateway.networking.k8s.io_v1_HTTPRoute.json",
    "gateway.envoyproxy.io/v1alpha1/EnvoyProxy": "gateway.envoyproxy.io_v1alpha1_EnvoyProxy.json",
    "projectcalico.org/v3/FelixConfiguration": "projectcalico.org_v3_FelixConfiguration.json",
    "projectcalico.org/v3/IPAMConfiguration": "projectcalico.org_v3_IPAMConfiguration.json",
    "monitoring.coreos.com/v1/PrometheusRule": "monitoring.coreos.com_v1_PrometheusRule.json",
    "metallb.io/v1beta1/IPAddressPool": "metallb.io_v1beta1_IPAddressPool.json",
    "metallb.io/v1beta1/L2Advertisement": "metallb.io_v1beta1_L2Advertisement.json",
    "cert-manager.io/v1/ClusterIssuer": "cert-manager.io_v1_ClusterIssuer.json",
    "monitoring.coreos.com/v1/PodMonitor": "monitoring.coreos.com_v1_PodMonitor.json",
    "keda.sh/v1alpha1/ScaledObject": "keda.sh_v1alpha1_ScaledObject.json",
    "velero.io/v1/BackupStorageLocation": "velero.io_v1_BackupStorageLocation.json",
    "velero.io/v1/Schedule": "velero.io_v1_Schedule.json",
    "argoproj.io/v1alpha1/Rollout": "argoproj.io_v1alpha1_Rollout.json",
    "projectcalico.org/v3/Tier": "projectcalico.org_v3_Tier.json",
    "projectcalico.org/v3/GlobalNetworkPolicy": "projectcalico.org_v3_GlobalNetworkPolicy.json",
    "policy.cert-manager.io/v1alpha1/CertificateRequestPolicy": "policy.cert-manager.io_v1alpha1_CertificateRequestPolicy.json",
}
# Gatekeeper generates each constraint kind's CRD from its template (spec.crd.spec.validation); the
# constraints are validated against their templates' parameter schemas in tests/policy/test_gatekeeper.py.
GENERATED_BY_GATEKEEPER = "constraints.gatekeeper.sh/"


def _plain(value):
    if isinstance(value, Secret):
        return _plain(value.value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def custom_resources(recording):
    for r in recording.resources:
        if not r.custom or not r.type.startswith("kubernetes:") or "." not in r.type.split(":")[1].split("/")[0]:
            continue
        group_version, kind = r.type.split(":")[1], r.type.split(":")[2]
        if group_version.startswith(("helm.sh/", "apiextensions.k8s.io/", "admissionregistration.k8s.io/",
                                     "rbac.authorization.k8s.io/", "networking.k8s.io/", "node.k8s.io/",
                                     "storage.k8s.io/", "scheduling.k8s.io/", "policy/", "apps/", "batch/")):
            continue
        yield r, f"{group_version}/{kind}"


@pytest.mark.parametrize("legacy", [False, True], ids=["hk-prod", "two-windows-builds"])
def test_every_custom_resource_passes_its_upstream_crd_schema_strictly(legacy):
    values = with_legacy_windows_build(hk_prod_values()) if legacy else hk_prod_values()
    recording = run_program(raw_config(values))
    seen = set()
    for r, key in custom_resources(recording):
        if key.startswith(GENERATED_BY_GATEKEEPER):
            continue
        assert key in SCHEMAS, f"{r.name}: no vendored schema for {key} (tests/fixtures/schemas/README.md)"
        obj = {"apiVersion": key.rsplit("/", 1)[0], "kind": key.rsplit("/", 1)[1], **_plain(r.inputs)}
        obj.pop("__defaults", None)
        validate_custom_resource(obj, SCHEMAS[key])
        seen.add(key)
    # Every vendored schema has something to judge: a kind the program stopped declaring shows here.
    assert seen == set(SCHEMAS), set(SCHEMAS) - seen


def test_an_unknown_field_in_any_of_them_is_refused(hk_recording):
    from tests.crd_schema import CustomResourceInvalid
    recording = hk_recording
    checked = 0
    for r, key in custom_resources(recording):
        if key.startswith(GENERATED_BY_GATEKEEPER):
            continue
        obj = {"apiVersion": key.rsplit("/", 1)[0], "kind": key.rsplit("/", 1)[1], **_plain(r.inputs)}
        obj.setdefault("spec", {})["notAField"] = True
        with pytest.raises(CustomResourceInvalid, match="notAField"):
            validate_custom_resource(obj, SCHEMAS[key])
        checked += 1
    assert checked >= len(SCHEMAS)
