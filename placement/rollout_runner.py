"""The hub glue of staged rollouts: revisions recorded, rollouts advanced, clusters pinned, status and Events.

For every EdgePlacement with ``spec.rollout``: after each drain the lease holder records a new revision of each
selected object whose content changed (:mod:`placement.revisions`), starts or advances the placement's rollout
(:mod:`placement.rollouts`) from the clusters' health, and stores the state as ``status.rollout`` (written with
the placement's status by :mod:`placement.results`). Every hub process pins each cluster's copy to the revision
the state gives it (``pin``, read by :mod:`placement.copies`) and, when a pin moves, logs the object again for
that cluster so its stream sends the other revision. The other processes, and a restarted hub, take the state
from the stored status. The controls (pause, resume, approve) edit the stored state through the status
subresource, counted by ``controlGeneration`` so that the lease holder takes them in; ``undo`` writes a kept
revision's content back into the space's objects, as ``kubectl rollout undo`` does.

A cluster's health comes from the status path (``health``, set by the status service: the readiness rules of
``status/readiness.py``), and from the placement's CEL ``gate`` (the ``cel`` package), evaluated with
``cluster`` (the cluster's copy as reported: its ``status``) and ``object`` (the revision's content).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import StatusError, conflict, not_found
from apiserver.catalog import Catalog
from apiserver.events import EventRecorder, Involved
from apiserver.service import Objects
from apiserver.store.lease import Leadership
from apiserver.writeoptions import WriteOptions
from cel import CelCompileError, CelEvalError, CompiledExpression, compile_expression
from inventory.clusters import Inventory
from inventory.kinds import EDGE_GROUP, EDGE_VERSION
from placement.engine import PlacementEngine
from placement.model import ObjectRef
from placement.records import PKey
from placement.revisions import Revision, RevisionHistory, digest_of, object_key
from placement.rollouts import Event, Health, Rollout, RolloutSpec, history_limit, parse_rollout, stages_of

log = logging.getLogger(__name__)

PLACEMENTS = f"edgeplacements.{EDGE_GROUP}"
MANAGER = "spacehub-rollout"
POLL = 1.0  # seconds between looks while a rollout is under way (deadlines and soaks come due)


@dataclass(frozen=True)
class CopyHealth:
    """One cluster's copy of one object, as the status path judges it."""

    phase: str  # status.readiness's Pending, Applied, Ready, Failed, Stale
    current: bool  # the cluster runs the copy it was asked to run
    message: str
    status: dict[str, Any] | None  # the copy's status as reported (the gate's cluster.status)


class RolloutRunner:
    def __init__(self, engine: PlacementEngine, inventory: Inventory, objects: Objects, catalog: Catalog,
                 projected: Callable[[ObjectRef], Any], resend: Callable[[str, list[ObjectRef]], None],
                 clock: Callable[[], float] = time.time) -> None:
        """``projected``: the awaitable projection of an object's current content; ``resend``: log objects
        again for one cluster (its pin moved)."""
        self.engine = engine
        self.inventory = inventory
        self.objects = objects
        self.catalog = catalog
        self._projected = projected
        self._resend = resend
        self.clock = clock
        self.history = RevisionHistory(objects)
        self.events = EventRecorder(objects, catalog, "spacehub-rollout")
        self.leadership = Leadership(held=True)
        # Set by the status service: how one cluster's copy of one object is doing (None: no opinion yet).
        self.health: Callable[[ObjectRef, str, str, dict[str, Any]], CopyHealth | None] = lambda *_a: None
        # Set by the hub glue: whether the space has this EdgePlacement (with or without a rollout).
        self.exists: Callable[[str, str], bool] = lambda _space, _name: False
        self._specs: dict[PKey, tuple[RolloutSpec, int, dict[str, Any]]] = {}  # parsed spec, history limit, obj
        self._states: dict[PKey, Rollout] = {}
        self._stages: dict[PKey, dict[str, int]] = {}  # each destination's stage index, as last looked at
        self._pins: dict[PKey, dict[tuple[str, ObjectRef], int | None]] = {}  # as last sent to the clusters
        self._current: dict[ObjectRef, str] = {}  # digest of each rolled-out object's current content
        self._stale: set[ObjectRef] = set()  # objects whose content changed since the last look
        self._gates: dict[str, CompiledExpression | str] = {}  # compiled, or why not
        self._background: set[asyncio.Task[None]] = set()  # records being deleted
        self.changed: set[PKey] = set()  # placements whose status.rollout changed since the service last took it

    # --- inputs (every process) ------------------------------------------------------------------------

    def placement_changed(self, key: PKey, obj: dict[str, Any] | None) -> None:
        spec = parse_rollout((obj or {}).get("spec") or {}) if obj is not None else None
        if spec is None:
            self._specs.pop(key, None)
            self._stages.pop(key, None)
            if self._states.pop(key, None) is not None:
                self._repin(key)
            return
        assert obj is not None
        self._specs[key] = (spec, history_limit(obj.get("spec") or {}), obj)
        stored = ((obj.get("status") or {}).get("rollout"))
        if not isinstance(stored, dict):
            return
        mine = self._states.get(key)
        control = int(stored.get("controlGeneration") or 0)
        if mine is None or not self.leadership.held or control > mine.control:
            adopted = Rollout.from_status(stored)
            if adopted is not None:
                self._states[key] = adopted
                self._repin(key)
                self.changed.add(key)

    def object_changed(self, ref: ObjectRef) -> None:
        """An object's content changed (or it went): its digest is computed again at the next look."""
        self._current.pop(ref, None)
        self._stale.add(ref)

    def active(self) -> bool:
        """Whether some rollout waits on time or health (the service looks again every :data:`POLL`); one that
        waits for approval or is paused waits for a control, which changes the placement."""
        return any(s.phase == "Progressing" and not s.paused_by_user for s in self._states.values())

    # --- what clusters get (every process) -------------------------------------------------------------

    def may_pin(self, ref: ObjectRef) -> bool:
        """Whether :meth:`pin` may keep some cluster at a kept revision of ``ref`` (a rollout of a placement
        selecting it); when not, it gives None for every cluster."""
        return bool(self._states) and any(key in self._states for key in self.engine.selecting(ref))

    def pin(self, ref: ObjectRef, target: str) -> Revision | None:
        """The kept revision ``target`` must run of ``ref`` when it is not the object's current content."""
        if not self._states:
            return None
        for key in self.engine.selecting(ref):
            state = self._states.get(key)
            specs = self._specs.get(key)
            if state is None or specs is None:
                continue
            number = state.pinned(object_key(ref), target, self._stages.get(key, {}).get(target))
            if number is None:
                continue
            revision = self.history.get(ref, number)
            if revision is None or revision.digest == self._current.get(ref):
                return None
            return revision
        return None

    def _stage_of(self, spec: RolloutSpec, key: PKey) -> dict[str, int]:
        """Each destination's stage index, by its SyncTarget's labels (kept for ``pin``)."""
        labels = {d.sync_target_name: ((self.inventory.sync_target(d.sync_target_name) or {}).get("metadata") or {})
                  .get("labels") or {} for d in self.engine.destinations(*key)}
        self._stages[key] = stages = stages_of(spec, labels)
        return stages

    def _repin(self, key: PKey) -> bool:
        """Log again, for each cluster, the objects whose pinned revision moved; returns whether any did."""
        before = self._pins.get(key, {})
        after: dict[tuple[str, ObjectRef], int | None] = {}
        if key in self._states and key in self._specs:
            self._stage_of(self._specs[key][0], key)
            for d in self.engine.destinations(*key):
                for ref in self.engine.selected_objects(*key):
                    revision = self.pin(ref, d.sync_target_name)
                    after[(d.sync_target_name, ref)] = None if revision is None else revision.number
        self._pins[key] = after
        moved: dict[str, list[ObjectRef]] = {}
        for where in before.keys() | after.keys():
            if before.get(where) != after.get(where):
                moved.setdefault(where[0], []).append(where[1])
        for target, refs in moved.items():
            if target in {d.sync_target_name for d in self.engine.destinations(*key)}:
                self._resend(target, refs)
        return bool(moved)

    # --- after each drain ------------------------------------------------------------------------------

    async def look(self) -> bool:
        """Record revisions and advance rollouts (the lease holder), pin clusters (every process); returns
        whether some cluster's pin moved (their streams must wake)."""
        moved = False
        for key in list(self._specs):
            spec, limit, _obj = self._specs[key]
            refs = sorted(self.engine.selected_objects(*key), key=object_key)
            contents: dict[ObjectRef, dict[str, Any]] = {}
            for ref in refs:
                if ref not in self._current or ref in self._stale:
                    content = await self._projected(ref)
                    if content is not None:
                        contents[ref] = content
                        self._current[ref] = digest_of(content)
            if not self.leadership.held:
                moved |= self._repin(key)
                continue
            newest: dict[str, int] = {}
            for ref in refs:
                kept = self.history.newest(ref)
                if kept is None or kept.digest != self._current.get(ref):
                    content = contents.get(ref) or await self._projected(ref)
                    if content is not None:
                        kept = await self.history.record(ref, content, limit, self._in_use(ref))
                if kept is not None:
                    newest[object_key(ref)] = kept.number
            state = self._states.get(key)
            if state is None:
                if not newest:
                    continue
                # The first revisions: nothing ran before, so every cluster gets them at once.
                state = self._states[key] = Rollout({k: [n, None] for k, n in newest.items()}, phase="Complete",
                                                    message="the first revisions went to every cluster at once")
                self.changed.add(key)
            elif state.renew(newest):
                self.changed.add(key)
            before = state.to_status(spec, {}, {})
            events = state.step(spec, self._stage_of(spec, key), lambda c, k=key: self._cluster_health(k, c),
                                self.clock())
            if events or state.to_status(spec, {}, {}) != before:
                self.changed.add(key)
            moved |= self._repin(key)
            for event in events:
                await self._record(key, event)
        self._stale.clear()
        return moved

    def _in_use(self, ref: ObjectRef) -> frozenset[int]:
        """The revisions of ``ref`` some rollout still gives clusters (kept whatever the history limit)."""
        numbers: set[int] = set()
        for key in self.engine.selecting(ref):
            state = self._states.get(key)
            if state is not None:
                numbers.update(n for n in state.objects.get(object_key(ref), ()) if n is not None)
        return frozenset(numbers)

    def _cluster_health(self, key: PKey, cluster: str) -> Health:
        """How ``cluster`` runs the revisions the placement rolls out: Failed if any copy failed, Ready when every
        copy is Ready and current (and the gate holds), else Waiting."""
        spec, _limit, _obj = self._specs[key]
        waiting = ""
        for ref in sorted(self.engine.selected_objects(*key), key=object_key):
            state = self._states[key]
            number = (state.objects.get(object_key(ref)) or [None])[0]
            revision = self.history.get(ref, number) if number is not None else None
            if revision is None:
                continue
            content = revision.content
            health = self.health(ref, cluster, str(content.get("kind") or ""), content)
            where = f"{ref.resource} {ref.namespace + '/' if ref.namespace else ''}{ref.name}"
            if health is None:
                waiting = waiting or f"{where}: no report yet"
                continue
            if health.phase == "Failed":
                return Health("Failed", f"{where}: {health.message}")
            if health.phase != "Ready" or not health.current:
                waiting = waiting or f"{where}: {health.message or health.phase}"
                continue
            if spec.gate is not None:
                verdict = self._gate(spec.gate, health.status or {}, content)
                if verdict is not True:
                    shown = str(verdict).lower() if isinstance(verdict, bool) else verdict
                    waiting = waiting or f"{where}: gate {spec.gate!r} is {shown}"
        return Health("Waiting", waiting) if waiting else Health("Ready")

    def _gate(self, source: str, status: dict[str, Any], content: dict[str, Any]) -> Any:
        compiled = self._gates.get(source)
        if compiled is None:
            try:
                compiled = compile_expression(source, {"cluster": "object", "object": "object"})
            except CelCompileError as exc:
                compiled = str(exc)
            self._gates[source] = compiled
        if isinstance(compiled, str):
            return compiled
        try:
            return compiled.evaluate({"cluster": {"status": status}, "object": content})
        except CelEvalError as exc:
            return f"an error ({exc})"

    async def _record(self, key: PKey, event: Event) -> None:
        space, name = key
        _spec, _limit, obj = self._specs[key]
        meta = obj.get("metadata") or {}
        placement = Involved(space, "EdgePlacement", f"{EDGE_GROUP}/{EDGE_VERSION}", "", name, str(meta.get("uid", "")))
        await self.events.record(placement, event.type, event.reason, event.message)
        for ref in self.engine.selected_objects(space, name):
            rtype = self.catalog.by_group_resource(ref.space, ref.resource)
            if rtype is None:
                continue
            try:  # its uid: kubectl describe shows the Events naming it
                uid = str((await self.objects.get(ref.space, rtype, ref.namespace, ref.name))["metadata"]["uid"])
            except StatusError:
                continue  # gone meanwhile: nothing to tell
            involved = Involved(ref.space, rtype.kind, rtype.api_version, ref.namespace, ref.name, uid)
            await self.events.record(involved, event.type, event.reason, f"placement {name}: {event.message}")

    # --- what the placement's status says --------------------------------------------------------------

    def status(self, space: str, name: str) -> dict[str, Any]:
        """``{"rollout": …}`` for the placement's status (empty before it placed anything)."""
        key = (space, name)
        state, specs = self._states.get(key), self._specs.get(key)
        if state is None or specs is None:
            return {}
        return {"rollout": state.to_status(specs[0], self._stage_of(specs[0], key), self._names(key))}

    def _names(self, key: PKey) -> dict[str, str]:
        """How ``status.rollout.objects`` names each object (``deployments.apps app/web``)."""
        return {object_key(r): f"{r.resource} {r.namespace + '/' if r.namespace else ''}{r.name}"
                for r in self.engine.selected_objects(*key)}

    def conditions(self, space: str, name: str) -> list[dict[str, Any]]:
        state = self._states.get((space, name))
        if state is None:
            return []
        if state.phase == "Complete":
            return [{"type": "RolloutComplete", "status": "True", "reason": "Complete", "message": state.message}]
        if state.failed or state.phase in ("RolledBack", "Failed"):
            reason = "ClusterFailed" if state.failed else state.phase
            return [{"type": "RolloutFailed", "status": "True", "reason": reason, "message": state.message}]
        return [{"type": "RolloutProgressing", "status": "True", "reason": state.phase, "message": state.message}]

    # --- controls (any process) ------------------------------------------------------------------------

    def stored(self, space: str, name: str) -> Rollout:
        key = (space, name)
        if key not in self._specs:
            if not self.exists(space, name):
                raise not_found(PLACEMENTS, EDGE_GROUP, name)
            raise conflict(PLACEMENTS, EDGE_GROUP, name, "the placement has no spec.rollout")
        state = self._states.get(key)
        if state is None:
            raise conflict(PLACEMENTS, EDGE_GROUP, name, "the placement has not placed anything yet: no rollout")
        return state

    async def control(self, space: str, name: str, action: str) -> dict[str, Any]:
        """``pause``, ``resume`` or ``approve``: the new state, stored (every process takes it in)."""
        state = self.stored(space, name)
        copy = Rollout.from_status(self.status(space, name)["rollout"])
        assert copy is not None
        if action == "approve":
            if state.phase != "WaitingForApproval":
                raise conflict(PLACEMENTS, EDGE_GROUP, name, f"the rollout is {state.phase}, not WaitingForApproval: "
                                                             "nothing to approve")
            copy.approve()
        elif action == "pause":
            if state.phase in ("Complete", "RolledBack"):
                raise conflict(PLACEMENTS, EDGE_GROUP, name, f"the rollout is {state.phase}: nothing to pause")
            copy.pause()
        else:
            if state.phase != "Paused":
                raise conflict(PLACEMENTS, EDGE_GROUP, name, f"the rollout is {state.phase}, not Paused")
            copy.resume(self.clock())
        copy.control = state.control + 1
        await self._store(space, name, copy)
        reason = {"pause": "RolloutPaused", "resume": "RolloutResumed", "approve": "StageApproved"}[action]
        await self._record((space, name), Event("Normal", reason, f"{action} by spacehub rollout {action}"))
        return self.status(space, name)["rollout"]

    async def _store(self, space: str, name: str, state: Rollout) -> None:
        key = (space, name)
        spec = self._specs[key][0]
        rollout = state.to_status(spec, self._stage_of(spec, key), self._names(key))
        rtype = self.catalog.by_group_resource(space, PLACEMENTS)
        assert rtype is not None

        def merge(obj: dict[str, Any]) -> dict[str, Any]:
            obj["status"] = {**(obj.get("status") or {}), "rollout": rollout}
            return obj

        await self.objects.guaranteed_update(space, rtype, "", name, merge, WriteOptions(manager=MANAGER),
                                             subresource="status")
        self._states[key] = state  # this process at once; the others (and the leader) from the commit
        self._repin(key)

    async def undo(self, space: str, name: str, to_revision: int | None) -> dict[str, Any]:
        """Write the kept revision's content back into the space's objects (the previous revision by default);
        the new revision this makes rolls out from the first stage."""
        state = self.stored(space, name)
        refs = sorted(self.engine.selected_objects(space, name), key=object_key)
        targets: list[tuple[ObjectRef, Revision]] = []
        for ref in refs:
            kept = self.history.of(ref)
            if not kept:
                continue
            if to_revision is None:
                current = (state.objects.get(object_key(ref)) or [kept[-1].number])[0]
                older = [r for r in kept if r.number < (current or 0)]
                if not older:
                    raise not_found("revisions", EDGE_GROUP, f"{object_key(ref)}: no revision before {current}")
                targets.append((ref, older[-1]))
                continue
            found = self.history.get(ref, to_revision)
            if found is None:
                raise not_found("revisions", EDGE_GROUP, f"{to_revision} of {object_key(ref)} (kept: "
                                f"{', '.join(str(r.number) for r in kept)})")
            targets.append((ref, found))
        if not targets:
            raise not_found("revisions", EDGE_GROUP, f"{name}: no revision kept")
        for ref, revision in targets:
            await self._write_back(ref, revision.content)
        if state.phase == "Paused":
            copy = Rollout.from_status(self.status(space, name)["rollout"])
            assert copy is not None
            copy.resume(self.clock())
            copy.control = state.control + 1
            await self._store(space, name, copy)
        await self._record((space, name), Event("Normal", "RolloutUndo", "undo to revision " + ", ".join(
            f"{r.number} of {ref.name}" for ref, r in targets)))
        return {"objects": [{"object": object_key(ref), "toRevision": r.number} for ref, r in targets]}

    async def _write_back(self, ref: ObjectRef, content: dict[str, Any]) -> None:
        rtype = self.catalog.by_group_resource(ref.space, ref.resource)
        if rtype is None:
            raise not_found(ref.resource, "", ref.name)

        def restore(obj: dict[str, Any]) -> dict[str, Any]:
            kept = {k: obj[k] for k in ("apiVersion", "kind", "metadata", "status") if k in obj}
            meta = dict(kept.get("metadata") or {})
            old_meta = content.get("metadata") or {}
            for field in ("labels", "annotations"):
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            body = {k: v for k, v in content.items() if k not in ("apiVersion", "kind", "metadata", "status")}
            return {**body, **kept, "metadata": meta}

        await self.objects.guaranteed_update(ref.space, rtype, ref.namespace, ref.name, restore,
                                             WriteOptions(manager=MANAGER))

    def history_of(self, space: str, name: str) -> dict[str, Any]:
        """The kept revisions of each object the placement rolls out, and which one each cluster runs."""
        key = (space, name)
        if not self.exists(space, name):
            raise not_found(PLACEMENTS, EDGE_GROUP, name)
        state = self._states.get(key)
        items = []
        for ref in sorted(self.engine.selected_objects(space, name), key=object_key):
            rolled = state.objects.get(object_key(ref)) if state is not None else None
            for revision in self.history.of(ref):
                items.append({"object": {"resource": ref.resource, "namespace": ref.namespace, "name": ref.name},
                              "revision": revision.number, "digest": revision.digest, "created": revision.created,
                              "images": _images(revision.content),
                              "current": rolled is not None and rolled[0] == revision.number})
        return {"space": space, "name": name, "revision": state.revision if state is not None else 0,
                "phase": state.phase if state is not None else "", "items": items}

    def forget(self, ref: ObjectRef) -> None:
        """The object is gone from its space: so are its revisions (the lease holder deletes their record)."""
        self._current.pop(ref, None)
        self._stale.discard(ref)
        if self.history.newest(ref) is None or not self.leadership.held:
            return
        try:
            task = asyncio.get_running_loop().create_task(self.history.forget(ref))
        except RuntimeError:  # loading at startup: the next start finds the record again
            return
        self._background.add(task)
        task.add_done_callback(self._forgotten)

    def _forgotten(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("revisions of a deleted object not deleted: %s", task.exception())


def _images(content: dict[str, Any]) -> list[str]:
    """The container images of a workload's pod template (what a history line shows of a change)."""
    spec = content.get("spec") or {}
    template = ((spec.get("template") or {}).get("spec") or {}) if isinstance(spec, dict) else {}
    return [str(c.get("image")) for c in (template.get("containers") or []) if isinstance(c, dict) and c.get("image")]

