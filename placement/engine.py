"""The placement engine: EdgePlacements, inventory and workload objects → destinations and desired sets.

Owns the incremental resolution of KubeStellar PoC2023q4 placement (``edge.kubestellar.io/v2alpha1``):
which Locations and SyncTargets each EdgePlacement reaches (the SinglePlacementSlice content;
:mod:`placement.covering`), which workload objects it selects, what each SyncTarget must hold
(:mod:`placement.desired`), and the per-target change log syncers resume from
(:mod:`placement.changelog`). Inputs are plain objects and :class:`WorkloadObject` summaries, given in
any order; every call updates the results at once. Never does I/O and never knows about SQL, HTTP or
asyncio: the hub glue feeds it and reads it, and serialises the calls.

Where and what are defined in :mod:`placement.where` and :mod:`placement.selection`. A custom resource
(an object whose group and plural a CRD object of the same space defines) never drags its CRD along:
``missing_crds`` lists the CRDs of selected custom resources that the placement does not select itself
(relying on another placement is reported too, because that placement may change independently).

**Deletion.** Whatever makes an object unneeded — the object deleted or no longer matching (its labels
or its Namespace's labels changed), a placement deleted or edited, a SyncTarget relabelled out of its
Locations or deleted, a Location relabelled or deleted — removes it from exactly the targets whose
remaining covering placements do not select it, and from no other. Each input call logs each target's
net change once. A placement edit changing both its location selectors and its downsync is accounted
per target from its old state to its new one for that reason.

**Change log and first contact.** A syncer that presents seq 0 ("never synced"), a seq below its log's
floor (the ring moved past it) or above the current seq (handed out by an earlier hub process) gets
``None`` from ``changes_since``: it reloads ``desired()`` and resumes from ``current_seq()``, read
without an intervening update. Each log keeps the last ``change_log_size`` changes.

**Dirty sets.** ``drain_dirty`` reports placements whose destinations (Location, SyncTarget, UID),
matching Location count, selection (objects or the indexes of the tests they match), spec or missing
CRDs changed, plus created and deleted placements; and the targets whose desired set (entries or their
objects' content) changed. Each input call's effect is exact; a change undone by a later call before the
drain is still reported.

**Inventory.** Locations and SyncTargets live in ``inventory_space``; ``delete_space`` of that space
removes the whole inventory. An inventory object or EdgePlacement carrying ``metadata.deletionTimestamp``
counts as deleted, like workload objects (for which the glue calls ``delete_object``).
"""

from __future__ import annotations

from collections.abc import Mapping

from placement.changelog import ChangeLog, ChangeLogs
from placement.covering import Coverage
from placement.desired import DesiredSets
from placement.explain import TargetView, explain_spec
from placement.model import Change, DesiredEntry, Destination, Explanation, ObjectRef, WorkloadObject
from placement.ordering import NAMESPACE_RESOURCE, RANK
from placement.records import (
    CoverKey,
    NsKey,
    PKey,
    PlacementRecord,
    decrement,
    entry_kind,
    namespace_ref,
)
from placement.selection import matching_tests
from placement.spec import compile_spec, spec_of
from placement.where import metadata


class PlacementEngine:
    def __init__(self, inventory_space: str = "inventory", change_log_size: int = 10_000, *,
                 first_seq: int = 0) -> None:
        self.inventory_space = inventory_space
        self._changes = ChangeLogs(change_log_size, first_seq)
        # Placements and workload objects.
        self._placements: dict[PKey, PlacementRecord] = {}
        self._space_placements: dict[str, dict[PKey, None]] = {}
        self._objects: dict[ObjectRef, WorkloadObject] = {}
        self._labels: dict[ObjectRef, dict[str, str]] = {}
        self._space_objects: dict[str, dict[ObjectRef, None]] = {}
        self._namespace_members: dict[NsKey, set[ObjectRef]] = {}
        self._crds: dict[tuple[str, str, str], ObjectRef] = {}  # (space, group, plural) -> CRD object
        self._selectors_of: dict[ObjectRef, set[PKey]] = {}
        # The parts.
        self._desired = DesiredSets(self._placements, self._selectors_of, self._namespace_members, self._changes)
        self._coverage = Coverage(self._placements, self._desired)
        # Placements whose selection, spec or missing CRDs changed, or which were created or deleted, since
        # the last drain (the coverage reports the rest).
        self._dirty_placements: set[PKey] = set()
        # The parts' own containers, which the tests and bench/placement_bench.py inspect.
        self._logs = self._changes.logs
        self._covers = self._desired.covers
        self._desired_cache = self._desired.desired_cache

    # ------------------------------------------------------------------------------------------
    # Inputs: inventory

    def upsert_location(self, obj: dict) -> None:
        self._coverage.upsert_location(obj)

    def delete_location(self, name: str) -> None:
        self._coverage.delete_location(name)

    def upsert_sync_target(self, obj: dict) -> None:
        self._coverage.upsert_sync_target(obj)

    def delete_sync_target(self, name: str) -> None:
        self._coverage.delete_sync_target(name)

    # ------------------------------------------------------------------------------------------
    # Inputs: placements and workload objects

    def upsert_placement(self, space: str, obj: dict) -> None:
        meta = metadata(obj)
        name = str(meta.get("name") or "")
        if meta.get("deletionTimestamp"):
            self.delete_placement(space, name)
            return
        spec = compile_spec(spec_of(obj))
        key = (space, name)
        p = self._placements.get(key)
        if p is None:
            p = self._placements[key] = PlacementRecord(key, spec)
            self._space_placements.setdefault(space, {})[key] = None
            what_changed = where_changed = True
        else:
            if p.spec == spec:
                return
            what_changed = p.spec.tests != spec.tests
            where_changed = p.spec.location_selectors != spec.location_selectors
            p.spec = spec
        self._dirty_placements.add(key)
        new_locations = p.locations
        if where_changed:
            new_locations = self._coverage.matching_locations(spec)
        if what_changed and where_changed and p.locations:
            self._replace_placement(p, new_locations)
            return
        # A new placement selects before it covers anything, which costs no per-target work.
        if what_changed:
            self._apply_selections([(p, ref, self._match(p, ref)) for ref in self._space_objects.get(space, ())])
        if where_changed:
            self._coverage.set_locations(p, new_locations)

    def _replace_placement(self, p: PlacementRecord, new_locations: dict[str, list[int]]) -> None:
        """Change where and what of a placement at once, logging each target's net change only.

        Done in sequence, targets reached before and after through different Locations would see the
        selection change twice (a delete then a re-creation of objects they keep). Instead the placement
        is detached silently, reselects (costing no per-target work), is reattached silently, and each
        affected target is accounted from its old cover with the old selection to its new cover.
        """
        old_selection = dict(p.selected)
        affected = self._coverage.reached_targets(p.locations.keys() | new_locations.keys())
        targets = self._coverage.targets
        before = {name: targets[name].cover for name in affected}
        self._coverage.set_locations(p, {}, silent=True)
        self._apply_selections([(p, ref, self._match(p, ref)) for ref in self._space_objects.get(p.key[0], ())])
        self._coverage.set_locations(p, new_locations, silent=True)
        memo: dict[tuple[CoverKey, CoverKey], bool] = {}
        for name in sorted(affected):
            self._desired.account(name, before[name], targets[name].cover, (p.key, old_selection), memo)

    def delete_placement(self, space: str, name: str) -> None:
        key = (space, name)
        p = self._placements.get(key)
        if p is None:
            return
        # Where first: once no target is covered by it, dropping the selection costs no per-target work.
        self._coverage.set_locations(p, {})
        for ref in list(p.selected):
            self._set_selection(p, ref, [])
        del self._placements[key]
        del self._space_placements[space][key]
        self._desired.forget_placement(key)
        self._dirty_placements.add(key)

    def upsert_object(self, obj: WorkloadObject) -> None:
        ref = obj.ref
        old = self._objects.get(ref)
        if old == obj:
            return
        labels = dict(obj.labels)
        labels_changed = old is None or self._labels[ref] != labels
        before = self._desired.covers_holding(ref) if old is not None else set()
        self._objects[ref] = obj
        self._labels[ref] = labels
        if old is None:
            self._space_objects.setdefault(ref.space, {})[ref] = None
            if ref.namespace:
                self._namespace_members.setdefault((ref.space, ref.namespace), set()).add(ref)
        if old is None or old.defines != obj.defines:
            self._update_crd_index(ref, old.defines if old is not None else None, obj.defines)
        updates = [(p, ref, self._match(p, ref))
                   for p in map(self._placements.__getitem__, self._space_placements.get(ref.space, ()))]
        if ref.resource == NAMESPACE_RESOURCE and labels_changed:
            # One batch with the objects in it, so a Namespace entry turning from explicit to implicit is
            # one upsert, never a delete followed by a re-creation.
            updates += self._namespace_member_updates(ref.space, ref.name)
        self._apply_selections(updates)
        if old is not None:
            self._desired.content_changed(ref, before)

    def delete_object(self, ref: ObjectRef) -> None:
        old = self._objects.get(ref)
        if old is None:
            return
        updates = [(self._placements[key], ref, []) for key in self._selectors_of.get(ref, ())]
        del self._objects[ref]
        del self._labels[ref]
        if ref.resource == NAMESPACE_RESOURCE:
            updates += self._namespace_member_updates(ref.space, ref.name)
        self._apply_selections(updates)
        del self._space_objects[ref.space][ref]
        if ref.namespace:
            members = self._namespace_members[(ref.space, ref.namespace)]
            members.discard(ref)
            if not members:
                del self._namespace_members[(ref.space, ref.namespace)]
        if old.defines is not None:
            self._update_crd_index(ref, old.defines, None)

    def delete_space(self, space: str) -> None:
        if space == self.inventory_space:
            for name in list(self._coverage.targets):
                self.delete_sync_target(name)
            for name in list(self._coverage.locations):
                self.delete_location(name)
        for key in list(self._space_placements.get(space, ())):
            self.delete_placement(*key)
        for ref in list(self._space_objects.get(space, ())):
            self.delete_object(ref)
        self._space_placements.pop(space, None)
        self._space_objects.pop(space, None)

    # ------------------------------------------------------------------------------------------
    # Outputs

    def destinations(self, space: str, placement: str) -> list[Destination]:
        return self._coverage.destinations((space, placement))

    def location_instances(self, name: str) -> list[str]:
        """The SyncTargets a Location's instanceSelector selects (for the Location's status)."""
        return self._coverage.location_instances(name)

    def matching_location_count(self, space: str, placement: str) -> int:
        p = self._placements.get((space, placement))
        return len(p.locations) if p is not None else 0

    def selected_objects(self, space: str, placement: str) -> dict[ObjectRef, list[int]]:
        p = self._placements.get((space, placement))
        return {ref: list(indexes) for ref, indexes in sorted(p.selected.items())} if p is not None else {}

    def missing_crds(self, space: str, placement: str) -> list[str]:
        p = self._placements.get((space, placement))
        if p is None:
            return []
        missing = {ref.resource for ref in p.selected
                   if (crd := self._crd_of(ref)) is not None and crd not in p.selected}
        return sorted(missing)

    def problems(self, space: str, placement: str) -> list[str]:
        """What is wrong with a stored placement's spec (for its ``validation-error`` annotations)."""
        p = self._placements.get((space, placement))
        return list(p.spec.problems) if p is not None else []

    def desired(self, target: str) -> list[DesiredEntry]:
        self._track(target)
        t = self._coverage.targets.get(target)
        if t is None:
            return []
        return list(self._desired.desired_of(t.cover))

    def object_destinations(self, ref: ObjectRef) -> list[str]:
        keys = set(self._selectors_of.get(ref, ()))
        if ref.resource == NAMESPACE_RESOURCE:
            # A Namespace must also exist wherever an object in it goes.
            for member in self._namespace_members.get((ref.space, ref.name), ()):
                keys |= self._selectors_of.get(member, set())
        targets: set[str] = set()
        for key in keys:
            targets.update(self._placements[key].target_paths)
        return sorted(targets)

    def wants_singleton_status(self, ref: ObjectRef) -> bool:
        return any(self._placements[key].spec.want_singleton for key in self._selectors_of.get(ref, ()))

    def current_seq(self, target: str) -> int:
        return self._track(target).last

    def changes_since(self, target: str, seq: int) -> list[Change] | None:
        return self._track(target).since(seq)

    def drain_dirty(self) -> tuple[set[tuple[str, str]], set[str]]:
        targets = self._desired.drain_dirty_targets()
        placements = self._dirty_placements | self._coverage.dirty_placements
        self._dirty_placements = set()
        self._coverage.dirty_placements.clear()
        return placements, targets

    def explain(self, space: str, spec: dict) -> Explanation:
        locations = self._coverage.locations
        return explain_spec(
            compile_spec(spec_of(spec)),
            {name: loc.spec for name, loc in locations.items()},
            lambda name: locations[name].targets,
            {name: TargetView(name, t.labels, t.uid) for name, t in self._coverage.targets.items()},
            [(self._objects[ref], self._labels[ref]) for ref in self._space_objects.get(space, ())],
            self._namespace_labels,
            self._crd_of,
        )

    # ------------------------------------------------------------------------------------------
    # What: selection

    def _namespace_labels(self, space: str, name: str) -> Mapping[str, str] | None:
        return self._labels.get(namespace_ref((space, name)))

    def _match(self, p: PlacementRecord, ref: ObjectRef) -> list[int]:
        return matching_tests(p.spec.tests, ref, self._labels[ref], self._namespace_labels)

    def _crd_of(self, ref: ObjectRef) -> ObjectRef | None:
        return self._crds.get((ref.space, ref.group, ref.plural)) if ref.group else None

    def _update_crd_index(self, ref: ObjectRef, old: tuple[str, str] | None, new: tuple[str, str] | None) -> None:
        changed: list[tuple[str, str]] = []
        if old is not None and self._crds.get((ref.space, *old)) == ref:
            del self._crds[(ref.space, *old)]
            changed.append(old)
        if new is not None:
            self._crds[(ref.space, *new)] = ref
            changed.append(new)
        if not changed:
            return
        # missing_crds of placements selecting such custom resources may have changed.
        for key in self._space_placements.get(ref.space, ()):
            p = self._placements[key]
            if any((r.group, r.plural) in changed for r in p.selected):
                self._dirty_placements.add(key)

    def _namespace_member_updates(self, space: str,
                                  namespace: str) -> list[tuple[PlacementRecord, ObjectRef, list[int]]]:
        """The selections of the objects in a Namespace whose labels changed (or which came or went)."""
        placements = [p for key in self._space_placements.get(space, ())
                      if (p := self._placements[key]).spec.uses_namespace_selectors]
        return [(p, ref, self._match(p, ref))
                for ref in self._namespace_members.get((space, namespace), ()) for p in placements]

    def _apply_selections(self, updates: list[tuple[PlacementRecord, ObjectRef, list[int]]]) -> None:
        """Apply new selections: additions in apply order, then index changes, then removals in deletion order.

        Additions go first so an object moving from one placement to another in the same cover never
        leaves it transiently, and the orders make the logged changes of one update follow
        :mod:`placement.ordering` (a selected Namespace before the objects in it, and after them on removal).
        """
        adds, removes = [], []
        for p, ref, indexes in updates:
            old = p.selected.get(ref)
            if old is None:
                if indexes:
                    adds.append((RANK[entry_kind(ref)], ref, p.key))
            elif not indexes:
                removes.append((RANK[entry_kind(ref)], ref, p.key))
            elif old != indexes:
                self._set_selection(p, ref, indexes)
        wanted = {(ref, p.key): indexes for p, ref, indexes in updates}
        for _, ref, key in sorted(adds):
            self._set_selection(self._placements[key], ref, wanted[(ref, key)])
        for _, ref, key in sorted(removes, reverse=True):
            self._set_selection(self._placements[key], ref, [])

    def _set_selection(self, p: PlacementRecord, ref: ObjectRef, indexes: list[int]) -> None:
        old = p.selected.get(ref)
        if old == indexes or (old is None and not indexes):
            return
        self._dirty_placements.add(p.key)
        if old is not None and indexes:
            p.selected[ref] = indexes  # other tests matched; the desired sets are unchanged
            return
        ns = (ref.space, ref.namespace) if ref.namespace else None
        if indexes:
            p.selected[ref] = indexes
            if ns is not None:
                p.namespace_counts[ns] = p.namespace_counts.get(ns, 0) + 1
            holders = self._selectors_of.setdefault(ref, set())
            holders.add(p.key)
            self._desired.selection_added(p.key, ref, ns, holders)
        else:
            del p.selected[ref]
            if ns is not None:
                decrement(p.namespace_counts, ns)
            holders = self._selectors_of[ref]
            holders.discard(p.key)
            if not holders:
                del self._selectors_of[ref]
            self._desired.selection_removed(p.key, ref, ns, holders)


    # ------------------------------------------------------------------------------------------
    # Change logs

    def _track(self, target: str) -> ChangeLog:
        return self._desired.track(target, self._coverage.targets.get(target))
