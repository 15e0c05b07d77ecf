"""The strategic-merge-patch directives: their spelling, validation and removal from new values.

Directives are the ``$``-prefixed keys kubectl puts into a strategic patch: ``$patch`` (``replace`` or
``delete`` a map or list element), ``$retainKeys``, ``$setElementOrder/<field>`` and
``$deleteFromPrimitiveList/<field>``. They steer the merge and must never reach the stored object.
Patch values that are not merged with anything are copied in one of upstream's two ways:
:func:`new_value` (upstream's ``removeDirectives``, used for keys the live object lacks) drops every
map that carries ``$patch``; :func:`raw_value` (upstream takes the patch as is, e.g. for a replaced
list) keeps such maps and only loses the directive keys, as typed decoding would make them. Both
discard null fields and the list directives, which upstream leaves for typed decoding to throw away.

Any other ``$``-prefixed key where the schema declares the fields is an unknown directive and a 400,
as strict decoding would make it upstream; free-form parts of the schema keep such keys as data
(``$ref`` and ``$schema`` in a CRD's OpenAPI schema are real fields).
"""

from __future__ import annotations

from typing import Any

from apiserver.patching.failures import malformed
from apiserver.patching.patchmeta import SchemaNode

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"

REPLACE = "replace"
DELETE = "delete"
MERGE = "merge"

_FORMAT_ERRORS = {
    SET_ELEMENT_ORDER: "invalid patch format of setElementOrder list",
    DELETE_FROM_PRIMITIVE_LIST: "invalid patch format of primitive list",
}


def is_list_directive(key: str) -> bool:
    """Whether ``key`` is a ``$setElementOrder`` or ``$deleteFromPrimitiveList`` key."""
    return key.startswith((SET_ELEMENT_ORDER, DELETE_FROM_PRIMITIVE_LIST))


def directive_field(key: str, prefix: str) -> str:
    """The field a ``<prefix>/<field>`` directive key applies to."""
    head, sep, field = key.partition("/")
    if head != prefix or not sep or not field:
        raise malformed(f"{_FORMAT_ERRORS[prefix]}: {key!r}")
    return field


def check_patch_directive(value: Any, where: dict[str, Any], in_list: bool = False) -> str:
    """Validate a ``$patch`` value; only ``replace`` and ``delete`` exist for maps and list elements."""
    if value in (REPLACE, DELETE):
        return value
    if in_list and value == MERGE:
        raise malformed("merging lists cannot yet be specified in the patch")
    raise malformed(f"unknown patch type: {value!r} in map: {_keys(where)}")


def check_key(key: str, schema: SchemaNode) -> None:
    """Reject a ``$``-prefixed key that is neither a directive nor a field the schema declares."""
    if key.startswith("$") and not schema.declares(key):
        raise malformed(f"unknown strategic merge patch directive {key!r}")


def new_value(value: Any, schema: SchemaNode) -> tuple[bool, Any]:
    """Copy a value for a key the live object lacks; returns (keep, value)."""
    return _copy(value, schema, drop_directed=True)


def raw_value(value: Any, schema: SchemaNode) -> Any:
    """Copy a value upstream stores without interpreting (replaced lists and maps, new elements)."""
    return _copy(value, schema, drop_directed=False)[1]


def _copy(value: Any, schema: SchemaNode, drop_directed: bool) -> tuple[bool, Any]:
    if isinstance(value, dict):
        return _copy_map(value, schema, drop_directed)
    if isinstance(value, list):
        items = schema.items()
        kept = (_copy(item, items, drop_directed) for item in value)
        return True, [item for keep, item in kept if keep]
    return True, value


def _copy_map(value: dict[str, Any], schema: SchemaNode, drop_directed: bool) -> tuple[bool, Any]:
    if PATCH in value:
        check_patch_directive(value[PATCH], value)
        if drop_directed:
            return False, None
    out: dict[str, Any] = {}
    for key, item in value.items():
        if item is None or key in (PATCH, RETAIN_KEYS) or is_list_directive(key):
            continue
        check_key(key, schema)
        keep, copied = _copy(item, schema.field(key)[0], drop_directed)
        if keep:
            out[key] = copied
    return True, out


def _keys(where: dict[str, Any]) -> str:
    return "{" + ", ".join(sorted(map(str, where)))[:200] + "}"
