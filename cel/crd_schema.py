"""The CEL type of a CRD schema node, with the size bounds kube's cost estimate reads.

Owns what ``apiserver/pkg/cel/common/schemas.go`` (``SchemaDeclType``) and the cardinality half of
``apiextensions-apiserver``'s CRD validation decide: each type's ``MaxElements`` (``max_size``: a
string's ``maxLength`` times 4 bytes, an enum's longest value, a list's ``maxItems`` or how many of its
smallest items fit in a request …) and ``MinSerializedSize`` (``min_json_size``), and how many times
a rule may run per object (:func:`child_cardinality`, :func:`max_cardinality`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cel.checker import escape_field
from cel.estimates import mul_u64
from cel.types import DURATION, DYN, STRING, TIMESTAMP, CelType, FieldInfo

# apiserver/pkg/apis/cel/config.go MaxRequestSizeBytes, and the limits of apiserver/pkg/cel/limits.go.
MAX_REQUEST_BYTES = 3 * 1024 * 1024
_MAX_STRING = MAX_REQUEST_BYTES - 2          # an unbounded string fills the request, less its quotes
MAX_DURATION_JSON = 32
MIN_DURATION_JSON = 3
JSON_DATE_SIZE = 12
MAX_DATETIME_JSON = 32
MIN_DATETIME_JSON = 21
MIN_STRING_JSON = 2                          # ""
MIN_BOOL_JSON = 4                            # true
MIN_NUMBER_JSON = 1                          # 0


def _bound(schema: Mapping[str, Any], key: str) -> int | None:
    value = schema.get(key)
    return max(value, 0) if isinstance(value, int) and not isinstance(value, bool) else None


def schema_type(schema: Mapping[str, Any], root: bool = False) -> CelType:
    """The CEL type kube derives from a structural schema node (``SchemaDeclType``)."""
    if schema.get("x-kubernetes-int-or-string"):
        length = _bound(schema, "maxLength")
        return CelType("dyn", max_size=length * 4 if length is not None else _MAX_STRING, min_json_size=1)
    kind = schema.get("type")
    if kind == "object" or root or schema.get("x-kubernetes-embedded-resource"):
        return _object_type(schema, root)
    if kind == "array":
        items = schema.get("items")
        elem = schema_type(items, root=bool(items.get("x-kubernetes-embedded-resource"))) \
            if isinstance(items, Mapping) else DYN
        count = _bound(schema, "maxItems")
        if count is None:
            count = _MAX_STRING // (elem.min_json_size + 1)   # smallest items, one comma each
        return CelType("list", (elem,), max_size=count, min_json_size=2)
    if kind == "string":
        return _string_type(schema)
    if kind == "integer":
        return CelType("int", min_json_size=MIN_NUMBER_JSON)
    if kind == "number":
        return CelType("double", min_json_size=MIN_NUMBER_JSON)
    if kind == "boolean":
        return CelType("bool", min_json_size=MIN_BOOL_JSON)
    return DYN


def _string_type(schema: Mapping[str, Any]) -> CelType:
    fmt = schema.get("format")
    length = _bound(schema, "maxLength")
    if fmt == "duration":
        return CelType(DURATION.kind, max_size=MAX_DURATION_JSON, min_json_size=MIN_DURATION_JSON)
    if fmt == "date":
        return CelType(TIMESTAMP.kind, max_size=JSON_DATE_SIZE, min_json_size=JSON_DATE_SIZE)
    if fmt == "date-time":
        return CelType(TIMESTAMP.kind, max_size=MAX_DATETIME_JSON, min_json_size=MIN_DATETIME_JSON)
    if fmt == "byte":
        return CelType("bytes", max_size=length if length is not None else _MAX_STRING, min_json_size=MIN_STRING_JSON)
    if length is not None:
        # maxLength counts code points, sizes are reasoned about in bytes: up to 4 per code point.
        size = length * 4
    elif schema.get("enum"):
        size = max((len(v.encode()) for v in schema["enum"] if isinstance(v, str)), default=0)
    else:
        size = _MAX_STRING
    return CelType("string", max_size=size, min_json_size=MIN_STRING_JSON)


# metadata.name's longest value (a DNS-1123 subdomain); generateName leaves at least one byte for the suffix.
_NAME_MAX_LENGTH = 253
_TYPE_META = {"type": "string"}


def _object_meta(declared: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata a resource root exposes (WithTypeAndObjectMeta): name and generateName, their length
    capped at the name limit or the schema's own shorter maxLength."""
    props = declared.get("properties") if isinstance(declared.get("properties"), Mapping) else {}

    def capped(name: str, limit: int) -> dict[str, Any]:
        prop = props.get(name) if isinstance(props.get(name), Mapping) else {}
        own = _bound(prop, "maxLength")
        return {"type": "string", "maxLength": own if own is not None and own < limit else limit}
    return {"type": "object", "properties": {"name": capped("name", _NAME_MAX_LENGTH),
                                             "generateName": capped("generateName", _NAME_MAX_LENGTH - 1)}}


def _object_type(schema: Mapping[str, Any], root: bool) -> CelType:
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    additional = schema.get("additionalProperties")
    if not props and isinstance(additional, Mapping) and not root:
        value = schema_type(additional, root=bool(additional.get("x-kubernetes-embedded-resource")))
        count = _bound(schema, "maxProperties")
        if count is None:
            count = _MAX_STRING // (value.min_json_size + 6)   # "": plus a comma around the smallest value
        return CelType("map", (STRING, value), max_size=count, min_json_size=2)
    if not props and schema.get("x-kubernetes-preserve-unknown-fields") and not root:
        return DYN
    required = set(schema.get("required") or ())
    fields: dict[str, FieldInfo] = {}
    min_size = 2   # {}
    for name, sub in props.items():
        if not isinstance(sub, Mapping):
            continue
        sub_type = schema_type(sub)
        escaped = escape_field(name)
        if escaped is not None:
            fields[escaped] = FieldInfo(name, sub_type)
        # Required properties without a default are always serialized: "name": value,
        if name in required and "default" not in sub:
            min_size += len(name) + sub_type.min_json_size + 4
    if root or schema.get("x-kubernetes-embedded-resource"):
        fields["apiVersion"] = FieldInfo("apiVersion", schema_type(_TYPE_META))
        fields["kind"] = FieldInfo("kind", schema_type(_TYPE_META))
        meta = props.get("metadata") if isinstance(props.get("metadata"), Mapping) else {}
        fields["metadata"] = FieldInfo("metadata", schema_type(_object_meta(meta)))
    by_json = {info.name: info.type for info in fields.values()}
    # Objects have no MaxElements of their own upstream (0): they are never iterated or sized.
    return CelType("object", fields=fields, open=bool(schema.get("x-kubernetes-preserve-unknown-fields")),
                   max_size=0, min_json_size=min_size, extra={"by_json": by_json})


# --- how many times a rule may run ----------------------------------------------------------------


def _max_elements(schema: Mapping[str, Any]) -> int | None:
    """How many children one instance of ``schema`` may have per child schema (None: unbounded)."""
    kind = schema.get("type")
    if kind == "object" and schema.get("additionalProperties") is not None:
        return _bound(schema, "maxProperties")
    if kind == "array":
        return _bound(schema, "maxItems")
    return 1


def child_cardinality(parent: Mapping[str, Any], cardinality: int | None) -> int | None:
    """The parent's cardinality times its maxItems/maxProperties; unbounded once any ancestor is."""
    if cardinality is None:
        return None
    factor = _max_elements(parent)
    return None if factor is None else mul_u64(cardinality, factor)


def max_cardinality(self_type: CelType) -> int:
    """How many values of this type fit in one request, one comma apart (compilation's MaxCardinality)."""
    return MAX_REQUEST_BYTES // (self_type.min_json_size + 1)


__all__ = ["MAX_REQUEST_BYTES", "child_cardinality", "max_cardinality", "schema_type"]
