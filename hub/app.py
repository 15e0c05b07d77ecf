"""Assemble the hub's ASGI application: storage, watch, spaces API, controllers, probes, metrics.

``HubCore`` owns the long-lived pieces and their startup/shutdown order; ``build_app`` wraps it in
routes and middleware. Tests and benchmarks run the very same app through uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from hub.auth import TokenAuth
from hub.limits import InflightLimit
from hub.metrics import HubMetrics
from hub.tokens import TokenStore
from inventory.kinds import inventory_types
from placement.api import build_placement_api
from placement.desired_view import DesiredSetAPI
from placement.kinds import placement_types
from placement.service import PlacementService
from spaces.admission.engine import AdmissionEngine
from spaces.admission.hook import AdmissionHook
from spaces.api.asgi import METHODS, STATUS_HANDLERS, lifespan_of, probe_routes, space_routes, version_info
from spaces.api.handlers import SpaceAPI
from spaces.catalog import ROOT_SPACE, Catalog
from spaces.controllers.crds import CRDController
from spaces.controllers.gc import GarbageCollector
from spaces.controllers.lifecycle import Lifecycle
from spaces.service import Objects, WriteOptions
from spaces.store import GroupCommitWriter, LogStore
from spaces.watch import WatchBus
from syncer.hubside import SyncerHub, streams_unlimited, syncer_routes

log = logging.getLogger(__name__)


@dataclass
class HubSettings:
    db_url: str
    admin_token: str
    compact_horizon: int = 10_000
    compact_interval: float = 60.0
    public_url: str = ""  # how clients reach this hub, for Space status.url and syncer bootstraps
    inventory_space: str = "inventory"
    ca_pem: bytes | None = None  # the CA syncers must trust (None when serving plain HTTP)
    max_requests_inflight: int = 400  # beyond this many concurrent non-watch requests: 429
    slice_size: int = 500  # destinations per SinglePlacementSlice
    sync_ping_interval: float = 15.0  # seconds of silence after which a sync stream sends a PING
    syncer_heartbeat_timeout: float = 60.0  # a SyncTarget without a heartbeat for this long turns Ready=False


class HubCore:
    def __init__(self, settings: HubSettings) -> None:
        self.settings = settings
        self.metrics = HubMetrics()
        self.catalog = Catalog(extra_types=inventory_types() + placement_types())
        self.ready = False
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="spacehub-read")
        self.store = await loop.run_in_executor(self.executor, LogStore, self.settings.db_url)
        start_revision = await loop.run_in_executor(self.executor, self.store.current_revision)
        self.bus = WatchBus(start_revision)
        self.writer = GroupCommitWriter(self.store, loop, self.bus.publish, self.metrics.observe_batch)
        self.objects = Objects(self.store, self.writer, self.bus, self.catalog, self.executor)
        self.lifecycle = Lifecycle(self.objects, self.catalog, self.settings.public_url)
        self.gc = GarbageCollector(self.objects, self.catalog)
        self.crds = CRDController(self.objects, self.catalog)
        self.admission = AdmissionEngine(self.store)
        await loop.run_in_executor(self.executor, self.lifecycle.load)
        await loop.run_in_executor(self.executor, self.gc.load)
        await loop.run_in_executor(self.executor, self.crds.load)
        await loop.run_in_executor(self.executor, self.admission.load)
        self.bus.add_listener(self.admission.on_commit)
        self.objects.admit = AdmissionHook(self.admission, self.objects, self.catalog)
        self.lifecycle.start()
        self.gc.start()
        self.crds.start()
        await self.lifecycle.ensure_default_namespaces(ROOT_SPACE)
        await self._ensure_inventory_space()
        self.tokens = await loop.run_in_executor(self.executor, TokenStore, self.store.engine,
                                                 self.settings.admin_token)
        self.placement = PlacementService(self.objects, self.catalog, self.tokens, self.settings.inventory_space,
                                          self.settings.public_url, self.settings.ca_pem,
                                          self.lifecycle.space_phase, first_seq=self.bus.latest_revision,
                                          slice_size=self.settings.slice_size)
        await loop.run_in_executor(self.executor, self.placement.load)
        self.placement.start()
        self.syncers = SyncerHub(self.placement, self.objects, self.catalog,
                                 ping_interval=self.settings.sync_ping_interval,
                                 heartbeat_timeout=self.settings.syncer_heartbeat_timeout)
        await self.syncers.start()
        self.desired_view = DesiredSetAPI(self.placement, version_info())
        self.api = SpaceAPI(self.objects, self.catalog, self.lifecycle.space_phase, version_info())
        self._tasks.append(asyncio.create_task(self._compact_loop(), name="compaction"))
        self.ready = True

    async def _ensure_inventory_space(self) -> None:
        name = self.settings.inventory_space
        if self.lifecycle.space_phase(name) is not None:
            return
        space_type = self.catalog.by_group_resource(ROOT_SPACE, "spaces.spacehub.io")
        assert space_type is not None
        await self.objects.create(ROOT_SPACE, space_type, "", {"metadata": {"name": name}},
                                  WriteOptions(manager="spacehub"))

    async def stop(self) -> None:
        self.ready = False
        await self.syncers.stop()
        await self.placement.stop()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.crds.stop()
        await self.gc.stop()
        await self.lifecycle.stop()
        await asyncio.get_running_loop().run_in_executor(self.executor, self.writer.stop)
        self.store.close()
        self.executor.shutdown(wait=False)

    async def _compact_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.compact_interval)
            try:
                await self.objects.run_sync(self.store.compact, self.settings.compact_horizon)
            except Exception:
                log.exception("compaction failed")


class _LazyPlacementAPI:
    """The placement REST API needs the started core; build it on first use."""

    def __init__(self, core: HubCore) -> None:
        self.core = core
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            self.app = build_placement_api(self.core.placement, self.core.syncers.reports)
        await self.app(scope, receive, send)


def build_app(settings: HubSettings) -> tuple[object, HubCore]:
    core = HubCore(settings)

    async def desired_endpoint(request: Request) -> Response:
        params = request.path_params
        if params["space"] != settings.inventory_space:
            return await core.api.handle(request, params["space"],
                                         f"synctargets/{params['target']}/{params.get('path', '')}")
        return await core.desired_view.handle(request, params["target"], params.get("path", ""))

    async def metrics(_request: Request) -> Response:
        core.metrics.watchers.set(core.bus.watcher_count())
        core.metrics.revision.set(core.bus.latest_revision)
        return Response(generate_latest(core.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app = Starlette(routes=[
        *probe_routes(core), Route("/metrics", metrics),
        Route("/clusters/{space}/synctargets/{target}/{path:path}", desired_endpoint, methods=METHODS),
        *space_routes(lambda: core.api.handle),
        Mount("/placement/v1", app=_LazyPlacementAPI(core)),
        Mount("/syncer/v1", routes=syncer_routes(lambda: core.syncers)),
    ], lifespan=lifespan_of(core), exception_handlers=STATUS_HANDLERS)
    metered = core.metrics.middleware(app)
    limited = streams_unlimited(InflightLimit(metered, settings.max_requests_inflight), metered)
    wrapped = TokenAuth(limited, lambda: core.tokens, settings.inventory_space)
    return wrapped, core
