"""Validation of a custom resource against its CRD version, in the apiserver's order.

``customResourceStrategy.Validate`` upstream runs: the type meta check (and stops there if it
fails), ``metadata.name`` as a DNS subdomain, the OpenAPI schema (kube-openapi), the scale
subresource paths, embedded resources' type and object meta, and the uniqueness of set and map
lists. CEL rules come after all of these (cel).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery import gofmt
from apimachinery.errors import Cause
from apiserver.crdschema.listtype import validate_lists
from apiserver.crdschema.node import compile_schema
from apiserver.crdschema.objectmeta import validate_embedded, validate_root_name
from apiserver.crdschema.schemavalidation import validate_value

_INT32_MAX = 2**31 - 1


def validate_object(obj: Mapping[str, Any], schema: Mapping[str, Any], kind: str, *,
                    check_name: bool = True) -> list[Cause]:
    """Causes for a custom resource of kind ``kind`` (an empty ``kind`` skips the type meta check).

    ``check_name=False`` leaves out the ``metadata.name`` check for callers that already apply
    the generic object-name rule (upstream checks the name once, on create).
    """
    if kind:
        got = obj.get("kind")
        if got != kind:
            return [gofmt.invalid("kind", got if isinstance(got, str) else "", f"must be {kind}")]
    node = compile_schema(schema)
    causes = validate_root_name(dict(obj)) if check_name else []
    causes.extend(validate_value(node, obj))
    causes.extend(validate_embedded("", obj, node))
    if isinstance(obj, dict):
        causes.extend(validate_lists("", node, obj))
    return causes


def validate_status(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[Cause]:
    """The schema check of a ``/status`` update: only ``status``, against ``properties.status``."""
    status_schema = (schema.get("properties") or {}).get("status")
    if "status" not in obj or not isinstance(status_schema, Mapping):
        return []
    return validate_value(compile_schema(status_schema), obj["status"], "status")


def _go_type(value: Any) -> str:
    """``%T`` of an unstructured value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def _go_print(value: Any) -> str:
    """``%v`` of an unstructured value (only for accessor error messages)."""
    if value is None:
        return "<nil>"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(_go_print(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_print(value[k])}" for k in sorted(value)) + "]"
    return gofmt.go_value(value)


def _nested(obj: Mapping[str, Any], path: str, want: str) -> tuple[Any, bool, str | None]:
    """unstructured.NestedInt64/NestedString for a ``.a.b`` path: (value, found, accessor error)."""
    fields = path.removeprefix(".").split(".")
    current: Any = obj
    for i, f in enumerate(fields):
        if current is None:
            return None, False, None
        if not isinstance(current, dict):
            return None, False, (f".{'.'.join(fields[:i + 1])} accessor error: {_go_print(current)} is of the type "
                                 f"{_go_type(current)}, expected map[string]interface{{}}")
        if f not in current:
            return None, False, None
        current = current[f]
    ok = isinstance(current, str) if want == "string" else (
        isinstance(current, int) and not isinstance(current, bool))
    if not ok:
        return None, True, (f".{'.'.join(fields)} accessor error: {_go_print(current)} is of the type "
                            f"{_go_type(current)}, expected {want}")
    return current, True, None


def validate_scale(obj: Mapping[str, Any], scale: Mapping[str, Any], *, spec: bool = True) -> list[Cause]:
    """ValidateScaleSpec (unless ``spec`` is False) and ValidateScaleStatus: replica counts and selector."""
    causes: list[Cause] = []
    keys = ("specReplicasPath", "statusReplicasPath") if spec else ("statusReplicasPath",)
    for key in keys:
        where = scale.get(key)
        if not isinstance(where, str) or not where:
            continue
        value, _, err = _nested(obj, where, "int64")
        value = value or 0
        if err is not None:
            causes.append(gofmt.invalid(where, value, err))
        elif value < 0:
            causes.append(gofmt.invalid(where, value, "should be a non-negative integer"))
        elif value > _INT32_MAX:
            causes.append(gofmt.invalid(where, value, f"should be less than or equal to {_INT32_MAX}"))
    selector = scale.get("labelSelectorPath")
    if isinstance(selector, str) and selector:
        _, _, err = _nested(obj, selector, "string")
        if err is not None:
            causes.append(gofmt.invalid(selector, "", err))
    return causes
