"""The watch bus's ring of recent changes stays bounded in bytes and keeps decoded objects for the newest only:
a hub with thousands of spaces must not hold every recent change's object decoded. A watch resuming from before
the ring reads the store's history instead."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from apiserver.store import Key, LogRow, LogStore, Write, open_writer
from apiserver.watch import DECODED_WINDOW, Entry, WatchBus, changes


def row(revision: int, size: int = 100) -> LogRow:
    obj = {"metadata": {"name": f"cm-{revision}"}, "data": {"pad": "x" * size}}
    return LogRow(revision, Key("s", "configmaps", "default", f"cm-{revision}"), True, False, 0, orjson.dumps(obj))


def test_the_ring_keeps_at_most_its_bytes_and_older_changes_come_from_the_store() -> None:
    one = len(row(30).value)  # rows 10 to 30 are all this long
    bus = WatchBus(0, ring_bytes=10 * one)
    bus.publish([row(r) for r in range(1, 31)])
    assert bus.since(0, "s", "configmaps") is None  # revision 1 is no longer in the ring: the caller reads the store
    assert [e.revision for e in bus.since(20, "s", "configmaps") or []] == list(range(21, 31))


def test_only_the_newest_changes_keep_their_decoded_object_and_older_ones_still_decode() -> None:
    bus = WatchBus(0)
    count = DECODED_WINDOW + 5
    bus.publish([row(r) for r in range(1, count + 1)])
    newest, oldest = bus.entry(count), bus.entry(1)
    assert newest is not None and oldest is not None
    assert newest.obj() is newest.obj()  # shared by every watcher of the change
    assert oldest.obj() is not oldest.obj()  # decoded for each reader, held by none
    assert oldest.obj()["metadata"] == {"name": "cm-1", "resourceVersion": "1"}
    assert orjson.loads(oldest.wire())["object"]["metadata"]["name"] == "cm-1"


def test_a_watch_from_before_the_ring_reads_the_store_and_one_from_within_it_the_ring(tmp_path: Path) -> None:
    store = LogStore(f"sqlite:///{tmp_path / 'log.db'}")
    bus = WatchBus(store.current_revision(), ring_size=5)

    async def read_history(fn: Callable[..., list[LogRow]], *args: object, **kwargs: object) -> list[LogRow]:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def watch(after: int, count: int) -> list[Entry]:
        got: list[Entry] = []
        async with contextlib.aclosing(changes(bus, store, "s", "configmaps", after, read_history)) as stream:
            async for entry in stream:
                got.append(entry)
                if len(got) == count:
                    return got
        raise AssertionError("the watch ended")

    async def run() -> None:
        def publish(_prior: int, rows: Sequence[LogRow], then: Callable[[], None]) -> None:
            bus.publish(rows)
            then()

        writer = open_writer(store, asyncio.get_running_loop(), publish)
        written = [await writer.write(Write(Key("s", "configmaps", "default", f"cm-{i}"), row(i).value))
                   for i in range(12)]
        await writer.close()
        revisions = [r.revision for r in written]
        assert bus.entry(revisions[0]) is None  # evicted: only the newest 5 are in the ring

        from_store = await watch(revisions[0] - 1, 12)
        assert [e.revision for e in from_store] == revisions
        assert [e.obj()["metadata"]["name"] for e in from_store] == [f"cm-{i}" for i in range(12)]

        from_ring = await watch(revisions[-4], 3)
        assert [e.revision for e in from_ring] == revisions[-3:]
        assert all(e is bus.entry(e.revision) for e in from_ring)  # the ring's entries, no store read

    try:
        asyncio.run(run())
    finally:
        store.close()
