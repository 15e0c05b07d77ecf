"""Generic object operations shared by every kind: kube-apiserver's generic registry store.

Create, update, patch, apply, delete and delete-collection (the reads they build on are
``apiserver.objectreads``) with resourceVersion preconditions,
optimistic-concurrency retries, finalizers and ``deletionTimestamp``, generation, managedFields,
strict field validation and dry-run. Kind-specific rules come from the type's Strategy; the HTTP
layer only decodes requests and encodes answers. Controllers (namespaces, garbage collection,
spaces) use this same service, so every write follows the same rules whoever makes it.
"""

from __future__ import annotations

import copy
import dataclasses
import secrets
from collections.abc import Awaitable, Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from apimachinery import errors
from apimachinery.errors import Cause, StatusError
from apimachinery.names import validate_annotations, validate_labels, validate_object_name
from apiserver.apply import server_side_apply
from apiserver.catalog import Catalog
from apiserver.managedfields import update_managed_fields
from apiserver.objectreads import ObjectReads
from apiserver.patching import apply_patch
from apiserver.resourcetypes import ResourceType, stored
from apiserver.store import LogRow, LogStore, PreconditionFailed, Write, Writer
from apiserver.store.writer import MUST_NOT_EXIST
from apiserver.strictdecoding import check_fields
from apiserver.watch import WatchBus, decode_object
from apiserver.writeoptions import Creation, DeleteOptions, WriteOptions, new_uid, now_rfc3339

T = TypeVar("T")
AdmitHook = Callable[[str, "ResourceType", str, dict[str, Any] | None, dict[str, Any] | None, "WriteOptions", str],
                     Awaitable[None]]

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_UPDATE_RETRIES = 16


def _strip_for_compare(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Objects(ObjectReads):
    def __init__(self, store: LogStore, writer: Writer, bus: WatchBus, catalog: Catalog,
                 executor: ThreadPoolExecutor) -> None:
        super().__init__(store, bus, executor)
        self.writer = writer
        self.catalog = catalog
        self.after_create: dict[str, list[Callable[[str, dict[str, Any]], Awaitable[None]]]] = {}
        # Checks of a new object that need to know its space (a Space's place in the tree), by group_resource;
        # each raises a StatusError to refuse the create. They run after validation, before admission.
        self.before_create: dict[str, list[Callable[[str, dict[str, Any]], None]]] = {}
        # Checks before a delete that need the object's space and may read the store (an APIBinding whose
        # resources still have objects), by group_resource; each raises a StatusError to refuse the delete.
        self.before_delete: dict[str, list[Callable[[str, dict[str, Any]], Awaitable[None]]]] = {}
        # Namespace and space lookups on every namespaced create must not cost a SQL query each;
        # these are kept current by the namespace/space index (see spaces.indexes).
        self.namespace_phase: Callable[[str, str], str | None] = lambda _space, _ns: "Active"
        # Admission (ValidatingAdmissionPolicies) after validation, before a write; set by the hub.
        self.admit: AdmitHook | None = None
        # Mutating admission (webhooks) before defaulting and validation: it may change the object in place.
        self.mutate: AdmitHook | None = None
        # Admission of a delete (webhooks; they see the object as oldObject and may only refuse).
        self.admit_delete: AdmitHook | None = None

    async def _stored(self, rtype: ResourceType, obj: dict[str, Any]) -> bytes:
        """The bytes to store for an object in ``rtype``'s version: converted to the storage version first."""
        return stored(rtype, await self.converter.to_storage(rtype, obj))

    # --- validation shared by create and update -----------------------------------------------

    async def _validate(self, rtype: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj["metadata"]
        causes: list[Cause] = []
        if old is None:
            for msg in validate_object_name(meta.get("name", ""), rtype.strategy.name_rule):
                causes.append(Cause("FieldValueInvalid", f'Invalid value: "{meta.get("name", "")}": {msg}',
                                    "metadata.name"))
        causes.extend(validate_labels(meta.get("labels")))
        causes.extend(validate_annotations(meta.get("annotations")))
        check = partial(rtype.strategy.validate, obj) if old is None else \
            partial(rtype.strategy.validate_update, obj, old)
        # CEL rules can be expensive: they run in a worker thread so the event loop keeps serving.
        causes.extend(await self.run_sync(check) if rtype.offload_validation else check())
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, meta.get("name", ""), causes)

    def _check_type_meta(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if (api_version and api_version != rtype.api_version) or (kind and kind != rtype.kind):
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({rtype.api_version})" if api_version != rtype.api_version else
                f"the kind in the data ({kind}) does not match the expected kind ({rtype.kind})")
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind

    def _check_namespace(self, space: str, rtype: ResourceType, obj: dict[str, Any], namespace: str) -> None:
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if not rtype.namespaced:
            meta.pop("namespace", None)
            return
        body_ns = meta.get("namespace")
        if body_ns and body_ns != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                     "sent on the request")
        meta["namespace"] = namespace

    # --- create -----------------------------------------------------------------------------

    async def create(self, space: str, rtype: ResourceType, namespace: str, obj: dict[str, Any],
                     opts: WriteOptions) -> dict[str, Any]:
        generated = self._check_create(space, rtype, namespace, obj, opts)
        for attempt in range(8):
            candidate = copy.deepcopy(obj) if generated else obj
            cmeta = candidate["metadata"]
            if generated:
                cmeta["name"] = _generated_name(cmeta["generateName"])
            await self._admit_create(space, rtype, candidate, opts)
            if opts.dry_run:
                await self._ensure_absent(space, rtype, namespace, cmeta["name"])
                # As kube's dry-run storage: the object is converted to the storage version, only not written.
                await self.converter.to_storage(rtype, candidate)
                return candidate
            try:
                row = await self.writer.write(Write(
                    self.key(space, rtype, namespace, cmeta["name"]), await self._stored(rtype, candidate),
                    expect=MUST_NOT_EXIST))
            except PreconditionFailed as exc:
                if generated and attempt < 7:
                    continue
                raise errors.already_exists(rtype.plural, rtype.group, cmeta["name"]) from exc
            await self._created(space, rtype, candidate, row)
            return candidate
        raise errors.already_exists(rtype.plural, rtype.group, obj["metadata"].get("name", ""))

    async def create_many(self, space: str, creations: Sequence[Creation],
                          opts: WriteOptions) -> list[dict[str, Any] | StatusError]:
        """Create several objects of one space in one store commit (a new space's default objects), each checked,
        mutated, validated and admitted exactly as ``create`` does; per object, in order, the object created or the
        StatusError that refused it (409 AlreadyExists when it exists). A ``generateName`` is tried once.

        The objects are admitted before any is written, so none may need another to exist first, with one
        exception: an object may go in a Namespace created earlier in the same call. Its namespace's row is written
        before it in the same commit, and an object whose namespace turns out to exist already (409) is in that
        namespace as well. Not for dry runs."""
        assert not opts.dry_run, "create_many writes; a dry run goes through create"
        outcomes: list[dict[str, Any] | StatusError] = []
        writes: list[Write] = []
        admitted: list[tuple[int, ResourceType, dict[str, Any]]] = []  # (index in outcomes, type, object)
        new_namespaces: set[str] = set()
        opts_of: dict[str | None, WriteOptions] = {None: opts}  # by field manager: copied once per call, not per object
        for rtype, namespace, obj, manager in creations:
            if manager not in opts_of:
                opts_of[manager] = dataclasses.replace(opts, manager=manager)
            item_opts = opts_of[manager]
            try:
                if self._check_create(space, rtype, namespace, obj, item_opts, new_namespaces):
                    obj["metadata"]["name"] = _generated_name(obj["metadata"]["generateName"])
                await self._admit_create(space, rtype, obj, item_opts)
            except StatusError as exc:
                outcomes.append(exc)
                continue
            if rtype.group_resource == "namespaces":
                new_namespaces.add(obj["metadata"]["name"])
            writes.append(Write(self.key(space, rtype, namespace, obj["metadata"]["name"]),
                                await self._stored(rtype, obj), expect=MUST_NOT_EXIST))
            admitted.append((len(outcomes), rtype, obj))
            outcomes.append(obj)
        for (index, rtype, obj), result in zip(admitted, await self.writer.write_many(writes), strict=True):
            if isinstance(result, PreconditionFailed):
                outcomes[index] = errors.already_exists(rtype.plural, rtype.group, obj["metadata"]["name"])
            elif isinstance(result, BaseException):
                raise result
            else:
                await self._created(space, rtype, obj, result)
        return outcomes

    def _check_create(self, space: str, rtype: ResourceType, namespace: str, obj: dict[str, Any],
                      opts: WriteOptions, new_namespaces: Collection[str] = ()) -> bool:
        """Refuse a create request kube refuses before it looks at the object's content; whether its name is to be
        generated. ``new_namespaces``: namespaces to be written in the same commit, before this object."""
        if not isinstance(obj, dict):
            raise errors.bad_request("the request body must be a JSON object")
        self._check_type_meta(rtype, obj)
        self._check_namespace(space, rtype, obj, namespace)
        meta = obj["metadata"]
        if _is_nonzero_revision(meta.get("resourceVersion")):
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        check_fields(self.catalog, rtype, obj, opts.field_validation, opts.warnings, patch=False)
        if rtype.namespaced:
            phase = "Active" if namespace in new_namespaces else self.namespace_phase(space, namespace)
            if phase is None:
                raise errors.not_found("namespaces", "", namespace)
            if phase == "Terminating":
                raise StatusError(403, "Forbidden", f"{rtype.kind.lower()} \"{meta.get('name') or ''}\" is "
                                  f"forbidden: unable to create new content in namespace {namespace} because "
                                  "it is being terminated", name=meta.get("name", ""), group=rtype.group,
                                  kind=rtype.plural, causes=[Cause("NamespaceTerminating",
                                  f"namespace {namespace} is being terminated", "metadata.namespace")])
        generated = not meta.get("name") and bool(meta.get("generateName"))
        if not meta.get("name") and not generated:
            raise errors.invalid(rtype.kind, rtype.group, "", [
                Cause("FieldValueRequired", "Required value: name or generateName is required",
                      "metadata.name")])
        return generated

    async def _admit_create(self, space: str, rtype: ResourceType, candidate: dict[str, Any],
                            opts: WriteOptions) -> None:
        """Mutating admission, the server's fields, validation and validating admission of a new object, named."""
        if self.mutate is not None:
            await self.mutate(space, rtype, "CREATE", candidate, None, opts, "")
        self._prepare_new(rtype, candidate, opts)
        await self._validate(rtype, candidate, None)
        for check in self.before_create.get(rtype.group_resource, ()):
            check(space, candidate)
        if self.admit is not None:
            await self.admit(space, rtype, "CREATE", candidate, None, opts, "")

    async def _created(self, space: str, rtype: ResourceType, candidate: dict[str, Any], row: LogRow) -> None:
        candidate["metadata"]["resourceVersion"] = str(row.revision)
        for hook in self.after_create.get(rtype.group_resource, ()):
            await hook(space, candidate)

    async def _ensure_absent(self, space: str, rtype: ResourceType, namespace: str, name: str) -> None:
        if await self.run_sync(self.store.get, self.key(space, rtype, namespace, name)) is not None:
            raise errors.already_exists(rtype.plural, rtype.group, name)

    def _prepare_new(self, rtype: ResourceType, obj: dict[str, Any], opts: WriteOptions) -> None:
        meta = obj["metadata"]
        now = now_rfc3339()
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now
        for server_field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                             "selfLink", "generation"):
            meta.pop(server_field, None)
        if rtype.tracks_generation:
            meta["generation"] = 1
        if "status" in rtype.subresources:
            obj.pop("status", None)
        rtype.strategy.prepare_for_create(obj)
        if opts.apply:
            return
        meta.pop("managedFields", None)
        if rtype.tracks_managed_fields:
            update_managed_fields(None, obj, opts.manager or "unknown", rtype.api_version, now,
                                  self.catalog.schema(rtype), self.catalog.definitions(),
                                  status_subresource="status" in rtype.subresources)

    async def ensure_namespace(self, space: str, name: str, manager: str) -> None:
        """Create the namespace ``name`` unless it exists; one another writer created meanwhile is as good."""
        ns_type = self.catalog.by_group_resource(space, "namespaces")
        assert ns_type is not None  # every space serves namespaces
        if await self.find(space, ns_type, "", name) is not None:
            return
        try:
            await self.create(space, ns_type, "", {"metadata": {"name": name}}, WriteOptions(manager=manager))
        except StatusError as exc:
            if exc.code != 409:
                raise

    # --- update / patch -------------------------------------------------------------------------

    async def update(self, space: str, rtype: ResourceType, namespace: str, name: str,
                     body: dict[str, Any], opts: WriteOptions, *, subresource: str = "") -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        self._check_type_meta(rtype, body)
        self._check_namespace(space, rtype, body, namespace)
        self._check_name(body, name)
        check_fields(self.catalog, rtype, body, opts.field_validation, opts.warnings, patch=False)
        wanted_rv = body["metadata"].get("resourceVersion") or None

        def compute(_old: dict[str, Any]) -> dict[str, Any]:
            return copy.deepcopy(body)

        return await self.guaranteed_update(space, rtype, namespace, name, compute, opts,
                                            subresource=subresource, precondition_rv=wanted_rv)

    async def patch(self, space: str, rtype: ResourceType, namespace: str, name: str, body: bytes,
                    content_type: str, opts: WriteOptions, *, subresource: str = "") -> dict[str, Any]:
        def compute(old: dict[str, Any]) -> dict[str, Any]:
            patched = apply_patch(old, body, content_type, rtype)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch did not produce a JSON object")
            self._check_type_meta(rtype, patched)
            self._check_namespace(space, rtype, patched, namespace)
            self._check_name(patched, name)
            check_fields(self.catalog, rtype, patched, opts.field_validation, opts.warnings, patch=True)
            patched_rv = patched["metadata"].get("resourceVersion")
            if patched_rv and patched_rv != old["metadata"]["resourceVersion"]:
                raise errors.conflict(rtype.plural, rtype.group, name, "the object has been modified; "
                                      "please apply your changes to the latest version and try again")
            return patched

        return await self.guaranteed_update(space, rtype, namespace, name, compute, opts,
                                            subresource=subresource)

    async def apply(self, space: str, rtype: ResourceType, namespace: str, name: str, body: Any,
                    opts: WriteOptions, *, force: bool, subresource: str = "") -> tuple[dict[str, Any], bool]:
        """Server-side apply; returns the object and whether it was created."""
        if not isinstance(body, dict):
            raise errors.bad_request("the apply configuration must be an object")
        self._check_type_meta(rtype, body)
        self._check_namespace(space, rtype, body, namespace)
        self._check_name(body, name)
        check_fields(self.catalog, rtype, body, opts.field_validation, opts.warnings, patch=True)
        opts.apply = True
        wanted_rv = body["metadata"].get("resourceVersion") or None
        schema = self.catalog.schema(rtype)
        has_status = "status" in rtype.subresources

        def compute(live: dict[str, Any] | None) -> dict[str, Any]:
            return server_side_apply(live, body, manager=opts.manager, force=force, api_version=rtype.api_version,
                                     now=now_rfc3339(), schema=schema, defs=self.catalog.definitions(),
                                     status_subresource=has_status, subresource=subresource)

        for _ in range(_UPDATE_RETRIES):
            try:
                return await self.guaranteed_update(space, rtype, namespace, name, compute, opts,
                                                    subresource=subresource, precondition_rv=wanted_rv), False
            except StatusError as exc:
                if exc.code != 404 or exc.reason != "NotFound" or subresource:
                    raise
            try:
                return await self.create(space, rtype, namespace, compute(None), opts), True
            except StatusError as exc:
                if exc.code != 409 or exc.reason != "AlreadyExists":
                    raise
        raise errors.conflict(rtype.plural, rtype.group, name, "too many concurrent updates; try again")

    @staticmethod
    def _check_name(obj: dict[str, Any], name: str) -> None:
        body_name = obj["metadata"].get("name")
        if body_name is not None and body_name != name:
            raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on "
                                     f"the URL ({name})")
        obj["metadata"]["name"] = name

    async def guaranteed_update(self, space: str, rtype: ResourceType, namespace: str, name: str,
                                compute: Callable[[dict[str, Any]], dict[str, Any]], opts: WriteOptions, *,
                                subresource: str = "", precondition_rv: str | None = None) -> dict[str, Any]:
        """Read, compute, write with the read revision as precondition; retry when someone raced us.

        Like kube's ``GuaranteedUpdate``, the first try starts from the newest row this process knows
        (:mod:`apiserver.store.recent`) without reading the store; whatever that start decides other than a
        successful write — a conflict, an error, nothing to change — is decided again from the store."""
        key = self.key(space, rtype, namespace, name)
        fresh = False  # whether ``row`` was read from the store
        for _ in range(_UPDATE_RETRIES):
            row = None if fresh else self.recent.get(key)
            if row is None:
                row, fresh = await self.get_row(space, rtype, namespace, name), True
            old = await self.converter.served_one(rtype, decode_object(row))
            if precondition_rv is not None and precondition_rv != str(row.revision):
                if not fresh:
                    fresh = True
                    continue
                raise errors.conflict(rtype.plural, rtype.group, name, "the object has been modified; "
                                      "please apply your changes to the latest version and try again")
            try:
                new = compute(copy.deepcopy(old))
                new = await self._finish_update(space, rtype, old, new, opts, subresource)
            except StatusError:
                if fresh:
                    raise
                fresh = True
                continue
            if new is old:
                if fresh:
                    return old
                fresh = True
                continue
            new_meta = new["metadata"]
            finished = bool(new_meta.get("deletionTimestamp")) and not new_meta.get("finalizers")
            if opts.dry_run:
                await self.converter.to_storage(rtype, new)
                return new
            try:
                written = await self.writer.write(Write(
                    self.key(space, rtype, namespace, name), await self._stored(rtype, new), deleted=finished,
                    expect=row.revision))
            except PreconditionFailed:
                if precondition_rv is not None:
                    raise errors.conflict(rtype.plural, rtype.group, name, "the object has been modified; "
                                          "please apply your changes to the latest version and try again"
                                          ) from None
                fresh = True  # the row that beat us may come from another hub process: read it from the store
                continue
            new["metadata"]["resourceVersion"] = str(written.revision)
            return new
        raise errors.conflict(rtype.plural, rtype.group, name, "too many concurrent updates; try again")

    async def _finish_update(self, space: str, rtype: ResourceType, old: dict[str, Any], new: dict[str, Any],
                       opts: WriteOptions, subresource: str) -> dict[str, Any]:
        old_meta = old["metadata"]
        if subresource == "status":
            sent, status = new, new.get("status")
            applied_fields = (new.get("metadata") or {}).get("managedFields") if opts.apply else None
            finalizers = (new.get("metadata") or {}).get("finalizers")
            new = copy.deepcopy(old)
            if rtype.strategy.status_sets_finalizers:
                if finalizers:
                    new["metadata"]["finalizers"] = finalizers
                else:
                    new["metadata"].pop("finalizers", None)
            if opts.apply:
                if applied_fields:
                    new["metadata"]["managedFields"] = applied_fields
                else:
                    new["metadata"].pop("managedFields", None)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            if rtype.conversion is not None:
                new = rtype.conversion.with_status_of(new, sent)
        elif "status" in rtype.subresources:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        meta = new.setdefault("metadata", {})
        # A client may rewrite managedFields on purpose (kubectl's client-side to server-side apply
        # migration does, with a JSON patch); such a change is persisted even if nothing else changes.
        fields_rewritten = "managedFields" in meta and meta["managedFields"] != old_meta.get("managedFields")
        for kept in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if "managedFields" not in meta and "managedFields" in old_meta and not opts.apply:
            meta["managedFields"] = old_meta["managedFields"]
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise errors.invalid(rtype.kind, rtype.group, meta.get("name", ""), [Cause(
                    "FieldValueForbidden", f"Forbidden: no new finalizers can be added if the object is "
                    f"being deleted, found new finalizers {sorted(added)}", "metadata.finalizers")])
        if self.mutate is not None:
            await self.mutate(space, rtype, "UPDATE", new, old, opts, subresource)
        if subresource != "status":
            rtype.strategy.prepare_for_update(new, old)
        if rtype.tracks_generation:
            generation = int(old_meta.get("generation") or 1)
            if subresource != "status" and _spec_part(new) != _spec_part(old):
                generation += 1
            meta["generation"] = generation
        await self._validate(rtype, new, old)
        # Validating admission sees every update, a no-op included, as upstream admits before it looks
        # for changes.
        if self.admit is not None:
            await self.admit(space, rtype, "UPDATE", new, old, opts, subresource)
        if not rtype.tracks_managed_fields:
            meta.pop("managedFields", None)  # also what an older hub recorded
        unchanged = _strip_for_compare(new) == _strip_for_compare(old)
        if unchanged and meta.get("managedFields") == old_meta.get("managedFields"):
            return old
        if not opts.apply and rtype.tracks_managed_fields:
            update_managed_fields(old, new, opts.manager or "unknown", rtype.api_version, now_rfc3339(),
                                  self.catalog.schema(rtype), self.catalog.definitions(), subresource=subresource,
                                  status_subresource="status" in rtype.subresources)
            if unchanged and not fields_rewritten:
                # Only managedFields bookkeeping differs: a no-op for the client, no new revision.
                return old
        return new

    # --- delete -----------------------------------------------------------------------------

    async def delete(self, space: str, rtype: ResourceType, namespace: str, name: str,
                     options: DeleteOptions) -> tuple[dict[str, Any], bool]:
        """Delete or start deleting; returns the object and whether it is gone now."""
        for _ in range(_UPDATE_RETRIES):
            row = await self.get_row(space, rtype, namespace, name)
            obj = await self.converter.served_one(rtype, decode_object(row))
            meta = obj["metadata"]
            if options.uid is not None and options.uid != meta.get("uid"):
                raise errors.conflict(rtype.plural, rtype.group, name, f"Precondition failed: UID in "
                                      f"precondition: {options.uid}, UID in object meta: {meta.get('uid')}")
            if options.resource_version is not None and options.resource_version != meta["resourceVersion"]:
                raise errors.conflict(rtype.plural, rtype.group, name, "Precondition failed: "
                                      f"ResourceVersion in precondition: {options.resource_version}, "
                                      f"ResourceVersion in object meta: {meta['resourceVersion']}")
            refusals = rtype.strategy.validate_delete(obj)
            if refusals:
                raise errors.invalid(rtype.kind, rtype.group, name, refusals)
            for check in self.before_delete.get(rtype.group_resource, ()):
                await check(space, obj)
            if self.admit_delete is not None:
                await self.admit_delete(space, rtype, "DELETE", None, obj,
                                        WriteOptions(dry_run=options.dry_run, user=options.user), "")
            finalizers = list(meta.get("finalizers") or [])
            marker = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(options.propagation)
            if marker and marker not in finalizers and not meta.get("deletionTimestamp"):
                finalizers.append(marker)
            graceful = bool(finalizers) or rtype.kind in ("Namespace", "Space")
            if graceful:
                if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or []):
                    return obj, False
                meta["finalizers"] = finalizers
                meta.setdefault("deletionTimestamp", now_rfc3339())
                meta.setdefault("deletionGracePeriodSeconds", 0)
                if rtype.kind in ("Namespace", "Space"):
                    obj.setdefault("status", {})["phase"] = "Terminating"
            if options.dry_run:
                return obj, not graceful
            try:
                written = await self.writer.write(Write(
                    self.key(space, rtype, namespace, name), await self._stored(rtype, obj), deleted=not graceful,
                    expect=row.revision))
            except PreconditionFailed:
                continue
            meta["resourceVersion"] = str(written.revision)
            return obj, not graceful
        raise errors.conflict(rtype.plural, rtype.group, name, "too many concurrent updates; try again")

    async def delete_if_present(self, space: str, rtype: ResourceType, namespace: str, name: str,
                                options: DeleteOptions | None = None) -> None:
        """``delete``, where an object already gone is as good: for controllers cleaning up, to whom a 404 means
        someone else got there first."""
        try:
            await self.delete(space, rtype, namespace, name, options or DeleteOptions())
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def remove_finalizer(self, space: str, rtype: ResourceType, namespace: str, name: str,
                               finalizer: str,
                               mutate: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Drop one finalizer (controllers); the object goes away when it was the last one."""
        def compute(obj: dict[str, Any]) -> dict[str, Any]:
            meta = obj["metadata"]
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
            if not meta["finalizers"]:
                del meta["finalizers"]
            if mutate is not None:
                mutate(obj)
            return obj

        try:
            await self.guaranteed_update(space, rtype, namespace, name, compute,
                                         WriteOptions(manager="spacehub-controller"))
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def purge(self, space: str, rows: list[LogRow]) -> None:
        """Unconditionally delete stored rows (their namespace or space is being finalized)."""
        writes = [Write(r.key, r.value, deleted=True) for r in rows]
        for result in await self.writer.write_many(writes):
            if isinstance(result, BaseException) and not isinstance(result, PreconditionFailed):
                raise result


def _generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))


def _is_nonzero_revision(value: Any) -> bool:
    """Whether a create's ``metadata.resourceVersion`` is one kube refuses: its storage parses the value as an
    unsigned integer and refuses only a non-zero one; anything else ("", "0", "v1") is ignored and replaced."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        return False
    return 0 < int(value) < 2**64
