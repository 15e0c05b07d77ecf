"""Server-side apply (``PATCH`` with ``application/apply-patch+yaml``): the merge and the field
ownership it records, as kube-apiserver's field manager computes them.

:func:`server_side_apply` follows the apiserver's layers, outermost first:

1. the applied object must be of the request's kind and version, and may not carry managedFields;
2. it must be convertible to a typed value (no unkeyable list items, no duplicate keys);
3. an object that has never been tracked first records everything it holds as
   ``before-first-apply`` (an Update entry), so earlier writers keep their fields;
4. structured-merge-diff's Apply: merge, replace the applier's set by the applied fields, prune
   what the applier applied before and no longer does (unless someone else owns it), then move
   ownership - a changed field owned by another manager is a conflict, or with ``force`` is taken;
5. server fields (name, uid, resourceVersion …) are never owned; the applier's entry is stamped
   when the object changed; Update entries are capped;
6. for the manager ``kubectl``, conflicts the last-applied annotation explains are forced and the
   annotation is kept in sync (:mod:`apiserver.ssa.lastapplied`).

The function is pure: the handler reads the live object, calls it inside its retry loop, then
validates and stores the result.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

from apimachinery.errors import StatusError, bad_request
from apiserver.fieldmanager import FieldSet, PathElement, UntrackableError, compare, values_equal
from apiserver.managedfields import (
    SERVER_FIELDS,
    OwnedFields,
    cap_update_managers,
    decode_managed_fields,
    encode_managed_fields,
    manager_identifier,
    update_managed_fields,
)
from apiserver.ssa.conflicts import conflict_error
from apiserver.ssa.lastapplied import KUBECTL, allowed_conflicts, sync_last_applied
from apiserver.ssa.typed import TypedError, TypedSchema, strip_nulls

BEFORE_FIRST_APPLY = "before-first-apply"
_STATUS = (PathElement.field("status"),)


class _Conflicts(Exception):
    def __init__(self, conflicts: dict[str, FieldSet]) -> None:
        super().__init__("apply conflicts")
        self.conflicts = conflicts


def _gvk(api_version: Any, kind: Any) -> str:
    """A GroupVersionKind as Go prints it: ``apps/v1, Kind=Deployment``, ``/v1, Kind=Pod``."""
    text = api_version if isinstance(api_version, str) else ""
    group, _, version = text.rpartition("/")
    return f"{group}/{version}, Kind={kind if isinstance(kind, str) else ''}"


def _describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}; {_gvk(obj.get('apiVersion'), obj.get('kind'))}"


def _internal(message: str) -> StatusError:
    # Upstream returns these as plain errors: a 500 with no reason.
    return StatusError(500, "", message)


def _expected_kind(live: Mapping[str, Any] | None, schema: Mapping[str, Any] | None, api_version: str) -> str:
    if live is not None and isinstance(live.get("kind"), str):
        return live["kind"]
    group, _, version = api_version.rpartition("/")
    for gvk in (schema or {}).get("x-kubernetes-group-version-kind") or ():
        if gvk.get("group", "") == group and gvk.get("version") == version:
            return str(gvk.get("kind") or "")
    return ""


def _check_request(live: Mapping[str, Any] | None, applied: Mapping[str, Any], api_version: str,
                   schema: Mapping[str, Any] | None) -> None:
    kind = _expected_kind(live, schema, api_version)
    if applied.get("apiVersion") != api_version or (kind and applied.get("kind") != kind):
        raise bad_request(f"invalid object type: {_gvk(applied.get('apiVersion'), applied.get('kind'))}")
    meta = applied.get("metadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("managedFields"), list):
        raise bad_request("metadata.managedFields must be nil")


def _scoped(applied: Mapping[str, Any], subresource: str, status_subresource: bool) -> dict[str, Any]:
    """The part of the applied configuration this request may own: the status through the status
    subresource; everything but the status through the main resource when there is a status
    subresource (the strategy's reset fields)."""
    if subresource == "status":
        return {"status": copy.deepcopy(applied["status"])} if "status" in applied else {}
    if subresource or status_subresource:
        return {k: copy.deepcopy(v) for k, v in applied.items() if k != "status"}
    return copy.deepcopy(dict(applied))


def _in_scope(fields: FieldSet, subresource: str, status_subresource: bool) -> FieldSet:
    if subresource == "status":
        return fields.under(_STATUS)
    if subresource or status_subresource:
        return fields.recursive_difference(FieldSet([_STATUS]))
    return fields


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return out


class _Applier:
    """One apply request: structured-merge-diff's ``Updater.Apply`` with the apiserver's field
    manager layers around it."""

    def __init__(self, base: dict[str, Any], config: dict[str, Any], *, manager: str, api_version: str,
                 now: str, schema: Mapping[str, Any] | None, defs: Mapping[str, dict], subresource: str,
                 status_subresource: bool) -> None:
        self.base = base
        self.config = config
        self.api_version = api_version
        self.now = now
        self.schema = schema
        self.defs = defs
        self.subresource = subresource
        self.status_subresource = status_subresource
        self.typed = TypedSchema(schema, defs)
        self.me = manager_identifier(manager, "Apply", api_version, subresource)

    def run(self, managed: dict[str, OwnedFields], force: bool) -> tuple[dict[str, Any], dict[str, OwnedFields]]:
        """The new object and the new ownership; raises _Conflicts."""
        managers = dict(managed)
        previous = managers.get(self.me)
        applied_set = _in_scope(self.typed.field_set(self.config), self.subresource, self.status_subresource)
        managers[self.me] = OwnedFields(applied_set, self.api_version, previous.time if previous else None)

        merged = self.typed.merge(self.base, self.config)
        if previous is not None and previous.fields:
            merged = self._prune(merged, managers, previous.fields)
        result = strip_nulls(merged)

        diff = compare(self.base, result, self.schema, self.defs)
        if self.subresource == "status":
            diff = diff.filtered(lambda p: p[:1] == _STATUS)
        elif self.subresource or self.status_subresource:
            diff = diff.filtered(lambda p: p[:1] != _STATUS)
        changed_fields = diff.added | diff.modified
        conflicts = {key: owned.fields & changed_fields for key, owned in managers.items() if key != self.me}
        conflicts = {key: fields for key, fields in conflicts.items() if fields}
        if conflicts and not force:
            raise _Conflicts(conflicts)

        for key, owned in list(managers.items()):
            if key == self.me:
                continue
            kept = owned.fields - conflicts.get(key, FieldSet()) - diff.removed
            if kept:
                managers[key] = OwnedFields(kept, owned.api_version, owned.time)
            else:
                del managers[key]

        changed = not values_equal(self.base, result)
        # The server's own fields are owned by no one (they were owned while pruning, so that
        # nothing removed them).
        mine = applied_set - SERVER_FIELDS
        if mine:
            time = self.now if changed else (previous.time if previous else None)
            managers[self.me] = OwnedFields(mine, self.api_version, time)
        else:
            del managers[self.me]
        cap_update_managers(managers)
        # Unchanged: the live object as it was (upstream returns a copy of it).
        return (result if changed else copy.deepcopy(self.base)), managers

    def _prune(self, merged: dict[str, Any], managers: Mapping[str, OwnedFields], last: FieldSet) -> dict[str, Any]:
        """Remove what the applier applied last time and not now, unless someone owns it: drop
        everything last applied, add back what anyone (the new configuration included) owns,
        then add back whatever the applier did not own before (unowned or defaulted fields)."""
        if (last - managers[self.me].fields).empty:
            # Nothing applied last time is missing now: whatever the first step removed, the applier owns
            # again (its set holds every parent of its fields), so the result is ``merged``. The syncer's
            # re-apply of a changed object takes this path on every change.
            return merged
        typed = self.typed
        last_named = typed.ensure_named_fields(last)
        pruned = typed.remove_items(merged, last_named)

        owned = FieldSet()
        for entry in managers.values():
            owned = owned | entry.fields
        merged_named = typed.ensure_named_fields(typed.field_set(merged))
        kept = typed.ensure_named_fields(typed.field_set(pruned)) | typed.ensure_named_fields(owned)
        pruned = typed.remove_items(merged, merged_named - kept)

        dropped = merged_named - typed.ensure_named_fields(typed.field_set(pruned))
        return typed.remove_items(merged, dropped & last_named)


def _before_first_apply(base: dict[str, Any], *, api_version: str, now: str, schema: Mapping[str, Any] | None,
                        defs: Mapping[str, dict], subresource: str, status_subresource: bool) -> dict[str, OwnedFields]:
    """Ownership of an untracked object: everything it holds, as an Update by ``before-first-apply``
    against the kind's zero value."""
    obj = copy.deepcopy(base)
    # The schema object itself, not a copy: the zero value is cached per schema object.
    update_managed_fields(None, obj, BEFORE_FIRST_APPLY, api_version, now, cast("dict[str, Any] | None", schema),
                          defs, subresource, status_subresource=status_subresource)
    return decode_managed_fields(obj.get("metadata", {}).get("managedFields")) or {}


def server_side_apply(live: Mapping[str, Any] | None, applied: Mapping[str, Any], *, manager: str, force: bool,
                      api_version: str, now: str, schema: Mapping[str, Any] | None, defs: Mapping[str, dict],
                      status_subresource: bool, subresource: str = "") -> dict[str, Any]:
    """Return the new object (with metadata.managedFields updated) for an apply-patch request.

    ``live`` is the stored object (None to create one: the result is then the body to create);
    ``applied`` the request body; ``manager`` the non-empty field manager; ``api_version`` the
    version of the request (and of the applier's entry); ``now`` the RFC 3339 time to stamp;
    ``schema``/``defs`` the kind's schema and the definitions it refers to. Raises StatusError:
    400 for a body of another kind or with managedFields, 409 ``Conflict`` with
    ``FieldManagerConflict`` causes, 500 (no reason) for lists that cannot be keyed. Neither
    argument is modified and the result shares nothing with them.
    """
    if not isinstance(applied, Mapping):
        raise bad_request("the apply configuration must be a JSON object")
    _check_request(live, applied, api_version, schema)
    typed = TypedSchema(schema, defs)
    try:
        typed.validate(applied, allow_duplicates=False)
    except TypedError as err:
        raise _internal(f"failed to create typed patch object ({_describe(applied)}): {err}") from None

    if live is None:
        base: dict[str, Any] = {}
        managed: dict[str, OwnedFields] | None = {}
    else:
        base = _without_managed_fields(live)
        try:
            typed.validate(base, allow_duplicates=True)
        except TypedError as err:
            raise _internal(f"failed to create typed live object ({_describe(live)}): {err}") from None
        managed = decode_managed_fields((live.get("metadata") or {}).get("managedFields"))
        if managed is None:
            raise _internal("failed to decode managed fields: invalid metadata.managedFields")
        if not managed:
            managed = _before_first_apply(base, api_version=api_version, now=now, schema=schema, defs=defs,
                                          subresource=subresource, status_subresource=status_subresource)

    applier = _Applier(base, _scoped(applied, subresource, status_subresource), manager=manager,
                       api_version=api_version, now=now, schema=schema, defs=defs, subresource=subresource,
                       status_subresource=status_subresource)
    try:
        try:
            result, owners = applier.run(managed, force)
        except _Conflicts as err:
            if manager != KUBECTL or live is None:
                raise
            allowed = allowed_conflicts(base, api_version, typed, schema, defs)
            if allowed is None:
                raise
            remaining = {key: fields - allowed for key, fields in err.conflicts.items()}
            remaining = {key: fields for key, fields in remaining.items() if fields}
            if remaining:
                raise _Conflicts(remaining) from None
            result, owners = applier.run(managed, True)
    except _Conflicts as err:
        raise conflict_error(err.conflicts) from None
    except UntrackableError as err:
        raise _internal(f"failed to update managed fields ({_describe(applied)}): {err}") from None

    meta = result.setdefault("metadata", {})
    entries = encode_managed_fields(owners)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    if manager == KUBECTL:
        sync_last_applied(result, applied)
    return result
