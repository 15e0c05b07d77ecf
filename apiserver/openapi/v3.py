"""OpenAPI v3 documents served per space, one per group/version (``/openapi/v3/apis/<g>/<v>``).

kubectl reads these for three things, so their shape follows what kube-apiserver publishes:

* ``explain`` finds the kind through the ``x-kubernetes-group-version-kind`` of an operation on the
  resource's path, then the component schema carrying the same GVK, and walks ``properties``
  through ``allOf: [{$ref}]`` wrappers (which is where field descriptions live).
* strict validation (``QueryParamVerifierV3``) needs a PATCH operation of the GVK with a
  ``fieldValidation`` query parameter, or it falls back to OpenAPI v2, which is not served.
* client-side ``apply`` picks strategic merge patch only when that PATCH operation accepts
  ``application/strategic-merge-patch+json``, and then reads ``x-kubernetes-patch-strategy`` /
  ``x-kubernetes-patch-merge-key`` from the component schemas.

This module owns the conversion of the JSON Schema definitions (``apiserver.definitions``) to
OpenAPI 3.0 component schemas, the path layout, the document hash and the ``/openapi/v3`` index.
It knows nothing about HTTP: the handler serves the bytes and the hash this module returns.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from apiserver.resourcetypes import ResourceType

Schema = dict[str, Any]

COMPONENTS_REF = "#/components/schemas/"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
_PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
_DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
_STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
_SCALE = "io.k8s.api.autoscaling.v1.Scale"
_SCALE_GVK = {"group": "autoscaling", "kind": "Scale", "version": "v1"}

# JSON-Schema-only keywords that OpenAPI 3.0 schema objects do not have.
_DROPPED_KEYS = frozenset({"$schema", "$id", "$defs", "definitions", "$comment"})
# Keywords whose value is a map of sub-schemas, a single sub-schema, or a list of sub-schemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties"})
_SCHEMA_ONE = frozenset({"items", "additionalProperties", "not"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf"})

# The two scalar unions, in the shape kube-openapi publishes for v3 (oneOf of the JSON types).
# IntOrString also carries the structural-schema marker CRDs use for the same type, so tools that
# only know CRD conventions recognise it too.
_SCALAR_UNIONS: dict[str, Schema] = {
    _INT_OR_STRING: {
        "description": "A value that is either an integer (int32) or a string, e.g. a port number "
                       "or a port name, or a count or a percentage.",
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    },
    _QUANTITY: {
        "description": "A fixed-point number with an optional unit suffix, written as a string "
                       "('500m', '1Gi', '2') or as a plain JSON number.",
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
}

_DOC_CACHE_SIZE = 64
_CONVERTER_CACHE_SIZE = 8


def group_version_path(group: str, version: str) -> str:
    """The document's key in the index and under ``/openapi/v3/``: ``api/v1`` or ``apis/apps/v1``."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_index(docs: Mapping[str, str], prefix: str) -> dict[str, Any]:
    """The ``/openapi/v3`` discovery document for ``{group_version_path: hash}``.

    ``prefix`` is the space's URL prefix (``/clusters/x``, or empty); client-go strips its own base
    path from ``serverRelativeURL`` and re-adds it, so the URL must carry the prefix.
    """
    base = prefix.rstrip("/")
    return {"paths": {gv: {"serverRelativeURL": f"{base}/openapi/v3/{gv}?hash={digest}"}
                      for gv, digest in sorted(docs.items())}}


def openapi_document(group: str, version: str, types: Sequence[ResourceType],
                     defs: Mapping[str, Schema]) -> tuple[bytes, str]:
    """The OpenAPI 3.0 document of one group/version of a space, as JSON bytes, and its hash.

    The hash is the upper-case hex SHA-512 of the bytes, as kube-openapi computes its ETag; it is
    what the index advertises in ``?hash=`` so clients may cache the document forever.
    Results are cached by the identity of ``types`` and ``defs``; callers must treat both as
    immutable once passed here.
    """
    types = tuple(types)
    key = (group, version, tuple(id(t) for t in types), id(defs))
    with _doc_lock:
        hit = _doc_cache.get(key)
        if hit is not None:
            _doc_cache.move_to_end(key)
            return hit[2]
    body = orjson.dumps(_build_document(group, version, types, defs), option=orjson.OPT_SORT_KEYS)
    result = (body, hashlib.sha512(body).hexdigest().upper())
    with _doc_lock:
        # The entry pins ``types`` and ``defs`` so their ids cannot be reused by other objects
        # while the key is cached.
        _doc_cache[key] = (types, defs, result)
        _doc_cache.move_to_end(key)
        while len(_doc_cache) > _DOC_CACHE_SIZE:
            _doc_cache.popitem(last=False)
    return result


_doc_lock = threading.Lock()
_doc_cache: OrderedDict[tuple[Any, ...], tuple[tuple[ResourceType, ...], Mapping[str, Schema],
                                               tuple[bytes, str]]] = OrderedDict()


# --- JSON Schema -> OpenAPI 3.0 ------------------------------------------------------------------


class _Converter:
    """Converts named definitions of one ``defs`` map once, remembering what each one references."""

    def __init__(self, defs: Mapping[str, Schema]) -> None:
        self.defs = defs
        self._done: dict[str, tuple[Schema, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def named(self, name: str) -> tuple[Schema, frozenset[str]]:
        """The component schema for ``defs[name]`` and the names it references directly."""
        with self._lock:
            hit = self._done.get(name)
        if hit is not None:
            return hit
        if name in _SCALAR_UNIONS:
            result: tuple[Schema, frozenset[str]] = (_SCALAR_UNIONS[name], frozenset())
        else:
            refs: set[str] = set()
            schema = convert_schema(self.defs[name], refs)
            result = (_strip_type_meta_enums(schema), frozenset(refs))
        with self._lock:
            self._done[name] = result
        return result


def convert_schema(node: Any, refs: set[str]) -> Any:
    """One JSON Schema node as an OpenAPI 3.0 schema object; referenced names are added to ``refs``.

    ``type: [X, "null"]`` becomes ``type: X`` (kube marks optional fields that way, OpenAPI does
    not need it); a ``$ref`` with sibling keywords becomes ``allOf: [{$ref}]`` plus the siblings,
    because OpenAPI 3.0 ignores siblings of ``$ref`` and kube-openapi publishes that form.
    """
    if not isinstance(node, dict):
        return node
    out: Schema = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS or key == "$ref":
            continue
        if key == "type":
            _convert_type(value, out)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: convert_schema(sub, refs) for name, sub in value.items()}
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            out[key] = convert_schema(value, refs)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [convert_schema(sub, refs) for sub in value]
        else:
            # Annotations and data (description, enum, default, format, x-kubernetes-*): as is.
            out[key] = value
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        refs.add(name)
        target = {"$ref": COMPONENTS_REF + name}
        if not out:
            return target
        out = {"allOf": [target], **out}
    return out


def _convert_type(value: Any, out: Schema) -> None:
    if isinstance(value, str):
        if value != "null":
            out["type"] = value
        return
    kinds = [t for t in value if t != "null"]
    if len(kinds) == 1:
        out["type"] = kinds[0]
    elif kinds:
        # OpenAPI 3.0 has no type arrays; several real types become alternatives.
        out.setdefault("anyOf", [{"type": t} for t in kinds])


def _strip_type_meta_enums(schema: Schema) -> Schema:
    """Drop the single-value ``enum`` the schema source adds to ``apiVersion``/``kind``.

    kube-apiserver publishes those as plain strings; an enum there would make ``kubectl explain``
    print it and would pin a schema shared by several group/versions (DeleteOptions) to a list.
    """
    props = schema.get("properties")
    if "x-kubernetes-group-version-kind" not in schema or not isinstance(props, dict):
        return schema
    changed = False
    new_props = dict(props)
    for field in ("apiVersion", "kind"):
        prop = props.get(field)
        if isinstance(prop, dict) and "enum" in prop:
            new_props[field] = {k: v for k, v in prop.items() if k != "enum"}
            changed = True
    return {**schema, "properties": new_props} if changed else schema


def _converter_for(defs: Mapping[str, Schema]) -> _Converter:
    key = id(defs)
    with _converter_lock:
        hit = _converters.get(key)
        if hit is not None and hit.defs is defs:
            _converters.move_to_end(key)
            return hit
        conv = _Converter(defs)
        _converters[key] = conv
        while len(_converters) > _CONVERTER_CACHE_SIZE:
            _converters.popitem(last=False)
        return conv


_converter_lock = threading.Lock()
_converters: OrderedDict[int, _Converter] = OrderedDict()


def _collect_refs(node: Any, refs: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(COMPONENTS_REF):
                refs.add(value[len(COMPONENTS_REF):])
            else:
                _collect_refs(value, refs)
    elif isinstance(node, list):
        for value in node:
            _collect_refs(value, refs)


# --- document assembly ---------------------------------------------------------------------------


def _ref(name: str) -> Schema:
    return {"$ref": COMPONENTS_REF + name}


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _has_gvk(schema: Schema, gvk: Mapping[str, str]) -> bool:
    tags = schema.get("x-kubernetes-group-version-kind")
    return isinstance(tags, list) and any(
        isinstance(t, dict) and all(t.get(k, "") == v for k, v in gvk.items()) for t in tags)


def _with_gvk(schema: Schema, gvk: dict[str, str]) -> Schema:
    if _has_gvk(schema, gvk):
        return schema
    tags = list(schema.get("x-kubernetes-group-version-kind") or [])
    return {**schema, "x-kubernetes-group-version-kind": [*tags, gvk]}


def _generated_name(group: str, version: str, kind: str) -> str:
    """Component name for a kind without a definition, in kube's reversed-domain style."""
    domain = ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
    return f"{domain}.{version}.{kind}"


def _type_meta_props(api_version_doc: str, kind_doc: str) -> Schema:
    return {"apiVersion": {"description": api_version_doc, "type": "string"},
            "kind": {"description": kind_doc, "type": "string"}}


_API_VERSION_DOC = "The versioned schema of this representation of the object, e.g. 'apps/v1'."
_KIND_DOC = "The REST kind this object represents, in CamelCase."


def _generic_kind_schema(rtype: ResourceType) -> Schema:
    """Schema of a kind that has no definition: any content, with the standard envelope."""
    return {
        "description": f"{rtype.kind} is served without a published schema; any content is kept.",
        "properties": {
            **_type_meta_props(_API_VERSION_DOC, _KIND_DOC),
            "metadata": {"allOf": [_ref(_OBJECT_META)], "description": "Standard object's metadata."},
        },
        "type": "object",
        "x-kubernetes-group-version-kind": [_gvk(rtype.group, rtype.version, rtype.kind)],
        "x-kubernetes-preserve-unknown-fields": True,
    }


def _list_schema(rtype: ResourceType, kind_name: str) -> Schema:
    return {
        "description": f"{rtype.list_kind} is a list of {rtype.kind} objects.",
        "properties": {
            **_type_meta_props(_API_VERSION_DOC, _KIND_DOC),
            "items": {"description": f"List of {rtype.plural}.", "items": _ref(kind_name),
                      "type": "array"},
            "metadata": {"allOf": [_ref(_LIST_META)], "description": "Standard list metadata."},
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [_gvk(rtype.group, rtype.version, rtype.list_kind)],
    }


# Minimal stand-ins for the meta schemas the paths reference, used only when ``defs`` lacks them
# (a definitions map for custom resources alone); every ``$ref`` must resolve inside the document.
_FALLBACKS: dict[str, Schema] = {
    _OBJECT_META: {"description": "Standard object metadata.", "type": "object",
                   "x-kubernetes-preserve-unknown-fields": True},
    _LIST_META: {"description": "Standard list metadata.", "type": "object",
                 "x-kubernetes-preserve-unknown-fields": True},
    _PATCH: {"description": "A patch document in one of the accepted patch formats.",
             "type": "object"},
    _DELETE_OPTIONS: {"description": "Options for a delete request.", "type": "object",
                      "x-kubernetes-preserve-unknown-fields": True},
    _STATUS: {"description": "The result of an operation that returns no object.", "type": "object",
              "x-kubernetes-preserve-unknown-fields": True},
    _SCALE: {"description": "The scale subresource of a resource.", "type": "object",
             "x-kubernetes-group-version-kind": [_SCALE_GVK],
             "x-kubernetes-preserve-unknown-fields": True},
}


def _build_document(group: str, version: str, types: Sequence[ResourceType],
                    defs: Mapping[str, Schema]) -> dict[str, Any]:
    conv = _converter_for(defs)
    prefix = "/" + group_version_path(group, version)
    # Schemas made here rather than converted from ``defs``, by component name.
    local: dict[str, Schema] = {}
    paths: dict[str, Any] = {}
    for rtype in sorted(types, key=lambda t: (t.plural, t.kind)):
        kind_name = _kind_component(rtype, conv, local)
        list_name = _list_component(rtype, kind_name, conv, local)
        paths.update(_resource_paths(rtype, prefix, kind_name, list_name))

    schemas: dict[str, Schema] = {}
    pending: set[str] = set()
    _collect_refs(paths, pending)
    for name, schema in local.items():
        schemas[name] = schema
        _collect_refs(schema, pending)
    while pending:
        name = pending.pop()
        if name in schemas:
            continue
        if name in defs or name in _SCALAR_UNIONS:
            schema, refs = conv.named(name)
        else:
            schema, refs = _FALLBACKS.get(name, {"type": "object"}), frozenset()
        schemas[name] = schema
        pending.update(r for r in refs if r not in schemas)

    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _kind_component(rtype: ResourceType, conv: _Converter, local: dict[str, Schema]) -> str:
    gvk = _gvk(rtype.group, rtype.version, rtype.kind)
    name = rtype.schema_name
    if name and name in conv.defs:
        schema, _ = conv.named(name)
        if not _has_gvk(schema, gvk):
            # explain and apply find the kind's schema by this tag alone.
            local[name] = _with_gvk(schema, gvk)
        return name
    name = name or _generated_name(rtype.group, rtype.version, rtype.kind)
    local[name] = _generic_kind_schema(rtype)
    return name


def _list_component(rtype: ResourceType, kind_name: str, conv: _Converter,
                    local: dict[str, Schema]) -> str:
    name = kind_name + "List"
    gvk = _gvk(rtype.group, rtype.version, rtype.list_kind)
    if name in conv.defs:
        schema, _ = conv.named(name)
        if _has_gvk(schema, gvk):
            return name
    local[name] = _list_schema(rtype, kind_name)
    return name


# --- paths and operations ------------------------------------------------------------------------

_QUERY_PARAMS: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": ("boolean", "Ask for BOOKMARK events on a watch; servers may ignore it."),
    "continue": ("string", "The continue token of the previous page of a chunked list."),
    "dryRun": ("string", "When 'All', run every stage of the request but persist nothing."),
    "fieldManager": ("string", "Name of the actor making the change, recorded in managedFields. "
                               "Required for apply patches."),
    "fieldSelector": ("string", "Restrict the result to objects whose fields match this selector."),
    "fieldValidation": ("string", "How to treat unknown or duplicate fields in the body: Ignore, "
                                  "Warn (a warning header per field) or Strict (reject the request)."),
    "force": ("boolean", "Take ownership of conflicting fields on an apply patch. Must be unset "
                         "for other patch types."),
    "gracePeriodSeconds": ("integer", "Seconds before the object is deleted; zero means at once."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean", "Delete an object that cannot be read from storage, bypassing finalizers."),
    "labelSelector": ("string", "Restrict the result to objects whose labels match this selector."),
    "limit": ("integer", "Maximum number of items in one page of a list; use continue for more."),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy."),
    "pretty": ("string", "If 'true', indent the output."),
    "propagationPolicy": ("string", "Garbage collection of dependents: Orphan, Background or "
                                    "Foreground."),
    "resourceVersion": ("string", "Which resource version the request may be served from."),
    "resourceVersionMatch": ("string", "How resourceVersion applies to a list: NotOlderThan or "
                                       "Exact."),
    "sendInitialEvents": ("boolean", "Start a watch with synthetic ADDED events for the current "
                                     "state, ended by a bookmark."),
    "timeoutSeconds": ("integer", "Timeout of a list or watch call, in seconds."),
    "watch": ("boolean", "Stream changes (add, update, remove) instead of returning a list."),
}

_LIST = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
         "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
_WATCH_ONLY = frozenset({"allowWatchBookmarks", "sendInitialEvents", "watch"})
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_PATCH_PARAMS = (*_WRITE, "force")
_DELETE = ("dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
           "orphanDependents", "propagationPolicy")
_DELETE_COLLECTION = ("continue", "dryRun", "fieldSelector", "gracePeriodSeconds",
                      "ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector", "limit",
                      "orphanDependents", "propagationPolicy", "resourceVersion",
                      "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds")

_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
                "application/merge-patch+json")
_SMP = "application/strategic-merge-patch+json"


def _query(*names: str) -> list[Schema]:
    out = []
    for name in names:
        kind, doc = _QUERY_PARAMS[name]
        out.append({"description": doc, "in": "query", "name": name, "schema": {"type": kind}})
    return out


def _path_param(name: str, doc: str) -> Schema:
    return {"description": doc, "in": "path", "name": name, "required": True,
            "schema": {"type": "string"}}


def _content(schema_name: str, *, stream: bool = False) -> Schema:
    media = ["application/json"]
    if stream:
        media.append("application/json;stream=watch")
    return {m: {"schema": _ref(schema_name)} for m in media}


def _responses(schema_name: str, codes: Sequence[tuple[str, str]], *, stream: bool = False) -> Schema:
    out: Schema = {code: {"content": _content(schema_name, stream=stream), "description": text}
                   for code, text in codes}
    out["401"] = {"description": "Unauthorized"}
    return out


_OK = (("200", "OK"),)
_WRITTEN = (("200", "OK"), ("201", "Created"))
_CREATED = (("200", "OK"), ("201", "Created"), ("202", "Accepted"))
_DELETED = (("200", "OK"), ("202", "Accepted"))


def _camel(text: str) -> str:
    parts = [p for p in text.replace("-", ".").split(".") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts)


def _group_ident(group: str) -> str:
    """``apps`` -> ``Apps``, ``rbac.authorization.k8s.io`` -> ``RbacAuthorization``, core -> ``Core``."""
    if not group:
        return "Core"
    return _camel(group.removesuffix(".k8s.io"))


def _resource_paths(rtype: ResourceType, prefix: str, kind_name: str,
                    list_name: str) -> dict[str, Any]:
    group_id = _group_ident(rtype.group)
    op_base = group_id + _camel(rtype.version)
    tag = f"{group_id[:1].lower()}{group_id[1:]}_{rtype.version}"
    gvk = _gvk(rtype.group, rtype.version, rtype.kind)
    verbs = set(rtype.verbs)
    scope = "Namespaced" if rtype.namespaced else ""
    list_params = [p for p in _LIST if "watch" in verbs or p not in _WATCH_ONLY]

    def op(action: str, op_id: str, doc: str, params: Sequence[str], responses: Schema, *,
           body: Schema | None = None, op_gvk: dict[str, str] = gvk) -> Schema:
        out: Schema = {"description": doc, "operationId": op_id}
        if params:
            out["parameters"] = _query(*params)
        if body is not None:
            out["requestBody"] = body
        out["responses"] = responses
        out["tags"] = [tag]
        out["x-kubernetes-action"] = action
        out["x-kubernetes-group-version-kind"] = op_gvk
        return out

    def whole_body(name: str) -> Schema:
        return {"content": {"*/*": {"schema": _ref(name)}}, "required": True}

    def patch_body() -> Schema:
        media = [*_PATCH_TYPES, _SMP] if rtype.strategic_merge else list(_PATCH_TYPES)
        return {"content": {m: {"schema": _ref(_PATCH)} for m in sorted(media)}, "required": True}

    delete_body = {"content": {"*/*": {"schema": _ref(_DELETE_OPTIONS)}}}
    ns_params = [_path_param("namespace", "The namespace of the objects.")] if rtype.namespaced else []
    pretty = _query("pretty")
    base = f"{prefix}/namespaces/{{namespace}}/{rtype.plural}" if rtype.namespaced else \
        f"{prefix}/{rtype.plural}"
    kind = rtype.kind
    paths: dict[str, Any] = {}

    collection: Schema = {}
    if "list" in verbs:
        collection["get"] = op("list", f"list{op_base}{scope}{kind}", f"list or watch {kind} objects",
                               list_params, _responses(list_name, _OK, stream="watch" in verbs))
    if "create" in verbs:
        collection["post"] = op("post", f"create{op_base}{scope}{kind}", f"create a {kind}", _WRITE,
                                _responses(kind_name, _CREATED), body=whole_body(kind_name))
    if "deletecollection" in verbs:
        collection["delete"] = op("deletecollection", f"delete{op_base}Collection{scope}{kind}",
                                  f"delete a collection of {kind} objects", _DELETE_COLLECTION,
                                  _responses(_STATUS, _OK), body=delete_body)
    if collection:
        collection["parameters"] = [*ns_params, *pretty]
        paths[base] = collection

    item: Schema = {}
    if "get" in verbs:
        item["get"] = op("get", f"read{op_base}{scope}{kind}", f"read the specified {kind}", (),
                         _responses(kind_name, _OK))
    if "update" in verbs:
        item["put"] = op("put", f"replace{op_base}{scope}{kind}", f"replace the specified {kind}",
                         _WRITE, _responses(kind_name, _WRITTEN), body=whole_body(kind_name))
    if "patch" in verbs:
        item["patch"] = op("patch", f"patch{op_base}{scope}{kind}",
                           f"partially update the specified {kind}", _PATCH_PARAMS,
                           _responses(kind_name, _WRITTEN), body=patch_body())
    if "delete" in verbs:
        item["delete"] = op("delete", f"delete{op_base}{scope}{kind}", f"delete a {kind}", _DELETE,
                            _responses(_STATUS, _DELETED), body=delete_body)
    item_params = [_path_param("name", f"name of the {kind}"), *ns_params, *pretty]
    if item:
        item["parameters"] = item_params
        paths[f"{base}/{{name}}"] = item

    for sub in rtype.subresources:
        if sub == "status":
            schema, sub_gvk, label = kind_name, gvk, "Status"
        elif sub == "scale":
            schema, sub_gvk, label = _SCALE, _SCALE_GVK, "Scale"
        else:
            continue
        paths[f"{base}/{{name}}/{sub}"] = {
            "get": op("get", f"read{op_base}{scope}{kind}{label}", f"read {sub} of the specified {kind}",
                      (), _responses(schema, _OK), op_gvk=sub_gvk),
            "put": op("put", f"replace{op_base}{scope}{kind}{label}",
                      f"replace {sub} of the specified {kind}", _WRITE, _responses(schema, _WRITTEN),
                      body=whole_body(schema), op_gvk=sub_gvk),
            "patch": op("patch", f"patch{op_base}{scope}{kind}{label}",
                        f"partially update {sub} of the specified {kind}", _PATCH_PARAMS,
                        _responses(schema, _WRITTEN), body=patch_body(), op_gvk=sub_gvk),
            "parameters": [_path_param("name", f"name of the {label}"), *ns_params, *pretty],
        }

    if rtype.namespaced and "list" in verbs:
        paths[f"{prefix}/{rtype.plural}"] = {
            "get": op("list", f"list{op_base}{kind}ForAllNamespaces",
                      f"list or watch {kind} objects in all namespaces", list_params,
                      _responses(list_name, _OK, stream="watch" in verbs)),
            "parameters": pretty,
        }
    return paths
