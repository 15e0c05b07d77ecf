"""The records a hub keeps of its kube space mirrors (``hub.mirrorlog``), on a real SQLite log: what a mirror holds
is written by the lease holder only, once the mirror listed its server, and read back by the next process as
the rows the mirror would have handed placement; a space that stops being a kube space loses its records; a
process that wins the lease writes what differs from what the previous holder left."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from apiserver.store import Key, LogRow
from apiserver.store.lease import Leadership
from hub.mirrorlog import RESOURCE, MirrorLog, by_space, decode, differences, encode
from placement.mirror import Changed
from spaces.kind import spaces_catalog
from spaces.runtime import RuntimeSettings, SpaceRuntime
from status.records import Records


def _row(space: str, name: str, revision: int, **data: str) -> LogRow:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "app",
                                                                 "resourceVersion": str(revision)}, "data": data}
    return LogRow(revision, Key(space, "configmaps", "app", name), created=True, deleted=False, prev_revision=0,
                  value=orjson.dumps(obj))


def test_a_record_reads_back_as_the_row_of_a_newly_listed_object() -> None:
    row = _row("edge", "a", 7, k="v")
    back = decode(encode(row.key, row.revision, row.value))
    assert back == LogRow(7, row.key, created=True, deleted=False, prev_revision=0, value=back.value)
    assert orjson.loads(back.value) == orjson.loads(row.value)
    assert by_space([encode(row.key, 7, row.value), encode(_row("other", "a", 1).key, 1, b"{}")]).keys() == \
        {"edge", "other"}


def test_only_what_differs_from_the_records_is_written() -> None:
    a, b, c = _row("s", "a", 3), _row("s", "b", 2), _row("s", "c", 1)
    stored = {a.key: 1, b.key: 2, Key("s", "configmaps", "app", "gone"): 4}
    upserts, deletes = differences({r.key: r for r in (a, b, c)}, stored, None)
    assert sorted(r.key.name for r in upserts) == ["a", "c"] and [k.name for k in deletes] == ["gone"]
    # Only the keys named are looked at.
    assert differences({r.key: r for r in (a, b, c)}, stored, [b.key, c.key]) == ([c], [])


@dataclass
class _Mirror:
    rows: dict[Key, LogRow]
    listed: bool = True


@dataclass(frozen=True)
class _Space:
    id: str


@dataclass
class _Spaces:
    mirrors: dict[str, _Mirror]

    def all(self) -> list[_Space]:
        return [_Space(space) for space in self.mirrors]


@dataclass
class _Mirrors:
    """What ``MirrorLog`` reads of ``placement.mirror.KubeSpaceMirrors``: each kube space's mirror, and its news."""

    spaces: _Spaces
    listeners: list[Changed] = field(default_factory=list)

    def get(self, space: str) -> _Mirror | None:
        return self.spaces.mirrors.get(space)

    def tell(self, space: str, keys: Collection[Key] | None) -> None:
        for listener in self.listeners:
            listener(space, keys)


async def _until(check: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(check):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def test_the_lease_holder_keeps_each_listed_mirror_and_a_new_process_reads_it_back(tmp_path: Path) -> None:
    async def go() -> None:
        runtime = SpaceRuntime(spaces_catalog(), RuntimeSettings(db_url=f"sqlite:///{tmp_path / 'hub.db'}"))
        await runtime.open()
        await runtime.start()
        records = Records(runtime.objects, RESOURCE)

        def recorded() -> dict[Key, int]:
            return {row.key: row.revision for rows in by_space(records.load()).values() for row in rows.values()}

        try:
            a, b = _row("edge", "a", 1), _row("edge", "b", 2)
            x = _row("late", "x", 5)  # a kube space whose server this process has not listed yet
            mirrors = _Mirrors(_Spaces({"edge": _Mirror({a.key: a, b.key: b}), "late": _Mirror({x.key: x}, False)}))
            holder = MirrorLog(runtime.objects, mirrors)  # type: ignore[arg-type]
            assert await holder.load(Leadership(held=True)) == {}
            holder.start()
            await _until(lambda: recorded() == {a.key: 1, b.key: 2}, "the listed mirror's records")

            # A change, an addition and a deletion in one burst; the unlisted mirror's rows are never written.
            edge = mirrors.spaces.mirrors["edge"]
            a2, c = _row("edge", "a", 3, k="new"), _row("edge", "c", 4)
            edge.rows = {a2.key: a2, c.key: c}
            mirrors.tell("edge", [a.key, b.key, c.key])
            await _until(lambda: recorded() == {a2.key: 3, c.key: 4}, "the burst's records")

            # A process started now (not holding the lease) reads back what the mirror would hand placement.
            standby_mirrors = _Mirrors(_Spaces({"edge": _Mirror({}, listed=False)}))
            standby = MirrorLog(runtime.objects, standby_mirrors)  # type: ignore[arg-type]
            lease = Leadership(held=False)
            kept = await standby.load(lease)
            assert kept == {"edge": {a2.key: kept["edge"][a2.key], c.key: kept["edge"][c.key]}}
            assert orjson.loads(kept["edge"][a2.key].value)["data"] == {"k": "new"}
            standby.start()

            # The holder writes on while it leads: a space that stops being a kube space loses its records.
            del mirrors.spaces.mirrors["edge"]
            mirrors.tell("edge", None)
            await _until(lambda: recorded() == {}, "a forgotten space's records deleted")
            await holder.stop()

            # The standby listed its server (differently) before it won the lease: it reads the records again (the
            # holder wrote after it started) and writes what differs; a change it heard before leading is covered.
            d = _row("edge", "d", 9)
            standby_mirrors.spaces.mirrors["edge"] = _Mirror({d.key: d})
            standby_mirrors.tell("edge", None)
            assert recorded() == {}  # not while another process leads
            lease.won()
            await _until(lambda: recorded() == {d.key: 9}, "the new holder's records")
            await standby.stop()
        finally:
            await runtime.stop()

    asyncio.run(go())
