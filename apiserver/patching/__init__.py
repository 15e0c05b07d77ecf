"""PATCH bodies: the three patch types a kube-apiserver applies, as pure functions.

Owns decoding a PATCH body for its media type and applying it to the current object:
JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch (built-in kinds only).
Server-side apply (``application/apply-patch+yaml``) is not a patch in this sense; the HTTP handler
routes it elsewhere before calling :func:`apply_patch`. Nothing here does I/O or touches the store:
the handler owns preconditions, admission, validation and persistence of the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from apimachinery.errors import StatusError, unsupported_media_type
from apiserver.definitions import load_definitions
from apiserver.patching.failures import malformed
from apiserver.patching.json_patch import apply_json_patch
from apiserver.patching.merge_patch import apply_merge_patch
from apiserver.patching.ordering import kind
from apiserver.patching.strategic import apply_strategic_merge
from apiserver.resourcetypes import ResourceType

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_patch",
    "apply_strategic_merge",
    "patch_media_types",
]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def patch_media_types(rtype: ResourceType) -> tuple[str, ...]:
    """The PATCH media types a kind accepts, in the order the kube-apiserver lists them."""
    if rtype.strategic_merge:
        return JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH
    return JSON_PATCH, MERGE_PATCH, APPLY_PATCH


def apply_patch(current: dict[str, Any], body: bytes, content_type: str,
                rtype: ResourceType) -> dict[str, Any]:
    """Return the patched object (never mutate `current`)."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == STRATEGIC_MERGE_PATCH and not rtype.strategic_merge:
        # Custom resources have no patch metadata; kube refuses the type outright, and kubectl relies
        # on this 415 to fall back to a merge patch.
        raise _not_accepted(rtype)
    apply = _APPLIERS.get(media_type)
    if apply is None:
        raise unsupported_media_type(content_type)
    try:
        return apply(current, body, rtype)
    except RecursionError:
        raise malformed("the patch or the object is nested too deeply") from None


def _not_accepted(rtype: ResourceType) -> StatusError:
    return StatusError(415, "UnsupportedMediaType",
                       "the body of the request was in an unknown format - accepted media types include: "
                       + ", ".join(patch_media_types(rtype)))


def _json_patch(current: dict[str, Any], body: bytes, rtype: ResourceType) -> dict[str, Any]:
    return apply_json_patch(current, _decode(body, list, "json patch"))


def _merge_patch(current: dict[str, Any], body: bytes, rtype: ResourceType) -> dict[str, Any]:
    return apply_merge_patch(current, _decode(body, dict, "merge patch"))


def _strategic_merge_patch(current: dict[str, Any], body: bytes, rtype: ResourceType) -> dict[str, Any]:
    patch = _decode(body, dict, "strategic merge patch")
    defs = load_definitions()
    schema = defs.get(rtype.schema_name) if rtype.schema_name else None
    return apply_strategic_merge(current, patch, schema, defs)


def _decode(body: bytes, expected: type, what: str) -> Any:
    try:
        value = orjson.loads(body)
    except (orjson.JSONDecodeError, TypeError) as e:
        raise malformed(f"the {what} is not valid JSON: {e}") from None
    if not isinstance(value, expected):
        wanted = "array of operations" if expected is list else "object"
        raise malformed(f"the {what} must be a JSON {wanted}, not {_article(kind(value))}")
    return value


def _article(value_kind: str) -> str:
    names = {"map": "an object", "list": "an array", "null": "null"}
    return names.get(value_kind, f"a {value_kind}")


_APPLIERS: dict[str, Callable[[dict[str, Any], bytes, ResourceType], dict[str, Any]]] = {
    JSON_PATCH: _json_patch,
    MERGE_PATCH: _merge_patch,
    STRATEGIC_MERGE_PATCH: _strategic_merge_patch,
}
