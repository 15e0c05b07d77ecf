"""Spaces at scale: what an empty space costs the hub's memory, whether creating one slows as spaces pile up, and
how long a restart with all of them takes.

Starts a real hub (SQLite, durable commits) in a temporary directory and drives it over HTTPS with httpx:
``CLIENTS`` concurrent clients create ``SPACES`` top-level Spaces, then ``NESTED`` Spaces inside one of them.
Reports the hub's RSS per empty space at 1,000 and at ``SPACES`` spaces over the same run's baseline (the hub's
RSS with no spaces yet), the create rate of the first and of the last 1,000 of each series and the hub's CPU per
create (which a machine shared with other work disturbs less than a rate), and the time from a restart to
``/readyz`` with every space loaded. It prints every 1,000 creates' rate, the hub's and the clients' CPU per create,
the bytes the hub wrote to storage per create and its RSS, to show what, if anything, grows with the count.
``SPACEHUB_BENCH_SPACES=2000`` runs a shorter series.
Writes its section of docs/benchmarks.md; run with ``make bench``.
"""

from __future__ import annotations

import asyncio
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import measure  # noqa: E402
from bench.measure import cpu_seconds, rss_mib, self_cpu, written_bytes  # noqa: E402
from bench.report import write_section  # noqa: E402
from tests.harness import Hub, free_port  # noqa: E402

SPACES = int(os.environ.get("SPACEHUB_BENCH_SPACES", "10000"))
NESTED = min(SPACES, 2_000)
CLIENTS = 10
WINDOW = 1_000  # the first and last this many creates are timed against each other
SETTLE_S = 3.0  # after a series: the hub's controllers finish the spaces' default objects before RSS is read
IDLE_DEADLINE_S = 300.0  # how long to wait for the hub to go idle after a series
HEADING = "## Spaces at scale (`bench/spaces_bench.py`)"
RSS_GOAL_KIB = 20.0
RESTART_GOAL_S = 5.0


def space_body(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "spacehub.io/v1alpha1", "kind": "Space", "metadata": {"name": name}})


async def create_spaces(hub: Hub, parent: str, names: list[str]) -> list[float]:
    """Create ``names`` in ``parent`` with ``CLIENTS`` clients; each create's completion time (perf_counter)."""
    url = f"/clusters/{parent}/apis/spacehub.io/v1alpha1/spaces"
    headers = {"Authorization": f"Bearer {hub.token}", "Content-Type": "application/json"}
    done: list[float] = []
    pending = iter(names)
    async with httpx.AsyncClient(base_url=hub.base_url, verify=hub.ssl_context(), headers=headers, timeout=120,
                                 limits=httpx.Limits(max_connections=CLIENTS)) as c:
        async def client() -> None:
            for name in pending:
                r = await c.post(url, content=space_body(name))
                if r.status_code != 201:
                    raise RuntimeError(f"create {parent}:{name}: {r.status_code} {r.text}")
                done.append(time.perf_counter())

        await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return done


def window_of(count: int) -> int:
    """How many creates are timed at each end of a series of ``count`` (``WINDOW``, or half of a shorter one)."""
    return min(WINDOW, count // 2)


def rates(started: float, done: list[float]) -> tuple[float, float]:
    """Creates/s of the first and of the last :func:`window_of` creates."""
    done = sorted(done)
    window = window_of(len(done))
    first = window / (done[window - 1] - started)
    last = window / (done[-1] - done[-window - 1])
    return first, last


def series(hub: Hub, parent: str, names: list[str],
           on_count: dict[int, float] | None = None) -> tuple[float, float, float, float]:
    """Create ``names`` in ``parent``; (first, last) rates, the whole series' seconds and the hub's CPU
    milliseconds per create (while creating: what the hub does later, in the pauses, is not counted).
    ``on_count``: counts at which to stop, let the hub settle and record its RSS (MiB), filled in."""
    assert hub.proc is not None
    marks = sorted(on_count or {})
    done: list[float] = []
    started = time.perf_counter()
    paused = 0.0  # seconds spent measuring, taken off the creates' times
    cpu = 0.0  # the hub's CPU seconds while creating
    series_cpu_start = cpu_seconds(hub.proc.pid)
    offset = 0
    # a step every WINDOW creates: a rate, a CPU cost or a write volume that grows with the count shows where
    for mark in sorted({*marks, *range(WINDOW, len(names), WINDOW), len(names)}):
        if mark <= offset:
            continue
        count = mark - offset
        cpu_before = cpu_seconds(hub.proc.pid)
        written_before = written_bytes(hub.proc.pid)
        clients_cpu_before = self_cpu()
        step_started = time.perf_counter()
        done += [t - paused for t in asyncio.run(create_spaces(hub, parent, names[offset:mark]))]
        step_s = time.perf_counter() - step_started
        step_cpu = cpu_seconds(hub.proc.pid) - cpu_before
        cpu += step_cpu
        written_kib = (written_bytes(hub.proc.pid) - written_before) / 1024
        print(f"    {offset:,} to {mark:,}: {count / step_s:.0f}/s, hub CPU {step_cpu * 1000 / count:.2f} ms per "
              f"create (clients {(self_cpu() - clients_cpu_before) * 1000 / count:.2f} ms), "
              f"{written_kib / count:.1f} KiB written per create, RSS {rss_mib(hub.proc.pid):.0f} MiB", flush=True)
        offset = mark
        if on_count is not None and mark in on_count:
            pause = time.perf_counter()
            time.sleep(SETTLE_S)  # a measurement pause, not synchronisation: RSS is read after it either way
            on_count[mark] = settled_rss(hub)
            # the work left after the creates returned, and periodic work (a compaction) that fell in the pause
            settle_cpu = cpu_seconds(hub.proc.pid) - cpu_before - step_cpu
            print(f"    pause at {mark:,}: hub CPU {settle_cpu * 1000:.0f} ms while it settled", flush=True)
            paused += time.perf_counter() - pause
    first, last = rates(started, done)
    settled = cpu_when_idle(hub) - series_cpu_start
    print(f"  hub CPU until idle after the series: {settled * 1000 / max(len(names), 1):.1f} ms per create",
          flush=True)
    return first, last, done[-1] - started if done else 0.0, cpu * 1000 / max(len(names), 1)


def cpu_when_idle(hub: Hub) -> float:
    """The hub's CPU seconds once it has gone idle: what its controllers do after the creates returned (objects
    they add to the new spaces) is counted too."""
    assert hub.proc is not None
    return measure.cpu_when_idle(hub.proc.pid, IDLE_DEADLINE_S)


def settled_rss(hub: Hub) -> float:
    assert hub.proc is not None
    return rss_mib(hub.proc.pid)


def restart_seconds(hub: Hub) -> float:
    hub.stop()
    hub.ready_timeout = 900  # measured, not a test's limit
    started = time.perf_counter()
    hub.start()  # returns once /readyz answers 200: every space is loaded
    return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        hub = Hub(data_dir=Path(tmp) / "data", port=free_port(), home=Path(tmp) / "home")
        hub.start()
        try:
            baseline = settled_rss(hub)
            marks = {m: 0.0 for m in (1_000, SPACES) if m <= SPACES}
            names = [f"s{i:05d}" for i in range(SPACES)]
            first, last, total, cpu_ms = series(hub, "root", names, marks)
            print(f"{SPACES:,} spaces by {CLIENTS} clients in {total:.1f} s: first {window_of(SPACES):,} "
                  f"{first:.0f}/s, last {window_of(SPACES):,} {last:.0f}/s, hub CPU {cpu_ms:.1f} ms per create",
                  flush=True)
            nested_names = [f"n{i:05d}" for i in range(NESTED)]
            n_first, n_last, n_total, n_cpu_ms = series(hub, names[0], nested_names)
            print(f"{NESTED:,} nested spaces in root:{names[0]} in {n_total:.1f} s: first {n_first:.0f}/s, "
                  f"last {n_last:.0f}/s, hub CPU {n_cpu_ms:.1f} ms per create", flush=True)
            per_space = {m: (rss - baseline) * 1024 / m for m, rss in marks.items()}
            for m, kib in per_space.items():
                print(f"RSS at {m:,} spaces: {marks[m]:.0f} MiB, {kib:.1f} KiB per space over the "
                      f"{baseline:.0f} MiB baseline", flush=True)
            restart = restart_seconds(hub)
            print(f"restart with {SPACES + NESTED:,} spaces: {restart:.1f} s to ready", flush=True)
        finally:
            hub.stop()
    write_report(baseline, marks, per_space, (first, last, total, cpu_ms), (n_first, n_last, n_total, n_cpu_ms),
                 restart)


def write_report(baseline: float, marks: dict[int, float], per_space: dict[int, float],
                 top: tuple[float, float, float, float], nested: tuple[float, float, float, float],
                 restart: float) -> None:
    # The goal is at the largest count: below it the watch ring and the writer's recent rows, bounded, are still
    # filling, and their fixed cost is spread over fewer spaces.
    at = max(per_space)
    write_section([
        HEADING,
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, Python {platform.python_version()}, "
        f"SQLite with `synchronous=FULL`, HTTPS, one hub process. {CLIENTS} clients create {SPACES:,} empty "
        f"Spaces in root, then {NESTED:,} inside the first of them; each create returns once the space is Ready "
        "(its system namespaces, their ServiceAccounts and root-CA ConfigMaps, its default RBAC roles stored).",
        "",
        "| spaces | hub RSS | over the 0-space baseline, per space |",
        "|---:|---:|---:|",
        f"| 0 | {baseline:.0f} MiB | (baseline) |",
        *[f"| {m:,} | {marks[m]:.0f} MiB | {per_space[m]:.1f} KiB |" for m in sorted(marks)],
        "",
        f"| series | total | first {window_of(SPACES):,} | last {window_of(SPACES):,} | last / first | "
        "hub CPU per create |",
        "|---|---:|---:|---:|---:|---:|",
        f"| {SPACES:,} in root | {top[2]:.1f} s | {top[0]:.0f}/s | {top[1]:.0f}/s | {top[1] / top[0]:.2f} | "
        f"{top[3]:.1f} ms |",
        f"| {NESTED:,} nested | {nested[2]:.1f} s | {nested[0]:.0f}/s | {nested[1]:.0f}/s | "
        f"{nested[1] / nested[0]:.2f} | {nested[3]:.1f} ms |",
        "",
        f"Restart with {SPACES + NESTED:,} spaces, stop to `/readyz`: **{restart:.1f} s** (goal ≤ "
        f"{RESTART_GOAL_S:.0f} s: **{'met' if restart <= RESTART_GOAL_S else 'not met'}**). RSS per empty space "
        f"goal ≤ {RSS_GOAL_KIB:.0f} KiB at {at:,} spaces: "
        f"**{'met' if per_space[at] <= RSS_GOAL_KIB else 'not met'}** ({per_space[at]:.1f} KiB).",
        "",
    ])


if __name__ == "__main__":
    main()
