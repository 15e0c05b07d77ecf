"""Hubs of hubs: propagation and status round trip through three levels, against one level in the same run.

The topology of ``tests.hubs_harness.Tree``, every part its own process: a parent hub; two child hubs, each
with a ``spacehub sim serve --with-syncers`` of two clusters; the parent's two ``spacehub syncer run`` whose
clusters are a space of each child hub. Beside it, for the floor, one more simulated cluster registered
straight at the parent (``tier=direct``, its syncer in its simulator).

Space ``bench`` at the parent holds ConfigMap ``app/probe`` and Deployment ``web``, placed on both child hubs
together with the EdgePlacement the child hubs place them on their four clusters with, and Deployment
``solo``; the probe also goes to the direct cluster, and so does ``solo``, alone.

* Propagation: N rounds of a merge PATCH of the probe's ``data.round`` at the parent; a watch on each leaf
  cluster records when it has the round. Three levels: until all four leaves have it; one level: until the
  direct cluster has it (the same change, sent at the same instant).
* Status round trip: ``web`` scaled 1 ↔ 2 at the parent until the parent's object says ``readyReplicas`` and
  ``replicas`` equal the new count for its current generation (each child hub's aggregate of its two
  clusters, aggregated again at the parent); one level: the same with ``solo`` on the direct cluster.

Writes its section of docs/benchmarks.md; run with ``make bench`` or ``.venv/bin/python bench/hubs_bench.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import ms, pct  # noqa: E402
from bench.report import write_section  # noqa: E402
from bench.sync_bench import NS, PROBE, Watches  # noqa: E402
from syncer.syncer import SyncerOptions  # noqa: E402
from tests.harness import Hub, free_port, wait_for  # noqa: E402
from tests.hubs_harness import Tree, to_hubs, to_leaves  # noqa: E402
from tests.sim_harness import Sim  # noqa: E402
from tests.syncer_harness import configmap, deployment, namespace, placement  # noqa: E402

HEADING = "## Hubs of hubs (`bench/hubs_bench.py`)"
SPACE = "bench"
CONVERGENCE_DEADLINE = 120.0
ROUND_DEADLINE = 30.0
REPORT_BATCHING = SyncerOptions().status_interval  # seconds between a syncer's status report batches
ROUND_SPACING = 0.5  # seconds from one round's start to the next at least (pacing, not waiting for anything)


def documents() -> list[dict[str, Any]]:
    probe = {"apiGroup": "", "resources": ["configmaps"], "namespaces": [NS], "objectNames": [PROBE]}
    web = {"apiGroup": "apps", "resources": ["deployments"], "namespaces": [NS], "objectNames": ["web"]}
    solo = {"apiGroup": "apps", "resources": ["deployments"], "namespaces": [NS], "objectNames": ["solo"]}
    fan = {"apiGroup": "edge.kubestellar.io", "resources": ["edgeplacements"], "objectNames": ["to-leaves"]}
    direct = placement("direct", {"tier": "direct"}, [probe, solo], singleton=True)
    return [namespace(NS), configmap(PROBE, NS, round="0"), deployment("web", NS, replicas=1),
            deployment("solo", NS, replicas=1), to_hubs("to-hubs", [probe, web, fan]),
            to_leaves("to-leaves", [probe, web]), direct]


@dataclass
class Result:
    three_levels: list[float] = field(default_factory=list)  # propagation, seconds
    one_level: list[float] = field(default_factory=list)
    missed: int = 0
    status_three: list[float] = field(default_factory=list)
    status_one: list[float] = field(default_factory=list)
    setup_s: float = 0.0
    convergence_s: float = 0.0


async def propagation(parent: Hub, sims: dict[str, Sim], rounds: int, result: Result) -> None:
    """``sims``: "direct" and the child hubs' simulators, each watched on all of its clusters."""
    watches = {name: Watches(sim, sim.names) for name, sim in sims.items()}
    async with contextlib.AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(httpx.AsyncClient(
            base_url=sim.base_url, verify=sim.verify(), timeout=httpx.Timeout(60, read=None),
            headers={"Authorization": f"Bearer {sim.admin_token}"})) for name, sim in sims.items()}
        hub = await stack.enter_async_context(httpx.AsyncClient(
            base_url=parent.base_url, verify=parent.ssl_context(), timeout=60,
            headers={"Authorization": f"Bearer {parent.token}"}))
        opening = asyncio.Semaphore(16)
        tasks = [asyncio.create_task(w.run(clients[name], cluster, opening))
                 for name, w in watches.items() for cluster in w.names]

        async def arrived(key: str, timeout: float) -> bool:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await asyncio.gather(*(w.event_for(key).wait() for w in watches.values()))
                    return True
            return False

        try:
            t0 = time.monotonic()
            if not await arrived("0", CONVERGENCE_DEADLINE):
                raise SystemExit(f"the probe did not reach every leaf in {CONVERGENCE_DEADLINE:.0f} s")
            result.convergence_s = time.monotonic() - t0
            path = f"/clusters/{SPACE}/api/v1/namespaces/{NS}/configmaps/{PROBE}"
            for i in range(rounds + 1):
                key = str(i) if i else "warm-up"
                t0 = time.monotonic()
                r = await hub.patch(path, content=orjson.dumps({"data": {"round": key}}),
                                    headers={"Content-Type": "application/merge-patch+json"})
                r.raise_for_status()
                complete = await arrived(key, ROUND_DEADLINE)
                leaves = [at for name, w in watches.items() if name != "direct"
                          for at in w.arrivals.get(key, {}).values()]
                direct = list(watches["direct"].arrivals.get(key, {}).values())
                if i == 0:
                    continue
                if not complete:
                    result.missed += 1
                    continue
                result.three_levels.append(max(leaves) - t0)
                result.one_level.append(direct[0] - t0)
                await asyncio.sleep(max(0.0, ROUND_SPACING - (time.monotonic() - t0)))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def settled(c: httpx.Client, name: str, replicas: int) -> bool:
    """The parent's Deployment ``name`` says ``replicas`` ready and existing, for its current generation."""
    obj = c.get(f"/clusters/{SPACE}/apis/apps/v1/namespaces/{NS}/deployments/{name}").json()
    status = obj.get("status") or {}
    return status.get("observedGeneration") == obj["metadata"]["generation"] \
        and status.get("readyReplicas") == replicas and status.get("replicas") == replicas


def status_round_trips(parent: Hub, repeats: int, result: Result) -> None:
    """Scale ``web`` (three levels) and ``solo`` (one level) 1 ↔ 2 in turn; time until the status says so."""
    with parent.client() as c:
        for name in ("web", "solo"):
            wait_for(lambda name=name: settled(c, name, 1), timeout=120, interval=0.1,  # type: ignore[misc]
                     message=f"{name} ready at the parent")
        want = 1
        for _ in range(repeats):
            want = 3 - want
            for name, samples in (("web", result.status_three), ("solo", result.status_one)):
                t0 = time.monotonic()
                r = c.patch(f"/clusters/{SPACE}/apis/apps/v1/namespaces/{NS}/deployments/{name}",
                            content=orjson.dumps({"spec": {"replicas": want}}),
                            headers={"Content-Type": "application/merge-patch+json"})
                r.raise_for_status()
                wait_for(lambda name=name, want=want: settled(c, name, want), timeout=60,  # type: ignore[misc]
                         interval=0.02, message=f"{name} at {want} ready replicas at the parent")
                samples.append(time.monotonic() - t0)
                time.sleep(ROUND_SPACING)  # pacing between rounds, not waiting for anything


def run(rounds: int, status_repeats: int, workdir: Path) -> Result:
    result = Result()
    t0 = time.monotonic()
    tree = Tree(workdir)
    direct: Sim | None = None
    try:
        tree.start()
        parent = tree.parent
        direct = Sim(data_dir=workdir / "direct", port=free_port(), home=workdir / "direct-home", clusters=1,
                     extra_args=["--hub", parent.base_url, "--hub-kubeconfig", str(parent.kubeconfig),
                                 "--with-syncers", "--cluster-label", "tier=direct", "--ready-delay", "0"])
        direct.start()
        with parent.client() as c:
            wait_for(lambda: sum(1 for i in c.get("/placement/v1/clusters").json()["items"] if i["ready"]) == 3,
                     timeout=60, message="the two child hubs and the direct cluster Ready at the parent")
        result.setup_s = time.monotonic() - t0
        parent.create_space(SPACE)
        parent.kubectl("apply", "-f", "-", space=SPACE, input=yaml.safe_dump_all(documents()))
        sims = {"direct": direct, **{name: child.sim for name, child in tree.child.items()}}
        asyncio.run(propagation(parent, sims, rounds, result))
        status_round_trips(parent, status_repeats, result)
    finally:
        if direct is not None:
            direct.stop()
        tree.close()
    return result


def ratio(a: list[float], b: list[float], q: float) -> str:
    return f"{pct(a, q) / pct(b, q):.1f} x" if a and b else "n/a"


def report(result: Result, rounds: int, status_repeats: int) -> list[str]:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    return [
        HEADING, "",
        f"Run {when} on {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, SQLite; "
        f"1-minute load average at the end: {load:.1f}. Eight processes share the cores: the parent hub, two child "
        "hubs, their two simulators (two clusters each, their syncers inside), the parent's two `spacehub syncer "
        "run` writing into a space of each child hub, and one more simulator whose one cluster is registered "
        "straight at the parent (the floor); the measuring process too.", "",
        f"*Propagation* ({rounds} rounds after a warm-up, {result.missed} missed): a merge PATCH of ConfigMap "
        "`app/probe` at the parent, until a watch on each leaf cluster delivers it; three levels: until all four "
        "leaves have it (parent → its syncer → child hub → its syncers → clusters), one level: until the direct "
        f"cluster has it, the same change. *Status round trip* ({status_repeats} each, in turn): a Deployment "
        "scaled 1 ↔ 2 at the parent, until the parent's object says that many ready and existing replicas for "
        "its current generation, polled every 20 ms; three levels: `web`, whose status at the parent aggregates "
        "the two child hubs' objects, each the aggregate of its two clusters; one level: `solo` on the direct "
        "cluster.", "",
        "| path | propagation p50 / p99 | status round trip p50 / p99 |",
        "|---|---:|---:|",
        f"| three levels: parent → child hubs → 4 clusters | {ms(pct(result.three_levels, 50))} / "
        f"{ms(pct(result.three_levels, 99))} | {ms(pct(result.status_three, 50))} / "
        f"{ms(pct(result.status_three, 99))} |",
        f"| one level: parent → 1 cluster (floor) | {ms(pct(result.one_level, 50))} / "
        f"{ms(pct(result.one_level, 99))} | {ms(pct(result.status_one, 50))} / {ms(pct(result.status_one, 99))} |",
        f"| three levels / one level | {ratio(result.three_levels, result.one_level, 50)} / "
        f"{ratio(result.three_levels, result.one_level, 99)} | {ratio(result.status_three, result.status_one, 50)} / "
        f"{ratio(result.status_three, result.status_one, 99)} |", "",
        "Going down, a child hub is one more cluster to its parent and one more hub to its clusters: the second "
        "hop repeats the first (a syncer's server-side apply, here into the child hub's space, then that hub's "
        "placement and its syncers' streams), and the slower of four leaves is waited for, so three levels take "
        f"{ratio(result.three_levels, result.one_level, 50)} the time of one at p50. Coming up, each hop waits "
        f"for its syncer's report batching ({REPORT_BATCHING * 1000:.0f} ms, most of the one-level round trip's "
        f"{ms(pct(result.status_one, 50))}) and a hub writing status from the reports: the child hub writes the "
        "aggregate of its clusters on its object, the parent's syncer watching that object reports it, and the "
        f"parent writes it on its own; two such hops, {ratio(result.status_three, result.status_one, 50)} one.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50, help="propagation rounds (default 50)")
    parser.add_argument("--status-rounds", type=int, default=20, help="status round trips per path (default 20)")
    parser.add_argument("--no-report", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hubs-bench-") as tmp:
        result = run(args.rounds, args.status_rounds, Path(tmp))
    section = report(result, args.rounds, args.status_rounds)
    print("\n".join(section), flush=True)
    if not args.no_report:
        write_section(section)


if __name__ == "__main__":
    main()
