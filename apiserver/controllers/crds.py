"""CustomResourceDefinitions: names, Established condition, serving, and clean-up on deletion.

For every CRD change in a space this controller (like kube's naming, establishing and finalizer
controllers together) checks its names against the space's other CRDs of the same group, writes
``status.acceptedNames`` and the ``NamesAccepted``/``Established`` conditions, and republishes the
space's custom resource types in the catalog.

A deleted CRD is finalized as apiextensions' finalizer controller does it: ``Terminating=True``
(``InstanceDeletionInProgress``) goes on its status; its objects stay readable (and updatable, so that
their own finalizers can finish) but cannot be created; each is deleted through the object service,
finalizers and garbage collection honoured; once none is left, ``Terminating=False``
(``InstanceDeletionCompleted``) and the ``customresourcecleanup`` finalizer is removed in one write
through the status subresource, which admission policies guarding CRD updates do not match.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import orjson

from apimachinery.errors import StatusError
from apiserver.catalog import Catalog
from apiserver.customresources import CLEANUP_FINALIZER, CRD_RESOURCE, types_from_crd
from apiserver.resourcetypes import ResourceType
from apiserver.service import Objects
from apiserver.watch import Entry
from apiserver.writeoptions import WriteOptions, now_rfc3339
from kubeclient.workqueue import Gate, WorkQueue

MANAGER = "spacehub-apiextensions-controller"
# How often a terminating CRD looks again for objects that are still finishing (their own finalizers).
RECHECK_SECONDS = 1.0


def _names(crd: dict[str, Any]) -> dict[str, Any]:
    return (crd.get("spec") or {}).get("names") or {}


def _is_true(conditions: list[dict[str, Any]], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _condition(kind: str, ok: bool, reason: str, message: str, old: list[dict[str, Any]]) -> dict[str, Any]:
    status = "True" if ok else "False"
    previous = next((c for c in old if c.get("type") == kind), None)
    since = previous["lastTransitionTime"] if previous and previous.get("status") == status else now_rfc3339()
    return {"type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message}


class CRDController(WorkQueue):
    def __init__(self, objects: Objects, catalog: Catalog) -> None:
        super().__init__("crds")
        self.objects = objects
        self.catalog = catalog
        # Compiled types per CRD, reused while its generation and accepted names are unchanged.
        self._compiled: dict[tuple[str, str], tuple[tuple[str, int, str, bool], list[ResourceType]]] = {}
        self.gate: Gate | None = None

    def crd_type(self, space: str) -> ResourceType:
        rtype = self.catalog.by_group_resource(space, CRD_RESOURCE)
        assert rtype is not None
        return rtype

    # --- startup ----------------------------------------------------------------------------

    def load(self) -> None:
        """Serve the established CRDs of every space before the hub accepts requests (blocking)."""
        by_space: dict[str, list[dict[str, Any]]] = {}
        for row in self.objects.store.list_resource_everywhere(CRD_RESOURCE):
            by_space.setdefault(row.key.space, []).append(orjson.loads(row.value))
        for space, crds in by_space.items():
            self._publish(space, crds)

    def start(self, gate: Gate | None = None) -> None:
        """Serve each space's CRDs as stored from now on; write their names, conditions and clean-up only
        while ``gate`` is open (every hub process serves them, one writes)."""
        self.gate = gate
        self.objects.bus.add_listener(self.on_commit)
        super().start()
        for space in {s for s, _ in self._compiled}:
            self.add(space)
        self.when_gate_opens(gate, self._reconcile_all)

    async def _reconcile_all(self) -> None:
        rows = await self.objects.run_sync(self.objects.store.list_resource_everywhere, CRD_RESOURCE)
        for space in {row.key.space for row in rows}:
            self.add(space)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            if entry.row.key.resource == CRD_RESOURCE:
                self.add(entry.row.key.space)

    # --- reconcile ---------------------------------------------------------------------------

    async def handle(self, space: Any) -> bool:
        _rev, rows = await self.objects.run_sync(self.objects.store.list, space, CRD_RESOURCE, None)
        crds = [orjson.loads(r.value) for r in rows]
        if self.gate is not None and not self.gate.held:
            self._publish(space, crds)  # the lease holder writes; this process serves what it wrote
            return False
        retry = False
        for crd in crds:
            if crd["metadata"].get("deletionTimestamp"):
                retry |= await self._clean_up(space, crd)
        live = [c for c in crds if not c["metadata"].get("deletionTimestamp")]
        verdicts = self._assign_names(live)
        for crd in live:
            await self._reconcile_status(space, crd, verdicts[crd["metadata"]["name"]])
        _rev, rows = await self.objects.run_sync(self.objects.store.list, space, CRD_RESOURCE, None)
        self._publish(space, [orjson.loads(r.value) for r in rows])
        return retry

    @staticmethod
    def _claims(crd: dict[str, Any], names: dict[str, Any]) -> set[tuple[str, str]]:
        group = (crd.get("spec") or {}).get("group", "")
        resources = {names.get("plural"), names.get("singular"), *(names.get("shortNames") or [])}
        kinds = {names.get("kind"), names.get("listKind")}
        return {(group, f"r:{n}") for n in resources if n} | {(group, f"k:{k}") for k in kinds if k}

    def _assign_names(self, live: list[dict[str, Any]]) -> dict[str, str]:
        """Which CRDs may use their names: the conflict message per CRD ("" when accepted).

        As kube's naming controller: names a CRD already holds (status.acceptedNames) stay its own;
        new claims are granted oldest first and refused when another CRD of the group holds a name.
        """
        owner: dict[tuple[str, str], str] = {}
        for crd in live:
            accepted = (crd.get("status") or {}).get("acceptedNames") or {}
            if accepted.get("plural"):
                for claim in self._claims(crd, accepted):
                    owner.setdefault(claim, crd["metadata"]["name"])
        verdicts: dict[str, str] = {}
        ordered = sorted(live, key=lambda c: (c["metadata"].get("creationTimestamp", ""), c["metadata"]["name"]))
        for crd in ordered:
            name = crd["metadata"]["name"]
            taken = sorted(claim for claim in self._claims(crd, _names(crd)) if owner.get(claim, name) != name)
            if taken:
                verdicts[name] = f'"{taken[0][1][2:]}" is already in use'
                continue
            verdicts[name] = ""
            for claim in self._claims(crd, _names(crd)):
                owner[claim] = name
        return verdicts

    async def _reconcile_status(self, space: str, crd: dict[str, Any], conflict: str) -> None:
        name = crd["metadata"]["name"]
        rtype = self.crd_type(space)
        if CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
            def add_finalizer(obj: dict[str, Any]) -> dict[str, Any]:
                meta = obj["metadata"]
                if CLEANUP_FINALIZER not in (meta.get("finalizers") or []):
                    meta["finalizers"] = [*(meta.get("finalizers") or []), CLEANUP_FINALIZER]
                return obj

            crd = await self.objects.guaranteed_update(space, rtype, "", name, add_finalizer,
                                                       WriteOptions(manager=MANAGER))
        status = dict(crd.get("status") or {})
        old_conditions = status.get("conditions") or []
        conditions = [
            _condition("NamesAccepted", not conflict, "NameConflict" if conflict else "NoConflicts",
                       conflict or "no conflicts found", old_conditions),
            _condition("Established", not conflict, "NotAccepted" if conflict else "InitialNamesAccepted",
                       "not all names are accepted" if conflict else "the initial names have been accepted",
                       old_conditions),
        ]
        wanted = dict(status, conditions=conditions)
        if not conflict:
            wanted["acceptedNames"] = {k: v for k, v in _names(crd).items()}
        storage = next((v["name"] for v in (crd.get("spec") or {}).get("versions") or [] if v.get("storage")), None)
        stored = list(status.get("storedVersions") or [])
        if storage and storage not in stored:
            stored.append(storage)
        wanted["storedVersions"] = stored
        if wanted == crd.get("status"):
            return

        def set_status(obj: dict[str, Any]) -> dict[str, Any]:
            obj["status"] = wanted
            return obj

        try:
            await self.objects.guaranteed_update(space, rtype, "", name, set_status, WriteOptions(manager=MANAGER),
                                                 subresource="status")
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def _clean_up(self, space: str, crd: dict[str, Any]) -> bool:
        """Finalize a deleted CRD: delete its objects, then release it (rechecked while objects remain)."""
        meta = crd["metadata"]
        if CLEANUP_FINALIZER not in (meta.get("finalizers") or []):
            return False
        conditions = (crd.get("status") or {}).get("conditions") or []
        if not _is_true(conditions, "Terminating"):
            await self._set_terminating(space, crd, "True", "InstanceDeletionInProgress",
                                        "CustomResource deletion is in progress", release=False)
        if _is_true(conditions, "Established"):
            if await self._delete_instances(space, crd):
                self.add_after(space, RECHECK_SECONDS)
                return False
            done = ("False", "InstanceDeletionCompleted", "removed all instances")
        else:
            done = ("False", "NeverEstablished", "resource was never established")
        await self._set_terminating(space, crd, *done, release=True)
        return False

    async def _delete_instances(self, space: str, crd: dict[str, Any]) -> bool:
        """Delete every object of the CRD that is not being deleted yet; True while any remains."""
        types = types_from_crd(crd)
        if not types:
            return False
        # The storage version when it is served: deleting in it needs no conversion (a dead conversion webhook
        # must not keep the CRD from going).
        rtype = next((t for t in types if t.version == t.storage_version), types[0])
        _rev, rows = await self.objects.run_sync(self.objects.store.list, space, rtype.group_resource, None)
        for row in rows:
            obj = orjson.loads(row.value)
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue
            await self.objects.delete_if_present(space, rtype, row.key.namespace, row.key.name)
        _rev, rows = await self.objects.run_sync(self.objects.store.list, space, rtype.group_resource, None)
        return bool(rows)

    async def _set_terminating(self, space: str, crd: dict[str, Any], status: str, reason: str, message: str, *,
                               release: bool) -> None:
        """The ``Terminating`` condition, and with ``release`` the finalizer's removal, in one status write."""
        def compute(obj: dict[str, Any]) -> dict[str, Any]:
            current = obj.setdefault("status", {})
            old = current.get("conditions") or []
            condition = _condition("Terminating", status == "True", reason, message, old)
            current["conditions"] = [c for c in old if c.get("type") != "Terminating"] + [condition]
            if release:
                obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or []
                                                 if f != CLEANUP_FINALIZER]
            return obj

        try:
            await self.objects.guaranteed_update(space, self.crd_type(space), "", crd["metadata"]["name"], compute,
                                                 WriteOptions(manager=MANAGER), subresource="status")
        except StatusError as exc:
            if exc.code != 404:
                raise

    def _publish(self, space: str, crds: list[dict[str, Any]]) -> None:
        types: list[ResourceType] = []
        seen: set[tuple[str, str]] = set()
        for crd in crds:
            meta = crd["metadata"]
            established = any(c.get("type") == "Established" and c.get("status") == "True"
                              for c in (crd.get("status") or {}).get("conditions") or [])
            key = (space, meta["name"])
            seen.add(key)
            if not established:
                self._compiled.pop(key, None)
                continue
            terminating = bool(meta.get("deletionTimestamp"))
            fingerprint = (meta.get("uid", ""), int(meta.get("generation") or 0),
                           orjson.dumps((crd.get("status") or {}).get("acceptedNames")).decode(), terminating)
            cached = self._compiled.get(key)
            if cached is None or cached[0] != fingerprint:
                compiled = types_from_crd(crd)
                if terminating:
                    compiled = [dataclasses.replace(t, terminating=True) for t in compiled]
                cached = (fingerprint, compiled)
                self._compiled[key] = cached
            types.extend(cached[1])
        for key in [k for k in self._compiled if k[0] == space and k not in seen]:
            del self._compiled[key]
        self.catalog.set_custom_types(space, tuple(types))
