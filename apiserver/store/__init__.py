"""The log-structured object store (kine-style) on SQLite or PostgreSQL.

Every write appends one row to ``kv_log``; the row id is the revision and becomes the object's
``resourceVersion``. The newest row of a key is its current value; deletions are tombstone rows.
Watches read the log from a revision; compaction removes superseded rows below a horizon, and a
watch or continue token from before it gets 410 Expired. This package knows nothing about HTTP or
Kubernetes semantics beyond keys, values and revisions.
"""

import asyncio
from collections.abc import Callable

from apiserver.store.logstore import (
    INTERNAL_SPACE,
    Compacted,
    Key,
    LogRow,
    LogStore,
    PreconditionFailed,
    right_sized,
    shared_key,
)
from apiserver.store.writer import (
    GroupCommitWriter,
    OnCommit,
    StorageFailed,
    StoreUnavailable,
    Write,
    Writer,
    storage_failure,
    store_unavailable,
)

__all__ = ["INTERNAL_SPACE", "Compacted", "Key", "LogRow", "LogStore", "PreconditionFailed", "StorageFailed",
           "StoreUnavailable", "Write", "Writer", "open_writer", "right_sized", "shared_key", "storage_failure",
           "store_unavailable"]


def open_writer(store: LogStore, loop: asyncio.AbstractEventLoop, on_commit: OnCommit,
                observe_batch: Callable[[int, float], None] | None = None) -> Writer:
    """The writer for ``store``'s database (PostgreSQL's needs psycopg, an optional dependency)."""
    if store.is_postgres:
        from apiserver.store.pgwriter import PostgresWriter  # psycopg is optional

        return PostgresWriter(store, loop, on_commit, observe_batch)
    return GroupCommitWriter(store, loop, on_commit, observe_batch)
