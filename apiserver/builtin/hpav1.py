"""``autoscaling/v1`` HorizontalPodAutoscalers: the stored ``autoscaling/v2`` objects in the older API's shape.

kube-apiserver serves both versions from one storage, v2 being the storage version
(``pkg/apis/autoscaling/v1/conversion.go``). v1 has one metric, ``spec.targetCPUUtilizationPercentage`` (and
``status.currentCPUUtilizationPercentage``); everything else v2 holds travels in round-trip annotations, so a v1
client that reads an HPA and writes it back loses nothing:

- ``autoscaling.alpha.kubernetes.io/metrics``: the spec metrics other than a CPU utilization target,
- ``autoscaling.alpha.kubernetes.io/current-metrics``: every status metric,
- ``autoscaling.alpha.kubernetes.io/behavior``: ``spec.behavior``, as Go marshals kube's *internal* type
  (no json tags: ``ScaleUp``, ``StabilizationWindowSeconds`` …; read back ignoring case, as ``encoding/json``),
- ``autoscaling.alpha.kubernetes.io/conditions``: ``status.conditions``.

The metrics in the annotations have v1's (formerly v2beta1's) shape: ``targetAverageUtilization``,
``metricName``… instead of v2's ``target`` and ``metric``. Annotations that do not decode are ignored, as upstream
ignores them. Writes through v1 are defaulted and validated as v2 objects (upstream validates the internal type);
a status write through v1 takes the conditions and current metrics its annotations carry.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from apimachinery.errors import Cause
from apiserver.builtin.strategies import HorizontalPodAutoscalerStrategy
from apiserver.definitions import load_definitions
from apiserver.fieldvalidation import type_errors
from apiserver.resourcetypes import Column, Conversion, Strategy

API_VERSION = "autoscaling/v1"
STORAGE_API_VERSION = "autoscaling/v2"
METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
# Not written by this conversion, but upstream's DropRoundTripHorizontalPodAutoscalerAnnotations drops them too.
_TOLERANCES = ("autoscaling.alpha.kubernetes.io/scale-down-tolerance",
               "autoscaling.alpha.kubernetes.io/scale-up-tolerance")
ROUND_TRIP = (METRICS, CURRENT_METRICS, BEHAVIOR, CONDITIONS, *_TOLERANCES)
DEFAULT_CPU_UTILIZATION = 80

Obj = dict[str, Any]


def _obj(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Obj]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _copy(out: Obj, out_key: str, src: Obj, key: str) -> None:
    """Go's pointer fields: copied when set, left out when nil."""
    if src.get(key) is not None:
        out[out_key] = src[key]


def _quantity(src: Obj, key: str) -> Any:
    """A non-pointer ``resource.Quantity`` in Go: the zero quantity marshals as "0"."""
    value = src.get(key)
    return "0" if value is None else value


def _ref(ref: Obj) -> Obj:
    out = {"kind": ref.get("kind", ""), "name": ref.get("name", "")}
    _copy(out, "apiVersion", ref, "apiVersion")
    return out


def _is_cpu_utilization(metric: Obj) -> bool:
    resource = _obj(metric.get("resource"))
    return metric.get("type") == "Resource" and resource.get("name") == "cpu" and \
        _obj(resource.get("target")).get("averageUtilization") is not None


# --- metrics: v2 <-> the v1 annotation shape --------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Side:
    """Spec metrics and status metrics convert alike: v2 holds the numbers in ``target`` (typed) or ``current``,
    v1 in fields named with that prefix (``targetAverageValue``, ``currentAverageValue`` …). Go declares some of
    the status ones as plain quantities, which are always present ("0" when unset)."""

    prefix: str
    typed: bool


_SPEC = _Side("target", typed=True)
_STATUS = _Side("current", typed=False)


def _quantity_field(out: Obj, out_key: str, src: Obj, key: str, always: bool) -> None:
    if always:
        out[out_key] = _quantity(src, key)
    else:
        _copy(out, out_key, src, key)


def _v1_metric(metric: Obj, side: _Side) -> Obj:
    p, always = side.prefix, not side.typed
    out: Obj = {"type": metric.get("type", "")}
    if isinstance(metric.get("object"), dict):
        src = metric["object"]
        values, ident = _obj(src.get(p)), _obj(src.get("metric"))
        obj: Obj = {"target": _ref(_obj(src.get("describedObject"))), "metricName": ident.get("name", ""),
                    f"{p}Value": _quantity(values, "value")}
        _copy(obj, "selector", ident, "selector")
        _copy(obj, "averageValue", values, "averageValue")
        out["object"] = obj
    if isinstance(metric.get("pods"), dict):
        src = metric["pods"]
        values, ident = _obj(src.get(p)), _obj(src.get("metric"))
        pods: Obj = {"metricName": ident.get("name", ""), f"{p}AverageValue": _quantity(values, "averageValue")}
        _copy(pods, "selector", ident, "selector")
        out["pods"] = pods
    for key in ("resource", "containerResource"):
        if isinstance(metric.get(key), dict):
            src = metric[key]
            values = _obj(src.get(p))
            res: Obj = {"name": src.get("name", "")}
            _copy(res, f"{p}AverageUtilization", values, "averageUtilization")
            _quantity_field(res, f"{p}AverageValue", values, "averageValue", always)
            if key == "containerResource":
                res["container"] = src.get("container", "")
            out[key] = res
    if isinstance(metric.get("external"), dict):
        src = metric["external"]
        values, ident = _obj(src.get(p)), _obj(src.get("metric"))
        ext: Obj = {"metricName": ident.get("name", "")}
        _copy(ext, "metricSelector", ident, "selector")
        _quantity_field(ext, f"{p}Value", values, "value", always)
        _copy(ext, f"{p}AverageValue", values, "averageValue")
        out["external"] = ext
    return out


def _identifier(src: Obj, selector_key: str) -> Obj:
    out = {"name": src.get("metricName", "")}
    _copy(out, "selector", src, selector_key)
    return out


def _typed(side: _Side, target_type: str, values: Obj) -> Obj:
    return {"type": target_type, **values} if side.typed else values


def _v2_metric(metric: Obj, side: _Side) -> Obj:
    p, always = side.prefix, not side.typed
    out: Obj = {"type": metric.get("type", "")}
    if isinstance(metric.get("object"), dict):
        src = metric["object"]
        values: Obj = {"value": _quantity(src, f"{p}Value")}
        _copy(values, "averageValue", src, "averageValue")
        out["object"] = {
            "describedObject": _ref(_obj(src.get("target"))), "metric": _identifier(src, "selector"),
            p: _typed(side, "Value" if src.get("averageValue") is None else "AverageValue", values)}
    if isinstance(metric.get("pods"), dict):
        src = metric["pods"]
        values = {"averageValue": _quantity(src, f"{p}AverageValue")}
        out["pods"] = {"metric": _identifier(src, "selector"), p: _typed(side, "AverageValue", values)}
    for key in ("resource", "containerResource"):
        if isinstance(metric.get(key), dict):
            src = metric[key]
            values = {}
            _quantity_field(values, "averageValue", src, f"{p}AverageValue", always)
            _copy(values, "averageUtilization", src, f"{p}AverageUtilization")
            utilization = src.get(f"{p}AverageUtilization") is not None
            res: Obj = {"name": src.get("name", ""),
                        p: _typed(side, "Utilization" if utilization else "AverageValue", values)}
            if key == "containerResource":
                res["container"] = src.get("container", "")
            out[key] = res
    if isinstance(metric.get("external"), dict):
        src = metric["external"]
        values = {}
        _quantity_field(values, "value", src, f"{p}Value", always)
        _copy(values, "averageValue", src, f"{p}AverageValue")
        out["external"] = {"metric": _identifier(src, "metricSelector"),
                           p: _typed(side, "AverageValue" if src.get(f"{p}Value") is None else "Value", values)}
    return out


# --- behavior: v2 <-> Go's marshalling of the internal type -----------------------------------------------

_RULE_FIELDS = (("stabilizationWindowSeconds", "StabilizationWindowSeconds"), ("selectPolicy", "SelectPolicy"),
                ("policies", "Policies"), ("tolerance", "Tolerance"))
_POLICY_FIELDS = (("type", "Type", ""), ("value", "Value", 0), ("periodSeconds", "PeriodSeconds", 0))


def _go_behavior(behavior: Obj) -> Obj:
    def rules(value: Any) -> Obj | None:
        if not isinstance(value, dict):
            return None
        out: Obj = {go: value.get(name) for name, go in _RULE_FIELDS}
        if isinstance(out["Policies"], list):
            out["Policies"] = [{go: policy.get(name, zero) for name, go, zero in _POLICY_FIELDS}
                               for policy in _list(out["Policies"])]
        return out
    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def _field(obj: Obj, go_name: str) -> Any:
    """A member as ``encoding/json`` finds it for a Go field: the exact name, else any case of it."""
    if go_name in obj:
        return obj[go_name]
    return next((v for k, v in obj.items() if k.lower() == go_name.lower()), None)


def _v2_behavior(raw: Any) -> Obj | None:
    if not isinstance(raw, dict):
        return None

    def rules(value: Any) -> Obj | None:
        if not isinstance(value, dict):
            return None
        out: Obj = {name: _field(value, go) for name, go in _RULE_FIELDS if _field(value, go) is not None}
        if isinstance(out.get("policies"), list):
            out["policies"] = [{name: _field(p, go) if _field(p, go) is not None else zero
                                for name, go, zero in _POLICY_FIELDS} for p in _list(out["policies"])]
        return out
    out = {name: r for name, go in (("scaleUp", "ScaleUp"), ("scaleDown", "ScaleDown"))
           if (r := rules(_field(raw, go))) is not None}
    return out or None  # the zero behavior is no behavior


# --- whole objects --------------------------------------------------------------------------------------

def _annotations_without_round_trip(meta: Obj) -> Obj:
    return {k: v for k, v in _obj(meta.get("annotations")).items() if k not in ROUND_TRIP}


def _with_annotations(obj: Obj, annotations: Obj) -> None:
    meta = dict(_obj(obj.get("metadata")))
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    obj["metadata"] = meta


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _decoded(annotations: Obj, key: str) -> Any:
    raw = annotations.get(key)
    if not isinstance(raw, str):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _go_decodes(value: Any, definition: str, *, many: bool = False) -> bool:
    """Whether Go's ``json.Unmarshal`` of the annotation would have succeeded: upstream ignores an annotation that
    does not decode. Its types are v1's, whose fields have the JSON types of the v2 fields they convert to, so
    the converted value is checked against v2's schema."""
    schema: dict[str, Any] = {"$ref": f"#/$defs/io.k8s.api.autoscaling.v2.{definition}"}
    if many:
        schema = {"type": "array", "items": schema}
    return not type_errors(value, schema, load_definitions(), "")


def to_v1(obj: Obj) -> Obj:
    """A stored ``autoscaling/v2`` HPA as ``autoscaling/v1`` shows it."""
    spec, status = _obj(obj.get("spec")), _obj(obj.get("status"))
    metrics, current = _list(spec.get("metrics")), _list(status.get("currentMetrics"))
    v1_spec: Obj = {"scaleTargetRef": _ref(_obj(spec.get("scaleTargetRef")))}
    _copy(v1_spec, "minReplicas", spec, "minReplicas")
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    v1_status: Obj = {}
    _copy(v1_status, "observedGeneration", status, "observedGeneration")
    _copy(v1_status, "lastScaleTime", status, "lastScaleTime")
    v1_status["currentReplicas"] = status.get("currentReplicas", 0)
    v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    for metric in current:  # upstream's loop has no break: the last CPU utilization wins
        resource = _obj(metric.get("resource"))
        if metric.get("type") == "Resource" and resource.get("name") == "cpu":
            _copy(v1_status, "currentCPUUtilizationPercentage", _obj(resource.get("current")), "averageUtilization")

    annotations = _annotations_without_round_trip(_obj(obj.get("metadata")))
    others = [_v1_metric(m, _SPEC) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS] = _json(others)
    if current:
        annotations[CURRENT_METRICS] = _json([_v1_metric(m, _STATUS) for m in current])
    if isinstance(spec.get("behavior"), dict):
        annotations[BEHAVIOR] = _json(_go_behavior(spec["behavior"]))
    conditions = _list(status.get("conditions"))
    if conditions:
        annotations[CONDITIONS] = _json(conditions)

    out = {**obj, "apiVersion": API_VERSION, "spec": v1_spec, "status": v1_status}
    _with_annotations(out, annotations)
    return out


def to_v2(obj: Obj) -> Obj:
    """An ``autoscaling/v1`` HPA as the ``autoscaling/v2`` object it is stored as."""
    spec, status = _obj(obj.get("spec")), _obj(obj.get("status"))
    annotations = _obj(_obj(obj.get("metadata")).get("annotations"))
    v2_spec: Obj = {"scaleTargetRef": _ref(_obj(spec.get("scaleTargetRef")))}
    _copy(v2_spec, "minReplicas", spec, "minReplicas")
    v2_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    metrics: list[Obj] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})
    others = _decoded(annotations, METRICS)
    others = [_v2_metric(m, _SPEC) for m in _list(others)] if isinstance(others, list) else None
    if others is not None and _go_decodes(others, "MetricSpec", many=True):
        # The CPU target v1 has a field for goes after the others, as upstream orders them.
        metrics = others + metrics
    if not metrics:  # v1's implicit default, explicit in v2
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    v2_spec["metrics"] = metrics
    behavior = _v2_behavior(_decoded(annotations, BEHAVIOR))
    if behavior is not None and _go_decodes(behavior, "HorizontalPodAutoscalerBehavior"):
        v2_spec["behavior"] = behavior

    v2_status: Obj = {}
    _copy(v2_status, "observedGeneration", status, "observedGeneration")
    _copy(v2_status, "lastScaleTime", status, "lastScaleTime")
    if status.get("currentReplicas"):  # omitempty in v2
        v2_status["currentReplicas"] = status["currentReplicas"]
    v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current = _decoded(annotations, CURRENT_METRICS)
    current = [_v2_metric(m, _STATUS) for m in _list(current)] if isinstance(current, list) else None
    if current is not None and _go_decodes(current, "MetricStatus", many=True):
        v2_status["currentMetrics"] = current  # upstream: "the ones here have more information"
    elif status.get("currentCPUUtilizationPercentage") is not None:
        v2_status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    conditions = _decoded(annotations, CONDITIONS)
    if isinstance(conditions, list) and _go_decodes(conditions, "HorizontalPodAutoscalerCondition", many=True):
        v2_status["conditions"] = _list(conditions)

    out = {**obj, "apiVersion": STORAGE_API_VERSION, "spec": v2_spec, "status": v2_status}
    _with_annotations(out, _annotations_without_round_trip(_obj(obj.get("metadata"))))
    return out


def v1_columns(columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """Upstream prints v1 HPAs with the one printer of the internal type: v2's columns, of the v2 object."""
    return tuple(dataclasses.replace(c, cell=lambda o, cell=c.cell: cell(to_v2(o))) for c in columns)


class HorizontalPodAutoscalerV1Conversion(Conversion):
    stored_as = "horizontalpodautoscalers.autoscaling"

    def to_stored(self, obj: Obj) -> Obj:
        return to_v2(obj)

    def to_served(self, obj: Obj) -> Obj:
        return to_v1(obj)

    def with_status_of(self, obj: Obj, sent: Obj) -> Obj:
        # A v1 status write sends the conditions and current metrics in annotations; as upstream converts the
        # request before its status strategy keeps only the status, they are the status written.
        stored = to_v2(obj)
        stored["status"] = to_v2(sent)["status"]
        return to_v1(stored)


def _replace(obj: Obj, new: Obj) -> None:
    """``obj`` becomes ``new``, keeping its ``metadata`` dict: the handlers hold on to it across the strategy."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and isinstance(new.get("metadata"), dict):
        meta.clear()
        meta.update(new["metadata"])
        new = {**new, "metadata": meta}
    obj.clear()
    obj.update(new)


class HorizontalPodAutoscalerV1Strategy(Strategy):
    """Writes through ``autoscaling/v1``: defaulted and validated as the v2 objects they are stored as, then shown
    in v1's shape again (the handlers store what the strategy leaves, converted back to v2)."""

    def __init__(self) -> None:
        self.v2 = HorizontalPodAutoscalerStrategy()
        self.selectable_fields = self.v2.selectable_fields
        self.name_rule = self.v2.name_rule

    def prepare_for_create(self, obj: Obj) -> None:
        v2 = to_v2(obj)
        self.v2.prepare_for_create(v2)
        _replace(obj, to_v1(v2))

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        v2 = to_v2(new)
        self.v2.prepare_for_update(v2, to_v2(old))
        _replace(new, to_v1(v2))

    def validate(self, obj: Obj) -> list[Cause]:
        return self.v2.validate(to_v2(obj))

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.v2.validate_update(to_v2(new), to_v2(old))
