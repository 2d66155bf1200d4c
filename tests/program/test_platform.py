"""The platform layers as declared by the program: cluster network, scheduling, workloads."""
from __future__ import annotations

import json

import pulumi
import pytest

from tests.conftest import hk_prod_values, raw_config, with_legacy_windows_build
from tests.crd_schema import SCHEMA_DIR, validate_custom_resource
from tools.mock.program import Recording, changed_resources, run_program
from tools.synth import plain

INSTALLATION_SCHEMA = SCHEMA_DIR / "operator.tigera.io_v1_Installation.json"
CONSTRAINT_TEMPLATE_SCHEMA = SCHEMA_DIR / "templates.gatekeeper.sh_v1_ConstraintTemplate.json"


@pytest.fixture
def hk(hk_recording) -> Recording:
    return hk_recording


@pytest.fixture(scope="module")
def hk_two_builds() -> Recording:
    return run_program(raw_config(with_legacy_windows_build(hk_prod_values())))




def test_installation_as_declared_passes_the_strict_crd_schema(hk):
    installation = plain(hk.named("hk-prod-network-installation").inputs)
    assert installation["apiVersion"] == "operator.tigera.io/v1" and installation["kind"] == "Installation"
    validate_custom_resource(installation, INSTALLATION_SCHEMA)
    spec = installation["spec"]
    assert spec["calicoNetwork"]["mtu"] == 1450 and spec["calicoNetwork"]["bgp"] == "Disabled"
    assert spec["calicoNetwork"]["windowsDataplane"] == "HNS"
    assert spec["serviceCIDRs"] == ["10.96.0.0/12"]
    assert "kubernetesProvider" not in spec


def test_calico_comes_up_in_the_order_the_operator_needs(hk):
    crds = hk.named("hk-prod-network-calico-crds").urn
    felix = hk.named("hk-prod-network-felixconfiguration-default").urn
    ipam = hk.named("hk-prod-network-ipamconfiguration-default").urn
    operator = hk.named("hk-prod-network-tigera-operator")
    installation = hk.named("hk-prod-network-installation")
    assert {crds, felix, ipam} <= set(operator.dependencies)
    assert operator.urn in installation.dependencies
    values = operator.inputs["values"]
    assert values["installation"]["enabled"] is False
    assert values["kubernetesServiceEndpoint"]["host"] == "10.30.30.10"


def test_windows_joins_wait_for_calico_and_linux_joins_do_not(hk):
    installation = hk.named("hk-prod-network-installation").urn
    for node in ("hk-win-1", "hk-win-2", "hk-win-3"):
        assert installation in hk.waits_for(hk.named(f"hk-prod-kubeadm-windows-{node}-join").urn)
    for node in ("hk-cp-2", "hk-lnx-1"):
        assert installation not in hk.waits_for(hk.named(f"hk-prod-kubeadm-{node}-join").urn)


def test_windows_kube_proxy_follows_calico_and_the_windows_nodes_it_serves(hk):
    daemonset = hk.named("hk-prod-windows-kube-proxy-daemonset-kube-system-kube-proxy-windows")
    waits_for = hk.waits_for(daemonset.urn)
    assert hk.named("hk-prod-network-installation").urn in waits_for
    for node in ("hk-win-1", "hk-win-2", "hk-win-3"):
        assert hk.named(f"hk-prod-kubeadm-windows-{node}-drain").urn in waits_for
        # No cycle: a join needs Calico, never kube-proxy.
        assert daemonset.urn not in hk.waits_for(hk.named(f"hk-prod-kubeadm-windows-{node}-join").urn)
    assert daemonset.inputs["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "windows"}
    # Once declared under ClusterNetwork: the alias moves it instead of replacing it.
    network = hk.named("hk-prod-network").urn
    assert {"name": "hk-prod-network-daemonset-kube-system-kube-proxy-windows", "parentUrn": network} in [
        a["spec"] for a in daemonset.aliases]


def test_a_linux_only_stack_has_no_windows_kube_proxy():
    values = hk_prod_values()
    values["nodes"]["windows"] = []
    linux_only = run_program(raw_config(values))
    assert not [r for r in linux_only.resources if "kube-proxy-windows" in r.name]


def test_mtu_change_touches_only_calico(hk):
    values = hk_prod_values()
    values["calico"]["mtu"] = 1400
    assert changed_resources(hk, run_program(raw_config(values))) == {"hk-prod-network-installation"}


WORKLOAD_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "Pod"}
# Custom resources with no vendored CRD schema: their renderers' tests check their fields against the
# upstream API references (tests/render/test_network.py, tests/render/test_metrics.py).
from tests.render.test_workloads import ROUTING_KINDS  # noqa: E402

UNSCHEMAED_CUSTOM_RESOURCES = {"projectcalico.org/v3": {"FelixConfiguration", "IPAMConfiguration", "Tier",
                                                         "GlobalNetworkPolicy"},
                               "monitoring.coreos.com/v1": {"PrometheusRule", "PodMonitor"},
                               "config.gatekeeper.sh/v1alpha1": {"Config"},
                               # Validated against their CRD schemas in tests/program/test_custom_resources.py.
                               "metallb.io/v1beta1": {"IPAddressPool", "L2Advertisement"},
                               "cert-manager.io/v1": {"ClusterIssuer"},
                               "policy.cert-manager.io/v1alpha1": {"CertificateRequestPolicy"},
                               "keda.sh/v1alpha1": {"ScaledObject"},
                               "velero.io/v1": {"BackupStorageLocation", "Schedule"},
                               "argoproj.io/v1alpha1": {"Rollout"}}


def _shape_only(value):
    """A secret's structure with every string blanked: what the validators need, without the value."""
    if isinstance(value, dict):
        return {k: _shape_only(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape_only(v) for v in value]
    return "redacted" if isinstance(value, str) else value


def kubernetes_objects(recording: Recording) -> list[dict]:
    objects = []
    for r in recording.resources:
        if r.type.startswith("kubernetes:") and r.custom and "apiVersion" in r.inputs:
            objects.append(plain(r.inputs, secret=lambda s: _shape_only(s.value)))
    return objects


def test_every_kubernetes_object_passes_the_validators(hk):
    import kubernetes_validate

    version = hk_prod_values()["cluster"]["kubernetesVersion"]
    checked = set()
    for obj in kubernetes_objects(hk):
        if obj["apiVersion"] == "operator.tigera.io/v1":
            validate_custom_resource(obj, INSTALLATION_SCHEMA)
        elif obj["apiVersion"] == "templates.gatekeeper.sh/v1":
            validate_custom_resource(obj, CONSTRAINT_TEMPLATE_SCHEMA)
        elif (obj["apiVersion"], obj["kind"]) in ROUTING_KINDS:
            # Custom resources: tests/program/test_custom_resources.py validates them against their CRD schemas.
            continue
        elif obj["apiVersion"] == "constraints.gatekeeper.sh/v1beta1":
            # A constraint's schema is its template's parameters schema: tests/policy/test_gatekeeper.py.
            continue
        elif obj["kind"] in UNSCHEMAED_CUSTOM_RESOURCES.get(obj["apiVersion"], ()):
            continue
        else:
            kubernetes_validate.validate(obj, version, strict=True)
        checked.add(obj["kind"])
    assert {"Installation", "DaemonSet", "Deployment", "Service", "RuntimeClass", "Namespace",
            "ResourceQuota", "LimitRange", "Node", "ConfigMap", "ConstraintTemplate", "StorageClass", "Secret",
            "HorizontalPodAutoscaler"} <= checked


def pod_specs(recording: Recording):
    for obj in kubernetes_objects(recording):
        if obj["kind"] in WORKLOAD_KINDS:
            yield obj["metadata"]["name"], obj["spec"]["template"]["spec"]


def test_every_workload_declares_its_os_and_only_windows_ones_tolerate_the_taint(hk):
    runtime_classes = {obj["metadata"]["name"]: obj for obj in kubernetes_objects(hk) if obj["kind"] == "RuntimeClass"}
    seen = []
    for name, spec in pod_specs(hk):
        rc = runtime_classes.get(spec.get("runtimeClassName"), {}).get("scheduling", {})
        node_selector = {**rc.get("nodeSelector", {}), **spec.get("nodeSelector", {})}
        tolerations = rc.get("tolerations", []) + spec.get("tolerations", [])
        os_ = node_selector.get("kubernetes.io/os")
        assert os_ in ("linux", "windows"), f"{name} does not say which OS it needs"
        tolerates_windows = any(t.get("key") == "node-role.kubernetes.io/windows" for t in tolerations)
        assert tolerates_windows == (os_ == "windows"), name
        seen.append((name, os_))
    assert ("api-win", "windows") in seen and ("api-linux", "linux") in seen and ("kube-proxy-windows", "windows") in seen


def _selects_linux(values: str) -> bool:
    """A nodeSelector on Linux, or a required node affinity In [linux], somewhere in the values."""
    return ('"kubernetes.io/os": "linux"' in values
            or '{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}' in values)


def test_linux_only_system_components_select_linux(hk):
    for release in ("hk-prod-network-tigera-operator", "hk-prod-samples-envoy-gateway"):
        values = json.dumps(hk.named(release).inputs["values"])
        assert _selects_linux(values) and '"windows"' not in values, release


def test_windows_workloads_start_after_windows_nodes_are_ready(hk):
    api_win = hk.named("hk-prod-samples-deployment-win-prod-api-win").urn
    waits_for = hk.waits_for(api_win)
    for node in ("hk-win-1", "hk-win-2"):  # the win2022 nodes
        assert hk.named(f"hk-prod-kubeadm-windows-{node}-drain").urn in waits_for
    assert hk.named("hk-prod-windows-kube-proxy-daemonset-kube-system-kube-proxy-windows").urn in waits_for
    assert hk.named("hk-prod-scheduling-runtimeclass-win2022").urn in waits_for


def test_node_labels_follow_config_once_the_node_is_ready(hk):
    patch = hk.named("hk-prod-scheduling-node-hk-lnx-3")
    assert patch.type == "kubernetes:core/v1:NodePatch"
    assert patch.inputs["metadata"]["labels"] == {"topology.kubernetes.io/zone": "hk-1", "node.os.distro": "rocky9",
                                                  "node-role.kubernetes.io/worker": ""}
    assert hk.named("hk-prod-kubeadm-hk-lnx-3-drain").urn in patch.dependencies


def test_adding_a_windows_build_adds_only_what_a_build_needs():
    values = hk_prod_values()
    # Velero's Windows node agent exists for win2022 only, so a win2019 node comes with object-only backups
    # (config.rules backups); the baseline has them too.
    values["backup"]["fileSystemBackup"] = False
    hk = run_program(raw_config(values))
    # hk-prod runs win2022 only; a legacy win2019 node is the build that can still be added (Calico has
    # no win2025 images), with the explicit override.
    values["hyperv"]["hosts"][1]["goldenImages"]["win2019"] = "D:\\golden\\ws2019.vhdx"
    values["windows"]["allowUnsupportedVersions"] = ["win2019"]
    values["nodes"]["windows"].append({"name": "hk-win-4", "zone": "hk-2", "hypervHost": "hv-hk2-a",
                                       "version": "win2019", "cpu": 8, "memoryMb": 16384, "diskGb": 100,
                                       "ip": "10.30.30.54"})
    changed = changed_resources(hk, run_program(raw_config(values)))
    new_node = {n for n in changed if "hk-win-4" in n}
    # A new build needs its RuntimeClass and its own Fluent Bit (a process-isolated image per build); the
    # machines guard records the new node, and the serving certificate approver's inventory on each control-plane
    # node takes it.
    assert new_node and changed - new_node == {"hk-prod-machines", "hk-prod-scheduling-runtimeclass-win2019",
                                               "hk-prod-observability-daemonset-logging-fluent-bit-windows-win2019",
                                               *(f"hk-prod-kubelet-serving-approver-{n}"
                                                 for n in ("hk-cp-1", "hk-cp-2", "hk-cp-3")),
                                               # its address, reserved until its machine is deleted
                                               "hk-prod-address-10-30-30-54"}


def test_samples_can_be_switched_off(hk):
    values = hk_prod_values()
    del values["workloads"]
    recording = run_program(raw_config(values))
    assert not [r for r in recording.resources if r.name.startswith("hk-prod-samples")]
    # With the samples go their Gateway's ingress policies in the application namespaces.
    gateway_policies = {r.name for r in hk.resources if r.name.endswith("-allow-from-envoy-gateway-system")}
    assert len(gateway_policies) == 2
    # And the policy that let the Gateway have its certificate, with the role that let cert-manager use it and the
    # dry run that waited for approver-policy's webhook to admit it.
    approval = {"hk-prod-tls-certificaterequestpolicy-hybrid-cluster-samples-gateway", "hk-prod-tls-approver-policy-webhook",
                "hk-prod-tls-clusterrole-hybrid-cluster-certificate-policies",
                "hk-prod-tls-clusterrolebinding-hybrid-cluster-certificate-policies"}
    # And cert-manager's Gateway API support, which would keep it from starting without the Gateway API's CRDs.
    assert changed_resources(hk, recording) == {r.name for r in hk.resources if r.name.startswith("hk-prod-samples")} | \
        gateway_policies | approval | {"hk-prod-tls-cert-manager"}
    assert recording.named("hk-prod-tls-cert-manager").inputs["values"]["config"]["gatewayAPI"] == {"enabled": False}


def test_storage_classes_and_the_smb_secret(hk):
    from tools.mock.program import Secret
    classes = [obj for obj in kubernetes_objects(hk) if obj["kind"] == "StorageClass"]
    names = [c["metadata"]["name"] for c in classes]
    assert sorted(names) == ["longhorn", "nfs-files", "shared-files"] and len(set(names)) == len(names)
    defaults = [c["metadata"]["name"] for c in classes
                if c["metadata"].get("annotations", {}).get("storageclass.kubernetes.io/is-default-class") == "true"]
    assert defaults == ["longhorn"]
    secret = next(r for r in hk.resources if r.type == "kubernetes:core/v1:Secret" and "smb" in r.name)
    assert isinstance(secret.inputs["stringData"], Secret)
    shared = next(c for c in classes if c["metadata"]["name"] == "shared-files")
    assert shared["parameters"]["csi.storage.k8s.io/node-stage-secret-name"] == secret.inputs["metadata"]["name"]


def test_rotating_the_smb_password_changes_only_the_secret(hk):
    rotated = run_program(raw_config(hk_prod_values()), secrets={"smbPassword": "rotated-password"})
    assert changed_resources(hk, rotated) == {"hk-prod-storage-secret-kube-system-smb-credentials"}


# Charts whose values need no OS selector: CRDs only, or templates that hard-code kubernetes.io/os on
# every pod (render/storage.py CSI_SMB_POD_PARTS / CSI_NFS_POD_PARTS, with the template sources).
NO_OS_VALUES = {"csi-driver-smb": "OS hard-coded per DaemonSet",
                "csi-driver-nfs": "OS hard-coded per workload",
                # templates/controller.yaml and speaker.yaml at v0.16.1 (render/load_balancer.py).
                "metallb": "OS hard-coded on the controller and the speakers",
                # values.yaml at v1.21.1: nodeSelector kubernetes.io/os: linux by default on every part (render/tls.py).
                "oci://quay.io/jetstack/charts/cert-manager": "OS set by the chart's defaults",
                # values.yaml at v0.27.0: nodeSelector kubernetes.io/os: linux by default (render/tls.py).
                "oci://quay.io/jetstack/charts/cert-manager-approver-policy": "OS set by the chart's defaults",
                # keda/templates at v2.20.2 write nodeSelector kubernetes.io/os: linux on all three Deployments
                # (render/custom_metrics.py).
                "keda": "OS hard-coded on the operator, metrics server and webhook"}


def chart_name(release) -> str:
    """A release's chart as CHARTS names it: a released archive (compat HelmChart.archive) by its chart's name."""
    from config.compat import CHARTS
    return next((c.chart for c in CHARTS.values() if c.archive == release.inputs["chart"]), release.inputs["chart"])


def test_every_chart_places_its_pods_on_linux(hk):
    charts = set()
    for release in hk.by_type("kubernetes:helm.sh/v3:Release"):
        charts.add(chart_name(release))
        if chart_name(release) in NO_OS_VALUES:
            continue
        values = json.dumps(release.inputs["values"])
        assert _selects_linux(values), release.name
    assert set(NO_OS_VALUES) <= charts


def test_windows_daemonsets_of_the_platform_run_on_windows_only(hk_two_builds):
    daemonsets = {name: spec for name, spec in pod_specs(hk_two_builds)}
    for name in ("kube-proxy-windows", "fluent-bit-windows-win2019", "fluent-bit-windows-win2022"):
        spec = daemonsets[name]
        assert spec["nodeSelector"]["kubernetes.io/os"] == "windows", name
        assert any(t.get("key") == "node-role.kubernetes.io/windows" for t in spec["tolerations"]), name
    # windows-exporter is kube-prometheus-stack's subchart: placed through its values.
    (stack,) = [r for r in hk_two_builds.by_type("kubernetes:helm.sh/v3:Release")
                if r.inputs["chart"] == "kube-prometheus-stack"]
    exporter = stack.inputs["values"]["prometheus-windows-exporter"]
    assert exporter["nodeSelector"] == {"kubernetes.io/os": "windows"}
    assert [t["key"] for t in exporter["tolerations"]] == ["node-role.kubernetes.io/windows"]


def test_every_rollout_onto_windows_nodes_may_take_a_first_servercore_pull(hk_two_builds):
    """Windows DaemonSets and the Helm releases that carry Windows pods wait 45 minutes, not the default."""
    from components.platform.k8s import WINDOWS_ROLLOUT_MINUTES, runs_on_windows
    windows_daemonsets = [r for r in hk_two_builds.by_type("kubernetes:apps/v1:DaemonSet")
                          if runs_on_windows({"kind": "DaemonSet", **r.inputs})]
    assert {r.inputs["metadata"]["name"] for r in windows_daemonsets} >= {
        "kube-proxy-windows", "fluent-bit-windows-win2019", "fluent-bit-windows-win2022"}
    for daemonset in windows_daemonsets:
        assert daemonset.custom_timeouts == {"create": f"{WINDOWS_ROLLOUT_MINUTES}m",
                                             "update": f"{WINDOWS_ROLLOUT_MINUTES}m"}, daemonset.name
    linux = [r for r in hk_two_builds.by_type("kubernetes:apps/v1:DaemonSet") if r not in windows_daemonsets]
    assert all(r.custom_timeouts == {} for r in linux)
    releases = {chart_name(r): r for r in hk_two_builds.by_type("kubernetes:helm.sh/v3:Release")}
    for chart in ("kube-prometheus-stack", "csi-driver-smb"):
        assert releases[chart].inputs["timeout"] == WINDOWS_ROLLOUT_MINUTES * 60, chart
    assert "timeout" not in releases["longhorn"].inputs


def test_every_workload_the_program_declares_passes_every_gatekeeper_template(hk_two_builds):
    from render import policy
    from tests.gatekeeper_eval import evaluate

    objects = kubernetes_objects(hk_two_builds)
    runtime_classes = [obj for obj in objects if obj["kind"] == "RuntimeClass"]
    workloads = [obj for obj in objects if obj["kind"] in WORKLOAD_KINDS]
    # The two samples and the three Windows DaemonSets of our own (kube-proxy, Fluent Bit per build).
    assert len(workloads) >= 5
    for template in policy.templates():
        for obj in workloads:
            violations = evaluate(template, obj, runtime_classes, namespace=obj["metadata"].get("namespace"))
            assert violations == [], (template["metadata"]["name"], obj["metadata"]["name"], violations)


def test_constraints_wait_for_their_templates_and_follow_config(hk):
    for kind in ("K8sRequiredNodeSelector", "K8sWindowsToleration", "K8sWindowsImageBuild"):
        constraint = next(r for r in hk.resources if r.inputs.get("kind") == kind)
        template = hk.named(f"hk-prod-policy-constrainttemplate-{kind.lower()}")
        assert template.urn in constraint.dependencies
        assert template.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == "jsonpath={.status.created}=true"
        assert constraint.inputs["spec"]["enforcementAction"] == "deny"
        assert constraint.inputs["spec"]["match"]["namespaces"] == ["win-prod", "linux-prod"]


def test_calico_crds_are_plain_objects_no_helm_release_owns_and_deletion_keeps(hk):
    # Calico 3.33's CRD chart makes a Helm release Secret over the 1 MiB Secret limit; Chart v4 renders it
    # client-side into plain objects the provider applies (no release), each kept when removed from the
    # program: deleting a CRD deletes every Calico object of its kind.
    releases = {r.inputs["chart"] for r in hk.by_type("kubernetes:helm.sh/v3:Release")}
    assert "projectcalico.org.v3" not in releases
    [crds] = [r for r in hk.by_type("kubernetes:helm.sh/v4:Chart") if r.inputs["chart"] == "projectcalico.org.v3"]
    assert crds.inputs["version"] == "v3.33.0"
    assert crds.parent == hk.named("hk-prod-network").urn
    settings = [r for r in hk.resources if r.type.startswith("kubernetes:crd.projectcalico.org")
                or r.type.startswith("kubernetes:projectcalico.org")]
    assert settings and all(crds.urn in r.dependencies for r in settings)
    operator = next(r for r in hk.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "tigera-operator")
    assert crds.urn in operator.dependencies


def test_gateway_api_crds_are_the_standard_channel_applied_like_calicos_and_the_chart_brings_none(hk):
    """Helm never upgrades a chart's crds/ folder, and gateway-helm's own carries the experimental channel:
    the CRDs come from gateway-crds-helm (standard channel), rendered locally and kept on delete."""
    [crds] = [r for r in hk.by_type("kubernetes:helm.sh/v4:Chart") if r.inputs["chart"].endswith("/gateway-crds-helm")]
    assert crds.inputs["chart"] == "oci://docker.io/envoyproxy/gateway-crds-helm" and crds.inputs["version"] == "v1.9.3"
    assert crds.inputs["values"] == {"crds": {"gatewayAPI": {"enabled": True, "channel": "standard"},
                                              "envoyGateway": {"enabled": True}}}
    release = hk.named("hk-prod-samples-envoy-gateway")
    assert release.inputs["values"]["crds"] == {"enabled": False} and crds.urn in release.dependencies


def test_envoy_gateway_is_refused_on_a_kubernetes_minor_its_matrix_does_not_list():
    from tests.conftest import problems
    values = hk_prod_values()
    values["cluster"]["kubernetesVersion"] = "1.37.1"
    assert any("Envoy Gateway v1.9.3, supports Kubernetes 1.33, 1.34, 1.35, 1.36, not 1.37" in p for p in problems(values))
    del values["workloads"]
    assert not any("Envoy Gateway" in p for p in problems(values))


def test_the_crd_chart_transform_retains_every_object_it_renders():
    from components.platform.k8s import retain_on_delete
    args = pulumi.ResourceTransformArgs(custom=True, type_="kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
                                        name="ippools.projectcalico.org", props={"spec": {}},
                                        opts=pulumi.ResourceOptions(protect=False))
    result = retain_on_delete(args)
    assert result.opts.retain_on_delete is True and result.props == {"spec": {}}


def test_samples_start_only_once_a_dry_run_of_their_pods_passes_the_synced_policy(hk):
    by_urn = hk.by_urn()
    (probe,) = [r for r in hk.by_type("command:remote:Command") if r.name.endswith("-samples-admission-probe")]
    waits = {by_urn[u].name for u in hk.waits_for(probe.urn) if u in by_urn}
    assert "hk-prod-policy-config-gatekeeper-system-config" in waits          # RuntimeClasses synced
    assert any(name.startswith("hk-prod-policy-k8s") for name in waits)         # the constraints
    assert "hk-prod-scheduling-runtimeclass-win2022" in waits
    for deployment in hk.by_type("kubernetes:apps/v1:Deployment"):
        if deployment.inputs["metadata"]["name"] in ("api-win", "api-linux"):
            assert probe.urn in deployment.dependencies, deployment.name
    # Read-only: it creates nothing, so there is nothing to delete.
    assert "delete" not in probe.inputs


def test_the_samples_are_routed_by_an_envoy_gateway_gateway_declared_after_its_chart(hk):
    by_urn = hk.by_urn()
    release = hk.named("hk-prod-samples-envoy-gateway")
    assert release.inputs["chart"] == "oci://docker.io/envoyproxy/gateway-helm" and "repositoryOpts" not in release.inputs
    kinds = {r.inputs.get("kind"): r for r in hk.resources if r.type.startswith(("kubernetes:gateway.networking.k8s.io",
                                                                                  "kubernetes:gateway.envoyproxy.io"))}
    assert {"EnvoyProxy", "GatewayClass", "Gateway"} <= set(kinds)
    gateway = kinds["Gateway"]
    assert release.urn in hk.waits_for(gateway.urn)
    routes = [r for r in hk.resources if r.inputs.get("kind") == "HTTPRoute"]
    # The samples' routes in their namespaces; with tls, the HTTP-to-HTTPS redirect in the Gateway's.
    assert {r.inputs["metadata"]["namespace"] for r in routes} == {"win-prod", "linux-prod", "envoy-gateway-system"}
    for route in routes:
        assert gateway.urn in route.dependencies
        if route.inputs["metadata"]["namespace"] == "envoy-gateway-system":
            # The redirect: on the HTTP listener, no backend, a 301 to https.
            (rule,) = route.inputs["spec"]["rules"]
            assert rule["filters"] == [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}]
            assert route.inputs["spec"]["parentRefs"][0]["sectionName"] == "http"
            continue
        assert route.inputs["spec"]["parentRefs"][0]["sectionName"] == "https"
        backends = {by_urn[u].inputs["metadata"]["name"] for u in route.dependencies
                    if u in by_urn and by_urn[u].inputs.get("kind") == "Service"}
        assert backends, route.name
    assert not [r for r in hk.resources if r.inputs.get("kind") == "Ingress"]
