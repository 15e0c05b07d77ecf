"""The hub side of placement: feeds the engine from the store and writes what it resolves.

Hears of Locations and SyncTargets from the inventory (``inventory.clusters``), loads placements and
the objects of the spaces that have some at startup, then follows the watch bus (a space's objects are
recorded only while something places them: ``placement.recording``). After every batch of changes it writes each
affected EdgePlacement's SinglePlacementSlices and status, and Locations' ``status.instances``, and
records which SyncTargets' desired sets changed (for their syncers). It serves the placement results
the REST API and the sync server read.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import orjson

from apimachinery.errors import not_found
from apiserver.catalog import Catalog
from apiserver.customresources import CRD_RESOURCE
from apiserver.service import Objects
from apiserver.spacepaths import child_id
from apiserver.store import Key, LogRow
from apiserver.store.lease import Leadership
from apiserver.watch import Entry
from apiserver.writeoptions import WriteOptions
from inventory.clusters import Inventory
from inventory.kinds import EDGE_GROUP
from kubeclient.workqueue import WorkQueue
from placement.choices import RESCHEDULE_ANNOTATION, Choices
from placement.copies import ClusterCopies
from placement.engine import PlacementEngine
from placement.model import ObjectRef, WorkloadObject
from placement.moves import MovePolicy, Moves, move_policy
from placement.nsplacing import NamespacePlacing
from placement.nswatch import NamespaceWatch
from placement.placed import (
    CUSTOMIZERS,
    NOT_PLACED,
    SPACES,
    for_child_hubs,
    is_workload,
    labels_of,
    records_space,
    target_clusters,
)
from placement.projection import ProjectedObjects, content_digest
from placement.reads import PlacementReads
from placement.recording import SpaceRecording, in_creation_order
from placement.references import pod_labels, references, service_selector
from placement.results import PLACEMENTS, SLICE_SIZE, ResultWriter
from placement.rollout_runner import POLL, RolloutRunner
from placement.spec import failover_after

log = logging.getLogger(__name__)

# Slices and statuses are written at most this often: a burst of object changes (an apply of many
# objects) becomes one status write per placement instead of one per object. Desired sets change, and
# the clusters' streams hear of it, at once; only these written results wait.
WRITE_DELAY = 0.05
DRAIN, WRITE = "drain", "write"  # the work queue's two keys
LEAVING_POLL = 1.0  # seconds between looks while a cluster is lost (its divided replicas' failover)
MOVE_POLL = 0.5  # seconds between looks while clusters keep leaving copies (their replacements' readiness)
class PlacementService(PlacementReads, WorkQueue):
    def __init__(self, objects: Objects, catalog: Catalog, inventory: Inventory,
                 space_phase: Callable[[str], str | None], first_seq: int = 0, slice_size: int = SLICE_SIZE) -> None:
        super().__init__("placement")
        self.space_phase = space_phase
        self.objects = objects
        self.catalog = catalog
        self.not_placed = NOT_PLACED | catalog.served_read_only()
        self.inventory = inventory
        self.inventory_space = inventory.space
        # Sequence numbers start above the store's revision at startup, so that a syncer's seq from
        # an earlier hub process is never taken for a current one (it gets a full resync instead).
        self.engine = PlacementEngine(inventory.space, first_seq=first_seq,
                                      served_everywhere=catalog.served_everywhere())
        self._inventory_changed = True
        self._drain_scheduled = False
        self._write_scheduled = False
        self._rollout_poll = False  # a look at the rollouts is scheduled
        self._placements: dict[str, dict[str, dict[str, Any]]] = {}
        self._workload: dict[ObjectRef, WorkloadObject] = {}
        self._upsync: dict[tuple[str, str], bool] = {}  # placements that have upsync items
        self._digests: dict[ObjectRef, bytes] = {}  # what clusters get of each object, to skip status-only writes
        # The store-backed spaces whose objects are recorded: those with EdgePlacements or bound by APIBindings.
        self.recording = SpaceRecording(self._space_rows, objects.run_sync, self._space_read)
        self._providers: dict[str, frozenset[str]] = {}  # space -> the spaces whose CRDs its APIBindings serve
        self._explaining: dict[str, int] = {}  # space -> explains of a placement in it under way
        self.projections = ProjectedObjects(self._revision, self._stored_object)
        # Per SyncTarget, bumped whenever its desired set changes (syncer streams wait on it).
        self.target_versions: dict[str, int] = {}
        self._target_waiters: dict[str, asyncio.Event] = {}
        self._drained: set[str] = set()  # SyncTargets this service evicted (a drain), until taken back
        # Called after each drain with the targets whose desired sets changed and those whose upsync rules
        # may have (the syncer streams' broadcaster).
        self.target_listeners: list[Callable[[set[str], set[str]], None]] = []
        # Told how long each drain took (seconds; the hub's metrics).
        self.drain_timings: list[Callable[[float], None]] = []
        # The writes of slices and statuses by this process: how many and how long in all (seconds), for the
        # hub's metrics to read when scraped.
        self.writes = 0
        self.write_seconds = 0.0
        # Called after each drain with the placements and targets whose results changed (status return).
        self.drain_listeners: list[Callable[[set[tuple[str, str]], set[str]], None]] = []
        # Slices and statuses, written by the lease holder after each drain.
        self.results = ResultWriter(objects, catalog, self.engine, inventory,
                                    lambda space, name: self._placements[space][name], slice_size)
        # Conditions other parts add to an EdgePlacement's status (upsync clashes), by (space, name).
        self.condition_sources = self.results.condition_sources
        self._refresh: set[tuple[str, str]] = set()
        # Spaces whose objects are not in the store (kube spaces, ``placement.mirror``): how to read an object's
        # latest row, by space id. Their placements' slices and status are not written (they live on the space's
        # own API server).
        self.external: dict[str, Callable[[Key], LogRow | None]] = {}
        # Results are written by one hub process (the lease holder); the others compute the same desired
        # sets for the streams they serve and remember what they did not write, for when they lead.
        self.leadership = Leadership(held=True)
        self._unwritten: set[tuple[str, str]] = set()
        self._unwritten_status: set[tuple[str, str]] = set()
        # Where each space's namespaces go in the clusters (namespaceMapping).
        self.namespaces = NamespacePlacing(self.engine.namespace_mapping, self.engine.maps_namespaces)
        # Each cluster's copy: customized for it, or held back (a failed customization, a lost conflict).
        self.copies = ClusterCopies(self.engine, inventory, self.projected, self._revision, self._scale,
                                    self.namespaces.cluster_namespace, self.namespaces.object)
        self.copies.failover_after = self._failover_after
        self.condition_sources.append(self.copies.conditions)
        # Namespaces whose cluster namespace moved are sent again; those mapped to no valid name are reported.
        self.nswatch = NamespaceWatch(self.engine, self.namespaces, self.copies.conflicts,
                                      lambda space: list(self._placements.get(space, {})),
                                      objects, catalog, self.placement)
        self.condition_sources.append(self.nswatch.conditions)
        # Make-before-break: copies clusters keep after losing them, until their replacements are Ready.
        self.moves = Moves(self.engine)
        self.moves.policy = self._move_policy
        # Staged rollouts: revisions, each cluster's pinned revision, status.rollout.
        self.rollouts = RolloutRunner(self.engine, inventory, objects, catalog, self.projected, self.engine.resend)
        self.copies.pinned = self.rollouts.pin
        self.copies.may_pin = self.rollouts.may_pin
        self.rollouts.exists = lambda space, name: self.placement(space, name) is not None
        self.condition_sources.append(self.rollouts.conditions)
        self.results.status_sources.append(self.rollouts.status)
        # Scheduled placements' choices (numberOfClusters …): decided by the lease holder, kept in their status.
        self.choices = Choices(self.engine, inventory, self._placement_failover_after)
        self.choices.requested = self.copies.requested
        self.condition_sources.append(self.choices.conditions)
        self.results.status_sources.append(self.choices.status)

    # --- feeding the engine --------------------------------------------------------------------

    def location_changed(self, name: str, location: dict[str, Any] | None) -> None:
        self._inventory_changed = True
        before = set(self.engine.location_instances(name))
        if location is None:
            self.engine.delete_location(name)
        else:
            self.engine.upsert_location(location)
        self.copies.definitions_changed(before | set(self.engine.location_instances(name)))
        self.moves.look()

    def sync_target_changed(self, name: str, target: dict[str, Any] | None) -> None:
        self._inventory_changed = True
        if target is None:
            self.engine.delete_sync_target(name)
        else:
            self.engine.upsert_sync_target(target)
            self.copies.definitions_changed({name})
        self.moves.look()
        self.choices.target_changed(name, target)

    def _observe(self, row: LogRow, obj: dict[str, Any] | None) -> None:
        key = row.key
        gone = obj is None or bool((obj.get("metadata") or {}).get("deletionTimestamp"))
        if not self.is_workload_space(key.space):
            return
        ref = ObjectRef(key.space, key.resource, key.namespace, key.name)
        if key.resource == PLACEMENTS:
            placements = self._placements.setdefault(key.space, {})
            child_hubs = not gone and for_child_hubs(obj)  # type: ignore[arg-type]
            self.rollouts.placement_changed((key.space, key.name), None if gone or child_hubs else obj)
            if gone or child_hubs:
                placements.pop(key.name, None)
                self.results.forget(key.space, key.name)
                self.choices.forget((key.space, key.name))
                self.engine.delete_placement(key.space, key.name)
            if child_hubs:
                self._place_object(row, ref, obj)  # type: ignore[arg-type]
                return
            if ref in self._workload:  # gone, or no longer for child hubs
                self._drop_object(ref)
            if not gone:
                previous = placements.get(key.name)
                placements[key.name] = obj  # type: ignore[assignment]
                spec_changed = previous is None or previous.get("spec") != obj.get("spec")  # type: ignore[union-attr]
                if spec_changed:
                    self.engine.upsert_placement(key.space, obj)  # type: ignore[arg-type]
                self.choices.observed((key.space, key.name), obj, leading=self.leadership.held,  # type: ignore
                                      spec_changed=spec_changed)
            return
        if key.resource == CUSTOMIZERS:
            users = self.copies.customizer_changed((key.space, key.namespace, key.name), None if gone else obj)
            for ref in users:  # their copies change: the engine sends them again
                w = self._workload.get(ref)
                if w is not None:
                    self._workload[ref] = w = dataclasses.replace(w, shaping=self.copies.token(ref))
                    self.engine.upsert_object(w)
            return
        if not self._placed_kind(row):
            return
        if gone or not is_workload(obj):  # type: ignore[arg-type]
            self._drop_object(ref)
            return
        self._place_object(row, ref, obj)  # type: ignore[arg-type]

    def _drop_object(self, ref: ObjectRef) -> None:
        self._digests.pop(ref, None)
        self.rollouts.forget(ref)
        self.projections.forget(ref)
        self.copies.object_changed(ref, None)
        if self._workload.pop(ref, None) is not None:
            self.engine.delete_object(ref)
            self.engine.narrow(ref, None)

    def _place_object(self, row: LogRow, ref: ObjectRef, obj: dict[str, Any]) -> None:
        key = row.key
        defines = None
        if key.resource == CRD_RESOURCE:
            spec = obj.get("spec") or {}
            defines = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        digest = content_digest(obj)
        previous = self._workload.get(ref)
        if previous is not None and self._digests.get(ref) == digest and previous.labels == labels_of(obj):
            return  # status or server fields only: clusters get nothing new
        self._digests[ref] = digest
        self.copies.object_changed(ref, obj)
        self.rollouts.object_changed(ref)
        workload = WorkloadObject(ref, obj.get("kind", ""), obj.get("apiVersion", ""), labels_of(obj),
                                  row.revision, bool(key.namespace), defines, self.copies.token(ref),
                                  references(key.resource, obj), pod_labels(key.resource, obj),
                                  service_selector(key.resource, obj))
        self._workload[ref] = workload
        self.engine.upsert_object(workload)
        self.engine.narrow(ref, target_clusters(obj))

    def load(self) -> None:
        """Read the Spaces, the EdgePlacements and the objects of the spaces that have EdgePlacements from the
        store (blocking; call at startup). The other spaces' objects are read when they get their first one."""
        self.rollouts.history.load()
        for row in self.objects.rows_of_resource(SPACES):
            self.namespaces.space_changed(child_id(row.key.space, row.key.name), orjson.loads(row.value))
        placed = {row.key.space for row in self.objects.rows_of_resource(PLACEMENTS)
                  if self.is_workload_space(row.key.space) and records_space(Entry(row))}
        for space in sorted(placed):
            for row in in_creation_order(self.recording.read_now(space)):
                self._observe(row, orjson.loads(row.value))

    def _space_rows(self, space: str) -> tuple[int, list[LogRow]]:
        """Every live object of a space, and the revision of the store they are a snapshot of (blocking)."""
        return self.objects.snapshot_of(space)

    def _space_read(self, space: str, rows: list[LogRow], held: list[Entry]) -> None:
        """A space's objects were read (its first EdgePlacement, or an APIBinding, wants them): record them, then
        the changes held during the read (those the read holds already are skipped as stale)."""
        for row in in_creation_order(rows):
            self._observe(row, orjson.loads(row.value))
        self.on_commit(held)
        self._settle(space)

    def _wants_objects(self, space: str) -> bool:
        return bool(self._placements.get(space)) or space in self._explaining or \
            any(space in p for p in self._providers.values())

    @contextlib.asynccontextmanager
    async def objects_of(self, space: str) -> AsyncIterator[None]:
        """The space's objects recorded while the block runs (to explain a placement in a space that has none)."""
        self._explaining[space] = self._explaining.get(space, 0) + 1
        try:
            self._settle(space)
            await self.recording.wait(space)
            yield
        finally:
            self._explaining[space] -= 1
            if not self._explaining[space]:
                del self._explaining[space]
            self._settle(space)

    def _settle(self, space: str) -> None:
        """Start recording a store-backed workload space's objects when something needs them; forget them when
        nothing does any more (its last EdgePlacement went)."""
        if space in self.external or not self.is_workload_space(space) or self.recording.reading(space):
            return
        wanted = self._wants_objects(space)
        if wanted and not self.recording.recorded(space):
            self.recording.start(space, None)
        elif not wanted and self.recording.recorded(space):
            self._forget_space(space)

    def _forget_space(self, space: str) -> None:
        """Drop every record of a space's objects (deleted, or no longer placed: nothing in the store changes)."""
        refs = [r for r in self._workload if r.space == space]
        self.copies.forget_space(space, refs)
        for ref in refs:
            del self._workload[ref]
            self._digests.pop(ref, None)
            self.projections.forget(ref)
        self.engine.delete_space(space)
        self.recording.forget(space)

    def on_commit(self, entries: Sequence[Entry]) -> None:
        spaces_gone = []
        placements_changed: set[str] = set()  # recorded spaces whose EdgePlacements changed
        for entry in entries:
            key = entry.row.key
            if key.resource == SPACES:
                space = child_id(key.space, key.name)
                if entry.row.deleted:
                    spaces_gone.append(space)
                if self.namespaces.space_changed(space, None if entry.row.deleted else entry.obj()):
                    self.engine.resend_space(space)
                    self.nswatch.space_changed(space)
                continue
            if not self.is_workload_space(key.space):
                continue
            if key.space in self.external:  # a kube space's mirror holds only what placement needs
                self._observe(entry.row, None if entry.row.deleted else entry.obj())
            elif self.recording.recorded(key.space):
                if not self.recording.stale(entry):
                    self._observe(entry.row, None if entry.row.deleted else entry.obj())
                    if key.resource == PLACEMENTS:
                        placements_changed.add(key.space)
            elif self.recording.hold(entry):
                continue  # the space's objects are being read: after them
            elif key.resource == PLACEMENTS and records_space(entry):
                self.recording.start(key.space, entry)  # its objects first, then this placement
        for space in spaces_gone:
            self._placements.pop(space, None)
            self._forget_space(space)
        for space in placements_changed - set(spaces_gone):
            self._settle(space)
        self.moves.look()  # before any stream can send the DELETEs of copies that must stay
        if self.engine.has_dirty_targets():
            self.add(DRAIN)  # clusters' desired sets changed: their streams hear of it now
        elif not self._drain_scheduled:  # placements' results, the inventory: soon, coalesced
            self._drain_scheduled = True
            asyncio.get_running_loop().call_later(WRITE_DELAY, self._drain_due)

    def _evacuate(self) -> None:
        """Drain SyncTargets whose ``spec.evictAfter`` has come: each is evicted (everything leaves it, its copies
        kept until their replacements are Ready: ``placement.moves``); a drain undone takes it back. Only targets
        with the field, or drained before, are looked at: this runs on every drain, heartbeats included."""
        now = dt.datetime.now(dt.UTC)
        draining = self.inventory.draining()
        for name in sorted(draining.keys() | self._drained):
            after = draining.get(name)
            due = after is not None and after <= now
            if not due and self.engine.evicted(name):
                self.engine.set_evicted(name, False)
            elif due and not self.engine.evicted(name):
                log.info("sync target %s drained: its objects move to the other clusters", name)
                self.engine.set_evicted(name, True)
            elif after is not None and not due:  # look again when it comes
                asyncio.get_running_loop().call_later((after - now).total_seconds() + 0.05, self.add, DRAIN)
            if self.engine.evicted(name):
                self._drained.add(name)
            else:
                self._drained.discard(name)

    def _specs_selecting(self, ref: ObjectRef) -> list[Mapping[str, Any]]:
        return [self._spec_of((space, name)) for space, name in self.engine.selecting(ref)]

    def _spec_of(self, key: tuple[str, str]) -> Mapping[str, Any]:
        return (self._placements.get(key[0], {}).get(key[1]) or {}).get("spec") or {}

    def _failover_after(self, ref: ObjectRef) -> float | None:
        """The shortest ``spec.failover.after`` of the placements selecting ``ref`` (seconds), or None."""
        return min((after for after in map(failover_after, self._specs_selecting(ref)) if after is not None),
                   default=None)

    def _move_policy(self, ref: ObjectRef) -> MovePolicy:
        return move_policy(self._specs_selecting(ref))

    def _placement_failover_after(self, key: tuple[str, str]) -> float | None:
        return failover_after(self._spec_of(key))

    def _decide_choices(self) -> None:
        """The lease holder makes the scheduled placements' due choices; looks again when a toleration or a
        failover.after runs out."""
        if not self.leadership.held:
            return
        changed, recheck = self.choices.decide()
        if changed:
            self.moves.look()  # clusters a new choice drops keep their copies until the new ones are Ready
        self._refresh |= changed
        if recheck is not None:
            delay = (recheck - self.choices.clock()).total_seconds() + 0.05
            asyncio.get_running_loop().call_later(max(delay, 0.05), self.add, DRAIN)

    def set_bound(self, space: str, bound: Mapping[tuple[str, str], str]) -> None:
        """What ``space`` serves through APIBindings, (group, plural) -> provider space: served there for downsync
        tests, and the provider's CRD sent along by ``crdFollow`` placements (``placement.workloads``)."""
        providers = frozenset(bound.values())
        before = self._providers.pop(space, frozenset())
        if providers:
            self._providers[space] = providers
        self.engine.set_bound(space, bound)
        for provider in sorted(before ^ providers):  # their CRDs are recorded while a binding serves them
            self._settle(provider)
        self.moves.look()
        self.add(DRAIN)

    def _health_changed(self, name: str) -> None:
        """A SyncTarget's Ready condition changed: scheduled placements with failover.after look again."""
        self.choices.target_changed(name, self.inventory.sync_target(name))
        self.add(DRAIN)

    def _drain_due(self) -> None:
        self._drain_scheduled = False
        self.add(DRAIN)

    def _rollout_poll_due(self) -> None:
        self._rollout_poll = False
        self.add(DRAIN)

    def _write_due(self) -> None:
        self._write_scheduled = False
        self.add(WRITE)

    def start(self, leadership: Leadership | None = None) -> None:
        self.rollouts.history.listen()
        if leadership is not None:
            self.leadership = self.rollouts.leadership = leadership
            leadership.listeners.append(lambda: self.add(DRAIN))
        # On the event loop, with no await: the inventory as it is now, then each change to it.
        for location in self.inventory.locations():
            self.location_changed(location["metadata"]["name"], location)
        for target in self.inventory.sync_targets():
            self.sync_target_changed(target["metadata"]["name"], target)
        self.inventory.listeners.append(self)
        self.inventory.health_listeners.append(self._health_changed)
        self.objects.bus.add_listener(self.on_commit)
        super().start()
        self.add(DRAIN)

    async def stop(self) -> None:
        await self.recording.stop()
        await super().stop()

    # --- writing results -----------------------------------------------------------------------

    def wake_streams(self) -> None:
        """Wake every stream waiting for its target to change (the server is stopping)."""
        waiters, self._target_waiters = self._target_waiters, {}
        for waiter in waiters.values():
            waiter.set()

    def refresh_status(self, space: str, name: str) -> None:
        """Write the placement's status again soon (a condition source changed its mind)."""
        self._refresh.add((space, name))
        self.add(DRAIN)

    async def handle(self, key: Any) -> bool:
        if key == WRITE:
            started = time.perf_counter()
            await self._write_results()
            if self.leadership.held:  # the others wrote nothing
                self.writes += 1
                self.write_seconds += time.perf_counter() - started
            return False
        started = time.perf_counter()
        await self._drain()
        for timing in self.drain_timings:
            timing(time.perf_counter() - started)
        return False

    def placement_count(self) -> int:
        return sum(len(placements) for placements in self._placements.values())

    async def _drain(self) -> None:
        """Take the engine's changes: wake the changed targets' streams and tell the listeners now; the
        placements' slices and statuses are written :data:`WRITE_DELAY` later, coalesced."""
        self._evacuate()
        if self.moves.settle():  # copies kept for a move: look again whether their replacements are Ready
            asyncio.get_running_loop().call_later(MOVE_POLL, self.add, DRAIN)
        self._decide_choices()
        placements, targets = self.engine.drain_dirty()
        resent, mapping_failed = await self.nswatch.look(placements, self.leadership.held)
        self._refresh |= mapping_failed
        if resent:
            self.add(DRAIN)  # clusters were given namespaces again: their streams wake on the next drain
        self._refresh |= await self.copies.look(placements)
        if self.copies.wake:
            self.add(DRAIN)  # clusters were given objects again: their streams wake on the next drain
        if await self.rollouts.look():
            self.add(DRAIN)  # rollouts moved clusters to other revisions: the same
        if self.rollouts.active() and not self._rollout_poll:  # deadlines and soaks come due, clusters get ready
            self._rollout_poll = True
            asyncio.get_running_loop().call_later(POLL, self._rollout_poll_due)
        self._refresh |= self.rollouts.changed
        self.rollouts.changed = set()
        if self.copies.watch_leaving():  # a lost cluster whose divided replicas may fail over: look again
            asyncio.get_running_loop().call_later(LEAVING_POLL, self.add, DRAIN)
        refresh, self._refresh = self._refresh, set()
        for target in targets:
            self.target_versions[target] = self.target_versions.get(target, 0) + 1
            waiter = self._target_waiters.pop(target, None)
            if waiter is not None:
                waiter.set()
        # A placement with upsync items changed: its clusters' upsync rules may have too, even when their
        # desired sets did not (their streams look again; a stream also looks at every ping).
        rules_changed: set[str] = set()
        for space, name in placements:
            upsync = ((self._placements.get(space, {}).get(name) or {}).get("spec") or {}).get("upsync") or []
            if upsync or self._upsync.pop((space, name), None):
                if upsync:
                    self._upsync[(space, name)] = True
                rules_changed.update(d.sync_target_name for d in self.engine.destinations(space, name))
        for target in rules_changed:
            waiter = self._target_waiters.pop(target, None)
            if waiter is not None:
                waiter.set()
        for target_listener in self.target_listeners:
            target_listener(targets, rules_changed)
        for listener in self.drain_listeners:
            listener(placements | refresh, targets)
        self._unwritten |= placements
        self._unwritten_status |= refresh
        if (self._unwritten or self._unwritten_status or self._inventory_changed) and not self._write_scheduled:
            self._write_scheduled = True
            asyncio.get_running_loop().call_later(WRITE_DELAY, self._write_due)

    async def _write_results(self) -> None:
        """Slices and statuses of the placements drained since the last write (by the lease holder only;
        the others keep them for when they lead)."""
        if not self.leadership.held:
            return
        placements, self._unwritten = self._unwritten, set()
        refresh, self._unwritten_status = self._unwritten_status, set()
        placements = {p for p in placements if p[0] not in self.external}
        refresh = {p for p in refresh if p[0] not in self.external}
        try:
            for space, name in sorted(placements):
                if name in self._placements.get(space, {}):
                    await self.results.slices(space, name)
                    await self.results.status(space, name)
            for space, name in sorted(refresh - placements):
                if name in self._placements.get(space, {}):
                    await self.results.status(space, name)
        except BaseException:  # written again on the retry (the writes are idempotent)
            self._unwritten |= placements
            self._unwritten_status |= refresh
            raise
        if self._inventory_changed:
            self._inventory_changed = False
            await self.results.location_statuses()

    async def reschedule(self, space: str, name: str) -> dict[str, Any]:
        """Ask for a scheduled placement's choice to be made again from scratch (by whichever hub process leads):
        the request is an annotation on the placement; returns the placement. StatusError 404 if absent."""
        rtype = self.catalog.by_group_resource(space, PLACEMENTS)
        if rtype is None or name not in self._placements.get(space, {}):
            raise not_found(PLACEMENTS, EDGE_GROUP, name)
        asked = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # each request a new value

        def annotate(obj: dict[str, Any]) -> dict[str, Any]:
            meta = obj.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), RESCHEDULE_ANNOTATION: asked}
            return obj

        return await self.objects.guaranteed_update(space, rtype, "", name, annotate,
                                                    WriteOptions(manager="spacehub-reschedule"))
