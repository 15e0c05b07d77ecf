"""The placement REST API: clusters, desired sets, placements, objects and explain, at ``/placement/v1``.

Owns the HTTP layer only: routes, response shapes (``placement.api_models``) and turning every failure
into a Kubernetes ``Status`` body. It reads placement results from a :class:`PlacementView` (the hub
glue, ``placement.service``) and its in-memory engine; it never reads the store or computes placement
itself. Routes are relative to the mount point, so the served OpenAPI document (whose ``servers`` entry
is the mount's root path) works for a client whose base URL is ``https://<hub>/placement/v1``.

Every endpoint is ``async``: the engine is synchronous and is updated on the event loop by the glue,
so reading it from the loop (never from a worker thread) always sees a consistent state.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from fastapi import Body, FastAPI, Path
from fastapi.routing import APIRoute
from pydantic.alias_generators import to_camel

from apimachinery.errors import not_found
from inventory.kinds import EDGE_GROUP
from placement import api_models as m
from placement.api_errors import install_error_handlers
from placement.apidocs import add_docs
from placement.conflicts import Conflict
from placement.locations import LocationIndex, compile_location
from placement.model import ObjectRef
from placement.rollout_api import add_rollout_routes
from placement.rollout_runner import RolloutRunner
from placement.scheduling_api import add_scheduling_routes, check_scheduling

if TYPE_CHECKING:
    from placement.choices import Choices
    from placement.engine import PlacementEngine

log = logging.getLogger(__name__)

MOUNT_PATH = "/placement/v1"
SYNC_TARGETS = "synctargets"
PLACEMENTS = "edgeplacements"


ClusterPath = Annotated[str, Path(description="The SyncTarget's name.")]
SpacePath = Annotated[str, Path(description="The workload space.")]
PlacementPath = Annotated[str, Path(description="The EdgePlacement's name.")]
ResourcePath = Annotated[str, Path(description='The resource as plural.group ("deployments.apps"); just the '
                                               'plural for the core group ("configmaps").')]
ObjectNamePath = Annotated[str, Path(description="The object's name.")]
NamespacePath = Annotated[str, Path(description="The object's namespace.")]
ExplainBody = Annotated[m.ExplainRequest, Body(description="An EdgePlacement, or just its spec.")]


class PlacementView(Protocol):
    """What the API reads of placement; implemented by the hub glue (``placement.service.PlacementService``)."""

    inventory_space: str
    engine: PlacementEngine
    choices: Choices  # scheduled placements' choices (placement.scheduling_api)

    def placements(self, space: str) -> list[dict[str, Any]] | None:
        """The EdgePlacement objects of ``space``; None if the space does not exist."""
        ...

    def object_info(self, ref: ObjectRef) -> dict[str, Any] | None:
        """``{"kind", "apiVersion", "labels", "resourceVersion"}`` of a workload object placement records, or None."""
        ...

    def objects_of(self, space: str) -> contextlib.AbstractAsyncContextManager[None]:
        """The space's objects in ``engine`` while the block runs (placement records only those of spaces with
        EdgePlacements)."""
        ...

    async def find_object_info(self, ref: ObjectRef) -> dict[str, Any] | None:
        """``object_info``, or for an object of a space whose objects placement does not record (it has no
        EdgePlacement), the same read from the store."""
        ...

    def content_revision(self, ref: ObjectRef, target: str) -> str | None:
        """The revision of ``target``'s copy of the object (customized copies differ per cluster)."""
        ...

    def copy_error(self, ref: ObjectRef, target: str) -> str | None:
        """Why ``target`` does not get this object's copy (it keeps another one), or None."""
        ...

    def rollout_revision(self, ref: ObjectRef, target: str) -> int | None:
        """The revision number of ``target``'s copy (None: the object has no recorded revisions)."""
        ...

    def shares(self, ref: ObjectRef) -> dict[str, int] | None:
        """The replicas each cluster runs of a divided object (None: its replicas are not divided)."""
        ...

    def conflicts(self) -> list[Conflict]:
        """Every cluster object several spaces place with different content, per cluster and losing space."""
        ...

    async def reschedule(self, space: str, name: str) -> dict[str, Any]:
        """Ask for a scheduled placement's choice to be made again from scratch; the placement. 404 if absent."""
        ...


class ClusterView(Protocol):
    """The fleet as the API reads it; implemented by ``inventory.clusters.Inventory``."""

    def sync_targets(self) -> list[dict[str, Any]]:
        """Every SyncTarget object of the inventory space."""
        ...

    def locations(self) -> list[dict[str, Any]]:
        """Every Location object of the inventory space."""
        ...


class ClusterRegistry(Protocol):
    """Registering clusters; implemented by ``inventory.registration.Registration``."""

    async def register(self, name: str, labels: dict[str, str]) -> dict[str, Any]:
        """Create SyncTarget and Location ``name`` and a syncer credential; ``{"name", "bootstrap"}``."""
        ...

    async def delete(self, name: str) -> None:
        """Delete SyncTarget and Location ``name`` and revoke the credential; StatusError 404 if absent."""
        ...

    async def rotate_credentials(self, name: str, grace_seconds: float) -> dict[str, Any]:
        """A new syncer credential for ``name``; the earlier ones stop after ``grace_seconds``. 404 if absent."""
        ...

    async def schedule(self, name: str, *, unschedulable: bool, drain: bool) -> dict[str, Any]:
        """Cordon, drain or uncordon SyncTarget ``name``; the SyncTarget. StatusError 404 if absent."""
        ...

    async def taint(self, name: str, add: list[dict[str, Any]], remove: list[dict[str, Any]]) -> dict[str, Any]:
        """Put taints on SyncTarget ``name`` and take others off; the SyncTarget. StatusError 404 if absent."""
        ...


class UpsyncedCopies(Protocol):
    """Objects upsynced into a space, with each cluster's copy; implemented by the hub's status service."""

    def copies(self, space: str) -> list[tuple[ObjectRef, str | None, dict[str, dict[str, Any]]]]:
        """(object, cluster shown, {cluster: copy}) for every upsynced object of ``space``."""
        ...


class ReportedStates(Protocol):
    """The clusters' reported state of workload objects; implemented by the hub's status service."""

    def reported(self, ref: ObjectRef) -> list[dict[str, Any]]:
        """``{"cluster", "status", "error", "generation", "reported_at"}`` per cluster, sorted by cluster."""
        ...

    def summary(self, ref: ObjectRef) -> dict[str, Any] | None:
        """The object's PlacementStatus contents (``summary``, ``worstCondition``, ``clusters``), or None."""
        ...


# --- documented responses ------------------------------------------------------------------------

def _status_response(description: str) -> dict[str, Any]:
    return {"model": m.Status, "description": description}


AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _status_response("No bearer token, or one the hub does not know."),
    403: _status_response("The credential may not use this API (syncer credentials reach only their own data)."),
}
NOT_FOUND = {404: _status_response("The space, cluster, placement or object does not exist.")}
INVALID = {422: _status_response("The request does not match this schema; `details.causes` names each field.")}
BAD_REQUEST = {400: _status_response("The request body is not JSON.")}
CONFLICT = {409: _status_response("A SyncTarget or Location of that name already exists.")}

DESCRIPTION = """\
Placement in spacehub follows KubeStellar PoC2023q4 (`edge.kubestellar.io/v2alpha1`): SyncTargets and
Locations live in the inventory space, EdgePlacements and workload objects in workload spaces.

This API shows what placement resolved (destinations, selected objects, each cluster's desired set),
explains a placement before (or after) it is created, and registers clusters. Authenticate with the
hub's bearer token. Every error is a Kubernetes `Status` object.
"""


def build_placement_api(view: PlacementView, clusters: ClusterView, registry: ClusterRegistry,
                        reports: ReportedStates | None = None, upsynced: UpsyncedCopies | None = None,
                        rollouts: RolloutRunner | None = None) -> FastAPI:
    """The FastAPI application the hub mounts at ``/placement/v1`` (``rollouts``: with the staged rollouts' calls)."""
    app = FastAPI(title="spacehub placement API", version="v1", description=DESCRIPTION,
                  openapi_url="/openapi.json", docs_url=None, redoc_url=None,
                  responses=AUTH_ERRORS, generate_unique_id_function=operation_id,
                  openapi_tags=[{"name": "clusters", "description": "SyncTargets: register, list, desired sets."},
                                {"name": "placements", "description": "EdgePlacements: results and explain."},
                                {"name": "objects", "description": "Where one workload object goes."}])
    install_error_handlers(app)
    _document_security(app)
    add_docs(app)
    _add_cluster_routes(app, view, clusters, registry)
    _add_placement_routes(app, view)
    _add_object_routes(app, view, reports)
    _add_upsync_routes(app, view, upsynced)
    if rollouts is not None:
        add_rollout_routes(app, rollouts)
    add_scheduling_routes(app, view, clusters, registry, lambda t: cluster_info(t, _location_index(clusters)))
    return app


def operation_id(route: APIRoute) -> str:
    """The endpoint function's name in camelCase (``list_clusters`` → ``listClusters``)."""
    return to_camel(route.name)


# --- clusters ------------------------------------------------------------------------------------

def _add_cluster_routes(app: FastAPI, view: PlacementView, clusters: ClusterView, registry: ClusterRegistry) -> None:
    @app.get("/clusters", response_model=m.ClusterList, tags=["clusters"], summary="List clusters")
    async def list_clusters() -> m.ClusterList:
        """Every SyncTarget of the inventory space with its readiness, capacity and Locations."""
        locations = _location_index(clusters)
        return m.ClusterList(items=[cluster_info(t, locations) for t in clusters.sync_targets()])

    @app.post("/clusters", response_model=m.RegisteredCluster, status_code=201, tags=["clusters"],
              summary="Register a cluster", responses={**BAD_REQUEST, **CONFLICT, **INVALID})
    async def register_cluster(request: m.RegisterClusterRequest) -> m.RegisteredCluster:
        """Create SyncTarget and Location NAME in the inventory space (the Location selects the SyncTarget by
        its `id` label, set to NAME) and mint a credential for the cluster's syncer. The response's
        `bootstrap` is all the syncer needs; it holds a secret, so keep it safe."""
        result = await registry.register(request.name, dict(request.labels))
        return m.RegisteredCluster(name=str(result.get("name", request.name)),
                                   bootstrap=dict(result.get("bootstrap") or {}))

    @app.get("/clusters/{name}", response_model=m.Cluster, tags=["clusters"], summary="Get a cluster",
             responses={**NOT_FOUND, **INVALID})
    async def get_cluster(name: ClusterPath) -> m.Cluster:
        return cluster_info(_sync_target(clusters, name), _location_index(clusters))

    @app.delete("/clusters/{name}", response_model=m.Status, response_model_exclude_none=True,
                tags=["clusters"], summary="Delete a cluster", responses={**NOT_FOUND, **INVALID})
    async def delete_cluster(name: ClusterPath) -> m.Status:
        """Delete SyncTarget and Location NAME and revoke the syncer's credential."""
        await registry.delete(name)
        return m.Status(status="Success", code=200,
                        details=m.StatusDetails(name=name, group=EDGE_GROUP, kind=SYNC_TARGETS))

    @app.post("/clusters/{name}:rotate-credentials", response_model=m.RegisteredCluster, tags=["clusters"],
              summary="Rotate a cluster's syncer credential", responses={**BAD_REQUEST, **NOT_FOUND, **INVALID})
    async def rotate_credentials(name: ClusterPath,
                                 request: m.RotateCredentialsRequest | None = None) -> m.RegisteredCluster:
        """Mint a new credential for the cluster's syncer and return its bootstrap; the earlier credentials keep
        working for `graceSeconds` (time to hand the syncer the new bootstrap), then get 401."""
        result = await registry.rotate_credentials(name, (request or m.RotateCredentialsRequest()).grace_seconds)
        return m.RegisteredCluster(name=name, bootstrap=dict(result.get("bootstrap") or {}))

    async def reschedule(name: str, *, unschedulable: bool, drain: bool) -> m.Cluster:
        target = await registry.schedule(name, unschedulable=unschedulable, drain=drain)
        return cluster_info(target, _location_index(clusters))

    @app.post("/clusters/{name}:cordon", response_model=m.Cluster, tags=["clusters"], summary="Cordon a cluster",
              responses={**NOT_FOUND, **INVALID})
    async def cordon_cluster(name: ClusterPath) -> m.Cluster:
        """Set `spec.unschedulable`: no new placement reaches the cluster and it takes no new divided replicas;
        what it runs stays."""
        return await reschedule(name, unschedulable=True, drain=False)

    @app.post("/clusters/{name}:drain", response_model=m.Cluster, tags=["clusters"], summary="Drain a cluster",
              responses={**NOT_FOUND, **INVALID})
    async def drain_cluster(name: ClusterPath) -> m.Cluster:
        """Cordon the cluster and set `spec.evictAfter` to now: its divided replicas are started on the other
        clusters, and once those are ready everything leaves it."""
        return await reschedule(name, unschedulable=True, drain=True)

    @app.post("/clusters/{name}:uncordon", response_model=m.Cluster, tags=["clusters"],
              summary="Uncordon a cluster", responses={**NOT_FOUND, **INVALID})
    async def uncordon_cluster(name: ClusterPath) -> m.Cluster:
        """Clear `spec.unschedulable` and `spec.evictAfter`: the cluster is placed on again."""
        return await reschedule(name, unschedulable=False, drain=False)

    @app.get("/clusters/{name}/desired", response_model=m.DesiredSet, tags=["clusters"],
             summary="A cluster's desired set", responses={**NOT_FOUND, **INVALID})
    async def get_desired_set(name: ClusterPath) -> m.DesiredSet:
        """Everything the cluster must have, in apply order, with the placements that put each entry there and the
        revision of the cluster's copy (``GET /clusters/<inventory>/synctargets/<name>/…`` serves the copies
        themselves to kubectl)."""
        _sync_target(clusters, name)
        items = []
        for entry in view.engine.desired(name):
            ref = entry.ref
            info = view.object_info(ref) or {}
            items.append(m.DesiredSetEntry(
                space=ref.space, group=ref.group, resource=ref.plural, namespace=ref.namespace, name=ref.name,
                kind=str(info.get("kind") or _DEFAULT_KINDS.get(entry.kind, "")), entry_kind=entry.kind,
                implicit=entry.implicit,
                placements=[m.PlacementRef(space=s, name=n) for s, n in entry.placements],
                content_revision=None if entry.implicit else view.content_revision(ref, name),
                revision=None if entry.implicit else view.rollout_revision(ref, name),
                copy_error=view.copy_error(ref, name)))
        return m.DesiredSet(cluster=name, seq=view.engine.current_seq(name), items=items)


_DEFAULT_KINDS = {"namespace": "Namespace", "crd": "CustomResourceDefinition"}


def _sync_target(clusters: ClusterView, name: str) -> dict[str, Any]:
    for target in clusters.sync_targets():
        if (target.get("metadata") or {}).get("name") == name:
            return target
    raise not_found(SYNC_TARGETS, EDGE_GROUP, name)


def _location_index(clusters: ClusterView) -> LocationIndex:
    return LocationIndex(compile_location(obj) for obj in clusters.locations())


def cluster_info(target: Mapping[str, Any], locations: LocationIndex) -> m.Cluster:
    """A SyncTarget object as the API shows it, with the Locations (indexed once per request) reaching it."""
    meta = target.get("metadata") or {}
    status = target.get("status") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    ready = next((c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") == "Ready"),
                 None)
    condition = None
    if ready is not None:
        condition = m.Condition(type="Ready", status=str(ready.get("status", "Unknown")),
                                reason=_opt_str(ready.get("reason")), message=_opt_str(ready.get("message")),
                                last_transition_time=_opt_str(ready.get("lastTransitionTime")))
    return m.Cluster(name=str(meta.get("name", "")), uid=str(meta.get("uid", "")), labels=labels,
                     ready=condition is not None and condition.status == "True", ready_condition=condition,
                     last_heartbeat=_opt_str(status.get("lastSyncerHeartbeatTime")),
                     unschedulable=bool((target.get("spec") or {}).get("unschedulable")),
                     evict_after=_opt_str((target.get("spec") or {}).get("evictAfter")),
                     capacity=m.quantities(status.get("capacity")),
                     allocatable=m.quantities(status.get("allocatable")),
                     locations=locations.reaching(labels))


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


# --- placements ----------------------------------------------------------------------------------

def _add_placement_routes(app: FastAPI, view: PlacementView) -> None:
    @app.get("/conflicts", response_model=m.ConflictList, tags=["placements"],
             summary="Objects placed with different content by several spaces", responses={**INVALID})
    async def list_conflicts() -> m.ConflictList:
        """Per cluster, each object that more than one space places there with different content: the space
        whose copy the cluster gets (the object created first), the space whose copy it does not, and the
        fields where the copies differ."""
        return m.ConflictList(items=[m.ConflictItem(
            cluster=c.target, group=c.winner.group, resource=c.winner.plural, namespace=c.ident[1],
            name=c.ident[2], winner=c.winner.space, loser=c.loser.space, fields=list(c.fields))
            for c in view.conflicts()])

    @app.get("/spaces/{space}/placements", response_model=m.PlacementList, tags=["placements"],
             summary="List a space's placements", responses={**NOT_FOUND, **INVALID})
    async def list_placements(space: SpacePath) -> m.PlacementList:
        """Each EdgePlacement of the space with its destinations and what it selects."""
        engine = view.engine
        items = []
        for placement in _space_placements(view, space):
            name = _name(placement)
            spec = placement.get("spec") or {}
            items.append(m.PlacementSummary(
                name=name, location_selectors=m.label_selectors(spec.get("locationSelectors")),
                want_singleton_reported_state=bool(spec.get("wantSingletonReportedState")),
                destinations=[m.destination(d) for d in engine.destinations(space, name)],
                matching_location_count=engine.matching_location_count(space, name),
                selected_object_count=len(engine.selected_objects(space, name)),
                missing_crds=list(engine.missing_crds(space, name)),
                unserved_resources=engine.unserved_resources(space, name)))
        return m.PlacementList(space=space, items=items)

    @app.get("/spaces/{space}/placements/{name}", response_model=m.PlacementDetail, tags=["placements"],
             summary="One placement in detail", responses={**NOT_FOUND, **INVALID})
    async def get_placement(space: SpacePath, name: PlacementPath) -> m.PlacementDetail:
        """Destinations with the locationSelectors each Location matched, and the selected objects with the
        downsync tests each matched."""
        placement = _placement(view, space, name)
        spec = placement.get("spec") or {}
        engine = view.engine
        matched = engine.explain(space, spec).matched_locations
        destinations = [m.MatchedDestination(**m.destination(d).model_dump(),
                                             selector_indexes=sorted(matched.get(d.location_name, [])))
                        for d in engine.destinations(space, name)]
        return m.PlacementDetail(
            space=space, name=name, location_selectors=m.label_selectors(spec.get("locationSelectors")),
            downsync=m.downsync_tests(spec.get("downsync")),
            want_singleton_reported_state=bool(spec.get("wantSingletonReportedState")),
            destinations=destinations, matching_location_count=engine.matching_location_count(space, name),
            objects=m.selected_objects(engine.selected_objects(space, name), engine.followed(space, name)),
            missing_crds=list(engine.missing_crds(space, name)),
            unserved_resources=engine.unserved_resources(space, name))

    @app.post("/spaces/{space}/placements:explain", response_model=m.PlacementExplanation, tags=["placements"],
              summary="Explain a placement", responses={**NOT_FOUND, **BAD_REQUEST, **INVALID})
    async def explain_placement(space: SpacePath, body: ExplainBody) -> m.PlacementExplanation:
        """What this EdgePlacement would select in the space (nothing is created), and for everything it
        does not select, why: each Location's and object's reasons per selector and test."""
        _space_placements(view, space)
        spec = body.spec if isinstance(body, m.EdgePlacement) else body
        checked = check_scheduling(spec.model_dump(by_alias=True, exclude_unset=True))
        async with view.objects_of(space):
            result = view.engine.explain(space, checked)
        return m.PlacementExplanation(
            destinations=[m.destination(d) for d in result.destinations],
            matched_locations=[m.MatchedLocation(location=name, selector_indexes=sorted(indexes))
                               for name, indexes in sorted(result.matched_locations.items())],
            location_mismatches=m.not_matched(result.location_mismatches),
            target_mismatches=m.not_matched(result.target_mismatches),
            objects=m.selected_objects(result.objects, result.because),
            object_mismatches=m.not_matched(result.object_mismatches),
            missing_crds=list(result.missing_crds), unserved_resources=list(result.unserved_resources),
            problems=list(result.problems))


def _space_placements(view: PlacementView, space: str) -> list[dict[str, Any]]:
    placements = view.placements(space)
    if placements is None:
        raise not_found("spaces", "spacehub.io", space)
    return placements


def _placement(view: PlacementView, space: str, name: str) -> dict[str, Any]:
    for placement in _space_placements(view, space):
        if _name(placement) == name:
            return placement
    raise not_found(PLACEMENTS, EDGE_GROUP, name)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


# --- objects -------------------------------------------------------------------------------------

def _add_object_routes(app: FastAPI, view: PlacementView, reports: ReportedStates | None) -> None:
    @app.get("/spaces/{space}/objects/{resource}/{name}", response_model=m.ObjectPlacement, tags=["objects"],
             summary="Where a cluster-scoped object goes", responses={**NOT_FOUND, **INVALID})
    async def get_cluster_scoped_object(space: SpacePath, resource: ResourcePath,
                                        name: ObjectNamePath) -> m.ObjectPlacement:
        ref = ObjectRef(space, resource, "", name)
        return object_placement(view, ref, await view.find_object_info(ref), reports)

    @app.get("/spaces/{space}/namespaces/{namespace}/objects/{resource}/{name}", response_model=m.ObjectPlacement,
             tags=["objects"], summary="Where a namespaced object goes", responses={**NOT_FOUND, **INVALID})
    async def get_namespaced_object(space: SpacePath, namespace: NamespacePath, resource: ResourcePath,
                                    name: ObjectNamePath) -> m.ObjectPlacement:
        ref = ObjectRef(space, resource, namespace, name)
        return object_placement(view, ref, await view.find_object_info(ref), reports)


def object_placement(view: PlacementView, ref: ObjectRef, info: dict[str, Any] | None,
                     reports: ReportedStates | None = None) -> m.ObjectPlacement:
    """One object's destinations, the placements selecting it, whether its status is singleton and what the
    clusters reported; ``info``: the object's ``find_object_info`` (None: 404)."""
    placements = _space_placements(view, ref.space)
    if info is None:
        raise not_found(ref.plural, ref.group, ref.name)
    selecting = [p for p in placements if ref in view.engine.selected_objects(ref.space, _name(p))]
    want = view.engine.wants_singleton_status(ref)
    destinations = sorted(view.engine.object_destinations(ref))
    labels = info.get("labels") or {}
    return m.ObjectPlacement(
        space=ref.space, group=ref.group, resource=ref.plural, namespace=ref.namespace, name=ref.name,
        kind=str(info.get("kind", "")), api_version=str(info.get("apiVersion", "")),
        resource_version=str(info.get("resourceVersion", "")),
        labels={str(k): str(v) for k, v in dict(labels).items()}, destinations=destinations,
        leaving=view.engine.leaving_targets(ref),
        placements=[m.PlacementRef(space=ref.space, name=_name(p)) for p in selecting],
        want_singleton_reported_state=want, singleton_status=want and len(destinations) == 1,
        reported=[m.ReportedState(**r) for r in reports.reported(ref)] if reports is not None else [],
        summary=reports.summary(ref) if reports is not None else None, division=view.shares(ref))


def _document_security(app: FastAPI) -> None:
    """Declare the hub's bearer authentication (enforced by the hub in front of this app) in the document."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()
        schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearerAuth"] = {
            "type": "http", "scheme": "bearer",
            "description": "The hub's admin token (the token in the hub's admin.kubeconfig).",
        }
        schema["security"] = [{"bearerAuth": []}]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


# --- upsync --------------------------------------------------------------------------------------

def _add_upsync_routes(app: FastAPI, view: PlacementView, upsynced: UpsyncedCopies | None) -> None:
    @app.get("/spaces/{space}/upsynced", response_model=m.UpsyncedList, tags=["objects"],
             summary="Objects upsynced into a space, with every cluster's copy", responses={**NOT_FOUND, **INVALID})
    async def list_upsynced(space: SpacePath) -> m.UpsyncedList:
        """Objects created in clusters that the space's EdgePlacements bring up (``spec.upsync``): which
        cluster's copy the space shows and every cluster's copy."""
        _space_placements(view, space)
        items = [m.UpsyncedObject(group=ref.group, resource=ref.plural, namespace=ref.namespace, name=ref.name,
                                  shown_from=shown,
                                  clusters=[m.UpsyncedCopy(cluster=c, object=o) for c, o in sorted(copies.items())])
                 for ref, shown, copies in (upsynced.copies(space) if upsynced is not None else [])]
        return m.UpsyncedList(space=space, items=items)
