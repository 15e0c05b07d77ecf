"""The garbage collector's index after a restart: the stored dependents of each owner, found by the database.

A hub core on SQLite in the test's event loop (tests/hub_core.py), started twice on the same database.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from apiserver.store import Key
from tests.hub_core import create, get, hub_core
from tests.syncer_harness import configmap, namespace


def test_a_restarted_hub_knows_each_owners_dependents_and_nothing_else(tmp_path: Path) -> None:
    async def write() -> str:
        async with hub_core(tmp_path) as core:
            await core.runtime.ensure_space("team", manager="test")
            await create(core, "team", namespace("app"), configmap("owner", "app"))
            owner = await get(core, "team", "v1", "ConfigMap", "owner", "app")
            assert owner is not None
            uid = str(owner["metadata"]["uid"])
            dependent = configmap("dependent", "app")
            dependent["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                         "uid": uid}]
            await create(core, "team", dependent, configmap("alone", "app"))
            return uid

    async def reload(uid: str) -> None:
        async with hub_core(tmp_path) as core:
            gc = core.runtime.gc
            assert gc.dependents.get(uid) == {Key("team", "configmaps", "app", "dependent")}
            indexed = {key for keys in gc.dependents.values() for key in keys}
            assert Key("team", "configmaps", "app", "alone") not in indexed  # it holds no ownerReferences

    uid = asyncio.run(write())
    asyncio.run(reload(uid))
