"""The apiserver's side of kubectl's move from client-side to server-side apply.

Both steps apply only to the field manager ``kubectl`` (kubectl's default for ``--server-side``):

* :func:`allowed_conflicts` - fields that ``kubectl.kubernetes.io/last-applied-configuration``
  says the client-side applier set to the value they still have; conflicts on those are forced,
  so the first server-side apply of a client-side applied object does not conflict with
  ``kubectl-client-side-apply``;
* :func:`sync_last_applied` - after a successful apply the annotation, when the object keeps one,
  is rewritten to the applied configuration, so a later client-side apply still diffs correctly.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from apiserver.fieldmanager import FieldSet, UntrackableError, compare, go_json
from apiserver.ssa.typed import TypedError, TypedSchema

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL = "kubectl"
# apimachinery's TotalAnnotationSizeLimitB; an annotation that would exceed it is dropped instead.
_ANNOTATIONS_SIZE_LIMIT = 256 * 1024


def _last_applied(obj: Mapping[str, Any]) -> str:
    annotations = (obj.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, Mapping):
        return ""
    value = annotations.get(LAST_APPLIED)
    return value if isinstance(value, str) else ""


def allowed_conflicts(live: Mapping[str, Any], api_version: str, typed: TypedSchema,
                      schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> FieldSet | None:
    """The fields of the live object's last-applied configuration whose value the object still
    has; None when there is no usable annotation."""
    text = _last_applied(live)
    if not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return None
    try:
        typed.validate(live, allow_duplicates=False)
        typed.validate(last, allow_duplicates=False)
        fields = typed.field_set(last)
        diff = compare(last, live, schema, defs)
    except (TypedError, UntrackableError):
        return None
    return fields - diff.modified - diff.added - diff.removed


def build_last_applied(applied: Mapping[str, Any]) -> str:
    """The annotation's value for ``applied``: the object without the annotation, as Go encodes
    unstructured objects (sorted keys, trailing newline)."""
    obj = copy.deepcopy(dict(applied))
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "annotations" in meta:
        annotations = meta["annotations"]
        if isinstance(annotations, dict):
            meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
        else:
            del meta["annotations"]
    return go_json(obj) + "\n"


def sync_last_applied(result: dict[str, Any], applied: Mapping[str, Any]) -> None:
    """Rewrite the annotation of ``result`` (in place) from ``applied`` if ``result`` has one."""
    if not _last_applied(result):
        return
    annotations = result["metadata"]["annotations"]
    annotations[LAST_APPLIED] = build_last_applied(applied)
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items() if isinstance(v, str))
    if size > _ANNOTATIONS_SIZE_LIMIT:
        del annotations[LAST_APPLIED]
        if not annotations:
            del result["metadata"]["annotations"]
