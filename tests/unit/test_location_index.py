"""The API's Location index answers exactly what testing every Location's instanceSelector would."""

from __future__ import annotations

import random

from placement.locations import LocationIndex, compile_location


def location(name: str, instance_selector: object, resource: object = None) -> dict:
    spec: dict = {"instanceSelector": instance_selector}
    if resource is not None:
        spec["resource"] = resource
    return {"metadata": {"name": name}, "spec": spec}


LOCATIONS = [
    location("by-id-a", {"matchLabels": {"id": "a"}}),
    location("by-id-b", {"matchLabels": {"id": "b"}}),
    location("eu", {"matchLabels": {"region": "eu"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["gold", "silver"]}]}),
    location("has-gpu", {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}),
    location("not-eu", {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["eu"]}]}),
    location("everything", {}),
    location("broken", {"matchExpressions": [{"key": "x", "operator": "Sideways"}]}),
    location("other-resource", {}, resource={"group": "", "resource": "nodes"}),
    location("absent-selector", None),
]


def by_scan(labels: dict[str, str]) -> list[str]:
    specs = [compile_location(obj) for obj in LOCATIONS]
    return sorted(s.name for s in specs if s.problem is None and s.instance_selector.matches(labels))


def test_index_matches_scan_for_random_label_sets() -> None:
    index = LocationIndex(compile_location(obj) for obj in LOCATIONS)
    rng = random.Random(7)
    choices = {"id": ["a", "b", "c"], "region": ["eu", "us"], "tier": ["gold", "bronze"], "gpu": ["yes"]}
    for _ in range(300):
        labels = {k: rng.choice(v) for k, v in choices.items() if rng.random() < 0.6}
        assert index.reaching(labels) == by_scan(labels), labels


def test_selecting_nothing_never_reaches() -> None:
    index = LocationIndex(compile_location(obj) for obj in LOCATIONS)
    reached = index.reaching({"id": "a", "region": "eu", "tier": "gold", "gpu": "1", "x": "y"})
    assert reached == ["by-id-a", "eu", "everything", "has-gpu"]
