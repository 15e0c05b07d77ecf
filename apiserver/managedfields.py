"""``metadata.managedFields`` as kube-apiserver records it for Update operations (creates included).

Owns the entries — who an entry is (:func:`manager_identifier`), their wire form (:func:`decode_managed_fields`,
:func:`encode_managed_fields`), the cap on Update managers (:func:`cap_update_managers`), all shared with
server-side apply — and :func:`update_managed_fields`, the apiserver's Update pipeline (decode live-or-request
managed fields, diff, move ownership, strip server fields, cap the number of updaters, encode). Which paths a write
adds, modifies and removes is :mod:`apiserver.fieldmanager`'s typed diff.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson

from apimachinery.fieldpath import FieldSet, Path, PathElement, go_json_string
from apiserver.fieldmanager import Comparison, UntrackableError, compare, shape_of, zero_value
from apiserver.schemamemo import MISSING, SchemaMemo

MAX_UPDATE_MANAGERS = 10
_ANCIENT_CHANGES = "ancient-changes"


@dataclass(frozen=True)
class OwnedFields:
    """One managedFields entry's fields, version and time (its manager identity is the key)."""

    fields: FieldSet
    api_version: str
    time: str | None


# Pure and called on every write with few distinct arguments: both kept (bounded).
@lru_cache(maxsize=1024)
def manager_identifier(manager: str, operation: str, api_version: str, subresource: str) -> str:
    """The apiserver's manager identity: the entry without fields and time (and without the
    version for Apply), as JSON in Go field order."""
    entry: dict[str, str] = {"manager": manager, "operation": operation}
    if operation != "Apply" and api_version:
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return "{" + ",".join(f"{go_json_string(k)}:{go_json_string(v)}" for k, v in entry.items() if v) + "}"


def decode_managed_fields(entries: Any) -> dict[str, OwnedFields] | None:
    """Managed fields by manager identity; None when any entry is malformed."""
    if entries is None:
        return {}
    if not isinstance(entries, list):
        return None
    out: dict[str, OwnedFields] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            return None
        operation = entry.get("operation")
        api_version = entry.get("apiVersion")
        if operation not in ("Apply", "Update") or not api_version or entry.get("fieldsType") != "FieldsV1":
            return None
        try:
            fields = FieldSet.from_fields_v1(entry.get("fieldsV1") or {})
        except (ValueError, TypeError):
            return None
        key = manager_identifier(str(entry.get("manager") or ""), operation, api_version,
                          str(entry.get("subresource") or ""))
        out[key] = OwnedFields(fields, api_version, entry.get("time"))
    return out


@lru_cache(maxsize=1024)
def _identity(key: str) -> dict[str, str]:
    """A manager identity's fields; shared: not to be changed."""
    return orjson.loads(key)


def encode_managed_fields(managed: Mapping[str, OwnedFields]) -> list[dict[str, Any]]:
    entries = []
    for key, owned in managed.items():
        ident = _identity(key)
        entry: dict[str, Any] = {"manager": ident.get("manager", ""), "operation": ident["operation"],
                                 "apiVersion": owned.api_version}
        if owned.time:
            entry["time"] = owned.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = owned.fields.to_fields_v1()
        if ident.get("subresource"):
            entry["subresource"] = ident["subresource"]
        entries.append(entry)
    if len(entries) > 1:
        entries.sort(key=lambda e: (e["operation"], _seconds(e.get("time")), e["manager"], e["apiVersion"],
                                    e.get("subresource", "")))
    return entries


def _seconds(time: Any) -> int:
    if not isinstance(time, str):
        return 0
    try:
        return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


def cap_update_managers(managed: dict[str, OwnedFields]) -> None:
    """Fold the oldest Update managers into one ``ancient-changes`` entry per version, keeping at
    most MAX_UPDATE_MANAGERS of them (the apiserver's cap)."""
    if len(managed) <= MAX_UPDATE_MANAGERS:  # the common case, without parsing a key
        return
    updaters = [k for k in managed if _identity(k)["operation"] == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (_seconds(managed[k].time), k))
    first_by_version: dict[str, str] = {}
    remaining = len(updaters)
    for key in updaters:
        if remaining <= MAX_UPDATE_MANAGERS:
            break
        owned = managed[key]
        version = owned.api_version
        bucket = manager_identifier(_ANCIENT_CHANGES, "Update", version, "")
        if version not in first_by_version:
            first_by_version[version] = key
            continue
        if bucket not in managed:
            managed[bucket] = managed.pop(first_by_version[version])
        managed[bucket] = OwnedFields(owned.fields | managed[bucket].fields, version, owned.time)
        del managed[key]
        remaining -= 1


# ----------------------------------------------------------------------------------------------
# managedFields


def _f(*names: str) -> Path:
    return tuple(PathElement.field(n) for n in names)


# Never owned by anyone (the fieldmanager's "strip meta" step); removed as members only, so owning
# metadata.labels is unaffected by stripping metadata.
SERVER_FIELDS = FieldSet([
    _f("apiVersion"), _f("kind"), _f("metadata"), _f("metadata", "name"), _f("metadata", "namespace"),
    _f("metadata", "creationTimestamp"), _f("metadata", "selfLink"), _f("metadata", "uid"),
    _f("metadata", "clusterName"), _f("metadata", "generation"), _f("metadata", "managedFields"),
    _f("metadata", "resourceVersion"),
])
_STATUS = _f("status")


def _is_reset(sent: Any) -> bool:
    """``managedFields: []`` or ``[{}]`` in a request clears the recorded ownership."""
    if not isinstance(sent, list):
        return False
    if not sent:
        return True
    return len(sent) == 1 and isinstance(sent[0], Mapping) and all(v in (None, "") for v in sent[0].values())


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def _owned(diff: Comparison, subresource: str, status_subresource: bool) -> tuple[Comparison, FieldSet, FieldSet]:
    """Of a write's diff, what the resource (or subresource) written may own: that diff, the paths it added or
    changed, and those of them its manager owns (all but the server's fields)."""
    if subresource == "status":
        diff = diff.filtered(lambda p: p[:1] == _STATUS)
    elif not subresource and status_subresource:
        diff = diff.filtered(lambda p: p[:1] != _STATUS)
    changed = diff.added | diff.modified
    return diff, changed, changed - SERVER_FIELDS


# A create's diff is against the kind's zero value, so it depends on the new object's shape alone
# (``fieldmanager.shape_of``): the next create of an object of the same shape and kind reuses it,
# FieldSets and their FieldsV1 encoding included. A create's managedFields were ~12 % of a
# ConfigMap create's CPU and a quarter of a space create's (its 23 default objects alike in every
# space). Keyed by (shape, subresource, status_subresource); None for an untrackable object.
_CREATED: SchemaMemo[tuple[Comparison, FieldSet, FieldSet] | None] = SchemaMemo(512)


def _created(new: Mapping[str, Any], schema: Mapping[str, Any] | None, defs: Mapping[str, dict], subresource: str,
             status_subresource: bool) -> tuple[Comparison, FieldSet, FieldSet]:
    """``_owned`` of a create of ``new`` (raises UntrackableError), kept by its shape."""
    shape = shape_of(new)
    if shape is None:
        return _owned(compare(zero_value(schema, defs), new, schema, defs), subresource, status_subresource)
    key = (shape, subresource, status_subresource)
    try:
        hit = _CREATED.get(key, schema, defs)
    except TypeError:  # a list holding a value that is not JSON's and cannot be hashed: not kept
        return _owned(compare(zero_value(schema, defs), new, schema, defs), subresource, status_subresource)
    if hit is MISSING:
        try:
            hit = _owned(compare(zero_value(schema, defs), new, schema, defs), subresource, status_subresource)
        except UntrackableError:
            hit = None
        _CREATED.put(key, schema, defs, hit)
    if hit is None:
        raise UntrackableError("an object of this shape cannot be expressed as field paths")
    return hit


def update_managed_fields(old: Mapping[str, Any] | None, new: dict[str, Any], manager: str, api_version: str,
                          now: str, schema: dict[str, Any] | None, defs: Mapping[str, dict],
                          subresource: str = "", *, status_subresource: bool = True) -> None:
    """Record an Update (or create, ``old`` None) by ``manager`` in ``new["metadata"]["managedFields"]``.

    Fields the write adds or changes move to ``manager`` (one entry per manager, operation,
    version and subresource, stamped ``now``); fields it removes leave every entry; empty entries
    disappear. The base is the request's managedFields when it carries any (a client may edit
    them), else the live object's; ``[]`` or ``[{}]`` resets them, and subresource writes always
    start from the live ones. An update of an object that has no managedFields stays untracked.
    With ``status_subresource`` the main resource never owns ``status`` and the status subresource
    owns nothing else.
    """
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        meta = new["metadata"] = {}
    live_meta = (old or {}).get("metadata") or {}
    live_entries = live_meta.get("managedFields")
    sent = meta.pop("managedFields", None)
    creating = not live_meta.get("uid")

    managed: dict[str, OwnedFields] | None
    if subresource:
        managed = decode_managed_fields(live_entries) or {}
    elif _is_reset(sent):
        managed = {}
    else:
        managed = decode_managed_fields(sent) or decode_managed_fields(live_entries) or {}
    if not managed and not creating:
        return

    try:
        if old is None:
            diff, changed, mine = _created(new, schema, defs, subresource, status_subresource)
        else:
            diff, changed, mine = _owned(compare(_without_managed_fields(old), new, schema, defs), subresource,
                                         status_subresource)
    except UntrackableError:
        if live_entries:
            meta["managedFields"] = live_entries
        return

    for key, owned in list(managed.items()):
        kept = owned.fields - changed - diff.removed
        if kept:
            managed[key] = OwnedFields(kept, owned.api_version, owned.time)
        else:
            del managed[key]

    if mine:
        me = manager_identifier(manager or "unknown", "Update", api_version, subresource)
        previous = managed.get(me)
        managed[me] = OwnedFields(mine | previous.fields if previous else mine, api_version, now)
    cap_update_managers(managed)
    if managed:
        meta["managedFields"] = encode_managed_fields(managed)
