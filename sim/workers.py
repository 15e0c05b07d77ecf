"""``spacehub sim serve --processes K``: the simulated clusters spread over K processes.

One Python process runs out of CPU long before a thousand clusters with their controllers and syncers do
(they all share one GIL), so the clusters are split into K contiguous slices, one per process, each with
its own store (``sim.db`` for the first, ``sim-<k>.db`` for the others), event loop and in-process syncers.
The process started by the user serves the first slice on ``--listen`` and coordinates: it binds a socket
for each other process (handed over as a file descriptor, so no port can be taken meanwhile), writes every
cluster's kubeconfig with the server of the process that serves it, registers the fleet at the hub once,
starts the others as ``spacehub sim serve … --worker-index k --worker-fd N``, reports ready when all are,
forwards the ``/sim/v1`` admin API to the process that owns a cluster, and stops them when it stops (or
stops itself if one of them dies).

The assignment is a function of the cluster count and K only, so a restart with the same flags finds each
cluster's state again; a restart with another K starts moved clusters afresh (their syncers re-apply).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import httpx

log = logging.getLogger(__name__)

CLUSTERS_PER_PROCESS = 250  # what ``auto`` gives each process before adding one (up to the cores)
STOP_SECONDS = 20.0


def auto_processes(clusters: int) -> int:
    return max(1, min(os.cpu_count() or 1, math.ceil(clusters / CLUSTERS_PER_PROCESS)))


def parse_processes(value: str, clusters: int) -> int:
    if value == "auto":
        return auto_processes(clusters)
    count = int(value)
    if count < 1:
        raise ValueError("must be at least 1 (or auto)")
    return min(count, clusters)


def slices(names: Sequence[str], processes: int) -> list[list[str]]:
    """Contiguous, as even as can be: [wec1..wec500], [wec501..wec1000]."""
    size, extra = divmod(len(names), processes)
    out, start = [], 0
    for k in range(processes):
        end = start + size + (1 if k < extra else 0)
        out.append(list(names[start:end]))
        start = end
    return out


def bind(host: str, count: int) -> list[socket.socket]:
    """Listening sockets on free ports of ``host`` for the other processes."""
    sockets = []
    for _ in range(count):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        sock.listen(4096)
        sock.set_inheritable(True)
        sockets.append(sock)
    return sockets


class Workers:
    """The other processes of one simulator, as seen from the first: who serves which cluster, ready or not."""

    def __init__(self, owners: dict[str, str], admin_token: str, verify: Any) -> None:
        self.owners = owners  # cluster → base URL of the process serving it (other processes' clusters only)
        self.bases = sorted(set(owners.values()))
        self._admin_token = admin_token
        self._verify = verify
        self._procs: list[subprocess.Popen[bytes]] = []
        self.others_ready = not self.bases  # every other process answers /readyz
        self.all_ready = False  # … and the first one has announced the whole simulator (its /readyz turns 200)
        self._client: httpx.AsyncClient | None = None
        self._watch: asyncio.Task[None] | None = None

    def spawn(self, argv: Sequence[str], sockets: Sequence[socket.socket]) -> None:
        """Start process k (1…) for each socket: this command line plus its index and descriptor."""
        for k, sock in enumerate(sockets, start=1):
            fd = sock.fileno()
            cmd = [sys.executable, *argv, "--worker-index", str(k), "--worker-fd", str(fd)]
            self._procs.append(subprocess.Popen(cmd, pass_fds=(fd,)))
            sock.close()  # the child holds its own copy
        log.info("spacehub sim: %d more process(es) started: %s", len(self._procs), ", ".join(self.bases))

    async def start(self, on_death: Any) -> None:
        """Poll the others' /readyz until all are ready, then watch that none dies (``on_death`` is called if
        one does: the simulator is then incomplete and must not go on as if it were whole)."""
        self._client = httpx.AsyncClient(verify=self._verify, timeout=30,
                                         headers={"Authorization": f"Bearer {self._admin_token}"})
        self._watch = asyncio.create_task(self._supervise(on_death), name="sim-workers")

    async def _supervise(self, on_death: Any) -> None:
        assert self._client is not None
        while not self.others_ready:
            if self._died(on_death):
                return
            ready = []
            for base in self.bases:
                with contextlib.suppress(httpx.HTTPError):
                    ready.append((await self._client.get(f"{base}/readyz")).status_code == 200)
            self.others_ready = len(ready) == len(self.bases) and all(ready)
            await asyncio.sleep(0.2)
        log.info("spacehub sim: all processes ready")
        while not self._died(on_death):
            await asyncio.sleep(1.0)

    def _died(self, on_death: Any) -> bool:
        for proc in self._procs:
            if proc.poll() is not None:
                log.error("spacehub sim: process %d exited with %s; stopping", proc.pid, proc.returncode)
                on_death()
                return True
        return False

    async def forward(self, method: str, base: str, path: str, body: bytes | None = None) -> httpx.Response:
        assert self._client is not None
        return await self._client.request(method, f"{base}{path}", content=body,
                                          headers={"Content-Type": "application/json"} if body else None)

    async def cluster_infos(self) -> list[dict[str, Any]]:
        infos: list[dict[str, Any]] = []
        for base in self.bases:
            r = await self.forward("GET", base, "/sim/v1/clusters")
            r.raise_for_status()
            infos += r.json()["clusters"]
        return infos

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        loop = asyncio.get_running_loop()
        for proc in self._procs:
            try:
                await loop.run_in_executor(None, proc.wait, STOP_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self._client is not None:
            await self._client.aclose()
