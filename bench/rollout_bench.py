"""Staged rollouts at fleet scale: an image change rolled out in 4 stages against the same change all at once.

One fresh hub and one ``spacehub sim serve --clusters N --with-syncers`` (default 100), every cluster
labelled ``env=bench`` and ``stage=s1…s4`` (N/4 clusters each). Two identical Deployments, ``plain/web`` and
``rolled/web`` (1 replica), each placed on every cluster: ``plain`` by an EdgePlacement without ``rollout``,
``rolled`` by one whose ``spec.rollout`` has 4 stages (one per ``stage`` label, ``maxUnavailable: "100%"``,
``soakSeconds: 0``). One watch per simulated cluster on its Deployments records when each cluster got a new
image and when it ran it (updated and available); one watch at the hub on the rolled placement records
``status.rollout``. Each round changes the image of ``plain/web`` and times it until every cluster runs it,
then changes the image of ``rolled/web`` and times it until the rollout is Complete, the hub's CPU counted
over each (from /proc, less the idle hub's rate). Also checks that the stages were gated: no cluster of stage
k+1 got the new image before every cluster of stage k ran it. Writes its section of docs/benchmarks.md.
Run with ``make bench`` or ``python bench/rollout_bench.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fleet import EDGE, FleetSim, fleet_sim, placement, post, raise_open_files_limit, wait_all_ready  # noqa: E402
from bench.measure import pct, rss_mib, tree_cpu_seconds  # noqa: E402
from bench.report import write_section  # noqa: E402
from bench.status_bench import Seen, watch  # noqa: E402
from tests.harness import Hub, free_port  # noqa: E402

SPACE = "bench"
PLAIN, ROLLED = "plain", "rolled"  # the namespace of each Deployment, and the name of its EdgePlacement
STAGES = 4
ROUND_DEADLINE = 300.0
SETTLE = 2.0  # seconds after a change is done that still count towards its CPU (status reports coming home)
IDLE_WINDOW = 5.0
CPU_AIM = 2.0  # rollout CPU per cluster-change at most this many times the plain change's
HEADING = "## Rollouts (`bench/rollout_bench.py`)"


# --- objects ------------------------------------------------------------------------------------------


def stage_of(index: int, n: int) -> int:
    """Cluster ``index`` (0-based) of ``n`` is in stage 0…3: consecutive quarters."""
    return index * STAGES // n


def web(namespace: str, image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": image}]}}}}


def web_placement(namespace: str, staged: bool) -> dict[str, Any]:
    downsync = [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": [namespace]}]
    if not staged:
        return placement(namespace, {"env": "bench"}, downsync)
    stages = [{"name": f"s{k + 1}", "clusterSelector": {"matchLabels": {"stage": f"s{k + 1}"}},
               "maxUnavailable": "100%", "soakSeconds": 0} for k in range(STAGES)]
    return placement(namespace, {"env": "bench"}, downsync,
                     rollout={"stages": stages, "progressDeadlineSeconds": 120})


def image_of(round_: int) -> str:
    return f"library/httpd:2.{round_}"


# --- watching every cluster and the rolled placement --------------------------------------------------


@dataclass
class Arrival:
    updated: float  # monotonic time the cluster's Deployment first carried the image
    ready: float | None = None  # ... and first ran it: every replica updated and available


@dataclass
class Watches:
    """Per (namespace, image): each cluster's :class:`Arrival`; the rolled placement's rollout states."""

    servers: dict[str, str]
    arrivals: dict[tuple[str, str], dict[str, Arrival]] = field(default_factory=dict)
    rollouts: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    seen: Seen = field(default_factory=Seen)  # counts the watches' reconnects

    def record(self, obj: dict[str, Any], cluster: str, now: float) -> None:
        meta = obj.get("metadata") or {}
        containers = ((((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}])
        per = self.arrivals.setdefault((meta.get("namespace", ""), containers[0].get("image", "")), {})
        arrival = per.setdefault(cluster, Arrival(updated=now))
        status = obj.get("status") or {}
        want = (obj.get("spec") or {}).get("replicas", 1)
        if arrival.ready is None and status.get("observedGeneration") == meta.get("generation") and \
                status.get("updatedReplicas") == want and status.get("availableReplicas") == want:
            arrival.ready = now
        self.changed.set()

    def on_placement(self, obj: dict[str, Any], now: float) -> None:
        state = (obj.get("status") or {}).get("rollout")
        if isinstance(state, dict):
            self.rollouts.append((now, state))
            self.changed.set()


# --- results ------------------------------------------------------------------------------------------


@dataclass
class Change:
    """One image change of one Deployment: the times from the PATCH, and the hub's CPU over it."""

    updated_last: float = float("nan")  # the last cluster carrying the new image
    ready_last: float = float("nan")  # the last cluster running it
    complete: float = float("nan")  # the rollout Complete at the hub (rolled only)
    hub_cpu: float = float("nan")  # CPU seconds, the idle hub's rate taken off
    sim_cpu: float = float("nan")
    gated: bool = True  # no cluster of stage k+1 got the image before stage k all ran it (rolled only)
    # Per stage: the hub's status.rollout first at the stage, first cluster updated, last cluster running.
    stage_spans: list[tuple[float, float, float]] = field(default_factory=list)

    @property
    def done(self) -> float:
        return self.complete if self.complete == self.complete else self.ready_last


@dataclass
class Result:
    clusters: int
    all_ready_s: float = 0.0
    idle_hub_cpu_rate: float = 0.0  # CPU seconds per second
    plain: list[Change] = field(default_factory=list)
    rolled: list[Change] = field(default_factory=list)
    warmup: dict[str, float] = field(default_factory=dict)
    hub_rss: float = float("nan")
    watch_reconnects: int = 0


# --- the run ------------------------------------------------------------------------------------------


class Bench:
    def __init__(self, hub: Hub, sim: FleetSim, result: Result, hc: httpx.AsyncClient, watches: Watches) -> None:
        self.hub, self.sim, self.result, self.hc, self.watches = hub, sim, result, hc, watches
        self.stages = {name: stage_of(i, result.clusters) for i, name in enumerate(sim.names)}
        self.revision = 1  # of rolled/web: its first content is revision 1

    def cpu(self) -> tuple[float, float]:
        return (tree_cpu_seconds(self.hub.proc.pid),  # type: ignore[union-attr]
                tree_cpu_seconds(self.sim.proc.pid))  # type: ignore[union-attr]

    async def until(self, done: Any, deadline: float, what: str) -> bool:
        """Wait, woken by every watch event, until ``done()`` or ``deadline`` (monotonic); say so every 15 s."""
        shown = time.monotonic()
        while not done():
            if time.monotonic() - shown > 15:
                shown = time.monotonic()
                self.show(what)
            self.watches.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                print(f"  timed out waiting for {what}", flush=True)
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.watches.changed.wait(), timeout=min(left, 5.0))
        return True

    def show(self, what: str) -> None:
        running = {f"{ns} {image}": f"{sum(a.ready is not None for a in per.values())}/{len(per)}"
                   for (ns, image), per in self.watches.arrivals.items()}
        state = self.watches.rollouts[-1][1] if self.watches.rollouts else {}
        print(f"  waiting for {what}: running/updated {running}; rollout {state.get('revision')} "
              f"{state.get('phase')} {state.get('stage')} {state.get('message') or ''}", flush=True)

    def running(self, namespace: str, image: str) -> dict[str, Arrival]:
        return {c: a for c, a in self.watches.arrivals.get((namespace, image), {}).items() if a.ready is not None}

    def complete_at(self, revision: int) -> float | None:
        for t, state in self.watches.rollouts:
            if state.get("revision") == revision and state.get("phase") == "Complete":
                return t
        return None

    async def change(self, namespace: str, image: str) -> Change:
        n = self.result.clusters
        out = Change()
        cpu0 = self.cpu()
        t0 = time.monotonic()
        r = await self.hc.patch(f"/clusters/{SPACE}/apis/apps/v1/namespaces/{namespace}/deployments/web",
                                content=orjson.dumps({"spec": {"template": {"spec": {"containers": [
                                    {"name": "web", "image": image}]}}}}),
                                headers={"Content-Type": "application/merge-patch+json"})
        r.raise_for_status()
        deadline = t0 + ROUND_DEADLINE
        if namespace == ROLLED:
            self.revision += 1
            await self.until(lambda: self.complete_at(self.revision) is not None, deadline,
                             f"rollout of revision {self.revision} Complete")
            complete = self.complete_at(self.revision)
            out.complete = float("nan") if complete is None else complete - t0
        await self.until(lambda: len(self.running(namespace, image)) >= n, deadline, f"{image} on {n} clusters")
        t_done = time.monotonic()
        await asyncio.sleep(SETTLE)
        cpu1 = self.cpu()
        window = time.monotonic() - t0
        out.hub_cpu = cpu1[0] - cpu0[0] - self.result.idle_hub_cpu_rate * window
        out.sim_cpu = cpu1[1] - cpu0[1]
        arrivals = self.watches.arrivals.get((namespace, image), {})
        if arrivals:
            out.updated_last = max(a.updated for a in arrivals.values()) - t0
        running = self.running(namespace, image)
        if len(running) >= n:
            out.ready_last = max(a.ready for a in running.values() if a.ready is not None) - t0
        if namespace == ROLLED:
            self.check_gates(out, arrivals, t0)
        got = len(running)
        print(f"  {namespace} {image}: {got}/{n} running, last updated {out.updated_last:.2f} s, last running "
              f"{out.ready_last:.2f} s, Complete {out.complete:.2f} s (waited {t_done - t0:.1f} s); hub CPU "
              f"{out.hub_cpu:.2f} s, sim CPU {out.sim_cpu:.2f} s; gated {out.gated}", flush=True)
        return out

    def check_gates(self, out: Change, arrivals: dict[str, Arrival], t0: float) -> None:
        for k in range(STAGES):
            members = [a for c, a in arrivals.items() if self.stages[c] == k]
            first = min((a.updated for a in members), default=float("nan")) - t0
            last = max((a.ready for a in members if a.ready is not None), default=float("nan")) - t0
            hub = next((t for t, state in self.watches.rollouts if t >= t0 and state.get("revision") == self.revision
                        and state.get("stage") == f"s{k + 1}"), float("nan")) - t0
            out.stage_spans.append((hub, first, last))
        for k in range(STAGES - 1):
            ready_k = out.stage_spans[k][2]
            first_next = out.stage_spans[k + 1][1]
            if not ready_k <= first_next:  # also False when either is missing (nan)
                out.gated = False

    async def idle_rate(self) -> float:
        cpu0, t0 = self.cpu()[0], time.monotonic()
        await asyncio.sleep(IDLE_WINDOW)
        return (self.cpu()[0] - cpu0) / (time.monotonic() - t0)


async def run_async(hub: Hub, sim: FleetSim, result: Result, rounds: int) -> None:
    n = result.clusters
    watches = Watches({name: sim.cluster_url(name) for name in sim.names})
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    hub_headers = {"Authorization": f"Bearer {hub.token}"}
    async with (httpx.AsyncClient(verify=sim.verify(), limits=limits, timeout=httpx.Timeout(120, read=None),
                                  headers={"Authorization": f"Bearer {sim.admin_token}"}) as wc,
                httpx.AsyncClient(base_url=hub.base_url, verify=hub.ssl_context(),
                                  timeout=httpx.Timeout(60, read=None), headers=hub_headers) as hc):
        tasks = [asyncio.create_task(watch(wc, f"{server}/apis/apps/v1/deployments", {},
                                           lambda obj, now, c=name: watches.record(obj, c, now), watches.seen))
                 for name, server in watches.servers.items()]
        tasks.append(asyncio.create_task(watch(hc, f"/clusters/{SPACE}/apis/{EDGE}/edgeplacements",
                                               {"fieldSelector": f"metadata.name={ROLLED}"}, watches.on_placement,
                                               watches.seen)))
        bench = Bench(hub, sim, result, hc, watches)
        try:
            deadline = time.monotonic() + 900
            for ns in (PLAIN, ROLLED):
                r = await hc.post(f"/clusters/{SPACE}/apis/{EDGE}/edgeplacements",
                                  content=orjson.dumps(web_placement(ns, ns == ROLLED)),
                                  headers={"Content-Type": "application/json"})
                r.raise_for_status()
            first = image_of(0)
            if not await bench.until(lambda: all(len(bench.running(ns, first)) >= n for ns in (PLAIN, ROLLED))
                                     and bench.complete_at(1) is not None, deadline, "the first placement"):
                raise SystemExit("the Deployments never ran everywhere")
            print(f"  both Deployments run on all {n} clusters; rollout of revision 1 Complete", flush=True)
            await asyncio.sleep(SETTLE)
            result.idle_hub_cpu_rate = await bench.idle_rate()
            print(f"  idle hub: {result.idle_hub_cpu_rate:.3f} CPU s/s", flush=True)
            for i in range(1, rounds + 2):  # round 1 warms every path up and is not counted
                for ns, into in ((PLAIN, result.plain), (ROLLED, result.rolled)):
                    change = await bench.change(ns, image_of(i))
                    if i == 1:
                        result.warmup[ns] = change.done
                    else:
                        into.append(change)
            result.watch_reconnects = watches.seen.reconnects
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def run(n: int, rounds: int) -> Result:
    result = Result(clusters=n)
    with tempfile.TemporaryDirectory(prefix=f"rollout-bench-{n}-") as tmpdir:
        tmp = Path(tmpdir)
        hub = Hub(data_dir=tmp / "hub", port=free_port(), home=tmp / "home")
        hub.start()
        sim: FleetSim | None = None
        try:
            hub.create_space(SPACE)
            with hub.client() as c:
                for ns in (PLAIN, ROLLED):
                    post(c, f"/clusters/{SPACE}/api/v1/namespaces", {"metadata": {"name": ns}})
                    post(c, f"/clusters/{SPACE}/apis/apps/v1/namespaces/{ns}/deployments", web(ns, image_of(0)))
            labels = [arg for i in range(n) for arg in ("--cluster-label", f"wec{i + 1}:stage=s{stage_of(i, n) + 1}")]
            sim = fleet_sim(tmp, hub, n, *labels)
            t = time.monotonic()
            sim.start()
            wait_all_ready(hub, n, timeout=900, sim=sim)
            result.all_ready_s = time.monotonic() - t
            print(f"N={n}: all syncers Ready at the hub after {result.all_ready_s:.1f} s", flush=True)
            asyncio.run(run_async(hub, sim, result, rounds))
            result.hub_rss = rss_mib(hub.proc.pid)  # type: ignore[union-attr]
        finally:
            for process in (sim, hub):
                if process is not None:
                    process.stop()
                    text = process.log_path.read_text(errors="replace")
                    if "Traceback" in text:
                        print(f"  {process.log_path} has tracebacks; last lines:\n{text[-3000:]}", flush=True)
    return result


# --- report -------------------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return pct([v for v in values if v == v], 50)


def write_report(result: Result, rounds: int) -> None:
    n = result.clusters
    plain_done = median([c.ready_last for c in result.plain])
    rolled_done = median([c.complete for c in result.rolled])
    rolled_running = median([c.ready_last for c in result.rolled])
    plain_cpu = median([c.hub_cpu for c in result.plain]) / n
    rolled_cpu = median([c.hub_cpu for c in result.rolled]) / n
    cpu_ratio = rolled_cpu / plain_cpu if plain_cpu > 0 else float("nan")
    gated = sum(c.gated for c in result.rolled)
    cores = os.cpu_count()
    lines = [
        HEADING,
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()} ({platform.system()} "
        f"{platform.release()}), {cores} cores, Python {platform.python_version()}, SQLite. Hub, simulator "
        f"(its clusters and their syncers, over `--processes auto`) and the measuring process share the {cores} "
        "cores, with other work on the machine.",
        "",
        f"A fresh hub and `spacehub sim serve --clusters {n} --with-syncers --ready-delay 0`, every cluster "
        f"labelled `env=bench` and `stage=s1`…`s4` ({n // STAGES} each). Two identical Deployments of 1 replica, "
        "`plain/web` and `rolled/web`, each placed on every cluster: `plain` by an EdgePlacement without `rollout` "
        "(all at once), `rolled` by one with `spec.rollout` of 4 stages (one per `stage` label, "
        "`maxUnavailable: \"100%\"`, `soakSeconds: 0`, no gate: a cluster counts once its copy is Ready). One watch "
        "per simulated cluster on its Deployments records when the cluster got each image and when it ran it "
        "(observedGeneration current, every replica updated and available); a watch at the hub on the rolled "
        f"placement records `status.rollout`. One warm-up round, then {rounds} rounds; each merge-PATCHes "
        "`plain/web`'s image and waits until every cluster runs it, then `rolled/web`'s and waits until the "
        "rollout is `Complete` at the hub (and every cluster runs it). *Hub CPU per cluster-change*: the hub "
        f"process's CPU from the PATCH until {SETTLE:.0f} s after the change was done (its clusters' status "
        f"reports coming home), less the idle hub's rate ({result.idle_hub_cpu_rate:.3f} CPU-s/s, measured over "
        f"{IDLE_WINDOW:.0f} s before), divided by {n} clusters. *Gated*: for each rolled change, no cluster of "
        "stage k+1 got the new image before every cluster of stage k ran it (times from the clusters' watches).",
        "",
        "| change | to the last cluster running it (median) | to rollout Complete (median) "
        "| hub CPU per cluster-change (median) | simulator CPU per change (median) "
        "| stages gated, as the clusters' watches saw it |",
        "|---|---:|---:|---:|---:|---:|",
        f"| all at once (`plain`) | {plain_done:.2f} s | — | {plain_cpu * 1000:.1f} ms "
        f"| {median([c.sim_cpu for c in result.plain]):.1f} s | — |",
        f"| 4 stages (`rolled`) | {rolled_running:.2f} s | {rolled_done:.2f} s | {rolled_cpu * 1000:.1f} ms "
        f"| {median([c.sim_cpu for c in result.rolled]):.1f} s | {gated} of {len(result.rolled)} |",
        "",
        "Each rolled change, per stage: the hub's `status.rollout` first naming the stage / first cluster of the "
        "stage given the image / last one running it, seconds from the PATCH (cluster times from their watches):",
        "",
        "| round | " + " | ".join(f"s{k + 1}" for k in range(STAGES)) + " | Complete | hub CPU |",
        "|---:|" + "---:|" * (STAGES + 2),
    ]
    for i, c in enumerate(result.rolled, start=1):
        spans = " | ".join(f"{h:.2f} / {a:.2f} / {b:.2f}" for h, a, b in c.stage_spans)
        lines.append(f"| {i} | {spans} | {c.complete:.2f} | {c.hub_cpu:.2f} s |")
    plain_rows = ", ".join(f"{c.ready_last:.2f} s ({c.hub_cpu:.2f} CPU-s)" for c in result.plain)
    lines += [
        "",
        f"All-at-once changes, last cluster running (hub CPU): {plain_rows}. Warm-up round (not counted): "
        + ", ".join(f"{k} {v:.2f} s" for k, v in result.warmup.items())
        + f". Hub RSS at the end {result.hub_rss:.0f} MiB; watch reconnects {result.watch_reconnects}.",
        "",
        f"Time to Complete over all at once: **{rolled_done / plain_done:.1f} x** (the last cluster running the "
        f"rolled image: {rolled_running / plain_done:.1f} x). Aim: rollout hub CPU per cluster-change ≤ "
        f"{CPU_AIM:.0f} times a plain change's — **{'met' if cpu_ratio <= CPU_AIM else 'not met'}** "
        f"({cpu_ratio:.2f} x).",
        "",
    ]
    write_section(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100, help="fleet size, a multiple of 4 (default 100)")
    parser.add_argument("--rounds", type=int, default=3, help="changes of each Deployment, warm-up apart (default 3)")
    parser.add_argument("--no-report", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    if args.clusters % STAGES:
        parser.error(f"--clusters must be a multiple of {STAGES}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the hub and the simulator on the way out
    raise_open_files_limit()
    result = run(args.clusters, args.rounds)
    for name, changes in (("plain", result.plain), ("rolled", result.rolled)):
        print(f"{name}: " + "; ".join(f"running {c.ready_last:.2f} s, Complete {c.complete:.2f} s, "
                                      f"hub CPU {c.hub_cpu:.2f} s, gated {c.gated}" for c in changes), flush=True)
    if not args.no_report:
        write_report(result, args.rounds)


if __name__ == "__main__":
    main()
