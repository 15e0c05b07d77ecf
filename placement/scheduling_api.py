"""The placement REST API's scheduling routes: a placement's choice explained, reschedule, and cluster taints.

Owns the HTTP layer of scheduling only (the routes and their response shapes); the choice itself is
:mod:`placement.choices` and :mod:`placement.scheduler`. Mounted by :func:`placement.api.build_placement_api`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from fastapi import FastAPI, Path
from pydantic import Field

from apimachinery.errors import invalid, not_found
from inventory.kinds import EDGE_GROUP
from placement import api_models as m
from placement.choices import Choices
from placement.engine import PlacementEngine
from placement.scheduler import NOT_SELECTED
from placement.schedulingspec import scheduling_causes

PLACEMENTS = "edgeplacements"
ClusterPath = Annotated[str, Path(description="The SyncTarget's name.")]
SpacePath = Annotated[str, Path(description="The workload space.")]
PlacementPath = Annotated[str, Path(description="The EdgePlacement's name.")]
NOT_FOUND = {404: {"model": m.Status, "description": "The space, placement or cluster does not exist."}}
BAD_REQUEST = {400: {"model": m.Status, "description": "The request body is not JSON."}}
INVALID = {422: {"model": m.Status, "description": "The request does not match this schema; `details.causes` "
                                                   "names each field."}}


class SchedulingView(Protocol):
    """What these routes read and ask; implemented by ``placement.service.PlacementService``."""

    engine: PlacementEngine
    choices: Choices

    def placements(self, space: str) -> list[dict[str, Any]] | None: ...

    async def reschedule(self, space: str, name: str) -> dict[str, Any]: ...


class FleetView(Protocol):
    def sync_targets(self) -> list[dict[str, Any]]: ...


class TaintRegistry(Protocol):
    async def taint(self, name: str, add: list[dict[str, Any]], remove: list[dict[str, Any]]) -> dict[str, Any]: ...


class ScheduledCandidate(m.ApiModel):
    """One SyncTarget as the placement's scheduler sees it."""

    cluster: str
    chosen: bool
    score: float = Field(description="The weighted sum of the prioritizers' scores.")
    scores: dict[str, float] = Field(description="Each prioritizer's score, 0-100, before its weight.")
    reason: str | None = Field(default=None, description="Why not chosen: NotSelected, Tainted, Cordoned, Lost, "
                                                         "SpreadConstraint, Outscored or Steady.")
    message: str | None = None


class PlacementScheduling(m.ApiModel):
    """A placement's choice of clusters, every candidate's scores, and why the others were not chosen."""

    space: str
    name: str
    scheduled: bool = Field(description="False: the placement has no scheduling fields and goes to every cluster "
                                        "its Locations select.")
    wanted: int | None = Field(default=None, description="numberOfClusters, or how many are eligible.")
    chosen: list[str] = Field(default_factory=list)
    condition: m.Condition | None = Field(default=None, description="The Scheduled condition.")
    candidates: list[ScheduledCandidate] = Field(default_factory=list)


class TaintInput(m.StrictModel):
    key: str = Field(min_length=1)
    value: str | None = None
    effect: Literal["NoSchedule", "NoExecute"]


class TaintRemoval(m.StrictModel):
    key: str = Field(min_length=1)
    effect: Literal["NoSchedule", "NoExecute"] | None = None


class TaintRequest(m.StrictModel):
    """Taints to put on (replacing one of the same key and effect) and to take off (by key, and effect if given)."""

    add: list[TaintInput] = Field(default_factory=list)
    remove: list[TaintRemoval] = Field(default_factory=list)


def add_scheduling_routes(app: FastAPI, view: SchedulingView, fleet: FleetView, registry: TaintRegistry,
                          cluster_info: Any) -> None:
    """``cluster_info``: how the API shows a SyncTarget (``placement.api.cluster_info`` with its Location index)."""

    @app.get("/spaces/{space}/placements/{name}/scheduling", response_model=PlacementScheduling,
             tags=["placements"], summary="Explain a placement's choice of clusters",
             responses={**NOT_FOUND, **INVALID})
    async def get_placement_scheduling(space: SpacePath, name: PlacementPath) -> PlacementScheduling:
        """Every SyncTarget with its score per prioritizer, which ones the placement chose and, for the others,
        why: NotSelected (no matching Location selects it), Tainted, Cordoned, Lost (silent past
        failover.after), SpreadConstraint, Outscored, or Steady (scores above a kept choice; a reschedule
        would take it)."""
        return scheduling_of(view, fleet, space, name)

    @app.post("/spaces/{space}/placements/{name}:reschedule", response_model=PlacementScheduling,
              tags=["placements"], summary="Choose a placement's clusters again from scratch",
              responses={**NOT_FOUND, **INVALID})
    async def reschedule_placement(space: SpacePath, name: PlacementPath) -> PlacementScheduling:
        """Kept choices stay while their clusters are eligible; this asks for the best choice now instead (the
        objects move make-before-break where the hub does so). Answers the scheduling as it is before the new
        choice is made."""
        _placement(view, space, name)
        await view.reschedule(space, name)
        return scheduling_of(view, fleet, space, name)

    @app.post("/clusters/{name}:taint", response_model=m.Cluster, tags=["clusters"], summary="Taint a cluster",
              responses={**BAD_REQUEST, **NOT_FOUND, **INVALID})
    async def taint_cluster(name: ClusterPath, request: TaintRequest) -> m.Cluster:
        """Put taints on the SyncTarget and take others off, like `kubectl taint`: NoSchedule keeps new choices
        of scheduled placements off it, NoExecute also moves the copies of the placements not tolerating it."""
        target = await registry.taint(name, [t.model_dump(exclude_none=True) for t in request.add],
                                      [t.model_dump(exclude_none=True) for t in request.remove])
        return cluster_info(target)


def check_scheduling(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` if its scheduling fields are valid; else 422 with kube's field paths (as a stored one gets)."""
    causes = scheduling_causes(spec)
    if causes:
        raise invalid("EdgePlacement", EDGE_GROUP, "", causes)
    return spec


def scheduling_of(view: SchedulingView, fleet: FleetView, space: str, name: str) -> PlacementScheduling:
    placement = _placement(view, space, name)
    key = (space, name)
    spec = view.engine.scheduling(space, name)
    if spec is None:
        return PlacementScheduling(space=space, name=name, scheduled=False)
    decision = view.choices.explain(key, spec)
    rows = [ScheduledCandidate(cluster=r.name, chosen=r.chosen, score=r.total, scores=r.scores,
                               reason=r.reason or None, message=r.message or None) for r in decision.rows]
    seen = {r.name for r in decision.rows}
    rows += [ScheduledCandidate(cluster=n, chosen=False, score=0.0, scores={}, reason=NOT_SELECTED,
                                message="no Location the placement matches selects it")
             for n in sorted(str((t.get("metadata") or {}).get("name")) for t in fleet.sync_targets()) if n not in seen]
    conditions = [c for c in (placement.get("status") or {}).get("conditions") or []
                  if isinstance(c, dict) and c.get("type") == "Scheduled"]
    condition = None
    if conditions:
        c = conditions[0]
        condition = m.Condition(type="Scheduled", status=str(c.get("status")), reason=c.get("reason"),
                                message=c.get("message"), last_transition_time=c.get("lastTransitionTime"))
    chosen = view.engine.chosen(space, name)
    return PlacementScheduling(space=space, name=name, scheduled=True, wanted=decision.wanted,
                               chosen=sorted(chosen or ()), condition=condition, candidates=rows)


def _placement(view: SchedulingView, space: str, name: str) -> dict[str, Any]:
    placements = view.placements(space)
    if placements is None:
        raise not_found("spaces", "spacehub.io", space)
    for placement in placements:
        if (placement.get("metadata") or {}).get("name") == name:
            return placement
    raise not_found(PLACEMENTS, EDGE_GROUP, name)
