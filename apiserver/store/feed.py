"""The log feed: every committed row, this process's and other hub processes', published once, in order.

One hub process alone (SQLite) only ever sees its own commits, and the writer hands them over as it makes
them. Several processes on one PostgreSQL database each commit into the same log, so each must also
publish what the others committed, without reordering or repeating anything: a watch in any process
sees every change in revision order, and every in-memory index (catalogue, inventory, placement) follows
the same history. Like kine's log tail, the feed reads the rows it has not seen from the log itself; a
local commit is published at once when nothing from another process came before it, so the common case
costs no read.

The writer reports, with each batch, ``prior``: the newest revision committed before the batch (read
under the writers' lock, so everything up to it is committed and visible). Another process's commit is
known from a PostgreSQL notification (``LogNotices``) or, should one be lost, from a periodic look at
the newest revision. Those rows are read by ``LogTail``: one statement on a connection of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from apiserver.store.logstore import TAIL, Compacted, LogRow, LogStore

log = logging.getLogger(__name__)

POLL_INTERVAL = 1.0  # seconds between looks at the newest revision when no notification came
RETRY_INTERVAL = 1.0  # seconds before reading the log again after a failed read


class LogFeed:
    """Publishes committed rows strictly in revision order, each exactly once.

    Runs on the event loop. ``committed`` takes a local batch with its ``prior``; ``notified`` takes the
    newest revision another process committed. Work is taken in arrival order; a gap (rows this process
    has not seen below what comes next) is filled from the log before going on. ``then`` (the resolution
    of a batch's writes) runs after its rows were published, so a client that reads its own write's
    revision from any watch or index of this process finds it there.
    """

    def __init__(self, read: Callable[[int, int], Awaitable[list[LogRow]]],
                 publish: Callable[[Sequence[LogRow]], None], start_revision: int,
                 fatal: Callable[[str], None]) -> None:
        self.read = read  # the rows in (after, upto], oldest first
        self.publish = publish
        self.fatal = fatal  # the log was compacted past what this process has seen: it cannot follow it
        self.delivered = start_revision  # every row up to here has been published (or did not exist)
        self._work: deque[tuple[int, Sequence[LogRow], Callable[[], None] | None]] = deque()
        self._filling: asyncio.Task[None] | None = None

    def committed(self, prior: int, rows: Sequence[LogRow], then: Callable[[], None] | None = None) -> None:
        if not rows and then is not None:
            # Nothing was written (the database refused the batch, or each write's precondition failed): the
            # answers need not wait behind a read of the log, which cannot finish while the database is down.
            then()
            return
        self._work.append((prior, rows, then))
        self._pump()

    def notified(self, newest: int) -> None:
        if newest <= self.delivered:
            return
        if self._work and not self._work[-1][1] and self._work[-1][2] is None:
            # Notices that pile up while a read is under way are one read: the last waiting one reaches further.
            self._work[-1] = (max(newest, self._work[-1][0]), (), None)
        else:
            self._work.append((newest, (), None))
        self._pump()

    def _pump(self) -> None:
        while self._work and self._filling is None:
            prior, rows, then = self._work[0]
            if prior > self.delivered:
                self._filling = asyncio.get_running_loop().create_task(self._fill(prior), name="log-feed-fill")
                return
            self._work.popleft()
            self._publish(rows)
            if then is not None:
                then()

    def _publish(self, rows: Sequence[LogRow]) -> None:
        fresh = [row for row in rows if row.revision > self.delivered]
        if fresh:
            self.delivered = fresh[-1].revision
            self.publish(fresh)

    async def _fill(self, upto: int) -> None:
        """Publish the rows in (delivered, upto] from the log; retried until the database answers."""
        try:
            while True:
                try:
                    rows = await self.read(self.delivered, upto)
                    break
                except Compacted as exc:
                    self.fatal(f"this process fell behind the shared log: {exc}")
                    return
                except Exception:
                    log.exception("reading the log after revision %d failed; retrying", self.delivered)
                    await asyncio.sleep(RETRY_INTERVAL)
            self._publish(rows)
            self.delivered = max(self.delivered, upto)
        finally:
            self._filling = None
        self._pump()


class LogTail:
    """Reads what other hub processes committed, for the feed: one statement (the rows and the revision the log was
    compacted to) on a PostgreSQL connection held for the purpose, on the event loop.

    Measured against a pooled read (a connection checked out and pinged, the compaction read apart, each in its own
    transaction): 35-60 µs of this process's CPU a read instead of about 500, and one round trip instead of six. With
    three processes every process reads like this for each batch the others commit."""

    def __init__(self, store: LogStore) -> None:
        from apiserver.store.pgsession import HeldSession  # psycopg: only processes on PostgreSQL have a tail

        self.store = store
        self._statement = TAIL.format(after="%s", upto="%s")
        self._session = HeldSession(store)

    async def open(self) -> None:
        """Connect now: the first read, another process's first commit, then waits for no new server process."""
        await self._session.connection()

    async def read(self, after: int, upto: int) -> list[LogRow]:
        conn = await self._session.connection()
        try:
            # Binary results: the values (bytea) come as they are, not as hex for the server to write and this
            # process to parse (about a sixth of a 50-row read's CPU here).
            cur = await conn.cursor(binary=True).execute(self._statement, (after, upto))
            found = await cur.fetchall()
        except Exception:
            await self.close()  # a fresh connection for the next read, once the database answers again
            raise
        return self.store.tail_rows(after, found)

    async def close(self) -> None:
        await self._session.close()


class LogNotices:
    """Tells the feed of other processes' commits: PostgreSQL LISTEN, and a look at the newest revision
    whenever the channel was quiet for ``poll_interval`` seconds (a notification lost while reconnecting).

    Listens on the event loop, on a connection of its own: a notice is read when the loop sees its socket
    readable and goes to the feed in the same step. A thread listening instead woke for each notice, waited for
    the interpreter lock and woke the loop through its self-pipe, a cost every follower paid for every batch
    another process committed.

    ``own_session`` is the server process id of this process's writer connection (None when it has none):
    notices of its own commits are skipped, the writer hands those over itself, and hearing them too would
    read the log for rows on their way already."""

    def __init__(self, store: LogStore, notified: Callable[[int], None],
                 own_session: Callable[[], int | None] = lambda: None, poll_interval: float = POLL_INTERVAL) -> None:
        from apiserver.store.pgsession import HeldSession  # psycopg: only processes on PostgreSQL listen

        self.notified = notified
        self.own_session = own_session
        self.poll_interval = poll_interval
        self.channel = store.channel  # each commit's payload is its newest revision
        self._session = HeldSession(store)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="log-notices")

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._session.close()

    async def _run(self) -> None:
        while True:
            try:
                await self._listen()
            except Exception as exc:
                log.warning("log notifications interrupted (%s); reconnecting", exc)
                await self._session.close()
                await asyncio.sleep(RETRY_INTERVAL)

    async def _listen(self) -> None:
        conn = await self._session.connection()
        await conn.execute(f"LISTEN {self.channel}")
        while True:
            newest = 0
            async for notice in conn.notifies(timeout=self.poll_interval):
                if notice.pid == self.own_session():
                    continue
                newest = max(newest, int(notice.payload))
                self.notified(newest)
            if newest == 0:  # no other process was heard: make sure nothing was missed
                row = await (await conn.execute("SELECT COALESCE(MAX(id), 0) FROM kv_log")).fetchone()
                self.notified(int(row[0]) if row is not None else 0)
