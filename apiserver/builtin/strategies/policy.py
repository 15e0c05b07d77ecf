"""policy/v1 PodDisruptionBudgets and autoscaling/v2 HorizontalPodAutoscalers."""

from __future__ import annotations

import copy

from apimachinery.errors import Cause
from apimachinery.names import invalid, is_path_segment_name, not_supported, required
from apimachinery.nested import dicts
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.labelselectors import validate_label_selector
from apiserver.builtin.strategies.objectfields import Obj, child, is_int, set_default, spec_of, validate_int_or_percent

_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


class PodDisruptionBudgetStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes: list[Cause] = []
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            causes.append(invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
        for key in ("minAvailable", "maxUnavailable"):
            causes += validate_int_or_percent(spec.get(key), f"spec.{key}")
        causes += validate_label_selector(spec.get("selector"), "spec.selector")
        policy = spec.get("unhealthyPodEvictionPolicy")
        if policy is not None and policy not in _EVICTION_POLICIES:
            causes.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, _EVICTION_POLICIES))
        return causes


_METRIC_SOURCES = {"ContainerResource": "containerResource", "External": "external", "Object": "object",
                   "Pods": "pods", "Resource": "resource"}
_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
             "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                          {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN = {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
               "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


class HorizontalPodAutoscalerStrategy(BuiltinStrategy):
    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"desiredReplicas": 0}

    def default(self, obj: Obj) -> None:
        spec = child(obj, "spec")
        set_default(spec, "minReplicas", 1)
        if not spec.get("metrics"):
            spec["metrics"] = [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
        behavior = spec.get("behavior")
        if isinstance(behavior, dict):
            # Only a behaviour the user asked for is completed; none at all means controller defaults.
            for key, defaults in (("scaleUp", _SCALE_UP), ("scaleDown", _SCALE_DOWN)):
                rules = child(behavior, key)
                for field, value in defaults.items():
                    set_default(rules, field, copy.deepcopy(value))

    def validate(self, obj: Obj) -> list[Cause]:
        spec = spec_of(obj)
        causes: list[Cause] = []
        minimum, maximum = spec.get("minReplicas"), spec.get("maxReplicas")
        if is_int(minimum) and minimum < 1:
            causes.append(invalid("spec.minReplicas", minimum, "must be greater than or equal to 1"))
        if not is_int(maximum) or maximum < 1:
            causes.append(invalid("spec.maxReplicas", maximum if maximum is not None else 0,
                                  "must be greater than 0"))
        elif is_int(minimum) and maximum < minimum:
            causes.append(invalid("spec.maxReplicas", maximum,
                                  "must be greater than or equal to `minReplicas`"))
        ref = spec.get("scaleTargetRef") if isinstance(spec.get("scaleTargetRef"), dict) else {}
        for key in ("kind", "name"):
            value = ref.get(key)
            if not value:
                causes.append(required(f"spec.scaleTargetRef.{key}"))
            else:
                causes += [invalid(f"spec.scaleTargetRef.{key}", value, m)
                           for m in is_path_segment_name(str(value))]
        for i, metric in enumerate(dicts(spec.get("metrics"))):
            metric_type = metric.get("type")
            source = _METRIC_SOURCES.get(str(metric_type))
            if source is None:
                causes.append(not_supported(f"spec.metrics[{i}].type", metric_type, sorted(_METRIC_SOURCES)))
            elif not isinstance(metric.get(source), dict):
                causes.append(required(f"spec.metrics[{i}].{source}",
                                       "must populate information for the given metric source"))
            else:
                causes += self._validate_target(metric[source], f"spec.metrics[{i}].{source}")
        return causes

    @staticmethod
    def _validate_target(source: Obj, path: str) -> list[Cause]:
        target = source.get("target")
        if not isinstance(target, dict):
            return [required(f"{path}.target")]
        target_type = target.get("type")
        if target_type not in ("AverageValue", "Utilization", "Value"):
            return [not_supported(f"{path}.target.type", target_type,
                                  ("AverageValue", "Utilization", "Value"))]
        utilization = target.get("averageUtilization")
        if is_int(utilization) and utilization <= 0:
            return [invalid(f"{path}.target.averageUtilization", utilization, "must be greater than 0")]
        return []
