"""Spaces at scale: what an empty space costs the hub's memory, whether creating one slows as spaces pile up, and
how long a restart with all of them takes.

Starts a real hub (SQLite, durable commits) in a temporary directory and drives it over HTTPS with httpx:
``CLIENTS`` concurrent clients create ``SPACES`` top-level Spaces, then ``NESTED`` Spaces inside one of them.
Reports the hub's RSS per empty space at 1,000 and at ``SPACES`` spaces over the same run's baseline (the hub's
RSS with no spaces yet), the create rate of the first and of the last 1,000 of each series and the hub's CPU per
create (which a machine shared with other work disturbs less than a rate), and the time from a restart to
``/readyz`` with every space loaded. It prints every 1,000 creates' rate, the hub's and the clients' CPU per create,
the bytes the hub wrote to storage per create and its RSS, to show what, if anything, grows with the count.
A shared machine's speed drifts by more than that over a minute, so each series' last 1,000 creates are made in
slices of 100, taking turns with a second, fresh hub making its first 1,000 in the same minutes: the ratio of the
two is what a create costs at the series' count against at none, with the drift taken out.
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
from dataclasses import dataclass
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
SLICE = 100  # creates per turn when the last window takes turns with a fresh hub
WARM_UP = 20  # creates a fresh hub makes untimed first: its first requests import modules and fill caches once
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


@dataclass
class Series:
    first: float  # creates/s of the series' first window
    last: float  # creates/s of its last window, made in turns with a fresh hub
    fresh: float  # creates/s of the fresh hub's first window, in those same minutes
    last_cpu_ms: float  # the hub's CPU per create of its last window, until it went idle
    fresh_cpu_ms: float  # the fresh hub's, the same way
    seconds: float  # the series' creating time (the fresh hub's turns and the pauses to measure not counted)
    cpu_ms: float  # the hub's CPU per create while creating


@dataclass
class Turns:
    done: list[float]  # the hub's completion times, as if its slices had run back to back from the start
    fresh_rate: float  # creates/s of the fresh hub
    clients_cpu: float  # the clients' CPU seconds for the hub's slices alone
    fresh_cpu_ms: float  # the fresh hub's CPU per create over its turns (its warm-up not counted)


def in_turns_with_fresh(hub: Hub, parent: str, names: list[str]) -> Turns:
    """Create ``names`` in ``parent`` in slices of ``SLICE``, taking turns with a fresh hub (its own data
    directory) that creates as many spaces in a ``parent`` of its own; who goes first alternates, so a machine
    slowing or speeding up in between weighs on both alike. The fresh hub makes ``WARM_UP`` spaces untimed
    first, which is not in the series' favour: its own first 1,000 included that one-time cost."""
    with tempfile.TemporaryDirectory() as tmp:
        step_started = time.perf_counter()
        fresh = Hub(data_dir=Path(tmp) / "data", port=free_port(), home=Path(tmp) / "home")
        fresh.start()
        try:
            if parent != "root":
                asyncio.run(create_spaces(fresh, "root", [parent]))
            asyncio.run(create_spaces(fresh, parent, [f"warm{i:02d}" for i in range(WARM_UP)]))
            assert fresh.proc is not None
            fresh_cpu_before = cpu_seconds(fresh.proc.pid)
            fresh_names = [f"fresh{i:05d}" for i in range(len(names))]
            done: list[float] = []
            ours = fresh_seconds = clients_cpu = 0.0  # seconds in the hub's slices, in the fresh hub's; CPU
            for turn, at in enumerate(range(0, len(names), SLICE)):
                for hub_first in (turn % 2 == 0, turn % 2 == 1):
                    started = time.perf_counter()
                    if hub_first:
                        cpu_before = self_cpu()
                        away = started - step_started - ours  # the time outside the hub's slices so far
                        done += [t - away for t in asyncio.run(create_spaces(hub, parent, names[at:at + SLICE]))]
                        clients_cpu += self_cpu() - cpu_before
                        ours += time.perf_counter() - started
                    else:
                        asyncio.run(create_spaces(fresh, parent, fresh_names[at:at + SLICE]))
                        fresh_seconds += time.perf_counter() - started
            fresh_cpu = cpu_when_idle(fresh) - fresh_cpu_before
        finally:
            fresh.stop()
    return Turns(done, len(names) / fresh_seconds, clients_cpu, fresh_cpu * 1000 / len(names))


def series(hub: Hub, parent: str, names: list[str], on_count: dict[int, float] | None = None) -> Series:
    """Create ``names`` in ``parent``, the last window in turns with a fresh hub (:func:`in_turns_with_fresh`).
    The hub's CPU is counted while creating: what it does later, in the pauses, is not.
    ``on_count``: counts at which to stop, let the hub settle and record its RSS (MiB), filled in."""
    assert hub.proc is not None
    window = window_of(len(names))
    marks = sorted(on_count or {})
    done: list[float] = []
    started = time.perf_counter()
    paused = 0.0  # seconds spent measuring, taken off the creates' times
    cpu = 0.0  # the hub's CPU seconds while creating
    series_cpu_start = cpu_seconds(hub.proc.pid)
    fresh_rate = last_cpu_ms = fresh_cpu_ms = 0.0
    offset = 0
    # a step every WINDOW creates: a rate, a CPU cost or a write volume that grows with the count shows where
    for mark in sorted({*marks, *range(WINDOW, len(names), WINDOW), len(names) - window, len(names)}):
        if mark <= offset:
            continue
        count = mark - offset
        cpu_before = cpu_seconds(hub.proc.pid)
        written_before = written_bytes(hub.proc.pid)
        clients_cpu_before = self_cpu()
        step_started = time.perf_counter()
        if mark == len(names):
            turns = in_turns_with_fresh(hub, parent, names[offset:mark])
            done += [t - paused for t in turns.done]
            fresh_rate, clients_cpu, fresh_cpu_ms = turns.fresh_rate, turns.clients_cpu, turns.fresh_cpu_ms
            step_s = turns.done[-1] - step_started
            last_cpu_ms = (cpu_when_idle(hub) - cpu_before) * 1000 / count
        else:
            done += [t - paused for t in asyncio.run(create_spaces(hub, parent, names[offset:mark]))]
            clients_cpu = self_cpu() - clients_cpu_before
            step_s = time.perf_counter() - step_started
        step_cpu = cpu_seconds(hub.proc.pid) - cpu_before
        cpu += step_cpu
        written_kib = (written_bytes(hub.proc.pid) - written_before) / 1024
        print(f"    {offset:,} to {mark:,}: {count / step_s:.0f}/s, hub CPU {step_cpu * 1000 / count:.2f} ms per "
              f"create (clients {clients_cpu * 1000 / count:.2f} ms), "
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
    done.sort()
    first = window / (done[window - 1] - started)
    last = window / (done[-1] - done[-window - 1])
    print(f"    last {window:,} {last:.0f}/s in turns with a fresh hub's first {window:,} at {fresh_rate:.0f}/s: "
          f"{last / fresh_rate:.2f}; hub CPU per create {last_cpu_ms:.2f} ms against the fresh hub's "
          f"{fresh_cpu_ms:.2f} ms: {last_cpu_ms / fresh_cpu_ms:.2f}", flush=True)
    settled = cpu_when_idle(hub) - series_cpu_start
    print(f"  hub CPU until idle after the series: {settled * 1000 / max(len(names), 1):.1f} ms per create",
          flush=True)
    return Series(first, last, fresh_rate, last_cpu_ms, fresh_cpu_ms, done[-1] - started,
                  cpu * 1000 / max(len(names), 1))


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
            top = series(hub, "root", names, marks)
            print(f"{SPACES:,} spaces by {CLIENTS} clients in {top.seconds:.1f} s: first {window_of(SPACES):,} "
                  f"{top.first:.0f}/s, last {window_of(SPACES):,} {top.last:.0f}/s (a fresh hub in the same minutes "
                  f"{top.fresh:.0f}/s), hub CPU {top.cpu_ms:.1f} ms per create", flush=True)
            nested = series(hub, names[0], [f"n{i:05d}" for i in range(NESTED)])
            print(f"{NESTED:,} nested spaces in root:{names[0]} in {nested.seconds:.1f} s: first {nested.first:.0f}/s, "
                  f"last {nested.last:.0f}/s (a fresh hub {nested.fresh:.0f}/s), hub CPU {nested.cpu_ms:.1f} ms per "
                  "create", flush=True)
            per_space = {m: (rss - baseline) * 1024 / m for m, rss in marks.items()}
            for m, kib in per_space.items():
                print(f"RSS at {m:,} spaces: {marks[m]:.0f} MiB, {kib:.1f} KiB per space over the "
                      f"{baseline:.0f} MiB baseline", flush=True)
            restart = restart_seconds(hub)
            print(f"restart with {SPACES + NESTED:,} spaces: {restart:.1f} s to ready", flush=True)
        finally:
            hub.stop()
    write_report(baseline, marks, per_space, top, nested, restart)


def write_report(baseline: float, marks: dict[int, float], per_space: dict[int, float], top: Series, nested: Series,
                 restart: float) -> None:
    # The goal is at the largest count: below it the watch ring and the writer's recent rows, bounded, are still
    # filling, and their fixed cost is spread over fewer spaces.
    at = max(per_space)
    window = window_of(SPACES)
    write_section([
        HEADING,
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, Python {platform.python_version()}, "
        f"SQLite with `synchronous=FULL`, HTTPS, one hub process. {CLIENTS} clients create {SPACES:,} empty "
        f"Spaces in root, then {NESTED:,} inside the first of them; each create returns once the space is Ready "
        "(its system namespaces, their ServiceAccounts and root-CA ConfigMaps, its default RBAC roles stored). "
        f"Each series' last {window:,} are made in slices of {SLICE}, taking turns with a fresh hub making its "
        f"first {window:,} in the same minutes (\"fresh\"): last / fresh is a create at the series' count against "
        "one at none, with the machine's drift over the series taken out; last / first keeps it in.",
        "",
        "| spaces | hub RSS | over the 0-space baseline, per space |",
        "|---:|---:|---:|",
        f"| 0 | {baseline:.0f} MiB | (baseline) |",
        *[f"| {m:,} | {marks[m]:.0f} MiB | {per_space[m]:.1f} KiB |" for m in sorted(marks)],
        "",
        f"| series | total | first {window:,} | last {window:,} | fresh hub's first {window:,} | last / fresh | "
        "last / first | hub CPU per create, last / fresh | hub CPU per create |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *[f"| {label} | {s.seconds:.1f} s | {s.first:.0f}/s | {s.last:.0f}/s | {s.fresh:.0f}/s | "
          f"**{s.last / s.fresh:.2f}** | {s.last / s.first:.2f} | {s.last_cpu_ms:.2f} / {s.fresh_cpu_ms:.2f} ms = "
          f"**{s.last_cpu_ms / s.fresh_cpu_ms:.2f}** | {s.cpu_ms:.1f} ms |"
          for label, s in ((f"{SPACES:,} in root", top), (f"{NESTED:,} nested", nested))],
        "",
        f"Restart with {SPACES + NESTED:,} spaces, stop to `/readyz`: **{restart:.1f} s** (goal ≤ "
        f"{RESTART_GOAL_S:.0f} s: **{'met' if restart <= RESTART_GOAL_S else 'not met'}**). RSS per empty space "
        f"goal ≤ {RSS_GOAL_KIB:.0f} KiB at {at:,} spaces: "
        f"**{'met' if per_space[at] <= RSS_GOAL_KIB else 'not met'}** ({per_space[at]:.1f} KiB).",
        "",
    ])


if __name__ == "__main__":
    main()
