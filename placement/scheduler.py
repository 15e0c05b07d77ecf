"""Choosing clusters for a scheduled EdgePlacement: N of the eligible ones, spread, scored, kept while eligible.

Pure: given a :class:`~placement.schedulingspec.SchedulingSpec`, the candidates (the SyncTargets the
placement's Locations select, with their labels, allocatable capacity, taints, cordon and whether they
are lost past ``failover.after``), the previous choice and the time, :func:`choose` returns the new
choice and, for every candidate, its score per prioritizer and why it was not chosen. Never does I/O,
never reads a clock and never keeps state: the caller (:mod:`placement.choices`) stores the choice.
:func:`rank_candidates` is the part that does not depend on a previous choice (eligibility and scores),
so placements with the same candidates and rules share it; :func:`rerank` updates such a ranking, which
the caller keeps between decisions, for the candidates that changed.

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

import bisect
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


@dataclass
class Ranking:
    """The candidates judged and ranked for one scheduling spec: what every placement with the same candidates
    and the same rules shares (a decision over many placements ranks thousands of clusters once), and what
    :func:`rerank` updates for the candidates that changed (the caller keeps it between decisions)."""

    candidates: Mapping[str, Candidate]
    excluded: dict[str, tuple[str, str]]  # not eligible: reason, message
    usable: dict[str, Candidate]  # may stay chosen
    new_ok: set[str]  # may be newly chosen
    scores: dict[str, float]
    parts: dict[str, dict[str, float]]  # each prioritizer's score (explain only)
    rank: list[str]  # the new_ok clusters, best first, ties to the lower name
    domain_counts: list[dict[str, int]]  # per spread constraint, how many new_ok clusters each domain has
    until: dict[str, dt.datetime]  # per candidate, when its tolerated NoExecute taint runs out
    scales: tuple[float, float]  # the Capacity score of one core and of one byte

    @property
    def domains(self) -> list[set[str]]:
        """Per spread constraint, the domains of the new_ok clusters."""
        return [set(counts) for counts in self.domain_counts]

    @property
    def recheck(self) -> dt.datetime | None:
        return min(self.until.values(), default=None)


def rank_candidates(spec: SchedulingSpec, candidates: Mapping[str, Candidate], now: dt.datetime,
                    seen: Mapping[Taint, dt.datetime] | None = None, *, explain: bool = True) -> Ranking:
    """Eligibility (rule 1) and scores of every candidate, independent of any previous choice."""
    r = Ranking(candidates, {}, {}, set(), {}, {}, [], [{} for _ in spec.spreads], {}, (0.0, 0.0))
    hard_keys = [s.topology_key for s in spec.spreads if s.hard]
    for name, c in candidates.items():
        _judge(r, spec, hard_keys, name, c, now, seen)
    r.scales = _scales(spec.prioritizers, r.usable)
    r.scores, r.parts = _scores(spec.prioritizers, r.usable, explain, r.scales)
    r.rank = sorted(r.new_ok, key=lambda n: (-r.scores[n], n))
    return r


# Past this many changed candidates (or a sixteenth of them), ranking every candidate again is as cheap.
RERANK_LIMIT = 16


def rerank(r: Ranking, spec: SchedulingSpec, candidates: Mapping[str, Candidate], changed: set[str],
           now: dt.datetime, seen: Mapping[Taint, dt.datetime] | None = None) -> Ranking:
    """``rank_candidates(spec, candidates, now, seen, explain=False)``, from ``r``: the same spec's ranking
    (without explain) of the candidates as they were, and ``changed``: the names of those added, removed or
    different since (or whose taint's toleration ran out). Only those are judged and placed in the rank again
    (``r`` is updated in place), unless a Capacity scale moved (the most allocatable CPU or memory changed
    hands: every score changes) or many changed; then every candidate is ranked again."""
    if len(changed) > max(RERANK_LIMIT, len(candidates) // 16):
        return rank_candidates(spec, candidates, now, seen, explain=False)
    for name in changed:
        _drop(r, spec, name)
    r.candidates = candidates
    hard_keys = [s.topology_key for s in spec.spreads if s.hard]
    added = [name for name in changed if name in candidates]
    for name in added:
        _judge(r, spec, hard_keys, name, candidates[name], now, seen)
    scales = _scales(spec.prioritizers, r.usable)
    if scales != r.scales:
        return rank_candidates(spec, candidates, now, seen, explain=False)
    scores, _ = _scores(spec.prioritizers, {n: r.usable[n] for n in added if n in r.usable}, False, scales)
    r.scores.update(scores)
    for name in added:
        if name in r.new_ok:
            bisect.insort(r.rank, name, key=lambda n: (-r.scores[n], n))
    return r


def _judge(r: Ranking, spec: SchedulingSpec, hard_keys: list[str], name: str, c: Candidate, now: dt.datetime,
           seen: Mapping[Taint, dt.datetime] | None) -> None:
    """Rule 1 for one candidate, recorded in ``r`` (its score is not)."""
    if c.taints:
        evict, until = evicting(c.taints, spec.tolerations, now, seen)
        if until is not None:
            r.until[name] = until
        if evict is not None:
            r.excluded[name] = (TAINTED, f"taint {describe(evict)} is not tolerated")
            return
    if c.lost:
        r.excluded[name] = (LOST, "its syncer is silent past failover.after")
        return
    r.usable[name] = c
    blocking = blocks_new_choice(c.taints, spec.tolerations) if c.taints else None
    if c.cordoned:
        r.excluded[name] = (CORDONED, "the cluster is cordoned")
    elif blocking is not None:
        r.excluded[name] = (TAINTED, f"taint {describe(blocking)} is not tolerated")
    elif any(key not in c.labels for key in hard_keys):
        r.excluded[name] = (SPREAD, "it has no label " + ", ".join(hard_keys))
    else:
        r.new_ok.add(name)
        for s, counts in zip(spec.spreads, r.domain_counts, strict=True):
            if s.topology_key in c.labels:
                domain = c.labels[s.topology_key]
                counts[domain] = counts.get(domain, 0) + 1


def _drop(r: Ranking, spec: SchedulingSpec, name: str) -> None:
    """Undo :func:`_judge` and the scoring of one candidate."""
    if name in r.new_ok:
        r.new_ok.discard(name)
        key = (-r.scores[name], name)
        del r.rank[bisect.bisect_left(r.rank, key, key=lambda n: (-r.scores[n], n))]
        labels = r.usable[name].labels  # as judged (``candidates`` may have changed in place)
        for s, counts in zip(spec.spreads, r.domain_counts, strict=True):
            if s.topology_key in labels:
                domain = labels[s.topology_key]
                counts[domain] -= 1
                if not counts[domain]:
                    del counts[domain]
    r.excluded.pop(name, None)
    r.usable.pop(name, None)
    r.scores.pop(name, None)
    r.until.pop(name, None)


def choose(spec: SchedulingSpec, candidates: Mapping[str, Candidate], previous: Collection[str] | None,
           now: dt.datetime, seen: Mapping[Taint, dt.datetime] | None = None, *, explain: bool = True,
           ranking: Ranking | None = None) -> Decision:
    """The clusters to keep and add (``previous`` None or empty: a choice from scratch); ``explain``: with every
    candidate's row (the explain view), else none; ``ranking``: :func:`rank_candidates` of the same spec and
    candidates, when the caller shares one between placements."""
    r = ranking if ranking is not None else rank_candidates(spec, candidates, now, seen, explain=explain)
    scores = r.scores
    before = [n for n in previous or () if n in r.usable]
    wanted = len(r.new_ok | set(before)) if spec.number is None else spec.number
    kept = sorted(before, key=lambda n: (-scores[n], n))[:wanted]
    labels = {n: candidates[n].labels for n in kept}
    domains = [d | {labels[n][s.topology_key] for n in kept if s.topology_key in labels[n]}
               for s, d in zip(spec.spreads, r.domains, strict=True)]
    chosen, spread_refused = _fill(spec.spreads, kept, r.rank, wanted, candidates, domains)
    unsatisfied = ""
    if len(chosen) < wanted:
        unsatisfied = SPREAD if spread_refused else "NotEnoughClusters"
    rows = _rows(r, chosen, spread_refused, min((scores[n] for n in kept), default=None)) if explain else []
    return Decision(tuple(sorted(chosen)), rows, wanted, unsatisfied, r.recheck)


def _rows(r: Ranking, chosen: list[str], spread_refused: set[str], lowest_kept: float | None) -> list[Row]:
    """Every candidate's row: chosen first, then the eligible by score, then the others by name."""
    chosen_set = set(chosen)
    rows = []
    for name in r.candidates:
        row = Row(name, r.parts.get(name, {}), r.scores.get(name, 0.0))
        if name in chosen_set:
            row.chosen = True
        elif name in r.excluded:
            row.reason, row.message = r.excluded[name]
        elif name in spread_refused:
            row.reason, row.message = SPREAD, "choosing it would break a spread constraint"
        elif lowest_kept is not None and row.total > lowest_kept:
            row.reason, row.message = STEADY, "scores above a kept choice; kept choices stay until a reschedule"
        else:
            row.reason, row.message = OUTSCORED, "the clusters chosen score higher"
        rows.append(row)
    return sorted(rows, key=lambda row: (not row.chosen, row.name not in r.usable, -row.total, row.name))


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
          candidates: Mapping[str, Candidate], domains: list[set[str]]) -> tuple[list[str], set[str]]:
    """Kept choices, then the best-ranked clusters (``rank``, kept ones skipped) that keep the hard spread
    constraints, preferring those that keep the soft ones; returns the choice and the clusters a constraint
    refused along the way. Each step walks the rank from the top only until it finds one."""
    chosen = list(kept)
    taken = set(kept)
    refused: set[str] = set()
    labels = _Labels(candidates)
    pairs = list(zip(spreads, domains, strict=True))
    while len(chosen) < wanted:
        pick = None
        fallback = None
        for name in rank:
            if name in taken:
                continue
            if not all(_fits(s, d, chosen, name, labels) for s, d in pairs if s.hard):
                refused.add(name)
                continue
            if all(_fits(s, d, chosen, name, labels) for s, d in pairs if not s.hard):
                pick = name
                break
            if fallback is None:
                fallback = name
        pick = pick or fallback
        if pick is None:
            break
        chosen.append(pick)
        taken.add(pick)
        refused.discard(pick)
    return chosen, refused


class _Labels:
    """``labels[name]``: a candidate's labels, looked up only for the clusters a fill looks at."""

    def __init__(self, candidates: Mapping[str, Candidate]) -> None:
        self._candidates = candidates

    def __getitem__(self, name: str) -> Mapping[str, str]:
        return self._candidates[name].labels


def _fits(spread: Spread, domains: set[str], chosen: list[str], name: str, labels: _Labels) -> bool:
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


def _scales(prioritizers: tuple[Prioritizer, ...], clusters: Mapping[str, Candidate]) -> tuple[float, float]:
    """The Capacity score of one core and of one byte: the cluster with the most scores 50 for each (0 without
    a Capacity prioritizer)."""
    if not any(p.type == "Capacity" for p in prioritizers):
        return 0.0, 0.0
    max_cpu = max((c.cpu for c in clusters.values()), default=0.0)
    max_memory = max((c.memory for c in clusters.values()), default=0.0)
    return (MAX_SCORE / 2 / max_cpu if max_cpu > 0 else 0.0, MAX_SCORE / 2 / max_memory if max_memory > 0 else 0.0)


def _scores(prioritizers: tuple[Prioritizer, ...], clusters: Mapping[str, Candidate], explain: bool,
            scales: tuple[float, float]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Per cluster the weighted sum of the prioritizers' scores (0-100 each), and with ``explain`` each score;
    ``scales``: :func:`_scales` of every eligible cluster (``clusters`` may be some of them)."""
    cpu_scale, memory_scale = scales
    totals = dict.fromkeys(clusters, 0.0)
    parts: dict[str, dict[str, float]] = {name: {} for name in clusters} if explain else {}
    for p in prioritizers:
        if p.type == "Capacity":  # the common case at scale, without a call per cluster
            scored = ((name, round(c.cpu * cpu_scale + c.memory * memory_scale, 2)) for name, c in clusters.items())
        else:
            scored = ((name, _score(p, c)) for name, c in clusters.items())
        for name, score in scored:
            totals[name] += p.weight * score
            if explain:
                parts[name][p.name] = score
    return totals, parts


def _score(p: Prioritizer, c: Candidate) -> float:
    """A Label or CEL prioritizer's score of one cluster."""
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
