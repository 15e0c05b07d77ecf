"""Several hub processes on one PostgreSQL database: cross-process watch latency, lease failover, creates/s.

Starts three ``spacehub hub serve`` processes on the local PostgreSQL (a fresh schema, dropped at the end),
sharing one data dir, as an operator runs them behind a load balancer, and measures:

* watch delivery latency (create request sent → event received) for watchers on the writing process (the
  floor: no notification, no log read) and on the two other processes, in the same run, as a ratio;
* lease failover: the lease holder killed with SIGKILL → another process reports ``spacehub_leader 1``;
* ConfigMap creates/s with ``wrk`` at 100 clients against one process, then spread over three.

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
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.api_bench import WRK, creates_per_second  # noqa: E402
from bench.measure import ms, pct  # noqa: E402
from bench.report import write_section  # noqa: E402
from tests.harness import Hub, free_port, wait_for  # noqa: E402

PG_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres connect_timeout=3"
WATCHERS_PER_PROCESS = 30
EVENTS = 300
FAILOVERS = 5
CREATE_SECONDS = 10
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


def spread_creates(hubs: list[Hub], space: str) -> float:
    """Creates/s with the clients spread evenly over the processes (one wrk per process, at once)."""
    per = CLIENTS // len(hubs)
    procs = []
    for i, hub in enumerate(hubs):
        url = f"{hub.base_url}/clusters/{space}/api/v1/namespaces/default/configmaps"
        procs.append(subprocess.Popen(
            [str(WRK), "-t", "1", "-c", str(per), "-d", f"{CREATE_SECONDS}s", "-s",
             str(ROOT / "bench" / "create_configmaps.lua"), "-H", f"Authorization: Bearer {hub.token}",
             "-H", "Content-Type: application/json", url, "--", f"p{i}"], stdout=subprocess.PIPE, text=True))
    total = 0.0
    for proc in procs:
        out, _ = proc.communicate()
        total += float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return total


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
            print(f"watch: same process p50 {ms(pct(same, .5))} p99 {ms(pct(same, .99))}; other processes "
                  f"p50 {ms(pct(other, .5))} p99 {ms(pct(other, .99))}", flush=True)
            failovers = failover_times(hubs)
            print(f"failover: {', '.join(f'{t:.2f} s' for t in failovers)}", flush=True)
            writer.create_space("one")
            one, failed, p99_one = creates_per_second(writer, "one", CLIENTS, CREATE_SECONDS)
            writer.create_space("spread")
            spread = spread_creates(hubs, "spread")
            print(f"creates/s at {CLIENTS} clients: one process {one:.0f} (p99 {p99_one}, failed {failed}); "
                  f"three processes {spread:.0f}", flush=True)
    finally:
        for hub in hubs:
            hub.stop()
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        admin.close()
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
        f"| the writing process (floor) | {ms(pct(same, .5))} | {ms(pct(same, .99))} | {len(same)} |",
        f"| the two other processes | {ms(pct(other, .5))} | {ms(pct(other, .99))} | {len(other)} |",
        "",
        f"Cross-process p99 / floor p99: **{pct(other, .99) / pct(same, .99):.1f}x** (aim: p99 ≤ 100 ms).",
        "",
        f"Lease failover (holder killed with SIGKILL → a standby reports `spacehub_leader 1`), {FAILOVERS} "
        f"times: {', '.join(f'{t:.2f} s' for t in failovers)} (aim ≤ 10 s; standbys try every second).",
        "",
        f"ConfigMap creates/s at {CLIENTS} clients (`wrk`, {CREATE_SECONDS} s): one process **{one:.0f}/s**, the "
        f"same clients spread over three processes **{spread:.0f}/s** ({spread / one:.2f}x). They do not add up on "
        "2 cores: every process follows every commit (reads it from the log, decodes it, feeds its indexes and "
        "placement engine), so each create costs CPU in all three, and PostgreSQL shares the same cores.",
        "",
    ])


if __name__ == "__main__":
    main()
