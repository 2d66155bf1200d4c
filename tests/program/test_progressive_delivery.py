"""Blue-green releases (config `progressiveDelivery`, render/progressive_delivery.py): the samples' Rollouts, preview
Services and preview routes strictly against their schemas, the autoscalers following the Rollouts, the namespace
quotas holding both versions at a promotion, and the order the program declares them in."""
from __future__ import annotations

import copy

import kubernetes_validate

from render import progressive_delivery
from render.scheduling import namespace
from render.workloads import SampleAutoscaling, api_linux, api_win, autoscalers, http_routes, peak_footprint
from tests.crd_schema import validate_custom_resource
from tests.render.test_workloads import K8S, NAMESPACES, PARAMS, deployments
from vocab.namespaces import parse_quantity

ROLLOUT_SCHEMA = "argoproj.io_v1alpha1_Rollout.json"


def _rollouts() -> list[dict]:
    return [progressive_delivery.blue_green_rollout(d, auto_promotion=False, scale_down_delay_seconds=30)
            for d in deployments()]


def test_each_sample_is_taken_over_by_a_blue_green_rollout():
    for deployment, rollout in zip(deployments(), _rollouts(), strict=True):
        validate_custom_resource(rollout, ROLLOUT_SCHEMA)
        name = deployment["metadata"]["name"]
        spec = rollout["spec"]
        assert rollout["metadata"]["namespace"] == deployment["metadata"]["namespace"]
        assert spec["workloadRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                       "scaleDown": "progressively"}
        assert "template" not in spec and "selector" not in spec   # both come from the Deployment (workloadRef)
        assert spec["replicas"] == deployment["spec"]["replicas"]
        blue_green = spec["strategy"]["blueGreen"]
        assert blue_green == {"activeService": name, "previewService": f"{name}-preview", "autoPromotionEnabled": False,
                              "previewReplicaCount": 1, "scaleDownDelaySeconds": 30}
        # A Windows image's first pull is slow: the Rollout waits as long as the Deployment does.
        assert spec.get("progressDeadlineSeconds") == deployment["spec"].get("progressDeadlineSeconds")


def test_the_preview_service_is_the_service_under_another_name():
    services = [o for o in [*api_win(PARAMS), *api_linux(PARAMS)] if o["kind"] == "Service"]
    assert len(services) == 2
    for service in services:
        preview = progressive_delivery.preview_service(service)
        kubernetes_validate.validate(preview, K8S, strict=True)
        assert preview["metadata"]["name"] == service["metadata"]["name"] + "-preview"
        assert preview["spec"] == service["spec"]


def test_preview_routes_reach_the_preview_services_on_the_samples_paths():
    routes = {r["metadata"]["name"]: r for r in http_routes(PARAMS, preview=True)}
    assert set(routes) == {"api-win", "api-linux", "api-win-preview", "api-linux-preview"}
    for name in ("api-win-preview", "api-linux-preview"):
        validate_custom_resource(routes[name], "gateway.networking.k8s.io_v1_HTTPRoute.json")
    win, linux = routes["api-win-preview"]["spec"]["rules"][0], routes["api-linux-preview"]["spec"]["rules"][0]
    assert win["matches"][0]["path"]["value"] == "/preview/win" and win["backendRefs"][0]["name"] == "api-win-preview"
    assert win["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] == "/"
    # The Spring app serves under /linux: the preview prefix is replaced by it.
    assert linux["matches"][0]["path"]["value"] == "/preview/linux"
    assert linux["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] == "/linux"
    # Without progressive delivery there is no preview route.
    assert [r["metadata"]["name"] for r in http_routes(PARAMS)] == ["api-win", "api-linux"]


def test_autoscalers_scale_the_rollouts():
    from render.custom_metrics import prometheus_address
    from render.workloads import RequestRate
    scaling = SampleAutoscaling(win_max_replicas=8, linux_max_replicas=10, cpu_utilization=70,
                                linux_request_rate=RequestRate(prometheus_address("monitoring"), 50))
    win, linux = autoscalers(PARAMS, scaling, rollout=True)
    target = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout"}
    kubernetes_validate.validate(win, K8S, strict=True)
    assert win["spec"]["scaleTargetRef"] == {**target, "name": "api-win"}
    validate_custom_resource(linux, "keda.sh_v1alpha1_ScaledObject.json")
    assert linux["spec"]["scaleTargetRef"] == {**target, "name": "api-linux"}
    # The request rate is still the live route's, not the preview's.
    assert "/api-linux/rule/" in linux["spec"]["triggers"][1]["metadata"]["query"]


def test_the_namespace_quota_holds_both_versions_at_a_promotion():
    """At promotion the new version scales to full size before the switch: twice the replicas for a moment."""
    for deployment in deployments():
        both = copy.deepcopy(deployment)
        both["spec"]["replicas"] = 2 * deployment["spec"]["replicas"]
        both["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = 0
        _, quota, _ = namespace(NAMESPACES[deployment["metadata"]["namespace"]])
        for key, used in peak_footprint(both).items():
            assert used <= parse_quantity(quota["spec"]["hard"][key]), f"{deployment['metadata']['name']}: {key}"


def test_the_controller_runs_on_linux_and_keeps_its_crds():
    values = progressive_delivery.rollouts_values()
    assert values["controller"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert values["installCRDs"] is True and values["keepCRDs"] is True


def test_hk_prod_declares_rollouts_after_the_controller_and_lets_them_and_the_autoscalers_own_replicas(hk_recording):
    hk = hk_recording
    controller = hk.named("hk-prod-progressive-delivery-argo-rollouts")
    for app, ns in (("api-win", "win-prod"), ("api-linux", "linux-prod")):
        rollout = hk.named(f"hk-prod-samples-rollout-{ns}-{app}")
        assert controller.urn in rollout.dependencies
        assert hk.named(f"hk-prod-samples-service-{ns}-{app}-preview").urn in rollout.dependencies
        assert rollout.ignore_changes == ["spec.replicas"]
        assert hk.named(f"hk-prod-samples-deployment-{ns}-{app}").ignore_changes == ["spec.replicas"]
    hpa = hk.named("hk-prod-samples-horizontalpodautoscaler-win-prod-api-win")
    assert hpa.inputs["spec"]["scaleTargetRef"]["kind"] == "Rollout"
    assert hk.named("hk-prod-samples-rollout-win-prod-api-win").urn in hpa.dependencies


def test_the_blue_green_services_selectors_are_left_to_the_controller(hk_recording):
    for ns, app in (("win-prod", "api-win"), ("linux-prod", "api-linux")):
        for name in (app, f"{app}-preview"):
            assert hk_recording.named(f"hk-prod-samples-service-{ns}-{name}").ignore_changes == ["spec.selector"]


def test_a_rollout_s_pods_spread_by_their_own_revision():
    """#39 item 8: the samples' zone spread counts each revision on its own through matchLabelKeys, but a Rollout's
    pods carry rollouts-pod-template-hash and no pod-template-hash (argo-rollouts v1.9.0 rollout/sync.go), so with
    only pod-template-hash every revision was spread as one. Each owner's revision label is a key."""
    revision_labels = {"Deployment": "pod-template-hash", "Rollout": progressive_delivery.POD_TEMPLATE_HASH_LABEL}
    for deployment in deployments():
        [constraint] = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
        for owner, label in revision_labels.items():
            assert label in constraint["matchLabelKeys"], owner
        assert not set(constraint["matchLabelKeys"]) & set(constraint["labelSelector"]["matchLabels"])
        kubernetes_validate.validate(deployment, K8S, strict=True)
