"""Assemble the simulator's ASGI application: N simulated clusters served by one process.

``SimCore`` runs the same space runtime as the hub (``spaces.runtime``) with the simulator's
catalogue (Pods and Nodes) and controllers instead of inventory and placement. Each cluster is a space
created at startup, with the namespaces a cluster has (``default``, ``kube-system``, ``kube-public``,
``kube-node-lease``) and its nodes. ``build_app`` adds the routes (``/clusters/<name>/...`` Kubernetes
APIs, probes, the ``/sim/v1`` admin endpoint for faults and log lines) and the middleware (fault injection
outermost, then per-cluster credentials, then the pods' streaming subresources of :mod:`sim.streams`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from apimachinery.errors import StatusError, bad_request, not_found
from apimachinery.selectors import parse_label_selector
from apiserver.access import AdminsOnly
from apiserver.api.asgi import STATUS_HANDLERS, lifespan_of, probe_routes, spaces_first, version_info
from apiserver.api.handlers import SpaceAPI
from apiserver.store import Key
from sim.access import ClusterAuth
from sim.controllers import NodeShape, Simulator, StatusRule
from sim.faults import FaultError, FaultInjection, Faults, FaultTable
from sim.kinds import sim_catalog
from sim.metrics import GROUP_VERSION, pod_metrics
from sim.streams.routes import PodStreams
from sim.workers import Workers
from spaces.runtime import RuntimeSettings, SpaceRuntime

log = logging.getLogger(__name__)

MANAGER = "spacehub-sim"
# Clusters set up at once at startup (each is a handful of writes; group commit batches them).
_STARTUP_CONCURRENCY = 32


@dataclass
class SimSettings:
    db_url: str
    admin_token: str
    clusters: list[str]
    cluster_tokens: dict[str, str]
    default_shape: NodeShape = field(default_factory=NodeShape)
    shapes: dict[str, NodeShape] = field(default_factory=dict)
    ready_delay: float = 0.5
    status_rules: tuple[StatusRule, ...] = ()
    faults: dict[str, Faults] = field(default_factory=dict)
    public_url: str = ""  # how clients reach this process (cluster servers are <public_url>/clusters/<name>)
    insecure_http: bool = False  # plain HTTP: requests without credentials are accepted (see access.py)
    kubeconfigs: dict[str, str] = field(default_factory=dict)
    compact_horizon: int = 10_000
    compact_interval: float = 60.0
    # The other processes of this simulator (``--processes``), when this is the first of several.
    workers: Workers | None = None


class SimCore:
    def __init__(self, settings: SimSettings) -> None:
        self.settings = settings
        self.catalog = sim_catalog()
        self.faults = FaultTable(settings.clusters, settings.faults)
        self.runtime = SpaceRuntime(self.catalog, RuntimeSettings(
            db_url=settings.db_url, public_url=settings.public_url, compact_horizon=settings.compact_horizon,
            compact_interval=settings.compact_interval, thread_prefix="spacehub-sim-read"))
        self._ready = False
        self.streams: PodStreams | None = None  # set by build_app

    @property
    def ready(self) -> bool:
        """Every cluster is served: this process's, and those of the other processes."""
        workers = self.settings.workers
        return self._ready and (workers is None or workers.all_ready)

    async def start(self) -> None:
        runtime = self.runtime
        await runtime.open()
        self.objects = runtime.objects
        self.simulator = Simulator(self.objects, self.catalog, runtime.namespaces.phase,
                                   ready_delay=self.settings.ready_delay, shapes=self.settings.shapes,
                                   default_shape=self.settings.default_shape,
                                   kubelet_version=version_info()["gitVersion"].split("+")[0],
                                   status_rules=self.settings.status_rules,
                                   pull_fails=lambda cluster, image: self.faults.get(cluster).pull_fails(image),
                                   cpu_load=lambda cluster: self.faults.get(cluster).cpu_load)
        await runtime.start(loads=[self.simulator.load])
        self.simulator.start(sorted(runtime.spaces.phases))
        if self.streams is not None:
            self.objects.bus.add_listener(self.streams.observe)
        limit = asyncio.Semaphore(_STARTUP_CONCURRENCY)

        async def ensure(name: str) -> None:
            async with limit:
                await self._ensure_cluster(name)

        await asyncio.gather(*(ensure(name) for name in self.settings.clusters))
        self.api = SpaceAPI(self.objects, self.catalog, runtime.spaces.phase, version_info(),
                            AdminsOnly())
        self._ready = True

    async def _ensure_cluster(self, name: str) -> None:
        """The cluster's space and its nodes (every space has kube's system namespaces: the runtime makes them)."""
        if await self.runtime.ensure_space(name, manager=MANAGER) == "Terminating":
            raise RuntimeError(f"cluster {name} is being deleted (its space is terminating); start again later")
        await self.simulator.ensure_nodes(name)

    def drain(self) -> None:
        """The server is stopping: end watches and followed logs, so their connections close."""
        self.runtime.drain()
        if self.streams is not None:
            self.streams.drain()

    async def stop(self) -> None:
        self._ready = False
        await self.simulator.stop()
        await self.runtime.stop()
        log.info("spacehub sim stopped: %d cluster(s) shut down cleanly", len(self.settings.clusters))

    # --- what the pods' streams read (sim.streams.routes.PodSource) -------------------------------

    def pod(self, cluster: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.simulator.cache.get(Key(cluster, "pods", namespace, name))

    async def lookup(self, cluster: str, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        rtype = self.catalog.by_group_resource(cluster, resource)
        if rtype is None:
            return None
        try:
            return await self.objects.get(cluster, rtype, namespace, name)
        except StatusError:
            return None

    # --- admin view -----------------------------------------------------------------------------

    def cluster_info(self, name: str) -> dict[str, Any]:
        return {"name": name, "server": f"{self.settings.public_url}/clusters/{name}",
                "kubeconfig": self.settings.kubeconfigs.get(name, ""),
                "nodes": len(self.simulator.cache.nodes(name)), "faults": self.faults.get(name).to_json()}


def _status_response(err: StatusError) -> Response:
    return JSONResponse(err.to_status(), status_code=err.code)


def _redirecting(handle: Any, workers: Workers) -> Any:
    """The space API, except that a cluster of another process is a redirect there (307: any verb, same
    body); its kubeconfig names that process directly."""
    async def handle_or_redirect(request: Request, space: str, path: str) -> Response:
        owner = workers.owners.get(space)
        if owner is None:
            return await handle(request, space, path)
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(f"{owner}{request.url.path}{query}", status_code=307)
    return handle_or_redirect


def build_app(settings: SimSettings) -> tuple[object, SimCore]:
    core = SimCore(settings)

    workers = settings.workers

    async def clusters(_request: Request) -> Response:
        infos = [core.cluster_info(name) for name in settings.clusters]
        if workers is not None:
            infos += await workers.cluster_infos()
        return JSONResponse({"clusters": infos})

    async def faults(request: Request) -> Response:
        name = request.path_params["name"]
        owner = workers.owners.get(name) if workers is not None else None
        if workers is not None and owner is not None:
            answer = await workers.forward(request.method, owner, request.url.path, await request.body() or None)
            return Response(answer.content, status_code=answer.status_code, media_type="application/json")
        if name not in core.faults:
            return _status_response(not_found("clusters", "sim.spacehub.io", name))
        if request.method == "PUT":
            try:
                doc = orjson.loads(await request.body())
                new = Faults.from_json(doc)
            except (orjson.JSONDecodeError, FaultError) as exc:
                return _status_response(bad_request(f"invalid faults: {exc}"))
            core.faults.set(name, new)
            log.info("cluster %s faults: %s", name, new.to_json())
        elif request.method == "DELETE":
            core.faults.set(name, Faults())
            log.info("cluster %s faults cleared", name)
        if request.method != "GET":
            core.simulator.autoscalers.load_changed(name)
        return JSONResponse(core.faults.get(name).to_json())

    async def log_lines(request: Request) -> Response:
        name = request.path_params["name"]
        owner = workers.owners.get(name) if workers is not None else None
        if workers is not None and owner is not None:
            answer = await workers.forward("POST", owner, request.url.path, await request.body() or None)
            return Response(answer.content, status_code=answer.status_code, media_type="application/json")
        try:
            assert core.streams is not None
            return JSONResponse(core.streams.add_lines(name, request.path_params["namespace"],
                                                       request.path_params["pod"], await request.body()))
        except StatusError as exc:
            return _status_response(exc)

    async def metrics(request: Request) -> Response:
        """metrics-server's PodMetrics list of a namespace (see sim/metrics.py)."""
        name = request.path_params["name"]
        owner = workers.owners.get(name) if workers is not None else None
        if owner is not None:
            query = f"?{request.url.query}" if request.url.query else ""
            return RedirectResponse(f"{owner}{request.url.path}{query}", status_code=307)
        if name not in core.faults:
            return _status_response(not_found("clusters", "sim.spacehub.io", name))
        try:
            selector = parse_label_selector(request.query_params.get("labelSelector", ""))
        except StatusError as exc:
            return _status_response(exc)
        return JSONResponse(pod_metrics(core.simulator.cache, name, request.path_params["namespace"], selector,
                                        core.faults.get(name).cpu_load))

    app = Starlette(routes=[
        *probe_routes(core, lambda: core.runtime.store_check()),
        Route("/sim/v1/clusters", clusters),
        Route("/sim/v1/clusters/{name}/faults", faults, methods=["GET", "PUT", "DELETE"]),
        Route("/sim/v1/clusters/{name}/namespaces/{namespace}/pods/{pod}/log", log_lines, methods=["POST"]),
        Route(f"/clusters/{{name}}/apis/{GROUP_VERSION}/namespaces/{{namespace}}/pods", metrics),
    ], lifespan=lifespan_of(core), exception_handlers=STATUS_HANDLERS)
    served = spaces_first(lambda: core.api.handle if workers is None else _redirecting(core.api.handle, workers), app,
                          elsewhere=lambda rest: rest.startswith(f"apis/{GROUP_VERSION}/"))
    core.streams = PodStreams(served, core, settings.clusters, workers.owners if workers is not None else None)
    wrapped = FaultInjection(ClusterAuth(core.streams, settings.admin_token, settings.cluster_tokens,
                                         allow_anonymous=settings.insecure_http), core.faults)
    return wrapped, core
