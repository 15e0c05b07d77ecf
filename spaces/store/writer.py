"""Group-commit writer: the only code that appends to the revision log.

Writes from many concurrent requests are queued and committed together, one transaction per batch,
so that the cost of a durable commit (an fsync on SQLite) is shared. Each write carries its
precondition (key must not exist / must be at revision N); a failed precondition fails only that
write. A write's future resolves only after its batch committed, so nothing is acknowledged before
it is durable. After each commit the batch's rows are handed, in revision order, to ``on_commit`` on
the event loop (the log feed), with the newest revision committed before the batch and the resolution
of the batch's futures, which the feed runs once the rows are published.

On PostgreSQL several hub processes write the same log: a transaction-scoped advisory lock serialises
their batches (so revision order is commit order), and each commit notifies the others (``feed``).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from spaces.store.logstore import WRITER_LOCK, Key, LogRow, LogStore, PreconditionFailed

log = logging.getLogger(__name__)

MUST_NOT_EXIST = -1  # precondition for creates
ANY_REVISION = -2  # no precondition (e.g. purging a deleted space)

_MAX_BATCH = 256


@dataclass
class Write:
    key: Key
    value: bytes  # the object's JSON without resourceVersion; for deletes, its final state
    deleted: bool = False
    # MUST_NOT_EXIST, ANY_REVISION, or the revision the key must currently have.
    expect: int = ANY_REVISION
    future: asyncio.Future[LogRow] | None = field(default=None, repr=False)


class GroupCommitWriter:
    def __init__(self, store: LogStore, loop: asyncio.AbstractEventLoop,
                 on_commit: Callable[[int, Sequence[LogRow], Callable[[], None]], None],
                 observe_batch: Callable[[int, float], None] | None = None) -> None:
        self.store = store
        self.loop = loop
        self.on_commit = on_commit
        self.observe_batch = observe_batch
        self._queue: queue.SimpleQueue[Write | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="spacehub-writer", daemon=True)
        self._stopped = False
        self._thread.start()

    async def write(self, w: Write) -> LogRow:
        if self._stopped:
            raise RuntimeError("store writer is stopped")
        w.future = self.loop.create_future()
        self._queue.put(w)
        return await w.future

    async def write_many(self, writes: Sequence[Write]) -> list[LogRow | BaseException]:
        """Queue several independent writes; each succeeds or fails on its own."""
        futures = []
        for w in writes:
            w.future = self.loop.create_future()
            futures.append(w.future)
            self._queue.put(w)
        return list(await asyncio.gather(*futures, return_exceptions=True))

    def stop(self) -> None:
        self._stopped = True
        self._queue.put(None)
        self._thread.join(timeout=30)

    # --- writer thread ----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < _MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._commit(batch)
                    return
                batch.append(nxt)
            self._commit(batch)

    def _commit(self, batch: list[Write]) -> None:
        started = time.perf_counter()
        results: list[LogRow | BaseException] = []
        committed: list[LogRow] = []
        try:
            with self.store.engine.begin() as conn:
                # The writer is the hottest SQL path: it uses the driver's cursor directly with
                # two fixed statements instead of SQLAlchemy's per-execute statement handling.
                cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
                if self.store.is_postgres:
                    # Serialise writers across hub processes so revision order equals commit order.
                    cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", (self.store.lock_namespace, WRITER_LOCK))
                cur.execute("SELECT COALESCE(MAX(id), 0) FROM kv_log")
                prior = int(cur.fetchone()[0])
                results, committed = self._append(cur, batch)
                if committed and self.store.is_postgres:  # delivered to the other processes at commit
                    cur.execute("SELECT pg_notify(%s, %s)", (self.store.channel, str(committed[-1].revision)))
        except Exception as exc:  # the whole batch failed to commit: nothing was acknowledged
            log.exception("store commit failed")
            results = [exc for _ in batch]
            committed = []
            prior = 0  # nothing to publish; the feed learns of other commits from their notifications
        if self.observe_batch is not None:
            self.observe_batch(len(batch), time.perf_counter() - started)
        self.loop.call_soon_threadsafe(self._deliver, batch, results, committed, prior)

    def _append(self, cur: Any, batch: list[Write]) -> tuple[list[LogRow | BaseException], list[LogRow]]:
        """Check each write's precondition and append its row, in batch order; rows in revision order.

        Round trips, not rows, are what a batch costs (each one also waits for the GIL back from the event
        loop's thread): the newest row of every key is read at once, and the rows are inserted at once,
        except that a key written twice in one batch flushes the rows before its second write.
        """
        latest = self._latest(cur, list(dict.fromkeys(w.key for w in batch)))
        results: list[LogRow | BaseException | None] = [None] * len(batch)
        pending: list[tuple[int, Write, bool, int]] = []  # (index in batch, write, created, prev_revision)

        def flush() -> None:
            revisions = self._insert(cur, [(*w.key, created, w.deleted, prev, w.value) for _, w, created, prev
                                           in pending])
            for (index, w, created, prev), revision in zip(pending, revisions, strict=True):
                results[index] = LogRow(revision, w.key, created, w.deleted, prev, w.value)
                latest[w.key] = (revision, w.deleted)
            pending.clear()
            pending_keys.clear()

        pending_keys: set[Key] = set()
        for index, w in enumerate(batch):
            if w.key in pending_keys:
                flush()
            prev_rev, prev_deleted = latest[w.key]
            exists = not prev_deleted
            ok = (
                w.expect == ANY_REVISION
                or (w.expect == MUST_NOT_EXIST and not exists)
                or (w.expect >= 0 and exists and prev_rev == w.expect)
            )
            if not ok or (w.deleted and not exists):
                results[index] = PreconditionFailed(w.key, prev_rev if exists else 0)
                continue
            pending.append((index, w, not exists, prev_rev if exists else 0))
            pending_keys.add(w.key)
        flush()
        done = [r for r in results if r is not None]
        return done, [r for r in done if isinstance(r, LogRow)]

    def _latest(self, cur: Any, keys: list[Key]) -> dict[Key, tuple[int, bool]]:
        """(revision, deleted) of each key's newest row; (0, True) for a key never written."""
        if not keys:
            return {}
        lookup = self.store.batch_statements[0]
        if self.store.is_postgres:
            cur.execute(lookup, [list(column) for column in zip(*keys, strict=True)])
            found = [(row[0], row[1]) for row in cur.fetchall()]
        else:
            cur.execute(lookup, (orjson.dumps([tuple(key) for key in keys]),))
            packed = dict(orjson.loads(cur.fetchone()[0]))  # index -> id * 2 + deleted, or None
            found = [(None, None) if packed.get(i) is None else divmod(packed[i], 2) for i in range(len(keys))]
        return {key: (0, True) if revision is None else (int(revision), bool(deleted))
                for key, (revision, deleted) in zip(keys, found, strict=True)}

    def _insert(self, cur: Any, rows: list[tuple[Any, ...]]) -> list[int]:
        """Append the rows in order; their revisions."""
        if not rows:
            return []
        insert = self.store.batch_statements[1]
        if self.store.is_postgres:
            cur.execute(insert, [list(column) for column in zip(*rows, strict=True)])
            # Ids come from a sequence in insertion order, which the statement's ORDER BY fixes: sorted, they
            # match the rows whatever order RETURNING lists them in.
            return sorted(int(row[0]) for row in cur.fetchall())
        cur.execute(insert, (orjson.dumps([(*row[:4], int(row[4]), int(row[5]), row[6], row[7].decode())
                                           for row in rows]),))
        last = int(cur.lastrowid)
        return list(range(last - len(rows) + 1, last + 1))

    def _deliver(self, batch: list[Write], results: list[Any], committed: list[LogRow], prior: int) -> None:
        self.on_commit(prior, committed, lambda: self._resolve(batch, results))

    @staticmethod
    def _resolve(batch: list[Write], results: list[Any]) -> None:
        for w, res in zip(batch, results, strict=True):
            fut = w.future
            if fut is None or fut.done():
                continue
            if isinstance(res, BaseException):
                fut.set_exception(res)
            else:
                fut.set_result(res)
