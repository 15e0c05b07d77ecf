"""A hub process's CRD controller that comes to hold the lease looks again at every space that has CRDs: what the
previous holder left undone (a CRD it never reconciled before it died) is reconciled by the new one."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from pathlib import Path

from apiserver.controllers.crds import CRDController
from apiserver.customresources import CRD_RESOURCE
from apiserver.spacepaths import ROOT
from apiserver.writeoptions import WriteOptions
from spaces.runtime import SpaceRuntime
from tests.polling import eventually
from tests.unit.test_object_reads import on_a_runtime, root_type


class Lease:
    """The gate a standby's controllers wait on: closed until this process takes the lease."""

    def __init__(self) -> None:
        self._taken = asyncio.Event()

    @property
    def held(self) -> bool:
        return self._taken.is_set()

    async def wait(self) -> None:
        await self._taken.wait()

    def take(self) -> None:
        self._taken.set()


class SeenSpaces(CRDController):
    """The controller as it is, remembering which spaces were queued for it."""

    def __init__(self, runtime: SpaceRuntime) -> None:
        super().__init__(runtime.objects, runtime.catalog)
        self.queued: list[Hashable] = []

    def add(self, key: Hashable) -> None:
        self.queued.append(key)
        super().add(key)


def test_a_standby_that_takes_the_lease_looks_at_every_space_with_crds(tmp_path: Path) -> None:
    async def body(runtime: SpaceRuntime) -> None:
        crd_type = root_type(runtime, CRD_RESOURCE)
        await runtime.objects.create(ROOT, crd_type, "", {
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}}, WriteOptions())

        async def established() -> bool:
            crd = await runtime.objects.get(ROOT, crd_type, "", "widgets.example.com")
            return any(c["type"] == "Established" and c["status"] == "True"
                       for c in (crd.get("status") or {}).get("conditions", []))

        # The runtime's own controller (this process leads) has written all it will: no commit of a CRD follows.
        await eventually(established, timeout=10, message="the CRD established")
        standby, lease = SeenSpaces(runtime), Lease()
        standby.start(lease)
        try:
            assert standby.queued == []  # nothing loaded, nothing written since it started
            lease.take()
            await eventually(lambda: ROOT in standby.queued, timeout=10, message="the new holder to look at root")
        finally:
            await standby.stop()

    on_a_runtime(tmp_path, body)
