"""Assemble the hub's ASGI application: storage, watch, spaces API, controllers, probes, metrics.

``HubCore`` owns the long-lived pieces and their startup/shutdown order; ``build_app`` wraps it in
routes and middleware. Tests and benchmarks run the very same app through uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from hub.auth import TokenAuth
from hub.metrics import HubMetrics
from spaces.admission.engine import AdmissionEngine
from spaces.admission.hook import AdmissionHook
from spaces.api.handlers import SpaceAPI
from spaces.builtin.definitions import schema_release
from spaces.catalog import ROOT_SPACE, Catalog
from spaces.controllers.crds import CRDController
from spaces.controllers.gc import GarbageCollector
from spaces.controllers.lifecycle import Lifecycle
from spaces.service import Objects
from spaces.store import GroupCommitWriter, LogStore
from spaces.watch import WatchBus

log = logging.getLogger(__name__)


@dataclass
class HubSettings:
    db_url: str
    admin_token: str
    compact_horizon: int = 10_000
    compact_interval: float = 60.0
    public_url: str = ""  # how clients reach this hub, for Space status.url


def version_info() -> dict[str, str]:
    major, minor, patch = schema_release().split(".")
    return {"major": major, "minor": minor, "gitVersion": f"v{major}.{minor}.{patch}+spacehub",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "python",
            "compiler": "cpython", "platform": "linux/amd64"}


class HubCore:
    def __init__(self, settings: HubSettings) -> None:
        self.settings = settings
        self.metrics = HubMetrics()
        self.catalog = Catalog()
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
        self.api = SpaceAPI(self.objects, self.catalog, self.lifecycle.space_phase, version_info())
        self._tasks.append(asyncio.create_task(self._compact_loop(), name="compaction"))
        self.ready = True

    async def stop(self) -> None:
        self.ready = False
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


def build_app(settings: HubSettings) -> tuple[object, HubCore]:
    core = HubCore(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await core.start()
        try:
            yield
        finally:
            await core.stop()

    async def space_endpoint(request: Request) -> Response:
        params = request.path_params
        return await core.api.handle(request, params["space"], params.get("path", ""))

    async def healthz(_request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(_request: Request) -> Response:
        return PlainTextResponse("ok") if core.ready else PlainTextResponse("starting", status_code=503)

    async def metrics(_request: Request) -> Response:
        core.metrics.watchers.set(core.bus.watcher_count())
        core.metrics.revision.set(core.bus.latest_revision)
        return Response(generate_latest(core.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def version(_request: Request) -> Response:
        return JSONResponse(version_info())

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    app = Starlette(routes=[
        Route("/healthz", healthz), Route("/livez", healthz), Route("/readyz", readyz),
        Route("/metrics", metrics), Route("/version", version),
        Route("/clusters/{space}", space_endpoint, methods=methods),
        Route("/clusters/{space}/{path:path}", space_endpoint, methods=methods),
    ], lifespan=lifespan)
    wrapped = TokenAuth(core.metrics.middleware(app), lambda: (settings.admin_token,))
    return wrapped, core
