"""Debugging from the hub: what relaying a pod's log and a port-forward through the hub costs.

One hub, ``spacehub sim serve`` with one cluster and its ``spacehub syncer run`` (the pod tunnel), a
StatefulSet ``web`` placed from space ``bench``. Measured both through the hub (``/clusters/bench``, the
admin's token) and directly at the simulated cluster (its own token), in the same run:

* a log's first byte: ``GET …/pods/web-0/log`` (not followed), the time until the first body byte arrives,
  over one keep-alive connection;
* a port-forward: real ``kubectl port-forward pod/web-0`` to each, then over one forwarded connection
  downloads of 4 MiB one after another (the simulated pod's ``/bytes/<n>``: throughput, MiB/s) and short
  requests one after another (requests/s: the latency of a round trip through the forward);
* what each process spent on it (``/proc/<pid>/stat``): CPU per log request and per MiB forwarded, for the
  measuring client, the hub, the syncer, the simulated cluster and kubectl.

Writes its section of docs/benchmarks.md; run with ``make bench`` or ``.venv/bin/python bench/debug_bench.py``.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import cpu_seconds, pct, self_cpu  # noqa: E402
from bench.report import write_section  # noqa: E402
from tests.harness import KUBECTL, free_port, stop_process, wait_for  # noqa: E402
from tests.processes import Output  # noqa: E402
from tests.syncer_harness import World, namespace, placement  # noqa: E402

HEADING = "## Debug from the hub (`bench/debug_bench.py`)"
SPACE, NS, POD = "bench", "shop", "web-0"
LOG_REQUESTS, WARMUP = 500, 10
FORWARD_REQUESTS = 1_000
DOWNLOAD_BYTES, DOWNLOADS = 4 * 1024 * 1024, 32
LATENCY_AIM, THROUGHPUT_AIM = 2.0, 0.5
WEB = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": NS},
       "spec": {"replicas": 1, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}}}}


Processes = dict[str, int]  # name → pid of the processes a measure's work passes through (the client is this one)


def cpu_now(processes: Processes) -> dict[str, float]:
    now = {name: cpu_seconds(pid) for name, pid in processes.items()}
    now["client"] = self_cpu()
    return now


def cpu_per(before: dict[str, float], processes: Processes, units: float) -> dict[str, float]:
    """CPU seconds per unit of work of each process since ``before``."""
    after = cpu_now(processes)
    return {name: (after[name] - before[name]) / units for name in before}


@dataclass(frozen=True)
class FirstBytes:
    seconds: list[float]
    cpu_per_request: dict[str, float]


def first_bytes(client: httpx.Client, path: str, processes: Processes) -> FirstBytes:
    samples = []
    before: dict[str, float] = {}
    for i in range(WARMUP + LOG_REQUESTS):
        if i == WARMUP:
            before = cpu_now(processes)
        start = time.perf_counter()
        with client.stream("GET", path) as response:
            if response.status_code != 200:
                raise RuntimeError(f"GET {path}: {response.status_code} {response.read()!r}")
            chunks = response.iter_raw()
            next(chunks)
            elapsed = time.perf_counter() - start
            for _rest in chunks:
                pass
        if i >= WARMUP:
            samples.append(elapsed)
    return FirstBytes(samples, cpu_per(before, processes, LOG_REQUESTS))


@dataclass(frozen=True)
class Forwarded:
    mib_per_second: float  # downloads of DOWNLOAD_BYTES, one after another
    requests_per_second: float  # short requests, one after another
    cpu_per_mib: dict[str, float]  # CPU seconds per MiB downloaded, per process (kubectl's too)


def forwarded(args: list[str], env: dict[str, str], processes: Processes) -> Forwarded:
    """Throughput and request rate over one connection through ``kubectl port-forward`` (``args`` choose where
    it goes)."""
    assert KUBECTL
    port = free_port()
    forward = Output(subprocess.Popen([KUBECTL, *args, "port-forward", "-n", NS, f"pod/{POD}", f"{port}:80"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=env))
    try:
        wait_for(lambda: "Forwarding from" in forward.text, timeout=30, message=f"port-forward: {forward.errors}")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                          limits=httpx.Limits(max_connections=1)) as http:
            for _ in range(WARMUP):
                http.get("/").raise_for_status()
            http.get(f"/bytes/{DOWNLOAD_BYTES}").raise_for_status()
            with_kubectl = {**processes, "kubectl": forward.proc.pid}
            before = cpu_now(with_kubectl)
            start = time.perf_counter()
            for _ in range(DOWNLOADS):
                response = http.get(f"/bytes/{DOWNLOAD_BYTES}")
                response.raise_for_status()
                if len(response.content) != DOWNLOAD_BYTES:
                    raise RuntimeError(f"a download brought {len(response.content)} bytes, not {DOWNLOAD_BYTES}")
            mib = DOWNLOADS * DOWNLOAD_BYTES / 2**20
            mib_per_second = mib / (time.perf_counter() - start)
            cpu_per_mib = cpu_per(before, with_kubectl, mib)
            start = time.perf_counter()
            for _ in range(FORWARD_REQUESTS):
                http.get("/").raise_for_status()
            return Forwarded(mib_per_second, FORWARD_REQUESTS / (time.perf_counter() - start), cpu_per_mib)
    finally:
        stop_process(forward.proc)


def cpu_row(per: str, path: str, cpu: dict[str, float], scale: float) -> str:
    """One row of the CPU table: ``scale`` turns seconds into the row's unit (µs: no decimals, ms: two)."""
    shown = "{:,.0f}" if scale >= 1e6 else "{:.2f}"
    cells = [shown.format(cpu[name] * scale) if name in cpu else "-"
             for name in ("client", "hub", "syncer", "cluster", "kubectl")]
    return f"| {per} | {path} | {' | '.join(cells)} | {shown.format(sum(cpu.values()) * scale)} |"


def verdict(met: bool) -> str:
    return "**met**" if met else "**not met**"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="debug-bench-") as tmp:
        world = World(Path(tmp), clusters=1).start()
        try:
            world.join("wec1", "wec1", {"env": "bench"})
            world.hub.create_space(SPACE)
            world.apply(SPACE, namespace(NS), WEB, placement("web", {"env": "bench"}, [
                {"apiGroup": "apps", "resources": ["statefulsets"], "namespaces": [NS]}]))
            log_path = f"/api/v1/namespaces/{NS}/pods/{POD}/log"
            assert world.hub.proc is not None and world.sim.proc is not None
            syncer = world.syncers["wec1"].proc
            assert syncer is not None
            processes = {"hub": world.hub.proc.pid, "syncer": syncer.pid, "cluster": world.sim.proc.pid}
            with world.hub.client() as hub, world.sim.client("wec1") as direct:
                wait_for(lambda: hub.get(f"/clusters/{SPACE}{log_path}").status_code == 200, timeout=120,
                         message="web-0's log through the hub")
                log_direct = first_bytes(direct, log_path, processes)
                log_hub = first_bytes(hub, f"/clusters/{SPACE}{log_path}", processes)
                # The floor of one Python HTTP hop on this machine: a request each server answers itself.
                version_direct = first_bytes(direct, "/version", processes).seconds
                version_hub = first_bytes(hub, f"/clusters/{SPACE}/version", processes)
            direct_forward = forwarded([], world.sim.env("wec1"), processes)
            hub_forward = forwarded(["--server", f"{world.hub.base_url}/clusters/{SPACE}"], world.hub.env, processes)
        finally:
            world.close()
    via_direct, via_hub = log_direct.seconds, log_hub.seconds
    ratio50 = pct(via_hub, 50) / pct(via_direct, 50)
    ratio99 = pct(via_hub, 99) / pct(via_direct, 99)
    share = hub_forward.mib_per_second / direct_forward.mib_per_second
    request_share = hub_forward.requests_per_second / direct_forward.requests_per_second
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_section([
        HEADING, "",
        f"Run {now} on {platform.machine()}, Python {platform.python_version()}: one hub, one simulated cluster and "
        "its syncer process (all on this machine's 2 cores, which other work may share), a StatefulSet's pod "
        "`web-0` placed from a space. Through the hub: kubectl → hub → the pod tunnel → the syncer → the "
        "cluster; directly: the cluster with its own token.", "",
        "| measure | through the hub | directly | hub / direct |",
        "|---|---:|---:|---:|",
        f"| log first byte p50 ({LOG_REQUESTS} requests) | {pct(via_hub, 50) * 1000:.1f} ms | "
        f"{pct(via_direct, 50) * 1000:.1f} ms | {ratio50:.1f} x |",
        f"| log first byte p99 | {pct(via_hub, 99) * 1000:.1f} ms | {pct(via_direct, 99) * 1000:.1f} ms | "
        f"{ratio99:.1f} x |",
        f"| `/version` first byte p50 (answered by the hub itself / by the cluster) | "
        f"{pct(version_hub.seconds, 50) * 1000:.1f} ms | {pct(version_direct, 50) * 1000:.1f} ms | "
        f"{pct(version_hub.seconds, 50) / pct(version_direct, 50):.1f} x |",
        f"| port-forward throughput, MiB/s over one connection ({DOWNLOADS} downloads of "
        f"{DOWNLOAD_BYTES // 2**20} MiB) | {hub_forward.mib_per_second:,.1f} | {direct_forward.mib_per_second:,.1f} | "
        f"{share:.0%} |",
        f"| port-forward, short requests/s over one connection ({FORWARD_REQUESTS:,}) | "
        f"{hub_forward.requests_per_second:,.0f} | {direct_forward.requests_per_second:,.0f} | {request_share:.0%} |",
        "",
        "CPU each process spent (from /proc; the client is the measuring process, httpx):", "",
        "| per | path | client | hub | syncer | cluster | kubectl | all |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        cpu_row("log request (µs)", "through the hub", log_hub.cpu_per_request, 1e6),
        cpu_row("log request (µs)", "directly", log_direct.cpu_per_request, 1e6),
        cpu_row("`/version` (µs)", "answered by the hub", version_hub.cpu_per_request, 1e6),
        cpu_row("MiB forwarded (ms)", "through the hub", hub_forward.cpu_per_mib, 1e3),
        cpu_row("MiB forwarded (ms)", "directly", direct_forward.cpu_per_mib, 1e3),
        "",
        "A log through the hub needs its pod found first: the hub asks every cluster of the space's placements "
        "for it (one round trip through each tunnel, at once) to learn which cluster shows it under that name "
        "and that the space placed its workload there; where it was found is then reused for 10 s, so of these "
        "repeated requests only the first pays it. Each other is the hub's own request (what `/version` costs "
        "it, above), two frames to the syncer and three back through the tunnel, and the syncer's own request to "
        "the cluster; every process on the way parses, encrypts, writes and is woken, and on this machine that "
        "is CPU on the request's path: the first byte comes after about as long as the four processes' CPU per "
        "request, so twice direct would need the hub, the syncer and what relaying adds at the client and the "
        "cluster together to cost no more than the whole direct request. Throughput is the simulated pod's "
        "`/bytes/<n>` downloaded through the forward: "
        "each byte is decrypted and encrypted again by the hub and by the syncer (three TLS connections against "
        "one) and framed twice more, and kubectl's side costs more per MiB when it reads from the hub than from the "
        "cluster. Short requests measure a round trip through the forward instead, where the two extra processes "
        "are latency.", "",
        "Tried on the way (2026-11-26, measured with this benchmark's CPU columns): wsproto unmasked the syncer's "
        "frames in Python, 15 % of the hub's CPU during a forward — now in C (`apiserver/server/wsmask.py`; forward "
        "96 → 157 MiB/s, with the machine quieter too); the syncer's cluster requests over one aiohttp pool instead "
        "of kr8s's httpx (`syncer/clusterhttp.py`); a tunnel window of 4 MiB instead of 1 MiB (no change); "
        "batching the frames made at once into one WebSocket message (a request's OPEN and END, a response's head "
        "and first bytes: hub CPU per log request 8 % less, first byte unchanged, forward 3 % slower from the copying; "
        "not kept); the syncer on uvloop (5 to 10 % less of its CPU, +1.3 MiB RSS against the syncer's 60 MiB budget; "
        "not kept).", "",
        f"Aims: log first byte ≤ {LATENCY_AIM:.0f} x direct — {verdict(ratio50 <= LATENCY_AIM)} at p50 "
        f"({ratio50:.1f} x), {verdict(ratio99 <= LATENCY_AIM)} at p99 ({ratio99:.1f} x); port-forward ≥ "
        f"{THROUGHPUT_AIM:.0%} of direct — {verdict(share >= THROUGHPUT_AIM)} ({share:.0%}).",
    ])


if __name__ == "__main__":
    main()
