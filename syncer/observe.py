"""What a syncer process shows its operator over HTTP (``spacehub syncer run --metrics-listen HOST:PORT``):
``/metrics`` (Prometheus) and ``/healthz`` (alive) and ``/readyz`` (every syncer of the process in sync with
the hub: 503 while one is not, e.g. the hub unreachable).

The figures are read from the syncers when scraped, so the apply path carries no metric bookkeeping beyond
two counters per syncer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


class Observed(Protocol):
    """What a syncer shows (``syncer.syncer.Syncer``)."""

    target: str
    applies: int
    apply_errors: int

    def connected(self) -> bool: ...

    def seq(self) -> int: ...

    def managed(self) -> int: ...

    def failing(self) -> int: ...


class SyncerCollector(Collector):
    def __init__(self, syncers: Callable[[], Sequence[Observed]]) -> None:
        self._syncers = syncers

    def collect(self) -> Iterator[Metric]:
        syncers = list(self._syncers())
        families = (
            (GaugeMetricFamily("spacehub_syncer_connected", "1 while the syncer's stream from the hub is in sync",
                               labels=["target"]), lambda s: 1.0 if s.connected() else 0.0),
            (GaugeMetricFamily("spacehub_syncer_seq", "The sequence number of the last message applied",
                               labels=["target"]), lambda s: float(s.seq())),
            (GaugeMetricFamily("spacehub_syncer_objects", "Objects the syncer manages in its cluster",
                               labels=["target"]), lambda s: float(s.managed())),
            (GaugeMetricFamily("spacehub_syncer_objects_failing", "Managed objects whose last apply failed",
                               labels=["target"]), lambda s: float(s.failing())),
            (CounterMetricFamily("spacehub_syncer_applies", "Objects applied to the cluster",
                                 labels=["target"]), lambda s: float(s.applies)),
            (CounterMetricFamily("spacehub_syncer_apply_errors", "Applies the cluster refused or did not answer",
                                 labels=["target"]), lambda s: float(s.apply_errors)),
        )
        for family, read in families:
            for syncer in syncers:
                family.add_metric([syncer.target], read(syncer))
            yield family


def observer_app(syncers: Callable[[], Sequence[Observed]]) -> web.Application:
    registry = CollectorRegistry()
    registry.register(SyncerCollector(syncers))

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_request: web.Request) -> web.Response:
        behind = sorted(s.target for s in syncers() if not s.connected())
        if behind:
            return web.Response(status=503, text="not in sync with the hub: " + ", ".join(behind))
        return web.Response(text="ok")

    app = web.Application()
    app.add_routes([web.get("/metrics", metrics), web.get("/healthz", healthz), web.get("/readyz", readyz)])
    return app


async def serve_observer(listen: str, syncers: Callable[[], Sequence[Observed]]) -> web.AppRunner:
    """Start serving on ``listen`` (HOST:PORT); the caller cleans the returned runner up."""
    host, _, port = listen.rpartition(":")
    runner = web.AppRunner(observer_app(syncers), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host.strip("[]") or "0.0.0.0", int(port)).start()
    return runner
