"""The log feed of a process that follows other processes' commits on PostgreSQL: a burst of notices is read from
the log in one read, and every row is published once, in revision order; the tail's reads; the notices themselves
(another process's commits heard, this process's own skipped, listening again after the connection was cut).

Runs on the local PostgreSQL in a fresh schema (skipped, saying why, without one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import psycopg
import pytest

from apiserver.store import Compacted, Key, LogRow, LogStore, Write, open_writer
from apiserver.store.feed import LogFeed, LogNotices, LogTail
from apiserver.store.writer import MUST_NOT_EXIST, Writer
from tests.polling import eventually


async def _write(writer: Writer, name: str) -> int:
    """A new ConfigMap ``name``, a batch of its own: its revision."""
    row = await writer.write(Write(Key("s", "configmaps", "default", name), b"{}", expect=MUST_NOT_EXIST))
    return row.revision


def _commit_configmaps(store: LogStore, count: int) -> list[int]:
    """``count`` single-write batches, as another process commits them: their revisions."""

    async def run() -> list[int]:
        writer = open_writer(store, asyncio.get_running_loop(), lambda _prior, _rows, then: then())
        revisions = [await _write(writer, f"cm-{i}") for i in range(count)]
        await writer.close()
        return revisions

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


async def _listening(store: LogStore, notices: LogNotices, not_backend: int | None = None) -> int:
    """The server process of ``notices``' connection once it listens (and is not ``not_backend``)."""

    def listening() -> bool:
        backend = notices._session.backend_pid
        if backend is None or backend == not_backend:
            return False
        with psycopg.connect(**store.psycopg_params, autocommit=True) as admin:
            row = admin.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (backend,)).fetchone()
        return row is not None and row[0].startswith("LISTEN")

    await eventually(listening, timeout=10, message="the notices' connection listening")
    backend = notices._session.backend_pid
    assert backend is not None
    return backend


def test_notices_tell_of_other_processes_commits_and_skip_this_process_own(pg_url: str) -> None:
    ours, theirs, following = LogStore(pg_url), LogStore(pg_url), LogStore(pg_url)

    async def run() -> tuple[list[int], int, int]:
        loop = asyncio.get_running_loop()
        our_writer = open_writer(ours, loop, lambda _prior, _rows, then: then())
        their_writer = open_writer(theirs, loop, lambda _prior, _rows, then: then())
        heard: list[int] = []
        # No look at the newest revision in the test's time: what is heard came as a notice.
        notices = LogNotices(following, heard.append, lambda: our_writer.session, poll_interval=3600)
        try:
            await _listening(following, notices)
            our_revision = await _write(our_writer, "ours")
            their_revision = await _write(their_writer, "theirs")
            await eventually(lambda: their_revision in heard, timeout=10, message="the other process's notice")
            return heard, our_revision, their_revision
        finally:
            await notices.stop()
            await our_writer.close()
            await their_writer.close()

    try:
        heard, our_revision, their_revision = asyncio.run(run())
    finally:
        for store in (ours, theirs, following):
            store.close()
    assert our_revision < their_revision
    assert heard == [their_revision]  # this process's own commit is handed over by its writer, not heard


def test_notices_listen_again_on_a_new_connection_after_theirs_was_cut(pg_url: str) -> None:
    writing, following = LogStore(pg_url), LogStore(pg_url)

    async def run() -> tuple[list[int], int]:
        writer = open_writer(writing, asyncio.get_running_loop(), lambda _prior, _rows, then: then())
        heard: list[int] = []
        notices = LogNotices(following, heard.append, poll_interval=3600)
        try:
            backend = await _listening(following, notices)
            with psycopg.connect(**following.psycopg_params, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
            await _listening(following, notices, not_backend=backend)
            revision = await _write(writer, "after")
            await eventually(lambda: revision in heard, timeout=10, message="the notice after reconnecting")
            return heard, revision
        finally:
            await notices.stop()
            await writer.close()

    try:
        heard, revision = asyncio.run(run())
    finally:
        writing.close()
        following.close()
    assert heard == [revision]
