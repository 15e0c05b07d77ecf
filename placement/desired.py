"""Desired sets: what each SyncTarget must hold, kept per cover, and each target's net change when it moves.

A SyncTarget is covered by the placements that reach it through any Location. Targets with the same
covering set share one :class:`Cover` (their desired sets are equal by definition). A desired set is
the union of what the covering placements select (overlapping placements are additive), plus one
Namespace entry per (space, namespace) holding a desired namespaced object: ``implicit=True`` ("only
ensure it exists") unless that Namespace object is itself selected for the target, then
``implicit=False`` so its labels and annotations propagate. An implicit Namespace entry disappears only
when no desired object of that space on that target is in it any more; entries are per space, so a
syncer keeps a cluster namespace while any Namespace entry with its name remains. A custom resource
never drags its CRD along: the CRD is placed only where selected. Entries are ordered by
:mod:`placement.ordering`.

**Memory.** Nothing is materialised per (object, target) pair. A cover counts per namespace the
selections of namespaced objects, so implicit Namespaces are maintained incrementally (this grows with
namespaces times covers, not objects times targets). A desired set is a union computed on demand and
kept in a small LRU cache of covers, invalidated whenever a cover's content changes.

**Changes.** Every change of a cover's content is logged, in order, to the change logs of its tracked
targets (:mod:`placement.changelog`): an entry added, an entry changed (its WorkloadObject changed, or
a Namespace entry switched between implicit and explicit), an entry removed (the logged entry then
lists no placements). A change that only alters which placements hold an entry is not logged (the
syncer's work does not depend on it; ``desired_of`` shows it). A target moving to another cover is
accounted with its net change only: additions (in apply order) before removals (in deletion order), so
an object moving between placements that both reach it is never deleted and re-created, and a
Namespace entry switching between explicit and implicit is one upsert. Targets whose desired set
(entries or their objects' content) changed are collected for ``drain_dirty``.

Reads the placements' selections and the selection indexes that :mod:`placement.workloads` maintains,
and learns of selection changes from it and of target moves from :mod:`placement.covering` as they
happen. Never does I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from placement.changelog import ChangeLog, ChangeLogs
from placement.model import DesiredEntry, ObjectRef
from placement.ordering import NAMESPACE_RESOURCE, apply_order, deletion_order
from placement.records import (
    NO_COVER,
    CoverKey,
    NsKey,
    PKey,
    PlacementRecord,
    TargetRecord,
    decrement,
    entry_kind,
    namespace_ref,
)

Override = tuple[PKey, Mapping[ObjectRef, list[int]]]  # a placement and the selection it had before

_NO_HOLDERS: frozenset[PKey] = frozenset()
_DESIRED_CACHE_SIZE = 64


@dataclass
class Cover:
    """The targets covered by exactly this set of placements, and what their common desired set needs."""

    key: CoverKey
    members: set[str] = field(default_factory=set)
    tracked: set[str] = field(default_factory=set)  # members with a change log
    # Per namespace, the (object, placement) selections of namespaced objects in this cover: positive
    # exactly while some desired object needs the Namespace.
    nscount: dict[NsKey, int] = field(default_factory=dict)


class DesiredSets:
    """The covers and their desired sets, and the net change of every target that moves between them."""

    def __init__(self, placements: Mapping[PKey, PlacementRecord], selectors_of: Mapping[ObjectRef, set[PKey]],
                 namespace_members: Mapping[NsKey, set[ObjectRef]], changes: ChangeLogs) -> None:
        self._placements = placements
        self._selectors_of = selectors_of
        self._namespace_members = namespace_members
        self._changes = changes
        self._logs = changes.logs
        self.covers: dict[CoverKey, Cover] = {}
        self._covers_by_placement: dict[PKey, set[CoverKey]] = {}
        self.desired_cache: OrderedDict[CoverKey, list[DesiredEntry]] = OrderedDict()
        self._dirty_covers: set[CoverKey] = set()
        self._dirty_targets: set[str] = set()

    # ------------------------------------------------------------------------------------------
    # Targets joining, moving between and leaving covers

    def add_target(self, t: TargetRecord) -> None:
        """A new SyncTarget starts in the cover of no placement."""
        self._join_cover(t, self._cover(NO_COVER))

    def remove_target(self, t: TargetRecord) -> None:
        cover = self.covers[t.cover]
        cover.members.discard(t.name)
        cover.tracked.discard(t.name)
        if not cover.members:
            self._drop_cover(cover)

    def move(self, t: TargetRecord, new_key: CoverKey, memo: dict[tuple[CoverKey, CoverKey], bool] | None) -> None:
        """Move a target to another cover; ``memo`` None moves it silently (the caller accounts for it)."""
        old = self.covers[t.cover]
        new = self._cover(new_key)
        old.members.discard(t.name)
        old.tracked.discard(t.name)
        self._join_cover(t, new)
        if memo is not None:
            self.account(t.name, old.key, new.key, None, memo)
        if not old.members:
            self._drop_cover(old)

    def forget_placement(self, key: PKey) -> None:
        self._covers_by_placement.pop(key, None)

    def flush_dirty(self) -> None:
        """Charge the content changes so far to the targets that are in the changed covers now."""
        for key in self._dirty_covers:
            self._dirty_targets |= self.covers[key].members
        self._dirty_covers.clear()

    def has_dirty_targets(self) -> bool:
        return bool(self._dirty_targets or self._dirty_covers)

    def drain_dirty_targets(self) -> set[str]:
        self.flush_dirty()
        targets, self._dirty_targets = self._dirty_targets, set()
        return targets

    def _join_cover(self, t: TargetRecord, cover: Cover) -> None:
        t.cover = cover.key
        cover.members.add(t.name)
        if t.name in self._logs:
            cover.tracked.add(t.name)

    def _cover(self, key: CoverKey) -> Cover:
        cover = self.covers.get(key)
        if cover is None:
            cover = self.covers[key] = Cover(key, nscount=self._count_namespaces(key))
            for p in key:
                self._covers_by_placement.setdefault(p, set()).add(key)
        return cover

    def _drop_cover(self, cover: Cover) -> None:
        del self.covers[cover.key]
        for p in cover.key:
            self._covers_by_placement[p].discard(cover.key)
        self.desired_cache.pop(cover.key, None)
        self._dirty_covers.discard(cover.key)

    def _count_namespaces(self, key: CoverKey) -> dict[NsKey, int]:
        counts: dict[NsKey, int] = {}
        for p in key:
            for ns, n in self._placements[p].namespace_counts.items():
                counts[ns] = counts.get(ns, 0) + n
        return counts

    # ------------------------------------------------------------------------------------------
    # Selections changing the covers' content

    def selection_added(self, key: PKey, ref: ObjectRef, ns: NsKey | None, holders: set[PKey]) -> None:
        """Placement ``key`` started selecting ``ref``; ``holders`` (all its selecting placements) has it."""
        shared = len(holders) > 1
        for cover_key in self._covers_by_placement.get(key, ()):
            cover = self.covers[cover_key]
            if shared and any(h != key and h in cover_key for h in holders):
                self.desired_cache.pop(cover_key, None)  # only the entry's placements changed
                if ns is not None:
                    cover.nscount[ns] += 1
            elif cover.tracked or ns is None:
                self._enters(cover, ref)
            else:
                # The common case of a full load, inlined: no log to write, one more object in ns.
                self._dirty_covers.add(cover_key)
                if self.desired_cache:
                    self.desired_cache.pop(cover_key, None)
                cover.nscount[ns] = cover.nscount.get(ns, 0) + 1

    def selection_removed(self, key: PKey, ref: ObjectRef, ns: NsKey | None, holders: set[PKey]) -> None:
        """Placement ``key`` stopped selecting ``ref``; ``holders`` (the placements still selecting it) lacks it."""
        for cover_key in self._covers_by_placement.get(key, ()):
            cover = self.covers[cover_key]
            if holders.isdisjoint(cover_key):
                self._leaves(cover, ref)
            else:
                self.desired_cache.pop(cover_key, None)
                if ns is not None:
                    cover.nscount[ns] -= 1

    def covers_holding(self, ref: ObjectRef) -> set[CoverKey]:
        out: set[CoverKey] = set()
        for key in self._selectors_of.get(ref, ()):
            out |= self._covers_by_placement.get(key, set())
        return out

    def content_changed(self, ref: ObjectRef, before: set[CoverKey]) -> None:
        """``ref``'s object changed: targets that had and still have it must fetch the new content."""
        for cover_key in before & self.covers_holding(ref):
            cover = self.covers[cover_key]
            self._cover_changed(cover)
            if cover.tracked:
                self._emit(cover, "upsert", self._entry(ref, cover_key))

    def _cover_changed(self, cover: Cover) -> None:
        self._dirty_covers.add(cover.key)
        self.desired_cache.pop(cover.key, None)

    def _explicit_namespace(self, cover_key: CoverKey, ns: NsKey) -> bool:
        holders = self._selectors_of.get(namespace_ref(ns))
        return holders is not None and not holders.isdisjoint(cover_key)

    def _enters(self, cover: Cover, ref: ObjectRef) -> None:
        """``ref`` became part of the cover's desired set."""
        self._cover_changed(cover)
        if ref.resource == NAMESPACE_RESOURCE:
            if cover.tracked:  # new, or an implicit Namespace turning explicit: the same upsert
                self._emit(cover, "upsert", self._entry(ref, cover.key))
            return
        entry = self._entry(ref, cover.key) if cover.tracked else None
        if ref.namespace:
            ns = (ref.space, ref.namespace)
            count = cover.nscount.get(ns, 0) + 1
            cover.nscount[ns] = count
            if count == 1 and entry is not None and not self._explicit_namespace(cover.key, ns):
                self._emit(cover, "upsert", DesiredEntry(namespace_ref(ns), "namespace", True, entry.placements))
        if entry is not None:
            self._emit(cover, "upsert", entry)

    def _leaves(self, cover: Cover, ref: ObjectRef) -> None:
        """``ref`` stopped being part of the cover's desired set."""
        self._cover_changed(cover)
        if ref.resource == NAMESPACE_RESOURCE:
            if cover.tracked:
                ns = (ref.space, ref.name)
                if cover.nscount.get(ns):
                    self._emit(cover, "upsert", self._implicit_namespace_entry(cover.key, ns))
                else:
                    self._emit(cover, "delete", DesiredEntry(ref, "namespace"))
            return
        if cover.tracked:
            self._emit(cover, "delete", DesiredEntry(ref, entry_kind(ref)))
        if ref.namespace:
            ns = (ref.space, ref.namespace)
            if not decrement(cover.nscount, ns) and cover.tracked and not self._explicit_namespace(cover.key, ns):
                self._emit(cover, "delete", DesiredEntry(namespace_ref(ns), "namespace", True))

    def _entry(self, ref: ObjectRef, cover_key: CoverKey) -> DesiredEntry:
        holders = self._selectors_of.get(ref, set())
        return DesiredEntry(ref, entry_kind(ref), False, tuple(sorted(h for h in holders if h in cover_key)))

    def _implicit_namespace_entry(self, cover_key: CoverKey, ns: NsKey) -> DesiredEntry:
        holders: set[PKey] = set()
        for member in self._namespace_members.get(ns, ()):
            holders.update(h for h in self._selectors_of.get(member, ()) if h in cover_key)
        return DesiredEntry(namespace_ref(ns), "namespace", True, tuple(sorted(holders)))

    # ------------------------------------------------------------------------------------------
    # Desired sets and logs

    def desired_of(self, key: CoverKey) -> list[DesiredEntry]:
        cached = self.desired_cache.get(key)
        if cached is not None:
            self.desired_cache.move_to_end(key)
            return cached
        holders: dict[ObjectRef, list[PKey]] = {}
        for p in sorted(key):
            for ref in self._placements[p].selected:
                holders.setdefault(ref, []).append(p)
        entries: list[DesiredEntry] = []
        implicit: dict[NsKey, set[PKey]] = {}
        for ref, keys in holders.items():
            entries.append(DesiredEntry(ref, entry_kind(ref), False, tuple(keys)))
            if ref.namespace:
                implicit.setdefault((ref.space, ref.namespace), set()).update(keys)
        for ns, keys in implicit.items():
            if namespace_ref(ns) not in holders:
                entries.append(DesiredEntry(namespace_ref(ns), "namespace", True, tuple(sorted(keys))))
        ordered = apply_order(entries)
        self.desired_cache[key] = ordered
        if len(self.desired_cache) > _DESIRED_CACHE_SIZE:
            self.desired_cache.popitem(last=False)
        return ordered

    def sizes(self) -> list[tuple[int, int]]:
        """(entries of the desired set, targets holding it) for every cover with targets, counted without building
        the sets that are not cached (for metrics: no sorting, and the cache keeps what streams use)."""
        out = []
        for cover in self.covers.values():
            if not cover.members:
                continue
            cached = self.desired_cache.get(cover.key)
            if cached is not None:
                out.append((len(cached), len(cover.members)))
                continue
            refs: set[ObjectRef] = set()
            for p in cover.key:
                refs.update(self._placements[p].selected)
            implicit = sum(1 for ns in cover.nscount if namespace_ref(ns) not in refs)
            out.append((len(refs) + implicit, len(cover.members)))
        return out

    def track(self, name: str, target: TargetRecord | None) -> ChangeLog:
        """The target's change log, started at first contact; from then on its cover's changes reach it."""
        log = self._logs.get(name)
        if log is None:
            log = self._changes.start(name)
            if target is not None:
                self.covers[target.cover].tracked.add(name)
        return log

    def resend(self, t: TargetRecord, refs: set[ObjectRef]) -> None:
        """The content of ``refs`` changed for this target alone (its parameters changed): those it holds are
        logged again as upserts."""
        held = [entry for entry in self.desired_of(t.cover) if entry.ref in refs]
        if not held:
            return
        self._dirty_targets.add(t.name)
        log = self._logs.get(t.name)
        if log is not None:
            self._changes.extend(log, "upsert", held)

    def log_entry(self, t: TargetRecord, op: Literal["upsert", "delete"], ref: ObjectRef) -> None:
        """Log one change of ``ref`` for this target alone (a per-object narrowing of its destinations)."""
        entry = next((e for e in self.desired_of(t.cover) if e.ref == ref), None)
        if entry is None:
            return
        self._dirty_targets.add(t.name)
        log = self._logs.get(t.name)
        if log is not None:
            self._changes.extend(log, op, [entry])

    def log_deletes(self, t: TargetRecord, entries: list[DesiredEntry]) -> None:
        """Log the DELETE of entries this target no longer holds (leaving copies let go)."""
        if not entries:
            return
        self._dirty_targets.add(t.name)
        log = self._logs.get(t.name)
        if log is not None:
            self._changes.extend(log, "delete", deletion_order(entries))

    def _emit(self, cover: Cover, op: Literal["upsert", "delete"], entry: DesiredEntry) -> None:
        self._changes.broadcast(cover.tracked, op, entry)

    # ------------------------------------------------------------------------------------------
    # Net changes of one target between two covers

    def account(self, name: str, before: CoverKey, after: CoverKey, override: Override | None,
                memo: dict[tuple[CoverKey, CoverKey], bool]) -> None:
        """Log (if tracked) and mark dirty the net change of one target from ``before`` to ``after``."""
        log = self._logs.get(name)
        if log is not None:
            changed = self._log_diff(log, before, after, override)
        else:
            changed = memo.get((before, after))
            if changed is None:
                added, removed = self._diff(before, after, override, first_only=True)
                changed = memo[(before, after)] = bool(added or removed)
        if changed:
            self._dirty_targets.add(name)

    def _holds(self, ref: ObjectRef, cover_key: CoverKey, override: Override | None) -> bool:
        """Whether ``ref`` is in the union of ``cover_key``'s selections (one of them possibly as it was)."""
        holders = self._selectors_of.get(ref, _NO_HOLDERS)
        if override is None:
            return not holders.isdisjoint(cover_key)
        key, old_selection = override
        if key in cover_key and ref in old_selection:
            return True
        return any(h != key and h in cover_key for h in holders)

    def _diff(self, before: CoverKey, after: CoverKey, override: Override | None,
              first_only: bool = False) -> tuple[set[ObjectRef], set[ObjectRef]]:
        """Objects added to and removed from a desired set going from ``before`` (where the override
        placement had its old selection) to ``after`` (current selections)."""
        added: set[ObjectRef] = set()
        removed: set[ObjectRef] = set()
        candidates: list[tuple[Iterable[ObjectRef], bool]] = [
            (self._placements[key].selected, True) for key in after - before]
        for key in before - after:
            selection = override[1] if override is not None and key == override[0] else self._placements[key].selected
            candidates.append((selection, False))
        if override is not None and override[0] in before and override[0] in after:
            changed = override[1].keys() ^ self._placements[override[0]].selected.keys()
            candidates += [(changed, True), (changed, False)]
        for refs, adding in candidates:
            for ref in refs:
                if adding:
                    if ref not in added and self._holds(ref, after, None) and not self._holds(ref, before, override):
                        added.add(ref)
                        if first_only:
                            return added, removed
                elif ref not in removed and self._holds(ref, before, override) and not self._holds(ref, after, None):
                    removed.add(ref)
                    if first_only:
                        return added, removed
        return added, removed

    def _log_diff(self, log: ChangeLog, before: CoverKey, after: CoverKey, override: Override | None) -> bool:
        """Log the difference between two desired sets for one target, in apply then deletion order."""
        added, removed = self._diff(before, after, override)
        upserts: list[DesiredEntry] = []
        deletes: list[DesiredEntry] = []
        namespaces: set[NsKey] = set()
        for ref in added:
            if ref.resource == NAMESPACE_RESOURCE:
                namespaces.add((ref.space, ref.name))
                continue
            upserts.append(self._entry(ref, after))
            if ref.namespace:
                namespaces.add((ref.space, ref.namespace))
        for ref in removed:
            if ref.resource == NAMESPACE_RESOURCE:
                namespaces.add((ref.space, ref.name))
                continue
            deletes.append(DesiredEntry(ref, entry_kind(ref)))
            if ref.namespace:
                namespaces.add((ref.space, ref.namespace))
        for ns in namespaces:
            was, now = self._namespace_state(before, ns, override), self._namespace_state(after, ns, None)
            if now is None and was is not None:
                deletes.append(DesiredEntry(namespace_ref(ns), "namespace", was == "implicit"))
            elif now is not None and now != was:
                if now == "implicit":
                    upserts.append(self._implicit_namespace_entry(after, ns))
                else:
                    upserts.append(self._entry(namespace_ref(ns), after))
        self._changes.extend(log, "upsert", apply_order(upserts))
        self._changes.extend(log, "delete", deletion_order(deletes))
        return bool(upserts or deletes)

    def _namespace_state(self, cover_key: CoverKey, ns: NsKey,
                         override: Override | None) -> Literal["explicit", "implicit"] | None:
        if self._holds(namespace_ref(ns), cover_key, override):
            return "explicit"
        cover = self.covers.get(cover_key)
        if override is None and cover is not None:
            return "implicit" if cover.nscount.get(ns) else None
        members = self._namespace_members.get(ns, ())
        return "implicit" if any(self._holds(m, cover_key, override) for m in members) else None
