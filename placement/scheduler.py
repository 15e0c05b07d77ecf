"""Choosing clusters for a scheduled EdgePlacement: N of the eligible ones, spread, scored, kept while eligible.

Pure: given a :class:`~placement.schedulingspec.SchedulingSpec`, the candidates (the SyncTargets the
placement's Locations select, with their labels, allocatable capacity, taints, cordon and whether they
are lost past ``failover.after``), the previous choice and the time, :func:`choose` returns the new
choice and, for every candidate, its score per prioritizer and why it was not chosen. Never does I/O,
never reads a clock and never keeps state: the caller (:mod:`placement.choices`) stores the choice.

Rules, in order (README "Choosing clusters" has them beside OCM's and Karmada's):

1. *Eligible*: not hit by a ``NoExecute`` taint the placement does not tolerate (or tolerates for
   ``tolerationSeconds`` that have passed: ``Tainted``), and not lost (its syncer silent past
   ``failover.after``). A *new* choice must also not be cordoned (``Cordoned``) and tolerate every
   ``NoSchedule`` taint (``Tainted``).
2. *Kept*: a previous choice that is still eligible stays (OCM's Steady); when N shrank, the
   best-scored ones stay.
3. *Filled*: the remaining places go to the best-scored eligible clusters (ties: the lower name) that
   keep every ``DoNotSchedule`` spread constraint (``SpreadConstraint``); ``ScheduleAnyway`` ones are
   preferences. The rest are ``Outscored``, or ``Steady`` when they score above a kept choice (a
   ``reschedule`` would take them).

Spread, as kube's topologySpreadConstraints: a cluster's domain is its value of ``topologyKey``
(clusters without the label are not eligible under a ``DoNotSchedule`` constraint); the skew of a
domain is its count of chosen clusters minus the smallest count over the domains that have eligible
clusters (0 while fewer than ``minDomains`` domains have any); a new choice must leave it at most ``maxSkew``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from cel import CelEvalError
from inventory.taints import Taint, blocks_new_choice, describe, evicting
from placement.schedulingspec import Prioritizer, SchedulingSpec, Spread

NOT_SELECTED, TAINTED, CORDONED, LOST = "NotSelected", "Tainted", "Cordoned", "Lost"
SPREAD, OUTSCORED, STEADY = "SpreadConstraint", "Outscored", "Steady"
MAX_SCORE = 100.0


@dataclass(frozen=True)
class Candidate:
    """A SyncTarget the placement's Locations select, as the scheduler sees it."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    cpu: float = 0.0  # allocatable cores
    memory: float = 0.0  # allocatable bytes
    taints: tuple[Taint, ...] = ()
    cordoned: bool = False
    lost: bool = False  # its syncer silent longer than the placement's failover.after


@dataclass
class Row:
    """One candidate in the explain view: its scores and, when not chosen, why."""

    name: str
    scores: dict[str, float]
    total: float
    chosen: bool = False
    reason: str = ""  # "" when chosen
    message: str = ""


@dataclass
class Decision:
    chosen: tuple[str, ...]  # sorted
    rows: list[Row]  # every candidate, best first
    wanted: int  # N (or every eligible cluster)
    unsatisfied: str = ""  # why fewer than wanted: "NotEnoughClusters" or "SpreadConstraint"
    recheck_at: dt.datetime | None = None  # a tolerated NoExecute taint's tolerationSeconds end then

    @property
    def missing(self) -> int:
        return max(self.wanted - len(self.chosen), 0)


def choose(spec: SchedulingSpec, candidates: Mapping[str, Candidate], previous: Collection[str] | None,
           now: dt.datetime, seen: Mapping[Taint, dt.datetime] | None = None) -> Decision:
    """The clusters to keep and add (``previous`` None or empty: a choice from scratch)."""
    rows: dict[str, Row] = {}
    usable: dict[str, Candidate] = {}  # may stay chosen
    new_ok: set[str] = set()  # may be newly chosen
    recheck: dt.datetime | None = None
    for name in sorted(candidates):
        c = candidates[name]
        evict, until = evicting(c.taints, spec.tolerations, now, seen)
        if until is not None:
            recheck = until if recheck is None else min(recheck, until)
        if evict is not None:
            rows[name] = Row(name, {}, 0.0, reason=TAINTED, message=f"taint {describe(evict)} is not tolerated")
            continue
        if c.lost:
            rows[name] = Row(name, {}, 0.0, reason=LOST, message="its syncer is silent past failover.after")
            continue
        usable[name] = c
        blocking = blocks_new_choice(c.taints, spec.tolerations)
        if c.cordoned:
            rows[name] = Row(name, {}, 0.0, reason=CORDONED, message="the cluster is cordoned")
        elif blocking is not None:
            rows[name] = Row(name, {}, 0.0, reason=TAINTED, message=f"taint {describe(blocking)} is not tolerated")
        elif any(s.hard and s.topology_key not in c.labels for s in spec.spreads):
            rows[name] = Row(name, {}, 0.0, reason=SPREAD, message="it has no label "
                             + ", ".join(s.topology_key for s in spec.spreads if s.hard))
        else:
            new_ok.add(name)
    scores = _scores(spec.prioritizers, usable)
    for name, (parts, total) in scores.items():
        row = rows.setdefault(name, Row(name, parts, total))
        row.scores, row.total = parts, total
    rank = sorted(usable, key=lambda n: (-scores[n][1], n))
    wanted = len(usable.keys() & (new_ok | set(previous or ()))) if spec.number is None else spec.number
    kept = [n for n in rank if n in (previous or ())][:wanted]
    chosen, spread_refused = _fill(spec.spreads, kept, [n for n in rank if n in new_ok and n not in kept],
                                   wanted, {n: candidates[n].labels for n in new_ok | set(kept)})
    lowest_kept = min((scores[n][1] for n in kept), default=None)
    for name in rank:
        row = rows[name]
        if name in chosen:
            row.chosen, row.reason, row.message = True, "", ""
        elif row.reason:
            continue
        elif name in spread_refused:
            row.reason, row.message = SPREAD, "choosing it would break a spread constraint"
        elif lowest_kept is not None and row.total > lowest_kept:
            row.reason, row.message = STEADY, "scores above a kept choice; kept choices stay until a reschedule"
        else:
            row.reason, row.message = OUTSCORED, "the clusters chosen score higher"
    ordered = sorted(rows.values(), key=lambda r: (not r.chosen, r.name not in usable, -r.total, r.name))
    unsatisfied = ""
    if len(chosen) < wanted:
        unsatisfied = SPREAD if spread_refused else "NotEnoughClusters"
    return Decision(tuple(sorted(chosen)), ordered, wanted, unsatisfied, recheck)


def needs_choice(spec: SchedulingSpec, candidates: Mapping[str, Candidate], previous: Collection[str] | None,
                 now: dt.datetime, seen: Mapping[Taint, dt.datetime] | None = None) -> bool:
    """Whether :func:`choose` could answer other than ``previous``: cheap (no scores), for the incremental path."""
    if previous is None or (spec.number is not None and len(previous) != spec.number):
        return True
    for name in previous:
        c = candidates.get(name)
        if c is None or c.lost or evicting(c.taints, spec.tolerations, now, seen)[0] is not None:
            return True
    if spec.number is None:  # every eligible cluster: any new one joins
        return len(candidates) != len(previous)
    return False


def _fill(spreads: tuple[Spread, ...], kept: list[str], rank: list[str], wanted: int,
          labels: Mapping[str, Mapping[str, str]]) -> tuple[list[str], set[str]]:
    """Kept choices, then the best-ranked clusters that keep the hard spread constraints, preferring those that
    keep the soft ones; returns the choice and the clusters a constraint refused along the way."""
    chosen = list(kept)
    refused: set[str] = set()
    remaining = list(rank)
    # The domains that have eligible clusters, per constraint.
    domains = [{labels[n][s.topology_key] for n in [*kept, *rank] if s.topology_key in labels[n]} for s in spreads]
    while len(chosen) < wanted and remaining:
        pick = None
        fallback = None
        for name in remaining:
            ok_hard = all(_fits(s, d, chosen, name, labels) for s, d in zip(spreads, domains, strict=True) if s.hard)
            if not ok_hard:
                refused.add(name)
                continue
            if all(_fits(s, d, chosen, name, labels) for s, d in zip(spreads, domains, strict=True) if not s.hard):
                pick = name
                break
            if fallback is None:
                fallback = name
        pick = pick or fallback
        if pick is None:
            break
        chosen.append(pick)
        remaining.remove(pick)
        refused.discard(pick)
    return chosen, refused


def _fits(spread: Spread, domains: set[str], chosen: list[str], name: str,
          labels: Mapping[str, Mapping[str, str]]) -> bool:
    key = spread.topology_key
    domain = labels[name].get(key)
    if domain is None:
        return not spread.hard
    counts = dict.fromkeys(domains, 0)
    for n in chosen:
        if key in labels[n]:
            counts[labels[n][key]] = counts.get(labels[n][key], 0) + 1
    counts[domain] = counts.get(domain, 0) + 1
    floor = 0 if len(counts) < spread.min_domains else min(counts.values())
    return counts[domain] - floor <= spread.max_skew


def _scores(prioritizers: tuple[Prioritizer, ...], clusters: Mapping[str, Candidate]
            ) -> dict[str, tuple[dict[str, float], float]]:
    """Per cluster: each prioritizer's score (0-100) and the weighted sum."""
    max_cpu = max((c.cpu for c in clusters.values()), default=0.0)
    max_memory = max((c.memory for c in clusters.values()), default=0.0)
    out: dict[str, tuple[dict[str, float], float]] = {}
    for name, c in clusters.items():
        parts: dict[str, float] = {}
        total = 0.0
        for p in prioritizers:
            score = _score(p, c, max_cpu, max_memory)
            parts[p.name] = score
            total += p.weight * score
        out[name] = (parts, total)
    return out


def _score(p: Prioritizer, c: Candidate, max_cpu: float, max_memory: float) -> float:
    if p.type == "Capacity":
        cpu = c.cpu / max_cpu if max_cpu > 0 else 0.0
        memory = c.memory / max_memory if max_memory > 0 else 0.0
        return round(MAX_SCORE * (cpu + memory) / 2, 2)
    if p.type == "Label":
        return dict(p.values).get(c.labels.get(p.label_key, ""), 0.0) if p.label_key in c.labels else 0.0
    assert p.expression is not None
    try:
        value: Any = p.expression.evaluate({"cluster": {"name": c.name, "labels": dict(c.labels),
                                                        "capacity": {"cpu": c.cpu, "memory": c.memory}}})
    except CelEvalError:
        return 0.0  # a cluster the expression cannot score (a missing label) scores nothing
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(min(max(value, 0.0), MAX_SCORE))
