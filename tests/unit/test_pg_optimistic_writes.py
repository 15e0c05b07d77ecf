"""PostgreSQL's writer plans a batch against its keys' rows read before taking the writers' lock: a key another
writer changes between that read and the append makes the append insert nothing, and the batch is planned again
under the lock, with the outcome it would have had there.

Runs on the local PostgreSQL in a fresh schema (skipped, saying why, without one).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Callable, Coroutine, Generator, Iterator
from typing import Any, NamedTuple

import psycopg
import pytest

from apiserver.store import Key, LogRow, LogStore, PreconditionFailed, Write, open_writer, pgwriter
from apiserver.store.pgwriter import PostgresWriter
from apiserver.store.writer import ANY_REVISION, MUST_NOT_EXIST, Outcome, Request, plan
from tests.conftest import PG_DSN


def key(name: str) -> Key:
    return Key("space", "configmaps", "default", name)


class OtherProcess:
    """Another hub process's writer on the same schema: its own store, connection and event loop (a thread)."""

    def __init__(self, url: str) -> None:
        self.store = LogStore(url)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.writer = self.run(self._open())

    async def _open(self) -> PostgresWriter:
        writer = open_writer(self.store, self.loop, lambda _prior, _rows, then: then())
        assert isinstance(writer, PostgresWriter)
        return writer

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on this process's loop and wait for it (blocking the caller's thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def write(self, w: Write) -> LogRow:
        return self.run(self.writer.write(w))  # type: ignore[no-any-return]

    def close(self) -> None:
        self.run(self.writer.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
        self.store.close()


@pytest.fixture
def other(pg_url: str) -> Iterator[OtherProcess]:
    process = OtherProcess(pg_url)
    yield process
    process.close()


def read_then(meanwhile: Callable[[], None]) -> Callable[..., Generator[Request, Any, list[Outcome]]]:
    """``plan`` that runs ``meanwhile`` once, right after the first batch it plans got its keys' latest rows (the
    optimistic read): what another process commits between that read and the lock."""
    done: list[bool] = []

    def planned(batch: list[Write]) -> Generator[Request, Any, list[Outcome]]:
        steps = plan(batch)
        request = next(steps)
        while True:
            answer = yield request
            if request[0] == "latest" and not done:
                done.append(True)
                meanwhile()
            try:
                request = steps.send(answer)
            except StopIteration as finished:
                return finished.value  # type: ignore[no-any-return]

    return planned


class Committed(NamedTuple):
    prior: int  # the revision before the batch, as the feed is told it
    results: list[LogRow | BaseException]
    redone: int  # how many times the batch was planned again under the lock
    session: int | None  # the writer's server process, which sent its notices


def commit_with(store: LogStore, writes: list[Write], meanwhile: Callable[[], None],
                monkeypatch: pytest.MonkeyPatch) -> Committed:
    """Commit ``writes`` as one batch while another process commits ``meanwhile`` after the batch's read."""
    monkeypatch.setattr(pgwriter, "plan", read_then(meanwhile))

    async def run() -> Committed:
        told: list[tuple[int, int | None]] = []
        writer = open_writer(store, asyncio.get_running_loop(),
                             lambda prior, _rows, then: (told.append((prior, writer.session)), then()))
        assert isinstance(writer, PostgresWriter)
        results = await writer.write_many(writes)
        await writer.close()
        return Committed(told[0][0], results, writer.redone, told[0][1])

    return asyncio.run(run())


@contextlib.contextmanager
def notices(store: LogStore, other: OtherProcess) -> Iterator[Callable[[int | None], list[str]]]:
    """Listens to the log's notices; the function it gives says which ``session`` sent until then (a write of the other
    process marks the end: notices arrive in commit order)."""
    with psycopg.connect(PG_DSN, autocommit=True) as listening:
        listening.execute(f'LISTEN "{store.channel}"')

        def sent_by(session: int | None) -> list[str]:
            marker = other.write(Write(key("marker"), b"{}"))
            found: list[str] = []
            for notice in listening.notifies(timeout=30):
                if notice.payload == str(marker.revision):
                    return found
                if notice.pid == session:
                    found.append(notice.payload)
            raise AssertionError("the marker's notice never came")

        yield sent_by


def test_a_key_updated_by_another_process_after_the_read_fails_the_write_that_expected_the_old_revision(
        pg_url: str, other: OtherProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LogStore(pg_url)
    try:
        first = other.write(Write(key("a"), b'{"v":1}', expect=MUST_NOT_EXIST))
        moved: list[LogRow] = []
        with notices(store, other) as sent_by:
            done = commit_with(
                store, [Write(key("a"), b'{"v":"mine"}', expect=first.revision)],
                lambda: moved.append(other.write(Write(key("a"), b'{"v":2}', expect=first.revision))), monkeypatch)
            assert sent_by(done.session) == []  # the stale append wrote nothing, so it told no one
        (outcome,) = done.results
        assert done.redone == 1
        assert isinstance(outcome, PreconditionFailed) and outcome.current == moved[0].revision  # no lost update
        assert store.get(key("a")) == moved[0]
    finally:
        store.close()


@pytest.mark.parametrize("meanwhile", ["create", "delete"])
def test_a_write_planned_again_under_the_lock_sees_what_another_process_committed_after_the_read(
        pg_url: str, other: OtherProcess, monkeypatch: pytest.MonkeyPatch, meanwhile: str) -> None:
    store = LogStore(pg_url)
    try:
        if meanwhile == "delete":
            kept = other.write(Write(key("a"), b'{"v":1}', expect=MUST_NOT_EXIST))
            change = Write(key("a"), b'{"v":1}', deleted=True, expect=kept.revision)
        else:
            change = Write(key("a"), b'{"v":1}', expect=MUST_NOT_EXIST)
        theirs: list[LogRow] = []
        with notices(store, other) as sent_by:
            prior, (create, update), redone, session = commit_with(store, [
                Write(key("b"), b'{"v":"b"}', expect=MUST_NOT_EXIST),
                Write(key("a"), b'{"v":"mine"}', expect=ANY_REVISION),
            ], lambda: theirs.append(other.write(change)), monkeypatch)
            assert sent_by(session) == [str(prior + 2)]  # once, from the batch planned again: its last revision
        assert redone == 1
        assert prior == theirs[0].revision  # the newest revision before the batch, read under the lock
        assert isinstance(create, LogRow) and isinstance(update, LogRow)
        assert create.revision == prior + 1 and update.revision == prior + 2
        # The row says what it replaced as of its commit, not as of the stale read.
        assert update.created == (meanwhile == "delete")
        assert update.prev_revision == (0 if meanwhile == "delete" else theirs[0].revision)
        logged = [r.revision for r in store.history(0) if r.key != key("marker")]
        assert logged[-3:] == [theirs[0].revision, create.revision, update.revision]
    finally:
        store.close()


def test_a_write_refused_as_of_the_read_is_refused_again_when_another_key_of_its_batch_moved(
        pg_url: str, other: OtherProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LogStore(pg_url)
    try:
        first = other.write(Write(key("a"), b'{"v":1}', expect=MUST_NOT_EXIST))
        _prior, (refused, created), redone, _session = commit_with(store, [
            Write(key("a"), b'{"v":"again"}', expect=MUST_NOT_EXIST),
            Write(key("c"), b'{"v":"c"}', expect=MUST_NOT_EXIST),
        ], lambda: other.write(Write(key("a"), b'{"v":2}', expect=first.revision)), monkeypatch)
        assert redone == 1  # "a" moved: the whole batch's read is stale, not only the keys it appends
        assert isinstance(refused, PreconditionFailed) and refused.current == first.revision + 1
        assert isinstance(created, LogRow) and created.prev_revision == 0
    finally:
        store.close()


def test_a_commit_of_other_keys_after_the_read_leaves_the_batch_on_its_single_round_trip(
        pg_url: str, other: OtherProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LogStore(pg_url)
    try:
        current = other.write(Write(key("a"), b'{"v":1}', expect=MUST_NOT_EXIST))
        theirs: list[LogRow] = []
        with notices(store, other) as sent_by:
            prior, (update,), redone, session = commit_with(
                store, [Write(key("a"), b'{"v":2}', expect=current.revision)],
                lambda: theirs.append(other.write(Write(key("elsewhere"), b"{}", expect=MUST_NOT_EXIST))), monkeypatch)
            assert sent_by(session) == [str(prior + 1)]
        assert redone == 0
        assert prior == theirs[0].revision  # another process's commit between the read and the lock counts
        assert isinstance(update, LogRow) and update.revision == prior + 1
        assert update.prev_revision == current.revision
    finally:
        store.close()


def test_two_processes_updating_the_same_keys_from_the_same_revision_never_both_succeed(
        pg_url: str, other: OtherProcess) -> None:
    store = LogStore(pg_url)
    keys = [key(f"k{i}") for i in range(20)]
    try:
        async def run() -> None:
            writer = open_writer(store, asyncio.get_running_loop(), lambda _prior, _rows, then: then())
            current = [r for r in await writer.write_many([Write(k, b"{}", expect=MUST_NOT_EXIST) for k in keys])
                       if isinstance(r, LogRow)]
            for rnd in range(15):
                tag = str(rnd).encode()
                ours = [Write(k, b'{"by":"us","round":' + tag + b"}", expect=c.revision)
                        for k, c in zip(keys, current, strict=True)]
                others = [Write(k, b'{"by":"them","round":' + tag + b"}", expect=c.revision)
                          for k, c in zip(keys, current, strict=True)]
                # Both processes' batches at once, each on its own loop and connection.
                racing = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(other.writer.write_many(others),
                                                                              other.loop))
                mine, theirs = await asyncio.gather(writer.write_many(ours), racing)
                current = []
                for x, y in zip(mine, theirs, strict=True):
                    won = [r for r in (x, y) if isinstance(r, LogRow)]
                    assert len(won) == 1, f"round {rnd}: {x!r}, {y!r}"  # exactly one of the two updates
                    assert isinstance(x, PreconditionFailed) or isinstance(y, PreconditionFailed)
                    current.append(won[0])
            await writer.close()

        asyncio.run(run())
        # Each key's rows form one chain, each naming the one before it, in revision order.
        for k in keys:
            chain = [r for r in store.history(0, limit=10_000) if r.key == k]
            assert len(chain) == 16
            assert all(b.prev_revision == a.revision for a, b in itertools.pairwise(chain))
    finally:
        store.close()


def test_the_writers_read_of_its_keys_is_planned_once(pg_url: str) -> None:
    """PostgreSQL planned the read of a few keys' newest rows anew for every batch (a custom plan looked cheaper than
    the generic one, whose estimate assumes ten elements an array); the writer's session asks for the generic plan."""
    store = LogStore(pg_url)

    async def run() -> list[tuple[int, int]]:
        writer = open_writer(store, asyncio.get_running_loop(), lambda _prior, _rows, then: then())
        assert isinstance(writer, PostgresWriter)
        for i in range(12):  # one key a batch: left to choose, the server plans each one
            await writer.write(Write(key(f"k{i}"), b"{}", expect=MUST_NOT_EXIST))
        conn = await writer._session.connection()  # the one its batches went through
        cur = await conn.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        plans = [(generic, custom) for sql, generic, custom in await cur.fetchall() if "LATERAL" in sql]
        await writer.close()
        return plans

    try:
        assert asyncio.run(run()) == [(12, 0)]
    finally:
        store.close()
