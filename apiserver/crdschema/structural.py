"""Structural schema rules for CRD schemas (``apiextensions-apiserver/pkg/apiserver/schema``).

A CRD schema must be *structural*: every field has a ``type`` (unless it is int-or-string or
preserves unknown fields), logic junctors (``allOf``, ``anyOf``, ``oneOf``, ``not``) only hold
value validations about fields specified outside them, and ``metadata`` can only restrict
``name`` and ``generateName``. These functions work on the raw ``JSONSchemaProps`` JSON and
report errors with upstream's paths and wording, sorted as ``ValidateStructural`` sorts them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery import gofmt
from apimachinery.errors import Cause
from apiserver.crdschema import regex

Schema = Mapping[str, Any]

ROOT, ITEM, FIELD = range(3)

_TYPE_REQUIRED = {ROOT: "must not be empty at the root", ITEM: "must not be empty for specified array items",
                  FIELD: "must not be empty for specified object fields"}


# --- accessors on raw JSONSchemaProps ----------------------------------------------------------


def stype(s: Schema) -> str:
    t = s.get("type")
    return t if isinstance(t, str) else ""


def sstr(s: Schema, key: str) -> str:
    v = s.get(key)
    return v if isinstance(v, str) else ""


def strue(s: Schema, key: str) -> bool:
    return s.get(key) is True


def items_schema(s: Schema) -> Schema | None:
    items = s.get("items")
    return items if isinstance(items, Mapping) else None


def props(s: Schema) -> dict[str, Schema]:
    p = s.get("properties")
    if not isinstance(p, Mapping):
        return {}
    return {k: v for k, v in p.items() if isinstance(v, Mapping)}


def schema_list(s: Schema, key: str) -> list[Schema]:
    v = s.get(key)
    return [x for x in v if isinstance(x, Mapping)] if isinstance(v, list) else []


def nonempty(s: Schema, key: str) -> bool:
    """A slice or map field that Go would see as non-empty."""
    v = s.get(key)
    return isinstance(v, (list, Mapping)) and len(v) > 0


def present(s: Schema, key: str) -> bool:
    return s.get(key) is not None


def child(path: str, *names: str) -> str:
    return gofmt.child(path, *names)


def prop_path(path: str, name: str) -> str:
    return f"{child(path, 'properties')}[{name}]"


# --- NewStructural -------------------------------------------------------------------------------


def _unsupported(s: Schema) -> str | None:
    if sstr(s, "id"):
        return "OpenAPIV3Schema 'id' is not supported"
    if sstr(s, "$schema"):
        return "OpenAPIV3Schema 'schema' is not supported"
    if sstr(s, "$ref"):
        return "OpenAPIV3Schema '$ref' is not supported"
    if nonempty(s, "patternProperties"):
        return "OpenAPIV3Schema 'patternProperties' is not supported"
    if nonempty(s, "dependencies"):
        return "OpenAPIV3Schema 'dependencies' is not supported"
    if present(s, "additionalItems"):
        return "OpenAPIV3Schema 'additionalItems' is not supported"
    if nonempty(s, "definitions"):
        return "OpenAPIV3Schema 'definitions' is not supported"
    return None


def _value_validation_error(s: Schema) -> str | None:
    not_ = s.get("not")
    if isinstance(not_, Mapping) and (err := _nested_error(not_)):
        return err
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema_list(s, key):
            if err := _nested_error(sub):
                return err
    return None


def _extensions_error(s: Schema) -> str | None:
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    return None


def _children_error(s: Schema, recurse: Any) -> str | None:
    items = s.get("items")
    if isinstance(items, list):
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    if isinstance(items, Mapping) and (err := recurse(items)):
        return err
    for sub in props(s).values():
        if err := recurse(sub):
            return err
    additional = s.get("additionalProperties")
    if isinstance(additional, Mapping):
        return recurse(additional)
    return None


def _nested_error(s: Schema) -> str | None:
    return (_unsupported(s) or _value_validation_error(s) or _extensions_error(s)
            or _children_error(s, _nested_error))


def new_structural_error(s: Schema) -> str | None:
    """The error NewStructural returns for this schema, if any."""
    return (_unsupported(s) or _value_validation_error(s) or _extensions_error(s)
            or _children_error(s, new_structural_error))


# --- ValidateStructural --------------------------------------------------------------------------


def _is_int_or_string_any_of(any_of: Any) -> bool:
    """anyOf is exactly [{type: integer}, {type: string}] (the x-kubernetes-int-or-string idiom)."""
    if not isinstance(any_of, list) or len(any_of) != 2:
        return False
    for entry, want in zip(any_of, ("integer", "string"), strict=True):
        if not isinstance(entry, Mapping):
            return False
        keys = {k for k, v in entry.items() if v is not None}
        if keys != {"type"} or entry["type"] != want:
            return False
    return True


def _check_value_validation(s: Schema, skip_any_of: bool, skip_first_all_of_any_of: bool, lvl: int, path: str,
                            out: list[Cause]) -> None:
    if not skip_any_of:
        for i, sub in enumerate(schema_list(s, "anyOf")):
            _check_nested(sub, False, False, lvl, gofmt.index(child(path, "anyOf"), i), out)
    for i, sub in enumerate(schema_list(s, "allOf")):
        _check_nested(sub, skip_first_all_of_any_of and i == 0, False, lvl, gofmt.index(child(path, "allOf"), i), out)
    for i, sub in enumerate(schema_list(s, "oneOf")):
        _check_nested(sub, False, False, lvl, gofmt.index(child(path, "oneOf"), i), out)
    not_ = s.get("not")
    if isinstance(not_, Mapping):
        _check_nested(not_, False, False, lvl, child(path, "not"), out)
    pattern = sstr(s, "pattern")
    if pattern and (err := regex.check(pattern)):
        out.append(gofmt.invalid(child(path, "pattern"), pattern,
                                 f"must be a valid regular expression, but isn't: {err}"))


def _check_nested(s: Schema, skip_any_of: bool, skip_all_of_any_of: bool, lvl: int, path: str,
                  out: list[Cause]) -> None:
    _check_value_validation(s, skip_any_of, skip_all_of_any_of, lvl, path, out)
    items = items_schema(s)
    if items is not None:
        _check_nested(items, False, False, lvl, child(path, "items"), out)
    properties = props(s)
    for k, sub in properties.items():
        _check_nested(sub, False, False, FIELD, prop_path(path, k), out)
    if stype(s):
        out.append(gofmt.forbidden(child(path, "type"), "must be empty to be structural"))
    additional = s.get("additionalProperties")
    # In a nested context additionalProperties: false converts to nothing at all.
    if isinstance(additional, Mapping) or additional is True:
        out.append(gofmt.forbidden(child(path, "additionalProperties"), "must be undefined to be structural"))
    if present(s, "default"):
        out.append(gofmt.forbidden(child(path, "default"), "must be undefined to be structural"))
    if sstr(s, "title"):
        out.append(gofmt.forbidden(child(path, "title"), "must be empty to be structural"))
    if sstr(s, "description"):
        out.append(gofmt.forbidden(child(path, "description"), "must be empty to be structural"))
    if strue(s, "nullable"):
        out.append(gofmt.forbidden(child(path, "nullable"), "must be false to be structural"))
    for ext in ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
                "x-kubernetes-int-or-string"):
        if strue(s, ext):
            out.append(gofmt.forbidden(child(path, ext), "must be false to be structural"))
    if nonempty(s, "x-kubernetes-list-map-keys"):
        out.append(gofmt.forbidden(child(path, "x-kubernetes-list-map-keys"), "must be empty to be structural"))
    for ext in ("x-kubernetes-list-type", "x-kubernetes-map-type"):
        if present(s, ext):
            out.append(gofmt.forbidden(child(path, ext), "must be undefined to be structural"))
    if nonempty(s, "x-kubernetes-validations"):
        out.append(gofmt.forbidden(child(path, "x-kubernetes-validations"), "must be empty to be structural"))
    if "metadata" in properties:
        out.append(gofmt.forbidden(prop_path(path, "metadata"), "must not be specified in a nested context"))


# Root metadata may only restrict name and generateName; anything else is "implicitly specified".
_METADATA_NONZERO = {
    "description": sstr, "title": sstr, "format": sstr, "pattern": sstr,
    "nullable": strue, "exclusiveMaximum": strue, "exclusiveMinimum": strue, "uniqueItems": strue,
    "x-kubernetes-preserve-unknown-fields": strue, "x-kubernetes-embedded-resource": strue,
    "x-kubernetes-int-or-string": strue,
    "externalDocs": present, "example": present, "items": present, "additionalProperties": present,
    "maximum": present, "minimum": present, "maxLength": present, "minLength": present, "maxItems": present,
    "minItems": present, "multipleOf": present, "maxProperties": present, "minProperties": present,
    "required": present, "not": present, "x-kubernetes-list-map-keys": present, "x-kubernetes-list-type": present,
    "x-kubernetes-map-type": present, "x-kubernetes-validations": present,
    "enum": nonempty, "allOf": nonempty, "anyOf": nonempty, "oneOf": nonempty,
}


def _check_metadata(m: Schema, check_metadata: bool, lvl: int, path: str, out: list[Cause]) -> None:
    if check_metadata and stype(m) != "object":
        out.append(gofmt.invalid(child(path, "type"), stype(m), "must be object"))
    if lvl != ROOT:
        return
    mprops = props(m)
    name, generate = "name" in mprops, "generateName" in mprops
    only_names = (name and generate and len(mprops) == 2) or ((name or generate) and len(mprops) == 1)
    extra = any(check(m, key) for key, check in _METADATA_NONZERO.items()) or (bool(mprops) and not only_names)
    if extra:
        out.append(gofmt.forbidden(path, "must not specify anything other than name and generateName, but "
                                         "metadata is implicitly specified"))


def _check_invariants(s: Schema, lvl: int, path: str, out: list[Cause]) -> None:
    t = stype(s)
    if t == "array" and items_schema(s) is None:
        out.append(gofmt.required(child(path, "items"), "must be specified"))
    items = items_schema(s)
    if items is not None:
        _check_invariants(items, ITEM, child(path, "items"), out)
    properties = props(s)
    for k, sub in properties.items():
        _check_invariants(sub, FIELD, prop_path(path, k), out)
    additional = s.get("additionalProperties")
    if additional is not None:
        if lvl == ROOT:
            out.append(gofmt.forbidden(child(path, "additionalProperties"), "must not be used at the root"))
        if isinstance(additional, Mapping):
            _check_invariants(additional, FIELD, child(path, "additionalProperties"), out)
    int_or_string = strue(s, "x-kubernetes-int-or-string")
    preserve = strue(s, "x-kubernetes-preserve-unknown-fields")
    embedded = strue(s, "x-kubernetes-embedded-resource")
    if int_or_string and preserve:
        out.append(gofmt.invalid(child(path, "x-kubernetes-preserve-unknown-fields"), True,
                                 "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        out.append(gofmt.invalid(child(path, "x-kubernetes-embedded-resource"), True,
                                 "must be false if x-kubernetes-int-or-string is true"))
    all_of = schema_list(s, "allOf")
    skip_any_of = _is_int_or_string_any_of(s.get("anyOf"))
    skip_first = bool(all_of) and _is_int_or_string_any_of(all_of[0].get("anyOf"))
    _check_value_validation(s, skip_any_of, skip_first, lvl, path, out)

    check_metadata = lvl == ROOT or embedded
    if embedded and t != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        if not t:
            out.append(gofmt.required(child(path, "type"), detail))
        else:
            out.append(gofmt.invalid(child(path, "type"), t, detail))
    elif not t and not int_or_string and not preserve:
        out.append(gofmt.required(child(path, "type"), _TYPE_REQUIRED[lvl]))
    if embedded and additional is not None:
        out.append(gofmt.forbidden(child(path, "additionalProperties"),
                                   "must not be used if x-kubernetes-embedded-resource is set"))
    if lvl == ROOT and t and t != "object":
        out.append(gofmt.invalid(child(path, "type"), t, "must be object at the root"))
    for meta_field in ("kind", "apiVersion"):
        sub = properties.get(meta_field)
        if sub is not None and check_metadata and stype(sub) != "string":
            out.append(gofmt.invalid(child(prop_path(path, meta_field), "type"), stype(sub), "must be string"))
    if "metadata" in properties:
        _check_metadata(properties["metadata"], check_metadata, lvl, prop_path(path, "metadata"), out)
    if embedded and not preserve and not properties:
        out.append(gofmt.required(child(path, "properties"), "must not be empty if x-kubernetes-embedded-resource is "
                                                             "true without x-kubernetes-preserve-unknown-fields"))


# --- completeness: value validations only about structurally specified fields -------------------


def _complete_value_validation(v: Schema, s: Schema | None, spath: str, vpath: str, out: list[Cause]) -> None:
    if s is None:
        out.append(gofmt.required(spath, f"because it is defined in {vpath}"))
        return
    not_ = v.get("not")
    if isinstance(not_, Mapping):
        _complete_nested(not_, s, spath, child(vpath, "not"), out)
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema_list(v, key)):
            _complete_nested(sub, s, spath, gofmt.index(child(vpath, key), i), out)


def _complete_nested(v: Schema, s: Schema | None, spath: str, vpath: str, out: list[Cause]) -> None:
    if s is None:
        out.append(gofmt.required(spath, f"because it is defined in {vpath}"))
        return
    _complete_value_validation(v, s, spath, vpath, out)
    items = items_schema(v)
    if items is not None:
        _complete_nested(items, items_schema(s), child(spath, "items"), child(vpath, "items"), out)
    sprops = props(s)
    for k, sub in props(v).items():
        if k not in sprops:
            out.append(gofmt.required(prop_path(spath, k), f"because it is defined in {prop_path(vpath, k)}"))
        else:
            _complete_nested(sub, sprops[k], prop_path(spath, k), prop_path(vpath, k), out)


def validate_structural(path: str, s: Schema) -> list[Cause]:
    """ValidateStructural: structural invariants and completeness, sorted like upstream."""
    out: list[Cause] = []
    _check_invariants(s, ROOT, path, out)
    _complete_value_validation(s, s, path, path, out)
    return sorted(out, key=gofmt.render)
