"""Several hub processes on one PostgreSQL database: cross-process watch latency, lease failover, creates/s.

Starts three ``spacehub hub serve`` processes on the local PostgreSQL (a fresh schema, dropped at the end),
sharing one data dir, as an operator runs them behind a load balancer, and measures:

* watch delivery latency (create request sent → event received) for watchers on the writing process (the
  floor: no notification, no log read) and on the two other processes, in the same run, as a ratio;
* lease failover: the lease holder killed with SIGKILL → another process reports ``spacehub_leader 1``;
* ConfigMap creates/s with ``wrk`` at 100 clients against one process, at a third of them against one process,
  spread over three, taking turns for ``ROUNDS`` rounds, and against one process on SQLite in the same run (the
  ratios are what a busy shared machine leaves comparable);
* the CPU each create costs in the process that serves it, in each other process (which follows the log) and in
  PostgreSQL, from /proc: the inputs of the scaling model the section states.

Writes its section of ``docs/benchmarks.md``. Needs PostgreSQL at 127.0.0.1:5432 (database ``test``) and wrk.
"""

from __future__ import annotations

import asyncio
import platform
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import mean, median

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.api_bench import WRK, creates_per_second  # noqa: E402
from bench.measure import cpu_seconds, machine_idle, ms, pct  # noqa: E402
from bench.report import write_section  # noqa: E402
from tests.harness import Hub, free_port, wait_for  # noqa: E402

PG_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres connect_timeout=3"
WATCHERS_PER_PROCESS = 30
EVENTS = 300
FAILOVERS = 5
CREATE_SECONDS = 10
WARM_UP_SECONDS = 15  # creates enough to fill each process's watch ring (50,000 changes) before measuring
ROUNDS = 3  # each load measured this many times, taking turns: the machine's drift weighs on all alike
CLIENTS = 100


def is_leader(hub: Hub) -> bool:
    try:
        with hub.client(timeout=2) as c:
            return re.search(r"^spacehub_leader 1\.0$", c.get("/metrics").text, re.M) is not None
    except httpx.HTTPError:
        return False


async def watch_latency(writer: Hub, hubs: list[Hub], space: str) -> dict[int, list[float]]:
    """Latencies by port of the process the watcher used."""
    path = f"/clusters/{space}/api/v1/namespaces/default/configmaps"
    found: dict[int, list[float]] = {h.port: [] for h in hubs}
    clients = [httpx.AsyncClient(base_url=h.base_url, verify=h.ssl_context(), timeout=120,
                                 limits=httpx.Limits(max_connections=WATCHERS_PER_PROCESS + 4),
                                 headers={"Authorization": f"Bearer {h.token}"}) for h in hubs]
    try:
        rv = (await clients[0].get(path, params={"limit": 1})).json()["metadata"]["resourceVersion"]
        ready = asyncio.Semaphore(0)

        async def watcher(c: httpx.AsyncClient, port: int) -> None:
            async with c.stream("GET", path, params={"watch": "true", "resourceVersion": rv}) as r:
                ready.release()
                seen = 0
                async for line in r.aiter_lines():
                    if line:
                        found[port].append(time.time() - float(orjson.loads(line)["object"]["data"]["sent"]))
                        seen += 1
                        if seen == EVENTS:
                            return

        tasks = [asyncio.create_task(watcher(c, h.port)) for c, h in zip(clients, hubs, strict=True)
                 for _ in range(WATCHERS_PER_PROCESS)]
        for _ in tasks:
            await ready.acquire()
        write = clients[hubs.index(writer)]
        for i in range(EVENTS):
            body = {"metadata": {"name": f"w-{i}"}, "data": {"sent": repr(time.time())}}
            (await write.post(path, content=orjson.dumps(body),
                              headers={"Content-Type": "application/json"})).raise_for_status()
            await asyncio.sleep(0.01)  # a steady stream (~100/s), not one burst
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
    finally:
        for c in clients:
            await c.aclose()
    return found


def failover_times(hubs: list[Hub]) -> list[float]:
    times = []
    for _ in range(FAILOVERS):
        leader = wait_for(lambda: next((h for h in hubs if is_leader(h)), None), timeout=20, message="a leader")
        leader.kill()
        killed = time.monotonic()
        wait_for(lambda gone=leader: any(is_leader(h) for h in hubs if h is not gone), timeout=30, interval=0.02,
                 message="a standby to take the lease")
        times.append(time.monotonic() - killed)
        leader.start()
    return times


def spread_creates(hubs: list[Hub], space: str, seconds: int = CREATE_SECONDS) -> float:
    """Creates/s with the clients spread evenly over the processes (one wrk per process, at once)."""
    per = CLIENTS // len(hubs)
    procs = []
    for i, hub in enumerate(hubs):
        url = f"{hub.base_url}/clusters/{space}/api/v1/namespaces/default/configmaps"
        procs.append(subprocess.Popen(
            [str(WRK), "-t", "1", "-c", str(per), "-d", f"{seconds}s", "-s",
             str(ROOT / "bench" / "create_configmaps.lua"), "-H", f"Authorization: Bearer {hub.token}",
             "-H", "Content-Type: application/json", url, "--", f"p{i}"], stdout=subprocess.PIPE, text=True))
    total = 0.0
    for proc in procs:
        out, _ = proc.communicate()
        total += float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return total


def postgres_cpu_seconds() -> float:
    """CPU of every PostgreSQL server process on the machine (the bench's sessions are nearly all of it)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if "(postgres)" in stat.read_text().split(" ", 2)[1]:
                total += cpu_seconds(int(stat.parent.name))
        except (OSError, IndexError):  # the process ended meanwhile
            continue
    return total


@dataclass
class Load:
    """One load's creates/s and what each create cost: CPU milliseconds in each hub process and in PostgreSQL,
    and the share of the machine's cores left idle meanwhile."""
    rate: float
    hubs_ms: list[float]
    postgres_ms: float
    idle: float

    @property
    def total_ms(self) -> float:
        return sum(self.hubs_ms) + self.postgres_ms


def measured(hubs: list[Hub], load: Callable[[], float]) -> Load:
    """Run ``load`` (it returns creates/s over ``CREATE_SECONDS``) and read every process's CPU around it."""
    pids = [h.proc.pid for h in hubs if h.proc is not None]
    before = [cpu_seconds(pid) for pid in pids], postgres_cpu_seconds(), machine_idle()
    rate = load()
    after = [cpu_seconds(pid) for pid in pids], postgres_cpu_seconds(), machine_idle()
    creates = rate * CREATE_SECONDS
    idle = (after[2][0] - before[2][0]) / max(after[2][1] - before[2][1], 1)
    return Load(rate, [(a - b) / creates * 1000 for a, b in zip(after[0], before[0], strict=True)],
                (after[1] - before[1]) / creates * 1000, idle)


def median_load(loads: list[Load]) -> Load:
    """Each figure's median over rounds of the same load."""
    hubs_ms = [median(column) for column in zip(*(x.hubs_ms for x in loads), strict=True)]
    return Load(median(x.rate for x in loads), hubs_ms, median(x.postgres_ms for x in loads),
                median(x.idle for x in loads))


def on_first(hubs: list[Hub], space: str, clients: int) -> Load:
    """``clients`` on the first process alone; the others follow the log."""
    return measured(hubs, lambda: creates_per_second(hubs[0], space, clients, CREATE_SECONDS)[0])


def sqlite_creates(tmp: Path) -> float:
    hub = Hub(data_dir=tmp / "sqlite", port=free_port(), home=tmp / "home-sqlite")
    hub.start()
    try:
        hub.create_space("one")
        return creates_per_second(hub, "one", CLIENTS, CREATE_SECONDS)[0]
    finally:
        hub.stop()


def main() -> None:
    import psycopg

    if WRK is None:
        raise SystemExit("bench needs wrk (Debian: apt-get install wrk)")
    try:
        admin = psycopg.connect(PG_DSN, autocommit=True)
    except Exception as exc:
        raise SystemExit(f"bench needs PostgreSQL at 127.0.0.1:5432, database test: {exc}") from None
    schema = f"spacehub_bench_{secrets.token_hex(4)}"
    admin.execute(f'CREATE SCHEMA "{schema}"')
    url = f"postgresql+psycopg://postgres@127.0.0.1:5432/test?options=-csearch_path%3D{schema}"
    hubs: list[Hub] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(3):
                hub = Hub(data_dir=Path(tmp) / "data", port=free_port(), home=Path(tmp) / f"home-{i}",
                          extra_args=["--db", url])
                hub.start()
                hubs.append(hub)
            writer = hubs[0]
            writer.create_space("watch")
            latencies = asyncio.run(watch_latency(writer, hubs, "watch"))
            same = latencies[writer.port]
            other = [x for h in hubs[1:] for x in latencies[h.port]]
            print(f"watch: same process p50 {ms(pct(same, 50))} p99 {ms(pct(same, 99))}; other processes "
                  f"p50 {ms(pct(other, 50))} p99 {ms(pct(other, 99))}", flush=True)
            failovers = failover_times(hubs)
            print(f"failover: {', '.join(f'{t:.2f} s' for t in failovers)}", flush=True)
            runs: dict[str, Callable[[str], Load]] = {
                "one": lambda s: on_first(hubs, s, CLIENTS),
                "a third": lambda s: on_first(hubs, s, CLIENTS // len(hubs)),
                "three": lambda s: measured(hubs, lambda: spread_creates(hubs, s)),
            }
            # Every process's watch ring and recent rows filled first, as in hubs that have run a while: a create costs
            # about a tenth more once they are full ("Spaces at scale" in docs/benchmarks.md), and the first load
            # measured would otherwise make its creates before (one process, measured first, was favoured so).
            writer.create_space("warm-up")
            spread_creates(hubs, "warm-up", WARM_UP_SECONDS)
            rounds: list[dict[str, Load]] = []
            for turn in range(ROUNDS):
                labels = list(runs)
                loads: dict[str, Load] = {}
                for label in labels[turn % len(labels):] + labels[:turn % len(labels)]:  # who goes first rotates
                    space = f"{label.replace(' ', '-')}-{turn}"
                    writer.create_space(space)
                    loads[label] = load = runs[label](space)
                    print(f"{label}: {load.rate:.0f} creates/s; CPU per create: hubs "
                          f"{' '.join(f'{x:.3f}' for x in load.hubs_ms)} ms, PostgreSQL {load.postgres_ms:.3f} ms; "
                          f"{load.idle:.0%} of the cores idle", flush=True)
                rounds.append(loads)
            for hub in hubs:
                hub.stop()
            sqlite = sqlite_creates(Path(tmp))
            print(f"one process on SQLite: {sqlite:.0f} creates/s", flush=True)
    finally:
        for hub in hubs:
            hub.stop()
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        admin.close()
    one, third, three = (median_load([r[label] for r in rounds]) for label in ("one", "a third", "three"))
    ratios = [r["three"].rate / r["one"].rate for r in rounds]
    third_clients = CLIENTS // len(hubs)
    predicted = third.hubs_ms[0] + (len(hubs) - 1) * mean(third.hubs_ms[1:]) + third.postgres_ms
    write_section([
        "## Several hub processes on PostgreSQL (`bench/multihub_bench.py`)",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, Python {platform.python_version()}: "
        "three hub processes on the local PostgreSQL (one schema), sharing the machine's 2 cores with it.",
        "",
        f"Watch delivery (create request sent → event received), {WATCHERS_PER_PROCESS} watchers on each "
        f"process, {EVENTS} creates at ~100/s through the first:",
        "",
        "| watchers on | p50 | p99 | samples |",
        "|---|---:|---:|---:|",
        f"| the writing process (floor) | {ms(pct(same, 50))} | {ms(pct(same, 99))} | {len(same)} |",
        f"| the two other processes | {ms(pct(other, 50))} | {ms(pct(other, 99))} | {len(other)} |",
        "",
        f"Cross-process p99 / floor p99: **{pct(other, 99) / pct(same, 99):.1f}x** (aim: p99 ≤ 100 ms).",
        "",
        f"Lease failover (holder killed with SIGKILL → a standby reports `spacehub_leader 1`), {FAILOVERS} "
        f"times: {', '.join(f'{t:.2f} s' for t in failovers)} (aim ≤ 10 s; standbys try every second).",
        "",
        f"ConfigMap creates/s at {CLIENTS} clients (`wrk`, {CREATE_SECONDS} s each), in this one run, medians of "
        f"{ROUNDS} rounds taking turns: one process on PostgreSQL **{one.rate:.0f}/s**, one process on SQLite "
        f"**{sqlite:.0f}/s** after them (PostgreSQL / SQLite **{one.rate / sqlite:.2f}x**), the PostgreSQL clients "
        f"spread over three processes **{three.rate:.0f}/s**: **{median(ratios):.2f}x** of one (each round: "
        f"{', '.join(f'{r:.2f}' for r in ratios)}).",
        "",
        "| clients | creates/s | CPU per create in the serving process | in each other process | in PostgreSQL "
        "| in all | cores idle |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *[f"| {label} | {load.rate:.0f} | {load.hubs_ms[0]:.3f} ms | {mean(load.hubs_ms[1:]):.3f} ms | "
          f"{load.postgres_ms:.3f} ms | {load.total_ms:.3f} ms | {load.idle:.0%} |"
          for label, load in ((f"{CLIENTS} on one process", one),
                              (f"{third_clients} on one process (what each of three serves)", third))],
        f"| {CLIENTS} spread over three | {three.rate:.0f} | {mean(three.hubs_ms):.3f} ms each, serving a third "
        f"and following the rest | | {three.postgres_ms:.3f} ms | {three.total_ms:.3f} ms | {three.idle:.0%} |",
        "",
        "What a create costs depends on how many clients a process serves at once: at a third of the clients one "
        f"process spends {third.hubs_ms[0]:.3f} ms of its CPU per create against {one.hubs_ms[0]:.3f} ms at all of "
        "them (fewer requests for each wake-up of its event loop, smaller commit batches), and PostgreSQL "
        f"{third.postgres_ms:.3f} ms against {one.postgres_ms:.3f} ms (a commit's fixed cost over fewer creates). "
        "As a model: with N processes sharing the clients, CPU per create ≈ serve(clients / N) + (N - 1) * follow + "
        f"postgres(clients / N), here {predicted:.3f} ms from the second row against {three.total_ms:.3f} ms measured "
        "with three; creates/s ≈ the cores' busy time / that cost. One process leaves "
        f"{one.idle:.0%} of this machine's cores idle (its event loop uses at most one core), three use nearly all "
        f"of them ({three.idle:.0%} idle), and on 2 cores the dearer create takes back what the idle share gives. "
        "With more cores the three processes' bound rises with the cores, one process's stays at its event loop's "
        "core.",
        "",
    ])


if __name__ == "__main__":
    main()
