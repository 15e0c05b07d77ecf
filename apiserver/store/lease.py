"""Leadership: which hub process runs the singletons (controllers, placement writes, compaction).

Any number of hub processes on one PostgreSQL database serve requests, watches and syncer streams; one
of them at a time also runs the work that must not be done twice. It holds the lease: a session-level
advisory lock on a connection kept for the purpose. PostgreSQL releases the lock the moment that
session ends, so when the holder dies (even ``kill -9``: the kernel closes its socket) a standby, which
tries for the lock every ``RETRY_INTERVAL``, takes over within about that long.

The holder checks its lease connection every ``CHECK_INTERVAL``; if the connection is lost (the database
stopped or restarts) the lock went with the session: the holder stops counting as leader (``held`` is false,
so gated writers hold off) and takes the lock again once the database is back, before the standbys, which
give it ``HOLDER_GRACE`` after an outage. Only if another process took it meanwhile is ``lost`` called (the
hub exits, as kube-controller-manager does when its leader election is lost, and is restarted as a standby):
singletons already started cannot be recalled. On SQLite there is one process, which leads from the start.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from apiserver.store.logstore import LEASE_LOCK, LogStore

log = logging.getLogger(__name__)

RETRY_INTERVAL = 1.0
CHECK_INTERVAL = 1.0
# How long a standby that lost sight of the database waits, once it is back, before trying for the lease: the holder
# from before the outage retakes it within about RETRY_INTERVAL of the database's return.
HOLDER_GRACE = 5.0


class Leadership:
    """Whether this process leads; singletons ``await wait()`` before they start."""

    def __init__(self, held: bool = False) -> None:
        self._held = asyncio.Event()
        if held:
            self._held.set()
        self.listeners: list[Callable[[], None]] = []  # called on the loop when leadership is won

    @property
    def held(self) -> bool:
        return self._held.is_set()

    async def wait(self) -> None:
        await self._held.wait()

    def won(self) -> None:
        if not self._held.is_set():
            self._held.set()
            for listener in self.listeners:
                listener()

    def stop(self) -> None:
        """Nothing to release (a process alone leads until it ends)."""


class PostgresLease(Leadership):
    """Leadership held as a PostgreSQL session advisory lock, tried for and kept by a thread."""

    def __init__(self, store: LogStore, loop: asyncio.AbstractEventLoop, lost: Callable[[str], None]) -> None:
        super().__init__(held=False)
        self.loop = loop
        self.lost = lost
        self._lock = (store.lock_namespace, LEASE_LOCK)
        self._engine = create_engine(store.url, poolclass=NullPool)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spacehub-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        self._engine.dispose()  # closing the session releases the lock for a standby

    def _run(self) -> None:
        raw: Any = None
        try:
            raw = self._acquire(raw)
            if raw is None:
                return
            log.info("this process holds the lease: it runs the controllers and placement writes")
            self.loop.call_soon_threadsafe(self.won)
            while not self._stopping.wait(CHECK_INTERVAL):
                try:
                    raw.driver_connection.execute("SELECT 1")
                except Exception as exc:
                    raw = self._regain(_discard(raw), exc)
                    if raw is None:
                        return
        finally:
            _discard(raw)

    def _acquire(self, raw: Any, attempts: int | None = None) -> Any:
        """The lease connection once it holds the lock; None when stopping, or when ``attempts`` tries found the
        lock held elsewhere. A standby (``attempts`` None) that could not reach the database gives the holder from
        before the outage ``HOLDER_GRACE`` to take the lock again once it is back: the holder would otherwise
        have to exit, and a restart is what riding out a database restart is to spare."""
        unreachable = False
        while not self._stopping.is_set():
            try:
                if raw is None:
                    raw = self._engine.raw_connection()
                    if unreachable and attempts is None and self._stopping.wait(HOLDER_GRACE):
                        break
                    unreachable = False
                cur = raw.driver_connection.cursor()
                raw.driver_connection.autocommit = True
                if cur.execute("SELECT pg_try_advisory_lock(%s, %s)", self._lock).fetchone()[0]:
                    return raw
                if attempts is not None:
                    attempts -= 1
                    if attempts <= 0:
                        return _discard(raw)
            except Exception as exc:
                if not unreachable:
                    log.warning("could not try for the lease (%s); trying again", exc)
                unreachable = True
                raw = _discard(raw)
            self._stopping.wait(RETRY_INTERVAL)
        return _discard(raw)

    def _regain(self, raw: Any, cause: Exception) -> Any:
        """The lease connection failed (the database stopped or restarts): the lock went with the session. Gates
        close at once, and the lock is taken again when the database is back. Should another process have taken
        it meanwhile, this one ends (``lost``): its singletons cannot be recalled, and two holders must never be."""
        log.warning("the lease connection failed (%s): holding off until the database is back", cause)
        self.loop.call_soon_threadsafe(self._held.clear)
        while not self._stopping.is_set():
            try:
                raw = self._engine.raw_connection()
                break
            except Exception:  # still down
                self._stopping.wait(RETRY_INTERVAL)
        else:
            return None
        raw = self._acquire(raw, attempts=1)
        if raw is None:
            if not self._stopping.is_set():
                self.loop.call_soon_threadsafe(self.lost, "another process took the lease while the database was "
                                               "unreachable")
            return None
        log.info("the lease is held again")
        self.loop.call_soon_threadsafe(self.won)  # listeners catch up on what the outage held off
        return raw


def _discard(raw: Any) -> None:
    if raw is not None:
        try:
            raw.close()
        except Exception as exc:  # already broken: nothing more to release
            log.debug("closing the lease connection: %s", exc)
    return None
