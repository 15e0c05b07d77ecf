"""A PostgreSQL connection one task of a hub process keeps for its life, outside SQLAlchemy's pool: the writer's and
the log tail's. Each runs the same few statements over and over, on the event loop, one at a time.

Prepared at first use (``prepare_threshold=0``) and in autocommit mode: a statement alone is its own transaction, and
a task that needs a longer one begins and ends it itself (a transaction psycopg begins costs a round trip of its own).
A connection that failed is closed and the next use opens another, once the database answers again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import psycopg

from apiserver.store.logstore import LogStore


class HeldSession:
    def __init__(self, store: LogStore, setup: Sequence[str] = ()) -> None:
        self._params = store.psycopg_params
        self._setup = setup  # statements each new connection runs first (session settings)
        self._connection: psycopg.AsyncConnection[Any] | None = None

    async def connection(self) -> psycopg.AsyncConnection[Any]:
        """The open connection, opened now if there is none."""
        if self._connection is None or self._connection.closed:
            conn = await psycopg.AsyncConnection.connect(**self._params, prepare_threshold=0, autocommit=True)
            for statement in self._setup:
                await conn.execute(statement)
            self._connection = conn
        return self._connection

    @property
    def backend_pid(self) -> int | None:
        """The server process of the open connection (None when there is none)."""
        conn = self._connection
        return None if conn is None or conn.closed else conn.info.backend_pid

    async def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):  # it may have failed already: that is why it goes
                await self._connection.close()
            self._connection = None
