"""placement.service in-process: the store feeds the engine, and the service writes what it resolves.

A hub core on SQLite in the test's own event loop (tests/hub_core.py); clusters are registered, objects and
EdgePlacements written through the object service, and the service's answers and written results read back.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hub.app import HubCore
from placement.model import ObjectRef
from tests.hub_core import EDGE, create, delete, get, hub_core, listed, placement
from tests.polling import eventually
from tests.syncer_harness import configmap, namespace

CONFIGMAPS = [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}]


def desired_names(core: HubCore, target: str) -> set[str]:
    return {f"{e.ref.resource}/{e.ref.namespace}/{e.ref.name}" for e in core.placement.engine.desired(target)}


async def slice_targets(core: HubCore, space: str, name: str) -> list[str] | None:
    found = await get(core, space, EDGE, "SinglePlacementSlice", name)
    return None if found is None else sorted(d["syncTargetName"] for d in found.get("destinations") or [])


async def placed_world(core: HubCore) -> None:
    await core.registration.register("florin", {"env": "prod"})
    await core.registration.register("guilder", {"env": "prod"})
    await core.registration.register("dollar", {"env": "test"})
    await core.runtime.ensure_space("team", manager="test")
    await create(core, "team", namespace("app"), configmap("settings", "app", mode="fast"),
                 placement("prod", {"env": "prod"}, CONFIGMAPS))


def test_a_placement_reaches_the_clusters_its_locations_select_and_its_slice_says_so(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await placed_world(core)
            settings = "configmaps/app/settings"
            await eventually(lambda: settings in desired_names(core, "florin") and
                             settings in desired_names(core, "guilder"), message="settings desired on prod")
            assert desired_names(core, "dollar") == set()  # env=test is not selected
            assert await eventually(lambda: slice_targets(core, "team", "prod"),
                                    message="the slice") == ["florin", "guilder"]
            ref = ObjectRef("team", "configmaps", "app", "settings")
            assert sorted(core.placement.engine.object_destinations(ref)) == ["florin", "guilder"]
            assert core.placement.placement("team", "prod") is not None
            assert [p["metadata"]["name"] for p in core.placement.placements("team") or []] == ["prod"]
            assert core.placement.placement_count() == 1
            status = await eventually(lambda: _status(core, "team", "prod"), message="the placement's status")
            assert status["destinationCount"] == 2 and status["selectedObjectCount"] == 1
            # The namespace goes along with the object in it (not counted as selected).
            assert desired_names(core, "florin") == {"namespaces//app", settings}
    asyncio.run(scenario())


async def _status(core: HubCore, space: str, name: str) -> dict[str, Any] | None:
    found = await get(core, space, EDGE, "EdgePlacement", name)
    status = (found or {}).get("status") or {}
    return status if status.get("destinationCount") is not None else None


def test_objects_follow_label_and_placement_changes_and_deletions(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await placed_world(core)
            await eventually(lambda: "configmaps/app/settings" in desired_names(core, "florin"), message="placed")
            versions = dict(core.placement.target_versions)
            # A new object in the namespace the placement selects: placed, and the targets' versions bumped.
            await create(core, "team", configmap("more", "app"))
            await eventually(lambda: "configmaps/app/more" in desired_names(core, "guilder"), message="more placed")
            # Bumped by the same drain, which may finish just after the engine has the object.
            await eventually(lambda: core.placement.target_versions.get("florin", 0) > versions.get("florin", 0),
                             message="florin's desired-set version bumped")
            assert core.placement.target_versions.get("dollar", 0) == versions.get("dollar", 0)  # not its set
            # An object elsewhere is not placed.
            await create(core, "team", namespace("other"), configmap("elsewhere", "other"))
            await create(core, "team", configmap("late", "app"))
            await eventually(lambda: "configmaps/app/late" in desired_names(core, "florin"), message="late placed")
            assert not any("elsewhere" in name for name in desired_names(core, "florin"))
            # Deleting the object takes it out of every desired set.
            await delete(core, "team", "v1", "ConfigMap", "more", namespace="app")
            await eventually(lambda: "configmaps/app/more" not in desired_names(core, "florin") and
                             "configmaps/app/more" not in desired_names(core, "guilder"), message="more removed")
            # Deleting the placement empties the clusters' sets and removes its slice.
            await delete(core, "team", EDGE, "EdgePlacement", "prod")
            await eventually(lambda: not desired_names(core, "florin") and not desired_names(core, "guilder"),
                             message="the desired sets emptied")
            await eventually(lambda: _gone(core, "team", "prod"), message="the slice deleted")
            assert core.placement.placement("team", "prod") is None
    asyncio.run(scenario())


async def _gone(core: HubCore, space: str, name: str) -> bool:
    return await get(core, space, EDGE, "SinglePlacementSlice", name) is None


def test_a_cluster_that_leaves_is_no_destination_and_one_that_joins_is(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await placed_world(core)
            await eventually(lambda: slice_targets(core, "team", "prod"), message="the slice")
            await core.registration.register("peso", {"env": "prod"})
            assert await eventually(lambda: _targets_are(core, ["florin", "guilder", "peso"]),
                                    message="peso in the slice")
            await eventually(lambda: "configmaps/app/settings" in desired_names(core, "peso"), message="on peso")
            await delete(core, "inventory", EDGE, "SyncTarget", "florin")
            assert await eventually(lambda: _targets_are(core, ["guilder", "peso"]), message="florin out")
            assert desired_names(core, "florin") == set()
    asyncio.run(scenario())


async def _targets_are(core: HubCore, expected: list[str]) -> bool:
    return await slice_targets(core, "team", "prod") == expected


def test_a_spaces_leases_stay_in_the_space_even_where_a_placement_selects_every_kind(tmp_path: Path) -> None:
    """Leases are the space's own controllers' leader election: copied to a cluster they would mislead its
    controllers about who leads."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "operator-lock", "namespace": "app"}, "spec": {"holderIdentity": "pod-a"}}
    everything = [{"resources": ["*"], "namespaces": ["app"]}]  # every group and resource in app

    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await core.registration.register("florin", {"env": "prod"})
            await core.runtime.ensure_space("team", manager="test")
            await create(core, "team", namespace("app"), configmap("settings", "app"), lease,
                         placement("all", {"env": "prod"}, everything))
            await eventually(lambda: "configmaps/app/settings" in desired_names(core, "florin"),
                             message="the ConfigMap placed")
            assert not any(name.startswith("leases.") for name in desired_names(core, "florin"))
    asyncio.run(scenario())


def test_the_hubs_status_objects_stay_in_the_space_where_a_namespace_selector_selects_every_kind(
        tmp_path: Path) -> None:
    """A PlacementStatus is the hub's report about a placed object: placed in turn it would get a PlacementStatus
    of its own, and that one another (the clusters do not serve the kind either)."""
    labelled = {**namespace("app"), "metadata": {"name": "app", "labels": {"part": "workers"}}}
    everything = [{"namespaceSelectors": [{"matchLabels": {"part": "workers"}}]}]  # every kind in app

    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await core.registration.register("florin", {"env": "prod"})
            await core.runtime.ensure_space("team", manager="test")
            await create(core, "team", labelled, configmap("settings", "app"),
                         placement("all", {"env": "prod"}, everything))
            await eventually(lambda: listed(core, "team", "status.spacehub.io/v1alpha1", "PlacementStatus", "app"),
                             message="the ConfigMap's PlacementStatus")
            await eventually(lambda: "configmaps/app/settings" in desired_names(core, "florin"),
                             message="the ConfigMap placed")
            assert not any(name.startswith("placementstatuses.") for name in desired_names(core, "florin"))
    asyncio.run(scenario())
