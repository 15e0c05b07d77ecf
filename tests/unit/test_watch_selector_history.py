"""A label-selector watch tells an object leaving its selector (DELETED for that watcher) from one that never
matched, also when the object's previous change has left the watch bus's ring: the previous change is then read
from the store. The ring holds a busy hub's last minutes; an object may not have changed for much longer."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import orjson

from apimachinery.selectors import parse_label_selector
from apiserver.api.watchstream import WatchRequest, WatchStream
from apiserver.spacepaths import ROOT
from apiserver.writeoptions import WriteOptions
from spaces.runtime import SpaceRuntime
from tests.unit.test_object_reads import on_a_runtime, root_type


def test_an_object_leaving_the_selector_is_deleted_for_the_watcher_after_its_previous_change_left_the_ring(
        tmp_path: Path) -> None:
    async def body(runtime: SpaceRuntime) -> None:
        objects = runtime.objects
        ns_type, cm_type = root_type(runtime, "namespaces"), root_type(runtime, "configmaps")
        await objects.create(ROOT, ns_type, "", {"metadata": {"name": "w"}}, WriteOptions())
        for name in ("leaves", "never"):
            labels = {"app": "web"} if name == "leaves" else {"app": "db"}
            await objects.create(ROOT, cm_type, "w", {"metadata": {"name": name, "labels": labels}}, WriteOptions())
        # The ring keeps two changes from here on: the creates above are only in the store.
        runtime.bus._ring_size = 2  # a ring of 50,000 changes would need 50,000 writes to pass
        for i in range(3):
            await objects.create(ROOT, cm_type, "w", {"metadata": {"name": f"filler-{i}"}}, WriteOptions())
        start = (await objects.list(ROOT, cm_type, "w")).resource_version

        req = WatchRequest(ROOT, cm_type, "w", parse_label_selector("app=web"), None, start, False, False, 30.0,
                           None, "")
        events: list[dict[str, Any]] = []

        async def watch() -> None:
            async for chunk in WatchStream(objects, req).body():
                events.append(orjson.loads(chunk))
                if len(events) == 1:
                    return

        watching = asyncio.create_task(watch())
        for name in ("never", "leaves"):
            current = await objects.get(ROOT, cm_type, "w", name)
            current["metadata"]["labels"] = {"app": "other"}
            await objects.update(ROOT, cm_type, "w", name, current, WriteOptions())
        try:
            await asyncio.wait_for(watching, 10)
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("DELETED", "leaves")]

    on_a_runtime(tmp_path, body)
