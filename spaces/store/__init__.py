"""The log-structured object store (kine-style) on SQLite or PostgreSQL.

Every write appends one row to ``kv_log``; the row id is the revision and becomes the object's
``resourceVersion``. The newest row of a key is its current value; deletions are tombstone rows.
Watches read the log from a revision; compaction removes superseded rows below a horizon, and a
watch or continue token from before it gets 410 Expired. This package knows nothing about HTTP or
Kubernetes semantics beyond keys, values and revisions.
"""

from spaces.store.logstore import (
    INTERNAL_SPACE,
    Compacted,
    Key,
    LogRow,
    LogStore,
    PreconditionFailed,
)
from spaces.store.writer import GroupCommitWriter, Write

__all__ = ["INTERNAL_SPACE", "Compacted", "GroupCommitWriter", "Key", "LogRow", "LogStore", "PreconditionFailed",
           "Write"]
