"""``x-kubernetes-list-type`` invariants of custom resources: sets and maps hold no duplicates.

Upstream (``listtype.ValidateListSetsAndMaps``) reports the second occurrence of each repeated
element of a ``set`` list, and of each repeated key of a ``map`` list, as ``Duplicate value``,
with the element, or the key fields of the item (``{"name":"a"}``), as the value. Elements are
compared as Go compares them: scalars by type and value (``1`` and ``1.0`` differ), objects and
lists by their JSON encoding. Items of a map list must be objects.
"""

from __future__ import annotations

from typing import Any

from apimachinery import gofmt
from apimachinery.errors import Cause
from apiserver.crdschema.node import Node
from apiserver.crdschema.schemavalidation import kind_of

_UNSPECIFIED = object()  # a missing key, distinct from an explicit null


def _identity(x: Any) -> Any:
    """A hashable identity with Go's equality for set elements and map keys."""
    if x is _UNSPECIFIED:
        return ("unspecified",)
    if isinstance(x, (dict, list)):
        return ("json", gofmt.json_marshal(x))
    return ("scalar", kind_of(x), x)


def _non_unique(values: list[Any]) -> list[int]:
    """Indices of the second appearance of each repeated value."""
    if len(values) <= 1:
        return []
    seen: dict[Any, int] = {}
    out = []
    for i, x in enumerate(values):
        ident = _identity(x)
        times = seen.get(ident, 0)
        if times == 1:
            out.append(i)
        seen[ident] = times + 1
    return out


def _list_map(path: str, s: Node, items: list[Any]) -> list[Cause]:
    for i, x in enumerate(items):
        if x is not None and not isinstance(x, dict):
            return [gofmt.invalid(gofmt.index(path, i), x, "must be an object for an array of list-type map")]
    if len(items) <= 1:
        return []
    fields = s.list_map_keys
    if len(fields) == 1:
        key_field = fields[0]
        keys = [_UNSPECIFIED if x is None or key_field not in x else x[key_field] for x in items]
        return [gofmt.duplicate(gofmt.index(path, i), {} if keys[i] is _UNSPECIFIED else {key_field: keys[i]})
                for i in _non_unique(keys)]
    composite = [{} if x is None else {f: x[f] for f in fields if f in x} for x in items]
    return [gofmt.duplicate(gofmt.index(path, i), composite[i]) for i in _non_unique(composite)]


def _array(path: str, s: Node, items: list[Any]) -> list[Cause]:
    causes: list[Cause] = []
    if s.list_type == "set":
        causes.extend(gofmt.duplicate(gofmt.index(path, i), items[i]) for i in _non_unique(items))
    elif s.list_type == "map":
        causes.extend(_list_map(path, s, items))
    if s.items is not None:
        for i, item in enumerate(items):
            causes.extend(_value(gofmt.index(path, i), s.items, item))
    return causes


def _value(path: str, s: Node, x: Any) -> list[Cause]:
    if isinstance(x, list):
        return _array(path, s, x)
    if isinstance(x, dict):
        return validate_lists(path, s, x)
    return []


def validate_lists(path: str, s: Node | None, obj: dict[str, Any]) -> list[Cause]:
    """All set/map list violations inside ``obj`` (at field path ``path``, "" for the root)."""
    if s is None:
        return []
    causes: list[Cause] = []
    if s.additional is not None:
        for k, v in obj.items():
            causes.extend(_value(gofmt.key(path, k) if path else f"[{k}]", s.additional, v))
    for k, v in obj.items():
        sub = s.props.get(k)
        if sub is not None:
            causes.extend(_value(gofmt.child(path, k), sub, v))
    return causes
