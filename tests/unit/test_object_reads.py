"""The reads ``apiserver.service.Objects`` offers callers outside the API server, on a real SQLite log: a keyed
read that answers None for an object that is not there (never created, in another namespace, deleted) and
the object as ``get`` serves it otherwise; the stored row of a key; and the whole-store reads in-memory indexes
start from (one space, one kind everywhere, every space but the internal records, counts); and making sure a
namespace exists."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from apimachinery.errors import StatusError
from apiserver.resourcetypes import ResourceType
from apiserver.spacepaths import ROOT
from apiserver.store import INTERNAL_SPACE, Key, Write
from apiserver.writeoptions import DeleteOptions, WriteOptions
from spaces.kind import spaces_catalog
from spaces.runtime import RuntimeSettings, SpaceRuntime


def on_a_runtime(tmp_path: Path, body: Callable[[SpaceRuntime], Awaitable[None]], *, rbac: bool = False,
                 batches: list[int] | None = None) -> None:
    """Run ``body`` on a started space runtime over a fresh SQLite log (``rbac``: spaces get the default roles),
    stopping it whatever happens; each commit's size into ``batches``."""
    async def go() -> None:
        observe = None if batches is None else (lambda size, _seconds: batches.append(size))
        runtime = SpaceRuntime(spaces_catalog(), RuntimeSettings(db_url=f"sqlite:///{tmp_path / 'hub.db'}",
                                                                 rbac=rbac), observe_batch=observe)
        await runtime.open()
        await runtime.start()
        try:
            await body(runtime)
        finally:
            await runtime.stop()

    asyncio.run(go())


def root_type(runtime: SpaceRuntime, resource: str) -> ResourceType:
    rtype = runtime.catalog.by_group_resource(ROOT, resource)
    assert rtype is not None
    return rtype


def test_objects_reads_answer_for_present_missing_and_deleted_objects(tmp_path: Path) -> None:
    async def body(runtime: SpaceRuntime) -> None:
        objects = runtime.objects
        ns_type, cm_type = root_type(runtime, "namespaces"), root_type(runtime, "configmaps")
        for namespace in ("reads", "other"):
            await objects.create(ROOT, ns_type, "", {"metadata": {"name": namespace}}, WriteOptions())
        created = await objects.create(ROOT, cm_type, "reads", {"metadata": {"name": "a"}, "data": {"k": "v"}},
                                       WriteOptions())

        found = await objects.find(ROOT, cm_type, "reads", "a")
        assert found == await objects.get(ROOT, cm_type, "reads", "a")
        assert found is not None and found["data"] == {"k": "v"} and found["kind"] == "ConfigMap"
        assert found["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert await objects.find(ROOT, cm_type, "reads", "b") is None
        assert await objects.find(ROOT, cm_type, "other", "a") is None
        assert await objects.find("elsewhere", cm_type, "reads", "a") is None
        with pytest.raises(StatusError) as missing:
            await objects.get(ROOT, cm_type, "reads", "b")
        assert missing.value.code == 404

        key = Key(ROOT, "configmaps", "reads", "a")
        row = await objects.find_row(key)
        assert row is not None and row.key == key and str(row.revision) == created["metadata"]["resourceVersion"]

        assert [r.key for r in await objects.run_sync(objects.rows_in, ROOT, "configmaps")] == [key]
        assert {r.key.name for r in objects.rows_in(ROOT) if r.key.resource == "namespaces"} >= {"reads", "other"}
        assert key in {r.key for r in objects.rows_of_resource("configmaps")}
        assert objects.count_in(ROOT, "configmaps") == 1
        assert objects.count_by_resource()["configmaps"] == 1
        assert objects.current_revision() >= row.revision

        internal = Key(INTERNAL_SPACE, "records.test", "", "r")
        await objects.writer.write_many([Write(internal, b"{}")])
        assert [r.key for r in objects.rows_in(INTERNAL_SPACE, "records.test")] == [internal]
        assert "records.test" not in objects.count_by_resource()

        await objects.delete(ROOT, cm_type, "reads", "a", DeleteOptions())
        assert await objects.find(ROOT, cm_type, "reads", "a") is None
        assert await objects.find_row(key) is None
        assert objects.rows_in(ROOT, "configmaps") == []
        assert objects.count_in(ROOT, "configmaps") == 0

    on_a_runtime(tmp_path, body)


def test_ensure_namespace_creates_a_missing_one_once_and_leaves_an_existing_one_alone(tmp_path: Path) -> None:
    async def body(runtime: SpaceRuntime) -> None:
        objects = runtime.objects
        ns_type = root_type(runtime, "namespaces")
        assert await objects.find(ROOT, ns_type, "", "made") is None
        await objects.ensure_namespace(ROOT, "made", "a-manager")
        made = await objects.find(ROOT, ns_type, "", "made")
        assert made is not None
        assert [entry["manager"] for entry in made["metadata"]["managedFields"]] == ["a-manager"]
        # Two at once for one name: one creates it, the other takes the AlreadyExists as done.
        await asyncio.gather(*(objects.ensure_namespace(ROOT, n, "other") for n in ("made", "raced", "raced")))
        assert await objects.find(ROOT, ns_type, "", "made") == made
        raced = await objects.find(ROOT, ns_type, "", "raced")
        assert raced is not None and raced["metadata"]["managedFields"][0]["manager"] == "other"

    on_a_runtime(tmp_path, body)


def test_delete_if_present_takes_a_missing_object_as_deleted_and_raises_anything_else(tmp_path: Path) -> None:
    async def body(runtime: SpaceRuntime) -> None:
        objects = runtime.objects
        cm_type = root_type(runtime, "configmaps")
        await objects.ensure_namespace(ROOT, "gone", "test")
        await objects.create(ROOT, cm_type, "gone", {"metadata": {"name": "a"}}, WriteOptions())
        with pytest.raises(StatusError) as conflict:  # a precondition that fails is no 404: it is raised
            await objects.delete_if_present(ROOT, cm_type, "gone", "a", DeleteOptions(uid="not-its-uid"))
        assert conflict.value.code == 409
        assert await objects.find(ROOT, cm_type, "gone", "a") is not None
        await objects.delete_if_present(ROOT, cm_type, "gone", "a")
        assert await objects.find(ROOT, cm_type, "gone", "a") is None
        await objects.delete_if_present(ROOT, cm_type, "gone", "a")  # already gone: no error
        await objects.delete_if_present(ROOT, cm_type, "gone", "never")

    on_a_runtime(tmp_path, body)
