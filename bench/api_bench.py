"""Space API benchmark: creates/s with 1, 10 and 100 concurrent clients, and watch delivery latency.

Starts a real hub (SQLite, durable commits) on a free port in a temporary directory, drives it over
HTTPS with httpx, prints a table and writes ``docs/benchmarks.md``. Run with ``make bench``.
"""

from __future__ import annotations

import asyncio
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness import Hub, free_port  # noqa: E402

CREATES_PER_LEVEL = 3000
WATCHERS = 100
WATCH_EVENTS = 300


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def creates_per_second(hub: Hub, space: str, clients: int, total: int) -> float:
    url = f"/clusters/{space}/api/v1/namespaces/default/configmaps"
    counter = iter(range(total))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=hub.base_url, verify=hub.ssl_context(), limits=limits, timeout=60,
                                 headers={"Authorization": f"Bearer {hub.token}"}) as c:
        async def worker() -> None:
            for i in counter:
                r = await c.post(url, content=orjson.dumps({"metadata": {"name": f"cm-{clients}-{i}"},
                                                            "data": {"i": str(i)}}),
                                 headers={"Content-Type": "application/json"})
                if r.status_code != 201:
                    raise RuntimeError(r.text)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        return total / (time.perf_counter() - started)


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
    with tempfile.TemporaryDirectory() as tmp:
        hub = Hub(data_dir=Path(tmp) / "data", port=free_port(), home=Path(tmp) / "home")
        hub.start()
        try:
            results = []
            for clients in (1, 10, 100):
                hub.create_space(f"bench-{clients}")
                total = CREATES_PER_LEVEL if clients > 1 else CREATES_PER_LEVEL // 3
                rate = asyncio.run(creates_per_second(hub, f"bench-{clients}", clients, total))
                results.append((clients, total, rate))
                print(f"creates: {clients:>3} clients  {total:>5} objects  {rate:8.0f}/s", flush=True)
            hub.create_space("bench-watch")
            lat = asyncio.run(watch_latency(hub, "bench-watch", WATCHERS, WATCH_EVENTS))
            p50, p99 = percentile(lat, 0.5) * 1000, percentile(lat, 0.99) * 1000
            print(f"watch delivery, {WATCHERS} watchers x {WATCH_EVENTS} events: p50 {p50:.1f} ms, "
                  f"p99 {p99:.1f} ms, mean {statistics.mean(lat) * 1000:.1f} ms", flush=True)
        finally:
            hub.stop()
    write_report(results, p50, p99, len(lat))


def write_report(creates: list[tuple[int, int, float]], p50: float, p99: float, samples: int) -> None:
    out = ROOT / "docs" / "benchmarks.md"
    section = [
        "## Space API (`bench/api_bench.py`)",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, Python "
        f"{platform.python_version()}, SQLite with `synchronous=FULL` (every acknowledged write is fsynced), "
        "HTTPS with bearer-token auth, one hub process.",
        "",
        "| concurrent clients | ConfigMaps created | creates/s |",
        "|---:|---:|---:|",
        *[f"| {c} | {n} | {r:.0f} |" for c, n, r in creates],
        "",
        f"Watch delivery latency (commit request sent → event received), {WATCHERS} watchers of one kind, "
        f"{WATCH_EVENTS} creates at ~100/s: p50 **{p50:.1f} ms**, p99 **{p99:.1f} ms** ({samples} samples).",
        "",
    ]
    text = out.read_text() if out.exists() else "# Benchmarks\n\nNumbers measured on the project's 2-core machine.\n\n"
    start = text.find("## Space API")
    if start != -1:
        end = text.find("\n## ", start + 1)
        text = text[:start] + text[end + 1:] if end != -1 else text[:start]
    out.write_text(text.rstrip() + "\n\n" + "\n".join(section))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
