"""Replica division: exact shares that always add up, maxima respected, weights from SyncTargets."""

from __future__ import annotations

from typing import Any

import pytest

from placement.division import DivisionError, divide, division_of


def deployment(replicas: int, mode: str, cpu: str | None = "100m", **annotations: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "web", "image": "httpd"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu, "memory": "64Mi"}}
    return {"metadata": {"name": "web", "annotations": {"spacehub.io/replica-division": mode, **annotations}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [container]}}}}


def target(name: str, labels: dict[str, str] | None = None, cpu: str = "8", memory: str = "32Gi") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


@pytest.mark.parametrize(("total", "weights", "maxima", "expected", "over"), [
    (10, {"a": 1, "b": 4}, None, {"a": 2, "b": 8}, False),
    (10, {"a": 1, "b": 1, "c": 1}, None, {"a": 4, "b": 3, "c": 3}, False),  # remainder by name on ties
    (7, {"a": 1, "b": 1}, {"a": 2, "b": None}, {"a": 2, "b": 5}, False),  # a capped: its surplus goes to b
    (10, {"a": 1, "b": 4}, {"a": 2, "b": 5}, {"a": 3, "b": 7}, True),  # cannot hold 10: maxima, rest by weight
    (15, {"a": 0, "b": 1}, None, {"a": 0, "b": 15}, False),
    (0, {"a": 1, "b": 1}, None, {"a": 0, "b": 0}, False),
])
def test_shares_always_add_up_to_the_total(total: int, weights: dict[str, float],
                                           maxima: dict[str, int | None] | None, expected: dict[str, int],
                                           over: bool) -> None:
    shares, exceeded = divide(total, weights, maxima)
    assert shares == expected and sum(shares.values()) == total and exceeded is over


def test_capacity_is_what_fits_by_cpu_and_memory() -> None:
    division = division_of(deployment(10, "capacity"))
    assert division is not None
    targets = {"florin": target("florin", cpu="2"), "guilder": target("guilder", cpu="8")}
    weights, maxima = division.weights(sorted(targets), targets.get)
    assert maxima == {"florin": 20, "guilder": 80}  # 2 CPUs / 100m, 8 CPUs / 100m (memory holds more)
    assert divide(10, weights, maxima)[0] == {"florin": 2, "guilder": 8}


def test_weighted_reads_a_label_and_falls_back_to_even_when_no_cluster_has_one() -> None:
    division = division_of(deployment(9, "weighted", **{"spacehub.io/replica-weight-label": "share"}))
    assert division is not None
    targets = {"a": target("a", {"share": "2"}), "b": target("b", {"share": "1"}), "c": target("c")}
    weights, _ = division.weights(sorted(targets), targets.get)
    assert divide(9, weights)[0] == {"a": 6, "b": 3, "c": 0}
    unlabelled = {"a": target("a"), "b": target("b")}
    assert divide(4, division.weights(sorted(unlabelled), unlabelled.get)[0])[0] == {"a": 2, "b": 2}


def test_capacity_without_requests_is_proportional_to_cpu_and_unknown_modes_are_refused() -> None:
    division = division_of(deployment(5, "capacity", cpu=None))
    assert division is not None
    targets = {"a": target("a", cpu="1"), "b": target("b", cpu="4")}
    weights, maxima = division.weights(sorted(targets), targets.get)
    assert maxima == {"a": None, "b": None} and divide(5, weights)[0] == {"a": 1, "b": 4}
    assert division_of({"metadata": {}}) is None
    with pytest.raises(DivisionError, match="not one of even, weighted, capacity"):
        division_of(deployment(5, "by-moon-phase"))
