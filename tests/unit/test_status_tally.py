"""status.tally: one object's summary kept by deltas equals the summary counted afresh, whatever the changes.

Property-style: seeded random sequences of reports, clusters going stale, leaving copies and clusters removed,
each checked against the counts and worst cluster as the README defines them, counted from every cluster's
state at once.
"""

from __future__ import annotations

import random

from status.readiness import SEVERITY, ClusterState
from status.reports import Report
from status.tally import Tally, cluster_row

PHASES = ("Pending", "Applied", "Ready", "Failed", "Stale")
CLUSTERS = [f"c{i}" for i in range(12)]


def counted_afresh(states: dict[str, tuple[ClusterState, bool]]) -> dict[str, int]:
    """The summary's counts from every cluster's (state, leaving) at once (README "PlacementStatus")."""
    placed = [state for state, leaving in states.values() if not leaving]
    return {"targeted": len(placed), "applied": sum(s.phase in ("Applied", "Ready") for s in placed),
            "ready": sum(state.phase == "Ready" for state, _ in states.values()),
            "failed": sum(s.phase == "Failed" for s in placed), "stale": sum(s.phase == "Stale" for s in placed),
            "pending": sum(s.phase == "Pending" for s in placed), "current": sum(s.current for s in placed),
            "leaving": sum(leaving for _, leaving in states.values())}


def worst_afresh(states: dict[str, tuple[ClusterState, bool]]) -> str | None:
    placed = sorted((SEVERITY[s.phase], name) for name, (s, leaving) in states.items() if not leaving)
    return None if not placed or placed[0][0] == SEVERITY["Ready"] else placed[0][1]


def test_counts_kept_by_deltas_equal_a_full_recount_after_random_changes() -> None:
    for seed in range(200):
        rng = random.Random(seed)
        tally = Tally()
        states: dict[str, tuple[ClusterState, bool]] = {}
        for step in range(60):
            target = rng.choice(CLUSTERS)
            if states and rng.random() < 0.15:
                tally.remove(target)
                states.pop(target, None)
            else:
                state = ClusterState(rng.choice(PHASES), rng.random() < 0.5, rng.choice(["", "replicas 1/2"]))
                leaving = rng.random() < 0.1
                report = Report({"n": step}, None, 1, f"2026-11-28T09:00:{step:02d}Z") if rng.random() < 0.7 else None
                tally.put(target, cluster_row(target, state, report, leaving=leaving, share=None, number=None))
                states[target] = (state, leaving)
            assert tally.summary() == counted_afresh(states), (seed, step)
            body = tally.body({"name": "web"})
            assert (body["worstCondition"] or {}).get("cluster") == worst_afresh(states), (seed, step)
            assert [c["name"] for c in body["clusters"]] == sorted(states)


def test_a_report_that_moves_nothing_a_user_sees_changes_nothing() -> None:
    tally = Tally()
    ready = ClusterState("Ready", True)
    first = Report({"readyReplicas": 2}, None, 1, "2026-11-28T09:00:00Z")
    tally.put("c1", cluster_row("c1", ready, first, leaving=False, share=None, number=3))
    tally.unwritten = False  # as after a write

    again = Report({"readyReplicas": 2}, None, 1, "2026-11-28T09:00:05Z")  # the same, later
    tally.put("c1", cluster_row("c1", ready, again, leaving=False, share=None, number=3))
    assert not tally.unwritten
    assert tally.rows["c1"].entry["reportedAt"] == "2026-11-28T09:00:00Z"  # what is stored stays what is held

    for changed in (cluster_row("c1", ClusterState("Applied", True, "readyReplicas 1/2"), again, leaving=False,
                                share=None, number=3),
                    cluster_row("c1", ready, again, leaving=False, share=None, number=4),  # a new revision number
                    cluster_row("c1", ready, again, leaving=False, share=2, number=3)):  # a divided share
        tally.unwritten = False
        tally.put("c1", changed)
        assert tally.unwritten, changed.entry
        assert tally.rows["c1"].entry["reportedAt"] == "2026-11-28T09:00:05Z"


def test_holds_says_whether_the_rows_are_these_clusters_and_leaving_copies() -> None:
    tally = Tally()
    for target, leaving in (("c1", False), ("c2", False), ("c3", True)):
        tally.put(target, cluster_row(target, ClusterState("Ready", True), None, leaving=leaving, share=None,
                                      number=None))
    assert tally.holds(["c1", "c2"], ["c3"])
    assert not tally.holds(["c1", "c2", "c3"], [])  # c3's move is over: it is a destination again
    assert not tally.holds(["c1"], ["c2", "c3"])  # c2 began leaving
    assert not tally.holds(["c1", "c2"], [])  # c3's leaving copy went
    assert not tally.holds(["c1", "c2", "c4"], ["c3"])  # a new cluster
