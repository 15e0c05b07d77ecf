"""JSON of apiextensions' *internal* Go types, as ``field.Error`` prints them as bad values.

A few CRD validation errors pass whole internal structs as the bad value (``spec.versions`` when
the storage flags are wrong, the root schema when the status subresource restricts it, ``items``
of a list-type map). ``field.Error`` renders those with ``encoding/json``, which for the internal
types (no JSON tags) means Go field names in declaration order, every field present, ``null`` for
nil pointers and slices. This module produces that text from the v1 JSON the client sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.gofmt import json_marshal

_Obj = Mapping[str, Any]


def _s(value: Any) -> str:
    return json_marshal(value if isinstance(value, str) else "")


def _b(value: Any) -> str:
    return "true" if value is True else "false"


def _opt(value: Any) -> str:
    """A pointer field: the value, or null."""
    return "null" if value is None else json_marshal(value)


def _num(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "null"
    return json_marshal(float(value))


def _int(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "null"
    return str(int(value))


def _strings(value: Any) -> str:
    return json_marshal([v for v in value if isinstance(v, str)]) if isinstance(value, list) else "null"


def _schemas(value: Any) -> str:
    if not isinstance(value, list):
        return "null"
    return "[" + ",".join(schema_json(v) for v in value if isinstance(v, Mapping)) + "]"


def _schema_map(value: Any) -> str:
    if not isinstance(value, Mapping):
        return "null"
    return "{" + ",".join(f"{json_marshal(k)}:{schema_json(value[k])}" for k in sorted(value)
                          if isinstance(value[k], Mapping)) + "}"


def _or_bool(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f'{{"Allows":{_b(value)},"Schema":null}}'
    return f'{{"Allows":true,"Schema":{schema_json(value)}}}'


def _items(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return f'{{"Schema":null,"JSONSchemas":{_schemas(value)}}}'
    return f'{{"Schema":{schema_json(value)},"JSONSchemas":null}}'


def _dependencies(value: Any) -> str:
    if not isinstance(value, Mapping):
        return "null"
    parts = []
    for k in sorted(value):
        v = value[k]
        if isinstance(v, list):
            parts.append(f'{json_marshal(k)}:{{"Schema":null,"Property":{_strings(v)}}}')
        else:
            parts.append(f'{json_marshal(k)}:{{"Schema":{schema_json(v)},"Property":null}}')
    return "{" + ",".join(parts) + "}"


def _rules(value: Any) -> str:
    if not isinstance(value, list):
        return "null"
    out = []
    for r in value:
        if not isinstance(r, Mapping):
            continue
        out.append(f'{{"Rule":{_s(r.get("rule"))},"Message":{_s(r.get("message"))},'
                   f'"MessageExpression":{_s(r.get("messageExpression"))},"Reason":{_opt(r.get("reason"))},'
                   f'"FieldPath":{_s(r.get("fieldPath"))},"OptionalOldSelf":{_opt(r.get("optionalOldSelf"))}}}')
    return "[" + ",".join(out) + "]"


def schema_json(s: Any) -> str:
    """``json.Marshal`` of an internal ``apiextensions.JSONSchemaProps``."""
    if not isinstance(s, Mapping):
        return "null"
    docs = s.get("externalDocs")
    docs_json = "null" if not isinstance(docs, Mapping) else \
        f'{{"Description":{_s(docs.get("description"))},"URL":{_s(docs.get("url"))}}}'
    enum = s.get("enum")
    fields = [
        ("ID", _s(s.get("id"))), ("Schema", _s(s.get("$schema"))), ("Ref", _opt(s.get("$ref"))),
        ("Description", _s(s.get("description"))), ("Type", _s(s.get("type"))), ("Nullable", _b(s.get("nullable"))),
        ("Format", _s(s.get("format"))), ("Title", _s(s.get("title"))), ("Default", _opt(s.get("default"))),
        ("Maximum", _num(s.get("maximum"))), ("ExclusiveMaximum", _b(s.get("exclusiveMaximum"))),
        ("Minimum", _num(s.get("minimum"))), ("ExclusiveMinimum", _b(s.get("exclusiveMinimum"))),
        ("MaxLength", _int(s.get("maxLength"))), ("MinLength", _int(s.get("minLength"))),
        ("Pattern", _s(s.get("pattern"))), ("MaxItems", _int(s.get("maxItems"))),
        ("MinItems", _int(s.get("minItems"))), ("UniqueItems", _b(s.get("uniqueItems"))),
        ("MultipleOf", _num(s.get("multipleOf"))),
        ("Enum", json_marshal(enum) if isinstance(enum, list) else "null"),
        ("MaxProperties", _int(s.get("maxProperties"))), ("MinProperties", _int(s.get("minProperties"))),
        ("Required", _strings(s.get("required"))), ("Items", _items(s.get("items"))),
        ("AllOf", _schemas(s.get("allOf"))), ("OneOf", _schemas(s.get("oneOf"))), ("AnyOf", _schemas(s.get("anyOf"))),
        ("Not", schema_json(s.get("not"))), ("Properties", _schema_map(s.get("properties"))),
        ("AdditionalProperties", _or_bool(s.get("additionalProperties"))),
        ("PatternProperties", _schema_map(s.get("patternProperties"))),
        ("Dependencies", _dependencies(s.get("dependencies"))),
        ("AdditionalItems", _or_bool(s.get("additionalItems"))), ("Definitions", _schema_map(s.get("definitions"))),
        ("ExternalDocs", docs_json), ("Example", _opt(s.get("example"))),
        ("XPreserveUnknownFields", _opt(s.get("x-kubernetes-preserve-unknown-fields"))),
        ("XEmbeddedResource", _b(s.get("x-kubernetes-embedded-resource"))),
        ("XIntOrString", _b(s.get("x-kubernetes-int-or-string"))),
        ("XListMapKeys", _strings(s.get("x-kubernetes-list-map-keys"))),
        ("XListType", _opt(s.get("x-kubernetes-list-type"))), ("XMapType", _opt(s.get("x-kubernetes-map-type"))),
        ("XValidations", _rules(s.get("x-kubernetes-validations"))),
    ]
    return "{" + ",".join(f'"{name}":{value}' for name, value in fields) + "}"


def items_json(value: Any) -> str:
    return _items(value)


def _subresources(value: Any) -> str:
    if not isinstance(value, Mapping):
        return "null"
    status = "{}" if isinstance(value.get("status"), Mapping) else "null"
    scale = value.get("scale")
    scale_json = "null" if not isinstance(scale, Mapping) else (
        f'{{"SpecReplicasPath":{_s(scale.get("specReplicasPath"))},'
        f'"StatusReplicasPath":{_s(scale.get("statusReplicasPath"))},'
        f'"LabelSelectorPath":{_opt(scale.get("labelSelectorPath"))}}}')
    return f'{{"Status":{status},"Scale":{scale_json}}}'


def _columns(value: Any) -> str:
    if not isinstance(value, list) or not value:
        return "null"
    out = []
    for c in value:
        if isinstance(c, Mapping):
            priority = _int(c.get("priority")) if c.get("priority") is not None else "0"
            out.append(f'{{"Name":{_s(c.get("name"))},"Type":{_s(c.get("type"))},"Format":{_s(c.get("format"))},'
                       f'"Description":{_s(c.get("description"))},"Priority":{priority},'
                       f'"JSONPath":{_s(c.get("jsonPath"))}}}')
    return "[" + ",".join(out) + "]"


def _selectable(value: Any) -> str:
    if not isinstance(value, list) or not value:
        return "null"
    return "[" + ",".join(f'{{"JSONPath":{_s(f.get("jsonPath"))}}}' for f in value if isinstance(f, Mapping)) + "]"


def versions_json(versions: list[_Obj], hoisted: set[str]) -> str:
    """``json.Marshal`` of internal CustomResourceDefinitionVersions.

    ``hoisted`` names the per-version fields ("schema", "subresources", "additionalPrinterColumns",
    "selectableFields") that conversion moved to the spec because every version had the same value;
    they are nil in each version.
    """
    out = []
    for v in versions:
        schema = v.get("schema")
        schema_text = "null"
        if "schema" not in hoisted and isinstance(schema, Mapping):
            schema_text = f'{{"OpenAPIV3Schema":{schema_json(schema.get("openAPIV3Schema"))}}}'
        subresources = "null" if "subresources" in hoisted else _subresources(v.get("subresources"))
        columns = "null" if "additionalPrinterColumns" in hoisted else _columns(v.get("additionalPrinterColumns"))
        selectable = "null" if "selectableFields" in hoisted else _selectable(v.get("selectableFields"))
        out.append(f'{{"Name":{_s(v.get("name"))},"Served":{_b(v.get("served"))},"Storage":{_b(v.get("storage"))},'
                   f'"Deprecated":{_b(v.get("deprecated"))},"DeprecationWarning":{_opt(v.get("deprecationWarning"))},'
                   f'"Schema":{schema_text},"Subresources":{subresources},"AdditionalPrinterColumns":{columns},'
                   f'"SelectableFields":{selectable}}}')
    return "[" + ",".join(out) + "]"
