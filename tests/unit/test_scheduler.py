"""The scheduler's rules on a hand-built inventory: N, spread, scores, taints and tolerations, cordon, Steady;
and the validation of the scheduling fields (kube's field paths)."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from inventory.taints import Taint, merge_taints, parse_taint_args, tolerations_of
from placement.scheduler import (
    CORDONED,
    OUTSCORED,
    SPREAD,
    STEADY,
    TAINTED,
    Candidate,
    choose,
    needs_choice,
    rank_candidates,
    rerank,
)
from placement.schedulingspec import SchedulingSpec, compile_scheduling, scheduling_causes

NOW = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
GI = 2.0 ** 30


def spec(**fields: Any) -> SchedulingSpec:
    compiled = compile_scheduling(fields)
    assert compiled is not None
    return compiled


def fleet(zones: int = 4, per_zone: int = 3, **extra: Candidate) -> dict[str, Candidate]:
    """c-<zone>-<i>, labelled zone=z<zone>; capacity grows with i."""
    out = {f"c-{z}-{i}": Candidate(f"c-{z}-{i}", {"zone": f"z{z}"}, cpu=4.0 * (i + 1), memory=8 * GI * (i + 1))
           for z in range(zones) for i in range(per_zone)}
    out.update(extra)
    return out


def test_no_scheduling_fields_means_not_scheduled() -> None:
    assert compile_scheduling({"locationSelectors": [{}]}) is None


def test_pick_n_takes_the_lower_names_on_equal_scores() -> None:
    d = choose(spec(numberOfClusters=2), fleet(), None, NOW)
    assert d.chosen == ("c-0-0", "c-0-1") and not d.missing


def test_fewer_eligible_than_n_places_on_those_and_says_how_many_are_missing() -> None:
    d = choose(spec(numberOfClusters=5), fleet(zones=1), None, NOW)
    assert len(d.chosen) == 3 and d.missing == 2 and d.unsatisfied == "NotEnoughClusters"


def test_zone_spread_max_skew_1_lands_one_per_zone() -> None:
    d = choose(spec(numberOfClusters=4, spreadConstraints=[{"topologyKey": "zone", "maxSkew": 1}]), fleet(), None, NOW)
    assert sorted(c.split("-")[1] for c in d.chosen) == ["0", "1", "2", "3"]
    refused = {r.name for r in d.rows if r.reason == SPREAD}
    assert "c-0-1" in refused


def test_hard_spread_that_cannot_be_kept_leaves_places_empty_and_says_spread() -> None:
    clusters = {"a": Candidate("a", {"zone": "z1"}), "b": Candidate("b", {"zone": "z1"}),
                "c": Candidate("c", {"zone": "z2"}), "d": Candidate("d", {"zone": "z1"})}
    d = choose(spec(numberOfClusters=4, spreadConstraints=[{"topologyKey": "zone"}]), clusters, None, NOW)
    assert d.chosen == ("a", "b", "c") and d.unsatisfied == "SpreadConstraint" and d.missing == 1
    soft = choose(spec(numberOfClusters=4, spreadConstraints=[{"topologyKey": "zone",
                                                              "whenUnsatisfiable": "ScheduleAnyway"}]),
                  clusters, None, NOW)
    assert soft.chosen == ("a", "b", "c", "d")


def test_min_domains_counts_missing_domains_as_empty() -> None:
    clusters = {"a": Candidate("a", {"zone": "z1"}), "b": Candidate("b", {"zone": "z1"})}
    d = choose(spec(numberOfClusters=2, spreadConstraints=[{"topologyKey": "zone", "minDomains": 2}]),
               clusters, None, NOW)
    assert d.chosen == ("a",)


def test_capacity_scores_the_most_free_100_and_averages_cpu_and_memory() -> None:
    clusters = {"small": Candidate("small", cpu=2, memory=4 * GI), "big": Candidate("big", cpu=8, memory=16 * GI),
                "cpu": Candidate("cpu", cpu=8, memory=4 * GI)}
    d = choose(spec(numberOfClusters=1, prioritizers=[{"type": "Capacity"}]), clusters, None, NOW)
    scores = {r.name: r.scores["Capacity"] for r in d.rows}
    assert scores == {"big": 100.0, "cpu": 62.5, "small": 25.0} and d.chosen == ("big",)


def test_label_and_cel_scores_are_weighted_and_summed() -> None:
    clusters = {"g": Candidate("g", {"tier": "gold"}), "s": Candidate("s", {"tier": "silver"}),
                "x": Candidate("x", {"tier": "bronze"})}
    d = choose(spec(numberOfClusters=1, prioritizers=[
        {"type": "Label", "labelKey": "tier", "values": {"gold": 100, "silver": 50}},
        {"type": "CEL", "expression": "cluster.name == 'x' ? 100 : 0", "weight": 3}]), clusters, None, NOW)
    totals = {r.name: r.total for r in d.rows}
    assert totals == {"g": 100.0, "s": 50.0, "x": 300.0} and d.chosen == ("x",)
    assert next(r for r in d.rows if r.name == "g").reason == OUTSCORED


def test_a_cel_score_that_fails_on_a_cluster_scores_it_zero() -> None:
    clusters = {"a": Candidate("a", {"rank": "7"}), "b": Candidate("b")}
    d = choose(spec(numberOfClusters=1, prioritizers=[{"type": "CEL", "expression": "int(cluster.labels.rank)"}]),
               clusters, None, NOW)
    assert {r.name: r.total for r in d.rows} == {"a": 7.0, "b": 0.0}


def test_kept_choice_stays_when_a_better_cluster_appears_steady() -> None:
    s = spec(numberOfClusters=1, prioritizers=[{"type": "Capacity"}])
    clusters = fleet(zones=1, per_zone=2)
    first = choose(s, clusters, None, NOW)
    clusters["huge"] = Candidate("huge", {"zone": "z0"}, cpu=1000, memory=1000 * GI)
    assert not needs_choice(s, clusters, first.chosen, NOW)
    again = choose(s, clusters, first.chosen, NOW)
    assert again.chosen == first.chosen
    assert next(r for r in again.rows if r.name == "huge").reason == STEADY
    assert choose(s, clusters, None, NOW).chosen == ("huge",)  # a reschedule takes it


def test_no_schedule_taint_keeps_new_choices_off_and_moves_nothing() -> None:
    s = spec(numberOfClusters=1)
    clusters = {"a": Candidate("a"), "b": Candidate("b")}
    first = choose(s, clusters, None, NOW)
    clusters["a"] = Candidate("a", taints=(Taint("maint", "", "NoSchedule"),))
    assert not needs_choice(s, clusters, first.chosen, NOW) and choose(s, clusters, first.chosen, NOW).chosen == ("a",)
    fresh = choose(s, clusters, None, NOW)
    assert fresh.chosen == ("b",) and next(r for r in fresh.rows if r.name == "a").reason == TAINTED


def test_no_execute_taint_replaces_the_choice_in_the_same_zone() -> None:
    s = spec(numberOfClusters=4, spreadConstraints=[{"topologyKey": "zone", "maxSkew": 1}])
    clusters = fleet()
    first = choose(s, clusters, None, NOW)
    victim = next(c for c in first.chosen if c.startswith("c-2-"))
    clusters[victim] = Candidate(victim, {"zone": "z2"}, taints=(Taint("gone", "", "NoExecute"),))
    assert needs_choice(s, clusters, first.chosen, NOW)
    again = choose(s, clusters, first.chosen, NOW)
    assert victim not in again.chosen and set(first.chosen) - {victim} <= set(again.chosen)
    assert next(c for c in again.chosen if c not in first.chosen).startswith("c-2-")


def test_toleration_seconds_count_from_time_added() -> None:
    taint = Taint("maint", "x", "NoExecute", NOW - dt.timedelta(seconds=30))
    clusters = {"a": Candidate("a", taints=(taint,)), "b": Candidate("b")}
    s = spec(numberOfClusters=1, tolerations=[{"key": "maint", "operator": "Exists", "effect": "NoExecute",
                                               "tolerationSeconds": 60}])
    d = choose(s, clusters, ("a",), NOW)
    assert d.chosen == ("a",) and d.recheck_at == NOW + dt.timedelta(seconds=30)
    later = choose(s, clusters, ("a",), NOW + dt.timedelta(seconds=31))
    assert later.chosen == ("b",)
    forever = spec(numberOfClusters=1, tolerations=[{"key": "maint", "operator": "Equal", "value": "x"}])
    assert choose(forever, clusters, ("a",), NOW + dt.timedelta(days=1)).chosen == ("a",)


def test_toleration_matching_follows_kube() -> None:
    taint = Taint("k", "v", "NoSchedule")
    assert tolerations_of([{"operator": "Exists"}])[0].tolerates(taint)
    assert tolerations_of([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}])[0].tolerates(taint)
    assert not tolerations_of([{"key": "k", "operator": "Exists", "effect": "NoExecute"}])[0].tolerates(taint)
    assert not tolerations_of([{"key": "k", "value": "w"}])[0].tolerates(taint)
    assert tolerations_of([{"key": "k", "value": "v"}])[0].tolerates(taint)


def test_cordoned_cluster_is_not_newly_chosen_but_a_kept_choice_stays() -> None:
    s = spec(numberOfClusters=1)
    clusters = {"a": Candidate("a", cordoned=True), "b": Candidate("b")}
    assert choose(s, clusters, ("a",), NOW).chosen == ("a",)
    d = choose(s, clusters, None, NOW)
    assert d.chosen == ("b",) and next(r for r in d.rows if r.name == "a").reason == CORDONED


def test_a_lost_cluster_is_replaced() -> None:
    s = spec(numberOfClusters=1)
    clusters = {"a": Candidate("a", lost=True), "b": Candidate("b")}
    assert needs_choice(s, clusters, ("a",), NOW) and choose(s, clusters, ("a",), NOW).chosen == ("b",)


RANKED_SPECS = [
    {"numberOfClusters": 2, "prioritizers": [{"type": "Capacity"}],
     "spreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}]},
    {"numberOfClusters": 3, "prioritizers": [{"type": "Capacity", "weight": 2},
                                             {"type": "Label", "labelKey": "tier", "values": {"gold": 100}}],
     "spreadConstraints": [{"topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}],
     "tolerations": [{"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]},
    {"numberOfClusters": 1, "prioritizers": [{"type": "CEL", "expression": "cluster.capacity.cpu * 2.0"}],
     "tolerations": [{"key": "maint", "operator": "Exists"}]},
]


def _random_candidate(rng: random.Random, name: str, now: dt.datetime) -> Candidate:
    labels = {"tier": rng.choice(["gold", "silver"])}
    if rng.random() < 0.9:
        labels["zone"] = f"z{rng.randrange(3)}"
    taints = rng.choice([(), (), (), (Taint("maint", "", "NoSchedule"),),
                         (Taint("maint", "", "NoExecute", now - dt.timedelta(seconds=rng.randrange(90))),),
                         (Taint("other", "", "NoExecute", now),)])
    return Candidate(name, labels, cpu=float(rng.randrange(1, 9)), memory=float(rng.randrange(1, 9)) * GI,
                     taints=taints, cordoned=rng.random() < 0.1, lost=rng.random() < 0.1)


@pytest.mark.parametrize("seed", range(8))
def test_rerank_of_the_changed_candidates_equals_ranking_them_all_again(seed: int) -> None:
    """A ranking kept between decisions and updated for the candidates that changed (added, removed, another
    capacity, labels, taints, cordon, lost, a toleration running out) is the ranking made afresh: same eligibility,
    scores (a Capacity scale moving rescales every one) and rank, ties by name."""
    rng = random.Random(seed)
    s = spec(**RANKED_SPECS[seed % len(RANKED_SPECS)])
    now = NOW
    candidates = {f"c{i:02d}": _random_candidate(rng, f"c{i:02d}", now) for i in range(12)}
    r = rank_candidates(s, dict(candidates), now, explain=False)
    for step in range(150):
        changed: set[str] = set()
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            name = f"c{rng.randrange(16):02d}"
            if name in candidates and rng.random() < 0.25:
                del candidates[name]
            else:
                candidates[name] = _random_candidate(rng, name, now)
            changed.add(name)
        now += dt.timedelta(seconds=rng.choice([0, 0, 10, 45]))
        changed |= {name for name, at in r.until.items() if at <= now}  # the caller's part: tolerations ran out
        r = rerank(r, s, dict(candidates), changed, now)
        fresh = rank_candidates(s, dict(candidates), now, explain=False)
        assert r == fresh, (seed, step)
        assert choose(s, candidates, None, now, explain=False, ranking=r) == \
            choose(s, candidates, None, now, explain=False)


def test_kubectl_taint_syntax_and_merge() -> None:
    add, remove = parse_taint_args(["maint=yes:NoExecute", "gpu:NoSchedule", "old-", "x:NoSchedule-"])
    assert add == [{"key": "maint", "value": "yes", "effect": "NoExecute"}, {"key": "gpu", "effect": "NoSchedule"}]
    assert remove == [{"key": "old"}, {"key": "x", "effect": "NoSchedule"}]
    for bad in ["maint=yes", "k:Sometimes", "=v:NoSchedule"]:
        with pytest.raises(ValueError, match="invalid taint"):
            parse_taint_args([bad])
    merged = merge_taints([{"key": "old", "effect": "NoSchedule"}], add, [], NOW)
    assert merged[-2] == {"key": "maint", "value": "yes", "effect": "NoExecute", "timeAdded": "2026-01-01T12:00:00Z"}
    again = merge_taints(merged, add[:1], [{"key": "old"}], NOW + dt.timedelta(hours=1))
    assert [t["key"] for t in again] == ["gpu", "maint"] and again[1]["timeAdded"] == "2026-01-01T12:00:00Z"


@pytest.mark.parametrize(("fields", "path"), [
    ({"numberOfClusters": -1}, "spec.numberOfClusters"),
    ({"numberOfClusters": 1.5}, "spec.numberOfClusters"),
    ({"spreadConstraints": [{"topologyKey": "zone", "maxSkew": 0}]}, "spec.spreadConstraints[0].maxSkew"),
    ({"spreadConstraints": [{"topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]},
     "spec.spreadConstraints[0].whenUnsatisfiable"),
    ({"prioritizers": [{"type": "Random"}]}, "spec.prioritizers[0].type"),
    ({"prioritizers": [{"type": "CEL", "expression": "cluster.name +"}]}, "spec.prioritizers[0].expression"),
    ({"prioritizers": [{"type": "CEL", "expression": "cluster.name == 'a'"}]}, "spec.prioritizers[0].expression"),
    ({"prioritizers": [{"type": "Label"}]}, "spec.prioritizers[0].labelKey"),
    ({"tolerations": [{"key": "k", "effect": "Sometimes"}]}, "spec.tolerations[0].effect"),
    ({"tolerations": [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]}, "spec.tolerations[0].effect"),
])
def test_bad_scheduling_fields_are_refused_with_their_field_paths(fields: dict[str, Any], path: str) -> None:
    assert [c.field for c in scheduling_causes(fields)] == [path]


def test_good_scheduling_fields_pass() -> None:
    assert scheduling_causes({"numberOfClusters": 3, "spreadConstraints": [{"topologyKey": "zone"}],
                              "prioritizers": [{"type": "Capacity", "weight": 2},
                                               {"type": "CEL", "expression": "size(cluster.labels) * 10"}],
                              "tolerations": [{"key": "k", "operator": "Exists"}]}) == []
