"""Running syncers: one for ``spacehub syncer run``, many in one event loop for a fleet.

A fleet shares what can be shared: one state database (a row set per target) and one HTTP client
for the hub (each request carries its own syncer's token). Each syncer keeps its own cluster client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeclient.backoff import Backoff
from syncer.bootstrap import Bootstrap
from syncer.cluster import Cluster
from syncer.hubclient import HubClient, HubConnections
from syncer.relay import ClusterRelay
from syncer.state import StateStore
from syncer.syncer import Syncer, SyncerOptions
from syncer.tunnel import Tunnel

log = logging.getLogger(__name__)
# A fleet starts this many syncers at a time, each until its first SYNCED (or STARTUP_SECONDS): a
# thousand syncers connecting, listing and applying at once would time out against each other.
STARTUP_WAVE = 32
STARTUP_SECONDS = 30.0


@dataclass(frozen=True)
class SyncerSpec:
    bootstrap: Bootstrap
    kubeconfig: str | None  # None: $KUBECONFIG, else the in-cluster service account
    context: str | None = None


async def connect_cluster(spec: SyncerSpec) -> Cluster:
    """The cluster's API, waiting (with backoff) while it cannot be reached: a syncer outlives outages."""
    backoff = Backoff(0.5, 30.0)
    while True:
        try:
            return await Cluster.connect(spec.kubeconfig, spec.context)
        except (FileNotFoundError, PermissionError):
            raise  # a missing or unreadable kubeconfig will not fix itself
        except Exception as exc:  # kr8s raises httpx, SSL and plain errors for unreachable servers
            delay = backoff.next()
            log.warning("syncer %s: cannot reach its cluster (%s), again in %.1fs: %r", spec.bootstrap.sync_target,
                        spec.kubeconfig or "in-cluster", delay, exc)
            await asyncio.sleep(delay)


async def run_syncers(specs: list[SyncerSpec], state_path: Path, options: SyncerOptions | None = None,
                      metrics_listen: str | None = None) -> None:
    """Run every spec's syncer until cancelled; with ``metrics_listen`` (HOST:PORT), serve their /metrics,
    /healthz and /readyz there."""
    if not specs:
        return
    state = StateStore(state_path)
    options = options or SyncerOptions()
    hub = HubConnections.open(specs[0].bootstrap, len(specs))
    wave = asyncio.Semaphore(STARTUP_WAVE)
    clusters: list[Cluster] = []
    running: list[Syncer] = []
    observer = None
    if metrics_listen:
        # Imported only then: aiohttp's server and prometheus_client are ~3 MiB a syncer without them saves.
        from syncer.observe import serve_observer

        observer = await serve_observer(metrics_listen, lambda: running)

    async def run_one(spec: SyncerSpec) -> None:
        async with wave:
            cluster = await connect_cluster(spec)
            clusters.append(cluster)
            syncer = Syncer(spec.bootstrap, cluster, HubClient(spec.bootstrap, hub), state, options)
            running.append(syncer)
            parts = [syncer.run()]
            if options.tunnel:
                relay = ClusterRelay(cluster.http, spec.bootstrap.sync_target)
                parts.append(Tunnel(spec.bootstrap, hub.tunnels, relay).run())
            task = asyncio.create_task(_together(*parts), name=f"syncer {spec.bootstrap.sync_target}")
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(STARTUP_SECONDS):
                        await syncer.in_sync.wait()
            except asyncio.CancelledError:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise
        try:
            await task
        finally:
            task.cancel()

    try:
        await asyncio.gather(*(run_one(spec) for spec in specs))
    finally:
        if observer is not None:
            await observer.cleanup()
        await asyncio.gather(*(cluster.close() for cluster in clusters), return_exceptions=True)
        await hub.aclose()
        state.close()


async def _together(*parts: Coroutine[Any, Any, None]) -> None:
    """Run a syncer's parts (the sync loop, the tunnel) until cancelled; one failing ends the others."""
    async with asyncio.TaskGroup() as group:
        for part in parts:
            group.create_task(part)
