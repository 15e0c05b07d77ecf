"""placement.copies in-process: what each cluster gets of an object, shared by the clusters whose copy is the same.

A hub core on SQLite in the test's own event loop (tests/hub_core.py); clusters registered, objects and
EdgePlacements written through the object service, and ``content_for`` asked as the sync streams ask it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from apimachinery.fieldownership import RETAIN_ANNOTATION
from hub.app import HubCore
from placement.customize import EXPAND_ANNOTATION
from placement.model import ObjectRef
from placement.shaping import Outcome
from tests.hub_core import create, hub_core, placement, update
from tests.polling import eventually
from tests.syncer_harness import configmap, namespace

SETTINGS = ObjectRef("team", "configmaps", "app", "settings")


def configmaps(**test: Any) -> list[dict[str, Any]]:
    return [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"], **test}]


async def copies(core: HubCore, ref: ObjectRef) -> dict[str, Outcome | None]:
    return {target: await core.placement.content_for(ref, target) for target in ("florin", "guilder")}


async def placed(core: HubCore, ref: ObjectRef, check: Any) -> dict[str, Outcome]:
    """Both clusters' copies, once they satisfy ``check``."""
    async def found() -> dict[str, Outcome] | None:
        got = await copies(core, ref)
        return got if all(o is not None and o.obj is not None and check(o.obj) for o in got.values()) else None  # type: ignore
    return await eventually(found, message=f"both copies of {ref.name}")


async def fleet(core: HubCore) -> None:
    await core.registration.register("florin", {"env": "prod", "zone": "north"})
    await core.registration.register("guilder", {"env": "prod", "zone": "south"})
    await core.runtime.ensure_space("team", manager="test")


def test_clusters_without_a_copy_of_their_own_share_one_that_follows_the_object_and_its_field_ownership(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await fleet(core)
            await create(core, "team", namespace("app"), configmap("settings", "app", mode="fast"),
                         placement("prod", {"env": "prod"}, configmaps(retainFields=["data.mode"])))
            got = await placed(core, SETTINGS, lambda obj: True)
            assert got["florin"].obj is got["guilder"].obj  # one copy, so the streams share one line
            assert got["florin"].revision == got["guilder"].revision
            # Asked once for every cluster (the broadcaster, once per change): that same copy, no cluster apart.
            assert await core.placement.shared_copy(SETTINGS) == (got["florin"], frozenset())
            assert got["florin"].obj["metadata"]["annotations"][RETAIN_ANNOTATION] == "data.mode"  # type: ignore

            # A new revision of the object: a new shared copy.
            await update(core, "team", configmap("settings", "app", mode="slow"))
            got = await placed(core, SETTINGS, lambda obj: obj["data"]["mode"] == "slow")
            assert got["florin"].obj is got["guilder"].obj

            # The placement's tests give other field ownership: the copies carry it, the object unchanged.
            revision = got["florin"].revision
            await update(core, "team", placement("prod", {"env": "prod"}, configmaps(retainFields=["data.other"])))
            got = await placed(core, SETTINGS, lambda obj: obj["metadata"]["annotations"][RETAIN_ANNOTATION]
                               == "data.other")
            assert got["florin"].obj is got["guilder"].obj and got["florin"].revision == revision

            # No ownership asked: the projection itself, without annotations.
            await update(core, "team", placement("prod", {"env": "prod"}, configmaps()))
            got = await placed(core, SETTINGS, lambda obj: "annotations" not in obj["metadata"])
            assert got["florin"].obj is got["guilder"].obj
    asyncio.run(scenario())


def test_a_customized_copy_is_each_clusters_own_while_the_plain_objects_beside_it_stay_shared(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await fleet(core)
            expanded = configmap("local", "app", zone="in %(zone)")
            expanded["metadata"]["annotations"] = {EXPAND_ANNOTATION: "true"}
            await create(core, "team", namespace("app"), expanded, configmap("settings", "app", mode="fast"),
                         placement("prod", {"env": "prod"}, configmaps(retainFields=["data.mode"])))
            local = await placed(core, ObjectRef("team", "configmaps", "app", "local"), lambda obj: True)
            assert local["florin"].obj["data"]["zone"] == "in north"  # type: ignore[index]
            assert local["guilder"].obj["data"]["zone"] == "in south"  # type: ignore[index]
            assert local["florin"].revision != local["guilder"].revision
            for outcome in local.values():  # its own copy still carries the placement's field ownership
                assert outcome.obj["metadata"]["annotations"][RETAIN_ANNOTATION] == "data.mode"  # type: ignore
            shared = await placed(core, SETTINGS, lambda obj: True)
            assert shared["florin"].obj is shared["guilder"].obj
            # Asked for every cluster at once: none for the customized object (each cluster asks for its own).
            assert await core.placement.shared_copy(ObjectRef("team", "configmaps", "app", "local")) is None
            assert await core.placement.shared_copy(SETTINGS) == (shared["florin"], frozenset())
    asyncio.run(scenario())


def test_the_clusters_where_an_object_lost_a_conflict_are_set_apart_from_its_shared_copy(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with hub_core(tmp_path) as core:
            await fleet(core)
            await create(core, "team", namespace("app"), configmap("settings", "app", mode="fast"),
                         placement("prod", {"env": "prod"}, configmaps()))
            await placed(core, SETTINGS, lambda obj: True)
            # Another space sends the same cluster object with other content to florin only: created later (or in
            # the same second, its space's name sorting after), it loses there.
            await core.runtime.ensure_space("upstart", manager="test")
            await create(core, "upstart", namespace("app"), configmap("settings", "app", mode="slow"),
                         placement("north", {"zone": "north"}, configmaps()))
            upstart = ObjectRef("upstart", "configmaps", "app", "settings")

            async def set_apart() -> tuple[Outcome | None, frozenset[str]] | None:
                shared = await core.placement.shared_copy(upstart)
                return shared if shared is not None and shared[1] else None
            outcome, own = await eventually(set_apart, message="florin set apart")  # type: ignore[misc]
            assert own == {"florin"} and outcome is not None and outcome.obj["data"]["mode"] == "slow"  # type: ignore
            lost = await core.placement.content_for(upstart, "florin")
            assert lost is not None and lost.obj is None and (lost.error or "").startswith("conflict: ")
            assert await core.placement.shared_copy(SETTINGS) == (await core.placement.content_for(SETTINGS, "florin"),
                                                                  frozenset())
    asyncio.run(scenario())
