"""status.objectstatus in-process: KubeStellar's singleton and multi-cluster reported state on the object.

A hub core on SQLite in the test's own event loop (tests/hub_core.py); reports enter as the sync server
hands them over (``StatusService.report``), and the workload object is read back from the store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from apiserver.store.marked import MarkedRows
from hub.app import HubCore
from placement.model import ObjectRef
from status.objectstatus import ANNOTATION, MARKER, ObjectStatus
from status.reports import ReportStore
from status.service import ObjectReport
from tests.hub_core import EDGE, create, delete, get, hub_core, placement
from tests.polling import eventually
from tests.syncer_harness import deployment, namespace

DEPLOYMENTS = [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]}]
WEB = ObjectRef("team", "deployments.apps", "app", "web")


def ready(replicas: int, available: int | None = None) -> dict[str, Any]:
    return {"replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas,
            "availableReplicas": replicas if available is None else available, "observedGeneration": 1}


async def placed_web(core: HubCore, clusters: dict[str, str], **wants: bool) -> None:
    """``web`` placed by ``prod`` on every cluster labelled env=prod; ``clusters``: name -> env."""
    for cluster, env in clusters.items():
        await core.registration.register(cluster, {"env": env})
    await core.runtime.ensure_space("team", manager="test")
    await create(core, "team", namespace("app"), deployment("web", "app"),
                 placement("prod", {"env": "prod"}, DEPLOYMENTS, **wants))
    placed = [c for c, env in clusters.items() if env == "prod"]
    await eventually(lambda: all(core.placement.engine.is_destination(WEB, c) for c in placed), message="placed")


async def report(core: HubCore, cluster: str, status: dict[str, Any]) -> None:
    revision = core.placement.content_revision(WEB, cluster)
    answer = await core.status.report(cluster, [ObjectReport(WEB, status, None, 1, applied_revision=revision)])
    assert answer["accepted"] == 1, answer


async def web_where(core: HubCore, check: Any, message: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        found = await get(core, "team", "apps/v1", "Deployment", "web", "app")
        return found if found is not None and check(found) else None
    return await eventually(probe, message=message)


async def annotated_after_restart(core: HubCore) -> dict[ObjectRef, str]:
    """What a status controller started on this store finds annotated, through the runtime's start-up read."""
    marked = MarkedRows()
    marked.want(MARKER)
    await core.runtime.run_sync(marked.read, core.runtime.store)
    restarted = ObjectStatus(core.placement, core.objects, core.catalog, ReportStore())
    restarted.load(marked.take(MARKER))
    return restarted._managed


def count(obj: dict[str, Any]) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(ANNOTATION)


def test_singleton_status_is_the_one_clusters_status_and_the_count_follows_destinations(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await placed_web(core, {"florin": "prod", "guilder": "test"}, wantSingletonReportedState=True,
                            wantMultiWECReportedState=False)
            await web_where(core, lambda o: count(o) == "1", "executing-count 1")
            # What a restarted hub finds annotated (its placements may be gone meanwhile): web alone.
            assert await annotated_after_restart(core) == {WEB: "1"}
            await report(core, "florin", ready(2))
            copied = await web_where(core, lambda o: o.get("status"), "florin's status copied")
            # The copy names the object's generation: every qualified cluster runs the current content.
            assert copied["status"] == ready(2) and copied["metadata"]["generation"] == 1
            # A second cluster: singleton status no longer applies; the count says 2 and the status is cleared.
            await core.registration.register("peso", {"env": "prod"})
            cleared = await web_where(core, lambda o: count(o) == "2" and not o.get("status"),
                                      "count 2 and the status cleared")
            # Cleared to the Deployment's empty status, not removed: kube always serializes a built-in's status.
            assert cleared["status"] == {}
    asyncio.run(scenario())


def test_multi_cluster_status_is_the_aggregate_of_the_qualified_clusters(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await placed_web(core, {"florin": "prod", "guilder": "prod"}, wantMultiWECReportedState=True)
            waiting = await web_where(core, lambda o: count(o) == "2", "executing-count 2")
            assert waiting["status"] == {}  # no cluster has reported: the status it was created with
            await report(core, "florin", ready(2))
            await report(core, "guilder", ready(2, available=1))
            both = await web_where(core, lambda o: (o.get("status") or {}).get("availableReplicas") == 1,
                                   "the aggregate")
            # Readiness counts are the least over the clusters (status.aggregate): what every cluster has.
            assert both["status"] == {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 1,
                                      "observedGeneration": 1}
    asyncio.run(scenario())


def test_the_annotation_and_status_go_when_no_placement_asks_any_more(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await placed_web(core, {"florin": "prod"}, wantSingletonReportedState=True)
            await create(core, "team", deployment("quiet", "app"))  # placed too, by the same placement
            await report(core, "florin", ready(2))
            await web_where(core, lambda o: count(o) == "1" and o.get("status"), "count and status")
            quiet = await get(core, "team", "apps/v1", "Deployment", "quiet", "app")
            assert quiet is not None and count(quiet) == "1"  # the same placement asks for it
            await delete(core, "team", EDGE, "EdgePlacement", "prod")
            gone = await web_where(core, lambda o: count(o) is None and not o.get("status"), "annotation removed")
            assert ANNOTATION not in (gone["metadata"].get("annotations") or {}) and gone["status"] == {}
    asyncio.run(scenario())
