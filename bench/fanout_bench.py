"""Fan-out: one object changed in a space, delivered to N clusters' syncer streams, against its floor.

For each N, a fresh hub (SQLite, pings every 300 s so that only the change is measured) with one space
holding a ConfigMap of about 900 bytes and an EdgePlacement sending it to every cluster labelled
``env=bench``; N clusters registered through ``POST /placement/v1/clusters``; N raw stream readers (TLS
connections reading ``/syncer/v1/targets/NAME/stream`` — no simulator, no syncer logic) in this process.
Once the hub has gone idle after the set-up (its registration's tail: each cluster's Location status and "Placed"
Event, a few seconds of writes at 1,000 that otherwise overlap the first rounds) and after two warm-up rounds,
each round merge-PATCHes the ConfigMap with a fresh marker and records when each reader sees it: the time to
the last cluster, the hub's CPU per cluster-change (its CPU over the rounds divided by rounds * N) and its RSS.

The floor, in the same run (once the hub has gone idle after the readers closed): a minimal asyncio TLS
server (another process, the hub's certificate, the same event loop policy as the hub) holding N connections
from the same readers writes one chunk of the same size to each of them per round, triggered over a control
socket. The ratio hub / floor is what the hub adds to writing the bytes. Writes its section of
docs/benchmarks.md; ``--chart`` also draws docs/fanout.png (needs matplotlib). ``--retain-fields`` measures a
variant (printed only): the placement's downsync test gives field ownership, so every copy carries the
ownership annotations.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import platform
import secrets
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fleet import raise_open_files_limit  # noqa: E402
from bench.measure import cpu_seconds, cpu_when_idle, pct, rss_mib  # noqa: E402
from bench.report import REPORT, write_section  # noqa: E402
from tests.harness import Hub, free_port, wait_for  # noqa: E402

SPACE, NS, CONFIGMAP = "bench", "app", "payload"
HEADING = "## Fan-out (`bench/fanout_bench.py`)"
PAYLOAD_BYTES = 700  # of data, so that an UPSERT line is about 900 bytes
CONNECT_BATCH = 100  # connections opened at once
ROUND_DEADLINE = 120.0
WARM_UP_ROUNDS = 2
IDLE_DEADLINE_S = 300.0  # how long to wait for the hub to go idle after the set-up
CHART = ROOT / "docs" / "fanout.png"


# --- readers ---------------------------------------------------------------------------------------


class Readers:
    """N connections, each noting when the current marker first appears in what it receives."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.marker = b""
        self.arrivals: list[float | None] = [None] * n
        self.count = 0
        self.all_seen = asyncio.Event()
        self.transports: list[asyncio.Transport] = []

    def expect(self, marker: bytes) -> None:
        self.marker = marker
        self.arrivals = [None] * self.n
        self.count = 0
        self.all_seen = asyncio.Event()

    def seen(self, index: int) -> None:
        if self.arrivals[index] is None:
            self.arrivals[index] = time.perf_counter()
            self.count += 1
            if self.count == self.n:
                self.all_seen.set()

    async def connect(self, host: str, port: int, context: ssl.SSLContext, request: list[bytes]) -> None:
        loop = asyncio.get_running_loop()
        for start in range(0, self.n, CONNECT_BATCH):
            batch = range(start, min(self.n, start + CONNECT_BATCH))
            opened = await asyncio.gather(*(loop.create_connection(
                lambda i=i: _Reader(self, i), host, port, ssl=context) for i in batch))
            for (transport, _), i in zip(opened, batch, strict=True):
                transport.write(request[i])
                self.transports.append(transport)

    def close(self) -> None:
        for transport in self.transports:
            transport.close()
        self.transports.clear()


class _Reader(asyncio.Protocol):
    def __init__(self, readers: Readers, index: int) -> None:
        self.readers = readers
        self.index = index
        self.tail = b""

    def data_received(self, data: bytes) -> None:
        marker = self.readers.marker
        if marker and self.readers.arrivals[self.index] is None:
            window = self.tail + data
            if marker in window:
                self.readers.seen(self.index)
            self.tail = window[-len(marker):]


# --- the hub -----------------------------------------------------------------------------------------


def configmap(marker: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP, "namespace": NS},
            "data": {"round": marker, "filler": "x" * PAYLOAD_BYTES}}


def downsync(retain_fields: bool) -> list[dict]:
    """The placement's downsync test; with ``retain_fields`` it gives field ownership, so that every copy carries
    the ownership annotations (a copy made for the clusters, not the projection itself)."""
    test = {"apiGroup": "", "resources": ["configmaps"], "namespaces": [NS]}
    return [{**test, "retainFields": ["data.filler"]}] if retain_fields else [test]


async def prepare_hub(hub: Hub, n: int, retain_fields: bool) -> None:
    hub.create_space(SPACE)
    async with httpx.AsyncClient(base_url=hub.base_url, verify=hub.ssl_context(), timeout=60,
                                 headers={"Authorization": f"Bearer {hub.token}"}) as c:
        space = f"/clusters/{SPACE}"
        for path, body in ((f"{space}/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": NS}}),
                           (f"{space}/api/v1/namespaces/{NS}/configmaps", configmap("start")),
                           (f"{space}/apis/edge.kubestellar.io/v2alpha1/edgeplacements",
                            {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement",
                             "metadata": {"name": "everywhere"},
                             "spec": {"locationSelectors": [{"matchLabels": {"env": "bench"}}],
                                      "downsync": downsync(retain_fields)}})):
            r = await c.post(path, json=body)
            assert r.status_code == 201, r.text
        gate = asyncio.Semaphore(16)

        async def register(i: int) -> None:
            async with gate:
                r = await c.post("/placement/v1/clusters", json={"name": f"c{i}", "labels": {"env": "bench"}})
                assert r.status_code == 201, r.text
        await asyncio.gather(*(register(i) for i in range(n)))


def stream_request(hub: Hub, n: int) -> list[bytes]:
    return [(f"GET /syncer/v1/targets/c{i}/stream?since=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             f"Authorization: Bearer {hub.token}\r\nAccept: application/x-ndjson\r\n\r\n").encode() for i in range(n)]


@dataclass
class Result:
    n: int
    last: list[float] = field(default_factory=list)  # per round, seconds to the last cluster
    median: list[float] = field(default_factory=list)  # per round, seconds to the median cluster
    cpu_per_change: float = float("nan")  # hub CPU seconds per cluster-change
    rss: float = float("nan")
    floor_last: list[float] = field(default_factory=list)


async def measure_hub(hub: Hub, n: int, rounds: int, result: Result,
                      profile: Path | None) -> tuple[Readers, subprocess.Popen[bytes] | None]:
    """The rounds; with ``profile``, py-spy records the hub during the counted rounds only (not the streams'
    TLS handshakes and snapshots, nor the warm-up)."""
    readers = Readers(n)
    spy: subprocess.Popen[bytes] | None = None
    readers.expect(b'"start"')  # the snapshot carries the first content
    await readers.connect("127.0.0.1", hub.port, hub.ssl_context(), stream_request(hub, n))
    await asyncio.wait_for(readers.all_seen.wait(), ROUND_DEADLINE * 5)
    assert hub.proc is not None
    # The set-up's own work first: registering N clusters leaves N Location status writes and N "Placed" Events
    # queued (one-off, about 3 s at 1,000), which would otherwise share the loop with the first rounds. A thread
    # polls the hub's CPU, so that this loop keeps reading the streams meanwhile.
    waited, cpu_before = time.perf_counter(), cpu_seconds(hub.proc.pid)
    idle_cpu = await asyncio.to_thread(cpu_when_idle, hub.proc.pid, IDLE_DEADLINE_S)
    print(f"N={n}: the hub idle {time.perf_counter() - waited:.1f} s after the streams' snapshot "
          f"({idle_cpu - cpu_before:.2f} s of its CPU meanwhile)", flush=True)
    async with httpx.AsyncClient(base_url=hub.base_url, verify=hub.ssl_context(), timeout=60,
                                 headers={"Authorization": f"Bearer {hub.token}",
                                          "Content-Type": "application/merge-patch+json"}) as c:
        cpu_before = 0.0
        for r in range(-WARM_UP_ROUNDS, rounds):
            if r == 0:
                cpu_before = cpu_seconds(hub.proc.pid)
                if profile is not None:
                    spy = subprocess.Popen([py_spy(), "record", "--pid", str(hub.proc.pid), "--format",
                                            "speedscope", "--output", str(profile), "--rate", "200"])
            marker = f"round-{r}-{secrets.token_hex(4)}"
            readers.expect(marker.encode())
            start = time.perf_counter()
            resp = await c.patch(f"/clusters/{SPACE}/api/v1/namespaces/{NS}/configmaps/{CONFIGMAP}",
                                 content=orjson.dumps({"data": {"round": marker}}))
            assert resp.status_code == 200, resp.text
            await asyncio.wait_for(readers.all_seen.wait(), ROUND_DEADLINE)
            arrivals = [a - start for a in readers.arrivals if a is not None]
            if r < 0:
                continue  # the first change after N streams connected also pays for what their start left behind
            result.last.append(max(arrivals))
            result.median.append(pct(arrivals, 50))
            print(f"  N={n} round {r}: last {result.last[-1] * 1000:.0f} ms, median {result.median[-1] * 1000:.0f} ms",
                  flush=True)
        result.cpu_per_change = (cpu_seconds(hub.proc.pid) - cpu_before) / (rounds * n)
    result.rss = rss_mib(hub.proc.pid)
    return readers, spy


# --- the floor ---------------------------------------------------------------------------------------


def floor_frame(marker: bytes) -> bytes:
    """One HTTP chunk holding an UPSERT-sized line that carries the marker."""
    line = orjson.dumps({"type": "UPSERT", "seq": 1, "entry": {"space": SPACE, "resource": "configmaps",
                                                                "namespace": NS, "name": CONFIGMAP},
                         "object": configmap(marker.decode())}) + b"\n"
    return f"{len(line):x}\r\n".encode() + line + b"\r\n"


async def serve_floor(port: int, control_port: int, cert: str, key: str) -> None:
    """The floor server: answers each stream request with chunked headers, then writes each triggered frame
    to every connection, nothing else."""
    transports: list[asyncio.Transport] = []

    class Stream(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            if b"\r\n\r\n" in data:
                self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"  # type: ignore[attr-defined]
                                     b"Transfer-Encoding: chunked\r\n\r\n")
                transports.append(self.transport)  # type: ignore[arg-type]

    async def control(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            frame = floor_frame(line.strip())
            for transport in transports:
                transport.write(frame)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    loop = asyncio.get_running_loop()
    streams = await loop.create_server(Stream, "127.0.0.1", port, ssl=context, backlog=4096)
    controls = await asyncio.start_server(control, "127.0.0.1", control_port)
    async with streams, controls:
        await asyncio.Future()


def _uvloop_run(main: object) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)  # type: ignore[arg-type]
        return
    uvloop.run(main)  # type: ignore[arg-type]


async def measure_floor(hub: Hub, readers: Readers, n: int, rounds: int, result: Result) -> None:
    port, control_port = free_port(), free_port()
    pki = hub.data_dir / "pki"
    proc = subprocess.Popen([sys.executable, __file__, "--floor-server", str(port), str(control_port),
                             str(pki / "serving.crt"), str(pki / "serving.key")])
    try:
        wait_for(lambda: _listening(control_port), timeout=30, message="the floor server")
        floor = Readers(n)
        floor.expect(b"\x00never")
        await floor.connect("127.0.0.1", port, hub.ssl_context(), [b"GET / HTTP/1.1\r\n\r\n"] * n)
        _, writer = await asyncio.open_connection("127.0.0.1", control_port)
        for r in range(rounds):
            marker = f"floor-{r}-{secrets.token_hex(4)}"
            floor.expect(marker.encode())
            start = time.perf_counter()
            writer.write(marker.encode() + b"\n")
            await writer.drain()
            await asyncio.wait_for(floor.all_seen.wait(), ROUND_DEADLINE)
            result.floor_last.append(max(a for a in floor.arrivals if a is not None) - start)
        writer.close()
        floor.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def py_spy() -> str:
    """py-spy from PATH or next to this interpreter (a virtualenv that is not activated)."""
    found = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("--profile-dir needs py-spy (pip install py-spy)")
    return found


def _listening(port: int) -> bool:
    import socket
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


# --- the run -------------------------------------------------------------------------------------


async def run_one(n: int, rounds: int, profile: Path | None, retain_fields: bool) -> Result:
    result = Result(n)
    with tempfile.TemporaryDirectory(prefix=f"fanout-bench-{n}-") as tmp:
        base = Path(tmp)
        # Raw readers neither answer pings nor send heartbeats: without these, a minute after registration the
        # hub would turn all N SyncTargets not Ready in the middle of the rounds (N writes and their placement
        # work, 0.5 s at 1,000: it was the p99), which is not what this measures.
        hub = Hub(data_dir=base / "hub", port=free_port(), home=base / "home",
                  extra_args=["--sync-ping-interval", "300", "--syncer-heartbeat-timeout", "3600"])
        hub.start()
        try:
            await prepare_hub(hub, n, retain_fields)
            print(f"N={n}: {n} clusters registered", flush=True)
            readers, spy = await measure_hub(hub, n, rounds, result, profile)
            if spy is not None:
                spy.send_signal(2)
                spy.wait(timeout=60)
            readers.close()
            # The hub's own teardown of the N streams (and the collection of what they held) must not land in
            # the floor's rounds either: the floor's process shares the cores with the hub.
            assert hub.proc is not None
            await asyncio.to_thread(cpu_when_idle, hub.proc.pid, IDLE_DEADLINE_S)
            await measure_floor(hub, readers, n, rounds, result)
        finally:
            hub.stop()
    return result


def report(results: Sequence[Result], rounds: int) -> list[str]:
    lines = [HEADING, "",
             f"Measured {dt.date.today().isoformat()} on {os.cpu_count()} cores, Python {platform.python_version()}: "
             f"{rounds} rounds per N, each one ConfigMap change (an UPSERT line of about 900 bytes) to N raw stream "
             "readers over TLS; time from the PATCH to the last reader seeing it. The floor is a bare asyncio TLS "
             "server writing a chunk of the same size to the same readers, in the same run. The readers send no "
             "heartbeats, so the hub runs with `--syncer-heartbeat-timeout 3600` (else its SyncTargets turn not "
             "Ready a minute after registration, during the rounds).", "",
             "| clusters | p50 to last | p90 | p99 | median cluster p50 | floor p99 | p99 / floor | hub CPU per "
             "cluster-change | hub RSS |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        floor = pct(r.floor_last, 99)
        lines.append(f"| {r.n:,} | {pct(r.last, 50) * 1000:,.0f} ms | {pct(r.last, 90) * 1000:,.0f} ms | "
                     f"{pct(r.last, 99) * 1000:,.0f} ms | {pct(r.median, 50) * 1000:,.0f} ms | "
                     f"{floor * 1000:,.0f} ms | {pct(r.last, 99) / floor:.1f} x | {r.cpu_per_change * 1e6:,.0f} µs | "
                     f"{r.rss:,.0f} MiB |")
    if CHART.exists():
        lines += ["", f"![fan-out latency and CPU per cluster-change vs N]({CHART.relative_to(REPORT.parent)})"]
    return lines


def chart(results: Sequence[Result]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ns = [r.n for r in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(ns, [pct(r.last, 99) * 1000 for r in results], marker="o", label="hub p99")
    left.plot(ns, [pct(r.floor_last, 99) * 1000 for r in results], marker="o", label="floor p99")
    left.set(xscale="log", yscale="log", xlabel="clusters", ylabel="ms to the last cluster")
    left.legend()
    right.plot(ns, [r.cpu_per_change * 1e6 for r in results], marker="o")
    right.set(xscale="log", xlabel="clusters", ylabel="hub CPU µs per cluster-change")
    fig.tight_layout()
    fig.savefig(CHART, dpi=100)


async def main_async(ns: list[int], rounds: int, profile_dir: Path | None, draw: bool, retain_fields: bool) -> None:
    raise_open_files_limit()
    results = []
    for n in ns:
        profile = profile_dir / f"fanout-{n}.speedscope.json" if profile_dir is not None else None
        results.append(await run_one(n, rounds, profile, retain_fields))
        r = results[-1]
        print(f"N={n}: last p50 {pct(r.last, 50) * 1000:.0f} ms p99 {pct(r.last, 99) * 1000:.0f} ms, floor p99 "
              f"{pct(r.floor_last, 99) * 1000:.0f} ms, {r.cpu_per_change * 1e6:.0f} µs/cluster-change, "
              f"RSS {r.rss:.0f} MiB", flush=True)
    if retain_fields:
        print("--retain-fields: a variant, not the table's workload; docs/benchmarks.md left as it is")
        return
    if draw:
        chart(results)
    write_section(report(results, rounds))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--floor-server":
        port, control, cert, key = sys.argv[2:6]
        _uvloop_run(serve_floor(int(port), int(control), cert, key))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", default="100,1000,10000", help="comma-separated fleet sizes")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--profile-dir", type=Path, help="record a py-spy profile of the hub per N here")
    parser.add_argument("--chart", action="store_true", help="draw docs/fanout.png (needs matplotlib)")
    parser.add_argument("--retain-fields", action="store_true",
                        help="the placement gives field ownership (retainFields), so every copy carries annotations; "
                             "printed only, not written to docs/benchmarks.md")
    args = parser.parse_args()
    _uvloop_run(main_async([int(n) for n in args.clusters.split(",")], args.rounds, args.profile_dir, args.chart,
                           args.retain_fields))


if __name__ == "__main__":
    main()
