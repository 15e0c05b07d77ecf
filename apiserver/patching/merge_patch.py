"""JSON merge patch (RFC 7386, ``application/merge-patch+json``).

Objects merge recursively, ``null`` removes a key, and every other value (lists included) replaces
what was there. This is also what a strategic merge patch falls back to where the schema says
nothing, and the only merge patch custom resources accept.
"""

from __future__ import annotations

import copy
from typing import Any

from apiserver.patching.failures import malformed


def apply_merge_patch(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply a merge patch to an object; neither argument is modified."""
    if not isinstance(patch, dict):
        raise malformed("a merge patch must be a JSON object")
    return _merge(copy.deepcopy(current), copy.deepcopy(patch))


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        # RFC 7386: patching a non-object with an object starts from an empty object, so nested
        # nulls in newly added objects disappear instead of being stored.
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value)
    return target
