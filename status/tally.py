"""One object's summary kept as it goes: each cluster's entry as shown, and the counts kept by deltas.

A report from one cluster changes one row, and the counts follow by taking the row's old share out and its new
one in, so that taking a report costs the same whether the object is on ten clusters or ten thousand. The
tally also says whether anything a user sees changed since the PlacementStatus was last written: a cluster's
phase, message, revision, replicas, drift or what its workload owns — not the time of a report that says what
the last one said (``reportedAt`` alone), so that such a report writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from status.readiness import ClusterState, worst
from status.reports import Report

# The counts of ``summary``, in the order each row's share (``_share``) lists them.
SUMMARY_KEYS = ("targeted", "applied", "ready", "failed", "stale", "pending", "current", "leaving")
REPORTED_AT = "reportedAt"


@dataclass(frozen=True)
class Row:
    """One cluster's part of the summary: its state and its ``clusters[]`` entry."""

    state: ClusterState
    leaving: bool  # a copy kept by a move: counted among the ready only (the fleet still runs it)
    entry: dict[str, Any]

    def shows_as(self, other: Row) -> bool:
        """Whether a user sees the same in both (everything but the time of the report)."""
        if self.state != other.state or self.leaving != other.leaving:
            return False
        mine, theirs = self.entry, other.entry
        if mine == theirs:
            return True  # the common case, compared at C speed: nothing new, or no report at all
        return len(mine) == len(theirs) and all(theirs.get(k) == v for k, v in mine.items() if k != REPORTED_AT)


def cluster_row(target: str, state: ClusterState, report: Report | None, *, leaving: bool, share: int | None,
                number: int | None) -> Row:
    """``share``: the replicas this cluster is asked for when they are divided (None: not divided);
    ``number``: the object's revision number it is given (None: not recorded)."""
    entry: dict[str, Any] = {"name": target, "phase": "Leaving" if leaving else state.phase, "current": state.current}
    if leaving:
        entry["ready"] = state.phase == "Ready"
    if share is not None and not leaving:
        entry["replicas"] = share
    if number is not None:
        entry["revision"] = number
    if state.message:
        entry["message"] = state.message
    if report is not None:
        entry[REPORTED_AT] = report.reported_at
        if report.drift_corrections:
            entry["driftCorrections"] = report.drift_corrections
        if report.associated:
            entry["associated"] = report.associated
        if report.drift:
            entry["drift"] = list(report.drift)
    return Row(state, leaving, entry)


def _share(row: Row) -> tuple[int, ...]:
    """What one row adds to each count of ``SUMMARY_KEYS``."""
    placed, phase = not row.leaving, row.state.phase
    return (placed, placed and phase in ("Applied", "Ready"), phase == "Ready", placed and phase == "Failed",
            placed and phase == "Stale", placed and phase == "Pending", placed and row.state.current, row.leaving)


class Tally:
    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self._counts = [0] * len(SUMMARY_KEYS)
        # Something a user sees is not written yet. A new tally is not known to match what is stored.
        self.unwritten = True
        self.written_object: dict[str, Any] | None = None  # the ``object`` part last written

    def put(self, target: str, row: Row) -> None:
        """Take ``target``'s row as computed now; a row that shows as the one held is not taken (its entry keeps
        the ``reportedAt`` last written, so that what is stored and what is held stay the same)."""
        old = self.rows.get(target)
        if old is not None and old.shows_as(row):
            return
        if old is not None:
            self._add(old, -1)
        self._add(row, 1)
        self.rows[target] = row
        self.unwritten = True

    def holds(self, targets: list[str], leaving: list[str]) -> bool:
        """Whether the rows are these clusters' and these leaving copies' (a look at each, no state computed)."""
        rows = self.rows
        return len(rows) == len(targets) + len(leaving) and \
            all((row := rows.get(t)) is not None and not row.leaving for t in targets) and \
            all((row := rows.get(t)) is not None and row.leaving for t in leaving)

    def remove(self, target: str) -> None:
        old = self.rows.pop(target, None)
        if old is not None:
            self._add(old, -1)
            self.unwritten = True

    def _add(self, row: Row, sign: int) -> None:
        for index, part in enumerate(_share(row)):
            self._counts[index] += sign * part

    def summary(self) -> dict[str, int]:
        return dict(zip(SUMMARY_KEYS, self._counts, strict=True))

    @property
    def ready(self) -> int:
        return self._counts[SUMMARY_KEYS.index("ready")]

    def body(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The PlacementStatus's content (``object``, ``summary``, ``clusters``, ``worstCondition``)."""
        placed = {target: row.state for target, row in self.rows.items() if not row.leaving}
        body: dict[str, Any] = {"object": obj, "summary": self.summary(),
                                "clusters": [self.rows[target].entry for target in sorted(self.rows)],
                                "worstCondition": {}}
        bad = worst(placed)
        if bad is not None:
            cluster, state = bad
            condition = state.condition or {}
            named = {k: str(condition[k]) for k in ("type", "status", "reason") if condition.get(k)}
            body["worstCondition"] = {"cluster": cluster, "phase": state.phase, "message": state.message, **named}
        return body
