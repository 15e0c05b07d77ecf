"""A CRD version's ``openAPIV3Schema`` compiled once into a tree of :class:`Node` objects.

Custom resources are pruned, defaulted and validated on every write, so the JSON schema (a
``JSONSchemaProps`` document as the CRD carries it) is turned into plain attribute access once and
cached by identity. A node holds both views upstream keeps of a schema:

* the structural one (``type``, ``properties``, ``items``, ``additionalProperties``, defaults and the
  ``x-kubernetes-*`` extensions) that pruning, defaulting and list-type checks walk;
* the kube-openapi one used for value validation, where ``x-kubernetes-int-or-string`` becomes
  ``type: [integer, string]`` and formats upstream does not support are dropped
  (``StripUnsupportedFormatsPostProcessorForVersion``).

Nodes assume a schema that passed :func:`apiserver.crdschema.validate_crd`; malformed values are
ignored rather than raised on.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from apiserver.crdschema import formats

Schema = Mapping[str, Any]


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


class Node:
    """One schema node; see the module docstring."""

    __slots__ = ("additional", "additional_allows", "all_of", "any_of", "default", "embedded", "enum",
                 "exclusive_max", "exclusive_min", "format", "has_additional", "has_default", "int_or_string",
                 "items", "list_map_keys", "list_type", "map_type", "max_items", "max_length", "max_props",
                 "maximum", "min_items", "min_length", "min_props", "minimum", "multiple_of", "not_", "nullable",
                 "one_of", "pattern", "preserve_unknown", "props", "required", "type", "types", "unique")

    def __init__(self) -> None:
        self.type = ""
        self.types: tuple[str, ...] = ()
        self.nullable = False
        self.format = ""
        self.maximum: float | None = None
        self.minimum: float | None = None
        self.exclusive_max = False
        self.exclusive_min = False
        self.max_length: int | None = None
        self.min_length: int | None = None
        self.max_items: int | None = None
        self.min_items: int | None = None
        self.max_props: int | None = None
        self.min_props: int | None = None
        self.pattern = ""
        self.unique = False
        self.multiple_of: float | None = None
        self.enum: list[Any] | None = None
        self.required: tuple[str, ...] = ()
        self.items: Node | None = None
        self.props: dict[str, Node] = {}
        # additionalProperties: absent, a bool, or a schema (which also "allows").
        self.has_additional = False
        self.additional_allows = False
        self.additional: Node | None = None
        self.all_of: tuple[Node, ...] = ()
        self.any_of: tuple[Node, ...] = ()
        self.one_of: tuple[Node, ...] = ()
        self.not_: Node | None = None
        self.has_default = False
        self.default: Any = None
        self.preserve_unknown = False
        self.embedded = False
        self.int_or_string = False
        self.list_type: str | None = None
        self.list_map_keys: tuple[str, ...] = ()
        self.map_type: str | None = None


def _stripped_format(fmt: str, types: tuple[str, ...]) -> str:
    """The format kube-openapi validates with, after upstream drops unsupported ones."""
    if not fmt:
        return ""
    kind = types[0] if len(types) == 1 else ""
    if kind in ("", "string"):
        return fmt if formats.supported_string_format(fmt) else ""
    if kind == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if kind == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


def build(schema: Schema) -> Node:
    node = Node()
    t = schema.get("type")
    node.type = t if isinstance(t, str) else ""
    node.int_or_string = schema.get("x-kubernetes-int-or-string") is True
    if node.int_or_string:
        node.types = ("integer", "string")
    elif node.type:
        node.types = (node.type,)
    node.nullable = schema.get("nullable") is True
    fmt = schema.get("format")
    node.format = _stripped_format(fmt if isinstance(fmt, str) else "", node.types)
    node.maximum = _num(schema.get("maximum"))
    node.minimum = _num(schema.get("minimum"))
    node.exclusive_max = schema.get("exclusiveMaximum") is True
    node.exclusive_min = schema.get("exclusiveMinimum") is True
    node.max_length = _int(schema.get("maxLength"))
    node.min_length = _int(schema.get("minLength"))
    node.max_items = _int(schema.get("maxItems"))
    node.min_items = _int(schema.get("minItems"))
    node.max_props = _int(schema.get("maxProperties"))
    node.min_props = _int(schema.get("minProperties"))
    pattern = schema.get("pattern")
    node.pattern = pattern if isinstance(pattern, str) else ""
    node.unique = schema.get("uniqueItems") is True
    node.multiple_of = _num(schema.get("multipleOf"))
    enum = schema.get("enum")
    node.enum = list(enum) if isinstance(enum, list) and enum else None
    required = schema.get("required")
    node.required = tuple(r for r in required if isinstance(r, str)) if isinstance(required, list) else ()
    items = schema.get("items")
    if isinstance(items, Mapping):
        node.items = build(items)
    props = schema.get("properties")
    if isinstance(props, Mapping):
        node.props = {k: build(v) for k, v in props.items() if isinstance(v, Mapping)}
    additional = schema.get("additionalProperties")
    if isinstance(additional, bool):
        node.has_additional = True
        node.additional_allows = additional
    elif isinstance(additional, Mapping):
        node.has_additional = True
        node.additional_allows = True
        node.additional = build(additional)
    for key, attr in (("allOf", "all_of"), ("anyOf", "any_of"), ("oneOf", "one_of")):
        subs = schema.get(key)
        if isinstance(subs, list):
            setattr(node, attr, tuple(build(s) for s in subs if isinstance(s, Mapping)))
    not_ = schema.get("not")
    if isinstance(not_, Mapping):
        node.not_ = build(not_)
    # A JSON null default decodes to no default at all.
    if schema.get("default") is not None:
        node.has_default = True
        node.default = schema["default"]
    node.preserve_unknown = schema.get("x-kubernetes-preserve-unknown-fields") is True
    node.embedded = schema.get("x-kubernetes-embedded-resource") is True
    list_type = schema.get("x-kubernetes-list-type")
    node.list_type = list_type if isinstance(list_type, str) else None
    keys = schema.get("x-kubernetes-list-map-keys")
    node.list_map_keys = tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
    map_type = schema.get("x-kubernetes-map-type")
    node.map_type = map_type if isinstance(map_type, str) else None
    return node


_lock = threading.Lock()
_cache: OrderedDict[int, tuple[Schema, Node]] = OrderedDict()
_CACHE_SIZE = 256


def compile_schema(schema: Schema) -> Node:
    """The node tree for ``schema``, built once per schema object (schemas are treated as immutable)."""
    key = id(schema)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is schema:
            _cache.move_to_end(key)
            return hit[1]
    node = build(schema)
    with _lock:
        _cache[key] = (schema, node)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return node


def root_node(schema: Schema | None) -> Node:
    """The root for pruning and defaulting: no schema means an empty object schema."""
    return compile_schema(schema) if schema is not None else Node()
