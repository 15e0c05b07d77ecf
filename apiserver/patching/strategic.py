"""Strategic merge patch (``application/strategic-merge-patch+json``), with apimachinery's semantics.

This is the patch kubectl sends for built-in kinds (``kubectl patch``, ``apply``, ``edit``, ``set``,
``scale`` …). It is a JSON merge patch whose lists can merge instead of being replaced: the schema
says, per field, whether a list merges (``x-kubernetes-patch-strategy: merge``) and by which key its
map elements are identified (``x-kubernetes-patch-merge-key``). The walk mirrors upstream's
``mergeMap`` / ``mergeSlice``:

* maps merge recursively, ``null`` deletes a key, ``$patch: replace`` replaces the map and
  ``$patch: delete`` empties it; ``$retainKeys`` clears the keys it does not list;
* merging lists of maps match elements by merge key and merge them recursively; an element with
  ``$patch: delete`` removes its match, one with ``$patch: replace`` replaces the whole list;
* merging lists of scalars are unions, and ``$deleteFromPrimitiveList/<field>`` removes values;
* ``$setElementOrder/<field>`` fixes the order of the merged list;
* every other list is replaced, and where the schema says nothing the patch is a JSON merge patch.

Results are ordered as upstream orders them (see :mod:`apiserver.patching.ordering`).
"""

from __future__ import annotations

import copy
from typing import Any

from apiserver.definitions import Definitions
from apiserver.patching.directives import (
    DELETE,
    DELETE_FROM_PRIMITIVE_LIST,
    PATCH,
    REPLACE,
    RETAIN_KEYS,
    SET_ELEMENT_ORDER,
    check_key,
    check_patch_directive,
    directive_field,
    is_list_directive,
    new_value,
    raw_value,
)
from apiserver.patching.failures import malformed
from apiserver.patching.ordering import (
    MAP,
    element_kind,
    find_by_key,
    identity,
    merge_key_value,
    normalize,
    partition,
    same,
)
from apiserver.patching.patchmeta import MERGE, PatchMeta, SchemaNode
from apiserver.patching.patchmeta import REPLACE as REPLACE_STRATEGY

JSONMap = dict[str, Any]


def apply_strategic_merge(original: JSONMap, patch: JSONMap, schema: JSONMap | None,
                          defs: Definitions) -> JSONMap:
    """Apply a strategic merge patch; neither argument is modified.

    ``schema`` is the object's schema from ``defs`` (e.g. ``defs["io.k8s.api.apps.v1.Deployment"]``),
    or None to merge without any patch metadata.
    """
    if not isinstance(patch, dict):
        raise malformed("a strategic merge patch must be a JSON object")
    base = copy.deepcopy(original) if isinstance(original, dict) else {}
    return _merge_map(base, copy.deepcopy(patch), SchemaNode(schema, defs))


def _merge_map(original: JSONMap, patch: JSONMap, schema: SchemaNode) -> JSONMap:
    """Merge ``patch`` into ``original`` (both owned by the caller, both consumed)."""
    if PATCH in patch:
        return _map_directive(patch, schema)
    _retain_keys(original, patch)
    _set_element_orders(original, patch, schema)
    for key, value in patch.items():
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            _delete_from_primitive_list(original, directive_field(key, DELETE_FROM_PRIMITIVE_LIST), value)
        else:
            _merge_field(original, key, value, schema)
    return original


def _map_directive(patch: JSONMap, schema: SchemaNode) -> JSONMap:
    if check_patch_directive(patch[PATCH], patch) == DELETE:
        # Upstream answers an empty map, not a missing key; typed decoding then treats it as unset.
        return {}
    return raw_value(patch, schema)


def _merge_field(original: JSONMap, key: str, value: Any, schema: SchemaNode) -> None:
    check_key(key, schema)
    if value is None:
        original.pop(key, None)
        return
    child, meta = schema.field(key)
    current = original.get(key)
    if key in original and isinstance(current, dict) and isinstance(value, dict):
        if meta.strategy == REPLACE_STRATEGY and PATCH not in value:
            value = {**value, PATCH: REPLACE}
        original[key] = _merge_map(current, value, child)
    elif key in original and isinstance(current, list) and isinstance(value, list):
        original[key] = _merged_list_field(current, value, child, meta)
    else:
        # Nothing to merge with (new key, or a value of another JSON type): the patch value wins.
        keep, copied = new_value(value, child)
        if keep:
            original[key] = copied
        else:
            original.pop(key, None)


def _merged_list_field(live: list[Any], update: list[Any], schema: SchemaNode, meta: PatchMeta) -> list[Any]:
    if meta.strategy == MERGE:
        return _merge_list(live, update, schema.items(), meta.merge_key)
    return raw_value(update, schema)


def _merge_list(live: list[Any], update: list[Any], items: SchemaNode, merge_key: str) -> list[Any]:
    if not live and not update:
        return live
    if element_kind(live, update) != MAP:
        if merge_key:
            raise malformed(f"expected maps in a list merged by {merge_key!r}, got scalars")
        merged = _union(live, update)
        return normalize(*partition(merged, update, ""), update, live, "")
    if not merge_key:
        raise malformed("cannot merge lists of maps without a merge key")
    live, plain, replaced = _special_elements(live, update, merge_key)
    if replaced:
        live = [raw_value(item, items) for item in plain]
        plain = []
    merged = _merge_by_key(list(live), plain, merge_key, items)
    in_patch, server_only = partition(merged, plain, merge_key)
    return normalize(in_patch, server_only, plain, live, merge_key)


def _union(live: list[Any], update: list[Any]) -> list[Any]:
    seen: set[tuple[str, Any] | None] = set()
    out = []
    for item in (*live, *update):
        key = identity(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _special_elements(live: list[Any], update: list[Any],
                      merge_key: str) -> tuple[list[Any], list[Any], bool]:
    """Apply ``$patch: delete`` elements; returns (live, elements without directives, replace?)."""
    plain: list[Any] = []
    replaced = False
    for item in update:
        if PATCH not in item:
            plain.append(item)
        elif check_patch_directive(item[PATCH], item, in_list=True) == DELETE:
            gone = merge_key_value(item, merge_key)
            live = [e for e in live if not (merge_key in e and same(e[merge_key], gone))]
        else:
            replaced = True
    return live, plain, replaced


def _merge_by_key(live: list[Any], plain: list[Any], merge_key: str, items: SchemaNode) -> list[Any]:
    for item in plain:
        at = find_by_key(live, merge_key, merge_key_value(item, merge_key))
        if at >= 0:
            live[at] = _merge_map(live[at], item, items)
            continue
        live.append(raw_value(item, items))
    return live


def _retain_keys(original: JSONMap, patch: JSONMap) -> None:
    if RETAIN_KEYS not in patch:
        return
    retained = patch.pop(RETAIN_KEYS)
    if not isinstance(retained, list) or not all(isinstance(k, str) for k in retained):
        raise malformed("invalid patch format of retainKeys: $retainKeys must be a list of field names")
    allowed = set(retained)
    for key, value in patch.items():
        if value is not None and not is_list_directive(key) and key not in allowed:
            raise malformed(f"invalid patch format of retainKeys: {key!r} is patched but not in $retainKeys")
    for key in [k for k in original if k not in allowed]:
        del original[key]


def _set_element_orders(original: JSONMap, patch: JSONMap, schema: SchemaNode) -> None:
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        field = directive_field(key, SET_ELEMENT_ORDER)
        if not isinstance(order, list):
            raise malformed(f"invalid patch format of setElementOrder list: {key!r} must be a list")
        _order_field(original, patch, field, order, schema)


def _order_field(original: JSONMap, patch: JSONMap, field: str, order: list[Any], schema: SchemaNode) -> None:
    """Merge ``field`` now (the patch list goes with its order directive) and put it in ``order``."""
    live = original.get(field)
    update = patch.get(field)
    if not isinstance(live, list | None) or not isinstance(update, list | None):
        raise malformed(f"$setElementOrder/{field} applies to a list, but {field!r} is not one")
    if update is not None:
        # Merged here with its order; a null stays in the patch and deletes the field afterwards.
        del patch[field]
    child, meta = schema.field(field)
    _check_order(update or [], order, meta.merge_key, field)
    if live is not None and update is not None:
        merged = _merged_list_field(live, update, child, meta)
    elif update is not None:
        merged = new_value(update, child)[1]
    elif live is not None:
        merged = live
    else:
        return
    elements = element_kind(live or [], update or [])
    if elements == MAP and not meta.merge_key:
        raise malformed(f"$setElementOrder/{field}: the list has no merge key to order its elements by")
    if elements is not None:
        server_order = _live_order_seen_upstream(live or [], update or [], meta)
        merged = normalize(*partition(merged, order, meta.merge_key), order, server_order, meta.merge_key)
    original[field] = merged


def _live_order_seen_upstream(live: list[Any], update: list[Any], meta: PatchMeta) -> list[Any]:
    """The live list as upstream's ``$setElementOrder`` step reads it, after merging in place.

    Upstream deletes merge-key elements by shifting the rest left inside the live slice's array and
    then appends new elements into the freed slots, so the "live order" it later consults already
    holds the new elements where the deleted ones were. That decides where server-only elements land
    relative to new ones, so it is reproduced here rather than the untouched live list.
    """
    if meta.strategy != MERGE or not meta.merge_key or not live or element_kind(live, update) != MAP:
        return live
    key = meta.merge_key
    slots = list(live)
    used = len(slots)
    replaced = False
    for item in update:
        if PATCH not in item:
            continue
        if item[PATCH] != DELETE:
            replaced = True
            continue
        gone = merge_key_value(item, key)
        while (at := find_by_key(slots[:used], key, gone)) >= 0:
            slots[at:used - 1] = slots[at + 1:used]
            used -= 1
    if replaced:
        return slots
    current = slots[:used]
    for item in update:
        if PATCH in item or find_by_key(current, key, merge_key_value(item, key)) >= 0:
            continue
        current.append(item)
        if used < len(slots):
            slots[used] = item
            used += 1
    return slots


def _check_order(update: list[Any], order: list[Any], merge_key: str, field: str) -> None:
    """The patch list must name its elements in the same relative order as ``$setElementOrder``."""
    if not order or not update:
        return
    if merge_key:
        update = [item for item in update if not (isinstance(item, dict) and item.get(PATCH) == DELETE)]
    p = s = 0
    while p < len(update) and s < len(order):
        if isinstance(update[p], dict) and PATCH in update[p]:
            p += 1
            continue
        if _same_element(update[p], order[s], merge_key):
            p += 1
        s += 1
    if p < len(update):
        raise malformed(f"the order in patch list {field!r} doesn't match $setElementOrder/{field} list")


def _same_element(left: Any, right: Any, merge_key: str) -> bool:
    if merge_key:
        return same(merge_key_value(left, merge_key), merge_key_value(right, merge_key))
    return same(left, right)


def _delete_from_primitive_list(original: JSONMap, field: str, values: Any) -> None:
    if values is None:
        # Upstream deletes the whole field for a null parallel list; mirror it.
        original.pop(field, None)
        return
    live = original.get(field)
    if not isinstance(live, list) or not isinstance(values, list) or not (live or values):
        return
    if element_kind(live, values) == MAP:
        raise malformed(f"invalid patch format of primitive list: {field!r} holds maps")
    drop = {identity(v) for v in values}
    original[field] = [item for item in live if identity(item) not in drop]
