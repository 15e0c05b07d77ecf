"""What a write's ``fieldValidation`` does with a body's unknown fields, as kube-apiserver's decoder does: refuse
them (``Strict``: a 400, or a 422 for a patch), warn of them (``Warn``) or drop them silently (``Ignore``); and a
built-in kind's type errors, always a 400.

The checks themselves are ``fieldvalidation`` (built-in kinds) and ``crdschema``'s pruning (custom resources);
this module only decides what each mode makes of their answer. It never writes.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from apimachinery import errors
from apimachinery.errors import Cause, StatusError
from apiserver.catalog import Catalog
from apiserver.crdschema import prune
from apiserver.fieldvalidation import check
from apiserver.resourcetypes import ResourceType
from apiserver.schemamemo import MISSING, SchemaMemo

_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


# Built-in kinds' bodies found clean (no unknown field, no type error), by their JSON and kind: the same body is
# clean again, unchanged. A new space's 23 default objects are the same body in every space (their names and
# namespaces included; uids and timestamps come later), each walked in ~11 µs.
_CLEAN: SchemaMemo[bool] = SchemaMemo(256)
_CLEAN_MAX_BYTES = 16_384


def _content(obj: dict[str, Any]) -> bytes | None:
    """``obj``'s JSON as the memo's key: None when it cannot be one (too large, not JSON's types) or might stand
    for another body: orjson writes NaN and infinities as ``null``, and a null field is not checked, a NaN is."""
    try:
        text = orjson.dumps(obj)
    except TypeError:
        return None
    return None if len(text) > _CLEAN_MAX_BYTES or b"null" in text else text


def check_fields(catalog: Catalog, rtype: ResourceType, obj: dict[str, Any], field_validation: str,
                 warnings: list[str], *, patch: bool) -> None:
    """Check ``obj`` as ``field_validation`` (Strict | Warn | Ignore) asks; unknown fields not refused are removed
    and, with Warn, added to ``warnings``. Raises a StatusError for what the mode refuses."""
    if rtype.schema is not None:
        unknown = prune(obj, rtype.schema)  # custom resources: pruned whatever the mode
    else:
        schema = catalog.schema(rtype)
        if schema is None:
            return
        defs = catalog.definitions()
        content = _content(obj)
        key = None if content is None else (content, rtype.kind)
        if key is not None and _CLEAN.get(key, schema, defs) is not MISSING:
            return
        unknown, problems = check(obj, schema, defs, rtype.kind)  # both in one walk
        if problems:
            # kube's decoder stops at the first type error and reports it this way.
            raise errors.bad_request(f'{rtype.kind} in version "{rtype.version}" cannot be handled as a '
                                     f"{rtype.kind}: {problems[0]}")
        if not unknown and key is not None:
            _CLEAN.put(key, schema, defs, True)
        if field_validation != "Strict":
            prune_paths(obj, unknown)
    if not unknown or field_validation == "Ignore":
        return
    if field_validation == "Warn":
        warnings.extend(f'unknown field "{p}"' for p in unknown)
        return
    listed = ", ".join(f'unknown field "{p}"' for p in unknown)
    if patch:
        raise StatusError(422, "Invalid", f"strict decoding error: {listed}",
                          name=obj.get("metadata", {}).get("name", ""), group=rtype.group, kind=rtype.kind,
                          causes=[Cause("FieldValueInvalid", f'unknown field "{p}"', p) for p in unknown])
    raise errors.bad_request(f"strict decoding error: {listed}")


def prune_paths(obj: dict[str, Any], paths: list[str]) -> None:
    """Remove the fields named by strict-decoding paths (``spec.containers[0].foo``)."""
    for path in paths:
        tokens = [(m.group(1), m.group(2)) for m in _PATH_TOKEN.finditer(path)]
        node: Any = obj
        for i, (name, index) in enumerate(tokens):
            last = i == len(tokens) - 1
            if index is not None:
                idx = int(index)
                if not isinstance(node, list) or idx >= len(node):
                    break
                node = node[idx]
            elif isinstance(node, dict) and name in node:
                if last:
                    del node[name]
                else:
                    node = node[name]
            else:
                break
