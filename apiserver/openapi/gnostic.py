"""A Swagger 2.0 document as gnostic's ``openapi_v2.Document`` protobuf message.

That is the form client-go's ``OpenAPISchema()`` asks for (``application/com.github.proto-openapi.
spec.v2@v1.0+protobuf``) and unmarshals; kubectl validates against it. Field numbers are those of
``openapiv2/OpenAPIv2.proto`` in github.com/google/gnostic-models. Only the parts of the format our
documents use are encoded — swagger, info, paths with their operations, path/query/body parameters
and responses, and schema definitions; anything else raises, so a document never loses a field
silently. Values the proto keeps as ``Any`` (vendor extensions, defaults, enums, examples) carry
their YAML text, which kubectl parses back; JSON is YAML, so they are written as JSON.

The ``protobuf`` package is not a dependency, and this encoder needs only the writer half of the
wire format the package already decodes by hand, so it is written here rather than generated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from apiserver.protobuf.writer import MessageWriter

_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}

# Schema fields by kind of value: name -> field number.
_SCHEMA_STRINGS = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13,
                   "discriminator": 26}
_SCHEMA_ANYS = {"default": 5, "example": 30}
_SCHEMA_DOUBLES = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_SCHEMA_BOOLS = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16, "readOnly": 27}
_SCHEMA_INTS = {"maxLength": 11, "minLength": 12, "maxItems": 14, "minItems": 15,
                "maxProperties": 17, "minProperties": 18}
_SCHEMA_REQUIRED, _SCHEMA_ENUM, _SCHEMA_ADDITIONAL, _SCHEMA_TYPE = 19, 20, 21, 22
_SCHEMA_ITEMS, _SCHEMA_PROPERTIES, _SCHEMA_EXTERNAL_DOCS, _SCHEMA_EXTENSIONS = 23, 25, 29, 31

# Non-body parameters: the oneof member of NonBodyParameter, then the sub-schema's fields
# (query and path parameters number them differently).
_NON_BODY: dict[str, tuple[int, dict[str, int], dict[str, int], int]] = {
    # in: (NonBodyParameter field, string fields, bool fields, vendor extension field)
    "query": (3, {"in": 2, "description": 3, "name": 4, "type": 6, "format": 7},
              {"required": 1, "allowEmptyValue": 5, "uniqueItems": 20}, 23),
    "path": (4, {"in": 2, "description": 3, "name": 4, "type": 5, "format": 6},
             {"required": 1, "uniqueItems": 19}, 22),
}


def encode_document(doc: Mapping[str, Any]) -> bytes:
    """The ``openapi_v2.Document`` for ``doc``; raises ``ValueError`` on a part it does not encode."""
    _only(doc, {"swagger", "info", "paths", "definitions"}, "document")
    w = MessageWriter()
    w.string(1, doc.get("swagger", ""))
    if "info" in doc:
        w.message(2, _info(doc["info"]))
    if "paths" in doc:
        paths = MessageWriter()
        for name, item in doc["paths"].items():
            paths.message(2, _named(name, _path_item(item)))
        w.message(8, paths.finish())
    if "definitions" in doc:
        defs = MessageWriter()
        for name, schema in doc["definitions"].items():
            defs.message(1, _named(name, encode_schema(schema)))
        w.message(9, defs.finish())
    return w.finish()


def _only(node: Mapping[str, Any], allowed: set[str] | frozenset[str], what: str) -> None:
    unknown = [k for k in node if k not in allowed and not k.startswith("x-")]
    if unknown:
        raise ValueError(f"{what}: cannot encode {sorted(unknown)} as OpenAPI v2 protobuf")


def _named(name: str, value: bytes) -> bytes:
    """The ``Named*`` messages gnostic uses for maps: name = 1, value = 2."""
    w = MessageWriter()
    w.string(1, name)
    w.message(2, value)
    return w.finish()


def _any(value: Any) -> bytes:
    w = MessageWriter()
    w.string(2, orjson.dumps(value).decode())
    return w.finish()


def _extensions(w: MessageWriter, number: int, node: Mapping[str, Any]) -> None:
    for key, value in node.items():
        if key.startswith("x-"):
            w.message(number, _named(key, _any(value)))


def _info(info: Mapping[str, Any]) -> bytes:
    _only(info, {"title", "version", "description"}, "info")
    w = MessageWriter()
    w.string(1, info.get("title", ""))
    w.string(2, info.get("version", ""))
    w.string(3, info.get("description", ""))
    _extensions(w, 7, info)
    return w.finish()


def _path_item(item: Mapping[str, Any]) -> bytes:
    _only(item, {*_METHODS, "parameters"}, "path item")
    w = MessageWriter()
    for method, number in _METHODS.items():
        if method in item:
            w.message(number, _operation(item[method]))
    for param in item.get("parameters") or []:
        w.message(9, _parameters_item(param))
    _extensions(w, 10, item)
    return w.finish()


def _operation(op: Mapping[str, Any]) -> bytes:
    _only(op, {"tags", "summary", "description", "operationId", "produces", "consumes", "parameters",
               "responses", "schemes", "deprecated"}, "operation")
    w = MessageWriter()
    w.strings(1, op.get("tags") or [])
    w.string(2, op.get("summary", ""))
    w.string(3, op.get("description", ""))
    w.string(5, op.get("operationId", ""))
    w.strings(6, op.get("produces") or [])
    w.strings(7, op.get("consumes") or [])
    for param in op.get("parameters") or []:
        w.message(8, _parameters_item(param))
    if "responses" in op:
        responses = MessageWriter()
        for code, response in op["responses"].items():
            value = MessageWriter()
            value.message(1, _response(response))
            responses.message(1, _named(code, value.finish()))
        w.message(9, responses.finish())
    w.strings(10, op.get("schemes") or [])
    w.boolean(11, bool(op.get("deprecated")))
    _extensions(w, 13, op)
    return w.finish()


def _response(response: Mapping[str, Any]) -> bytes:
    _only(response, {"description", "schema"}, "response")
    w = MessageWriter()
    w.string(1, response.get("description", ""))
    if "schema" in response:
        item = MessageWriter()
        item.message(1, encode_schema(response["schema"]))
        w.message(2, item.finish())
    _extensions(w, 5, response)
    return w.finish()


def _parameters_item(param: Mapping[str, Any]) -> bytes:
    """ParametersItem{parameter = 1}: Parameter{body_parameter = 1 | non_body_parameter = 2}."""
    where = param.get("in")
    parameter = MessageWriter()
    if where == "body":
        parameter.message(1, _body_parameter(param))
    elif where in _NON_BODY:
        member, strings, bools, extensions = _NON_BODY[where]
        _only(param, {*strings, *bools}, f"{where} parameter")
        sub = MessageWriter()
        for key, value in param.items():
            if key in bools:
                sub.boolean(bools[key], bool(value))
            elif key in strings:
                sub.string(strings[key], value)
        _extensions(sub, extensions, param)
        non_body = MessageWriter()
        non_body.message(member, sub.finish())
        parameter.message(2, non_body.finish())
    else:
        raise ValueError(f"cannot encode a parameter in {where!r} as OpenAPI v2 protobuf")
    item = MessageWriter()
    item.message(1, parameter.finish())
    return item.finish()


def _body_parameter(param: Mapping[str, Any]) -> bytes:
    _only(param, {"description", "name", "in", "required", "schema"}, "body parameter")
    w = MessageWriter()
    w.string(1, param.get("description", ""))
    w.string(2, param.get("name", ""))
    w.string(3, "body")
    w.boolean(4, bool(param.get("required")))
    if "schema" in param:
        w.message(5, encode_schema(param["schema"]))
    _extensions(w, 6, param)
    return w.finish()


_SCHEMA_KEYS = frozenset({*_SCHEMA_STRINGS, *_SCHEMA_ANYS, *_SCHEMA_DOUBLES, *_SCHEMA_BOOLS,
                          *_SCHEMA_INTS, "required", "enum", "additionalProperties", "type", "items",
                          "properties", "externalDocs"})


def encode_schema(schema: Mapping[str, Any]) -> bytes:
    """One ``openapi_v2.Schema`` message."""
    _only(schema, _SCHEMA_KEYS, "schema")
    w = MessageWriter()
    for key, value in schema.items():
        if key in _SCHEMA_STRINGS:
            w.string(_SCHEMA_STRINGS[key], value)
        elif key in _SCHEMA_ANYS:
            w.message(_SCHEMA_ANYS[key], _any(value))
        elif key in _SCHEMA_DOUBLES:
            w.double(_SCHEMA_DOUBLES[key], float(value))
        elif key in _SCHEMA_BOOLS:
            w.boolean(_SCHEMA_BOOLS[key], bool(value))
        elif key in _SCHEMA_INTS:
            w.int64(_SCHEMA_INTS[key], int(value))
        elif key == "required":
            w.strings(_SCHEMA_REQUIRED, list(value))
        elif key == "enum":
            for member in value:
                w.message(_SCHEMA_ENUM, _any(member))
        elif key == "additionalProperties":
            w.message(_SCHEMA_ADDITIONAL, _additional_properties(value))
        elif key == "type":
            types = MessageWriter()
            types.strings(1, [value] if isinstance(value, str) else list(value))
            w.message(_SCHEMA_TYPE, types.finish())
        elif key == "items":
            items = MessageWriter()
            for sub in value if isinstance(value, list) else [value]:
                items.message(1, encode_schema(sub))
            w.message(_SCHEMA_ITEMS, items.finish())
        elif key == "properties":
            props = MessageWriter()
            for name, sub in value.items():
                props.message(1, _named(name, encode_schema(sub)))
            w.message(_SCHEMA_PROPERTIES, props.finish())
        elif key == "externalDocs":
            docs = MessageWriter()
            docs.string(1, value.get("description", ""))
            docs.string(2, value.get("url", ""))
            w.message(_SCHEMA_EXTERNAL_DOCS, docs.finish())
    _extensions(w, _SCHEMA_EXTENSIONS, schema)
    return w.finish()


def _additional_properties(value: Any) -> bytes:
    """AdditionalPropertiesItem: oneof schema = 1 | boolean = 2."""
    w = MessageWriter()
    if isinstance(value, bool):
        w.boolean(2, value, always=True)
    else:
        w.message(1, encode_schema(value))
    return w.finish()
