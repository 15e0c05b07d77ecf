"""Group-commit writers: the only code that appends to the revision log.

Writes from many concurrent requests are queued and committed together, one transaction per batch,
so that the cost of a durable commit (an fsync on SQLite) is shared. Each write carries its
precondition (key must not exist / must be at revision N); a failed precondition fails only that
write. A write's future resolves only after its batch committed, so nothing is acknowledged before
it is durable. After each commit the batch's rows are handed, in revision order, to ``on_commit`` on
the event loop (the log feed), with the newest revision committed before the batch and the resolution
of the batch's futures, which the feed runs once the rows are published.

What a batch does is decided once (:func:`plan`); how its two statements reach the database differs. On
SQLite a thread runs them (the driver blocks); every statement it runs costs it a wait for the GIL, which
the event loop's thread holds under load, so a batch costs two statements, not two per write
(:class:`GroupCommitWriter`). On PostgreSQL the writer runs on the event loop with an asyncio driver, so
waiting for the server costs no GIL hand-over at all (``apiserver.store.pgwriter``); there several hub
processes write the same log, a transaction-scoped advisory lock serialises their batches (so revision
order is commit order), and each commit notifies the others (``feed``).

A batch the database refuses for want of space or because its disk fails (:func:`storage_failure`) fails
every write of it with :class:`StorageFailed` and rolls back whole; the writer remembers the cause
(``failing``) until a commit succeeds again, so that readiness can say why and recover without a restart.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from apiserver.store.logstore import Key, LogRow, LogStore, PreconditionFailed, right_sized

log = logging.getLogger(__name__)

MUST_NOT_EXIST = -1  # precondition for creates
ANY_REVISION = -2  # no precondition (e.g. purging a deleted space)

MAX_BATCH = 256

OnCommit = Callable[[int, Sequence[LogRow], Callable[[], None]], None]
# What a plan asks of its driver: the newest (revision, deleted) of these keys, or to append these rows.
Request = tuple[str, list[Any]]
Outcome = LogRow | BaseException


# SQLite's primary result codes for a full disk (or database) and for an I/O error (extended codes add high bits).
_SQLITE_STORAGE_CODES = (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)
# PostgreSQL's SQLSTATEs for the same: disk_full, and class 58 (system errors: io_error, ...).
_PG_DISK_FULL, _PG_SYSTEM_ERROR_CLASS = "53100", "58"
# The server is shutting down or starting: admin_shutdown, crash_shutdown, cannot_connect_now.
_PG_SHUTDOWN_STATES = ("57P01", "57P02", "57P03")


class StorageFailed(Exception):
    """The database refused a commit for want of space or because its disk failed; nothing of the batch was
    written. Its message is the database's own (SQLite's "database or disk is full")."""


class StoreUnavailable(StorageFailed):
    """The database cannot be reached (stopped, restarting, connection refused or lost); nothing of the batch was
    written. Clients get 503 with Retry-After: the same request succeeds once the database is back."""


def store_unavailable(exc: BaseException) -> str | None:
    """The driver's message when ``exc`` (or what it wraps) says the database server cannot be reached: a refused
    or lost connection (psycopg's OperationalError, SQLSTATE class 08) or a server shutting down (57P01-57P03).
    None for any other failure."""
    seen: BaseException | None = exc
    while seen is not None:
        sqlstate = getattr(seen, "sqlstate", None)
        if isinstance(sqlstate, str) and (sqlstate.startswith("08") or sqlstate in _PG_SHUTDOWN_STATES):
            return str(seen).strip()
        if type(seen).__module__.startswith("psycopg") and type(seen).__name__ == "OperationalError":
            return str(seen).strip()
        seen = getattr(seen, "orig", None) or seen.__cause__  # SQLAlchemy's wrapper holds the driver's error
    return None


def storage_failure(exc: BaseException) -> str | None:
    """The database's message when ``exc`` (or what it wraps) says the disk is full or failing; None for any other
    failure."""
    seen: BaseException | None = exc
    while seen is not None:
        code = getattr(seen, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in _SQLITE_STORAGE_CODES:
            return str(seen)
        sqlstate = getattr(seen, "sqlstate", None)
        if isinstance(sqlstate, str) and (sqlstate == _PG_DISK_FULL or sqlstate.startswith(_PG_SYSTEM_ERROR_CLASS)):
            return str(seen).strip()
        seen = getattr(seen, "orig", None) or seen.__cause__  # SQLAlchemy's wrapper holds the driver's error
    return None


@dataclass
class Write:
    key: Key
    value: bytes  # the object's JSON without resourceVersion; for deletes, its final state
    deleted: bool = False
    # MUST_NOT_EXIST, ANY_REVISION, or the revision the key must currently have.
    expect: int = ANY_REVISION
    future: asyncio.Future[LogRow] | None = field(default=None, repr=False)


def plan(batch: Sequence[Write]) -> Generator[Request, Any, list[Outcome]]:
    """Check each write's precondition and append its row, in batch order; each write's outcome.

    Asks its driver (``send``) first ``("latest", keys)`` for the (revision, deleted) of every key's newest
    row, then ``("append", rows)`` for the revisions of appended rows, as few times as it can: a key written
    twice in one batch appends the rows before its second write, so that write sees the first. The batch's
    final append is asked as ``("last append", rows)``: nothing is asked after it, so a driver may commit
    along with it rather than after its answer.
    """
    keys = list(dict.fromkeys(w.key for w in batch))
    found: list[tuple[int, bool]] = yield ("latest", keys)
    latest = dict(zip(keys, found, strict=True))
    results: list[Outcome | None] = [None] * len(batch)
    pending: list[tuple[int, Write, bool, int]] = []  # (index in batch, write, created, prev_revision)
    pending_keys: set[Key] = set()

    def rows() -> list[Any]:
        return [(*w.key, created, w.deleted, prev, w.value) for _, w, created, prev in pending]

    for index, w in enumerate(batch):
        if w.key in pending_keys:
            revisions = yield ("append", rows())
            _appended(pending, revisions, results, latest)
            pending_keys.clear()
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
    if pending:
        revisions = yield ("last append", rows())
        _appended(pending, revisions, results, latest)
    return [r for r in results if r is not None]


def _appended(pending: list[tuple[int, Write, bool, int]], revisions: list[int], results: list[Outcome | None],
              latest: dict[Key, tuple[int, bool]]) -> None:
    for (index, w, created, prev), revision in zip(pending, revisions, strict=True):
        # The committed row outlives the write (the watch ring, the recent rows): its value right-sized once, here
        # (SQLite's writer thread; PostgreSQL's writer plans on the event loop, where a copy is ~1 µs a row too).
        results[index] = LogRow(revision, w.key, created, w.deleted, prev, right_sized(w.value))
        latest[w.key] = (revision, w.deleted)
    pending.clear()


class Writer:
    """What every writer offers: queueing writes, and handing each committed batch to ``on_commit``."""

    def __init__(self, store: LogStore, loop: asyncio.AbstractEventLoop, on_commit: OnCommit,
                 observe_batch: Callable[[int, float], None] | None = None) -> None:
        self.store = store
        self.loop = loop
        self.on_commit = on_commit
        self.observe_batch = observe_batch
        self._stopped = False
        # Why the database refuses commits (its message), from a commit that failed so until one succeeds.
        self.failing: str | None = None
        self.unavailable: str | None = None  # why the database cannot be reached, until a commit succeeds
        self._refused_bytes = 0  # the size of the values of the batch refused last

    @property
    def session(self) -> int | None:
        """The server process id of the database session that commits (PostgreSQL's notices name it), if any."""
        return None

    async def write(self, w: Write) -> LogRow:
        if self._stopped:
            raise RuntimeError("store writer is stopped")
        w.future = self.loop.create_future()
        self._enqueue(w)
        return await w.future

    async def write_many(self, writes: Sequence[Write]) -> list[LogRow | BaseException]:
        """Queue several independent writes, to be committed together (in batches of ``MAX_BATCH`` when they are
        more); each succeeds or fails on its own."""
        futures = []
        for w in writes:
            w.future = self.loop.create_future()
            futures.append(w.future)
        self._enqueue_all(writes)
        return list(await asyncio.gather(*futures, return_exceptions=True))

    async def commit_batch(self, batch: list[Write]) -> None:
        """Commit exactly these writes as one batch, outside the queue (their futures must be set)."""
        raise NotImplementedError

    def failed_batch(self, batch: list[Write], exc: Exception) -> Exception:
        """What each write of a batch that failed to commit gets: :class:`StorageFailed` when the disk is full or
        failing (logged once when that starts, not once per batch), else the error itself (logged)."""
        unreachable = store_unavailable(exc)
        if unreachable is not None:
            if self.unavailable is None:  # once per outage, not once per batch
                log.error("the store is unavailable: %s", unreachable)
            self.unavailable = unreachable
            return StoreUnavailable(unreachable)
        cause = storage_failure(exc)
        if cause is None:
            log.exception("store commit failed")
            return exc
        if self.failing is None:
            log.error("the store refuses writes: %s", cause)
        self.failing = cause
        self._refused_bytes = sum(len(w.value) for w in batch)
        return StorageFailed(cause)

    def committed_batch(self) -> None:
        if self.unavailable is not None:
            log.warning("the store is available again")
            self.unavailable = None
        if self.failing is not None:
            log.warning("the store takes writes again")
            self.failing = None

    def probe(self) -> str | None:
        """Why the store cannot take writes now, or None (in a worker thread). On PostgreSQL, whether the server
        answers, and once it did not, whether it takes a tiny write again; while commits fail for want of space,
        whether a tiny write fits once the refused batch would. So readiness says why and returns when the
        database is back or space is freed, without waiting for a client's write."""
        if self.failing is None and self.store.is_postgres:
            try:
                if self.unavailable is None:
                    self.store.ping()
                else:
                    self.store.probe_write()
            except Exception as exc:
                unreachable = store_unavailable(exc)
                if unreachable is None:
                    raise
                return f"the store is unavailable: {unreachable}"
            self.committed_batch()
            return None
        if self.failing is None:
            return None
        # A small write may fit where the refused batch did not (SQLite rewrites its WAL file in place): ready
        # again only once the refused batch would fit too.
        free = self.store.free_bytes()
        if free is not None and free < self._refused_bytes:
            return f"{self.failing} ({free} bytes free, the refused write needs {self._refused_bytes})"
        try:
            self.store.probe_write()
        except Exception as exc:
            cause = storage_failure(exc)
            if cause is None:
                raise
            return cause
        self.committed_batch()
        return None

    async def close(self) -> None:
        """Commit what is queued, then stop taking writes."""
        raise NotImplementedError

    def _enqueue(self, w: Write) -> None:
        raise NotImplementedError

    def _enqueue_all(self, writes: Sequence[Write]) -> None:
        """Queue writes so that no batch takes only some of them (a writer on the loop: nothing runs between)."""
        for w in writes:
            self._enqueue(w)

    def _deliver(self, batch: list[Write], results: list[Any], committed: list[LogRow], prior: int) -> None:
        """On the loop: the batch to the feed, which resolves its futures once the rows are published."""
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


class GroupCommitWriter(Writer):
    """SQLite: a thread takes whatever is queued when it is free and commits it as one batch."""

    def __init__(self, store: LogStore, loop: asyncio.AbstractEventLoop, on_commit: OnCommit,
                 observe_batch: Callable[[int, float], None] | None = None) -> None:
        super().__init__(store, loop, on_commit, observe_batch)
        # A list: the writes of one ``write_many``, taken into one batch together.
        self._queue: queue.SimpleQueue[Write | list[Write] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="spacehub-writer", daemon=True)
        self._thread.start()

    def _enqueue(self, w: Write) -> None:
        self._queue.put(w)

    def _enqueue_all(self, writes: Sequence[Write]) -> None:
        # One item per batch's worth: the thread may wake between two puts and commit the first writes alone.
        for start in range(0, len(writes), MAX_BATCH):
            self._queue.put(list(writes[start:start + MAX_BATCH]))

    async def commit_batch(self, batch: list[Write]) -> None:
        await self.loop.run_in_executor(None, self._commit, batch)

    async def close(self) -> None:
        self._stopped = True
        self._queue.put(None)
        await self.loop.run_in_executor(None, self._thread.join, 30)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = first if isinstance(first, list) else [first]
            while len(batch) < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._commit(batch)
                    return
                if isinstance(nxt, list):
                    batch.extend(nxt)
                else:
                    batch.append(nxt)
            self._commit(batch)

    def _commit(self, batch: list[Write]) -> None:
        started = time.perf_counter()
        try:
            with self.store.engine.begin() as conn:
                # The driver's cursor directly: the writer is the hottest SQL path.
                cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
                cur.execute("SELECT COALESCE(MAX(id), 0) FROM kv_log")
                prior = int(cur.fetchone()[0])
                results = self._drive(cur, plan(batch))
        except Exception as exc:  # the whole batch failed to commit and rolled back: nothing was acknowledged
            failure = self.failed_batch(batch, exc)
            results, prior = [failure for _ in batch], 0
        else:
            self.committed_batch()
        committed = [r for r in results if isinstance(r, LogRow)]
        if self.observe_batch is not None:
            self.observe_batch(len(batch), time.perf_counter() - started)
        self.loop.call_soon_threadsafe(self._deliver, batch, results, committed, prior)

    def _drive(self, cur: Any, steps: Generator[Request, Any, list[Outcome]]) -> list[Outcome]:
        request = next(steps)
        while True:
            kind, arg = request
            answer = self._latest(cur, arg) if kind == "latest" else self._append(cur, arg)
            try:
                request = steps.send(answer)
            except StopIteration as done:
                return done.value

    def _latest(self, cur: Any, keys: list[Key]) -> list[tuple[int, bool]]:
        cur.execute(self.store.batch_statements[0], (orjson.dumps([tuple(key) for key in keys]),))
        packed = dict(orjson.loads(cur.fetchone()[0]))  # index -> id * 2 + deleted, or None
        return [(0, True) if packed.get(i) is None else (packed[i] // 2, bool(packed[i] % 2))
                for i in range(len(keys))]

    def _append(self, cur: Any, rows: list[tuple[Any, ...]]) -> list[int]:
        cur.execute(self.store.batch_statements[1],
                    (orjson.dumps([(*row[:4], int(row[4]), int(row[5]), row[6], row[7].decode()) for row in rows]),))
        last = int(cur.lastrowid)  # one writer, AUTOINCREMENT: the rows are numbered consecutively
        return list(range(last - len(rows) + 1, last + 1))

