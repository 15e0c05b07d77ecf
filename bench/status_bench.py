"""Status coming home at fleet scale: one cluster's change → the space's PlacementStatus and CombinedStatus.

For each fleet size N, a fresh hub and a fresh ``spacehub sim serve --clusters N --with-syncers`` (see
bench/fleet.py). The space holds a CRD ``probes.bench.example.com`` (with a status subresource), one Probe
``app/probe`` and a StatusCollector summing ``returned.status.value``; one EdgePlacement sends both to every
cluster and names the collector. Once every cluster reports its probe Ready with value 0, each round
merge-PATCHes the status of the probe in one more cluster, directly in that simulated cluster (value 1,
condition Ready=False), and records when the hub's watches deliver the PlacementStatus whose ready count
dropped by one and the CombinedStatus whose sum rose by one: cluster write → syncer's watch → status report
(batched every 0.2 s) → hub → summary and collectors recomputed → written in the space → watch event.

In the same run, the two ends of that path are timed alone as its floor: a status PATCH in a simulated cluster
until a watch there delivers it, and a PATCH in the hub's space until a watch there delivers it.
Writes its section of docs/benchmarks.md. Run with ``make bench`` or ``python bench/status_bench.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import platform
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fleet import FleetSim, fleet_sim, placement, post, raise_open_files_limit, wait_all_ready  # noqa: E402
from bench.measure import ms, pct, rss_mib, tree_cpu_seconds  # noqa: E402
from bench.report import write_section  # noqa: E402
from sim.workers import auto_processes  # noqa: E402
from tests.harness import Hub, free_port, wait_for  # noqa: E402

SPACE, NS, PROBE = "bench", "app", "probe"
GROUP, PLURAL = "bench.example.com", "probes"
CONTROL = "control.kubestellar.io/v1alpha1"
SUMMARY = f"{PLURAL}.{GROUP}.{PROBE}"  # the PlacementStatus of the probe
COLLECTOR = "probe-sum"
ROUND_DEADLINE = 60.0
PLACE_DEADLINE = 900.0  # the probe placed on, and then reported by, every cluster
QUIET_WINDOW, QUIET_CORES, SETTLE_DEADLINE = 2.0, 0.8, 300.0
ROUND_SPACING = 1.0  # seconds from one round's start to the next
FLOOR_SAMPLES = 20
WATCH_ATTEMPTS = 10  # watches opened for one floor sample before giving up
PATCH_CONCURRENCY = 50  # status PATCHes in flight while every cluster's probe is set to 0
HEADING = "## Status round trip (`bench/status_bench.py`)"
MERGE = {"Content-Type": "application/merge-patch+json"}


def probe_crd() -> dict[str, Any]:
    condition = {"type": "object", "properties": {k: {"type": "string", "maxLength": 256} for k in
                                                  ("type", "status", "reason", "message", "lastTransitionTime")}}
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"note": {"type": "string", "maxLength": 64}}},
        "status": {"type": "object", "properties": {
            "value": {"type": "integer"},
            "conditions": {"type": "array", "maxItems": 8, "items": condition}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{PLURAL}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": PLURAL, "singular": "probe", "kind": "Probe", "listKind": "ProbeList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": schema}}]}}


def probe_status(value: int, ready: bool, message: str) -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {"type": "Ready", "status": "True" if ready else "False", "reason": "Probe" if ready else "Round",
                 "message": message, "lastTransitionTime": now}
    return {"status": {"value": value, "conditions": [condition]}}


def cluster_probe_url(server: str) -> str:
    """The probe in the cluster at ``server`` (its kubeconfig's server: with several simulator processes,
    each cluster has the URL of the process serving it)."""
    return f"{server}/apis/{GROUP}/v1/namespaces/{NS}/{PLURAL}/{PROBE}"


# --- what the hub's watches deliver -------------------------------------------------------------------


def ready_count(placement_status: dict[str, Any]) -> int | None:
    return (placement_status.get("summary") or {}).get("ready")


def applied_count(placement_status: dict[str, Any]) -> int | None:
    return (placement_status.get("summary") or {}).get("applied")


def collected_sum(combined: dict[str, Any]) -> float | None:
    """The collector's sum when every cluster contributed to it (no rowErrors), else None."""
    for result in combined.get("results") or []:
        if result.get("name") == COLLECTOR and not result.get("rowErrors"):
            rows = result.get("rows") or []
            return float(rows[0]["columns"][0]["float"]) if rows else None
    return None


@dataclass
class Seen:
    """The latest ready count and sum the hub's watches delivered, and when each value was first seen."""

    ready: int | None = None
    applied: int | None = None
    total: float | None = None
    ready_at: dict[int, float] = field(default_factory=dict)
    total_at: dict[float, float] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    reconnects: int = 0

    def forget_arrivals(self) -> None:
        self.ready_at.clear()
        self.total_at.clear()

    def saw_placement_status(self, obj: dict[str, Any], now: float) -> None:
        self.applied = applied_count(obj)
        self.saw_ready(ready_count(obj), now)

    def saw_ready(self, value: int | None, now: float) -> None:
        if value is not None:
            self.ready = value
            self.ready_at.setdefault(value, now)
            self.changed.set()

    def saw_total(self, value: float | None, now: float) -> None:
        if value is not None:
            self.total = value
            self.total_at.setdefault(value, now)
            self.changed.set()


async def watch(client: httpx.AsyncClient, path: str, params: dict[str, str],
                on_object: Callable[[dict[str, Any], float], None], seen: Seen) -> None:
    """List then watch ``path``, handing every object to ``on_object`` with its arrival time; reconnects."""
    rv: str | None = None
    while True:
        try:
            if rv is None:
                r = await client.get(path, params=params)
                r.raise_for_status()
                body = r.json()
                rv = body["metadata"]["resourceVersion"]
                for item in body.get("items") or []:
                    on_object(item, time.monotonic())
            async with client.stream("GET", path, params={**params, "watch": "true", "resourceVersion": rv,
                                                          "allowWatchBookmarks": "true"}) as r:
                r.raise_for_status()
                async for line in r.aiter_lines():
                    if not line:
                        continue
                    now = time.monotonic()
                    event = orjson.loads(line)
                    if event.get("type") == "ERROR":
                        rv = None
                        break
                    obj = event.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        on_object(obj, now)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken watch is reopened and counted
            print(f"  watch {path}: {exc!r} (reconnecting)", flush=True)
            await asyncio.sleep(0.5)
        seen.reconnects += 1


# --- one fleet ----------------------------------------------------------------------------------------


@dataclass
class FleetResult:
    clusters: int
    all_ready_s: float = 0.0
    placed_s: float = 0.0
    summary: list[float] = field(default_factory=list)  # seconds per round until the PlacementStatus followed
    combined: list[float] = field(default_factory=list)  # … until the CombinedStatus followed
    both: list[float] = field(default_factory=list)
    missing: int = 0
    cluster_floor: list[float] = field(default_factory=list)
    space_floor: list[float] = field(default_factory=list)
    hub_cpu: float = 0.0
    sim_cpu: float = 0.0
    rounds_wall_s: float = 0.0
    hub_rss: float = float("nan")
    reconnects: int = 0
    load_before: float = field(default_factory=lambda: os.getloadavg()[0])  # other work sharing the machine


@dataclass
class FloorEnd:
    """One end of the status path timed alone: a merge-PATCH and the watch event that carries it."""

    collection: str  # the collection a watch on ``name`` is opened in
    name: str
    subresource: str  # "" or "/status"
    body: Callable[[int], dict[str, Any]]  # the PATCH of sample i
    marker: Callable[[dict[str, Any]], str | None]  # what in a watched object says which sample it carries

    async def time(self, client: httpx.AsyncClient, samples: list[float]) -> None:
        path = f"{self.collection}/{self.name}"
        for i in range(FLOOR_SAMPLES):
            # The list's resourceVersion, not the object's: the object may have last changed before the
            # compaction horizon, and a watch from there is 410 Gone.
            selector = f"metadata.name={self.name}"
            r = await client.get(self.collection, params={"fieldSelector": selector})
            r.raise_for_status()
            params = {"watch": "true", "fieldSelector": selector,
                      "resourceVersion": r.json()["metadata"]["resourceVersion"]}
            started: list[float] = []  # when the PATCH was sent
            # A server may end a watch at any time (as client-go expects): watch again from the same
            # resourceVersion, which is older than the PATCH, so its event is delivered all the same.
            for _attempt in range(WATCH_ATTEMPTS):
                if await self._sample(client, path, params, i, started, samples):
                    break
            else:
                raise RuntimeError(f"{self.collection}: {WATCH_ATTEMPTS} watches ended before floor sample {i}")
            await asyncio.sleep(0.2)

    async def _sample(self, client: httpx.AsyncClient, path: str, params: dict[str, str], i: int,
                      started: list[float], samples: list[float]) -> bool:
        """Watch (PATCHing first if not yet done) until sample ``i`` arrives; False if the watch ended first."""
        async with client.stream("GET", self.collection, params=params) as stream:
            stream.raise_for_status()
            lines = stream.aiter_lines()
            if not started:
                started.append(time.monotonic())
                patch = await client.patch(path + self.subresource, content=orjson.dumps(self.body(i)), headers=MERGE)
                patch.raise_for_status()
            while True:
                try:
                    line = await asyncio.wait_for(anext(lines), timeout=ROUND_DEADLINE)
                except StopAsyncIteration:
                    return False
                event = orjson.loads(line) if line else {}
                obj = event.get("object") or {}
                if event.get("type") in ("ADDED", "MODIFIED") and self.marker(obj) == f"floor {i}":
                    samples.append(time.monotonic() - started[0])
                    return True


def cluster_floor(server: str) -> FloorEnd:
    return FloorEnd(f"{server}/apis/{GROUP}/v1/namespaces/{NS}/{PLURAL}", PROBE, "/status",
                    lambda i: probe_status(0, True, f"floor {i}"),
                    lambda obj: ((obj.get("status") or {}).get("conditions") or [{}])[0].get("message"))


def space_floor() -> FloorEnd:
    return FloorEnd(f"/clusters/{SPACE}/api/v1/namespaces/{NS}/configmaps", "floor", "",
                    lambda i: {"data": {"floor": f"floor {i}"}},
                    lambda obj: (obj.get("data") or {}).get("floor"))


async def measure(hub: Hub, sim: FleetSim, result: FleetResult, rounds: int) -> None:
    n = result.clusters
    hub_headers = {"Authorization": f"Bearer {hub.token}"}
    sim_headers = {"Authorization": f"Bearer {sim.admin_token}"}
    limits = httpx.Limits(max_connections=PATCH_CONCURRENCY + 10)
    async with (httpx.AsyncClient(base_url=hub.base_url, verify=hub.ssl_context(), headers=hub_headers,
                                  timeout=httpx.Timeout(60, read=None)) as hc,
                httpx.AsyncClient(base_url=sim.base_url, verify=sim.verify(), headers=sim_headers, limits=limits,
                                  timeout=httpx.Timeout(60, read=None)) as sc):
        seen = Seen()
        servers = {name: sim.cluster_url(name) for name in sim.names}
        space = f"/clusters/{SPACE}/apis"
        watches = [
            asyncio.create_task(watch(hc, f"{space}/status.spacehub.io/v1alpha1/namespaces/{NS}/placementstatuses",
                                      {"fieldSelector": f"metadata.name={SUMMARY}"},
                                      seen.saw_placement_status, seen)),
            asyncio.create_task(watch(hc, f"{space}/{CONTROL}/namespaces/{NS}/combinedstatuses", {},
                                      lambda obj, now: seen.saw_total(collected_sum(obj), now), seen)),
        ]
        try:
            # Every cluster's probe Ready with value 0 before the rounds: N status PATCHes in the clusters.
            t = time.monotonic()
            await until(seen, lambda: seen.applied == n, PLACE_DEADLINE, f"the probe applied on all {n} clusters")
            print(f"  the probe is applied on every cluster after {time.monotonic() - t:.1f} s", flush=True)
            gate = asyncio.Semaphore(PATCH_CONCURRENCY)

            async def zero(cluster: str) -> None:
                async with gate:
                    body = orjson.dumps(probe_status(0, True, "start"))
                    r = await sc.patch(f"{cluster_probe_url(servers[cluster])}/status", content=body, headers=MERGE)
                    r.raise_for_status()
            await asyncio.gather(*(zero(c) for c in sim.names))
            await until(seen, lambda: seen.ready == n and seen.total == 0, PLACE_DEADLINE,
                        f"{n} ready probes summing to 0")
            result.placed_s = time.monotonic() - t
            print(f"  every probe set and reported: {result.placed_s:.1f} s", flush=True)

            procs = {"hub": hub.proc.pid, "sim": sim.proc.pid}  # type: ignore[union-attr]
            t = time.monotonic()
            await settle(procs)
            print(f"  hub and simulator quiet after {time.monotonic() - t:.1f} s", flush=True)
            cpu0 = {k: tree_cpu_seconds(pid) for k, pid in procs.items()}
            wall0 = time.monotonic()
            stride = max(1, n // max(1, min(rounds, n)))
            for r in range(1, min(rounds, n) + 1):
                cluster = sim.names[((r - 1) * stride) % n]
                seen.forget_arrivals()  # the values wanted now may have passed by while the probes were set
                t0 = time.monotonic()
                resp = await sc.patch(f"{cluster_probe_url(servers[cluster])}/status", headers=MERGE,
                                      content=orjson.dumps(probe_status(1, False, f"round {r}")))
                resp.raise_for_status()
                want_ready, want_total = n - r, float(r)
                done = await until(seen, lambda w=want_ready, s=want_total: w in seen.ready_at and s in seen.total_at,
                                   ROUND_DEADLINE, None)
                if not done:
                    result.missing += 1
                else:
                    s, c = seen.ready_at[want_ready] - t0, seen.total_at[want_total] - t0
                    result.summary.append(s)
                    result.combined.append(c)
                    result.both.append(max(s, c))
                    print(f"  round {r} ({cluster}): PlacementStatus {ms(s)}, CombinedStatus {ms(c)}", flush=True)
                await asyncio.sleep(max(0.0, ROUND_SPACING - (time.monotonic() - t0)))
            result.rounds_wall_s = time.monotonic() - wall0
            result.hub_cpu = tree_cpu_seconds(procs["hub"]) - cpu0["hub"]
            result.sim_cpu = tree_cpu_seconds(procs["sim"]) - cpu0["sim"]

            # The path's two ends alone, in the same run: a cluster's own watch, and the space's own watch.
            await cluster_floor(servers[sim.names[-1]]).time(sc, result.cluster_floor)
            await space_floor().time(hc, result.space_floor)
        finally:
            result.reconnects = seen.reconnects
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)


async def settle(procs: dict[str, int]) -> None:
    """Until the processes use less than QUIET_CORES together over a QUIET_WINDOW: the reports of setting
    every probe are processed (at 1,000 clusters that backlog outlasts the last report's arrival), so the
    rounds time the path, not the queue in front of it."""
    deadline = time.monotonic() + SETTLE_DEADLINE
    while time.monotonic() < deadline:
        before = sum(tree_cpu_seconds(pid) for pid in procs.values())
        await asyncio.sleep(QUIET_WINDOW)  # a measuring window, not a synchronisation
        if (sum(tree_cpu_seconds(pid) for pid in procs.values()) - before) / QUIET_WINDOW < QUIET_CORES:
            return
    print(f"  not quiet after {SETTLE_DEADLINE:.0f} s; measuring anyway", flush=True)


async def until(seen: Seen, predicate: Callable[[], bool], timeout: float, message: str | None) -> bool:
    """Wait for the watches to deliver what ``predicate`` looks for; False (or, with a message, an error)
    when the deadline passes first."""
    deadline = time.monotonic() + timeout
    while not predicate():
        left = deadline - time.monotonic()
        if left <= 0:
            if message is not None:
                raise RuntimeError(f"not seen within {timeout:.0f} s: {message} (ready {seen.ready}, "
                                   f"sum {seen.total})")
            return False
        seen.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(seen.changed.wait(), timeout=left)
    return True


def run_fleet(n: int, rounds: int) -> FleetResult:
    result = FleetResult(clusters=n)
    with tempfile.TemporaryDirectory(prefix=f"status-bench-{n}-") as tmpdir:
        tmp = Path(tmpdir)
        hub = Hub(data_dir=tmp / "hub", port=free_port(), home=tmp / "home")
        hub.start()
        sim: FleetSim | None = None
        try:
            hub.create_space(SPACE)
            crd_path = f"/clusters/{SPACE}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
            with hub.client() as c:
                post(c, crd_path, probe_crd())
                wait_for(lambda: c.get(f"/clusters/{SPACE}/apis/{GROUP}/v1/{PLURAL}").status_code == 200,
                         timeout=60, message="the Probe CRD served")
                post(c, f"/clusters/{SPACE}/api/v1/namespaces", {"metadata": {"name": NS}})
                post(c, f"/clusters/{SPACE}/apis/{GROUP}/v1/namespaces/{NS}/{PLURAL}",
                     {"apiVersion": f"{GROUP}/v1", "kind": "Probe", "metadata": {"name": PROBE}, "spec": {}})
                post(c, f"/clusters/{SPACE}/api/v1/namespaces/{NS}/configmaps",
                     {"metadata": {"name": "floor"}, "data": {"floor": "-"}})
                post(c, f"/clusters/{SPACE}/apis/{CONTROL}/statuscollectors",
                     {"apiVersion": CONTROL, "kind": "StatusCollector", "metadata": {"name": COLLECTOR},
                      "spec": {"combinedFields": [{"name": "sum", "type": "SUM",
                                                   "subject": "returned.status.value"}]}})
            sim = fleet_sim(tmp, hub, n)
            t = time.monotonic()
            sim.start()
            wait_all_ready(hub, n, timeout=900, sim=sim)
            result.all_ready_s = time.monotonic() - t
            print(f"N={n}: all {n} syncers Ready at the hub after {result.all_ready_s:.1f} s", flush=True)
            with hub.client() as c:
                post(c, f"/clusters/{SPACE}/apis/edge.kubestellar.io/v2alpha1/edgeplacements", placement(
                    "probe", {"env": "bench"},
                    [{"apiGroup": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"],
                      "objectNames": [f"{PLURAL}.{GROUP}"]},
                     {"apiGroup": GROUP, "resources": [PLURAL], "namespaces": [NS], "statusCollectors": [COLLECTOR]}]))
            asyncio.run(measure(hub, sim, result, rounds))
            result.hub_rss = rss_mib(hub.proc.pid)  # type: ignore[union-attr]
        finally:
            if sim is not None:
                sim.stop()
                if "Traceback" in sim.log():
                    print(f"  sim log has tracebacks; last lines:\n{sim.log()[-3000:]}", flush=True)
            hub.stop()
            hub_log = hub.log_path.read_text(errors="replace")
            if "Traceback" in hub_log:
                print(f"  hub log has tracebacks; last lines:\n{hub_log[-3000:]}", flush=True)
    print(f"  N={n}: PlacementStatus p50 {ms(pct(result.summary, 50))} p99 {ms(pct(result.summary, 99))}; "
          f"CombinedStatus p50 {ms(pct(result.combined, 50))} p99 {ms(pct(result.combined, 99))}; "
          f"floor: cluster {ms(pct(result.cluster_floor, 50))}, space {ms(pct(result.space_floor, 50))}",
          flush=True)
    return result


# --- report -------------------------------------------------------------------------------------------


def write_report(fleets: list[FleetResult], rounds: int) -> None:
    big = max(fleets, key=lambda f: f.clusters)
    small = min(fleets, key=lambda f: f.clusters)
    p99_big = pct(big.both, 99)
    if big.clusters < 1000:
        aim = f"not measured at 1,000 clusters (largest run: {big.clusters:,}, p99 {ms(p99_big)})"
    else:
        aim = f"**{'met' if p99_big <= 2.0 else 'not met'}**: p99 {ms(p99_big)} at {big.clusters:,} clusters"
    cores = os.cpu_count()
    lines = [
        HEADING,
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()} ({platform.system()} "
        f"{platform.release()}), {cores} cores, Python {platform.python_version()}, SQLite. Hub, simulator (its "
        f"clusters and their syncers) and the measuring process share the {cores} cores; 1-minute "
        f"load average before each fleet started: "
        f"{', '.join(f'{f.load_before:.1f} ({f.clusters:,})' for f in fleets)}.",
        "",
        "For each fleet size N a fresh hub and a fresh `spacehub sim serve --clusters N --with-syncers` (its "
        "default `--processes auto`: "
        + ", ".join(f"{auto_processes(f.clusters)} process(es) at {f.clusters:,}" for f in fleets)
        + ") run in a "
        "temporary directory. The space holds the CRD `probes.bench.example.com` (status subresource), one "
        "Probe `app/probe` and a StatusCollector summing `returned.status.value`; one EdgePlacement sends the CRD "
        "and the Probe to every cluster and names the collector. When every cluster reports its probe Ready "
        f"with value 0 and the hub and the simulator have gone quiet (under {QUIET_CORES} cores over "
        f"{QUIET_WINDOW:.0f} s: at 1,000 clusters processing those reports outlasts their arrival), each of "
        f"{rounds} rounds (~{ROUND_SPACING:.0f} s apart, a different cluster each time) "
        "merge-PATCHes the probe's status in one simulated cluster (value 1, `Ready=False`); the measuring "
        "process watches the space's PlacementStatus and CombinedStatus of the probe and records when the ready "
        "count falls by one and when the sum rises by one (latency = arrival minus the time before the PATCH "
        "was sent). The path: cluster write → the syncer's watch → status report (batched every 0.2 s) → hub "
        "→ summary and collectors recomputed → written in the space → watch event. *Floor*, measured in the "
        f"same run ({FLOOR_SAMPLES} samples each): the path's two ends alone — a status PATCH in a simulated "
        "cluster until a watch on it there delivers it, and a PATCH in the space until a watch in the space "
        "delivers it — plus the syncer's 0.2 s batching interval.",
        "",
        "| clusters | PlacementStatus p50 / p99 | CombinedStatus p50 / p99 | both updated p50 / p99 | rounds "
        "(missed) | floor p50: cluster watch + 0.2 s + space watch | p50 over floor | hub CPU in the rounds "
        "| hub RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for f in fleets:
        floor = pct(f.cluster_floor, 50) + 0.2 + pct(f.space_floor, 50)
        lines.append(
            f"| {f.clusters:,} | {ms(pct(f.summary, 50))} / {ms(pct(f.summary, 99))} "
            f"| {ms(pct(f.combined, 50))} / {ms(pct(f.combined, 99))} | {ms(pct(f.both, 50))} / {ms(pct(f.both, 99))} "
            f"| {len(f.both)} ({f.missing}) | {ms(pct(f.cluster_floor, 50))} + 200 ms + {ms(pct(f.space_floor, 50))} "
            f"= {ms(floor)} | {pct(f.both, 50) / floor:.1f} x | {f.hub_cpu:.1f} s in {f.rounds_wall_s:.0f} s "
            f"| {f.hub_rss:.0f} MiB |")
    growth = ""
    if big is not small and small.both and big.both:
        growth = (f" From {small.clusters:,} to {big.clusters:,} clusters the p99 grows "
                  f"{pct(big.both, 99) / pct(small.both, 99):.1f} times for "
                  f"{big.clusters / small.clusters:.0f} times the clusters.")
    lines += ["", f"Aim: status round trip p99 ≤ 2 s at 1,000 clusters — {aim}.{growth}", ""]
    write_section(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", default="100,1000", help="fleet sizes, comma-separated (default 100,1000)")
    parser.add_argument("--rounds", type=int, default=30, help="status changes per fleet (default 30)")
    parser.add_argument("--no-report", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the hub and sim on the way out
    raise_open_files_limit()
    fleets = [run_fleet(int(n), args.rounds) for n in args.clusters.split(",")]
    if not args.no_report:
        write_report(fleets, args.rounds)


if __name__ == "__main__":
    main()
