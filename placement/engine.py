"""The placement engine: EdgePlacements, inventory and workload objects → destinations and desired sets.

Owns the incremental resolution of KubeStellar PoC2023q4 placement (``edge.kubestellar.io/v2alpha1``):
which Locations and SyncTargets each EdgePlacement reaches (the SinglePlacementSlice content), which
workload objects it selects, what each SyncTarget must hold (:mod:`placement.desired`), and the
per-target change log syncers resume from (:mod:`placement.changelog`). Inputs are plain objects and
:class:`WorkloadObject` summaries, given in any order; every call updates the results at once. Never
does I/O and never knows about SQL, HTTP or asyncio: the hub glue feeds it and reads it, and
serialises the calls.

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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from placement.changelog import ChangeLog, ChangeLogs
from placement.desired import DesiredSets
from placement.explain import TargetView, explain_spec
from placement.model import Change, DesiredEntry, Destination, Explanation, ObjectRef, WorkloadObject
from placement.ordering import NAMESPACE_RESOURCE, RANK
from placement.records import (
    CoverKey,
    NsKey,
    PKey,
    PlacementRecord,
    TargetRecord,
    decrement,
    entry_kind,
    namespace_ref,
)
from placement.selection import matching_tests
from placement.spec import compile_spec, spec_of
from placement.where import (
    LocationSpec,
    compile_location,
    exact_requirement,
    labels_of,
    matching_selectors,
    metadata,
)


@dataclass
class _Location:
    spec: LocationSpec
    targets: set[str] = field(default_factory=set)
    placements: set[PKey] = field(default_factory=set)
    index_key: tuple[str, str] | None = None


class PlacementEngine:
    def __init__(self, inventory_space: str = "inventory", change_log_size: int = 10_000, *,
                 first_seq: int = 0) -> None:
        self.inventory_space = inventory_space
        self._changes = ChangeLogs(change_log_size, first_seq)
        # Inventory, with label indexes so a Location finds its SyncTargets (and vice versa) without a scan.
        self._locations: dict[str, _Location] = {}
        self._locations_by_label: dict[tuple[str, str], set[str]] = {}
        self._locations_unindexed: set[str] = set()
        self._targets: dict[str, TargetRecord] = {}
        self._targets_by_label: dict[tuple[str, str], set[str]] = {}
        # Placements and workload objects.
        self._placements: dict[PKey, PlacementRecord] = {}
        self._space_placements: dict[str, dict[PKey, None]] = {}
        self._objects: dict[ObjectRef, WorkloadObject] = {}
        self._labels: dict[ObjectRef, dict[str, str]] = {}
        self._space_objects: dict[str, dict[ObjectRef, None]] = {}
        self._namespace_members: dict[NsKey, set[ObjectRef]] = {}
        self._crds: dict[tuple[str, str, str], ObjectRef] = {}  # (space, group, plural) -> CRD object
        self._selectors_of: dict[ObjectRef, set[PKey]] = {}
        # Covers and outputs.
        self._desired = DesiredSets(self._placements, self._selectors_of, self._namespace_members, self._changes)
        self._dirty_placements: set[PKey] = set()
        # The parts' own containers, which the tests and bench/placement_bench.py inspect.
        self._logs = self._changes.logs
        self._covers = self._desired.covers
        self._desired_cache = self._desired.desired_cache

    # ------------------------------------------------------------------------------------------
    # Inputs: inventory

    def upsert_location(self, obj: dict) -> None:
        meta = metadata(obj)
        name = str(meta.get("name") or "")
        if meta.get("deletionTimestamp"):
            self.delete_location(name)
            return
        spec = compile_location(obj)
        loc = self._locations.get(name)
        if loc is not None and loc.spec == spec:
            return
        new_placements = {key: indexes for key, p in self._placements.items()
                          if (indexes := matching_selectors(p.spec.location_selectors, spec.labels))}
        if loc is None or loc.spec.instance_selector != spec.instance_selector or loc.spec.problem != spec.problem:
            new_targets = self._select_targets(spec)
        else:
            new_targets = set(loc.targets)
        if loc is None:
            loc = self._locations[name] = _Location(spec)
        self._unindex_location(name, loc)
        loc.spec = spec
        self._index_location(name, loc)
        self._rewire_location(name, loc, new_placements, new_targets)

    def delete_location(self, name: str) -> None:
        loc = self._locations.get(name)
        if loc is None:
            return
        self._rewire_location(name, loc, {}, set())
        self._unindex_location(name, loc)
        del self._locations[name]

    def upsert_sync_target(self, obj: dict) -> None:
        meta = metadata(obj)
        name = str(meta.get("name") or "")
        if meta.get("deletionTimestamp"):
            self.delete_sync_target(name)
            return
        labels, uid = labels_of(obj), str(meta.get("uid") or "")
        target = self._targets.get(name)
        if target is not None and target.labels == labels and target.uid == uid:
            return
        if target is None:
            target = self._targets[name] = TargetRecord(name, {}, uid)
            self._desired.add_target(target)
        uid_changed = target.uid != uid
        self._index_labels(self._targets_by_label, name, target.labels, add=False)
        target.labels, target.uid = labels, uid
        self._index_labels(self._targets_by_label, name, labels, add=True)
        new_locations = {loc for loc in self._candidate_locations(labels)
                         if self._locations[loc].spec.instance_selector.matches(labels)}
        old_locations = target.locations
        for loc in old_locations - new_locations:
            self._locations[loc].targets.discard(name)
        for loc in new_locations - old_locations:
            self._locations[loc].targets.add(name)
        target.locations = new_locations
        self._recover([name])
        touched = (old_locations ^ new_locations) | (new_locations if uid_changed else set())
        self._refresh_destinations((key, loc) for loc in touched for key in self._locations[loc].placements)

    def delete_sync_target(self, name: str) -> None:
        target = self._targets.get(name)
        if target is None:
            return
        old_locations = target.locations
        for loc in old_locations:
            self._locations[loc].targets.discard(name)
        target.locations = set()
        self._recover([name])
        self._desired.remove_target(target)
        self._index_labels(self._targets_by_label, name, target.labels, add=False)
        del self._targets[name]
        self._refresh_destinations((key, loc) for loc in old_locations for key in self._locations[loc].placements)

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
            new_locations = {name: indexes for name, loc in self._locations.items()
                             if (indexes := matching_selectors(spec.location_selectors, loc.spec.labels))}
        if what_changed and where_changed and p.locations:
            self._replace_placement(p, new_locations)
            return
        # A new placement selects before it covers anything, which costs no per-target work.
        if what_changed:
            self._apply_selections([(p, ref, self._match(p, ref)) for ref in self._space_objects.get(space, ())])
        if where_changed:
            self._set_locations(p, new_locations)

    def _replace_placement(self, p: PlacementRecord, new_locations: dict[str, list[int]]) -> None:
        """Change where and what of a placement at once, logging each target's net change only.

        Done in sequence, targets reached before and after through different Locations would see the
        selection change twice (a delete then a re-creation of objects they keep). Instead the placement
        is detached silently, reselects (costing no per-target work), is reattached silently, and each
        affected target is accounted from its old cover with the old selection to its new cover.
        """
        old_selection = dict(p.selected)
        affected: set[str] = set()
        for name in p.locations.keys() | new_locations.keys():
            affected |= self._locations[name].targets
        before = {name: self._targets[name].cover for name in affected}
        self._set_locations(p, {}, silent=True)
        self._apply_selections([(p, ref, self._match(p, ref)) for ref in self._space_objects.get(p.key[0], ())])
        self._set_locations(p, new_locations, silent=True)
        memo: dict[tuple[CoverKey, CoverKey], bool] = {}
        for name in sorted(affected):
            self._desired.account(name, before[name], self._targets[name].cover, (p.key, old_selection), memo)

    def delete_placement(self, space: str, name: str) -> None:
        key = (space, name)
        p = self._placements.get(key)
        if p is None:
            return
        # Where first: once no target is covered by it, dropping the selection costs no per-target work.
        self._set_locations(p, {})
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
            for name in list(self._targets):
                self.delete_sync_target(name)
            for name in list(self._locations):
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
        p = self._placements.get((space, placement))
        if p is None:
            return []
        return sorted((Destination(loc, t, uid) for loc, pairs in p.destinations.items() for t, uid in pairs),
                      key=lambda d: (d.location_name, d.sync_target_name))

    def location_instances(self, name: str) -> list[str]:
        """The SyncTargets a Location's instanceSelector selects (for the Location's status)."""
        loc = self._locations.get(name)
        return sorted(loc.targets) if loc is not None else []

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
        t = self._targets.get(target)
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
        placements, self._dirty_placements = self._dirty_placements, set()
        return placements, targets

    def explain(self, space: str, spec: dict) -> Explanation:
        return explain_spec(
            compile_spec(spec_of(spec)),
            {name: loc.spec for name, loc in self._locations.items()},
            lambda name: self._locations[name].targets,
            {name: TargetView(name, t.labels, t.uid) for name, t in self._targets.items()},
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
    # Where: locations, targets and their covering placements

    def _select_targets(self, spec: LocationSpec) -> set[str]:
        if spec.problem or spec.instance_selector.nothing:
            return set()
        exact = exact_requirement(spec.instance_selector)
        candidates: Iterable[str] = self._targets_by_label.get(exact, ()) if exact else self._targets
        return {t for t in candidates if spec.instance_selector.matches(self._targets[t].labels)}

    def _candidate_locations(self, labels: Mapping[str, str]) -> set[str]:
        out = set(self._locations_unindexed)
        for item in labels.items():
            out |= self._locations_by_label.get(item, set())
        return out

    def _index_location(self, name: str, loc: _Location) -> None:
        if loc.spec.problem or loc.spec.instance_selector.nothing:
            loc.index_key = None
            return  # selects nothing, so no SyncTarget needs to find it
        loc.index_key = exact_requirement(loc.spec.instance_selector)
        if loc.index_key is None:
            self._locations_unindexed.add(name)
        else:
            self._locations_by_label.setdefault(loc.index_key, set()).add(name)

    def _unindex_location(self, name: str, loc: _Location) -> None:
        self._locations_unindexed.discard(name)
        if loc.index_key is not None:
            names = self._locations_by_label[loc.index_key]
            names.discard(name)
            if not names:
                del self._locations_by_label[loc.index_key]
            loc.index_key = None

    @staticmethod
    def _index_labels(index: dict[tuple[str, str], set[str]], name: str, labels: Mapping[str, str], *,
                      add: bool) -> None:
        for item in labels.items():
            if add:
                index.setdefault(item, set()).add(name)
            else:
                names = index[item]
                names.discard(name)
                if not names:
                    del index[item]

    def _rewire_location(self, name: str, loc: _Location, new_placements: dict[PKey, list[int]],
                         new_targets: set[str]) -> None:
        """Give a Location its new matching placements and selected targets, and propagate."""
        old_placements, old_targets = set(loc.placements), loc.targets
        placements_changed: set[PKey] = set()
        for key in old_placements - new_placements.keys():
            del self._placements[key].locations[name]
            placements_changed.add(key)
        for key, indexes in new_placements.items():
            p = self._placements[key]
            if name not in p.locations:
                placements_changed.add(key)
            p.locations[name] = indexes
        loc.placements = set(new_placements)
        for t in old_targets - new_targets:
            self._targets[t].locations.discard(name)
        for t in new_targets - old_targets:
            self._targets[t].locations.add(name)
        loc.targets = new_targets
        self._recover((old_targets | new_targets) if placements_changed else (old_targets ^ new_targets))
        refresh = set(placements_changed)
        if old_targets != new_targets:
            refresh |= old_placements | loc.placements
        self._refresh_destinations((key, name) for key in refresh)

    def _set_locations(self, p: PlacementRecord, new: dict[str, list[int]], *, silent: bool = False) -> None:
        old = p.locations
        changed = old.keys() ^ new.keys()
        p.locations = new
        for name in new.keys() - old.keys():
            self._locations[name].placements.add(p.key)
        for name in old.keys() - new.keys():
            self._locations[name].placements.discard(p.key)
        targets: set[str] = set()
        for name in changed:
            targets |= self._locations[name].targets
        self._recover(targets, silent=silent)
        self._refresh_destinations((p.key, name) for name in changed)

    def _refresh_destinations(self, pairs: Iterable[tuple[PKey, str]]) -> None:
        """Recompute the destinations of these (placement, Location) pairs; mark changed placements dirty."""
        touched: set[PKey] = set()
        for key, name in pairs:
            p = self._placements.get(key)
            if p is None:
                continue
            touched.add(key)
            loc = self._locations.get(name)
            new = frozenset((t, self._targets[t].uid) for t in loc.targets) if loc and name in p.locations else None
            old = p.destinations.get(name)
            if new == old or (not new and not old):
                continue
            self._dirty_placements.add(key)
            for t, _ in old or ():
                if p.target_paths[t] == 1:
                    del p.target_paths[t]
                else:
                    p.target_paths[t] -= 1
            for t, _ in new or ():
                p.target_paths[t] = p.target_paths.get(t, 0) + 1
            if new:
                p.destinations[name] = new
            else:
                del p.destinations[name]
        for key in touched:
            p = self._placements[key]
            if len(p.locations) != p.location_count:
                p.location_count = len(p.locations)
                self._dirty_placements.add(key)

    def _recover(self, names: Iterable[str], *, silent: bool = False) -> None:
        """Recompute the covering placements of these targets and move those whose set changed."""
        # Content changes so far are charged to the targets that were in the changed covers; a target
        # that moves is charged with its own net change only.
        self._desired.flush_dirty()
        memo: dict[tuple[CoverKey, CoverKey], bool] | None = None if silent else {}
        for name in names:
            t = self._targets.get(name)
            if t is None:
                continue
            new = frozenset().union(*(self._locations[loc].placements for loc in t.locations))
            if new != t.cover:
                self._desired.move(t, new, memo)

    # ------------------------------------------------------------------------------------------
    # Change logs

    def _track(self, target: str) -> ChangeLog:
        return self._desired.track(target, self._targets.get(target))
