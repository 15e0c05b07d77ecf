"""placement.recording: a space's objects are recorded only while an EdgePlacement (or an APIBinding) needs them.

The first tests run a hub core on SQLite in the test's event loop (tests/hub_core.py) and write through the
object service; the last ones drive ``SpaceRecording`` with a read held back by the test, for the ordering of
the changes that arrive while a space is read.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from apiserver.store import Key, LogRow
from apiserver.watch import Entry
from apiserver.writeoptions import WriteOptions
from hub.app import HubCore
from placement.model import ObjectRef
from placement.projection import CHILD_HUB_PLACEMENT
from placement.recording import SpaceRecording, in_creation_order
from placement.results import PLACEMENTS
from tests.hub_core import EDGE, create, delete, hub_core, placement
from tests.polling import eventually
from tests.syncer_harness import configmap, namespace

CONFIGMAPS = [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}]
SETTINGS = ObjectRef("team", "configmaps", "app", "settings")


def desired_names(core: HubCore, target: str) -> set[str]:
    return {f"{e.ref.resource}/{e.ref.namespace}/{e.ref.name}" for e in core.placement.engine.desired(target)}


async def set_data(core: HubCore, name: str, value: str) -> None:
    rtype = core.catalog.by_kind("team", "", "ConfigMap")
    assert rtype is not None

    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["data"] = {"v": value}
        return obj

    await core.objects.guaranteed_update("team", rtype, "app", name, change, WriteOptions(manager="test"))


def test_a_space_without_placements_is_not_recorded_until_its_first_placement_and_forgotten_after_its_last(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await core.registration.register("florin", {"env": "prod"})
            await core.runtime.ensure_space("team", manager="test")
            await create(core, "team", namespace("app"), configmap("settings", "app", v="1"),
                         configmap("old", "app"))
            assert not core.placement.recording.recorded("team")
            assert core.placement.object_info(SETTINGS) is None  # no record of it
            info = await core.placement.find_object_info(SETTINGS)  # but the API still finds it, in the store
            assert info is not None and info["kind"] == "ConfigMap"

            # The first placement: the space is read, then changes made right after it are applied in order.
            await create(core, "team", placement("prod", {"env": "prod"}, CONFIGMAPS))
            await set_data(core, "settings", "2")
            await create(core, "team", configmap("late", "app"))
            await delete(core, "team", "v1", "ConfigMap", "old", namespace="app")
            await eventually(lambda: desired_names(core, "florin") == {
                "namespaces//app", "configmaps/app/settings", "configmaps/app/late"}, message="the space placed")
            assert ((await core.placement.projected(SETTINGS)) or {}).get("data") == {"v": "2"}  # what clusters get
            assert core.placement.recording.recorded("team")

            # The last placement goes: the clusters lose the objects and placement its records of the space.
            await delete(core, "team", EDGE, "EdgePlacement", "prod")
            await eventually(lambda: not desired_names(core, "florin"), message="the desired set emptied")
            await eventually(lambda: not core.placement.recording.recorded("team"), message="the space forgotten")
            assert core.placement.object_info(SETTINGS) is None
            assert (await core.placement.find_object_info(SETTINGS) or {}).get("kind") == "ConfigMap"

            # And another placement later reads the space again.
            await create(core, "team", placement("again", {"env": "prod"}, CONFIGMAPS))
            await eventually(lambda: "configmaps/app/late" in desired_names(core, "florin"), message="placed again")
    asyncio.run(scenario())


def test_explaining_a_placement_in_a_space_without_one_sees_its_objects_and_keeps_no_record(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await core.runtime.ensure_space("team", manager="test")
            await create(core, "team", namespace("app"), configmap("settings", "app"))
            async with core.placement.objects_of("team"):
                explained = core.placement.engine.explain("team", placement("p", {"env": "prod"}, CONFIGMAPS)["spec"])
            assert SETTINGS in explained.objects
            assert not core.placement.recording.recorded("team") and core.placement.object_info(SETTINGS) is None
    asyncio.run(scenario())


def test_a_placement_for_child_hubs_is_an_object_not_a_reason_to_record_its_space(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await core.runtime.ensure_space("team", manager="test")
            for_children = placement("down", {"env": "prod"}, CONFIGMAPS)
            for_children["metadata"]["annotations"] = {CHILD_HUB_PLACEMENT: "1"}
            await create(core, "team", for_children)
            # A placement committed after it, in another space: once that one is recorded, the first was seen.
            await core.runtime.ensure_space("other", manager="test")
            await create(core, "other", placement("here", {"env": "prod"}, CONFIGMAPS))
            await eventually(lambda: core.placement.recording.recorded("other"), message="the later placement seen")
            assert not core.placement.recording.recorded("team") and not core.placement.recording.reading("team")
            info = await core.placement.find_object_info(ObjectRef("team", PLACEMENTS, "", "down"))
            assert info is not None and info["kind"] == "EdgePlacement"
    asyncio.run(scenario())


def row(revision: int, name: str, space: str = "team") -> LogRow:
    return LogRow(revision, Key(space, "configmaps", "app", name), False, False, 0, b"{}")


def test_changes_held_during_a_read_follow_its_rows_and_those_the_read_holds_are_stale() -> None:
    async def scenario() -> None:
        release = asyncio.Event()
        told: list[tuple[str, list[LogRow], list[Entry]]] = []

        async def run_sync(read: Any, space: str) -> tuple[int, list[LogRow]]:
            await release.wait()  # the read is under way until the test lets it return
            return read(space)

        recording = SpaceRecording(lambda space: (7, [row(5, "a"), row(7, "b")]), run_sync,
                                   lambda space, rows, held: told.append((space, rows, held)))
        first = Entry(row(6, "p"))  # the change that asked for the space's objects
        recording.start("team", first)
        assert recording.reading("team") and not recording.recorded("team")
        later = Entry(row(8, "c"))
        assert recording.hold(later)
        assert not recording.hold(Entry(row(3, "x", space="other")))  # another space is not being read
        release.set()
        await eventually(lambda: told, message="the read done")
        space, rows, held = told[0]
        assert space == "team" and [r.revision for r in rows] == [5, 7] and held == [first, later]
        assert recording.recorded("team") and not recording.reading("team")
        assert recording.stale(first) and not recording.stale(later)  # the read holds revision 6 already
        recording.forget("team")
        assert not recording.recorded("team") and not recording.stale(first)
    asyncio.run(scenario())


def test_a_space_forgotten_while_it_is_read_is_not_recorded_when_the_read_returns() -> None:
    async def scenario() -> None:
        release = asyncio.Event()
        told: list[str] = []

        async def run_sync(read: Any, space: str) -> tuple[int, list[LogRow]]:
            await release.wait()
            return read(space)

        recording = SpaceRecording(lambda space: (7, []), run_sync, lambda space, rows, held: told.append(space))
        recording.start("team", None)
        recording.forget("team")  # the space was deleted meanwhile
        release.set()
        await recording.stop()
        assert told == [] and not recording.recorded("team") and not recording.reading("team")
    asyncio.run(scenario())


def test_a_space_read_is_recorded_in_an_order_its_objects_could_have_been_created_in() -> None:
    """The store lists a space by (namespace, name): a custom resource before its CRD, a placement before what it
    places. Recorded in that order, the clusters missed CRDs and Namespaces that came after the placement."""
    def row(resource: str, name: str, namespace: str = "") -> LogRow:
        return LogRow(1, Key("s", resource, namespace, name), False, False, 0, b"{}")

    listed = [row("customresourcedefinitions.apiextensions.k8s.io", "a.example.com"), row(PLACEMENTS, "b"),
              row("widgets.example.com", "c"), row("namespaces", "pools"),
              row("customresourcedefinitions.apiextensions.k8s.io", "widgets.example.com"),
              row("configmaps", "x", "pools")]
    assert [(r.key.resource.split(".")[0], r.key.name) for r in in_creation_order(listed)] == [
        ("customresourcedefinitions", "a.example.com"), ("customresourcedefinitions", "widgets.example.com"),
        ("namespaces", "pools"), ("widgets", "c"), ("configmaps", "x"), ("edgeplacements", "b")]
