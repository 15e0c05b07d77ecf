"""What each kube space's mirror holds, kept as records in the shared log (``status.records``), so that a hub
process that starts while a kube space's API server is unreachable still places what was placed from it.

A mirror (``placement.mirror``) keeps in memory the rows it synthesizes from its server. Without a copy, a hub
restarted while that server is down knows none of the space's objects: the desired sets it streams omit them,
and a syncer resynchronizing in full (as it does with a new hub process) removes them from its cluster. So one
record per mirrored object holds the row the mirror hands the placement service — its key, its revision (the
object's resourceVersion) and the object. At startup every hub process reads them back and hands them to the
mirrors (``KubeSpaceMirrors.start``) as each space's state, until the server's first complete list replaces it.

Only the lease holder writes, as for every singleton (the other processes keep their mirrors from their own
watches; two writers would undo each other's deletions). It writes what changed in a mirror's rows, coalesced
over ``WRITE_DELAY`` so that a relist or a burst of events costs one batch, and deletes the records of a space
that is no longer a kube space. It writes only from a mirror that completed a list in this process: before
that, the mirror's rows are the records themselves, perhaps older than what the previous holder wrote since. A
process that wins the lease after startup reads the records again and writes what differs from its mirrors.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection, Iterable, Mapping

import orjson

from apiserver.service import Objects
from apiserver.store import Key, LogRow, right_sized
from kubeclient.workqueue import Gate
from placement.mirror import KubeSpaceMirrors
from status.records import Records

log = logging.getLogger(__name__)
RESOURCE = "kubespace-mirror"
WRITE_DELAY = 0.5  # seconds gathering a burst of changes into one batch of writes
RETRY_DELAY = 2.0  # seconds before writing again what the log refused
Kept = dict[str, dict[Key, LogRow]]  # rows by space id, then by key


def encode(key: Key, revision: int, value: bytes | None) -> bytes:
    """A record: the mirrored row's key, revision and object (None in a deleted record's last value)."""
    return orjson.dumps({"key": [key.space, key.resource, key.namespace, key.name], "revision": revision,
                         "object": None if value is None else orjson.Fragment(value)})


def decode(value: bytes) -> LogRow:
    """A record as the row the mirror would have made of a newly listed object."""
    d = orjson.loads(value)
    return LogRow(int(d["revision"]), Key(*d["key"]), created=True, deleted=False, prev_revision=0,
                  value=right_sized(orjson.dumps(d["object"])))


def by_space(values: Iterable[bytes]) -> Kept:
    kept: Kept = {}
    for value in values:
        row = decode(value)
        kept.setdefault(row.key.space, {})[row.key] = row
    return kept


def revisions(kept: Kept) -> dict[str, dict[Key, int]]:
    return {space: {key: row.revision for key, row in rows.items()} for space, rows in kept.items()}


def differences(rows: Mapping[Key, LogRow], stored: Mapping[Key, int],
                keys: Collection[Key] | None) -> tuple[list[LogRow], list[Key]]:
    """What makes the records of ``keys`` (None: of every key) hold ``rows``, given the revision each record
    holds: the rows to write and the keys whose records to delete."""
    upserts, deletes = [], []
    for key in (rows.keys() | stored.keys()) if keys is None else keys:
        row = rows.get(key)
        if row is None:
            if key in stored:
                deletes.append(key)
        elif stored.get(key) != row.revision:
            upserts.append(row)
    return upserts, deletes


class MirrorLog:
    def __init__(self, objects: Objects, mirrors: KubeSpaceMirrors) -> None:
        self.objects = objects
        self.mirrors = mirrors
        self.records = Records(objects, RESOURCE)
        self.gate: Gate | None = None
        self._stored: dict[str, dict[Key, int]] = {}  # the revision each record holds, by space id and key
        self._current = False  # whether ``_stored`` is what the log holds
        self._dirty: dict[str, set[Key] | None] = {}  # keys to look at by space id (None: all of them)
        self._forgotten: set[str] = set()  # spaces that stopped being kube spaces since the last write
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def load(self, gate: Gate) -> Kept:
        """Every kube space's rows as last recorded, read off the event loop (call at startup)."""
        self.gate = gate
        current = gate.held  # only the holder writes: what it reads now stays what the log holds
        kept = await self.objects.run_sync(lambda: by_space(self.records.load()))
        self._stored = revisions(kept)
        self._current = current
        return kept

    def start(self) -> None:
        self.mirrors.listeners.append(self.changed)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="kube-space-mirror-records")

    def changed(self, space: str, keys: Collection[Key] | None) -> None:
        """A mirror's rows changed (``keys``; None: any of them)."""
        if self.gate is None or not self.gate.held:
            return  # a process that wins the lease looks at every space then
        if keys is None and self.mirrors.get(space) is None:
            self._forgotten.add(space)
        self._mark(space, keys)
        self._wake.set()

    def _mark(self, space: str, keys: Collection[Key] | None) -> None:
        dirty = self._dirty.get(space, set())
        if keys is None or dirty is None:
            self._dirty[space] = None
        else:
            dirty.update(keys)
            self._dirty[space] = dirty

    async def _run(self) -> None:
        assert self.gate is not None, "load() first"
        await self.gate.wait()
        if not self._current:  # won after startup: the previous holder may have written since this process read
            self._stored = revisions(await self.objects.run_sync(lambda: by_space(self.records.load())))
            self._current = True
        # Changes heard before leading were not kept, and records of spaces gone since may remain: look at all.
        for space in self._stored.keys() | {s.id for s in self.mirrors.spaces.all()}:
            self._mark(space, None)
        self._wake.set()
        while True:
            await self._wake.wait()
            await asyncio.sleep(WRITE_DELAY)  # the rest of the burst joins this batch
            if not await self._write():
                await asyncio.sleep(RETRY_DELAY)
                self._wake.set()

    async def _write(self) -> bool:
        """Write what is marked; False (and marked again) if the log refused it."""
        self._wake.clear()
        dirty, forgotten = self._dirty, self._forgotten
        self._dirty, self._forgotten = {}, set()
        changes: list[tuple[Key, bytes, bool]] = []
        after: list[tuple[str, Key, int | None]] = []  # what the records hold once written
        for space, keys in dirty.items():
            mirror = self.mirrors.get(space)
            if mirror is not None and mirror.listed:
                rows: Mapping[Key, LogRow] = mirror.rows
            elif mirror is None or space in forgotten:
                rows = {}  # no longer a kube space (or a new one, not listed yet): its records go
            else:
                continue  # not listed in this process yet: its rows are the records; its first list marks it
            stored = self._stored.get(space, {})
            upserts, deletes = differences(rows, stored, None if space in forgotten else keys)
            for row in upserts:
                changes.append((self._key(row.key), encode(row.key, row.revision, row.value), False))
                after.append((space, row.key, row.revision))
            for key in deletes:
                changes.append((self._key(key), encode(key, stored[key], None), True))
                after.append((space, key, None))
        try:
            await self.records.write(changes)
        except asyncio.CancelledError:  # stopping: ``stop`` writes them
            self._unwritten(dirty, forgotten)
            raise
        except Exception as exc:  # the log is unreachable or refused: the same look again later
            log.warning("kube space mirror records not written (%d changes): %s", len(changes), exc)
            self._unwritten(dirty, forgotten)
            return False
        for space, key, revision in after:
            stored = self._stored.setdefault(space, {})
            if revision is None:
                stored.pop(key, None)
            else:
                stored[key] = revision
            if not stored:
                del self._stored[space]
        return True

    def _unwritten(self, dirty: dict[str, set[Key] | None], forgotten: set[str]) -> None:
        for space, keys in dirty.items():
            self._mark(space, keys)
        self._forgotten |= forgotten

    def _key(self, key: Key) -> Key:
        return self.records.key(key.space, key.resource, key.namespace, key.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        # What changed in the last moments is written now, so that the next process starts from it.
        if self._current and self.gate is not None and self.gate.held and (self._dirty or self._forgotten):
            await self._write()
