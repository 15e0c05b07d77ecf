"""The PostgreSQL writer: group commit on the event loop, with psycopg's asyncio driver.

A thread that talks to a database server gives the GIL up at every round trip and then waits for the event
loop's thread to hand it back, up to the 5 ms switch interval each time; measured, batches of ~35 creates
took 60-80 ms, nearly all of it that wait. On the event loop a round trip is an ``await``: while one batch
is with the server, requests go on being served and the next batch gathers. The batch itself is the same
plan as on SQLite (:func:`apiserver.store.writer.plan`), and its commit notifies the other hub processes.

Several hub processes' writers take turns under the writers' advisory lock, so whatever a batch does while it holds
the lock, the others wait for. A batch that appends once (the common case: no key written twice) is planned before
taking it, against its keys' latest rows read without it, and then sends the lock, the append, the notice and the
commit together: the append inserts nothing if any of its keys changed since that read, and the batch is then
planned again under the lock, as a batch that appends more than once always is. So the lock is held for the
server's work and the commit's flush, not across a wake-up of this process's busy event loop, and a batch costs two
round trips: its read, a statement of its own, and its transaction (begin, lock, append and notice, commit).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import psycopg

from apiserver.store.logstore import (
    PG_APPEND_UNLESS_CHANGED,
    PG_LATEST_AND_NEWEST,
    WRITER_LOCK,
    Key,
    LogRow,
    LogStore,
)
from apiserver.store.pgsession import HeldSession
from apiserver.store.writer import MAX_BATCH, OnCommit, Outcome, Request, Write, Writer, plan

log = logging.getLogger(__name__)

# Each transaction is begun and ended by statements sent in the pipeline with the others (the connection is in
# autocommit mode: a transaction psycopg began itself cost a round trip of its own before the batch's first one). READ
# COMMITTED: each statement sees what was committed before it started, so the rows read after the lock is taken are
# the last holder's, and the optimistic append's check sees what committed since the read (a server or role set to a
# stricter default would read the whole transaction from its first snapshot).
_BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"
_COMMIT = "COMMIT"
_LOCK = "SELECT pg_advisory_xact_lock(%s, %s)"
_NEWEST = "SELECT COALESCE(MAX(id), 0) FROM kv_log"
# Under the lock no other writer appends, so the log's newest id is the batch's last revision, the notice's payload.
_NOTIFY = "SELECT pg_notify(%s, (SELECT MAX(id) FROM kv_log)::text)"
# The keys' newest rows are looked up through kv_log_key whatever the plan (``_NEWEST_OF_KEY`` orders them so), but
# PostgreSQL planned that read anew for every batch of fewer than about 50 keys: its generic plan's estimate assumes
# ten elements an array, so a custom plan for the actual few looked cheaper each time. Measured alone, a read of 15
# keys cost the server 113 µs with a plan each time and 40 µs with the generic one (1 key: 93 and 27 µs). The other
# statements' generic plans were chosen after five executions anyway.
_GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan"


class PostgresWriter(Writer):
    def __init__(self, store: LogStore, loop: asyncio.AbstractEventLoop, on_commit: OnCommit,
                 observe_batch: Callable[[int, float], None] | None = None) -> None:
        super().__init__(store, loop, on_commit, observe_batch)
        self._session = HeldSession(store, setup=(_GENERIC_PLANS,))
        self._queued: deque[Write] = deque()
        self._wake = asyncio.Event()
        self._task = loop.create_task(self._run(), name="store-writer")
        self.redone = 0  # batches planned again under the lock because a key changed after their optimistic read

    def _enqueue(self, w: Write) -> None:
        self._queued.append(w)
        self._wake.set()

    async def commit_batch(self, batch: list[Write]) -> None:
        await self._commit(batch)

    async def close(self) -> None:
        self._stopped = True
        self._wake.set()
        try:
            await asyncio.wait_for(self._task, 30)
        finally:
            await self._session.close()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queued:
                batch = [self._queued.popleft() for _ in range(min(MAX_BATCH, len(self._queued)))]
                await self._commit(batch)
            if self._stopped:
                return

    async def _commit(self, batch: list[Write]) -> None:
        started = time.perf_counter()
        try:
            conn = await self._session.connection()
            done = await self._optimistic(conn, batch)
            results, prior = done if done is not None else await self._locked(conn, batch)
            committed = [r for r in results if isinstance(r, LogRow)]
        except Exception as exc:  # the whole batch failed to commit: nothing was acknowledged
            failure = self.failed_batch(batch, exc)
            results, committed, prior = [failure for _ in batch], [], 0
            await self._session.close()  # a fresh connection for the next batch
        else:
            self.committed_batch()
        if self.observe_batch is not None:
            self.observe_batch(len(batch), time.perf_counter() - started)
        # A callback of its own, as from the SQLite writer's thread: nothing the feed's listeners raise can
        # stop this writer.
        self.loop.call_soon(self._deliver, batch, results, committed, prior)

    async def _optimistic(self, conn: psycopg.AsyncConnection[Any], batch: list[Write]) \
            -> tuple[list[Outcome], int] | None:
        """The batch planned against its keys' latest rows read without the lock, and, if it appends once, that
        append sent with the lock, the newest revision before it, the notice and the commit in one round trip:
        each write's outcome and that revision. None, with nothing written, when the batch must be planned under
        the lock: it appends more than once, or one of its keys changed after the read."""
        steps = plan(batch)
        _latest, keys = next(steps)
        cur = conn.cursor()
        # A statement of its own (autocommit): one round trip, its snapshot the statement's as in any transaction.
        await cur.execute(PG_LATEST_AND_NEWEST, self._columns(keys))
        found = await cur.fetchall()
        seen = int(found[0][2])  # the log's newest id when the keys' rows were read
        try:
            kind, rows = steps.send(self._found(found))
        except StopIteration as refused:  # every precondition failed as of that read, made after each write came
            return refused.value, 0  # nothing to write, no lock to take
        if kind != "last append":
            return None  # planned again under the lock
        # Everything the server runs under the lock goes as two statements: each one sent is Python work of this
        # process between the lock and the commit, while the server waits for the next. Pipeline mode: the
        # transaction's statements go out together, one round trip.
        params = [*self._columns(rows), seen, *self._columns(keys), seen, self.store.channel]
        async with conn.pipeline():
            await conn.execute(_BEGIN)
            await conn.cursor().execute(_LOCK, (self.store.lock_namespace, WRITER_LOCK))
            await cur.execute(PG_APPEND_UNLESS_CHANGED, params)
            await conn.execute(_COMMIT)
        appended = await cur.fetchall()
        if not appended:  # the read went stale; nothing was written or acknowledged
            self.redone += 1
            return None
        prior = int(appended[0][1])
        try:
            steps.send(sorted(int(row[0]) for row in appended))
        except StopIteration as done:
            return done.value, prior
        raise AssertionError("the plan asked for more after its last append")

    async def _locked(self, conn: psycopg.AsyncConnection[Any], batch: list[Write]) -> tuple[list[Outcome], int]:
        """The batch planned under the writers' lock, its rows read once the lock is held: each write's outcome,
        and the newest revision before the batch. The lock is held from the first answer to the commit: one
        wake-up of this process's busy loop, during which the other processes' writers wait."""
        cur, newest = conn.cursor(), conn.cursor()
        async with conn.pipeline():
            await conn.execute(_BEGIN)
            # Serialise writers across hub processes so revision order equals commit order; the statements after
            # it run once it is held (the server runs a pipeline's statements in order).
            await cur.execute(_LOCK, (self.store.lock_namespace, WRITER_LOCK))
            await newest.execute(_NEWEST)
            results, ended = await self._drive(conn, cur, plan(batch))
            prior = int((await newest.fetchone())[0])  # type: ignore[index]
            if not ended:  # the plan ended without a last append
                committed = [r for r in results if isinstance(r, LogRow)]
                if committed:
                    await cur.execute("SELECT pg_notify(%s, %s)", (self.store.channel, str(committed[-1].revision)))
                await conn.execute(_COMMIT)
        return results, prior

    async def _drive(self, conn: psycopg.AsyncConnection[Any], cur: Any,
                     steps: Generator[Request, Any, list[Outcome]]) -> tuple[list[Outcome], bool]:
        """Each write's outcome, and whether the transaction was committed (with the plan's last append)."""
        request = next(steps)
        ended = False
        while True:
            kind, arg = request
            if kind == "latest":
                answer: Any = await self._latest(cur, arg)
            elif kind == "append":
                answer = await self._append(cur, arg)
            else:  # the last append: sent with the notice and the commit, its ids read after
                await cur.execute(self.store.batch_statements[1], self._columns(arg))
                await conn.cursor().execute(_NOTIFY, (self.store.channel,))
                await conn.execute(_COMMIT)
                ended = True
                answer = await self._appended_ids(cur)
            try:
                request = steps.send(answer)
            except StopIteration as done:
                return done.value, ended

    async def _latest(self, cur: Any, keys: list[Key]) -> list[tuple[int, bool]]:
        await cur.execute(self.store.batch_statements[0], self._columns(keys))
        return self._found(await cur.fetchall())

    @staticmethod
    def _found(rows: list[Any]) -> list[tuple[int, bool]]:
        """The (revision, deleted) of each key's newest row, (0, True) for a key without one."""
        return [(0, True) if row[0] is None else (int(row[0]), bool(row[1])) for row in rows]

    async def _append(self, cur: Any, rows: list[tuple[Any, ...]]) -> list[int]:
        await cur.execute(self.store.batch_statements[1], self._columns(rows))
        return await self._appended_ids(cur)

    @staticmethod
    async def _appended_ids(cur: Any) -> list[int]:
        # Ids come from a sequence in insertion order, which the statement's ORDER BY fixes: sorted, they
        # match the rows whatever order RETURNING lists them in.
        return sorted(int(row[0]) for row in await cur.fetchall())

    @staticmethod
    def _columns(rows: list[Any]) -> list[list[Any]]:
        """A batch statement's parameters: one array per column."""
        return [list(column) for column in zip(*rows, strict=True)]

    @property
    def session(self) -> int | None:
        return self._session.backend_pid
