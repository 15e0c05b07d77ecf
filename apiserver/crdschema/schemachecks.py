"""Per-node checks of CRD schemas (``ValidateCustomResourceDefinitionOpenAPISchema`` and friends).

These run over every node of a version's ``openAPIV3Schema`` independently of the structural
rules: unsupported JSON-Schema keywords (``$ref``, ``patternProperties`` ...), ``uniqueItems``,
``additionalProperties`` next to ``properties``, defaults where they are not allowed (top-level
``metadata``, ``apiVersion``, ``kind``), ``x-kubernetes-list-type``/``-list-map-keys``/
``-map-type`` consistency, and the static parts of ``x-kubernetes-validations`` (the CEL
compilation itself is cel's business).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from apimachinery import gofmt
from apimachinery.errors import Cause
from apiserver.crdschema import internaljson
from apiserver.crdschema.structural import (
    Schema,
    child,
    items_schema,
    new_structural_error,
    nonempty,
    present,
    prop_path,
    props,
    schema_list,
    sstr,
    strue,
    stype,
)

OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_META_FIELDS = frozenset({"metadata", "kind", "apiVersion"})
_SUPPORTED_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_NEWLINES = re.compile(r"[\n\r]+")


@dataclasses.dataclass(frozen=True)
class Options:
    """The validation options that depend on what an update's old object already had."""

    require_valid_property_type: bool = True
    require_structural_schema: bool = True
    require_pruned_defaults: bool = True
    require_atomic_set_type: bool = True
    require_map_list_keys_map_set_validation: bool = True


@dataclasses.dataclass(frozen=True)
class _Ssv:
    """specStandardValidatorV3: what is allowed at the node being checked."""

    allow_defaults: bool = True
    disallow_defaults_reason: str = ""
    inside_resource_meta: bool = False
    require_valid_property_type: bool = True

    def forbid_defaults(self, reason: str) -> _Ssv:
        return dataclasses.replace(self, allow_defaults=False, disallow_defaults_reason=reason)


def _ssv_validate(s: Schema, path: str, ssv: _Ssv, out: list[Cause]) -> None:
    t = stype(s)
    if ssv.require_valid_property_type and t and t not in OPENAPI_TYPES:
        out.append(gofmt.not_supported(child(path, "type"), t, OPENAPI_TYPES))
    if present(s, "default") and not ssv.allow_defaults:
        detail = "must not be set"
        if ssv.disallow_defaults_reason:
            detail += " " + ssv.disallow_defaults_reason
        out.append(gofmt.forbidden(child(path, "default"), detail))
    if sstr(s, "id"):
        out.append(gofmt.forbidden(child(path, "id"), "id is not supported"))
    if present(s, "additionalItems"):
        out.append(gofmt.forbidden(child(path, "additionalItems"), "additionalItems is not supported"))
    if nonempty(s, "patternProperties"):
        out.append(gofmt.forbidden(child(path, "patternProperties"), "patternProperties is not supported"))
    if nonempty(s, "definitions"):
        out.append(gofmt.forbidden(child(path, "definitions"), "definitions is not supported"))
    if present(s, "dependencies"):
        out.append(gofmt.forbidden(child(path, "dependencies"), "dependencies is not supported"))
    if present(s, "$ref"):
        out.append(gofmt.forbidden(child(path, "$ref"), "$ref is not supported"))
    if t == "null":
        out.append(gofmt.forbidden(child(path, "type"), "type cannot be set to null, use nullable as an alternative"))
    items = s.get("items")
    if isinstance(items, list) and items:
        out.append(gofmt.forbidden(child(path, "items"), "items must be a schema object and not an array"))
    if ssv.inside_resource_meta and strue(s, "x-kubernetes-embedded-resource"):
        out.append(gofmt.forbidden(child(path, "x-kubernetes-embedded-resource"),
                                   "must not be used inside of resource meta"))


def _type_problem(path: str, t: str, detail: str) -> Cause:
    return gofmt.required(child(path, "type"), detail) if not t else gofmt.invalid(child(path, "type"), t, detail)


def _check_list_types(s: Schema, path: str, opts: Options, out: list[Cause]) -> None:
    t = stype(s)
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        out.append(gofmt.invalid(child(path, "x-kubernetes-preserve-unknown-fields"), False,
                                 "must be true or undefined"))
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and t != "object":
        out.append(_type_problem(path, t, "must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        out.append(gofmt.not_supported(child(path, "x-kubernetes-map-type"), map_type, ("atomic", "granular")))
    list_type = s.get("x-kubernetes-list-type")
    items = items_schema(s)
    if list_type is not None and t != "array":
        out.append(_type_problem(path, t, "must be array if x-kubernetes-list-type is specified"))
    elif opts.require_atomic_set_type and list_type == "set" and items is not None:
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        item_list_type = items.get("x-kubernetes-list-type")
        if stype(items) == "array":
            if item_list_type is not None and item_list_type != "atomic":
                out.append(gofmt.invalid(child(path, "items", "x-kubernetes-list-type"),
                                         gofmt.GoJSON(item_list_type), detail))
        elif stype(items) == "object" and items.get("x-kubernetes-map-type") != "atomic":
            # Upstream reports the items' list type here, not their map type.
            out.append(gofmt.invalid(child(path, "items", "x-kubernetes-map-type"), gofmt.GoJSON(item_list_type),
                                     detail))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        out.append(gofmt.not_supported(child(path, "x-kubernetes-list-type"), list_type, ("atomic", "set", "map")))
    keys_raw = s.get("x-kubernetes-list-map-keys")
    keys = [k for k in keys_raw if isinstance(k, str)] if isinstance(keys_raw, list) else []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            out.append(gofmt.required(child(path, "x-kubernetes-list-type"), detail))
        elif list_type != "map":
            out.append(gofmt.invalid(child(path, "x-kubernetes-list-type"), list_type, detail))
    if list_type == "map":
        if not keys:
            out.append(gofmt.required(child(path, "x-kubernetes-list-map-keys"),
                                      "must not be empty if x-kubernetes-list-type is map"))
        raw_items = s.get("items")
        if raw_items is None:
            out.append(gofmt.required(child(path, "items"), "must have a schema if x-kubernetes-list-type is map"))
        elif isinstance(raw_items, list):
            out.append(gofmt.invalid(child(path, "items"), gofmt.GoJSON(raw=internaljson.items_json(raw_items)),
                                     "must only have a single schema if x-kubernetes-list-type is map"))
        elif items is not None and stype(items) != "object":
            out.append(gofmt.invalid(child(path, "items", "type"), stype(items),
                                     "must be object if parent array's x-kubernetes-list-type is map"))
        elif items is not None:
            item_props = props(items)
            seen: set[str] = set()
            for k in keys:
                if k in item_props:
                    if stype(item_props[k]) in ("array", "object"):
                        out.append(gofmt.invalid(child(prop_path(child(path, "items"), k), "type"), stype(items),
                                                 "must be a scalar type if parent array's x-kubernetes-list-type "
                                                 "is map"))
                else:
                    out.append(gofmt.invalid(child(path, "x-kubernetes-list-map-keys"), gofmt.GoJSON(keys),
                                             "entries must all be names of item properties"))
                if k in seen:
                    out.append(gofmt.invalid(child(path, "x-kubernetes-list-map-keys"), gofmt.GoJSON(keys),
                                             "must not contain duplicate entries"))
                seen.add(k)
    if opts.require_map_list_keys_map_set_validation:
        out.extend(map_list_keys_problems(s, path))


def map_list_keys_problems(s: Schema, path: str) -> list[Cause]:
    """validateMapListKeysMapSet: set/map items and map keys must not be nullable; keys required or defaulted."""
    items = items_schema(s)
    list_type = s.get("x-kubernetes-list-type")
    if items is None or list_type not in ("set", "map"):
        return []
    out = []
    if strue(items, "nullable"):
        out.append(gofmt.forbidden(child(path, "items", "nullable"),
                                   f"cannot be nullable when x-kubernetes-list-type is {list_type}"))
    if list_type == "map":
        required = items.get("required")
        required_set = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
        item_props = props(items)
        keys = s.get("x-kubernetes-list-map-keys")
        for k in keys if isinstance(keys, list) else []:
            prop = item_props.get(k) if isinstance(k, str) else None
            if prop is None:
                continue
            where = prop_path(child(path, "items"), k)
            if k not in required_set and not present(prop, "default"):
                out.append(gofmt.required(child(where, "default"),
                                          "this property is in x-kubernetes-list-map-keys, so it must have a default "
                                          "or be a required property"))
            if strue(prop, "nullable"):
                out.append(gofmt.forbidden(child(where, "nullable"),
                                           "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
    return out


def _check_validation_rules(s: Schema, path: str, out: list[Cause]) -> None:
    rules = s.get("x-kubernetes-validations")
    if not isinstance(rules, list):
        return
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping):
            continue
        where = gofmt.index(child(path, "x-kubernetes-validations"), i)
        text = sstr(rule, "rule")
        message = sstr(rule, "message")
        trimmed_rule, trimmed_msg = text.strip(), message.strip()
        if not trimmed_rule:
            out.append(gofmt.required(child(where, "rule"), "rule is not specified"))
        elif message and not trimmed_msg:
            out.append(gofmt.invalid(child(where, "message"), message, "must be non-empty if specified"))
        elif _NEWLINES.search(trimmed_msg):
            out.append(gofmt.invalid(child(where, "message"), message, "must not contain line breaks"))
        elif _NEWLINES.search(trimmed_rule) and not trimmed_msg:
            out.append(gofmt.required(child(where, "message"),
                                      "message must be specified if rule contains line breaks"))
        expr = sstr(rule, "messageExpression")
        if expr and not expr.strip():
            out.append(gofmt.required(child(where, "messageExpression"),
                                      "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in _SUPPORTED_REASONS:
            out.append(gofmt.not_supported(child(where, "reason"), reason, _SUPPORTED_REASONS))
        field_path = sstr(rule, "fieldPath")
        if field_path and not field_path.strip():
            out.append(gofmt.invalid(child(where, "fieldPath"), field_path, "must be non-empty if specified"))
        if _NEWLINES.search(field_path):
            out.append(gofmt.invalid(child(where, "fieldPath"), field_path, "must not contain line breaks"))
        if field_path and new_structural_error(s) is None and isinstance(valid_field_path(field_path, s), str):
            out.append(gofmt.invalid(child(where, "fieldPath"), field_path, "must be a valid path"))


def check_schema(s: Schema, path: str, ssv: _Ssv, is_root: bool, opts: Options, out: list[Cause]) -> None:
    """ValidateCustomResourceDefinitionOpenAPISchema (without CEL compilation)."""
    _ssv_validate(s, path, ssv, out)
    if strue(s, "uniqueItems"):
        out.append(gofmt.forbidden(child(path, "uniqueItems"),
                                   "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    additional = s.get("additionalProperties")
    if additional is not None:
        if nonempty(s, "properties") and (additional is False or isinstance(additional, Mapping)):
            out.append(gofmt.forbidden(child(path, "additionalProperties"),
                                       "additionalProperties and properties are mutual exclusive"))
        sub_ssv = ssv
        if ssv.inside_resource_meta:
            # Pruning without an actual value is ambiguous for maps inside metadata.
            sub_ssv = ssv.forbid_defaults("inside additionalProperties applying to object metadata")
        if isinstance(additional, Mapping):
            check_schema(additional, child(path, "additionalProperties"), sub_ssv, False, opts, out)
    embedded = strue(s, "x-kubernetes-embedded-resource")
    for k, sub in props(s).items():
        sub_ssv = ssv
        if (is_root or embedded) and k in _META_FIELDS:
            sub_ssv = dataclasses.replace(sub_ssv, inside_resource_meta=True)
            if is_root:
                sub_ssv = sub_ssv.forbid_defaults(f"in top-level {k}")
        check_schema(sub, prop_path(path, k), sub_ssv, False, opts, out)
    not_ = s.get("not")
    if isinstance(not_, Mapping):
        check_schema(not_, child(path, "not"), ssv, False, opts, out)
    for key in ("allOf", "oneOf", "anyOf"):
        for i, sub in enumerate(schema_list(s, key)):
            check_schema(sub, gofmt.index(child(path, key), i), ssv, False, opts, out)
    definitions = s.get("definitions")
    if isinstance(definitions, Mapping):
        for k, sub in definitions.items():
            if isinstance(sub, Mapping):
                check_schema(sub, gofmt.key(child(path, "definitions"), k), ssv, False, opts, out)
    items = s.get("items")
    if isinstance(items, Mapping):
        check_schema(items, child(path, "items"), ssv, False, opts, out)
    elif isinstance(items, list):
        for i, sub in enumerate(items):
            if isinstance(sub, Mapping):
                check_schema(sub, gofmt.index(child(path, "items"), i), ssv, False, opts, out)
    dependencies = s.get("dependencies")
    if isinstance(dependencies, Mapping):
        for k, sub in dependencies.items():
            if isinstance(sub, Mapping):
                check_schema(sub, gofmt.key(child(path, "dependencies"), k), ssv, False, opts, out)
    _check_list_types(s, path, opts, out)
    _check_validation_rules(s, path, out)


def root_validator(opts: Options) -> _Ssv:
    return _Ssv(require_valid_property_type=opts.require_valid_property_type)


# --- JSON field paths into a structural schema (cel.ValidFieldPath) ------------------------------

_UNESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


def _tokens(path: str) -> list[str]:
    out = []
    i = 0
    while i < len(path):
        if path[i] == "'":
            j = i + 1
            while j < len(path) and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            out.append(path[i:j + 1])
            i = j + 1
        elif path[i] in ".[]":
            out.append(path[i])
            i += 1
        else:
            j = i
            while j < len(path) and path[j] not in ".[]":
                j += 1
            out.append(path[i:j])
            i = j
    return out


def _unescape(text: str) -> str | None:
    out = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            rep = _UNESCAPES.get(text[i + 1])
            if rep is None:
                return None
            out.append(rep)
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def valid_field_path(json_path: str, schema: Schema, *, allow_array_notation: bool = True
                     ) -> tuple[list[tuple[str, bool]], Schema | None] | str:
    """Resolve ``.spec.foo['bar']`` in a schema: (segments as (name, is_property), schema) or an error."""
    segments: list[tuple[str, bool]] = []
    current: Schema | None = schema
    tokens = _tokens(json_path)
    i = 0

    def step(name: str) -> str | None:
        nonlocal current
        if current is None:
            return "does not refer to a valid field"
        if props(current):
            segments.append((name, True))
            current = props(current).get(name)
            return None if current is not None else "does not refer to a valid field"
        additional = current.get("additionalProperties")
        if additional is not None:
            segments.append((name, False))
            current = additional if isinstance(additional, Mapping) else None
            return None
        return "does not refer to a valid field"

    while i < len(tokens):
        tok = tokens[i]
        if tok == "[":
            if not allow_array_notation:
                return "array notation is not allowed"
            if i + 1 >= len(tokens):
                return "unexpected end of JSON path"
            i += 1
            tok = tokens[i]
            if len(tok) < 2 or tok[0] != "'" or tok[-1] != "'":
                return f"expected single quoted string but got {tok}"
            name = _unescape(tok[1:-1])
            if name is None:
                return "invalid string literal: invalid escape char"
            if (err := step(name)) is not None:
                return err
            if i + 1 >= len(tokens):
                return "unexpected end of JSON path"
            i += 1
            if tokens[i] != "]":
                return f"expected ] but got {tokens[i]}"
        elif tok == ".":
            if i + 1 >= len(tokens):
                return "unexpected end of JSON path"
            i += 1
            if (err := step(tokens[i])) is not None:
                return err
        else:
            return f"expected [ or . but got: {tok}"
        i += 1
    return segments, current


def field_path_string(segments: list[tuple[str, bool]]) -> str:
    out = ""
    for name, named in segments:
        out = gofmt.child(out, name) if named else f"{out}[{name}]"
    return out


def root_fields_problem(schema: Schema, path: str) -> Cause | None:
    """With the status subresource, the root may only use fields that survive extracting ``status``."""
    for key, name in _ROOT_FIELDS:
        value = schema.get(key)
        if value is None or value is False or value == "":
            continue
        if name == "Type":
            if value != "object":
                return gofmt.invalid(child(path, "type"), value, 'only "object" is allowed as the type at the root '
                                                                 "of the schema if the status subresource is enabled")
            continue
        if name not in _ALLOWED_AT_ROOT:
            return gofmt.invalid(path, gofmt.GoJSON(raw=internaljson.schema_json(schema)),
                                 f"only [{' '.join(_ALLOWED_AT_ROOT)}] fields are allowed at the root of the schema "
                                 "if the status subresource is enabled")
    return None


_ROOT_FIELDS = (
    ("id", "ID"), ("$schema", "Schema"), ("$ref", "Ref"), ("description", "Description"), ("type", "Type"),
    ("nullable", "Nullable"), ("format", "Format"), ("title", "Title"), ("default", "Default"),
    ("maximum", "Maximum"), ("exclusiveMaximum", "ExclusiveMaximum"), ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"), ("maxLength", "MaxLength"), ("minLength", "MinLength"),
    ("pattern", "Pattern"), ("maxItems", "MaxItems"), ("minItems", "MinItems"), ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"), ("enum", "Enum"), ("maxProperties", "MaxProperties"),
    ("minProperties", "MinProperties"), ("required", "Required"), ("items", "Items"), ("allOf", "AllOf"),
    ("oneOf", "OneOf"), ("anyOf", "AnyOf"), ("not", "Not"), ("properties", "Properties"),
    ("additionalProperties", "AdditionalProperties"), ("patternProperties", "PatternProperties"),
    ("dependencies", "Dependencies"), ("additionalItems", "AdditionalItems"), ("definitions", "Definitions"),
    ("externalDocs", "ExternalDocs"), ("example", "Example"),
    ("x-kubernetes-preserve-unknown-fields", "XPreserveUnknownFields"),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource"), ("x-kubernetes-int-or-string", "XIntOrString"),
    ("x-kubernetes-list-map-keys", "XListMapKeys"), ("x-kubernetes-list-type", "XListType"),
    ("x-kubernetes-map-type", "XMapType"), ("x-kubernetes-validations", "XValidations"),
)
_ALLOWED_AT_ROOT = ("Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
                    "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems", "UniqueItems",
                    "MultipleOf", "Required", "Items", "Properties", "ExternalDocs", "Example",
                    "XPreserveUnknownFields", "XValidations")


def schema_has(s: Any, pred: Any) -> bool:
    """SchemaHas: whether ``pred`` holds for any node reachable from ``s``."""
    if not isinstance(s, Mapping):
        return False
    if pred(s):
        return True
    items = s.get("items")
    if isinstance(items, Mapping) and schema_has(items, pred):
        return True
    if isinstance(items, list) and any(schema_has(i, pred) for i in items):
        return True
    for key in ("allOf", "anyOf", "oneOf"):
        if any(schema_has(i, pred) for i in schema_list(s, key)):
            return True
    if schema_has(s.get("not"), pred):
        return True
    for key in ("properties", "additionalProperties", "patternProperties", "additionalItems", "definitions",
                "dependencies"):
        sub = s.get(key)
        if key in ("additionalProperties", "additionalItems"):
            if schema_has(sub, pred):
                return True
        elif isinstance(sub, Mapping) and any(schema_has(v, pred) for v in sub.values()):
            return True
    return False


def has_invalid_types(s: Any) -> bool:
    return schema_has(s, lambda n: bool(stype(n)) and stype(n) not in OPENAPI_TYPES)


def has_non_atomic_set_type(s: Any) -> bool:
    def pred(n: Schema) -> bool:
        items = items_schema(n)
        if n.get("x-kubernetes-list-type") != "set" or items is None:
            return False
        if stype(items) == "array":
            lt = items.get("x-kubernetes-list-type")
            return lt is not None and lt != "atomic"
        if stype(items) == "object":
            return items.get("x-kubernetes-map-type") != "atomic"
        return False
    return schema_has(s, pred)


def has_invalid_map_list_keys(s: Any) -> bool:
    return schema_has(s, lambda n: bool(map_list_keys_problems(n, "")))


def has_defaults(s: Any) -> bool:
    return schema_has(s, lambda n: present(n, "default"))


def has_kubernetes_extensions(s: Any) -> bool:
    def pred(n: Schema) -> bool:
        return (strue(n, "x-kubernetes-embedded-resource") or present(n, "x-kubernetes-preserve-unknown-fields")
                or strue(n, "x-kubernetes-int-or-string") or nonempty(n, "x-kubernetes-list-map-keys")
                or present(n, "x-kubernetes-list-type") or nonempty(n, "x-kubernetes-validations"))
    return schema_has(s, pred)
