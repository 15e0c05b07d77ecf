"""Type and object metadata checks of custom resources (``apiextensions-apiserver/.../objectmeta``).

Two places carry resource metadata in a custom resource:

* the root object: its ``metadata.name`` must be a DNS subdomain (``NameIsDNSSubdomain``);
  labels, annotations and the rest of ObjectMeta are the generic object machinery's business;
* every ``x-kubernetes-embedded-resource`` value: ``apiVersion`` and ``kind`` are required
  strings (kind a mixed-case DNS-1035 label), and ``metadata`` must decode as ObjectMeta and pass
  ObjectMeta validation with path-segment names (a missing name is fine there).
"""

from __future__ import annotations

from typing import Any

from apimachinery import gofmt
from apimachinery.errors import Cause
from apimachinery.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    validate_annotations,
    validate_labels,
)
from apiserver.crdschema.node import Node

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def validate_root_name(obj: dict[str, Any]) -> list[Cause]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return []
    return [gofmt.invalid("metadata.name", name, msg) for msg in is_dns1123_subdomain(name)]


def _parse_group_version_error(api_version: str) -> str | None:
    if api_version.count("/") > 1:
        return f"unexpected GroupVersion string: {api_version}"
    return None


def _metadata_type_error(meta: Any) -> str | None:
    """The error of decoding ``meta`` into metav1.ObjectMeta, as Go's encoding/json words it."""
    if not isinstance(meta, dict):
        kind = ("string" if isinstance(meta, str) else "bool" if isinstance(meta, bool)
                else "number" if isinstance(meta, (int, float)) else "array")
        return f"json: cannot unmarshal {kind} into Go value of type v1.ObjectMeta"
    # Imported here: the definitions are large and only needed for embedded resources.
    from apiserver.definitions import load_definitions
    from apiserver.fieldvalidation import type_errors

    defs = load_definitions()
    schema = defs.get(_OBJECT_META)
    if schema is None:
        return None
    problems = type_errors(meta, schema, defs, "ObjectMeta")
    return problems[0] if problems else None


def _validate_embedded_meta(path: str, meta: dict[str, Any]) -> list[Cause]:
    """ValidateObjectMeta for an embedded resource: path-segment names, namespace, labels, annotations."""
    causes: list[Cause] = []
    name = meta.get("name") or "fakename"  # upstream sets a name to avoid "name is required"
    if isinstance(name, str):
        causes.extend(gofmt.invalid(f"{path}.name", name, m) for m in is_path_segment_name(name))
    generate = meta.get("generateName")
    if isinstance(generate, str) and generate:
        causes.extend(gofmt.invalid(f"{path}.generateName", generate, m) for m in is_path_segment_name(generate))
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        causes.extend(gofmt.invalid(f"{path}.namespace", namespace, m) for m in is_dns1123_label(namespace))
    causes.extend(validate_labels(meta.get("labels"), f"{path}.labels"))
    causes.extend(validate_annotations(meta.get("annotations"), f"{path}.annotations"))
    return causes


def _validate_embedded(path: str, x: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if "apiVersion" not in x:
        causes.append(gofmt.required(gofmt.child(path, "apiVersion")))
    if "kind" not in x:
        causes.append(gofmt.required(gofmt.child(path, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            field = gofmt.child(path, "apiVersion")
            if not isinstance(v, str):
                causes.append(gofmt.invalid(field, v, "must be a string"))
            elif not v:
                causes.append(gofmt.invalid(field, v, "must not be empty"))
            elif (err := _parse_group_version_error(v)) is not None:
                causes.append(gofmt.invalid(field, v, err))
        elif k == "kind":
            field = gofmt.child(path, "kind")
            if not isinstance(v, str):
                causes.append(gofmt.invalid(field, v, "must be a string"))
            elif not v:
                causes.append(gofmt.invalid(field, v, "must not be empty"))
            elif errs := is_dns1035_label(v.lower()):
                causes.append(gofmt.invalid(field, v, "may have mixed case, but should otherwise match: "
                                            + ",".join(errs)))
        elif k == "metadata":
            field = gofmt.child(path, "metadata")
            if v is None:
                continue
            err = _metadata_type_error(v)
            if err is not None:
                causes.append(gofmt.invalid(field, v, err))
            else:
                causes.extend(_validate_embedded_meta(field, v))
    return causes


def validate_embedded(path: str, x: Any, s: Node | None, resource_root: bool = False) -> list[Cause]:
    """Checks of every embedded resource inside ``x``; ``resource_root`` treats ``x`` itself as one."""
    if s is None:
        return []
    causes: list[Cause] = []
    if isinstance(x, dict):
        if s.embedded or resource_root:
            causes.extend(_validate_embedded(path, x))
        for k, v in x.items():
            sub = s.props.get(k)
            if sub is not None:
                causes.extend(validate_embedded(gofmt.child(path, k), v, sub))
            elif s.has_additional:
                causes.extend(validate_embedded(gofmt.key(path, k) if path else f"[{k}]", v, s.additional))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            causes.extend(validate_embedded(gofmt.index(path, i), v, s.items))
    return causes


def coerce_error(path: str, x: Any, s: Node | None, resource_root: bool = False) -> Cause | None:
    """The first error of objectmeta.Coerce: embedded apiVersion/kind that are not strings, bad metadata."""
    if s is None:
        return None
    if isinstance(x, dict):
        for k, v in x.items():
            if s.embedded or resource_root:
                if k in ("apiVersion", "kind") and not isinstance(v, str):
                    return gofmt.invalid(gofmt.child(path, k), v, "must be a string")
                if k == "metadata" and v is not None:
                    err = _metadata_type_error(v)
                    if err is not None:
                        return gofmt.invalid(gofmt.child(path, "metadata"), v, err)
            sub = s.props.get(k)
            if sub is not None:
                found = coerce_error(gofmt.child(path, k), v, sub)
            elif s.has_additional:
                found = coerce_error(gofmt.key(path, k) if path else f"[{k}]", v, s.additional)
            else:
                found = None
            if found is not None:
                return found
    elif isinstance(x, list):
        for i, v in enumerate(x):
            found = coerce_error(gofmt.index(path, i), v, s.items)
            if found is not None:
                return found
    return None
