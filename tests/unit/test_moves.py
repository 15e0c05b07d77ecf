"""Make-before-break moves on the real engine: a cluster losing an object keeps it (in its desired set, its
DELETE and its Namespace's withheld) until the clusters it is placed on now are Ready, or the time runs out;
and how its PlacementStatus counts such a leaving copy."""

from __future__ import annotations

from placement.engine import PlacementEngine
from placement.model import ObjectRef
from placement.moves import MovePolicy, Moves
from status.readiness import ClusterState
from status.tally import Tally, cluster_row
from tests.placement_world import location, ns_ref, placement, ref, refs, sync_target, wobj

WEB = ref("app", "deployments.apps", "hello", "web")
SETTINGS = ref("app", "configmaps", "hello", "settings")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def world() -> tuple[PlacementEngine, Moves, Clock, set[tuple[ObjectRef, str]]]:
    engine = PlacementEngine()
    for name in ("wec1", "wec2"):
        engine.upsert_sync_target(sync_target(name, {"name": name}))
        engine.upsert_location(location(name, {"name": name}, {"matchLabels": {"name": name}}))
    engine.upsert_placement("app", placement("p", [{"matchLabels": {"name": "wec1"}}], [
        {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["hello"]},
        {"apiGroup": "", "resources": ["configmaps"], "namespaces": ["hello"]}]))
    engine.upsert_object(wobj("app", "namespaces", "", "hello"))
    engine.upsert_object(wobj("app", "deployments.apps", "hello", "web"))
    engine.upsert_object(wobj("app", "configmaps", "hello", "settings"))
    for name in ("wec1", "wec2"):
        engine.desired(name)  # their syncers read them: their change logs are kept
    clock = Clock()
    moves = Moves(engine, clock)
    ready: set[tuple[ObjectRef, str]] = set()
    moves.copy_ready = lambda r, t: (r, t) in ready if r.resource == "deployments.apps" else None
    return engine, moves, clock, ready


def repoint(engine: PlacementEngine, moves: Moves, to: str) -> int:
    seq = engine.current_seq("wec1")
    engine.upsert_placement("app", placement("p", [{"matchLabels": {"name": to}}], [
        {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["hello"]},
        {"apiGroup": "", "resources": ["configmaps"], "namespaces": ["hello"]}]))
    moves.look()
    return seq


def sent(engine: PlacementEngine, target: str, seq: int) -> list[tuple[str, str]]:
    return [(c.op, c.entry.ref.name) for c in engine.changes_since(target, seq) or []]


def test_the_losing_cluster_keeps_a_deployment_until_the_gaining_one_is_ready() -> None:
    engine, moves, _clock, ready = world()
    seq = repoint(engine, moves, "wec2")
    # The ConfigMap has no readiness rule: it moves at once. The Deployment and its Namespace stay.
    assert sent(engine, "wec1", seq) == [("delete", "settings")]
    assert refs(engine, "wec1") == {WEB, ns_ref("app", "hello")}
    assert engine.is_destination(WEB, "wec1") and engine.leaving_targets(WEB) == ["wec1"]
    assert engine.object_destinations(WEB) == ["wec2"]
    assert moves.settle()  # wec2 not Ready: still held
    assert WEB in refs(engine, "wec1")
    ready.add((WEB, "wec2"))
    assert not moves.settle()
    assert refs(engine, "wec1") == set()
    assert sent(engine, "wec1", seq)[-2:] == [("delete", "web"), ("delete", "hello")]
    assert not engine.is_destination(WEB, "wec1")


def test_a_leaving_copy_goes_when_its_time_runs_out_and_listeners_hear_of_it() -> None:
    engine, moves, clock, _ready = world()
    moves.policy = lambda _ref: MovePolicy(True, 30.0)
    told: list[tuple[ObjectRef, str, list[str]]] = []
    moves.timed_out.append(lambda r, t, waiting: told.append((r, t, waiting)))
    repoint(engine, moves, "wec2")
    clock.now += 29
    assert moves.settle() and told == []
    clock.now += 1
    assert not moves.settle()
    assert told == [(WEB, "wec1", ["wec2"])]
    assert WEB not in refs(engine, "wec1")


def test_break_before_make_removes_at_once() -> None:
    engine, moves, _clock, _ready = world()
    moves.policy = lambda _ref: MovePolicy(False, 600.0)
    seq = repoint(engine, moves, "wec2")
    assert ("delete", "web") in sent(engine, "wec1", seq)
    assert engine.leaving_copies() == []


def test_a_copy_coming_back_is_no_longer_leaving_and_nothing_is_deleted() -> None:
    engine, moves, _clock, _ready = world()
    repoint(engine, moves, "wec2")
    seq = engine.current_seq("wec1")  # wec1's stream read everything so far (the DELETE was withheld)
    repoint(engine, moves, "wec1")
    assert moves.settle()  # now wec2 keeps the copy it just got until wec1's is Ready
    assert engine.leaving_copies() == [(WEB, "wec2")]
    assert ("delete", "web") not in sent(engine, "wec1", seq)
    assert WEB in refs(engine, "wec1")


def test_an_object_deleted_or_placed_nowhere_is_not_held() -> None:
    engine, moves, _clock, _ready = world()
    repoint(engine, moves, "wec2")
    engine.delete_object(WEB)
    assert not moves.settle()
    assert WEB not in refs(engine, "wec1")
    engine2, moves2, _c, _r = world()
    engine2.delete_placement("app", "p")
    moves2.look()
    assert engine2.leaving_copies() == []


def test_a_resync_of_the_losing_cluster_lists_its_leaving_copy() -> None:
    engine, moves, _clock, _ready = world()
    repoint(engine, moves, "wec2")
    listed = [(e.ref, e.implicit) for e in engine.desired("wec1")]
    assert listed == [(ns_ref("app", "hello"), True), (WEB, False)]


def test_a_placement_status_counts_a_ready_leaving_copy_among_the_ready_only() -> None:
    states = {"wec1": ClusterState("Ready", True), "wec2": ClusterState("Applied", True, "1 of 2 available")}
    tally = Tally()
    for target, state in states.items():
        tally.put(target, cluster_row(target, state, None, leaving=target == "wec1", share=None, number=None))
    body = tally.body({"uid": "u"})
    assert body["summary"] == {"targeted": 1, "applied": 1, "ready": 1, "failed": 0, "stale": 0, "pending": 0,
                               "current": 1, "leaving": 1}
    assert [(c["name"], c["phase"], c.get("ready")) for c in body["clusters"]] == [
        ("wec1", "Leaving", True), ("wec2", "Applied", None)]
    assert body["worstCondition"]["cluster"] == "wec2"  # a leaving copy is never the worst
