"""Where placements reach: the inventory, each EdgePlacement's Locations and destinations, each target's cover.

Owns the Locations and SyncTargets of the inventory space, with label indexes so a Location finds its
SyncTargets (and a SyncTarget its Locations) without a scan; which Locations each EdgePlacement
matches; its destinations (the SinglePlacementSlice content: one per matched Location and SyncTarget
it selects); and for every SyncTarget the set of placements covering it. A target whose covering set
changes is moved to the cover of its new set in :mod:`placement.desired`, which accounts for its net
change. The predicates themselves are :mod:`placement.locations`.

An inventory object carrying ``metadata.deletionTimestamp`` counts as deleted. Never does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from placement.desired import DesiredSets
from placement.locations import (
    LocationSpec,
    compile_location,
    exact_requirement,
    labels_of,
    matching_selectors,
    metadata,
)
from placement.model import Destination
from placement.records import CoverKey, PKey, PlacementRecord, TargetRecord
from placement.spec import PlacementSpec


@dataclass
class LocationRecord:
    spec: LocationSpec
    targets: set[str] = field(default_factory=set)
    placements: set[PKey] = field(default_factory=set)
    index_key: tuple[str, str] | None = None


class Coverage:
    """The inventory and what every placement reaches; a target whose cover changes moves in ``desired``."""

    def __init__(self, placements: Mapping[PKey, PlacementRecord], desired: DesiredSets) -> None:
        self._placements = placements
        self._desired = desired
        self.locations: dict[str, LocationRecord] = {}
        self._locations_by_label: dict[tuple[str, str], set[str]] = {}
        self._locations_unindexed: set[str] = set()
        self.targets: dict[str, TargetRecord] = {}
        self._targets_by_label: dict[tuple[str, str], set[str]] = {}
        # Placements whose destinations or matching Location count changed since the last drain.
        self.dirty_placements: set[PKey] = set()
        # Placements whose candidate SyncTargets may have changed since their scheduler last looked.
        self.candidates_changed: set[PKey] = set()

    # ------------------------------------------------------------------------------------------
    # Inputs: inventory

    def upsert_location(self, obj: dict) -> None:
        meta = metadata(obj)
        name = str(meta.get("name") or "")
        if meta.get("deletionTimestamp"):
            self.delete_location(name)
            return
        spec = compile_location(obj)
        loc = self.locations.get(name)
        if loc is not None and loc.spec == spec:
            return
        new_placements = {key: indexes for key, p in self._placements.items()
                          if (indexes := matching_selectors(p.spec.location_selectors, spec.labels))}
        if loc is None or loc.spec.instance_selector != spec.instance_selector or loc.spec.problem != spec.problem:
            new_targets = self._select_targets(spec)
        else:
            new_targets = set(loc.targets)
        if loc is None:
            loc = self.locations[name] = LocationRecord(spec)
        self._unindex_location(name, loc)
        loc.spec = spec
        self._index_location(name, loc)
        self._rewire_location(name, loc, new_placements, new_targets)

    def delete_location(self, name: str) -> None:
        loc = self.locations.get(name)
        if loc is None:
            return
        self._rewire_location(name, loc, {}, set())
        self._unindex_location(name, loc)
        del self.locations[name]

    def upsert_sync_target(self, obj: dict) -> None:
        meta = metadata(obj)
        name = str(meta.get("name") or "")
        if meta.get("deletionTimestamp"):
            self.delete_sync_target(name)
            return
        labels, uid = labels_of(obj), str(meta.get("uid") or "")
        spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
        cordoned = spec.get("unschedulable") is True
        target = self.targets.get(name)
        if target is not None and target.labels == labels and target.uid == uid and \
                (target.allowed is not None) == cordoned:
            return
        if target is None:
            target = self.targets[name] = TargetRecord(name, {}, uid)
            self._desired.add_target(target)
        uid_changed = target.uid != uid
        cordon_changed = (target.allowed is not None) != cordoned
        if cordon_changed:  # cordoned: what covers it now is all that may reach it
            target.allowed = target.cover if cordoned else None
        self._index_labels(self._targets_by_label, name, target.labels, add=False)
        target.labels, target.uid = labels, uid
        self._index_labels(self._targets_by_label, name, labels, add=True)
        self._relocate(target, uid_changed or cordon_changed)

    def set_evicted(self, name: str, evicted: bool) -> None:
        """A drained target is selected by no Location (everything leaves it); undrained, it is again."""
        target = self.targets.get(name)
        if target is not None and target.evicted != evicted:
            target.evicted = evicted
            self._relocate(target, True)

    def _relocate(self, target: TargetRecord, refresh_all: bool) -> None:
        """Recompute which Locations select the target, its cover and the destinations it is in;
        ``refresh_all``: its destinations changed everywhere (its UID, cordon or eviction)."""
        name, labels = target.name, target.labels
        new_locations = set() if target.evicted else {
            loc for loc in self._candidate_locations(labels)
            if self.locations[loc].spec.instance_selector.matches(labels)}
        old_locations = target.locations
        for loc in old_locations - new_locations:
            self.locations[loc].targets.discard(name)
        for loc in new_locations - old_locations:
            self.locations[loc].targets.add(name)
        target.locations = new_locations
        self._recover([name])
        touched = (old_locations ^ new_locations) | (new_locations if refresh_all else set())
        self._refresh_destinations((key, loc) for loc in touched for key in self.locations[loc].placements)

    def _reaches(self, key: PKey, target: str) -> bool:
        allowed = self.targets[target].allowed
        chosen = self._placements[key].chosen
        return (allowed is None or key in allowed) and (chosen is None or target in chosen)

    def delete_sync_target(self, name: str) -> None:
        target = self.targets.get(name)
        if target is None:
            return
        old_locations = target.locations
        for loc in old_locations:
            self.locations[loc].targets.discard(name)
        target.locations = set()
        self._recover([name])
        self._desired.remove_target(target)
        self._index_labels(self._targets_by_label, name, target.labels, add=False)
        del self.targets[name]
        self._refresh_destinations((key, loc) for loc in old_locations for key in self.locations[loc].placements)

    # ------------------------------------------------------------------------------------------
    # Placements

    def matching_locations(self, spec: PlacementSpec) -> dict[str, list[int]]:
        """The Locations a placement spec matches, with the indexes of the selectors each one matches."""
        return {name: indexes for name, loc in self.locations.items()
                if (indexes := matching_selectors(spec.location_selectors, loc.spec.labels))}

    def reached_targets(self, locations: Iterable[str]) -> set[str]:
        """The SyncTargets these Locations select."""
        targets: set[str] = set()
        for name in locations:
            targets |= self.locations[name].targets
        return targets

    def set_locations(self, p: PlacementRecord, new: dict[str, list[int]], *, silent: bool = False) -> None:
        """Give a placement its new matched Locations and move the targets whose cover changes; ``silent``
        leaves the accounting of their net change to the caller."""
        old = p.locations
        changed = old.keys() ^ new.keys()
        p.locations = new
        for name in new.keys() - old.keys():
            self.locations[name].placements.add(p.key)
        for name in old.keys() - new.keys():
            self.locations[name].placements.discard(p.key)
        reached = self.reached_targets(changed)
        # A scheduled placement changes the cover of its chosen targets only.
        self._recover(reached if p.chosen is None else p.chosen & reached, silent=silent)
        self._refresh_destinations((p.key, name) for name in changed)

    def set_chosen(self, choices: Mapping[PKey, frozenset[str] | None]) -> None:
        """Give scheduled placements their chosen SyncTargets (None: all their Locations select) and move the
        targets whose cover changes: each such target once, however many of these placements it enters or
        leaves (one decision re-choosing hundreds of placements recomputes a replacement cluster's cover once)."""
        changed = [(p, old) for key, chosen in choices.items()
                   if (p := self._placements.get(key)) is not None and (old := p.chosen) != chosen]
        if not changed:
            return
        affected: set[str] = set()
        known = {p.key for p, _ in changed if p.key in self.candidates_changed}
        for p, old in changed:
            p.chosen = choices[p.key]
            if old is None or p.chosen is None:
                affected |= self.reached_targets(p.locations)
            else:
                affected |= {t for t in old ^ p.chosen if self.is_candidate(p.key, t)}
        self._recover(affected)
        self._refresh_destinations((p.key, name) for p, _ in changed for name in p.locations)
        # Their choice changed, not their candidates.
        self.candidates_changed -= {p.key for p, _ in changed} - known

    def candidates(self, key: PKey) -> set[str]:
        """The SyncTargets a placement's Locations select, whatever it chose (what its scheduler chooses from)."""
        p = self._placements.get(key)
        return self.reached_targets(p.locations) if p is not None else set()

    def is_candidate(self, key: PKey, target: str) -> bool:
        """Whether one of the placement's Locations selects ``target`` (without listing its candidates)."""
        p, t = self._placements.get(key), self.targets.get(target)
        return p is not None and t is not None and any(loc in p.locations for loc in t.locations)

    def candidate_placements(self, target: str) -> set[PKey]:
        """The placements whose Locations select ``target`` (those whose choice it may change)."""
        t = self.targets.get(target)
        if t is None:
            return set()
        return set().union(*(self.locations[loc].placements for loc in t.locations))

    # ------------------------------------------------------------------------------------------
    # Outputs

    def destinations(self, key: PKey) -> list[Destination]:
        p = self._placements.get(key)
        if p is None:
            return []
        return sorted((Destination(loc, t, uid) for loc, pairs in p.destinations.items() for t, uid in pairs),
                      key=lambda d: (d.location_name, d.sync_target_name))

    def location_instances(self, name: str) -> list[str]:
        loc = self.locations.get(name)
        return sorted(loc.targets) if loc is not None else []

    # ------------------------------------------------------------------------------------------
    # Label indexes

    def _select_targets(self, spec: LocationSpec) -> set[str]:
        if spec.problem or spec.instance_selector.nothing:
            return set()
        exact = exact_requirement(spec.instance_selector)
        candidates: Iterable[str] = self._targets_by_label.get(exact, ()) if exact else self.targets
        return {t for t in candidates
                if not self.targets[t].evicted and spec.instance_selector.matches(self.targets[t].labels)}

    def _candidate_locations(self, labels: Mapping[str, str]) -> set[str]:
        out = set(self._locations_unindexed)
        for item in labels.items():
            out |= self._locations_by_label.get(item, set())
        return out

    def _index_location(self, name: str, loc: LocationRecord) -> None:
        if loc.spec.problem or loc.spec.instance_selector.nothing:
            loc.index_key = None
            return  # selects nothing, so no SyncTarget needs to find it
        loc.index_key = exact_requirement(loc.spec.instance_selector)
        if loc.index_key is None:
            self._locations_unindexed.add(name)
        else:
            self._locations_by_label.setdefault(loc.index_key, set()).add(name)

    def _unindex_location(self, name: str, loc: LocationRecord) -> None:
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

    # ------------------------------------------------------------------------------------------
    # Propagation: Locations and placements to destinations and covers

    def _rewire_location(self, name: str, loc: LocationRecord, new_placements: dict[PKey, list[int]],
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
            self.targets[t].locations.discard(name)
        for t in new_targets - old_targets:
            self.targets[t].locations.add(name)
        loc.targets = new_targets
        self._recover((old_targets | new_targets) if placements_changed else (old_targets ^ new_targets))
        refresh = set(placements_changed)
        if old_targets != new_targets:
            refresh |= old_placements | loc.placements
        self._refresh_destinations((key, name) for key in refresh)

    def _refresh_destinations(self, pairs: Iterable[tuple[PKey, str]]) -> None:
        """Recompute the destinations of these (placement, Location) pairs; mark changed placements dirty."""
        touched: set[PKey] = set()
        for key, name in pairs:
            p = self._placements.get(key)
            if p is None:
                continue
            touched.add(key)
            loc = self.locations.get(name)
            # A scheduled placement looks only at its chosen targets (a few of a Location's thousands).
            among = (loc.targets if p.chosen is None else p.chosen & loc.targets) if loc else ()
            new = frozenset((t, self.targets[t].uid) for t in among if self._reaches(key, t)) \
                if loc and name in p.locations else None
            old = p.destinations.get(name)
            if new == old or (not new and not old):
                continue
            self.dirty_placements.add(key)
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
        self.candidates_changed |= touched
        for key in touched:
            p = self._placements[key]
            if len(p.locations) != p.location_count:
                p.location_count = len(p.locations)
                self.dirty_placements.add(key)

    def _recover(self, names: Iterable[str], *, silent: bool = False) -> None:
        """Recompute the covering placements of these targets and move those whose set changed."""
        # Content changes so far are charged to the targets that were in the changed covers; a target
        # that moves is charged with its own net change only.
        self._desired.flush_dirty()
        memo: dict[tuple[CoverKey, CoverKey], bool] | None = None if silent else {}
        for name in names:
            t = self.targets.get(name)
            if t is None:
                continue
            new = frozenset().union(*(self.locations[loc].placements for loc in t.locations))
            if t.allowed is not None:
                new &= t.allowed
            new = frozenset(key for key in new if self._placements[key].chosen is None
                            or name in self._placements[key].chosen)  # type: ignore[operator]
            if new != t.cover:
                self._desired.move(t, new, memo)
