"""The staged rollout's REST calls under ``/placement/v1/spaces/{space}/placements/{name}``: the rollout's state
(``/rollout``), ``:pause``, ``:resume``, ``:approve``, ``:undo`` and ``/history``, with their response shapes.

HTTP only: the work is :class:`placement.rollout_runner.RolloutRunner`'s. Authorized in ``hub/access.py``: the
reads as ``get`` of the EdgePlacement, the controls as ``update`` of it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, FastAPI, Path
from pydantic import ConfigDict, Field

from placement import api_models as m
from placement.rollout_runner import RolloutRunner

SpacePath = Annotated[str, Path(description="The workload space.")]
PlacementPath = Annotated[str, Path(description="The EdgePlacement's name.")]


def _status_response(description: str) -> dict[str, Any]:
    return {"model": m.Status, "description": description}


NOT_FOUND = {404: _status_response("The space or placement does not exist, or the revision is no longer kept.")}
CONFLICT = {409: _status_response("The placement has no rollout, or the rollout is not in a state the call "
                                  "applies to (approve when not waiting for approval, resume when not paused).")}
INVALID = {422: _status_response("The request does not match this schema; `details.causes` names each field.")}
BAD_REQUEST = {400: _status_response("The request body is not JSON.")}


class RolloutStage(m.ApiModel):
    name: str
    clusters: int = Field(description="Clusters in this stage.")
    updated: int = Field(description="Clusters of the stage given the new revision.")
    ready: int = Field(description="Clusters of the stage Ready with it.")
    failed: int


class RolloutCluster(m.ApiModel):
    model_config = ConfigDict(extra="allow")
    name: str
    stage: str
    revision: int = Field(description="The revision the cluster is given (the newest of the placement's objects).")
    phase: str = Field(description="Waiting (previous revision), Updating, Ready or Failed.")
    message: str | None = None


class RolloutStatus(m.ApiModel):
    """The EdgePlacement's ``status.rollout``."""

    model_config = ConfigDict(extra="allow")
    revision: int = Field(description="The newest revision being rolled out.")
    stage: str = Field(description="The current stage's name.")
    phase: str = Field(description="Progressing, Paused, WaitingForApproval, Failed, RolledBack or Complete.")
    message: str = Field(description="What the rollout waits for, or the failing cluster and its reason.")
    stages: list[RolloutStage]
    clusters: list[RolloutCluster]


class UndoRequest(m.StrictModel):
    to_revision: int | None = Field(default=None, alias="toRevision", ge=1,
                                    description="The revision to go back to (default: the one before the current).")


class UndoneObject(m.ApiModel):
    object: str
    to_revision: int = Field(alias="toRevision")


class UndoResult(m.ApiModel):
    objects: list[UndoneObject] = Field(description="The objects whose content was written back.")


class HistoryObject(m.ApiModel):
    resource: str
    namespace: str
    name: str


class HistoryItem(m.ApiModel):
    object: HistoryObject
    revision: int
    digest: str = Field(description="A digest of the content clusters get.")
    created: str
    images: list[str] = Field(description="The pod template's container images, if any.")
    current: bool = Field(description="The revision the placement rolls out now.")


class RolloutHistory(m.ApiModel):
    space: str
    name: str
    revision: int
    phase: str
    items: list[HistoryItem]


def add_rollout_routes(app: FastAPI, rollouts: RolloutRunner) -> None:
    base = "/spaces/{space}/placements/{name}"

    @app.get(base + "/rollout", response_model=RolloutStatus, tags=["placements"], summary="A placement's rollout",
             responses={**NOT_FOUND, **CONFLICT, **INVALID})
    async def get_rollout(space: SpacePath, name: PlacementPath) -> dict[str, Any]:
        """The staged rollout's state, as `status.rollout` holds it: revision, stage, phase, per-stage counts and
        each cluster's revision and phase."""
        rollouts.stored(space, name)
        return rollouts.status(space, name)["rollout"]

    @app.post(base + ":pause", response_model=RolloutStatus, tags=["placements"], summary="Pause a rollout",
              responses={**NOT_FOUND, **CONFLICT, **INVALID})
    async def pause_rollout(space: SpacePath, name: PlacementPath) -> dict[str, Any]:
        """Hold every cluster at the revision it runs until resume."""
        return await rollouts.control(space, name, "pause")

    @app.post(base + ":resume", response_model=RolloutStatus, tags=["placements"], summary="Resume a rollout",
              responses={**NOT_FOUND, **CONFLICT, **INVALID})
    async def resume_rollout(space: SpacePath, name: PlacementPath) -> dict[str, Any]:
        """Clear a pause (after a failure, the failed clusters get a new progress deadline)."""
        return await rollouts.control(space, name, "resume")

    @app.post(base + ":approve", response_model=RolloutStatus, tags=["placements"], summary="Approve a stage",
              responses={**NOT_FOUND, **CONFLICT, **INVALID})
    async def approve_rollout(space: SpacePath, name: PlacementPath) -> dict[str, Any]:
        """Let a `Manual` stage that waits for approval start."""
        return await rollouts.control(space, name, "approve")

    @app.post(base + ":undo", response_model=UndoResult, tags=["placements"], summary="Undo a rollout",
              responses={**NOT_FOUND, **CONFLICT, **BAD_REQUEST, **INVALID})
    async def undo_rollout(space: SpacePath, name: PlacementPath,
                           body: Annotated[UndoRequest | None, Body()] = None) -> dict[str, Any]:
        """Write a kept revision's content back into the space's objects (as `kubectl rollout undo` does), which
        makes a new revision rolled out from the first stage; clears a pause."""
        return await rollouts.undo(space, name, body.to_revision if body is not None else None)

    @app.get(base + "/history", response_model=RolloutHistory, tags=["placements"], summary="A rollout's history",
             responses={**NOT_FOUND, **INVALID})
    async def get_rollout_history(space: SpacePath, name: PlacementPath) -> dict[str, Any]:
        """The kept revisions of each object the placement rolls out, oldest first."""
        return rollouts.history_of(space, name)
