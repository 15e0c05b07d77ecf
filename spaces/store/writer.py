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
                select_latest, insert = self.store.writer_statements
                current: dict[Key, tuple[int, bool]] = {}
                for w in batch:
                    if w.key in current:
                        prev_rev, prev_deleted = current[w.key]
                    else:
                        cur.execute(select_latest, w.key)
                        found = cur.fetchone()
                        prev_rev, prev_deleted = (int(found[0]), bool(found[1])) if found else (0, True)
                    exists = not prev_deleted
                    ok = (
                        w.expect == ANY_REVISION
                        or (w.expect == MUST_NOT_EXIST and not exists)
                        or (w.expect >= 0 and exists and prev_rev == w.expect)
                    )
                    if not ok or (w.deleted and not exists):
                        results.append(PreconditionFailed(w.key, prev_rev if exists else 0))
                        continue
                    created = not exists
                    cur.execute(insert, (*w.key, created, w.deleted, prev_rev if exists else 0, w.value))
                    rev = cur.fetchone()[0]
                    row = LogRow(int(rev), w.key, created, w.deleted, prev_rev if exists else 0, w.value)
                    current[w.key] = (row.revision, w.deleted)
                    results.append(row)
                    committed.append(row)
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
