"""kube's HPA decision over a measured CPU load (shared by the simulator and the fleet autoscaler), the simulated
HPA's targets and the cpuLoad knob's parsing."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.controllers.autoscaling import cpu_target, recommend
from apiserver.store import Key
from sim.controllers.hpa import target_key
from sim.faults import FaultError, Faults


def hpa(metrics: list[dict[str, Any]] | None = None, low: int = 1, high: int = 10) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                            "minReplicas": low, "maxReplicas": high}
    if metrics is not None:
        spec["metrics"] = metrics
    return {"metadata": {"name": "web", "namespace": "app"}, "spec": spec}


def cpu(utilization: int) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": utilization}}}


def test_the_recommendation_is_the_load_over_the_target_within_min_and_max() -> None:
    rec = recommend(hpa([cpu(50)]), replicas=2, ready=2, load=250)
    assert (rec.replicas, rec.utilization, rec.active[1], rec.limited[1]) == (5, 125, "ValidMetricFound",
                                                                              "DesiredWithinRange")
    assert recommend(hpa([cpu(50)]), replicas=5, ready=5, load=250).replicas == 5  # stable once there
    assert recommend(hpa([cpu(50)], high=4), replicas=2, ready=2, load=250).limited[1] == "TooManyReplicas"
    low = recommend(hpa([cpu(50)], low=3), replicas=5, ready=5, load=10)
    assert (low.replicas, low.limited[1]) == (3, "TooFewReplicas")


def test_within_ten_percent_of_the_target_the_replicas_stay() -> None:
    assert recommend(hpa([cpu(50)]), replicas=4, ready=4, load=215).replicas == 4  # 53.75%: within tolerance
    assert recommend(hpa([cpu(50)]), replicas=4, ready=4, load=225).replicas == 5  # 56.25%: outside


def test_no_metrics_no_scaling() -> None:
    for rec in (recommend(hpa(), replicas=2, ready=2, load=None), recommend(hpa(), replicas=2, ready=0, load=90)):
        assert (rec.replicas, rec.utilization, rec.active[:2]) == (2, None, ("False", "FailedGetResourceMetric"))
    assert recommend(hpa(), replicas=0, ready=0, load=90).active[1] == "ScalingDisabled"
    memory = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization"}}}
    assert cpu_target(hpa([memory])) is None and recommend(hpa([memory]), 2, 2, 90).replicas == 2


def test_default_target_and_scale_target() -> None:
    assert cpu_target(hpa()) == 80 and cpu_target(hpa([cpu(30)])) == 30
    assert target_key("wec1", hpa()) == Key("wec1", "deployments.apps", "app", "web")
    job = hpa()
    job["spec"]["scaleTargetRef"] = {"apiVersion": "batch/v1", "kind": "Job", "name": "x"}
    assert target_key("wec1", job) is None


def test_cpu_load_knob() -> None:
    assert Faults.from_json({"cpuLoad": 250}).cpu_load == 250.0
    assert Faults.from_json({"cpuLoad": 250}).to_json()["cpuLoad"] == 250.0
    assert "cpuLoad" not in Faults.from_json({}).to_json()
    for bad in (-1, "high", True, float("inf")):
        with pytest.raises(FaultError, match="cpuLoad"):
            Faults.from_json({"cpuLoad": bad})
