"""Prometheus metrics of the hub process (served at /metrics).

Requests are counted as they are served; everything else is read from the hub's parts when scraped (the
gauges, and the series :meth:`HubMetrics.exposition` builds), so that the paths taken per change carry no
metric work beyond a few counters.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from apiserver.api.paths import REQUEST_INFO, RequestInfo
from apiserver.watch import WatchBus
from inventory.clusters import Inventory
from placement.service import PlacementService
from spaces.runtime import SpaceRuntime
from status.service import StatusService
from sync.server import SyncServer

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
API_LABELS = ["verb", "group", "version", "resource", "subresource", "scope"]
# Counting the stored objects reads every key of the database, so a count serves the scrapes of this many
# seconds (kube-apiserver too counts its storage once a minute).
STORAGE_COUNT_PERIOD = 60.0
# Bounds of the desired-set sizes (entries) the clusters are counted by.
DESIRED_BUCKETS = (0, 1, 10, 100, 1000, 10_000, 100_000)


class Scraped(Protocol):
    """What a scrape reads of the started hub (``hub.app.HubCore``)."""

    runtime: SpaceRuntime
    bus: WatchBus
    inventory: Inventory
    placement: PlacementService
    syncers: SyncServer
    status: StatusService


class _Families(Collector):
    """Series made afresh at each scrape: per-cluster and per-resource ones drop what is gone."""

    def __init__(self) -> None:
        self.families: Sequence[Metric] = ()

    def collect(self) -> Iterator[Metric]:
        yield from self.families


class HubMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("spacehub_http_requests_total", "HTTP requests by method and status code",
                                ["method", "code"], registry=self.registry)
        self.latency = Histogram("spacehub_http_request_duration_seconds",
                                 "Time to the first response byte", ["method"], registry=self.registry,
                                 buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
        self.commit_batch = Histogram("spacehub_store_commit_batch_size", "Writes per store transaction",
                                      registry=self.registry, buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256))
        self.commit_seconds = Histogram("spacehub_store_commit_duration_seconds",
                                        "Duration of one store transaction (including fsync)",
                                        registry=self.registry)
        self.watchers = Gauge("spacehub_watchers", "Open watch subscriptions", registry=self.registry)
        self.revision = Gauge("spacehub_store_revision", "Newest revision this process has published",
                              registry=self.registry)
        self.streams_attached = Gauge("spacehub_sync_streams_direct", "Syncer streams up to date and parked: "
                                      "the broadcaster writes their changes straight to the connection",
                                      registry=self.registry)
        self.stream_handbacks = Counter("spacehub_sync_stream_handbacks_total",
                                        "Changes the broadcaster left to a stream's own task, by reason: "
                                        "slow_reader (its connection's buffer was full) or behind_log",
                                        ["reason"], registry=self.registry)
        # kube-apiserver's names and labels, so that its dashboards and alerts read a hub's spaces too.
        self.api_requests = Counter("apiserver_request_total", "Requests to the spaces' Kubernetes API, by verb, "
                                    "group, version, resource, subresource, scope and HTTP code",
                                    [*API_LABELS, "code"], registry=self.registry)
        self.api_latency = Histogram("apiserver_request_duration_seconds", "Time to the first response byte of "
                                     "requests to the spaces' Kubernetes API (watches excluded)",
                                     API_LABELS, registry=self.registry,
                                     buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2, 3, 5,
                                              10, 30, 60))
        self.longrunning = Gauge("apiserver_longrunning_requests", "Open long-running requests to the spaces' "
                                 "Kubernetes API (watches), by verb, group, version, resource, subresource and "
                                 "scope", API_LABELS, registry=self.registry)
        self.placements = Gauge("spacehub_placements", "EdgePlacements in all workload spaces", registry=self.registry)
        self.drains = Histogram("spacehub_placement_drain_duration_seconds", "Time the placement engine's changes "
                                "took to reach the streams and listeners, per drain", registry=self.registry,
                                buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
        self.sync_targets = Gauge("spacehub_sync_targets", "Registered clusters (SyncTargets), by readiness",
                                  ["ready"], registry=self.registry)
        self.streams_open = Gauge("spacehub_sync_streams", "Syncer streams this process serves",
                                  registry=self.registry)
        self.leader = Gauge("spacehub_leader", "1 while this process holds the lease (runs the controllers and "
                            "placement writes), else 0", registry=self.registry)
        self._scraped = _Families()
        self.registry.register(self._scraped)
        self._storage: tuple[float, dict[str, int]] | None = None  # (when counted, objects by resource)
        self._counting = asyncio.Lock()
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}  # labelled series, see _child

    async def exposition(self, hub: Scraped) -> bytes:
        """The text of /metrics, with everything read from ``hub`` now (the storage counts at most
        :data:`STORAGE_COUNT_PERIOD` old)."""
        self.watchers.set(hub.bus.watcher_count())
        self.revision.set(hub.bus.latest_revision)
        self.leader.set(1 if hub.runtime.leadership.held else 0)
        streams = hub.syncers.streams
        self.streams_attached.set(streams.broadcaster.attached())
        self.streams_open.set(streams.open)
        self.placements.set(hub.placement.placement_count())
        readiness = [hub.inventory.ready(t["metadata"]["name"]) for t in hub.inventory.sync_targets()]
        for label, value in (("true", True), ("false", False), ("unknown", None)):
            self.sync_targets.labels(label).set(sum(1 for ready in readiness if ready is value))
        stored = await self._stored_objects(hub.runtime)
        # No await from here on: the series are of one moment, and a concurrent scrape cannot swap them.
        self._scraped.families = [_storage_objects(stored), *_placement_families(hub.placement),
                                  *_sync_families(hub)]
        return generate_latest(self.registry)

    async def _stored_objects(self, runtime: SpaceRuntime) -> dict[str, int]:
        async with self._counting:  # one count at a time; scrapes meanwhile take its answer
            if self._storage is None or time.monotonic() - self._storage[0] >= STORAGE_COUNT_PERIOD:
                self._storage = (time.monotonic(), await runtime.run_sync(runtime.objects.count_by_resource))
            return self._storage[1]

    def _api_request(self, info: RequestInfo, code: str, took: float) -> tuple[str, ...]:
        labels = (info.verb, info.group, info.version, info.resource, info.subresource, info.scope)
        self._child(self.api_requests, (*labels, code)).inc()
        if info.verb != "WATCH":
            self._child(self.api_latency, labels).observe(took)
        return labels

    def _child(self, metric: Any, labels: tuple[str, ...]) -> Any:
        """``metric.labels(*labels)``, remembered: prometheus_client checks and locks on every call, which on
        the request path cost more than the observation itself."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe_batch(self, size: int, seconds: float) -> None:
        self.commit_batch.observe(size)
        self.commit_seconds.observe(seconds)

    def middleware(self, app: ASGIApp) -> ASGIApp:
        async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            method = scope["method"]
            watch: Gauge | None = None  # where a watch counts as long-running until it ends

            async def send_wrapper(message: dict[str, Any]) -> None:
                nonlocal watch
                if message["type"] == "http.response.start":
                    took = time.perf_counter() - started
                    code = str(message["status"])
                    self._child(self.requests, (method, code)).inc()
                    self._child(self.latency, (method,)).observe(took)
                    info = scope.get(REQUEST_INFO)
                    if isinstance(info, RequestInfo):
                        labels = self._api_request(info, code, took)
                        if info.verb == "WATCH":
                            watch = self.longrunning.labels(*labels)
                            watch.inc()
                await send(message)

            try:
                await app(scope, receive, send_wrapper)
            finally:
                if watch is not None:
                    watch.dec()

        return wrapped


def _storage_objects(counts: dict[str, int]) -> Metric:
    family = GaugeMetricFamily("apiserver_storage_objects", "Objects stored in every space, by resource (counted "
                               f"at most every {STORAGE_COUNT_PERIOD:.0f} s)", labels=["resource"])
    for resource, count in sorted(counts.items()):
        family.add_metric([resource], count)
    return family


def _placement_families(placement: PlacementService) -> list[Metric]:
    engine = placement.engine
    by_size = dict.fromkeys(DESIRED_BUCKETS, 0)
    clusters = entries = 0
    for size, targets in engine.desired_set_sizes():
        clusters += targets
        entries += size * targets
        for bound in DESIRED_BUCKETS:
            if size <= bound:
                by_size[bound] += targets
    # Cumulative, as Prometheus buckets are; a gauge histogram: clusters move between buckets both ways.
    buckets = [(str(bound), float(by_size[bound])) for bound in DESIRED_BUCKETS] + [("+Inf", float(clusters))]
    return [
        GaugeMetricFamily("spacehub_placement_destinations", "Destinations of all EdgePlacements (their "
                          "SinglePlacementSlices' entries: one per matched Location and SyncTarget)",
                          value=engine.destination_count()),
        GaugeHistogramMetricFamily("spacehub_desired_objects", "Clusters (SyncTargets) by the number of entries "
                                   "of their desired set; _gsum: the entries of all clusters together",
                                   buckets=buckets, gsum_value=float(entries)),
        SummaryMetricFamily("spacehub_placement_write_duration_seconds", "Writes of the drained placements' "
                            "SinglePlacementSlices and statuses by the lease holder, coalesced (what clusters "
                            "get does not wait for them: see spacehub_placement_drain_duration_seconds)",
                            count_value=placement.writes, sum_value=placement.write_seconds),
    ]


def _sync_families(hub: Scraped) -> list[Metric]:
    streams = hub.syncers.streams
    changes = GaugeMetricFamily("spacehub_sync_lag_sequences", "Sequenced changes the cluster's stream has yet "
                                "to send to reach the newest of its desired set (the whole desired set while it "
                                "must start over from a snapshot; 0: up to date)", labels=["cluster"])
    seconds = GaugeMetricFamily("spacehub_sync_lag_seconds", "How long the cluster's stream has been behind: "
                                "since the first change it has not been sent reached the streams, at most since "
                                "the stream opened (0: up to date)", labels=["cluster"])
    for cluster, lag in sorted(streams.lag().items()):
        changes.add_metric([cluster], lag.changes)
        seconds.add_metric([cluster], lag.seconds)
    return [
        changes, seconds,
        CounterMetricFamily("spacehub_sync_frames_sent", "Messages (NDJSON lines) sent to the syncers' streams",
                            value=streams.frames_sent + streams.broadcaster.frames_sent),
        GaugeMetricFamily("spacehub_sync_objects_failing", "Placed objects whose cluster last reported that "
                          "applying them failed (one per object and cluster)", value=hub.status.reports.failing),
    ]
