"""A store whose database refuses writes for want of space (SQLite's page limit standing in for a full disk,
which tests/integration/test_full_disk.py makes for real): the whole batch fails with StorageFailed and
commits nothing, the writer says why, and the first write that fits again commits and clears it."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from apiserver.store import Key, LogRow, LogStore, StorageFailed, Write, open_writer, storage_failure
from apiserver.store.writer import MUST_NOT_EXIST

PAGE_LIMIT = {"pages": 1_000_000}  # what PRAGMA max_page_count each new connection gets


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LogStore]:
    s = LogStore(f"sqlite:///{tmp_path / 'log.db'}")

    @event.listens_for(s.engine, "connect")
    def _limit(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute(f"PRAGMA max_page_count = {PAGE_LIMIT['pages']}")

    s.engine.dispose()  # connections opened from now on carry the limit
    yield s
    s.close()


def _writes(names: list[str], size: int) -> list[Write]:
    return [Write(Key("s", "configmaps", "default", n), b'"' + b"x" * size + b'"', expect=MUST_NOT_EXIST)
            for n in names]


async def _write_all(store: LogStore, writes: list[Write]) -> tuple[list[LogRow | BaseException], str | None]:
    writer = open_writer(store, asyncio.get_running_loop(), lambda _prior, _rows, then: then())
    try:
        results = await writer.write_many(writes)
        return results, writer.failing
    finally:
        await writer.close()


def test_a_full_database_fails_the_whole_batch_and_takes_writes_again_once_it_fits(store: LogStore) -> None:
    with store.engine.connect() as conn:
        pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar() or 0)
    PAGE_LIMIT["pages"] = pages + 4
    store.engine.dispose()
    before = store.current_revision()

    results, failing = asyncio.run(_write_all(store, _writes([f"big-{i}" for i in range(8)], 50_000)))
    assert all(isinstance(r, StorageFailed) for r in results), results
    assert failing == "database or disk is full"
    assert store.current_revision() == before  # the batch rolled back whole

    PAGE_LIMIT["pages"] = 1_000_000
    store.engine.dispose()
    results, failing = asyncio.run(_write_all(store, _writes(["fits"], 10)))
    assert isinstance(results[0], LogRow) and failing is None


def test_only_full_or_failing_disks_count_as_storage_failures() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    wrapped = RuntimeError("commit failed")
    wrapped.__cause__ = full
    assert storage_failure(full) == "database or disk is full"
    assert storage_failure(wrapped) == "database or disk is full"
    assert storage_failure(locked) is None
    assert storage_failure(ValueError("bad")) is None
    # PostgreSQL: disk_full (53100) and class 58 (system errors such as io_error), as psycopg raises them.
    errors = pytest.importorskip("psycopg.errors")
    assert storage_failure(errors.DiskFull("could not extend file")) == "could not extend file"
    assert storage_failure(errors.lookup("58030")("could not write block")) == "could not write block"
    assert storage_failure(errors.UniqueViolation("duplicate key")) is None
