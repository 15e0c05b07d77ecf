"""The log feed of a process that follows other processes' commits on PostgreSQL: a burst of notices is read from
the log in one read, and every row is published once, in revision order.

Runs on the local PostgreSQL in a fresh schema (skipped, saying why, without one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import psycopg
import pytest

from apiserver.store import Compacted, Key, LogRow, LogStore, Write, open_writer
from apiserver.store.feed import LogFeed, LogTail
from apiserver.store.writer import MUST_NOT_EXIST
from tests.polling import eventually


def _commit_configmaps(store: LogStore, count: int) -> list[int]:
    """``count`` single-write batches, as another process commits them: their revisions."""

    async def run() -> list[int]:
        writer = open_writer(store, asyncio.get_running_loop(), lambda _prior, _rows, then: then())
        rows = [await writer.write(Write(Key("s", "configmaps", "default", f"cm-{i}"), b"{}",
                                         expect=MUST_NOT_EXIST)) for i in range(count)]
        await writer.close()
        return [row.revision for row in rows]

    return asyncio.run(run())


def test_notices_that_arrive_during_a_read_are_one_read_and_each_row_is_published_once(pg_url: str) -> None:
    writing, following = LogStore(pg_url), LogStore(pg_url)  # two processes' stores on one schema

    async def run(revisions: list[int]) -> tuple[list[tuple[int, int]], list[int]]:
        published: list[int] = []
        reads: list[tuple[int, int]] = []

        tail = LogTail(following)

        async def read(after: int, upto: int) -> list[LogRow]:
            reads.append((after, upto))
            return await tail.read(after, upto)

        def publish(rows: Sequence[LogRow]) -> None:
            published.extend(row.revision for row in rows)

        feed = LogFeed(read, publish, 0, fatal=lambda why: None)
        for revision in revisions:  # the notices of each commit, heard in a burst
            feed.notified(revision)
        await eventually(lambda: feed.delivered == revisions[-1], timeout=10, message="the followed rows published")
        await tail.close()
        return reads, published

    try:
        revisions = _commit_configmaps(writing, 30)  # another process's, each a batch of its own
        reads, published = asyncio.run(run(revisions))
    finally:
        writing.close()
        following.close()
    assert published == revisions  # each once, in order
    # The first notice starts a read; the 29 that come while it is under way wait as one.
    assert reads == [(0, revisions[0]), (revisions[0], revisions[-1])]


def test_the_tail_reads_what_was_committed_and_refuses_to_read_past_a_compaction(pg_url: str) -> None:
    writing, following = LogStore(pg_url), LogStore(pg_url)
    try:
        revisions = _commit_configmaps(writing, 5)

        async def read(after: int, upto: int) -> list[int]:
            tail = LogTail(following)
            try:
                return [row.revision for row in await tail.read(after, upto)]
            finally:
                await tail.close()

        assert asyncio.run(read(0, revisions[-1])) == revisions
        assert asyncio.run(read(revisions[1], revisions[3])) == revisions[2:4]
        assert asyncio.run(read(revisions[-1], revisions[-1])) == []
        # Compacted up to the last of them: a follower that saw only the first may have lost rows it needs (a key's
        # newest row stays, but its older rows and tombstones go), so it cannot go on.
        horizon = writing.compact(0)
        assert horizon == revisions[-1]
        with pytest.raises(Compacted):
            asyncio.run(read(revisions[0], revisions[-1]))
        assert following.compacted_revision == horizon  # what it found is kept, for watches asking from older
    finally:
        writing.close()
        following.close()


def test_the_tail_reads_again_on_a_new_connection_after_its_own_was_cut(pg_url: str) -> None:
    writing, following = LogStore(pg_url), LogStore(pg_url)
    try:
        revisions = _commit_configmaps(writing, 3)

        async def run() -> list[int]:
            tail = LogTail(following)
            try:
                first = await tail.read(0, revisions[0])
                backend = tail._session.backend_pid
                with psycopg.connect(**following.psycopg_params, autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
                with pytest.raises(psycopg.OperationalError):
                    await tail.read(revisions[0], revisions[-1])
                rest = await tail.read(revisions[0], revisions[-1])
                return [row.revision for row in first + rest]
            finally:
                await tail.close()

        assert asyncio.run(run()) == revisions
    finally:
        writing.close()
        following.close()
