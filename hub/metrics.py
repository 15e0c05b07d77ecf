"""Prometheus metrics of the hub process (served at /metrics)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from spaces.api.paths import REQUEST_INFO, RequestInfo

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


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
                                    ["verb", "group", "version", "resource", "subresource", "scope", "code"],
                                    registry=self.registry)
        self.api_latency = Histogram("apiserver_request_duration_seconds", "Time to the first response byte of "
                                     "requests to the spaces' Kubernetes API (watches excluded)",
                                     ["verb", "group", "version", "resource", "subresource", "scope"],
                                     registry=self.registry, buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6,
                                                                      0.8, 1.0, 1.5, 2, 3, 5, 10, 30, 60))
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

    def _api_request(self, info: RequestInfo, code: str, took: float) -> None:
        labels = (info.verb, info.group, info.version, info.resource, info.subresource, info.scope)
        self.api_requests.labels(*labels, code).inc()
        if info.verb != "WATCH":
            self.api_latency.labels(*labels).observe(took)

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

            async def send_wrapper(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    took = time.perf_counter() - started
                    code = str(message["status"])
                    self.requests.labels(method, code).inc()
                    self.latency.labels(method).observe(took)
                    info = scope.get(REQUEST_INFO)
                    if isinstance(info, RequestInfo):
                        self._api_request(info, code, took)
                await send(message)

            await app(scope, receive, send_wrapper)

        return wrapped
