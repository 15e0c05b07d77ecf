"""The stored choice of each scheduled EdgePlacement: who decides it, where it is kept, when it is looked at again.

The choice lives in the placement's ``status.scheduling.clusters`` (written with its status by the lease
holder, :mod:`placement.results`), so every hub process and a restarted hub place on the same clusters.
Only the lease holder decides (:meth:`Choices.decide`, with :func:`placement.scheduler.choose`); the
other processes adopt what is stored (:meth:`Choices.observed`), and so does the lease holder for a
placement it has not decided since it started. A choice is looked at again only when it may change:
the placement's candidates or scheduling spec changed (the engine says which), a taint or the health
of one of its candidates changed, a toleration's ``tolerationSeconds`` ran out, or a reschedule was
asked (then it is made from scratch). Time comes from ``clock`` (tests inject one).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.quantity import parse_quantity
from inventory.clusters import Inventory, cordoned, not_ready_since
from inventory.taints import Taint, evicting, taints_of
from placement.engine import PlacementEngine
from placement.records import PKey
from placement.scheduler import Candidate, Decision, Ranking, choose, needs_choice, rank_candidates, rerank
from placement.schedulingspec import SchedulingSpec

SCHEDULED = "Scheduled"
# Set (to the time asked) by ``POST …/placements/{name}:reschedule``: whichever process leads chooses again from
# scratch once per value, and records the value it handled in ``status.scheduling.rescheduled``.
RESCHEDULE_ANNOTATION = "spacehub.io/reschedule-requested"


def stored_choice(placement: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The choice kept in a placement's status, or None when none was stored yet."""
    clusters = ((placement.get("status") or {}).get("scheduling") or {}).get("clusters")
    if not isinstance(clusters, list):
        return None
    return tuple(sorted(str(c) for c in clusters))


@dataclass
class _KeptRanking:
    """One group's ranking (placements with the same Locations and rules) kept between decisions: what it was
    made from, so that the next decision ranks again only the candidates that changed."""

    ranking: Ranking
    candidates: dict[str, Candidate]  # the ranking's candidates, as read
    lost_at: dict[str, dt.datetime]  # silent candidates: when each will be lost (past failover.after)
    requested: Mapping[str, tuple[float, float]]  # what divided replicas requested when it was read
    changed: set[str]  # SyncTargets changed since (``target_changed``)


class Choices:
    def __init__(self, engine: PlacementEngine, inventory: Inventory,
                 failover_after: Callable[[PKey], float | None],
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.engine = engine
        self.inventory = inventory
        self._failover_after = failover_after  # a placement's failover.after, seconds
        self.clock = clock
        self._current: dict[PKey, tuple[str, ...]] = {}  # what this process decided or adopted
        self._decisions: dict[PKey, Decision] = {}  # the last decision (for status), lease holder only
        self._due: set[PKey] = set()  # to look at again
        self._from_scratch: set[PKey] = set()  # reschedule asked
        self._recheck: dict[PKey, dt.datetime] = {}  # a toleration runs out then
        self._seen: dict[Taint, dt.datetime] = {}  # taints without timeAdded: when first seen here
        self._handled: dict[PKey, str] = {}  # the reschedule request (annotation value) last taken
        # Each SyncTarget as the scheduler sees it, and since when it is not Ready: read once per change of it.
        self._seen_targets: dict[str, tuple[Candidate, dt.datetime | None]] = {}
        # Per cluster, the CPU (cores) and memory (bytes) divided replicas already request (set by the hub glue).
        self.requested: Callable[[], Mapping[str, tuple[float, float]]] = dict
        # Each group's ranking between decisions (a cluster leaving ranks one cluster again, not thousands), and
        # the group each placement ranked in last (a group no placement is in any more is dropped).
        self._rankings: dict[Any, _KeptRanking] = {}
        self._group_of: dict[PKey, Any] = {}
        self._regrouped = False

    # --- inputs -------------------------------------------------------------------------------

    def observed(self, key: PKey, placement: Mapping[str, Any], *, leading: bool, spec_changed: bool = False) -> None:
        """A placement was written (spec or status): adopt its stored choice unless this process decides it;
        ``spec_changed``: look at its choice again (a field the engine does not hold, ``failover.after``)."""
        if self.engine.scheduling(*key) is None:
            return
        if spec_changed:
            self._due.add(key)
        asked = ((placement.get("metadata") or {}).get("annotations") or {}).get(RESCHEDULE_ANNOTATION)
        handled = ((placement.get("status") or {}).get("scheduling") or {}).get("rescheduled")
        if isinstance(asked, str) and asked != handled and asked != self._handled.get(key):
            self._handled[key] = asked
            self.reschedule(key)
        elif isinstance(handled, str):
            self._handled.setdefault(key, handled)
        stored = stored_choice(placement)
        if stored is None:
            return
        if leading and key in self._current:
            return  # the lease holder's own decision is newer than what it reads back
        if self._current.get(key) != stored:
            self._current[key] = stored
            self.engine.set_chosen(*key, frozenset(stored))

    def forget(self, key: PKey) -> None:
        for table in (self._current, self._decisions, self._recheck, self._handled):
            table.pop(key, None)  # type: ignore[attr-defined]
        self._regrouped |= self._group_of.pop(key, None) is not None
        self._due.discard(key)
        self._from_scratch.discard(key)

    def target_changed(self, name: str, target: Mapping[str, Any] | None) -> None:
        """A SyncTarget's spec, capacity or health changed: the placements it is a candidate of look again (a
        cheap look unless it made a choice ineligible)."""
        now = self.clock()
        for taint in taints_of(target) if target is not None else ():
            if taint.time_added is None:
                self._seen.setdefault(taint, now)
        self._seen_targets.pop(name, None)
        for kept in self._rankings.values():
            kept.changed.add(name)
        self._due |= self.engine.candidate_placements(name)

    def reschedule(self, key: PKey) -> None:
        """Choose again from scratch at the next decision (``spacehub placement reschedule``)."""
        self._from_scratch.add(key)
        self._due.add(key)

    # --- deciding (the lease holder) -------------------------------------------------------------

    def decide(self) -> tuple[set[PKey], dt.datetime | None]:
        """Make the due choices; returns the placements whose choice or scheduling status changed, and the
        earliest time a choice must be looked at again (a toleration running out)."""
        now = self.clock()
        self._due |= self.engine.drain_candidates_changed()
        self._due |= {key for key, at in self._recheck.items() if at <= now}
        due, self._due = self._due, set()
        changed: set[PKey] = set()
        rankings: dict[Any, tuple[Ranking, dt.datetime | None]] = {}
        requested = self.requested()
        moves: dict[PKey, frozenset[str] | None] = {}  # handed to the engine at once
        for key in sorted(due):
            spec = self.engine.scheduling(*key)
            if spec is None:
                if self._current.pop(key, None) is not None or self._decisions.pop(key, None) is not None:
                    changed.add(key)
                self._recheck.pop(key, None)
                self._regrouped |= self._group_of.pop(key, None) is not None
                continue
            previous = None if key in self._from_scratch else self._current.get(key)
            self._from_scratch.discard(key)
            if key in self._decisions and previous is not None and spec.number is not None:
                kept, lost_at = self._kept(key, previous, now, requested)
                if not needs_choice(spec, kept, previous, now, self._seen):
                    # The cheap look (only the kept clusters are read, not every candidate); looked at again
                    # when one of them is lost or its toleration of a NoExecute taint runs out.
                    times = [lost_at, *(evicting(c.taints, spec.tolerations, now, self._seen)[1]
                                        for c in kept.values())]
                    self._set_recheck(key, min((t for t in times if t is not None), default=None))
                    continue
            # Placements with the same Locations and rules share one ranking of their (maybe thousands of)
            # candidates, kept between decisions.
            shared = (self.engine.placement_locations(*key), spec.prioritizers, spec.tolerations, spec.spreads,
                      self._failover_after(key))
            if self._group_of.get(key) != shared:
                self._regrouped |= key in self._group_of
                self._group_of[key] = shared
            if shared not in rankings:
                rankings[shared] = self._rank(key, shared, spec, now, requested)
            ranking, lost_at = rankings[shared]
            decision = choose(spec, ranking.candidates, previous, now, self._seen, explain=False, ranking=ranking)
            self._set_recheck(key, min((t for t in (decision.recheck_at, lost_at) if t is not None), default=None))
            old = self._decisions.get(key)
            self._decisions[key] = decision
            if old is None or old.chosen != decision.chosen or old.unsatisfied != decision.unsatisfied or \
                    old.missing != decision.missing:
                changed.add(key)
            if self._current.get(key) != decision.chosen or self.engine.chosen(*key) != frozenset(decision.chosen):
                self._current[key] = decision.chosen
                moves[key] = frozenset(decision.chosen)
        # One engine update for the decision: a cluster replacing one that left moves into its new cover once.
        self.engine.set_chosen_many(moves)
        if self._regrouped:
            self._regrouped = False
            groups = set(self._group_of.values())
            self._rankings = {shared: kept for shared, kept in self._rankings.items() if shared in groups}
        return changed, min(self._recheck.values(), default=None)

    def _rank(self, key: PKey, shared: Any, spec: SchedulingSpec, now: dt.datetime,
              requested: Mapping[str, tuple[float, float]]) -> tuple[Ranking, dt.datetime | None]:
        """The group's ranking now and the earliest time a silent candidate will be lost: the kept ranking with
        the candidates that changed read and ranked again (added, removed, written, given other divided replicas,
        lost or out of toleration since), else a new one."""
        names = self.engine.candidates(*key)
        kept = self._rankings.get(shared)
        if kept is None:
            candidates, lost_at = self._read(key, names, now, requested)
            ranking = rank_candidates(spec, candidates, now, self._seen, explain=False)
            kept = self._rankings[shared] = _KeptRanking(ranking, candidates, lost_at, requested, set())
        else:
            before = kept.requested
            dirty = kept.changed | {n for n in before.keys() | requested.keys() if before.get(n) != requested.get(n)}
            dirty |= {n for n, at in kept.lost_at.items() if at <= now}
            dirty |= {n for n, at in kept.ranking.until.items() if at <= now}
            dirty = (dirty & (names | kept.candidates.keys())) | (names ^ kept.candidates.keys())
            if dirty:
                fresh, fresh_lost = self._read(key, dirty & names, now, requested)
                for name in dirty:
                    kept.candidates.pop(name, None)
                    kept.lost_at.pop(name, None)
                kept.candidates.update(fresh)
                kept.lost_at.update(fresh_lost)
                kept.ranking = rerank(kept.ranking, spec, kept.candidates, dirty, now, self._seen)
            kept.changed, kept.requested = set(), requested
        return kept.ranking, min(kept.lost_at.values(), default=None)

    def _set_recheck(self, key: PKey, at: dt.datetime | None) -> None:
        if at is None:
            self._recheck.pop(key, None)
        else:
            self._recheck[key] = at

    def _kept(self, key: PKey, previous: tuple[str, ...], now: dt.datetime,
              requested: Mapping[str, tuple[float, float]]) -> tuple[dict[str, Candidate], dt.datetime | None]:
        """The previous choice's clusters that are still candidates, as the scheduler sees them, and the earliest
        time a silent one of them will be lost."""
        kept, lost_at = self._read(key, [n for n in previous if self.engine.is_candidate(*key, n)], now, requested)
        return kept, min(lost_at.values(), default=None)

    def candidates(self, key: PKey) -> dict[str, Candidate]:
        """The placement's candidates as the scheduler sees them, read from the inventory."""
        return self._read(key, self.engine.candidates(*key), self.clock(), self.requested())[0]

    def _read(self, key: PKey, names: Iterable[str], now: dt.datetime, requested: Mapping[str, tuple[float, float]]
              ) -> tuple[dict[str, Candidate], dict[str, dt.datetime]]:
        """These candidates as the scheduler sees them, and when each silent one will be lost (past
        failover.after)."""
        after = self._failover_after(key)
        out = {}
        lost_at: dict[str, dt.datetime] = {}
        for name in names:
            seen = self._seen_targets.get(name)
            if seen is None:
                target = self.inventory.sync_target(name)
                if target is None:
                    continue
                seen = self._seen_targets[name] = (candidate_of(target), not_ready_since(target))
            candidate, since = seen
            cpu, memory = requested.get(name, (0.0, 0.0))
            if cpu or memory:
                candidate = dataclasses.replace(candidate, cpu=max(candidate.cpu - cpu, 0.0),
                                                memory=max(candidate.memory - memory, 0.0))
            if after is not None and since is not None:
                at = since + dt.timedelta(seconds=after)
                if at <= now:
                    candidate = dataclasses.replace(candidate, lost=True)
                else:
                    lost_at[name] = at
            out[name] = candidate
        return out, lost_at

    def explain(self, key: PKey, spec: SchedulingSpec) -> Decision:
        """What the scheduler would say now about ``spec`` for the placement (its kept choice, if any)."""
        now = self.clock()
        candidates = self.candidates(key)
        kept = choose(spec, candidates, self._current.get(key), now, self._seen)
        fresh = choose(spec, candidates, None, now, self._seen)
        # The same clusters from scratch: its reasons say why each other one lost (a kept choice only says Steady).
        return fresh if fresh.chosen == kept.chosen else kept

    # --- outputs ------------------------------------------------------------------------------

    def status(self, space: str, name: str) -> dict[str, Any]:
        """``status.scheduling`` of a scheduled placement: its choice as decided here, else as adopted (a status
        written before this process decided keeps the stored choice); empty when not scheduled or not known."""
        key = (space, name)
        spec = self.engine.scheduling(space, name)
        decision = self._decisions.get(key)
        if spec is None or (decision is None and key not in self._current):
            return {}
        handled = self._handled.get(key)
        chosen = decision.chosen if decision is not None else self._current[key]
        wanted = decision.wanted if decision is not None else spec.number if spec.number is not None else len(chosen)
        return {"scheduling": {"clusters": list(chosen), "wanted": wanted,
                               **({"rescheduled": handled} if handled else {})}}

    def conditions(self, space: str, name: str) -> list[dict[str, Any]]:
        """The ``Scheduled`` condition: True, or False with NotEnoughClusters / SpreadConstraint and how many are
        missing."""
        decision = self._decisions.get((space, name))
        if decision is None or self.engine.scheduling(space, name) is None:
            return []
        if not decision.missing:
            return [{"type": SCHEDULED, "status": "True", "reason": "Scheduled",
                     "message": f"{len(decision.chosen)} clusters chosen"}]
        why = "no more eligible clusters" if decision.unsatisfied == "NotEnoughClusters" else \
            "the spread constraints allow no more"
        return [{"type": SCHEDULED, "status": "False", "reason": decision.unsatisfied,
                 "message": f"{len(decision.chosen)} of {decision.wanted} clusters chosen, {decision.missing} "
                            f"missing: {why}"}]


def candidate_of(target: Mapping[str, Any]) -> Candidate:
    """A SyncTarget as the scheduler sees it: labels, the allocatable CPU (cores) and memory (bytes) its syncer
    reports, taints and cordon (what divided replicas request there, and whether it is lost, are the caller's)."""
    allocatable = (target.get("status") or {}).get("allocatable") or {}
    cpu, memory = parse_quantity(allocatable.get("cpu")), parse_quantity(allocatable.get("memory"))
    return Candidate(str((target.get("metadata") or {}).get("name") or ""),
                     dict((target.get("metadata") or {}).get("labels") or {}),
                     float(cpu or 0), float(memory or 0), taints_of(target), cordoned(target))
