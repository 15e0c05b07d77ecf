"""Namespace mappings followed after each drain: namespaces whose cluster namespace moved, and namespaces whose
mapped name is no namespace name.

A namespace's cluster namespace changes when its mapping does (its EdgePlacement's, its Space's default) and also
when the placement deciding it changes (:mod:`placement.nsplacing`: the first selecting it stops selecting there,
another starts). Either way every cluster gets the namespace's objects again (the syncer moves them) and the
conflicts file them under their new cluster name. A namespace whose rendered name is no DNS-1123 label of at most
63 characters is sent to no cluster (the sync stream holds it: the clusters keep what they have); every
EdgePlacement selecting it says so in a ``NamespaceMappingFailed`` condition, and with a Warning Event when a
namespace starts failing. Only spaces that map namespaces, or did at the last look, are looked at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from apiserver.catalog import Catalog
from apiserver.events import EventRecorder, Involved
from apiserver.service import Objects
from inventory.kinds import EDGE_GROUP, EDGE_VERSION
from placement.conflicts import Conflicts
from placement.copies import listed
from placement.engine import PlacementEngine
from placement.nsplacing import NamespacePlacing
from placement.records import PKey

FAILED = "NamespaceMappingFailed"


class NamespaceWatch:
    def __init__(self, engine: PlacementEngine, namespaces: NamespacePlacing, conflicts: Conflicts,
                 placements_of: Callable[[str], Iterable[str]], objects: Objects, catalog: Catalog,
                 placement: Callable[[str, str], dict[str, Any] | None]) -> None:
        self._engine = engine
        self._namespaces = namespaces
        self._conflicts = conflicts
        self._placements_of = placements_of  # a space's EdgePlacements, by name
        self._events = EventRecorder(objects, catalog, "spacehub-placement")
        self._placement = placement  # an EdgePlacement as stored (its uid names it in Events)
        self._due: set[str] = set()  # spaces whose default mapping changed since the last look
        self._failed: dict[str, dict[str, tuple[str, ...]]] = {}  # space -> placement -> its failing namespaces

    def space_changed(self, space: str) -> None:
        """The Space's default mapping changed: its namespaces are looked at on the next drain."""
        self._due.add(space)

    async def look(self, placements: set[PKey], tell: bool) -> tuple[bool, set[PKey]]:
        """Look at the spaces of the placements that changed (and those ``space_changed`` named); Events are
        recorded when ``tell`` (this process writes results). Returns whether clusters were given namespaces
        again (their streams must wake) and the placements whose condition changed."""
        spaces = {space for space, _ in placements} | self._due
        self._due = set()
        moved_by_space: dict[str, set[str]] = {}
        changed: set[PKey] = set()
        for space in sorted(spaces):
            if not self._namespaces.watches(space) and space not in self._failed:
                continue
            placed = {name: self._engine.placed_namespaces(space, name) for name in self._placements_of(space)}
            moved = self._namespaces.moved(space, {ns for namespaces in placed.values() for ns in namespaces})
            if moved:
                self._engine.resend_space(space, moved)
                moved_by_space[space] = moved
            before, now = self._failed.pop(space, {}), {}
            for name, namespaces in placed.items():
                failing = tuple(sorted(p for ns in namespaces if (p := self._namespaces.problem(space, ns))))
                if failing:
                    now[name] = failing
                if failing != before.get(name, ()):
                    changed.add((space, name))
                    started = [p for p in failing if p not in before.get(name, ())]
                    if started and tell:
                        await self._tell(space, name, started)
            if now:
                self._failed[space] = now
        if moved_by_space:
            self._conflicts.remap(moved_by_space)
        return bool(moved_by_space), changed

    async def _tell(self, space: str, name: str, failing: list[str]) -> None:
        obj = self._placement(space, name)
        if obj is None:
            return
        involved = Involved(space, "EdgePlacement", f"{EDGE_GROUP}/{EDGE_VERSION}", "", name,
                            str((obj.get("metadata") or {}).get("uid", "")))
        await self._events.record(involved, "Warning", FAILED, "sent to no cluster (they keep what they have): "
                                  + listed(failing))

    def conditions(self, space: str, name: str) -> list[dict[str, Any]]:
        """The EdgePlacement's NamespaceMappingFailed condition: selected namespaces whose mapped name is none."""
        failing = self._failed.get(space, {}).get(name)
        if not failing:
            return []
        return [{"type": FAILED, "status": "True", "reason": "InvalidNamespaceName",
                 "message": "namespaces whose mapping renders no namespace name are sent to no cluster (they keep "
                            "what they have): " + listed(list(failing))}]
