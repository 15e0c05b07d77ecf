"""The watch bus's ring of recent changes stays bounded in bytes and keeps decoded objects for the newest only:
a hub with thousands of spaces must not hold every recent change's object decoded."""

from __future__ import annotations

import orjson

from apiserver.store import Key, LogRow
from apiserver.watch import DECODED_WINDOW, WatchBus


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
