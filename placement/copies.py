"""Each cluster's copy of a placed object, on the hub: customized for it, or held back, and why.

Composes :mod:`placement.shaping` (Customizers and parameters: one copy per cluster) and
:mod:`placement.conflicts` (one cluster object placed from several spaces with different content) for the
hub glue (:mod:`placement.service`), the sync stream and the desired-set view: what a cluster gets of an
object, the revision of that copy, why a cluster keeps another copy, the EdgePlacement conditions that say
so, and which clusters must be sent an object again when any of that changes. Reads the engine; writes
only its change logs (``resend``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from apimachinery import kubejsonpath
from apimachinery.dottedpaths import split_list
from apimachinery.fieldownership import RETAIN_ANNOTATION
from apiserver.resourcetypes import ScalePaths
from inventory.clusters import Inventory, cordoned, not_ready_since
from placement.conflicts import AsSent, Conflicts
from placement.division import Division, DivisionError, divide, division_of
from placement.engine import PlacementEngine
from placement.model import ObjectRef
from placement.records import PKey
from placement.revisions import Revision
from placement.shaping import CustomizerKey, Outcome, Problems, Shaper

SHOWN_PROBLEMS = 3  # objects named in a condition before "and N more"


class ClusterCopies:
    def __init__(self, engine: PlacementEngine, inventory: Inventory,
                 projected: Callable[[ObjectRef], Awaitable[dict[str, Any] | None]],
                 revision_of: Callable[[ObjectRef], int | None],
                 scale_of: Callable[[ObjectRef], ScalePaths | None],
                 cluster_namespace: Callable[[str, str], str], as_sent: AsSent) -> None:
        self.engine = engine
        self.inventory = inventory
        self._projected = projected
        self._revision_of = revision_of
        self._scale_of = scale_of
        self.shaping = Shaper(engine.target_locations, inventory.location, inventory.sync_target)
        self.conflicts = Conflicts(cluster_namespace, as_sent)
        self._due: set[ObjectRef] = set()  # shaped objects whose copies to make again
        # Divided objects: what they ask, their total and where it is; the shares last sent per cluster.
        self._divisions: dict[ObjectRef, tuple[Division, int, str]] = {}
        self._division_errors: dict[ObjectRef, str] = {}
        self._shares: dict[ObjectRef, tuple[tuple[Any, ...], dict[str, int], bool]] = {}
        self._divisions_due: set[ObjectRef] = set()
        # Set by the hub: the shortest failover.after (seconds) of the placements selecting an object.
        self.failover_after: Callable[[ObjectRef], float | None] = lambda _ref: None
        self.wake = False  # clusters were given objects again since the last look: their streams must wake
        # Set by the hub: the kept revision a staged rollout keeps a cluster at (None: the current content).
        self.pinned: Callable[[ObjectRef, str], Revision | None] = lambda _ref, _target: None
        # Set by the hub: whether ``pinned`` may keep some cluster at a kept revision of an object (else None for all).
        self.may_pin: Callable[[ObjectRef], bool] = lambda _ref: False
        # Per object, the copy of every cluster without one of its own (see _common_copy): the object's revision
        # and the ownership annotations it was made from, and the outcome all those clusters share.
        self._common: dict[ObjectRef, tuple[int, Mapping[str, str], Outcome]] = {}

    # --- inputs -------------------------------------------------------------------------------

    def object_changed(self, ref: ObjectRef, obj: Mapping[str, Any] | None) -> None:
        self._common.pop(ref, None)
        self.conflicts.object_changed(ref, obj)
        self.shaping.object_changed(ref, obj)
        if self.shaping.shapes(ref):
            self._due.add(ref)
        self._division_changed(ref, obj)

    def _division_changed(self, ref: ObjectRef, obj: Mapping[str, Any] | None) -> None:
        had = ref in self._divisions or ref in self._division_errors
        self._divisions.pop(ref, None)
        self._division_errors.pop(ref, None)
        scale = self._scale_of(ref) if obj is not None else None
        if obj is not None and scale is not None:
            try:
                division = division_of(obj)
            except DivisionError as exc:
                self._division_errors[ref] = str(exc)
                division = None
            if division is not None:
                total = kubejsonpath.first(obj, scale.spec_replicas)
                self._divisions[ref] = (division, total if isinstance(total, int) and total >= 0 else 1,
                                        scale.spec_replicas)
        if had or ref in self._divisions or ref in self._division_errors:
            self._divisions_due.add(ref)
        if ref not in self._divisions:
            self._shares.pop(ref, None)

    def customizer_changed(self, key: CustomizerKey, obj: dict[str, Any] | None) -> set[ObjectRef]:
        """A Customizer changed: returns the objects naming it (the caller re-sends them with a new token)."""
        users = self.shaping.customizer_changed(key, obj)
        self._due.update(users)
        return users

    def definitions_changed(self, targets: Iterable[str]) -> None:
        """Clusters whose Location or SyncTarget changed get again the copies that use their parameters."""
        self._divisions_due.update(self._divisions)  # weights and capacities come from the SyncTargets
        changed = self.shaping.definitions_changed(targets)
        dependent = [ref for ref in self.shaping.shaped_objects() if self.shaping.depends_on_definitions(ref)]
        if not changed or not dependent:
            return
        for target in changed:
            self.engine.resend(target, dependent)
        self._due.update(dependent)

    def forget_space(self, space: str, refs: Iterable[ObjectRef]) -> None:
        for ref in refs:
            self._common.pop(ref, None)
            self.conflicts.object_changed(ref, None)
        self.shaping.forget_space(space)

    def token(self, ref: ObjectRef) -> str:
        return self.shaping.token(ref)

    # --- looking again after each drain -------------------------------------------------------

    async def look(self, placements: set[PKey]) -> set[PKey]:
        """Make the copies of shaped objects that are due (or whose placements changed) and look for
        conflicts; returns the placements whose conditions change."""
        self.wake = False
        due, self._due = self._due, set()
        selected = [ref for key in placements for ref in self.engine.selected_objects(*key)]
        due.update(ref for ref in selected if self.shaping.shapes(ref))
        self.conflicts.selection_changed(selected)
        if placements:
            self.conflicts.placements_changed()
        changed = await self._make_copies(due)
        changed |= self._redivide({ref for ref in selected if ref in self._divisions} | self._divisions_due)
        lost, resend = await self.conflicts.recompute(self.engine.object_destinations, self._copy)
        for target, refs in resend.items():
            self.engine.resend(target, refs)
        self.wake = self.wake or bool(resend)
        return changed | {key for ref in lost for key in self.engine.selecting(ref)}

    def _redivide(self, refs: set[ObjectRef]) -> set[PKey]:
        """Divide these objects' replicas again; clusters whose share changed get the object again. Returns
        the placements whose conditions change (a division became possible or impossible)."""
        self._divisions_due.clear()
        changed: set[PKey] = set()
        for ref in refs:
            before = self._shares.get(ref)
            after = self._divide(ref)
            old_shares = before[1] if before is not None else {}
            new_shares = after[1] if after is not None else {}
            moved = [t for t in set(old_shares) | set(new_shares) if old_shares.get(t) != new_shares.get(t)]
            for target in moved:
                if target in new_shares:
                    self.engine.resend(target, [ref])
                    self.wake = True
            if (before is None) != (after is None) or (before and after and before[2] != after[2]) or \
                    ref in self._division_errors:
                changed.update(self.engine.selecting(ref))
        return changed

    def _divide(self, ref: ObjectRef) -> tuple[tuple[Any, ...], dict[str, int], bool] | None:
        """The object's shares now (cached while total, clusters, weights and maxima stay)."""
        asked = self._divisions.get(ref)
        if asked is None:
            self._shares.pop(ref, None)
            return None
        division, total, _ = asked
        targets = self.engine.object_destinations(ref)
        cached = self._shares.get(ref)
        before = cached[1] if cached is not None else {}
        # Clusters lost past the placement's failover.after keep what they run, on top of the total, until they
        # return; cordoned ones keep it within the total and take no more. (A drained cluster is no destination:
        # its copy is kept, with its share, until the others run theirs, by placement.moves.)
        leaving = {t: before.get(t, 0) for t in targets if self._failed_over(t, ref)}
        kept = {t: min(before.get(t, 0), total) for t in targets
                if t not in leaving and cordoned(self.inventory.sync_target(t) or {})}
        kept = _within(kept, total)
        open_targets = [t for t in targets if t not in leaving and t not in kept]
        weights, maxima = division.weights(open_targets, self.inventory.sync_target)
        key = (division, total, tuple(sorted(weights.items())), tuple(sorted(maxima.items())),
               tuple(sorted(leaving.items())), tuple(sorted(kept.items())))
        if cached is not None and cached[0] == key:
            return cached
        shares, over = divide(total - sum(kept.values()), weights, maxima) if open_targets else ({}, False)
        if not open_targets and not kept:  # nowhere else to go: the leaving keep everything
            shares = {}
        self._shares[ref] = (key, {**shares, **kept, **leaving}, over)
        return self._shares[ref]

    def _failed_over(self, target: str, ref: ObjectRef) -> bool:
        lost = not_ready_since(self.inventory.sync_target(target) or {})
        failover = self.failover_after(ref)
        return lost is not None and failover is not None and \
            (dt.datetime.now(dt.UTC) - lost).total_seconds() >= failover

    def watch_leaving(self) -> bool:
        """Whether some cluster is lost while a divided object may fail over: its divided objects are looked at
        again (the caller polls while this holds)."""
        if not self._divisions:
            return False
        if any(not_ready_since(target) for target in self.inventory.sync_targets()):
            self._divisions_due.update(self._divisions)
            return True
        return False

    def requested(self) -> dict[str, tuple[float, float]]:
        """Per cluster, the CPU (cores) and memory (bytes) that the divided replicas given to it request (the
        scheduler's Capacity score counts only what is left); clusters given none are left out."""
        out: dict[str, tuple[float, float]] = {}
        for ref, (_key, shares, _over) in self._shares.items():
            division = self._divisions.get(ref)
            if division is None:
                continue
            per_replica = dict(division[0].per_replica)
            for target, share in shares.items():
                if share:
                    cpu, memory = out.get(target, (0.0, 0.0))
                    out[target] = (cpu + float(per_replica.get("cpu", 0)) * share,
                                   memory + float(per_replica.get("memory", 0)) * share)
        return out

    def share(self, ref: ObjectRef, target: str) -> int | None:
        """The replicas ``target`` runs of a divided object (None: not divided)."""
        if ref not in self._divisions:
            return None
        divided = self._shares.get(ref) or self._divide(ref)  # kept fresh by look(); computed when first asked
        return None if divided is None else divided[1].get(target, 0)

    def shares(self, ref: ObjectRef) -> dict[str, int] | None:
        if ref not in self._divisions:
            return None
        divided = self._shares.get(ref) or self._divide(ref)
        return None if divided is None else dict(divided[1])

    def divided(self, ref: ObjectRef) -> bool:
        return ref in self._divisions

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
        revision: int | str | None = self._revision_of(ref)
        projected = await self._projected(ref) if revision is not None else None
        if revision is None or projected is None:
            return None
        pinned = self.pinned(ref, target)
        if pinned is not None:  # a rollout keeps this cluster at a kept revision
            revision, projected = f"rev{pinned.number}", pinned.content
        error = self._division_errors.get(ref)
        if error is not None:
            return Outcome(None, str(revision), error)
        outcome = self.shaping.shape(ref, target, projected, str(revision))
        share = self.share(ref, target)
        if share is None or outcome.obj is None:
            return outcome
        obj = _with_replicas(outcome.obj, self._divisions[ref][2], share)
        return Outcome(obj, f"{outcome.revision}.{share}", None, outcome.unknown_keys)

    # --- outputs ------------------------------------------------------------------------------

    async def content_for(self, ref: ObjectRef, target: str) -> Outcome | None:
        """What ``target`` gets of ``ref``: its copy and content revision, or (``obj`` None) why the cluster
        keeps another copy; None when the object is gone."""
        if self.engine.keeps_leaving(ref, target):  # a move: the cluster keeps what it runs, whatever changed since
            revision = self._revision_of(ref)
            return None if revision is None else Outcome(None, str(revision), "leaving: kept until the object's "
                                                          "other clusters run it Ready")
        if self._own_copy(ref, target):
            outcome = await self._shaped(ref, target)
            if outcome is not None and outcome.obj is not None and (ownership := self.engine.ownership(ref)):
                outcome = Outcome(_with_ownership(outcome.obj, ownership), outcome.revision, None,
                                  outcome.unknown_keys)
        else:
            outcome = await self._common_copy(ref)
        conflict = self.conflicts.lost(ref, target)
        if outcome is not None and conflict is not None:
            return Outcome(None, outcome.revision, f"conflict: {conflict.describe()}")
        return outcome

    async def shared_copy(self, ref: ObjectRef) -> tuple[Outcome | None, frozenset[str]] | None:
        """:meth:`content_for` for every cluster of ``ref`` at once, as a change's streams ask it: the outcome of
        every cluster without a path of its own, and the clusters with one (keeping a leaving copy, or where
        ``ref`` lost a conflict), which must ask :meth:`content_for`; None when any cluster's copy may be its
        own (customized, divided or kept at a rollout's revision): then every cluster asks."""
        if self._shaped_or_divided(ref) or self.may_pin(ref):
            return None
        own = self.conflicts.losers(ref).union(self.engine.leaving_targets(ref))
        return await self._common_copy(ref), own

    def _own_copy(self, ref: ObjectRef, target: str) -> bool:
        """Whether ``target``'s copy of ``ref`` may differ from the other clusters': customized, divided (or not
        divisible) or kept at a rollout's revision."""
        return self._shaped_or_divided(ref) or self.pinned(ref, target) is not None

    def _shaped_or_divided(self, ref: ObjectRef) -> bool:
        return self.shaping.shapes(ref) or ref in self._divisions or ref in self._division_errors

    async def _common_copy(self, ref: ObjectRef) -> Outcome | None:
        """The copy every cluster without one of its own gets: the projection with its ownership annotations.
        Made once per (revision, ownership) and shared, because a change asks it for every cluster at once and
        the streams' shared line (sync/frames.py) is reused only for the very same object."""
        revision = self._revision_of(ref)
        if revision is None:
            return None
        ownership = self.engine.ownership(ref)
        cached = self._common.get(ref)
        if cached is not None and cached[0] == revision and cached[1] is ownership:
            return cached[2]
        projected = await self._projected(ref)
        if projected is None:
            return None
        outcome = Outcome(_with_ownership(projected, ownership) if ownership else projected, str(revision))
        self._common[ref] = (revision, ownership, outcome)
        return outcome

    def revision(self, ref: ObjectRef, target: str) -> str | None:
        revision: int | str | None = self._revision_of(ref)
        if revision is None:
            return None
        pinned = self.pinned(ref, target)
        if pinned is not None:
            revision = f"rev{pinned.number}"
        shaped = self.shaping.revision(ref, target, str(revision))
        share = self.share(ref, target)
        return shaped if share is None else f"{shaped}.{share}"

    def copy_error(self, ref: ObjectRef, target: str) -> str | None:
        """Why ``target`` keeps another copy than this object's: its customization failed, or another space's
        copy won a conflict there."""
        conflict = self.conflicts.lost(ref, target)
        if conflict is not None:
            return f"conflict: {conflict.describe()}"
        if ref in self._division_errors:
            return f"replica division: {self._division_errors[ref]}"
        problems = self.shaping.problems.get(ref)
        error = None if problems is None else problems.errors.get(target)
        return None if error is None else f"customization failed: {error}"

    def problems(self, ref: ObjectRef) -> Problems | None:
        return self.shaping.problems.get(ref)

    def conditions(self, space: str, name: str) -> list[dict[str, Any]]:
        """The EdgePlacement's CustomizationFailed and Conflict conditions."""
        failing, conflicting, over = [], set(), []
        for ref in self.engine.selected_objects(space, name):
            problems = self.shaping.problems.get(ref)
            if problems is not None and problems.errors:
                clusters = sorted(problems.errors)
                failing.append(f"{ref.resource} {_where(ref)} for {', '.join(clusters)}: "
                               f"{problems.errors[clusters[0]]}")
            conflicting.update(c.describe() for c in self.conflicts.of(ref))
            if ref in self._division_errors:
                failing.append(f"{ref.resource} {_where(ref)} for every cluster: {self._division_errors[ref]}")
            elif (divided := self._shares.get(ref)) is not None and divided[2]:
                over.append(f"{ref.resource} {_where(ref)}: {sum(divided[1].values())} replicas, shares "
                            + ", ".join(f"{t}={n}" for t, n in sorted(divided[1].items())))
        out = []
        if failing:
            out.append({"type": "CustomizationFailed", "status": "True", "reason": "CustomizationFailed",
                        "message": "clusters keep their previous copy of " + listed(failing)})
        if conflicting:
            out.append({"type": "Conflict", "status": "True", "reason": "ConflictingContent",
                        "message": "objects other spaces also place with different content (the object created "
                                   "first wins): " + listed(sorted(conflicting))})
        if over:
            out.append({"type": "OverCapacity", "status": "True", "reason": "ReplicasExceedCapacity",
                        "message": "divided replicas exceed what the clusters can hold (each got its most, the rest "
                                   "by weight): " + listed(over)})
        return out


def _within(kept: dict[str, int], total: int) -> dict[str, int]:
    """Kept shares cut (in name order) so that together they fit in the total."""
    out, left = {}, total
    for name in sorted(kept):
        out[name] = min(kept[name], left)
        left -= out[name]
    return out


def _with_replicas(obj: dict[str, Any], path: str, replicas: int) -> dict[str, Any]:
    """A copy of ``obj`` with ``replicas`` at a dot path such as ``.spec.replicas`` (parents copied)."""
    out = dict(obj)
    node = out
    steps = [s for s in path.split(".") if s]
    for step in steps[:-1]:
        child = node.get(step)
        node[step] = dict(child) if isinstance(child, dict) else {}
        node = node[step]
    node[steps[-1]] = replicas
    return out


def _where(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


def listed(items: list[str]) -> str:
    more = f"; and {len(items) - SHOWN_PROBLEMS} more" if len(items) > SHOWN_PROBLEMS else ""
    return "; ".join(items[:SHOWN_PROBLEMS]) + more


def _snapshot(problems: Problems | None) -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    return ({}, {}) if problems is None else (dict(problems.errors), dict(problems.unknown))


def _with_ownership(obj: dict[str, Any], ownership: Mapping[str, str]) -> dict[str, Any]:
    """The copy with its downsync tests' field ownership as annotations: retained fields are the union of the
    object's own annotation and the tests'; a drift mode the object names itself wins over the tests'."""
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    for key, value in ownership.items():
        if key == RETAIN_ANNOTATION:
            annotations[key] = ",".join(sorted(set(split_list(annotations.get(key, ""))) | set(split_list(value))))
        else:
            annotations.setdefault(key, value)
    meta["annotations"] = annotations
    return {**obj, "metadata": meta}
