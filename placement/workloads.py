"""What placements select: the workload objects of every space and which of them each EdgePlacement selects.

Owns the objects (as :class:`WorkloadObject` summaries with their labels), the objects of each
namespace, the index of CRDs by the (group, plural) they define, each placement's selection and its
inverse (object → selecting placements). A selection change is handed to :mod:`placement.desired`
as it is made, so the covers' content follows. The predicate itself is :mod:`placement.downsync`.

A custom resource (an object whose group and plural a CRD object of the same space defines) drags its
CRD along only for a ``crdFollow`` placement (the CRD is then selected with the test index
:data:`~placement.downsync.FOLLOWED`, for as long as one of its custom resources is); otherwise
``missing_crds`` lists the CRDs of selected custom resources that the placement does not select itself
(relying on another placement is reported too, because that placement may change independently).
``unserved_resources`` lists what the downsync tests name that the space does not serve.

A ``dependencies: Follow`` placement also selects, with the test index :data:`~placement.downsync.DEPENDENCY`,
every existing object that what its tests select needs (:mod:`placement.dependencies`: the space's reference
graph, which this module keeps up to date), for as long as something it selects needs it; the object is
recorded in the placement's ``followed`` with why. Never does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from placement.dependencies import Because, DependencyGraph
from placement.desired import DesiredSets
from placement.downsync import DEPENDENCY, FOLLOWED, matching_tests, ownership_annotations, unserved_resources
from placement.model import ObjectRef, WorkloadObject
from placement.ordering import NAMESPACE_RESOURCE, RANK
from placement.records import NsKey, PKey, PlacementRecord, decrement, entry_kind, namespace_ref

Update = tuple[PlacementRecord, ObjectRef, list[int]]  # a placement, an object, the tests it now passes
Wanted = dict[tuple[ObjectRef, PKey], tuple[PlacementRecord, list[int]]]  # a batch of selections being made


class Selections:
    """The workload objects and every placement's selection of them."""

    def __init__(self, placements: Mapping[PKey, PlacementRecord], space_placements: Mapping[str, dict[PKey, None]],
                 selectors_of: dict[ObjectRef, set[PKey]], namespace_members: dict[NsKey, set[ObjectRef]],
                 desired: DesiredSets, served_everywhere: frozenset[tuple[str, str]]) -> None:
        self._placements = placements
        self._space_placements = space_placements
        self._selectors_of = selectors_of
        self._namespace_members = namespace_members
        self._desired = desired
        self.objects: dict[ObjectRef, WorkloadObject] = {}
        self.labels: dict[ObjectRef, dict[str, str]] = {}
        self.space_objects: dict[str, dict[ObjectRef, None]] = {}
        self._crds: dict[tuple[str, str, str], ObjectRef] = {}  # (space, group, plural) -> CRD object
        self._space_crds: dict[str, set[tuple[str, str]]] = {}  # space -> (group, plural) its CRDs define
        # space -> (group, plural) -> the provider space whose CRD an APIBinding serves it from
        self._bound: dict[str, dict[tuple[str, str], str]] = {}
        self._served_everywhere = served_everywhere  # (group, plural) of the kinds every space serves
        self.dependencies = DependencyGraph()
        # Placements whose selection (objects or the indexes of the tests they match) or missing CRDs
        # changed since the last drain.
        self.dirty_placements: set[PKey] = set()
        # ownership() per object, asked for every cluster's copy of it on every change: kept until the object's
        # selection (its placements or the tests it passes) or any placement's spec changes.
        self._ownership: dict[ObjectRef, Mapping[str, str]] = {}

    # ------------------------------------------------------------------------------------------
    # Inputs: workload objects and placements

    def upsert_object(self, obj: WorkloadObject) -> None:
        ref = obj.ref
        old = self.objects.get(ref)
        if old == obj:
            return
        labels = dict(obj.labels)
        labels_changed = old is None or self.labels[ref] != labels
        before = self._desired.covers_holding(ref) if old is not None else set()
        self.objects[ref] = obj
        self.labels[ref] = labels
        if old is None:
            self.space_objects.setdefault(ref.space, {})[ref] = None
            if ref.namespace:
                self._namespace_members.setdefault((ref.space, ref.namespace), set()).add(ref)
        if old is None or old.defines != obj.defines:
            self._update_crd_index(ref, old.defines if old is not None else None, obj.defines)
        if old is None or _dependency_fields(old) != _dependency_fields(obj):
            self.dependencies.set_object(obj)
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
        old = self.objects.get(ref)
        if old is None:
            return
        updates = [(self._placements[key], ref, []) for key in self._selectors_of.get(ref, ())]
        del self.objects[ref]
        del self.labels[ref]
        self.dependencies.remove_object(ref)
        if ref.resource == NAMESPACE_RESOURCE:
            updates += self._namespace_member_updates(ref.space, ref.name)
        self._apply_selections(updates)
        del self.space_objects[ref.space][ref]
        if ref.namespace:
            members = self._namespace_members[(ref.space, ref.namespace)]
            members.discard(ref)
            if not members:
                del self._namespace_members[(ref.space, ref.namespace)]
        if old.defines is not None:
            self._update_crd_index(ref, old.defines, None)

    def reselect(self, p: PlacementRecord) -> None:
        """Test every object of the placement's space against its (new) downsync tests."""
        self._apply_selections([(p, ref, self._match(p, ref)) for ref in self.space_objects.get(p.key[0], ())])

    def unselect_all(self, p: PlacementRecord) -> None:
        p.followed = {}
        for ref in list(p.selected):
            self._set_selection(p, ref, [])

    # ------------------------------------------------------------------------------------------
    # Outputs

    def selected_objects(self, key: PKey) -> dict[ObjectRef, list[int]]:
        p = self._placements.get(key)
        return {ref: list(indexes) for ref, indexes in sorted(p.selected.items())} if p is not None else {}

    def missing_crds(self, key: PKey) -> list[str]:
        p = self._placements.get(key)
        if p is None:
            return []
        missing = {ref.resource for ref in p.selected
                   if (crd := self.crd_of(ref)) is not None and crd not in p.selected}
        return sorted(missing)

    def unserved_resources(self, key: PKey) -> list[str]:
        p = self._placements.get(key)
        if p is None:
            return []
        return unserved_resources(p.spec.tests, self.served_in(key[0]))

    def served_in(self, space: str) -> frozenset[tuple[str, str]]:
        """(group, plural) of what the space serves: the kinds every space serves, its CRDs' kinds and what its
        APIBindings serve."""
        return self._served_everywhere | self._space_crds.get(space, set()) | self._bound.get(space, {}).keys()

    def placements_needing(self, ref: ObjectRef) -> set[PKey]:
        """The placements that put ``ref`` on their targets: those selecting it and, for a Namespace, those
        selecting an object in it."""
        keys = set(self._selectors_of.get(ref, ()))
        if ref.resource == NAMESPACE_RESOURCE:
            # A Namespace must also exist wherever an object in it goes.
            for member in self._namespace_members.get((ref.space, ref.name), ()):
                keys |= self._selectors_of.get(member, set())
        return keys

    def wants_singleton_status(self, ref: ObjectRef) -> bool:
        return any(self._placements[key].spec.want_singleton for key in self._selectors_of.get(ref, ()))

    def selecting(self, ref: ObjectRef) -> list[PKey]:
        """The placements whose downsync tests select ``ref`` itself, in key order."""
        return sorted(self._selectors_of.get(ref, ()))

    def ownership(self, ref: ObjectRef) -> Mapping[str, str]:
        """The field-ownership annotations the tests selecting ``ref`` give its copies: the same mapping (not to
        be changed) for as long as they stay the same, so that callers can tell by identity."""
        found = self._ownership.get(ref)
        if found is None:
            tests = []
            for key in self.selecting(ref):
                p = self._placements[key]
                by_index = {t.index: t for t in p.spec.tests}
                tests += [by_index[i] for i in p.selected.get(ref, ()) if i in by_index]
            found = self._ownership[ref] = ownership_annotations(tests)
        return found

    def spec_changed(self) -> None:
        """A placement's spec changed: the tests behind the indexes it selects objects with may give another
        ownership."""
        self._ownership.clear()

    def namespace_labels(self, space: str, name: str) -> Mapping[str, str] | None:
        return self.labels.get(namespace_ref((space, name)))

    def crd_of(self, ref: ObjectRef) -> ObjectRef | None:
        return self._crd_for(ref.space, ref.group, ref.plural) if ref.group else None

    def _crd_for(self, space: str, group: str, plural: str) -> ObjectRef | None:
        """The CRD defining what ``space`` serves as ``group``/``plural``: its own, or the provider's CRD of an
        APIBinding (a placement sends that one with the custom resources, as if it were the space's)."""
        own = self._crds.get((space, group, plural))
        if own is not None:
            return own
        provider = self._bound.get(space, {}).get((group, plural))
        return None if provider is None else self._crds.get((provider, group, plural))

    def set_bound(self, space: str, bound: Mapping[tuple[str, str], str]) -> None:
        """What ``space`` serves through APIBindings: (group, plural) -> the provider space whose CRD defines it.
        Those resources count as served there, and their CRD as the space's for missing CRDs and ``crdFollow``."""
        old = self._bound.get(space, {})
        if old == bound:
            return
        changed = {gp for gp in old.keys() | bound.keys() if old.get(gp) != bound.get(gp)}
        before = {gp: self._crd_for(space, *gp) for gp in changed}
        if bound:
            self._bound[space] = dict(bound)
        else:
            self._bound.pop(space, None)
        self._refollow(space, before)

    # ------------------------------------------------------------------------------------------
    # Selection

    def _match(self, p: PlacementRecord, ref: ObjectRef) -> list[int]:
        indexes = matching_tests(p.spec.tests, ref, self.labels[ref], self.namespace_labels)
        defines = self.objects[ref].defines
        if p.spec.crd_follow and defines is not None and p.kind_counts.get(defines):
            indexes.append(FOLLOWED)
        return indexes

    def _update_crd_index(self, ref: ObjectRef, old: tuple[str, str] | None, new: tuple[str, str] | None) -> None:
        changed: list[tuple[str, str]] = []
        if old is not None and self._crds.get((ref.space, *old)) == ref:
            del self._crds[(ref.space, *old)]
            defined = self._space_crds[ref.space]
            defined.discard(old)
            if not defined:
                del self._space_crds[ref.space]
            changed.append(old)
        if new is not None:
            self._crds[(ref.space, *new)] = ref
            self._space_crds.setdefault(ref.space, set()).add(new)
            changed.append(new)
        if not changed:
            return
        self._mark_naming(ref.space, changed)
        # Spaces serving these resources through a binding to this space follow the CRD as it comes and goes
        # (it may arrive here after the binding was seen).
        for space, bound in self._bound.items():
            gps = [gp for gp in changed if bound.get(gp) == ref.space and gp not in self._space_crds.get(space, ())]
            if gps:
                self._refollow(space, {gp: ref if gp == old else None for gp in gps})

    def _mark_naming(self, space: str, changed: Iterable[tuple[str, str]]) -> None:
        """missing_crds of placements selecting such custom resources may have changed, and so may the
        unserved resources of placements naming them."""
        changed = list(changed)
        for key in self._space_placements.get(space, ()):
            p = self._placements[key]
            if any(group_plural in p.kind_counts or any(_names(t.api_group, t.resources, group_plural)
                                                        for t in p.spec.tests) for group_plural in changed):
                self.dirty_placements.add(key)

    def _refollow(self, space: str, before: Mapping[tuple[str, str], ObjectRef | None]) -> None:
        """The CRD defining some of ``space``'s resources changed (``before``: the one that did): crdFollow
        placements selecting such resources stop sending the old CRD and send the new one."""
        self._mark_naming(space, before)
        updates: list[Update] = []
        for key in self._space_placements.get(space, ()):
            p = self._placements[key]
            if not p.spec.crd_follow:
                continue
            for gp, old_crd in before.items():
                new_crd = self._crd_for(space, *gp)
                if new_crd == old_crd or not p.kind_counts.get(gp):
                    continue
                if old_crd is not None and old_crd in p.selected:
                    updates.append((p, old_crd, [i for i in p.selected[old_crd] if i != FOLLOWED]))
                if new_crd is not None:
                    own = [i for i in p.selected.get(new_crd, []) if i != FOLLOWED]
                    updates.append((p, new_crd, [*own, FOLLOWED]))
        if updates:
            self._apply_selections(updates)

    def _namespace_member_updates(self, space: str, namespace: str) -> list[Update]:
        """The selections of the objects in a Namespace whose labels changed (or which came or went)."""
        placements = [p for key in self._space_placements.get(space, ())
                      if (p := self._placements[key]).spec.uses_namespace_selectors]
        return [(p, ref, self._match(p, ref))
                for ref in self._namespace_members.get((space, namespace), ()) for p in placements]

    def _apply_selections(self, updates: list[Update]) -> None:
        """Apply new selections: additions in apply order, then index changes, then removals in deletion order.

        Additions go first so an object moving from one placement to another in the same cover never
        leaves it transiently, and the orders make the logged changes of one update follow
        :mod:`placement.ordering` (a selected Namespace before the objects in it, and after them on removal).
        """
        wanted = {(ref, p.key): (p, indexes) for p, ref, indexes in updates}
        self._follow_dependencies(wanted)
        self._follow_crds(wanted)
        adds, removes = [], []
        for (ref, _), (p, indexes) in wanted.items():
            old = p.selected.get(ref)
            if old is None:
                if indexes:
                    adds.append((RANK[entry_kind(ref)], ref, p.key))
            elif not indexes:
                removes.append((RANK[entry_kind(ref)], ref, p.key))
            elif old != indexes:
                self._set_selection(p, ref, indexes)
        for _, ref, key in sorted(adds):
            self._set_selection(self._placements[key], ref, wanted[(ref, key)][1])
        for _, ref, key in sorted(removes, reverse=True):
            self._set_selection(self._placements[key], ref, [])

    def _follow_crds(self, wanted: Wanted) -> None:
        """Add to a batch of selections the CRDs ``crdFollow`` placements start or stop sending with it: a
        CRD is followed while the placement selects at least one of its custom resources. In the same
        batch, so the CRD is logged before its first custom resource and after its last one on removal."""
        deltas: dict[tuple[PKey, tuple[str, str]], int] = {}
        for (ref, key), (p, indexes) in wanted.items():
            if ref.group and p.spec.crd_follow and (ref in p.selected) != bool(indexes):
                deltas[(key, (ref.group, ref.plural))] = deltas.get((key, (ref.group, ref.plural)), 0) + \
                    (1 if indexes else -1)
        for (key, group_plural), delta in deltas.items():
            crd = self._crd_for(key[0], *group_plural)
            if crd is None:
                continue
            p = self._placements[key]
            before = p.kind_counts.get(group_plural, 0)
            if (before > 0) == (before + delta > 0):
                continue
            if (crd, key) in wanted:
                own = wanted[(crd, key)][1]
            elif crd.space != key[0]:
                own = []  # a bound API's CRD, in its provider space: this placement selects it only by following
            else:
                own = matching_tests(p.spec.tests, crd, self.labels[crd], self.namespace_labels)
            own = [i for i in own if i != FOLLOWED]
            wanted[(crd, key)] = (p, [*own, FOLLOWED] if before + delta > 0 else own)

    def _follow_dependencies(self, wanted: Wanted) -> None:
        """Add to a batch of selections what ``dependencies: Follow`` placements start or stop sending: whatever the
        objects their tests select after the batch need.

        Only the part of the graph the batch can change is looked at, so an object's update costs what it touches,
        not the size of the space: the objects whose edges changed and those of the batch in the graph (whose
        selection or existence changed), and all they reach. Inside that part, an object is needed when it exists
        and something selected by a test, or needed, uses it; outside it nothing changed.
        """
        changed = self.dependencies.take_changed()
        batch: dict[PKey, list[ObjectRef]] = {}
        for ref, key in wanted:
            batch.setdefault(key, []).append(ref)
        for space in {key[0] for key in batch} | changed.keys():
            for key in self._space_placements.get(space, ()):
                p = self._placements[key]
                if not p.spec.follow_dependencies and not p.followed:
                    continue
                touched = [ref for ref in batch.get(key, ()) if ref in p.followed or self.dependencies.knows(ref)]
                if not touched and space not in changed:
                    continue
                region = self.dependencies.affected(space, [*touched, *changed.get(space, ())])
                needed = self._needed(p, region, wanted) if p.spec.follow_dependencies else {}
                for ref in region:
                    was_needed = ref in p.followed
                    if ref in needed:
                        p.followed[ref] = needed[ref]
                    else:
                        p.followed.pop(ref, None)
                    if was_needed == (ref in needed) and (ref, key) not in wanted:
                        continue  # its selection is unchanged
                    own = wanted[(ref, key)][1] if (ref, key) in wanted else p.selected.get(ref, [])
                    own = [i for i in own if i != DEPENDENCY]
                    wanted[(ref, key)] = (p, [*own, DEPENDENCY] if ref in needed else own)

    def _needed(self, p: PlacementRecord, region: set[ObjectRef], wanted: Wanted) -> dict[ObjectRef, list[Because]]:
        """Which objects of ``region`` the placement needs after the batch, and why (outside the region, what it
        follows is unchanged)."""
        def by_tests(ref: ObjectRef) -> bool:
            found = wanted.get((ref, p.key))
            return _by_tests(found[1] if found is not None else p.selected.get(ref, []))

        def uses(user: ObjectRef, needed: set[ObjectRef]) -> bool:
            return by_tests(user) or (user in needed if user in region else user in p.followed)

        needed: set[ObjectRef] = set()
        queue = [ref for ref in region if ref in self.objects and any(
            by_tests(user) or (user not in region and user in p.followed)
            for user, _ in self.dependencies.predecessors(ref))]
        needed.update(queue)
        while queue:
            for ref in self.dependencies.successors(queue.pop()):
                if ref in region and ref not in needed and ref in self.objects:
                    needed.add(ref)
                    queue.append(ref)
        return {ref: sorted(Because(user, how) for user, how in self.dependencies.predecessors(ref)
                            if uses(user, needed)) for ref in needed}

    def _set_selection(self, p: PlacementRecord, ref: ObjectRef, indexes: list[int]) -> None:
        old = p.selected.get(ref)
        if old == indexes or (old is None and not indexes):
            return
        self.dirty_placements.add(p.key)
        self._ownership.pop(ref, None)
        if old is not None and indexes:
            p.selected[ref] = indexes  # other tests matched; the desired sets are unchanged
            return
        ns = (ref.space, ref.namespace) if ref.namespace else None
        if indexes:
            p.selected[ref] = indexes
            if ns is not None:
                p.namespace_counts[ns] = p.namespace_counts.get(ns, 0) + 1
            if ref.group:
                p.kind_counts[(ref.group, ref.plural)] = p.kind_counts.get((ref.group, ref.plural), 0) + 1
            holders = self._selectors_of.setdefault(ref, set())
            holders.add(p.key)
            self._desired.selection_added(p.key, ref, ns, holders)
        else:
            del p.selected[ref]
            if ns is not None:
                decrement(p.namespace_counts, ns)
            if ref.group:
                decrement(p.kind_counts, (ref.group, ref.plural))
            holders = self._selectors_of[ref]
            holders.discard(p.key)
            if not holders:
                del self._selectors_of[ref]
            self._desired.selection_removed(p.key, ref, ns, holders)


def _names(api_group: str | None, resources: frozenset[str] | None, group_plural: tuple[str, str]) -> bool:
    """Whether a downsync test names this (group, plural) explicitly."""
    group, plural = group_plural
    if resources is None:
        return api_group == group
    return plural in resources and api_group in (None, group)


def _by_tests(indexes: list[int]) -> bool:
    """Whether a downsync test (not a follow) selects the object: such objects' references are followed."""
    return any(i >= 0 for i in indexes)


def _dependency_fields(obj: WorkloadObject) -> tuple[object, ...]:
    return obj.references, obj.pod_labels, obj.pod_selector
