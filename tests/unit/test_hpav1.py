"""autoscaling/v1 HorizontalPodAutoscalers from the v2 storage: kube's conversion (pkg/apis/autoscaling/v1)."""

from __future__ import annotations

import copy
import json
from typing import Any

from apiserver.builtin.hpav1 import (
    BEHAVIOR,
    CONDITIONS,
    CURRENT_METRICS,
    METRICS,
    HorizontalPodAutoscalerV1Strategy,
    to_v1,
    to_v2,
)
from apiserver.builtin.kinds import builtin_types
from apiserver.resourcetypes import served, stored

REF = {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}
CPU_80 = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}


def v2_hpa(*metrics: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "shop"}},
            "spec": {"scaleTargetRef": REF, "minReplicas": 2, "maxReplicas": 5, "metrics": list(metrics), **spec},
            "status": {"desiredReplicas": 3, "currentReplicas": 3}}


def annotation(obj: dict[str, Any], key: str) -> Any:
    return json.loads(obj["metadata"]["annotations"][key])


def test_the_cpu_utilization_target_is_v1s_field_and_nothing_else_is_annotated() -> None:
    v1 = to_v1(v2_hpa(CPU_80))
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": REF, "minReplicas": 2, "maxReplicas": 5,
                          "targetCPUUtilizationPercentage": 80}
    assert v1["status"] == {"currentReplicas": 3, "desiredReplicas": 3}
    assert v1["metadata"]["annotations"] == {"team": "shop"}
    assert to_v2(v1) == v2_hpa(CPU_80)


def test_v1_without_a_target_gets_the_implicit_80_percent_cpu() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": REF, "maxReplicas": 4}}
    v2 = to_v2(v1)
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"] == {"scaleTargetRef": REF, "maxReplicas": 4, "metrics": [CPU_80]}
    assert v2["status"] == {"desiredReplicas": 0}
    assert "annotations" not in v2["metadata"]


def test_other_metrics_statuses_behavior_and_conditions_round_trip_through_annotations() -> None:
    memory = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                            "averageValue": "512Mi"}}}
    pods = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue",
                                                                         "averageValue": "10"}}}
    external = {"type": "External", "external": {
        "metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}},
        "target": {"type": "Value", "value": "30"}}}
    obj = {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "site",
                                                            "apiVersion": "networking.k8s.io/v1"},
                                        "target": {"type": "Value", "value": "2k"}, "metric": {"name": "rps"}}}
    container = {"type": "ContainerResource", "containerResource": {
        "name": "cpu", "container": "app", "target": {"type": "Utilization", "averageUtilization": 60}}}
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Min",
                              "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}]}}
    hpa = v2_hpa(memory, CPU_80, pods, external, obj, container, behavior=behavior)
    hpa["status"]["currentMetrics"] = [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 55,
                                                                    "averageValue": "110m"}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "7"}}},
        {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}},
                                          "current": {"value": "12"}}},
        {"type": "Object", "object": {"metric": {"name": "rps"}, "current": {"value": "1500"},
                                      "describedObject": obj["object"]["describedObject"]}},
        {"type": "ContainerResource", "containerResource": {
            "name": "cpu", "container": "app", "current": {"averageUtilization": 40, "averageValue": "80m"}}}]
    hpa["status"]["conditions"] = [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
                                    "lastTransitionTime": "2026-11-28T09:00:00Z"}]
    v1 = to_v1(hpa)
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 80
    assert v1["status"]["currentCPUUtilizationPercentage"] == 55
    # kube's v1 (formerly v2beta1) metric shapes, in its annotations.
    assert annotation(v1, METRICS) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "512Mi"}},
        {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}},
        {"type": "External", "external": {"metricName": "queue", "metricSelector": {"matchLabels": {"q": "jobs"}},
                                          "targetValue": "30"}},
        {"type": "Object", "object": {"target": {"kind": "Ingress", "name": "site",
                                                 "apiVersion": "networking.k8s.io/v1"},
                                      "metricName": "rps", "targetValue": "2k"}},
        {"type": "ContainerResource", "containerResource": {"name": "cpu", "targetAverageUtilization": 60,
                                                            "container": "app"}}]
    assert annotation(v1, CURRENT_METRICS) == [
        {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 55,
                                          "currentAverageValue": "110m"}},
        {"type": "Pods", "pods": {"metricName": "qps", "currentAverageValue": "7"}},
        {"type": "External", "external": {"metricName": "queue", "metricSelector": {"matchLabels": {"q": "jobs"}},
                                          "currentValue": "12"}},
        {"type": "Object", "object": {"target": obj["object"]["describedObject"], "metricName": "rps",
                                      "currentValue": "1500"}},
        {"type": "ContainerResource", "containerResource": {"name": "cpu", "currentAverageUtilization": 40,
                                                            "currentAverageValue": "80m", "container": "app"}}]
    # The internal Go type, marshalled without json tags.
    assert annotation(v1, BEHAVIOR) == {"ScaleUp": None, "ScaleDown": {
        "StabilizationWindowSeconds": 60, "SelectPolicy": "Min",
        "Policies": [{"Type": "Pods", "Value": 1, "PeriodSeconds": 30}], "Tolerance": None}}
    assert annotation(v1, CONDITIONS) == hpa["status"]["conditions"]

    back = to_v2(v1)
    # The CPU target v1 holds as a field comes after the annotated metrics, as upstream orders them.
    assert back["spec"]["metrics"] == [memory, pods, external, obj, container, CPU_80]
    assert back["spec"]["behavior"] == behavior
    assert back["status"]["currentMetrics"] == hpa["status"]["currentMetrics"]
    assert back["status"]["conditions"] == hpa["status"]["conditions"]
    assert back["metadata"]["annotations"] == {"team": "shop"}


def test_stale_round_trip_annotations_are_replaced_and_undecodable_ones_ignored() -> None:
    stale = v2_hpa(CPU_80)
    stale["metadata"]["annotations"][METRICS] = "[]"
    assert METRICS not in to_v1(stale)["metadata"]["annotations"]
    v1 = to_v1(v2_hpa(CPU_80))
    v1["metadata"]["annotations"].update({METRICS: "not json", BEHAVIOR: "{}", CONDITIONS: "{\"a\": 1}"})
    v2 = to_v2(v1)
    assert v2["spec"]["metrics"] == [CPU_80] and "behavior" not in v2["spec"]
    assert "conditions" not in v2["status"]
    assert v2["metadata"]["annotations"] == {"team": "shop"}
    # JSON that Go's json.Unmarshal refuses for the annotation's type is ignored as a whole, as upstream does.
    v1["metadata"]["annotations"].update({
        METRICS: json.dumps([{"type": "Pods", "pods": {"metricName": 3, "targetAverageValue": "1"}}]),
        CURRENT_METRICS: json.dumps([{"type": "Resource", "resource": {"name": "cpu", "currentAverageValue": "x"}}]),
        BEHAVIOR: json.dumps({"ScaleUp": {"Policies": [{"Type": "Pods", "Value": "4", "PeriodSeconds": 15}]}}),
        CONDITIONS: json.dumps([{"type": "AbleToScale", "status": "True", "lastTransitionTime": "yesterday"}])})
    v1["status"]["currentCPUUtilizationPercentage"] = 30
    v2 = to_v2(v1)
    assert v2["spec"]["metrics"] == [CPU_80] and "behavior" not in v2["spec"]
    assert v2["status"]["currentMetrics"] == [{"type": "Resource", "resource": {"name": "cpu", "current": {
        "averageUtilization": 30}}}]
    assert "conditions" not in v2["status"]


def test_behavior_annotation_is_read_ignoring_case_as_encoding_json_does() -> None:
    v1 = to_v1(v2_hpa(CPU_80))
    v1["metadata"]["annotations"][BEHAVIOR] = json.dumps(
        {"scaleup": {"selectPolicy": "Disabled"}, "ScaleDown": {"policies": [{"type": "Percent", "value": 10}]}})
    assert to_v2(v1)["spec"]["behavior"] == {
        "scaleUp": {"selectPolicy": "Disabled"},
        "scaleDown": {"policies": [{"type": "Percent", "value": 10, "periodSeconds": 0}]}}


def test_v1_is_served_from_the_v2_storage_after_v2() -> None:
    types = [t for t in builtin_types() if t.group == "autoscaling"]
    assert [t.version for t in types] == ["v2", "v1"]
    v2_type, v1_type = types
    assert v1_type.storage_resource == v2_type.group_resource
    hpa = v2_hpa(CPU_80)
    assert json.loads(stored(v1_type, served(v1_type, copy.deepcopy(hpa)))) == hpa


def test_v1_writes_are_defaulted_and_validated_as_v2() -> None:
    strategy = HorizontalPodAutoscalerV1Strategy()
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": REF, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70}}
    strategy.prepare_for_create(v1)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 4,
                          "targetCPUUtilizationPercentage": 70}
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    assert strategy.validate(v1) == []
    bad = copy.deepcopy(v1)
    bad["spec"].update(minReplicas=5, scaleTargetRef={"kind": "Deployment"})
    assert {c.field for c in strategy.validate_update(bad, v1)} == {"spec.maxReplicas", "spec.scaleTargetRef.name"}


def test_the_strategy_keeps_the_objects_metadata_dict() -> None:
    v1 = to_v1(v2_hpa(CPU_80))
    meta = v1["metadata"]
    HorizontalPodAutoscalerV1Strategy().prepare_for_update(v1, to_v1(v2_hpa(CPU_80)))
    assert v1["metadata"] is meta


def test_v1_tables_show_v2s_columns_of_the_same_hpa() -> None:
    v2_type, v1_type = [t for t in builtin_types() if t.group == "autoscaling"]
    memory = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization",
                                                                            "averageUtilization": 70}}}
    hpa = v2_hpa(memory, CPU_80)
    assert [c.name for c in v1_type.columns] == [c.name for c in v2_type.columns]
    assert [c.cell(to_v1(hpa)) for c in v1_type.columns] == [c.cell(hpa) for c in v2_type.columns]
