"""Switching customMetrics on and off on a running cluster (#39 item 8): api-linux's autoscaler is one resource,
a CPU HorizontalPodAutoscaler or a KEDA ScaledObject, and a switch deletes the old kind before it makes the new one,
in one `pulumi up`, in both directions (render/workloads.py AUTOSCALER_KIND_FIELDS says why it must)."""
from __future__ import annotations

from tests.conftest import hk_prod_values, raw_config
from tools.mock.program import run_program

HPA = "hk-prod-samples-horizontalpodautoscaler-linux-prod-api-linux"
SCALED_OBJECT = "hk-prod-samples-scaledobject-linux-prod-api-linux"


def _without_custom_metrics() -> dict:
    values = hk_prod_values()
    values.pop("customMetrics")
    return values


def _autoscaler_steps(run) -> list[tuple[str, str]]:
    return [(s.op, s.name) for s in run.plan.steps if s.name in (HPA, SCALED_OBJECT)]


def test_switching_custom_metrics_on_deletes_the_cpu_autoscaler_before_the_scaled_object_is_made():
    before = run_program(raw_config(_without_custom_metrics()))
    assert before.named(HPA).type == "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
    run = run_program(raw_config(hk_prod_values()), state=before.state)
    steps = _autoscaler_steps(run)
    # The HorizontalPodAutoscaler goes first (KEDA's webhook would refuse a ScaledObject beside it), then the
    # ScaledObject takes its place in the state: no create beside it, no delete left for the end of the run.
    assert steps == [("delete-replaced", HPA), ("replace", SCALED_OBJECT)], steps
    assert SCALED_OBJECT in {e.name for e in run.state.values()} and HPA not in {e.name for e in run.state.values()}
    # The ScaledObject is made after KEDA is up.
    scaled = run.named(SCALED_OBJECT)
    assert any(d.endswith("hk-prod-custom-metrics-keda") for d in scaled.dependencies), scaled.dependencies


def test_switching_custom_metrics_off_deletes_the_scaled_object_and_its_hpa_before_the_cpu_autoscaler_is_made():
    before = run_program(raw_config(hk_prod_values()))
    run = run_program(raw_config(_without_custom_metrics()), state=before.state)
    steps = _autoscaler_steps(run)
    # The ScaledObject (and KEDA's HPA of the same name, its dependent) goes before the HorizontalPodAutoscaler is made:
    # made first, it would fail as "already exists".
    assert steps == [("delete-replaced", SCALED_OBJECT), ("replace", HPA)], steps
    assert HPA in {e.name for e in run.state.values()} and SCALED_OBJECT not in {e.name for e in run.state.values()}


def test_the_windows_sample_s_autoscaler_is_left_alone_by_the_switch():
    before = run_program(raw_config(_without_custom_metrics()))
    run = run_program(raw_config(hk_prod_values()), state=before.state)
    assert run.plan.of("hk-prod-samples-horizontalpodautoscaler-win-prod-api-win") == ["same"]
