"""The syncer's local memory (SQLite): its stream position and the objects it manages in its cluster.

Why it exists: a syncer restarted while the hub is unreachable must neither delete nor re-create
anything, and must still know which cluster objects are its own and what they should look like (drift
correction goes on without the hub). One file can hold many syncers' state (one row set per target),
so the in-process fleet of ``spacehub sim serve --with-syncers`` uses a single database.

Writes are ordered like the stream: a message's effects are recorded before its ``seq``, so after a
crash the syncer resumes at or before what it applied (re-applying is idempotent).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

SCHEMA = """
CREATE TABLE IF NOT EXISTS position (
    target TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    epoch TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS held (
    target TEXT NOT NULL,
    ident TEXT NOT NULL,
    record BLOB NOT NULL,
    PRIMARY KEY (target, ident)
);
"""


@dataclass
class Position:
    seq: int = 0
    epoch: str = ""


class StateStore:
    """A SQLite file in WAL mode. Used from one event loop; each call is a short local transaction."""

    def __init__(self, path: Path | str) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = str(path)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a power loss may lose the last commits, never corrupt; losing them only means
        # resuming from an earlier seq, which the hub answers with the same changes again.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def position(self, target: str) -> Position:
        row = self.db.execute("SELECT seq, epoch FROM position WHERE target = ?", (target,)).fetchone()
        return Position(int(row[0]), str(row[1])) if row else Position()

    def set_position(self, target: str, position: Position) -> None:
        self.db.execute("INSERT INTO position (target, seq, epoch) VALUES (?, ?, ?) ON CONFLICT (target) "
                        "DO UPDATE SET seq = excluded.seq, epoch = excluded.epoch",
                        (target, position.seq, position.epoch))

    def held(self, target: str) -> dict[str, dict[str, Any]]:
        rows = self.db.execute("SELECT ident, record FROM held WHERE target = ?", (target,)).fetchall()
        return {str(ident): orjson.loads(record) for ident, record in rows}

    def put(self, target: str, ident: str, record: dict[str, Any]) -> None:
        self.db.execute("INSERT INTO held (target, ident, record) VALUES (?, ?, ?) ON CONFLICT (target, ident) "
                        "DO UPDATE SET record = excluded.record", (target, ident, orjson.dumps(record)))

    def remove(self, target: str, ident: str) -> None:
        self.db.execute("DELETE FROM held WHERE target = ? AND ident = ?", (target, ident))

    def close(self) -> None:
        self.db.close()
