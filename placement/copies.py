"""Each cluster's copy of a placed object, on the hub: customized for it, or held back, and why.

Composes :mod:`placement.shaping` (Customizers and parameters: one copy per cluster) and
:mod:`placement.conflicts` (one cluster object placed from several spaces with different content) for the
hub glue (:mod:`placement.service`), the sync stream and the desired-set view: what a cluster gets of an
object, the revision of that copy, why a cluster keeps another copy, the EdgePlacement conditions that say
so, and which clusters must be sent an object again when any of that changes. Reads the engine; writes
only its change logs (``resend``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from inventory.clusters import Inventory
from placement.conflicts import Conflicts
from placement.engine import PlacementEngine
from placement.model import ObjectRef
from placement.records import PKey
from placement.shaping import CustomizerKey, Outcome, Problems, Shaper

SHOWN_PROBLEMS = 3  # objects named in a condition before "and N more"


class ClusterCopies:
    def __init__(self, engine: PlacementEngine, inventory: Inventory,
                 projected: Callable[[ObjectRef], Awaitable[dict[str, Any] | None]],
                 revision_of: Callable[[ObjectRef], int | None]) -> None:
        self.engine = engine
        self._projected = projected
        self._revision_of = revision_of
        self.shaping = Shaper(engine.target_locations, inventory.location, inventory.sync_target)
        self.conflicts = Conflicts()
        self._due: set[ObjectRef] = set()  # shaped objects whose copies to make again
        self.wake = False  # clusters were given objects again since the last look: their streams must wake

    # --- inputs -------------------------------------------------------------------------------

    def object_changed(self, ref: ObjectRef, obj: Mapping[str, Any] | None) -> None:
        self.conflicts.object_changed(ref, obj)
        self.shaping.object_changed(ref, obj)
        if self.shaping.shapes(ref):
            self._due.add(ref)

    def customizer_changed(self, key: CustomizerKey, obj: dict[str, Any] | None) -> set[ObjectRef]:
        """A Customizer changed: returns the objects naming it (the caller re-sends them with a new token)."""
        users = self.shaping.customizer_changed(key, obj)
        self._due.update(users)
        return users

    def definitions_changed(self, targets: Iterable[str]) -> None:
        """Clusters whose Location or SyncTarget changed get again the copies that use their parameters."""
        changed = self.shaping.definitions_changed(targets)
        dependent = [ref for ref in self.shaping.shaped_objects() if self.shaping.depends_on_definitions(ref)]
        if not changed or not dependent:
            return
        for target in changed:
            self.engine.resend(target, dependent)
        self._due.update(dependent)

    def forget_space(self, space: str, refs: Iterable[ObjectRef]) -> None:
        for ref in refs:
            self.conflicts.object_changed(ref, None)
        self.shaping.forget_space(space)

    def token(self, ref: ObjectRef) -> str:
        return self.shaping.token(ref)

    # --- looking again after each drain -------------------------------------------------------

    async def look(self, placements: set[PKey]) -> set[PKey]:
        """Make the copies of shaped objects that are due (or whose placements changed) and look for
        conflicts; returns the placements whose conditions change."""
        due, self._due = self._due, set()
        selected = [ref for key in placements for ref in self.engine.selected_objects(*key)]
        due.update(ref for ref in selected if self.shaping.shapes(ref))
        self.conflicts.selection_changed(selected)
        changed = await self._make_copies(due)
        lost, resend = await self.conflicts.recompute(self.engine.object_destinations, self._copy)
        for target, refs in resend.items():
            self.engine.resend(target, refs)
        self.wake = bool(resend)
        return changed | {key for ref in lost for key in self.engine.selecting(ref)}

    async def _make_copies(self, refs: set[ObjectRef]) -> set[PKey]:
        """Every destination's copy of these shaped objects, so that a copy that cannot be made is reported
        before any syncer asks; returns the placements whose CustomizationFailed condition changes."""
        changed: set[PKey] = set()
        for ref in refs:
            before = _snapshot(self.shaping.problems.get(ref))
            targets = []
            if self.shaping.shapes(ref):
                targets = self.engine.object_destinations(ref)
                for target in targets:
                    await self._copy(ref, target)
            self.shaping.keep_targets(ref, set(targets))
            if _snapshot(self.shaping.problems.get(ref)) != before:
                changed.update(self.engine.selecting(ref))
        return changed

    async def _copy(self, ref: ObjectRef, target: str) -> dict[str, Any] | None:
        """``target``'s copy of ``ref`` as customization makes it (conflicts aside)."""
        outcome = await self._shaped(ref, target)
        return None if outcome is None else outcome.obj

    async def _shaped(self, ref: ObjectRef, target: str) -> Outcome | None:
        revision = self._revision_of(ref)
        projected = await self._projected(ref) if revision is not None else None
        if revision is None or projected is None:
            return None
        return self.shaping.shape(ref, target, projected, str(revision))

    # --- outputs ------------------------------------------------------------------------------

    async def content_for(self, ref: ObjectRef, target: str) -> Outcome | None:
        """What ``target`` gets of ``ref``: its copy and content revision, or (``obj`` None) why the cluster
        keeps another copy; None when the object is gone."""
        outcome = await self._shaped(ref, target)
        conflict = self.conflicts.lost(ref, target)
        if outcome is None or conflict is None:
            return outcome
        return Outcome(None, outcome.revision, f"conflict: {conflict.describe()}")

    def revision(self, ref: ObjectRef, target: str) -> str | None:
        revision = self._revision_of(ref)
        return None if revision is None else self.shaping.revision(ref, target, str(revision))

    def copy_error(self, ref: ObjectRef, target: str) -> str | None:
        """Why ``target`` keeps another copy than this object's: its customization failed, or another space's
        copy won a conflict there."""
        conflict = self.conflicts.lost(ref, target)
        if conflict is not None:
            return f"conflict: {conflict.describe()}"
        problems = self.shaping.problems.get(ref)
        error = None if problems is None else problems.errors.get(target)
        return None if error is None else f"customization failed: {error}"

    def problems(self, ref: ObjectRef) -> Problems | None:
        return self.shaping.problems.get(ref)

    def conditions(self, space: str, name: str) -> list[dict[str, Any]]:
        """The EdgePlacement's CustomizationFailed and Conflict conditions."""
        failing, conflicting = [], set()
        for ref in self.engine.selected_objects(space, name):
            problems = self.shaping.problems.get(ref)
            if problems is not None and problems.errors:
                clusters = sorted(problems.errors)
                failing.append(f"{ref.resource} {_where(ref)} for {', '.join(clusters)}: "
                               f"{problems.errors[clusters[0]]}")
            conflicting.update(c.describe() for c in self.conflicts.of(ref))
        out = []
        if failing:
            out.append({"type": "CustomizationFailed", "status": "True", "reason": "CustomizationFailed",
                        "message": "clusters keep their previous copy of " + _listed(failing)})
        if conflicting:
            out.append({"type": "Conflict", "status": "True", "reason": "ConflictingContent",
                        "message": "objects other spaces also place with different content (the object created "
                                   "first wins): " + _listed(sorted(conflicting))})
        return out


def _where(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


def _listed(items: list[str]) -> str:
    more = f"; and {len(items) - SHOWN_PROBLEMS} more" if len(items) > SHOWN_PROBLEMS else ""
    return "; ".join(items[:SHOWN_PROBLEMS]) + more


def _snapshot(problems: Problems | None) -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    return ({}, {}) if problems is None else (dict(problems.errors), dict(problems.unknown))
