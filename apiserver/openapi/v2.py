"""The OpenAPI v2 (Swagger 2.0) document of a space (``/openapi/v2``), derived from its v3 documents.

kubectl still needs v2 for one thing: client-side validation. When the v3 verifier answers
"fieldValidation unsupported" for a GVK — a kind the space does not serve, or ``kind: List`` — kubectl
validates the object against the v2 models instead (``kubectl/pkg/validation``): it downloads
``/openapi/v2`` as gnostic protobuf, builds models from every definition (kube-openapi
``pkg/util/proto``), looks the GVK up by the definitions' ``x-kubernetes-group-version-kind`` and
skips kinds it does not find, so its REST mapping then says ``no matches for kind``. Without the
document that download fails and so does the whole apply.

kube-openapi's model builder rejects the entire document over one schema it cannot read, so every
definition here must be in the shape it accepts: a ``$ref`` with no ``type`` or ``properties`` beside
it, one type per schema, every array with exactly one ``items`` schema. The v3 component schemas
(``apiserver.openapi.v3``) are the single source; this module rewrites them:

* ``#/components/schemas/X`` references become ``#/definitions/X``, and the ``allOf: [{$ref}]``
  wrappers v3 needs for siblings become a plain ``$ref`` with its description again;
* ``oneOf``/``anyOf``/``not``/``allOf`` and other keywords v2 has no field for are dropped, as
  apiextensions-apiserver's ``ToStructuralOpenAPIV2`` drops them from CRD schemas;
* that function's rules for what kubectl cannot validate: a ``nullable`` schema loses its type,
  properties and items (and leaves its parent's ``required``); a schema that preserves unknown
  fields loses its properties and items, and ``type: object``; an array left without items loses
  its type. A kind whose root preserves unknown fields is published as a bare ``type: object``, and
  embedded resources get ``apiVersion``/``kind``/``metadata``, as the CRD OpenAPI builder does;
* the two scalar unions get their v2 form (IntOrString is a string of format ``int-or-string``).

Operations keep their ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``: kubectl's v2
query-parameter verifier reads the GVK of PATCH operations and their ``fieldValidation`` parameter.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from apiserver.openapi.gnostic import encode_document
from apiserver.openapi.v3 import COMPONENTS_REF

Schema = dict[str, Any]

_DEFINITIONS_REF = "#/definitions/"
_GVK = "x-kubernetes-group-version-kind"
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_EMBEDDED = "x-kubernetes-embedded-resource"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# Swagger 2.0 schema keywords (the fields of gnostic's ``openapi_v2.Schema``); anything else that is
# not a vendor extension (``x-``) has no place in a v2 schema.
_V2_SCHEMA_KEYS = frozenset({
    "$ref", "format", "title", "description", "default", "multipleOf", "maximum", "exclusiveMaximum",
    "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "maxProperties", "minProperties", "required", "enum", "additionalProperties",
    "type", "items", "properties", "discriminator", "readOnly", "externalDocs", "example",
})
# What may stand beside a ``$ref``: kube-openapi refuses a reference with a type or properties.
_REF_SIBLINGS = frozenset({"description", "default"})

# kube-openapi's v2 definitions of the scalar unions, which v3 spells as ``oneOf``.
_V2_SCALARS: dict[str, Schema] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "A value that is either an integer (int32) or a string, e.g. a port number "
                       "or a port name, or a count or a percentage.",
        "format": "int-or-string",
        "type": "string",
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": "A fixed-point number with an optional unit suffix, written as a string "
                       "('500m', '1Gi', '2') or as a plain JSON number.",
        "type": "string",
    },
}

_TYPE_META: dict[str, Schema] = {
    "apiVersion": {"description": "The versioned schema of this representation of the object.",
                   "type": "string"},
    "kind": {"description": "The REST kind this object represents, in CamelCase.", "type": "string"},
}

_CACHE_SIZE = 8


@dataclass
class OpenAPIV2:
    """One space's v2 document: its JSON bytes, their hash (the ETag) and the protobuf form on demand."""

    document: dict[str, Any]
    json: bytes
    etag: str
    _proto: bytes | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def protobuf(self) -> bytes:
        """The gnostic ``openapi_v2.Document`` encoding, made once on first request."""
        with self._lock:
            if self._proto is None:
                self._proto = encode_document(self.document)
            return self._proto


def openapi_v2(v3_documents: Mapping[str, tuple[bytes, str]]) -> OpenAPIV2:
    """The v2 document merging the v3 documents ``{group_version_path: (body, hash)}`` of a space.

    Cached by the v3 hashes, so spaces serving the same APIs share one document and a CRD change
    (which changes a v3 document and so its hash) builds a new one.
    """
    key = tuple(sorted((gv, digest) for gv, (_, digest) in v3_documents.items()))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    document = v2_document(orjson.loads(v3_documents[gv][0]) for gv, _ in key)
    body = orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
    # The ETag is kube-openapi's: the upper-case hex SHA-512 of the JSON, shared by the protobuf form.
    result = OpenAPIV2(document, body, hashlib.sha512(body).hexdigest().upper())
    with _cache_lock:
        _cache[key] = result
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


_cache_lock = threading.Lock()
_cache: OrderedDict[tuple[tuple[str, str], ...], OpenAPIV2] = OrderedDict()


def v2_document(v3_documents: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One Swagger 2.0 document from OpenAPI 3.0 documents: their paths and component schemas merged."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Schema] = {}
    for doc in v3_documents:
        for path, item in (doc.get("paths") or {}).items():
            paths[path] = _path_item(item)
        for name, schema in ((doc.get("components") or {}).get("schemas") or {}).items():
            converted = _definition(name, schema)
            if name in definitions:
                # The same definition in several group/versions (DeleteOptions): one entry, every GVK.
                converted = _merge_gvks(definitions[name], converted)
            definitions[name] = converted
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "definitions": definitions,
    }


def _merge_gvks(first: Schema, second: Schema) -> Schema:
    tags = list(first.get(_GVK) or [])
    tags += [t for t in second.get(_GVK) or [] if t not in tags]
    return {**first, _GVK: tags} if tags else first


# --- schemas -------------------------------------------------------------------------------------


def _definition(name: str, schema: Schema) -> Schema:
    if name in _V2_SCALARS:
        return _V2_SCALARS[name]
    if _GVK in schema and schema.get(_PRESERVE) is True:
        # A kind that keeps unknown fields at its root: any property listed would make kubectl
        # report every other field as unknown, so the CRD builder publishes only the type and GVK.
        out: Schema = {"type": "object", _GVK: schema[_GVK]}
        if "description" in schema:
            out["description"] = schema["description"]
        return out
    return convert_schema(schema)


def convert_schema(node: Any) -> Any:
    """One OpenAPI 3.0 schema node as a Swagger 2.0 schema kubectl's model builder accepts."""
    if not isinstance(node, dict):
        return node
    node = _unwrap_ref(node)
    if "$ref" in node:
        ref = str(node["$ref"])
        name = ref[len(COMPONENTS_REF):] if ref.startswith(COMPONENTS_REF) else ref.rsplit("/", 1)[-1]
        out: Schema = {"$ref": _DEFINITIONS_REF + name}
        out.update((k, v) for k, v in node.items() if k in _REF_SIBLINGS or k.startswith("x-"))
        return out
    node = _structural_v2(node)
    out = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {prop: convert_schema(sub) for prop, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out[key] = convert_schema(value)
        elif key == "additionalProperties":
            out[key] = convert_schema(value) if isinstance(value, dict) else value
        elif key in _V2_SCHEMA_KEYS or key.startswith("x-"):
            out[key] = value
    if node.get(_EMBEDDED) is True and node.get(_PRESERVE) is not True:
        _add_embedded_object_fields(out)
    return out


def _unwrap_ref(node: Schema) -> Schema:
    """``{allOf: [{$ref: X}], description: …}`` (v3's way to annotate a reference) as ``{$ref: X, …}``."""
    all_of = node.get("allOf")
    if (isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict)
            and set(all_of[0]) == {"$ref"}):
        return {"$ref": all_of[0]["$ref"], **{k: v for k, v in node.items() if k != "allOf"}}
    return node


def _structural_v2(node: Schema) -> Schema:
    """apiextensions-apiserver's ``ToStructuralOpenAPIV2`` rules for one schema node."""
    out = dict(node)
    if out.pop("nullable", False) is True:
        # kubectl has no notion of null: an untyped value accepts it, typed sub-schemas would not.
        for key in ("type", "items", "properties"):
            out.pop(key, None)
    if out.get(_PRESERVE) is True:
        out.pop("items", None)
        out.pop("properties", None)
        if out.get("type") == "object":
            out.pop("type")
    if out.get("type") == "array" and "items" not in out:
        out.pop("type")
    required = out.get("required")
    if isinstance(required, list):
        props = out.get("properties") if isinstance(out.get("properties"), dict) else {}
        extra = out.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("nullable") is True:
            kept: list[Any] = []
        else:
            kept = [r for r in required
                    if not (isinstance(props.get(r), dict) and props[r].get("nullable") is True)]
        if kept:
            out["required"] = kept
        else:
            out.pop("required")
    return out


def _add_embedded_object_fields(out: Schema) -> None:
    """An embedded resource's implicit ``apiVersion``, ``kind`` and ``metadata`` fields, as the CRD
    builder adds them: without them kubectl would call those fields unknown."""
    props = dict(out.get("properties") or {})
    props.update(_TYPE_META)
    props["metadata"] = {"$ref": _DEFINITIONS_REF + _OBJECT_META,
                         "description": "Standard object's metadata."}
    out["properties"] = props
    required = list(out.get("required") or [])
    out["required"] = required + [f for f in ("kind", "apiVersion") if f not in required]


# --- paths ---------------------------------------------------------------------------------------

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")


def _path_item(item: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key in _METHODS and isinstance(value, dict):
            out[key] = _operation(value)
        elif key == "parameters" and isinstance(value, list):
            out[key] = [_parameter(p) for p in value]
    return out


def _operation(op: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    body = op.get("requestBody")
    responses = op.get("responses") or {}
    if isinstance(body, dict) and body.get("content"):
        out["consumes"] = list(body["content"])
    produces: list[str] = []
    for response in responses.values():
        for media in (response.get("content") or {}):
            if media not in produces:
                produces.append(media)
    if produces:
        out["produces"] = produces
    for key in ("description", "operationId", "tags"):
        if key in op:
            out[key] = op[key]
    params = [_parameter(p) for p in op.get("parameters") or []]
    if isinstance(body, dict) and body.get("content"):
        params.append(_body_parameter(body))
    if params:
        out["parameters"] = params
    out["responses"] = {code: _response(r) for code, r in responses.items()}
    out.update((k, v) for k, v in op.items() if k.startswith("x-"))
    return out


def _parameter(param: Mapping[str, Any]) -> dict[str, Any]:
    """A v3 query or path parameter: v2 puts the type on the parameter itself, not in a schema."""
    out = {k: v for k, v in param.items() if k != "schema"}
    schema = param.get("schema") or {}
    if "type" in schema:
        out["type"] = schema["type"]
    return out


def _body_parameter(body: Mapping[str, Any]) -> dict[str, Any]:
    first = next(iter(body["content"].values()))
    out: dict[str, Any] = {"in": "body", "name": "body", "schema": convert_schema(first["schema"])}
    if body.get("required"):
        out["required"] = True
    return out


def _response(response: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"description": response.get("description", "")}
    content = response.get("content") or {}
    if content:
        out["schema"] = convert_schema(next(iter(content.values()))["schema"])
    return out
