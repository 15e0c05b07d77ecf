"""status.summaries in-process: each placed object's PlacementStatus and the Events of its story.

A hub core on SQLite in the test's own event loop (tests/hub_core.py); reports enter as the sync server
hands them over (``StatusService.report``), and the summary is read back from the store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from apiserver.writeoptions import WriteOptions
from hub.app import HubCore
from placement.model import ObjectRef
from status.service import ObjectReport
from status.summaries import summary_name
from tests.hub_core import EDGE, create, delete, get, hub_core, listed, placement
from tests.polling import eventually
from tests.syncer_harness import configmap, deployment, namespace

STATUS = "status.spacehub.io/v1alpha1"
DEPLOYMENTS = [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["app"]}]
WEB = ObjectRef("team", "deployments.apps", "app", "web")
READY = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2, "observedGeneration": 1}


async def placed_web(core: HubCore, *clusters: str) -> None:
    for cluster in clusters:
        await core.registration.register(cluster, {"env": "prod"})
    await core.runtime.ensure_space("team", manager="test")
    await create(core, "team", namespace("app"), deployment("web", "app"),
                 placement("prod", {"env": "prod"}, DEPLOYMENTS))
    await eventually(lambda: all(core.placement.engine.is_destination(WEB, c) for c in clusters), message="placed")


async def summary_where(core: HubCore, check: Any) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        found = await get(core, "team", STATUS, "PlacementStatus", summary_name(WEB), "app")
        return found if found is not None and check(found) else None
    return await eventually(probe, message="the PlacementStatus")


async def report(core: HubCore, cluster: str, status: dict[str, Any] | None, error: str | None = None,
                 ref: ObjectRef = WEB) -> None:
    revision = core.placement.content_revision(ref, cluster)
    answer = await core.status.report(cluster, [ObjectReport(ref, status, error, 1 if status else None,
                                                             applied_revision=revision)])
    assert answer == {"accepted": 1, "ignored": []}


def test_the_summary_counts_each_clusters_state_and_names_the_worst(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await placed_web(core, "florin", "guilder")
            assert summary_name(WEB) == "deployments.apps.web"
            pending = await summary_where(core, lambda s: s["summary"]["targeted"] == 2)
            assert pending["summary"] == {"targeted": 2, "applied": 0, "ready": 0, "failed": 0, "stale": 0,
                                          "pending": 2, "current": 0, "leaving": 0}
            assert pending["object"]["name"] == "web" and pending["object"]["kind"] == "Deployment"
            owner = pending["metadata"]["ownerReferences"][0]  # garbage-collected with the object
            assert (owner["kind"], owner["name"]) == ("Deployment", "web")

            await report(core, "florin", READY)
            one = await summary_where(core, lambda s: s["summary"]["ready"] == 1)
            assert one["summary"] == {"targeted": 2, "applied": 1, "ready": 1, "failed": 0, "stale": 0,
                                      "pending": 1, "current": 1, "leaving": 0}
            assert {c["name"]: c["phase"] for c in one["clusters"]} == {"florin": "Ready", "guilder": "Pending"}
            assert one["worstCondition"] == {"cluster": "guilder", "phase": "Pending",
                                             "message": "no report from the cluster yet"}

            await report(core, "guilder", None, "admission webhook denied the request")
            failed = await summary_where(core, lambda s: s["summary"]["failed"] == 1)
            assert failed["summary"]["pending"] == 0 and failed["summary"]["ready"] == 1
            assert failed["worstCondition"] == {"cluster": "guilder", "phase": "Failed",
                                                "message": "admission webhook denied the request"}
            # The failure is told as a Warning Event on the object, with the cluster's message.
            events = await eventually(lambda: _events_about(core, "web"), message="the failure's Event")
            told = [e for e in events if e["type"] == "Warning" and "guilder" in e["message"]]
            assert told and "admission webhook denied the request" in told[0]["message"]

            await report(core, "guilder", READY)
            healed = await summary_where(core, lambda s: s["summary"]["ready"] == 2)
            assert healed["summary"]["failed"] == 0 and not healed.get("worstCondition")
    asyncio.run(scenario())


async def _events_about(core: HubCore, name: str) -> list[dict[str, Any]]:
    return [e for e in await listed(core, "team", "v1", "Event", "app")
            if (e.get("involvedObject") or {}).get("name") == name and e["type"] == "Warning"]


def test_the_summary_goes_when_no_placement_selects_the_object(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await placed_web(core, "florin")
            await summary_where(core, lambda s: s["summary"]["targeted"] == 1)
            await delete(core, "team", EDGE, "EdgePlacement", "prod")

            async def gone() -> bool:
                return await get(core, "team", STATUS, "PlacementStatus", summary_name(WEB), "app") is None
            await eventually(gone, message="the PlacementStatus deleted")
    asyncio.run(scenario())


def test_a_change_that_moves_no_clusters_state_writes_no_summary(tmp_path: Path) -> None:
    """Changing an object no cluster has reported on leaves every cluster Pending: its PlacementStatus is not
    rewritten (at a thousand clusters that write was most of the summaries' cost). The new revision is written
    with the next change a user sees."""
    quiet, loud = (ObjectRef("team", "configmaps", "app", name) for name in ("quiet", "loud"))

    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            for cluster in ("florin", "guilder"):
                await core.registration.register(cluster, {"env": "prod"})
            await core.runtime.ensure_space("team", manager="test")
            await create(core, "team", namespace("app"), configmap("quiet", "app", v="1"),
                         configmap("loud", "app", v="1"),
                         placement("prod", {"env": "prod"}, [{"apiGroup": "", "resources": ["configmaps"],
                                                              "namespaces": ["app"]}]))
            await eventually(lambda: core.placement.engine.is_destination(loud, "florin"), message="placed")
            await report(core, "florin", None, ref=loud)

            async def summary_of(ref: ObjectRef, check: Any) -> dict[str, Any]:
                async def probe() -> dict[str, Any] | None:
                    found = await get(core, "team", STATUS, "PlacementStatus", summary_name(ref), "app")
                    return found if found is not None and check(found) else None
                return await eventually(probe, message=f"the PlacementStatus of {ref.name}")
            before = await summary_of(quiet, lambda s: s["summary"]["pending"] == 2)
            await summary_of(loud, lambda s: s["summary"]["ready"] == 1)

            cms = core.catalog.by_group_resource("team", "configmaps")
            assert cms is not None

            async def change(name: str) -> None:
                await core.objects.guaranteed_update("team", cms, "app", name, lambda o: {**o, "data": {"v": "2"}},
                                                     WriteOptions(manager="test"))
            await change("quiet")
            # Its recomputation has begun once its trigger is taken; the summaries' one worker finishes it before
            # it takes loud's, whose write (florin's copy is no longer current: Ready -> Applied) is the barrier.
            await eventually(lambda: quiet not in core.status.summaries._recount, message="quiet's recomputation")
            await change("loud")
            await summary_of(loud, lambda s: s["summary"]["ready"] == 0)
            after = await get(core, "team", STATUS, "PlacementStatus", summary_name(quiet), "app")
            assert after is not None
            assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

            await report(core, "florin", None, ref=quiet)  # a state moves: written, with the object's revision
            caught_up = await summary_of(quiet, lambda s: s["summary"]["ready"] == 1)
            assert caught_up["object"]["revision"] == core.placement.object_revision(quiet) != \
                before["object"]["revision"]
    asyncio.run(scenario())
