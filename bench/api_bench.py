"""Space API benchmark: creates/s with 1, 10 and 100 concurrent clients, and watch delivery latency.

Starts a real hub (SQLite, durable commits) on a free port in a temporary directory, drives it over
HTTPS with httpx, prints a table and writes ``docs/benchmarks.md``. Run with ``make bench``.
"""

from __future__ import annotations

import asyncio
import platform
import re
import shutil
import statistics
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

from bench.report import write_section  # noqa: E402
from tests.harness import Hub, free_port, stop_process, wait_for  # noqa: E402

SECONDS_PER_LEVEL = 10
WRK = shutil.which("wrk")
WATCHERS = 100
WATCH_EVENTS = 300
FLOOR_CLIENTS = 100


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def creates_per_second(hub: Hub, space: str, clients: int, seconds: int,
                       base_url: str | None = None) -> tuple[float, int, str]:
    """Creates/s from wrk (a C load generator, so the client does not compete for the 2 cores); ``base_url``:
    another server to send the same requests to (the floor)."""
    url = f"{base_url or hub.base_url}/clusters/{space}/api/v1/namespaces/default/configmaps"
    out = subprocess.run(
        [WRK, "-t", str(min(2, clients)), "-c", str(clients), "-d", f"{seconds}s", "--latency",
         "-s", str(ROOT / "bench" / "create_configmaps.lua"), "-H", f"Authorization: Bearer {hub.token}",
         "-H", "Content-Type: application/json", url, "--", f"c{clients}"],
        capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    failed = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    p99 = re.search(r"99%\s+(\S+)", out)
    return rate, int(failed.group(1)) if failed else 0, p99.group(1) if p99 else "?"


async def watch_latency(hub: Hub, space: str, watchers: int, events: int) -> list[float]:
    url = f"/clusters/{space}/api/v1/namespaces/default/configmaps"
    headers = {"Authorization": f"Bearer {hub.token}"}
    limits = httpx.Limits(max_connections=watchers + 4)
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=hub.base_url, verify=hub.ssl_context(), limits=limits,
                                 timeout=120, headers=headers) as c:
        rv = (await c.get(url, params={"limit": 1})).json()["metadata"]["resourceVersion"]
        ready = asyncio.Semaphore(0)

        async def watcher() -> None:
            async with c.stream("GET", url, params={"watch": "true", "resourceVersion": rv}) as r:
                ready.release()
                seen = 0
                async for line in r.aiter_lines():
                    if not line:
                        continue
                    event = orjson.loads(line)
                    sent = float(event["object"]["data"]["sent"])
                    latencies.append(time.time() - sent)
                    seen += 1
                    if seen == events:
                        return

        tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
        for _ in range(watchers):
            await ready.acquire()
        for i in range(events):
            body = {"metadata": {"name": f"w-{i}"}, "data": {"sent": repr(time.time())}}
            r = await c.post(url, content=orjson.dumps(body), headers={"Content-Type": "application/json"})
            r.raise_for_status()
            await asyncio.sleep(0.01)  # a steady stream, not one burst
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
    return latencies


def main() -> None:
    if WRK is None:
        raise SystemExit("bench needs wrk (Debian: apt-get install wrk)")
    with tempfile.TemporaryDirectory() as tmp:
        hub = Hub(data_dir=Path(tmp) / "data", port=free_port(), home=Path(tmp) / "home")
        hub.start()
        try:
            results = []
            for clients in (1, 10, 100):
                hub.create_space(f"bench-{clients}")
                rate, failed, p99 = creates_per_second(hub, f"bench-{clients}", clients, SECONDS_PER_LEVEL)
                results.append((clients, rate, failed, p99))
                print(f"creates: {clients:>3} clients  {rate:8.0f}/s  p99 {p99}  failed {failed}", flush=True)
            floor = floor_creates(hub, FLOOR_CLIENTS)
            print(f"floor (bench/create_floor.py): {FLOOR_CLIENTS} clients  {floor:8.0f}/s", flush=True)
            hub.create_space("bench-watch")
            lat = asyncio.run(watch_latency(hub, "bench-watch", WATCHERS, WATCH_EVENTS))
            p50, p99w = percentile(lat, 0.5) * 1000, percentile(lat, 0.99) * 1000
            print(f"watch delivery, {WATCHERS} watchers x {WATCH_EVENTS} events: p50 {p50:.1f} ms, "
                  f"p99 {p99w:.1f} ms, mean {statistics.mean(lat) * 1000:.1f} ms", flush=True)
        finally:
            hub.stop()
    write_report(results, floor, p50, p99w, len(lat))


def floor_creates(hub: Hub, clients: int) -> float:
    """The same wrk run against ``bench/create_floor.py`` (same TLS, same uvicorn; nothing behind it)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "create_floor.py"), "--listen",
                             f"127.0.0.1:{port}", "--data-dir", str(hub.data_dir)])
    base = f"https://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{base}/", verify=hub.ssl_context(), timeout=2).status_code == 200,
                 message="the floor server", retry_on=(httpx.TransportError,))  # refused until it listens
        rate, failed, _ = creates_per_second(hub, "floor", clients, SECONDS_PER_LEVEL, base)
        assert failed == 0, f"{failed} requests to the floor server failed"
        return rate
    finally:
        stop_process(proc)


def write_report(creates: list[tuple[int, float, int, str]], floor: float, p50: float, p99: float,
                 samples: int) -> None:
    at_floor_clients = next(rate for clients, rate, _, _ in creates if clients == FLOOR_CLIENTS)
    section = [
        "## Space API (`bench/api_bench.py`)",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, Python "
        f"{platform.python_version()}, SQLite with `synchronous=FULL` (every acknowledged write is fsynced), "
        "HTTPS with bearer-token auth, one hub process.",
        "",
        f"Creates: `wrk` POSTing new ConfigMaps for {SECONDS_PER_LEVEL} s per level.",
        "",
        "| concurrent clients | creates/s | p99 latency | failed |",
        "|---:|---:|---:|---:|",
        *[f"| {c} | {r:.0f} | {p} | {f} |" for c, r, f, p in creates],
        "",
        f"Floor in the same run (`bench/create_floor.py`: the same uvicorn server, TLS certificate and `wrk` "
        f"requests, answered by an ASGI endpoint that only decodes the body and returns a ConfigMap-sized "
        f"object): **{floor:.0f}/s** at {FLOOR_CLIENTS} clients; the hub reaches "
        f"**{at_floor_clients / floor:.2f}x** of it.",
        "",
        f"Watch delivery latency (commit request sent → event received), {WATCHERS} watchers of one kind, "
        f"{WATCH_EVENTS} creates at ~100/s: p50 **{p50:.1f} ms**, p99 **{p99:.1f} ms** ({samples} samples).",
        "",
    ]
    write_section(section)


if __name__ == "__main__":
    main()
