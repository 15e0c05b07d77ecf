"""The placement engine: EdgePlacements, inventory and workload objects → destinations and desired sets.

Owns the incremental resolution of KubeStellar PoC2023q4 placement (``edge.kubestellar.io/v2alpha1``)
as one façade over its parts: which Locations and SyncTargets each EdgePlacement reaches (the
SinglePlacementSlice content; :mod:`placement.covering`), which workload objects it selects
(:mod:`placement.workloads`), what each SyncTarget must hold (:mod:`placement.desired`), and the
per-target change log syncers resume from (:mod:`placement.changelog`). Inputs are plain objects and
:class:`WorkloadObject` summaries, given in any order; every call updates the results at once. Never
does I/O and never knows about SQL, HTTP or asyncio: the hub glue feeds it and reads it, and
serialises the calls.

**Deletion.** Whatever makes an object unneeded — the object deleted or no longer matching (its labels
or its Namespace's labels changed), a placement deleted or edited, a SyncTarget relabelled out of its
Locations or deleted, a Location relabelled or deleted — removes it from exactly the targets whose
remaining covering placements do not select it, and from no other. Each input call logs each target's
net change once. A placement edit changing both its location selectors and its downsync is accounted
per target from its old state to its new one for that reason. A copy the glue holds (:meth:`hold`, for a
make-before-break move, :mod:`placement.moves`) stays in its target's desired set, its DELETE withheld, until
:meth:`let_go` logs it.

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
from typing import Any

from apiserver.builtin.kinds import builtin_types
from placement.changelog import ChangeLog, ChangeLogs
from placement.covering import Coverage
from placement.desired import DesiredSets
from placement.explain import TargetView, explain_spec
from placement.kinds import placement_types
from placement.leaving import LeavingCopies
from placement.locations import metadata
from placement.model import Change, DesiredEntry, Destination, Explanation, ObjectRef, StatusWants, WorkloadObject
from placement.ordering import NAMESPACE_RESOURCE, apply_order
from placement.records import CoverKey, NsKey, PKey, PlacementRecord, entry_kind, namespace_ref
from placement.schedulingspec import SchedulingSpec
from placement.spec import PlacementSpec, compile_spec, spec_of
from placement.workloads import Selections
from spaces.nsmapping import NamespaceMapping


class PlacementEngine:
    def __init__(self, inventory_space: str = "inventory", change_log_size: int = 10_000, *,
                 first_seq: int = 0, served_everywhere: frozenset[tuple[str, str]] | None = None) -> None:
        """``served_everywhere``: (group, plural) of the kinds every space serves besides its CRDs' (by
        default the built-in Kubernetes kinds and the placement kinds); what a downsync test names beyond
        them and the space's CRDs is reported as unserved."""
        self.inventory_space = inventory_space
        # Placements, read by every part; where they reach and what they select are kept in their records.
        self._placements: dict[PKey, PlacementRecord] = {}
        self._space_placements: dict[str, dict[PKey, None]] = {}
        self._mapping_placements: dict[str, set[PKey]] = {}  # per space, its placements setting namespaceMapping
        # Which placements select each object, and the objects of each namespace: written by the
        # selection, read by the desired sets.
        selectors_of: dict[ObjectRef, set[PKey]] = {}
        namespace_members: dict[NsKey, set[ObjectRef]] = {}
        self._changes = ChangeLogs(change_log_size, first_seq)
        self._desired = DesiredSets(self._placements, selectors_of, namespace_members, self._changes)
        self._coverage = Coverage(self._placements, self._desired)
        if served_everywhere is None:
            served_everywhere = frozenset((t.group, t.plural) for t in builtin_types() + placement_types())
        self._selections = Selections(self._placements, self._space_placements, selectors_of, namespace_members,
                                      self._desired, served_everywhere)
        # Placements created, deleted or given a new spec since the last drain (the parts report what
        # they change).
        self._dirty_placements: set[PKey] = set()
        self._narrowed: dict[ObjectRef, frozenset[str]] = {}  # objects naming their own target clusters
        self._leaving = LeavingCopies()  # copies clusters keep after losing them, until placement.moves lets go

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

    def set_evicted(self, name: str, evicted: bool) -> None:
        """Drain a SyncTarget (no Location selects it; everything leaves it) or take it back."""
        self._coverage.set_evicted(name, evicted)

    def evicted(self, name: str) -> bool:
        t = self._coverage.targets.get(name)
        return t is not None and t.evicted

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
            # A scheduled placement reaches nothing until its choice is made (``set_chosen``).
            p = self._placements[key] = PlacementRecord(key, spec, chosen=None if spec.scheduling is None
                                                        else frozenset())
            self._space_placements.setdefault(space, {})[key] = None
            self._coverage.candidates_changed.add(key)
            what_changed = where_changed = True
            ownership_changed, kept = False, set()
            mapping_changed = spec.namespace_mapping is not None
        else:
            if p.spec == spec:
                return
            if p.spec.scheduling != spec.scheduling:
                self._coverage.candidates_changed.add(key)
                if spec.scheduling is None:
                    self._coverage.set_chosen({key: None})
            what_changed = (p.spec.tests != spec.tests or p.spec.crd_follow != spec.crd_follow
                            or p.spec.follow_dependencies != spec.follow_dependencies)
            where_changed = p.spec.location_selectors != spec.location_selectors
            ownership_changed = _ownership(p.spec) != _ownership(spec)
            kept = set(p.selected) if ownership_changed else set()
            mapping_changed = p.spec.namespace_mapping != spec.namespace_mapping
            p.spec = spec
            self._selections.spec_changed()
        self._dirty_placements.add(key)
        new_locations = p.locations
        if where_changed:
            new_locations = self._coverage.matching_locations(spec)
        if what_changed and where_changed and p.locations:
            self._replace_placement(p, new_locations)
        else:
            # A new placement selects before it covers anything, which costs no per-target work.
            if what_changed:
                self._selections.reselect(p)
            if where_changed:
                self._coverage.set_locations(p, new_locations)
        if ownership_changed:
            # The copies of what it selects carry its tests' field ownership: clusters keeping them get them again
            # (what it selects anew reaches them as an addition).
            for ref in kept & p.selected.keys():
                self._desired.content_changed(ref, self._desired.covers_holding(ref))
        if mapping_changed:
            mapping_placements = self._mapping_placements.setdefault(space, set())
            if spec.namespace_mapping is None:
                mapping_placements.discard(key)
            else:
                mapping_placements.add(key)
            self.resend_space(space)

    def maps_namespaces(self, space: str) -> bool:
        """Whether any placement of ``space`` sets namespaceMapping."""
        return bool(self._mapping_placements.get(space))

    def space_namespaces(self, space: str) -> set[str]:
        """The namespaces of ``space`` its placements select objects in (counted, so no object is looked at)."""
        out: set[str] = set()
        for key in self._space_placements.get(space, ()):
            out.update(ns for s, ns in self._placements[key].namespace_counts if s == space)
        return out

    def placed_namespaces(self, space: str, placement: str) -> set[str]:
        """The namespaces of its space a placement selects objects in, or selects themselves."""
        p = self._placements.get((space, placement))
        if p is None:
            return set()
        return {ns for s, ns in p.namespace_counts if s == space} | \
            {ref.name for ref in p.selected if ref.resource == NAMESPACE_RESOURCE and ref.space == space}

    def resend_space(self, space: str, namespaces: set[str] | None = None) -> None:
        """Every cluster gets again what it holds of ``space`` (of these ``namespaces``, and the Namespaces
        themselves): where its namespaces go (their mapping) changed."""
        for t in self._coverage.targets.values():
            refs = {entry.ref for entry in self._desired.desired_of(t.cover) if entry.ref.space == space and (
                namespaces is None or (entry.ref.name if entry.kind == "namespace" else entry.ref.namespace)
                in namespaces)}
            if refs:
                self._desired.resend(t, refs)

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
        self._selections.reselect(p)
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
        self._selections.unselect_all(p)
        del self._placements[key]
        del self._space_placements[space][key]
        self._desired.forget_placement(key)
        self._dirty_placements.add(key)
        if key in self._mapping_placements.get(space, ()):
            self._mapping_placements[space].discard(key)
            self.resend_space(space)  # namespaces it mapped that other placements still select

    def upsert_object(self, obj: WorkloadObject) -> None:
        self._selections.upsert_object(obj)

    def delete_object(self, ref: ObjectRef) -> None:
        self._selections.delete_object(ref)

    def delete_space(self, space: str) -> None:
        if space == self.inventory_space:
            for name in list(self._coverage.targets):
                self.delete_sync_target(name)
            for name in list(self._coverage.locations):
                self.delete_location(name)
        for key in list(self._space_placements.get(space, ())):
            self.delete_placement(*key)
        space_objects = self._selections.space_objects
        for ref in list(space_objects.get(space, ())):
            self.delete_object(ref)
        self._space_placements.pop(space, None)
        self._mapping_placements.pop(space, None)
        space_objects.pop(space, None)

    def set_chosen(self, space: str, placement: str, chosen: frozenset[str] | None) -> None:
        """A scheduled placement's choice (``placement.choices``): of the SyncTargets its Locations select, it
        reaches only these (None: all of them)."""
        self._coverage.set_chosen({(space, placement): chosen})

    def set_chosen_many(self, choices: Mapping[tuple[str, str], frozenset[str] | None]) -> None:
        """Several placements' choices at once (one decision's): each SyncTarget whose cover they change is
        moved once, not once per placement."""
        self._coverage.set_chosen(choices)

    def chosen(self, space: str, placement: str) -> frozenset[str] | None:
        p = self._placements.get((space, placement))
        return p.chosen if p is not None else None

    def scheduling(self, space: str, placement: str) -> SchedulingSpec | None:
        p = self._placements.get((space, placement))
        return p.spec.scheduling if p is not None else None

    def candidates(self, space: str, placement: str) -> set[str]:
        """The SyncTargets a placement's Locations select, chosen or not."""
        return self._coverage.candidates((space, placement))

    def placement_locations(self, space: str, placement: str) -> frozenset[str]:
        """The Locations a placement matches (its candidates are the SyncTargets they select)."""
        p = self._placements.get((space, placement))
        return frozenset(p.locations) if p is not None else frozenset()

    def is_candidate(self, space: str, placement: str, target: str) -> bool:
        return self._coverage.is_candidate((space, placement), target)

    def candidate_placements(self, target: str) -> set[tuple[str, str]]:
        """The placements whose Locations select ``target``."""
        return self._coverage.candidate_placements(target)

    def drain_candidates_changed(self) -> set[tuple[str, str]]:
        """Placements whose candidate SyncTargets or scheduling spec may have changed since the last call (their
        choice is looked at again)."""
        changed, self._coverage.candidates_changed = self._coverage.candidates_changed, set()
        return {key for key in changed if key in self._placements}

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
        return self._selections.selected_objects((space, placement))

    def followed(self, space: str, placement: str) -> dict[ObjectRef, list[str]]:
        """What a ``dependencies: Follow`` placement sends because the objects it selects need it, and why."""
        p = self._placements.get((space, placement))
        return {} if p is None else {ref: [str(b) for b in why] for ref, why in sorted(p.followed.items())}

    def set_bound(self, space: str, bound: Mapping[tuple[str, str], str]) -> None:
        """What ``space`` serves through APIBindings: (group, plural) -> provider space (``Selections.set_bound``)."""
        self._selections.set_bound(space, bound)

    def missing_crds(self, space: str, placement: str) -> list[str]:
        return self._selections.missing_crds((space, placement))

    def unserved_resources(self, space: str, placement: str) -> list[str]:
        return self._selections.unserved_resources((space, placement))

    def problems(self, space: str, placement: str) -> list[str]:
        """What is wrong with a stored placement's spec (for its ``validation-error`` annotations)."""
        p = self._placements.get((space, placement))
        return list(p.spec.problems) if p is not None else []

    def desired(self, target: str) -> list[DesiredEntry]:
        """``target``'s desired set; from now on its change log is kept (its syncer's stream reads it)."""
        self._track(target)
        return self._entries(target)

    def desired_count(self, target: str) -> int:
        """How many entries ``target``'s desired set holds, without starting its change log: a page that counts
        every cluster's objects must not make the engine log changes for clusters no syncer reads."""
        return len(self._entries(target))

    def _entries(self, target: str) -> list[DesiredEntry]:
        t = self._coverage.targets.get(target)
        if t is None:
            return []
        entries = self._desired.desired_of(t.cover)
        if self._narrowed:
            entries = [e for e in entries if self._reaches(e.ref, target)]
        held = self._leaving.entries(target) if self._leaving else []
        if not held:
            return list(entries)
        listed = {e.ref for e in entries}
        held = [e for e in held if e.ref not in listed]
        return apply_order([*entries, *held, *self._leaving.implicit_namespaces(target, listed)])

    def narrow(self, ref: ObjectRef, targets: frozenset[str] | None) -> None:
        """The object's own target annotation: of the clusters its placements reach, only ``targets`` get it
        (None: all of them). Clusters that lose it get a DELETE, those that gain it an UPSERT."""
        old = self._narrowed.get(ref)
        if old == targets:
            return
        holders = self._holders(ref)
        before = {t for t in holders if old is None or t in old}
        if targets is None:
            self._narrowed.pop(ref, None)
        else:
            self._narrowed[ref] = targets
        after = {t for t in holders if targets is None or t in targets}
        for name, op in [(t, "delete") for t in before - after] + [(t, "upsert") for t in after - before]:
            record = self._coverage.targets.get(name)
            if record is not None:
                self._desired.log_entry(record, op, ref)  # type: ignore[arg-type]
        self._dirty_placements.update(self._selections.selecting(ref))

    def watch_deletes(self) -> list[tuple[str, DesiredEntry]]:
        """From now on, every DELETE logged for a target is collected; returns (and empties) what was since
        the last call: the copies a move may have to keep (:mod:`placement.moves`)."""
        deleted = self._changes.deleted
        self._changes.deleted = []
        return deleted or []

    def hold(self, ref: ObjectRef, target: str) -> None:
        """``target`` keeps its copy of ``ref`` though it is no longer a destination: listed in its desired set,
        its DELETE (and its Namespace's) not sent, its reports kept, until :meth:`let_go`."""
        if self._leaving.holds(ref, target) or target not in self._coverage.targets:
            return
        self._leaving.hold(target, DesiredEntry(ref, entry_kind(ref)))
        self._dirty_placements.update(self._selections.selecting(ref))

    def let_go(self, ref: ObjectRef, target: str) -> None:
        """``target`` stops keeping its leaving copy: unless it is a destination again, the copy's DELETE (and its
        Namespace's, when nothing else there needs it) is logged."""
        if not self._leaving.let_go(ref, target):
            return
        self._dirty_placements.update(self._selections.selecting(ref))
        record = self._coverage.targets.get(target)
        if record is None:
            return
        listed = {e.ref for e in self._entries(target)}
        gone = [] if ref in listed else [DesiredEntry(ref, entry_kind(ref))]
        if ref.namespace and namespace_ref((ref.space, ref.namespace)) not in listed:
            gone.append(DesiredEntry(namespace_ref((ref.space, ref.namespace)), "namespace", True))
        self._desired.log_deletes(record, gone)

    def leaving_targets(self, ref: ObjectRef) -> list[str]:
        """The clusters keeping a leaving copy of ``ref``."""
        return sorted(self._leaving.targets_of(ref))

    def keeps_leaving(self, ref: ObjectRef, target: str) -> bool:
        """Whether ``target`` keeps a leaving copy of ``ref``."""
        return self._leaving.holds(ref, target)

    def leaving_copies(self) -> list[tuple[ObjectRef, str]]:
        """Every (object, cluster) keeping a leaving copy."""
        return self._leaving.pairs()

    def has_target(self, name: str) -> bool:
        return name in self._coverage.targets

    def _reaches(self, ref: ObjectRef, target: str) -> bool:
        allowed = self._narrowed.get(ref)
        return allowed is None or target in allowed

    def resend(self, target: str, refs: Iterable[ObjectRef]) -> None:
        """What ``target`` gets of ``refs`` changed though the objects did not (its customization parameters
        did): the ones it holds go into its change log again."""
        t = self._coverage.targets.get(target)
        if t is not None:
            self._desired.resend(t, set(refs))

    def target_locations(self, target: str) -> list[str]:
        """The Locations whose instanceSelector selects ``target``, by name."""
        t = self._coverage.targets.get(target)
        return sorted(t.locations) if t is not None else []

    def object_destinations(self, ref: ObjectRef) -> list[str]:
        allowed = self._narrowed.get(ref)
        return sorted(self._holders(ref) if allowed is None else self._holders(ref) & allowed)

    def is_destination(self, ref: ObjectRef, target: str) -> bool:
        """Whether ``target`` is among :meth:`object_destinations` (without building the list: a report from one
        cluster asks this, and the fleet's thousand reports must not cost a thousand lists of a thousand)."""
        allowed = self._narrowed.get(ref)
        if self._leaving and self._leaving.holds(ref, target):
            return True  # a leaving copy: its reports still count
        if allowed is not None and target not in allowed:
            return False
        return any(target in self._placements[key].target_paths for key in self._selections.placements_needing(ref))

    def _holders(self, ref: ObjectRef) -> set[str]:
        """The targets the placements needing ``ref`` reach (before any per-object narrowing)."""
        targets: set[str] = set()
        for key in self._selections.placements_needing(ref):
            targets.update(self._placements[key].target_paths)
        return targets

    def wants_singleton_status(self, ref: ObjectRef) -> bool:
        return self._selections.wants_singleton_status(ref)

    def covering(self, target: str) -> list[tuple[str, str]]:
        """The placements that have ``target`` among their destinations, in order."""
        t = self._coverage.targets.get(target)
        return sorted(t.cover) if t is not None else []

    def upsync_rules(self, target: str) -> list[dict[str, Any]]:
        """What ``target`` must bring up: each ``upsync`` item of every placement covering it, tagged with the
        placement's space and name (the syncer's ``UPSYNC`` message)."""
        rules = []
        for space, name in self.covering(target):
            for item in self._placements[(space, name)].spec.upsync:
                if isinstance(item, dict):
                    rules.append({"space": space, "placement": name, "apiGroup": str(item.get("apiGroup") or ""),
                                  "resources": list(item.get("resources") or []),
                                  "namespaces": list(item.get("namespaces") or []),
                                  "names": list(item.get("names") or [])})
        return rules

    def selecting(self, ref: ObjectRef) -> list[tuple[str, str]]:
        """The placements whose downsync tests select ``ref`` itself (not as a dependency), in order."""
        return self._selections.selecting(ref)

    def namespace_mapping(self, space: str, namespace: str) -> NamespaceMapping | None:
        """The mapping of the first placement (by name) of ``space`` that selects ``namespace`` or objects in it and
        sets ``namespaceMapping``: one per namespace, so a namespace and everything in it land in one place."""
        ns, ns_ref = (space, namespace), namespace_ref((space, namespace))
        for key in sorted(self._mapping_placements.get(space, ())):
            p = self._placements[key]
            if p.namespace_counts.get(ns) or ns_ref in p.selected:
                return p.spec.namespace_mapping
        return None

    def ownership(self, ref: ObjectRef) -> Mapping[str, str]:
        """The field-ownership annotations (``retainFields``, ``driftMode``) the tests selecting ``ref`` give its
        copies (placement/downsync.py); the same mapping while they stay the same."""
        return self._selections.ownership(ref)

    def status_wants(self, ref: ObjectRef) -> StatusWants:
        """Which clusters' reports the object's status is made of (KubeStellar's qualified sets: the clusters
        reached through the placements asking for it), and the StatusCollectors its selecting tests name."""
        singleton: set[str] = set()
        multi: set[str] = set()
        wants_singleton = wants_multi = False
        collectors = []
        for key in self._selections.selecting(ref):
            p = self._placements[key]
            if p.spec.want_singleton:
                wants_singleton = True
                singleton.update(p.target_paths)
            if p.spec.want_multi:
                wants_multi = True
                multi.update(p.target_paths)
            tests = {t.index: t for t in p.spec.tests}
            names = sorted({c for i in p.selected.get(ref, ()) if i in tests for c in tests[i].status_collectors})
            if names:
                collectors.append((key, tuple(names)))
        return StatusWants(wants_singleton, wants_multi, frozenset(singleton), frozenset(multi), tuple(collectors))

    def stats(self) -> dict[str, int]:
        """Sizes that tell how the engine's memory is spent: targets with a change log (a syncer asked for
        them), covers (distinct sets of covering placements) and cached desired sets."""
        return {"tracked_targets": len(self._changes.logs), "covers": len(self._desired.covers),
                "cached_desired_sets": len(self._desired.desired_cache)}

    def destination_count(self) -> int:
        """The destinations of every placement together (their SinglePlacementSlices' entries), counted without
        listing them."""
        return sum(len(pairs) for p in self._placements.values() for pairs in p.destinations.values())

    def desired_set_sizes(self) -> list[tuple[int, int]]:
        """(entries, targets) per distinct desired set: how many entries so many targets must hold, before
        objects' own target-cluster narrowing."""
        return self._desired.sizes()

    def last_seq(self) -> int:
        """The newest seq handed out to any target's change log."""
        return self._changes.seq

    def forget_cached_desired_sets(self) -> None:
        """Drop the desired-set cache (it refills on demand); for measuring a cold ``desired``."""
        self._desired.desired_cache.clear()

    def current_seq(self, target: str) -> int:
        return self._track(target).last

    def changes_since(self, target: str, seq: int) -> list[Change] | None:
        changes = self._track(target).since(seq)
        if changes is None or not (self._narrowed or self._leaving):
            return changes
        # An object narrowed away from this target is never upserted to it (a DELETE always passes, unless
        # the target keeps a leaving copy: then it is logged again when the copy is let go).
        return [c for c in changes if (c.op == "delete" or self._reaches(c.entry.ref, target))
                and not self._leaving.hides(c, target)]

    def has_dirty_targets(self) -> bool:
        """Whether some SyncTarget's desired set changed since the last :meth:`drain_dirty`."""
        return self._desired.has_dirty_targets()

    def drain_dirty(self) -> tuple[set[tuple[str, str]], set[str]]:
        targets = self._desired.drain_dirty_targets()
        placements = self._dirty_placements | self._coverage.dirty_placements | self._selections.dirty_placements
        self._dirty_placements = set()
        self._coverage.dirty_placements.clear()
        self._selections.dirty_placements.clear()
        return placements, targets

    def explain(self, space: str, spec: dict) -> Explanation:
        locations, selections = self._coverage.locations, self._selections
        return explain_spec(
            compile_spec(spec_of(spec)),
            {name: loc.spec for name, loc in locations.items()},
            lambda name: locations[name].targets,
            {name: TargetView(name, t.labels, t.uid) for name, t in self._coverage.targets.items()},
            [(selections.objects[ref], selections.labels[ref]) for ref in selections.space_objects.get(space, ())],
            selections.namespace_labels,
            selections.crd_of,
            selections.served_in(space),
            lambda roots: selections.dependencies.explain(space, roots, selections.objects.__contains__),
        )

    def _track(self, target: str) -> ChangeLog:
        log = self._changes.logs.get(target)  # once per stream and change: the target record only at first contact
        return log if log is not None else self._desired.track(target, self._coverage.targets.get(target))


def _ownership(spec: PlacementSpec) -> frozenset[tuple[int, tuple[str, ...], bool]]:
    return frozenset((t.index, t.retain_fields, t.report_only) for t in spec.tests if t.retain_fields or t.report_only)
