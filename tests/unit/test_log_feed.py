"""The log feed of a process that follows other processes' commits on PostgreSQL: a burst of notices is read from
the log in one read, and every row is published once, in revision order.

Runs on the local PostgreSQL in a fresh schema (skipped, saying why, without one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from apiserver.store import Key, LogRow, LogStore, Write, open_writer
from apiserver.store.feed import LogFeed
from apiserver.store.writer import MUST_NOT_EXIST
from tests.polling import eventually


def test_notices_that_arrive_during_a_read_are_one_read_and_each_row_is_published_once(pg_url: str) -> None:
    writing, following = LogStore(pg_url), LogStore(pg_url)  # two processes' stores on one schema

    async def run() -> tuple[list[int], list[tuple[int, int]], list[int]]:
        loop = asyncio.get_running_loop()
        writer = open_writer(writing, loop, lambda _prior, _rows, then: then())
        # Another process commits 30 batches of one write each.
        committed = [await writer.write(Write(Key("s", "configmaps", "default", f"cm-{i}"), b"{}",
                                              expect=MUST_NOT_EXIST)) for i in range(30)]
        await writer.close()
        published: list[int] = []
        reads: list[tuple[int, int]] = []

        async def run_sync(fn: Callable[..., Any], *args: Any) -> Any:
            if fn == following.rows_between:
                reads.append(args)
            return await loop.run_in_executor(None, fn, *args)

        def publish(rows: Sequence[LogRow]) -> None:
            published.extend(row.revision for row in rows)

        feed = LogFeed(following, publish, 0, run_sync, fatal=lambda why: None)
        for row in committed:  # the notices of each commit, heard in a burst
            feed.notified(row.revision)
        await eventually(lambda: feed.delivered == committed[-1].revision, timeout=10,
                         message="the followed rows published")
        return [row.revision for row in committed], reads, published

    try:
        revisions, reads, published = asyncio.run(run())
    finally:
        writing.close()
        following.close()
    assert published == revisions  # each once, in order
    # The first notice starts a read; the 29 that come while it is under way wait as one.
    assert reads == [(0, revisions[0]), (revisions[0], revisions[-1])]
