"""Replica division at fleet scale: one object's replicas divided over 1,000 clusters, by each mode.

Times what the hub computes when a divided object's clusters, total or capacities change
(``placement.division``: each cluster's weight and maximum read from its SyncTarget, then the exact
apportionment with maxima). Its floor, measured in the same run, is reading the same 1,000 SyncTargets'
labels and allocatable quantities alone. Writes its section of docs/benchmarks.md; run with ``make bench``.
"""

from __future__ import annotations

import platform
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apimachinery.quantity import parse_quantity  # noqa: E402
from bench.measure import pct  # noqa: E402
from bench.report import write_section  # noqa: E402
from placement.division import divide, division_of  # noqa: E402

CLUSTERS = 1_000
REPLICAS = 5_000
SAMPLES = 50
GOAL_MS = 100.0
HEADING = "## Replica division (`bench/division_bench.py`)"


def sync_targets(rng: random.Random) -> dict[str, dict[str, Any]]:
    out = {}
    for i in range(CLUSTERS):
        name = f"wec{i + 1}"
        out[name] = {"metadata": {"name": name, "labels": {"spacehub.io/weight": str(rng.randint(0, 9))}},
                     "status": {"allocatable": {"cpu": str(rng.choice([2, 4, 8, 16, 64])),
                                                "memory": f"{rng.choice([8, 16, 32, 256])}Gi", "pods": "110"}}}
    return out


def deployment(mode: str) -> dict[str, Any]:
    return {"metadata": {"name": "web", "annotations": {"spacehub.io/replica-division": mode}},
            "spec": {"replicas": REPLICAS, "template": {"spec": {"containers": [
                {"name": "web", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}]}}}}


def timed(work: Callable[[], Any]) -> list[float]:
    samples = []
    for _ in range(SAMPLES):
        t = time.perf_counter()
        work()
        samples.append(time.perf_counter() - t)
    return samples


def main() -> None:
    targets = sync_targets(random.Random(7))
    names = sorted(targets)

    def floor() -> None:  # reading every SyncTarget's weight label and allocatable quantities, nothing else
        for name in names:
            obj = targets[name]
            obj["metadata"]["labels"].get("spacehub.io/weight")
            allocatable = obj["status"]["allocatable"]
            parse_quantity(allocatable["cpu"])
            parse_quantity(allocatable["memory"])

    floor_s = timed(floor)
    rows = []
    for mode in ("even", "weighted", "capacity"):
        division = division_of(deployment(mode))
        assert division is not None

        def work(d: Any = division) -> dict[str, int]:
            weights, maxima = d.weights(names, targets.get)
            shares, _ = divide(REPLICAS, weights, maxima)
            assert sum(shares.values()) == REPLICAS
            return shares

        samples = timed(work)
        rows.append((mode, pct(samples, 50), pct(samples, 99)))
        print(f"{mode}: p50 {pct(samples, 50) * 1000:.2f} ms, p99 {pct(samples, 99) * 1000:.2f} ms", flush=True)
    floor_p50 = pct(floor_s, 50)
    print(f"floor (reading the SyncTargets): p50 {floor_p50 * 1000:.2f} ms", flush=True)
    worst = max(p99 for _, _, p99 in rows) * 1000
    write_section([
        HEADING,
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, Python {platform.python_version()}, "
        f"in memory. {REPLICAS:,} replicas of one Deployment divided over {CLUSTERS:,} clusters (SyncTargets with "
        "a random weight label 0 to 9, allocatable CPU 2 to 64 and memory 8 to 256 Gi; each replica requests 250m and "
        f"256 Mi), {SAMPLES} times per mode: each cluster's weight and maximum read, then the exact apportionment "
        "(largest remainders, maxima respected). Floor: reading the same SyncTargets' label and quantities "
        "alone, which the capacity mode must do anyway (even and weighted read less).",
        "",
        "| mode | p50 | p99 | p50 over floor |",
        "|---|---:|---:|---:|",
        *[f"| {mode} | {p50 * 1000:.2f} ms | {p99 * 1000:.2f} ms | {p50 / floor_p50:.1f} x |"
          for mode, p50, p99 in rows],
        "",
        f"Floor p50 {floor_p50 * 1000:.2f} ms. Aim: ≤ {GOAL_MS:.0f} ms at {CLUSTERS:,} clusters — "
        f"**{'met' if worst <= GOAL_MS else 'not met'}** (worst p99 {worst:.2f} ms).",
        "",
    ])


if __name__ == "__main__":
    main()
