"""Where a scheduled placement's choice is kept and who makes it: the lease holder decides, the others (and a
restarted hub) adopt what the placement's status holds; reschedule requests are taken once; choices are looked at
again when a toleration or a failover.after runs out (an injected clock)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from placement.choices import RESCHEDULE_ANNOTATION, Choices
from placement.engine import PlacementEngine
from tests.placement_world import location, placement, sync_target

SPACE = "s"
KEY = (SPACE, "p")
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Fleet:
    """The inventory as Choices reads it: SyncTarget objects by name."""

    def __init__(self) -> None:
        self.targets: dict[str, dict[str, Any]] = {}

    def sync_target(self, name: str) -> dict[str, Any] | None:
        return self.targets.get(name)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


def hub(fleet: Fleet, clock: Clock, failover_after: float | None = None) -> tuple[PlacementEngine, Choices]:
    engine = PlacementEngine()
    engine.upsert_location(location("all", {"env": "edge"}, {"matchLabels": {"env": "edge"}}))
    for target in fleet.targets.values():
        engine.upsert_sync_target(target)
    return engine, Choices(engine, fleet, lambda _key: failover_after, clock)  # type: ignore[arg-type]


def a_fleet() -> Fleet:
    fleet = Fleet()
    for name, cpu in [("a", "4"), ("b", "8"), ("c", "2")]:
        target = sync_target(name, {"env": "edge"})
        target["status"] = {"allocatable": {"cpu": cpu, "memory": "1Gi"}}
        fleet.targets[name] = target
    return fleet


def scheduled(**extra: Any) -> dict[str, Any]:
    p = placement("p", [{"matchLabels": {"env": "edge"}}], [{"resources": ["configmaps"]}])
    p["spec"].update(numberOfClusters=1, prioritizers=[{"type": "Capacity"}], **extra)
    return p


def reached(engine: PlacementEngine) -> set[str]:
    return {d.sync_target_name for d in engine.destinations(*KEY)}


def with_status(obj: dict[str, Any], choices: Choices) -> dict[str, Any]:
    """The placement as the lease holder writes it back (its status carries the choice)."""
    return {**obj, "status": choices.status(*KEY)}


def test_a_scheduled_placement_reaches_nothing_until_chosen_then_only_its_choice() -> None:
    fleet, clock = a_fleet(), Clock()
    engine, choices = hub(fleet, clock)
    engine.upsert_placement(SPACE, scheduled())
    assert reached(engine) == set()
    changed, _ = choices.decide()
    assert changed == {KEY} and reached(engine) == {"b"}
    assert choices.status(*KEY) == {"scheduling": {"clusters": ["b"], "wanted": 1}}
    assert choices.conditions(*KEY)[0]["status"] == "True"


def test_followers_and_a_restarted_hub_adopt_the_stored_choice_and_keep_it() -> None:
    fleet, clock = a_fleet(), Clock()
    leader_engine, leader = hub(fleet, clock)
    obj = scheduled()
    leader_engine.upsert_placement(SPACE, obj)
    leader.decide()
    stored = with_status(obj, leader)
    # A better cluster appears after the choice: a follower and a restarted hub keep what is stored.
    big = sync_target("big", {"env": "edge"})
    big["status"] = {"allocatable": {"cpu": "64", "memory": "8Gi"}}
    fleet.targets["big"] = big
    follower_engine, follower = hub(fleet, clock)
    follower_engine.upsert_placement(SPACE, stored)
    follower.observed(KEY, stored, leading=False)
    assert reached(follower_engine) == {"b"}
    restarted_engine, restarted = hub(fleet, clock)
    restarted_engine.upsert_placement(SPACE, stored)
    restarted.observed(KEY, stored, leading=True)  # it leads, but has decided nothing since it started
    restarted.decide()
    assert reached(restarted_engine) == {"b"}  # Steady: big does not take it


def test_the_lease_holder_ignores_its_own_older_choice_read_back() -> None:
    fleet, clock = a_fleet(), Clock()
    engine, choices = hub(fleet, clock)
    obj = scheduled()
    engine.upsert_placement(SPACE, obj)
    choices.decide()
    old = with_status(obj, choices)
    fleet.targets["b"]["spec"] = {"taints": [{"key": "gone", "effect": "NoExecute"}]}
    engine.upsert_sync_target(fleet.targets["b"])
    choices.target_changed("b", fleet.targets["b"])
    choices.decide()
    assert reached(engine) == {"a"}
    choices.observed(KEY, old, leading=True)
    assert reached(engine) == {"a"}


def test_a_reschedule_request_is_taken_once_per_value() -> None:
    fleet, clock = a_fleet(), Clock()
    engine, choices = hub(fleet, clock)
    obj = scheduled()
    engine.upsert_placement(SPACE, obj)
    choices.decide()
    big = sync_target("big", {"env": "edge"})
    big["status"] = {"allocatable": {"cpu": "64", "memory": "8Gi"}}
    fleet.targets["big"] = big
    engine.upsert_sync_target(big)
    choices.target_changed("big", big)
    choices.decide()
    assert reached(engine) == {"b"}
    asked = with_status(obj, choices)
    asked["metadata"] = {**asked["metadata"], "annotations": {RESCHEDULE_ANNOTATION: "t1"}}
    choices.observed(KEY, asked, leading=True)
    choices.decide()
    assert reached(engine) == {"big"}
    assert choices.status(*KEY)["scheduling"]["rescheduled"] == "t1"
    # Read back with the same request: not taken again (a cluster made better meanwhile does not move it).
    fleet.targets["c"]["status"] = {"allocatable": {"cpu": "640", "memory": "80Gi"}}
    choices.target_changed("c", fleet.targets["c"])
    choices.observed(KEY, {**asked, "status": choices.status(*KEY)}, leading=True)
    choices.decide()
    assert reached(engine) == {"big"}


def test_toleration_seconds_and_failover_after_run_out_on_the_injected_clock() -> None:
    fleet, clock = a_fleet(), Clock()
    engine, choices = hub(fleet, clock, failover_after=30)
    engine.upsert_placement(SPACE, scheduled(tolerations=[
        {"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]))
    choices.decide()
    fleet.targets["b"]["spec"] = {"taints": [{"key": "maint", "effect": "NoExecute",
                                              "timeAdded": "2026-01-01T00:00:00Z"}]}
    choices.target_changed("b", fleet.targets["b"])
    _, recheck = choices.decide()
    assert reached(engine) == {"b"} and recheck == T0 + dt.timedelta(seconds=60)
    clock.now = T0 + dt.timedelta(seconds=61)
    choices.decide()
    assert reached(engine) == {"a"}
    # a's syncer falls silent: replaced 30 s (failover.after) after its Ready condition turned False.
    fleet.targets["a"]["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                                   "lastTransitionTime": "2026-01-01T00:01:01Z"}]
    choices.target_changed("a", fleet.targets["a"])
    _, recheck = choices.decide()
    assert reached(engine) == {"a"} and recheck == T0 + dt.timedelta(seconds=91)
    clock.now = recheck
    choices.decide()
    assert reached(engine) == {"c"}


def test_capacity_counts_only_what_divided_replicas_leave_free() -> None:
    fleet, clock = a_fleet(), Clock()
    engine, choices = hub(fleet, clock)
    choices.requested = lambda: {"b": (7.0, 0.0)}  # b: 8 CPUs, 7 requested
    engine.upsert_placement(SPACE, scheduled())
    choices.decide()
    assert reached(engine) == {"a"}
    scores = {r.name: r.scores["Capacity"] for r in choices.explain(KEY, engine.scheduling(*KEY)).rows}  # type: ignore
    assert scores == {"a": 100.0, "b": 62.5, "c": 75.0}


def test_a_spec_change_the_engine_does_not_hold_looks_again() -> None:
    fleet, clock = a_fleet(), Clock()
    after: dict[str, float | None] = {"seconds": None}
    engine = PlacementEngine()
    engine.upsert_location(location("all", {"env": "edge"}, {"matchLabels": {"env": "edge"}}))
    for target in fleet.targets.values():
        engine.upsert_sync_target(target)
    choices = Choices(engine, fleet, lambda _key: after["seconds"], clock)  # type: ignore[arg-type]
    obj = scheduled()
    engine.upsert_placement(SPACE, obj)
    choices.decide()
    fleet.targets["b"]["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                                   "lastTransitionTime": "2025-12-31T23:00:00Z"}]
    choices.target_changed("b", fleet.targets["b"])
    choices.decide()
    assert reached(engine) == {"b"}  # no failover.after: a silent cluster stays chosen
    after["seconds"] = 60.0  # spec.failover.after: 1m, which the engine's compiled spec does not hold
    choices.observed(KEY, with_status(obj, choices), leading=True, spec_changed=True)
    choices.decide()
    assert reached(engine) == {"a"}


def write(fleet: Fleet, engine: PlacementEngine, choices: Choices, name: str, *, cpu: str | None = None,
          env: str | None = None) -> None:
    """A SyncTarget written (another allocatable CPU, another env label), as the placement service is told."""
    target = fleet.targets[name]
    if cpu is not None:
        target = {**target, "status": {"allocatable": {**target["status"]["allocatable"], "cpu": cpu}}}
    if env is not None:
        target = {**target, "metadata": {**target["metadata"], "labels": {**target["metadata"]["labels"], "env": env}}}
    fleet.targets[name] = target
    engine.upsert_sync_target(target)
    choices.target_changed(name, target)


def test_a_ranking_kept_between_decisions_ranks_what_changed_again() -> None:
    """Each decision starts from the last one's ranking: a cluster whose divided replicas, capacity or labels
    changed since is ranked again, so a later re-choice takes the best cluster as it is now."""
    fleet, clock = a_fleet(), Clock()  # CPUs: a 4, b 8, c 2
    engine, choices = hub(fleet, clock)
    engine.upsert_placement(SPACE, scheduled())
    choices.decide()
    assert reached(engine) == {"b"}
    choices.requested = lambda: {"a": (3.5, 0.0)}  # a: 4 CPUs, 3.5 requested by divided replicas
    choices.decide()  # nothing is due
    write(fleet, engine, choices, "b", env="maintenance")  # the chosen cluster leaves: c has the most free now
    choices.decide()
    assert reached(engine) == {"c"}
    write(fleet, engine, choices, "b", env="edge")
    write(fleet, engine, choices, "a", cpu="32")  # now the largest (28.5 free): Steady, nothing moves
    choices.decide()
    assert reached(engine) == {"c"}
    write(fleet, engine, choices, "c", env="maintenance")
    choices.decide()
    assert reached(engine) == {"a"}


def test_a_ranking_kept_between_decisions_sees_a_toleration_and_a_failover_after_run_out() -> None:
    """Candidates that nothing wrote since the last decision still change with time: c's toleration of its
    NoExecute taint runs out at 60 s, b's syncer (silent since T0) is lost at 30 s (failover.after)."""
    fleet, clock = a_fleet(), Clock()  # CPUs: a 4, b 8, c 16 (tainted)
    fleet.targets["c"]["status"]["allocatable"]["cpu"] = "16"
    fleet.targets["c"]["spec"] = {"taints": [{"key": "maint", "effect": "NoExecute",
                                              "timeAdded": "2026-01-01T00:00:00Z"}]}
    fleet.targets["b"]["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    engine, choices = hub(fleet, clock, failover_after=30)
    engine.upsert_placement(SPACE, scheduled(tolerations=[
        {"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]))
    _, recheck = choices.decide()
    assert reached(engine) == {"c"} and recheck == T0 + dt.timedelta(seconds=30)
    clock.now = recheck
    _, recheck = choices.decide()  # c is kept; b is lost now
    assert reached(engine) == {"c"} and recheck == T0 + dt.timedelta(seconds=60)
    clock.now = T0 + dt.timedelta(seconds=61)
    choices.decide()
    assert reached(engine) == {"a"}
