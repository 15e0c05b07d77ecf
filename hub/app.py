"""Assemble the hub's ASGI application: the space runtime, inventory, placement and the sync server.

``HubCore`` composes the long-lived pieces on the space runtime (``spaces.runtime``) and owns
their start-up and shut-down order; ``build_app`` wraps it in routes (the spaces' Kubernetes API, the
desired-set view, the placement REST API, the syncer API, the web UI, probes, metrics) and middleware
(authentication, the in-flight limit, metrics). Tests and benchmarks run the very same app through
uvicorn.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from apiserver.api.asgi import (
    METHODS,
    STATUS_HANDLERS,
    lifespan_of,
    probe_routes,
    send_status,
    space_path_aliases,
    spaces_first,
    version_info,
)
from apiserver.api.handlers import SpaceAPI
from apiserver.controllers.serviceaccounts import MANAGER as NAMESPACE_DEFAULTS_MANAGER
from apiserver.controllers.serviceaccounts import NamespaceDefaults
from apiserver.identity import ADMINS
from apiserver.server.gcpolicy import loading
from debug.fleet import ClusterPods
from debug.routes import claims, pod_routes, space_pod_type
from hub.access import EndpointAuthorization
from hub.auth import UNAUTHENTICATED_PATHS, TokenAuth
from hub.limits import InflightLimit
from hub.metrics import HubMetrics
from hub.providers import KubeSpaceProviders
from hub.satokens import ServiceAccountTokens
from hub.users import UserTokens
from hub.users_api import user_routes
from inventory.clusters import Inventory
from inventory.credentials import SYNCERS, SyncerCredentials
from inventory.health import Heartbeats
from inventory.kinds import inventory_types
from inventory.registration import Registration
from placement.apidocs import public_paths
from placement.autoscaling import FleetAutoscaler
from placement.desired_view import DesiredSetAPI
from placement.kinds import placement_types
from placement.service import PlacementService
from spaces.apibinding.index import BindingIndex
from spaces.apibinding.kinds import ENDPOINT_PREFIX, apibinding_types
from spaces.apibinding.resolve import ExportRef
from spaces.apibinding.wiring import APIBindings
from spaces.kind import spaces_catalog
from spaces.providers.proxy import kube_spaces_first
from spaces.runtime import RuntimeSettings, SpaceRuntime
from spaces.seeding import SpaceDefaults
from status.kinds import status_types
from status.objectstatus import MARKER as OBJECT_STATUS_MARKER
from status.service import StatusService
from sync.routes import keeping_server_send, streams_unlimited, syncer_routes
from sync.server import SyncServer
from ui.routes import public_paths as ui_public_paths
from ui.routes import ui_routes

log = logging.getLogger(__name__)
PLACEMENT_API = "/placement/v1"  # where the placement REST API is mounted


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
        self.catalog = spaces_catalog(
            extra_types=inventory_types() + placement_types() + status_types() + apibinding_types(),
            upstream_types=(space_pod_type(),), nested_spaces=True)
        self.runtime = SpaceRuntime(self.catalog, RuntimeSettings(
            db_url=settings.db_url, public_url=settings.public_url, compact_horizon=settings.compact_horizon,
            compact_interval=settings.compact_interval, rbac=True, privileged_groups=(ADMINS, SYNCERS)),
            observe_batch=self.metrics.observe_batch)
        self.ready = False
        self.providers: KubeSpaceProviders | None = None  # kube spaces, once started

    async def start(self) -> None:
        with loading():
            await self._start()

    async def _start(self) -> None:
        runtime = self.runtime
        await runtime.open()
        self.objects, self.bus = runtime.objects, runtime.bus
        runtime.marked_rows.want(OBJECT_STATUS_MARKER)  # read in the runtime's one pass at start
        await runtime.start()
        settings = self.settings
        await runtime.ensure_space(settings.inventory_space, manager="spacehub")
        self.credentials = await runtime.run_sync(SyncerCredentials, runtime.store.engine)
        self.users = await runtime.run_sync(UserTokens, runtime.store.engine)
        await runtime.run_sync(self.users.adopt_admin, settings.admin_token)
        self.service_accounts = await runtime.run_sync(ServiceAccountTokens, runtime.store.engine, runtime.store,
                                                       self.users)
        seeder = runtime.spaces.seeder
        self.namespace_defaults = NamespaceDefaults(self.objects, self.catalog, runtime.namespaces, settings.ca_pem,
                                                    lambda space: runtime.spaces.phase(space) == "Active" and
                                                    space not in runtime.spaces.kube_spaces,
                                                    seeder.seeding.__contains__)
        # A new space's namespaces get their ServiceAccount and root CA before the space is reported Ready.
        seeder.components.append(SpaceDefaults(NAMESPACE_DEFAULTS_MANAGER,
                                               in_namespace=self.namespace_defaults.in_namespace))
        self.inventory = Inventory(self.objects, settings.inventory_space)
        await runtime.run_sync(self.inventory.load)
        self.inventory.start()
        self.inventory.listeners.append(self.credentials)
        self.registration = Registration(self.objects, self.catalog, self.credentials, settings.inventory_space,
                                         settings.public_url, settings.ca_pem)
        self.heartbeats = Heartbeats(self.inventory, self.objects, self.catalog, settings.syncer_heartbeat_timeout)
        self.placement = PlacementService(self.objects, self.catalog, self.inventory, runtime.spaces.phase,
                                          first_seq=self.bus.latest_revision, slice_size=settings.slice_size)
        self.placement.drain_timings.append(self.metrics.drains.observe)
        await runtime.run_sync(self.placement.load)
        self.placement.start(runtime.leadership)
        self.status = StatusService(self.placement, self.inventory, self.objects, self.catalog)
        await self.status.start(runtime.marked_rows.take(OBJECT_STATUS_MARKER), runtime.leadership)
        self.syncers = SyncServer(self.placement, self.inventory, self.heartbeats, self.status, self.catalog,
                                  ping_interval=settings.sync_ping_interval)
        handbacks = self.metrics.stream_handbacks
        self.syncers.streams.broadcaster.on_handback = lambda reason: handbacks.labels(reason).inc()
        self.heartbeats.start(runtime.leadership)
        self.autoscaler = FleetAutoscaler(self.objects, self.catalog, self.placement.shares,
                                          ClusterPods(lambda: self.syncers.tunnels, lambda: self.placement).read,
                                          self.placement.is_workload_space)
        self.autoscaler.start(runtime.leadership, await runtime.run_sync(self.autoscaler.load))
        self.desired_view = DesiredSetAPI(self.placement, version_info())
        self.apibindings = APIBindings(runtime, version_info())
        await self.apibindings.start()
        self._place_bound_apis(self.apibindings.index)
        providers = KubeSpaceProviders(runtime, self.placement)
        await providers.start()
        self.providers = providers
        self.api = SpaceAPI(self.objects, self.catalog, runtime.spaces.phase, version_info(),
                            runtime.authorizer, self.service_accounts)
        # Last: its start-up read of every namespace's defaults is the hub's first work once ready, not a
        # competitor of the loads above (a namespace that lacks them now is still found: the read comes after).
        self.namespace_defaults.start(runtime.leadership)
        self.ready = True

    def _place_bound_apis(self, index: BindingIndex) -> None:
        """Tell placement what each space serves through APIBindings, now and whenever bindings change, so that a
        bound API's objects are placed like a CRD's (the provider's CRD going along with ``crdFollow``)."""
        def rebind(_exports: set[ExportRef], spaces: set[str]) -> None:
            for space in spaces:
                self.placement.set_bound(space, index.bound_resources(space))

        index.listeners.append(rebind)
        rebind(set(), set(index.binding_spaces()))

    def drain(self) -> None:
        """The server is stopping: /readyz fails from now on, and watches, syncer streams and tunnels end, so that
        their connections close within the grace period instead of holding the process up."""
        self.ready = False
        syncers = getattr(self, "syncers", None)
        if syncers is not None:
            syncers.streams.close()
            syncers.tunnels.close()
        if self.providers is not None:
            self.providers.drain()
        self.runtime.drain()

    async def stop(self) -> None:
        self.ready = False
        await self.heartbeats.stop()
        if hasattr(self, "autoscaler"):
            await self.autoscaler.stop()
        await self.status.stop()
        if self.providers is not None:
            await self.providers.stop()
        await self.placement.stop()
        await self.apibindings.stop()
        if hasattr(self, "namespace_defaults"):
            await self.namespace_defaults.stop()
        await self.runtime.stop()


class _LazyPlacementAPI:
    """The placement REST API needs the started core; build it on first use (FastAPI, which only it uses, is
    imported then too: 0.2 to 0.4 s of the hub's start otherwise)."""

    def __init__(self, core: HubCore) -> None:
        self.core = core
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None:
            from placement.api import build_placement_api

            self.app = build_placement_api(self.core.placement, self.core.inventory, self.core.registration,
                                           self.core.status, self.core.status.upsync, self.core.placement.rollouts)
        await self.app(scope, receive, send)


def build_app(settings: HubSettings) -> tuple[object, HubCore]:
    core = HubCore(settings)

    async def desired_endpoint(request: Request) -> Response:
        params = request.path_params
        if params["space"] != settings.inventory_space:
            return await core.api.handle(request, params["space"],
                                         f"synctargets/{params['target']}/{params.get('path', '')}")
        return await core.desired_view.handle(request, params["target"], params.get("path", ""))

    async def export_endpoint(request: Request) -> Response:
        params = request.path_params
        return await core.apibindings.api.handle(request, params["provider"], params["export"], params["space"],
                                                 params["path"])

    async def metrics(_request: Request) -> Response:
        return Response(await core.metrics.exposition(core), media_type=CONTENT_TYPE_LATEST)

    app = Starlette(routes=[
        *probe_routes(core, lambda: core.runtime.store_check()), Route("/metrics", metrics),
        Route("/clusters/{space}/synctargets/{target}/{path:path}", desired_endpoint, methods=METHODS),
        Mount(PLACEMENT_API, app=_LazyPlacementAPI(core)),
        Route(ENDPOINT_PREFIX + "{provider}/{export}/clusters/{space}/{path:path}", export_endpoint, methods=METHODS),
        Mount("/syncer/v1", routes=syncer_routes(lambda: core.syncers)),
        *user_routes(lambda: core.users, lambda: core.runtime.run_sync),
        *pod_routes(lambda: core.syncers.tunnels, lambda: core.placement, lambda: core.runtime.authorizer,
                    lambda: core.api),
        *ui_routes(lambda: core.placement, settings.inventory_space),
    ], lifespan=lifespan_of(core), exception_handlers=STATUS_HANDLERS)
    # A syncer's desired set (at /clusters/<space>/synctargets/…) and the clusters' pods (debug) are the router's;
    # the rest of /clusters is the spaces'.
    served = spaces_first(lambda: core.api.handle, app, lambda rest: rest.startswith("synctargets/") or claims(rest))
    # A kube space's requests, whatever their path, go to its API server (hub/providers.py).
    served = kube_spaces_first(lambda: core.providers.proxy if core.providers else None, served)
    metered = core.metrics.middleware(served)
    limited = streams_unlimited(InflightLimit(metered, settings.max_requests_inflight), metered)
    docs, docs_prefixes = public_paths(PLACEMENT_API)
    ui_pages, ui_prefixes = ui_public_paths()
    authorized = EndpointAuthorization(limited, lambda: core.runtime.authorizer, settings.inventory_space,
                                       send_status)
    wrapped = TokenAuth(authorized, lambda: core.users, lambda: core.credentials, settings.inventory_space,
                        UNAUTHENTICATED_PATHS | docs | ui_pages, docs_prefixes + ui_prefixes,
                        lambda: getattr(core, "service_accounts", None))
    # Space paths (root:org:team) become ids (org:team) before authentication scopes a syncer to its paths.
    return keeping_server_send(space_path_aliases(wrapped, ("/clusters/", f"{PLACEMENT_API}/spaces/"))), core
