"""Upsync: objects created in clusters, brought up into the workload spaces whose placements ask for them.

Each cluster's copy of an upsynced object is kept by cluster, as a record in the shared log
(``status.records``), so every hub process knows every cluster's copies whichever process received them; the
space shows one of them — the copy of the first cluster by name among those holding it, so every hub process
and restart picks the same — marked with the label ``spacehub.io/upsynced=true`` and the annotation
``spacehub.io/upsynced-from``. When several clusters hold different content, the space says so: a Warning
Event ``UpsyncClash`` on the object and the condition ``UpsyncClash`` on the placements that brought it. An
object of the same name that the space has and that upsync did not make is never overwritten
(``UpsyncConflict``). When the last cluster deletes its copy, the object leaves the space. Placement never
sends an upsynced object back down (``placement.service``): upsync wins over downsync.
"""

from __future__ import annotations

import asyncio
import copy
import fnmatch
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.events import EventRecorder, Involved
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.store import Key
from apiserver.watch import Entry
from apiserver.writeoptions import WriteOptions
from kubeclient.workqueue import Gate
from placement.model import ObjectRef
from placement.placed import UPSYNCED_LABEL
from placement.service import PlacementService
from status.records import Records

log = logging.getLogger(__name__)

FROM_ANNOTATION = "spacehub.io/upsynced-from"
MANAGER = "spacehub-upsync"
# What a cluster filled in that a space must not take from it.
_CLUSTER_METADATA = ("uid", "resourceVersion", "managedFields", "ownerReferences", "generation", "finalizers",
                     "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")


@dataclass(frozen=True)
class UpsyncItem:
    op: str  # UPSERT or DELETE
    space: str
    placement: str
    group: str
    version: str
    resource: str  # plural
    namespace: str
    name: str
    obj: dict[str, Any] | None

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.space, f"{self.resource}.{self.group}" if self.group else self.resource,
                         self.namespace, self.name)


def rule_allows(rule: Mapping[str, Any], item: UpsyncItem) -> bool:
    """KubeStellar's upsync test: group, resources, namespaces (none: cluster-scoped only), names."""
    if rule.get("space") != item.space or str(rule.get("apiGroup") or "") != item.group:
        return False
    resources = rule.get("resources") or []
    if "*" not in resources and item.resource not in resources:
        return False
    namespaces = rule.get("namespaces") or []
    if item.namespace:
        if not any(ns == "*" or fnmatch.fnmatchcase(item.namespace, ns) for ns in namespaces):
            return False
    elif namespaces and "*" not in namespaces:
        return False
    names = rule.get("names") or []
    return not names or any(n == "*" or fnmatch.fnmatchcase(item.name, n) for n in names)


class Upsync:
    def __init__(self, placement: PlacementService, objects: Objects, catalog: Catalog,
                 events: EventRecorder) -> None:
        self.placement = placement
        self.objects = objects
        self.catalog = catalog
        self.events = events
        self.records = Records(objects, "upsynccopies")
        self.gate: Gate | None = None  # prunes are the lease holder's
        # Taken from the records, in every process:
        self._copies: dict[ObjectRef, dict[str, dict[str, Any]]] = {}  # object -> cluster -> its copy
        self._from: dict[ObjectRef, set[tuple[str, str]]] = {}  # object -> placements that brought it
        self._clashes: dict[ObjectRef, tuple[str, ...]] = {}  # objects whose copies differ -> the clusters
        # Clashes this process told of with an Event (by the process that showed the object).
        self._clashes_told: dict[ObjectRef, tuple[str, ...]] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # prunes under way (held so they are not collected)

    # --- records ---------------------------------------------------------------------------------

    def load(self) -> None:
        """Take in the copies an earlier hub process kept (blocking; call at startup)."""
        for value in self.records.load():
            self._take(*_decode(value), deleted=False)

    def start(self, gate: Gate | None) -> None:
        self.gate = gate
        self.records.listen(self.on_records)
        if gate is not None:  # a process that comes to lead prunes what changed while it followed
            task = asyncio.get_running_loop().create_task(self._prune_when_leading(gate))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _prune_when_leading(self, gate: Gate) -> None:
        await gate.wait()
        await self._prune()

    def on_records(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            self._take(*_decode(entry.row.value), deleted=entry.row.deleted)

    def _take(self, target: str, ref: ObjectRef, copied: dict[str, Any] | None, brought: set[tuple[str, str]],
              deleted: bool) -> None:
        copies = self._copies.setdefault(ref, {})
        if deleted or copied is None:
            copies.pop(target, None)
        else:
            copies[target] = copied
        self._from.setdefault(ref, set()).update(brought)
        if not copies:
            self._set_clash(ref, ())
            self._copies.pop(ref, None)
            self._from.pop(ref, None)
            return
        shown = min(copies)
        clashing = any(_content(c) != _content(copies[shown]) for c in copies.values())
        self._set_clash(ref, tuple(sorted(copies)) if clashing else ())

    def _record(self, target: str, ref: ObjectRef, copied: dict[str, Any] | None,
                brought: set[tuple[str, str]]) -> tuple[Key, bytes, bool]:
        value = orjson.dumps({"target": target, "ref": [ref.space, ref.resource, ref.namespace, ref.name],
                              "copy": copied, "from": sorted(brought)})
        return self.records.key(target, ref.space, ref.resource, ref.namespace, ref.name), value, copied is None

    # --- what clusters send --------------------------------------------------------------------

    async def receive(self, target: str, items: Sequence[UpsyncItem],
                      complete: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
        rules = self.placement.engine.upsync_rules(target)
        accepted = 0
        ignored: list[dict[str, Any]] = []
        touched: set[ObjectRef] = set()
        listed: set[ObjectRef] = set()
        changes: list[tuple[Key, bytes, bool]] = []
        for index, item in enumerate(items):
            matching = [r for r in rules if rule_allows(r, item)]
            if not matching:
                ignored.append({"index": index, "reason": "NotUpsynced",
                                "message": f"no upsync rule of {target} allows {_what(item.ref)} of space "
                                           f"{item.space}"})
                continue
            rtype = self._type(item)
            if rtype is None:
                ignored.append({"index": index, "reason": "NotServed",
                                "message": f"space {item.space} serves no {item.resource}.{item.group or 'core'}"
                                           f"/{item.version}: create its CustomResourceDefinition there"})
                continue
            ref = ObjectRef(item.space, rtype.group_resource, item.namespace, item.name)
            brought = {(r["space"], r["placement"]) for r in matching}
            if item.op == "DELETE":
                changes.append(self._record(target, ref, None, brought))
            else:
                changes.append(self._record(target, ref, _cleaned(item.obj or {}), brought))
                listed.add(ref)
            touched.add(ref)
            accepted += 1
        for space, group, resource in complete:
            for ref, copies in self._copies.items():
                if ref.space == space and ref.group == group and ref.plural == resource and target in copies \
                        and ref not in listed:
                    changes.append(self._record(target, ref, None, set()))
                    touched.add(ref)
        # In the log, and so in every process's copies (this one's included), before the space is shown them.
        await self.records.write(changes)
        for ref in sorted(touched):
            refusal = await self._show(ref)
            if refusal:
                ignored.append({"reason": "Conflict", "message": refusal})
        return {"accepted": accepted, "ignored": ignored}

    def on_drained(self, placements: set[tuple[str, str]], targets: set[str]) -> None:
        """Placement changed: a cluster that no upsync rule covers any more (relabelled, its SyncTarget
        deleted, the placement edited or deleted) takes its copies with it, as if it deleted them."""
        if not self._copies or (self.gate is not None and not self.gate.held):
            return
        bringing = {key for keys in self._from.values() for key in keys}
        holders = {cluster for copies in self._copies.values() for cluster in copies}
        if placements & bringing or targets & holders:
            task = asyncio.get_running_loop().create_task(self._prune())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _prune(self) -> None:
        rules_of: dict[str, list[dict[str, Any]]] = {}
        touched: set[ObjectRef] = set()
        changes = []
        for ref, copies in list(self._copies.items()):
            item = UpsyncItem("UPSERT", ref.space, "", ref.group, "", ref.plural, ref.namespace, ref.name, None)
            for cluster in list(copies):
                if cluster not in rules_of:
                    rules_of[cluster] = self.placement.engine.upsync_rules(cluster)
                if not any(rule_allows(rule, item) for rule in rules_of[cluster]):
                    changes.append(self._record(cluster, ref, None, set()))
                    touched.add(ref)
        try:
            await self.records.write(changes)
        except Exception as exc:
            log.warning("upsynced copies of clusters no rule covers any more not forgotten: %s", exc)
            return
        for ref in sorted(touched):
            try:
                await self._show(ref)
            except StatusError as exc:
                log.warning("upsynced %s not brought in line after a placement change: %s", _what(ref), exc)

    # --- what the space shows ----------------------------------------------------------------------

    async def _show(self, ref: ObjectRef) -> str:
        """Bring the space in line with the clusters' copies of ``ref``; a refusal message, or ""."""
        copies = self._copies.get(ref) or {}
        rtype = self.catalog.by_group_resource(ref.space, ref.resource)
        if rtype is None:
            return ""
        current = await self.objects.find(ref.space, rtype, ref.namespace, ref.name)
        if current is not None and ((current.get("metadata") or {}).get("labels") or {}).get(UPSYNCED_LABEL) != "true":
            message = (f"{_what(ref)} exists in space {ref.space} and was not made by upsync; the clusters' "
                       f"copies ({', '.join(sorted(copies))}) are not brought up")
            await self._event(rtype, ref, current, "UpsyncConflict", message)
            return message
        if not copies:
            self._clashes_told.pop(ref, None)
            if current is not None:
                await self.objects.delete_if_present(ref.space, rtype, ref.namespace, ref.name)
            return ""
        shown = min(copies)
        desired = copy.deepcopy(copies[shown])
        meta = desired.setdefault("metadata", {})
        meta["name"] = ref.name
        meta.pop("namespace", None)
        if ref.namespace:
            meta["namespace"] = ref.namespace
            await self.objects.ensure_namespace(ref.space, ref.namespace, MANAGER)
        meta["labels"] = {**(meta.get("labels") or {}), UPSYNCED_LABEL: "true"}
        meta["annotations"] = {**(meta.get("annotations") or {}), FROM_ANNOTATION: shown}
        status = desired.pop("status", None) if "status" in rtype.subresources else None
        written = await self._put(rtype, ref, current, desired)
        if written is not None and status is not None and written.get("status") != status:
            await self._write_status(rtype, ref, status)
        holders = self._clashes.get(ref, ())
        if holders and holders != self._clashes_told.get(ref) and written is not None:
            await self._event(rtype, ref, written, "UpsyncClash",
                              f"clusters {', '.join(holders)} hold different copies of {_what(ref)}; the space "
                              f"shows the copy of {shown} (the first by name)")
        self._clashes_told[ref] = holders
        return ""

    def _set_clash(self, ref: ObjectRef, holders: tuple[str, ...]) -> None:
        before = self._clashes.get(ref, ())
        if holders:
            self._clashes[ref] = holders
        else:
            self._clashes.pop(ref, None)
        if before != holders:
            for key in self._from.get(ref, set()):
                self.placement.refresh_status(*key)

    def conditions(self, space: str, placement: str) -> list[dict[str, Any]]:
        """The ``UpsyncClash`` condition of a placement whose upsynced objects clusters disagree on."""
        clashing = sorted(ref for ref in self._clashes if (space, placement) in self._from.get(ref, set()))
        if not clashing:
            return []
        shown = ", ".join(f"{_what(r)} ({', '.join(self._clashes[r])})" for r in clashing[:10])
        more = f" and {len(clashing) - 10} more" if len(clashing) > 10 else ""
        return [{"type": "UpsyncClash", "status": "True", "reason": "ClustersDisagree",
                 "message": f"clusters hold different copies of {shown}{more}; each space object shows the copy of "
                            "the first cluster by name"}]

    def copies(self, space: str) -> list[tuple[ObjectRef, str | None, dict[str, dict[str, Any]]]]:
        """Every upsynced object of a space: which cluster's copy the space shows, and every cluster's copy."""
        return [(ref, min(c) if c else None, dict(c)) for ref, c in sorted(self._copies.items()) if ref.space == space]

    # --- writes --------------------------------------------------------------------------------

    def _type(self, item: UpsyncItem) -> ResourceType | None:
        return self.catalog.lookup(item.space, item.group, item.version, item.resource) or \
            self.catalog.by_group_resource(item.space, item.ref.resource)

    async def _put(self, rtype: ResourceType, ref: ObjectRef, current: dict[str, Any] | None,
                   desired: dict[str, Any]) -> dict[str, Any] | None:
        opts = WriteOptions(manager=MANAGER, field_validation="Ignore")
        try:
            if current is None:
                return await self.objects.create(ref.space, rtype, ref.namespace, desired, opts)

            def replace(_old: dict[str, Any]) -> dict[str, Any]:
                return copy.deepcopy(desired)

            return await self.objects.guaranteed_update(ref.space, rtype, ref.namespace, ref.name, replace, opts)
        except StatusError as exc:
            # The cluster's object is not valid in the space (another schema version, a policy): say so.
            log.info("upsync of %s refused by space %s: %s", _what(ref), ref.space, exc)
            return None

    async def _write_status(self, rtype: ResourceType, ref: ObjectRef, status: Any) -> None:
        def set_status(obj: dict[str, Any]) -> dict[str, Any]:
            obj["status"] = status
            return obj

        try:
            await self.objects.guaranteed_update(ref.space, rtype, ref.namespace, ref.name, set_status,
                                                 WriteOptions(manager=MANAGER, field_validation="Ignore"),
                                                 subresource="status")
        except StatusError as exc:
            log.info("upsync of the status of %s refused: %s", _what(ref), exc)

    async def _event(self, rtype: ResourceType, ref: ObjectRef, obj: dict[str, Any], reason: str,
                     message: str) -> None:
        involved = Involved(ref.space, rtype.kind, rtype.api_version, ref.namespace, ref.name,
                            str((obj.get("metadata") or {}).get("uid", "")))
        await self.events.record(involved, "Warning", reason, message)


def _decode(value: bytes) -> tuple[str, ObjectRef, dict[str, Any] | None, set[tuple[str, str]]]:
    d = orjson.loads(value)
    return str(d["target"]), ObjectRef(*d["ref"]), d.get("copy"), {(s, p) for s, p in d.get("from") or []}


def _cleaned(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    meta = out.setdefault("metadata", {})
    for key in _CLUSTER_METADATA:
        meta.pop(key, None)
    return out


def _content(obj: Mapping[str, Any]) -> Any:
    """What two clusters' copies are compared on: everything but status."""
    return {k: v for k, v in obj.items() if k != "status"}


def _what(ref: ObjectRef) -> str:
    return f'{ref.resource} "{ref.name}"' + (f" in namespace {ref.namespace}" if ref.namespace else "")
