"""The group-commit writer: one batch of writes checked and appended as the same writes one by one would be.

Runs on SQLite in a temporary file and, when the local server is reachable, on PostgreSQL in a fresh schema.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

import orjson

from apiserver.store import Key, LogRow, LogStore, PreconditionFailed, Write, open_writer
from apiserver.store.writer import ANY_REVISION, MUST_NOT_EXIST


def key(name: str) -> Key:
    return Key("space", "configmaps", "default", name)


def commit_one_batch(store: LogStore, writes: list[Write]) -> tuple[int, list[LogRow | BaseException]]:
    """Commit ``writes`` as one batch; the revision before it and each write's outcome."""
    async def run() -> tuple[int, list[LogRow | BaseException]]:
        outcome: dict[str, object] = {}

        def on_commit(prior: int, _rows: object, then: object) -> None:
            outcome["prior"] = prior
            then()  # type: ignore[operator]

        writer = open_writer(store, asyncio.get_running_loop(), on_commit)
        loop = asyncio.get_running_loop()
        for w in writes:
            w.future = loop.create_future()
        await writer.commit_batch(writes)
        results = await asyncio.gather(*(w.future for w in writes), return_exceptions=True)  # type: ignore[misc]
        await writer.close()
        return int(outcome["prior"]), list(results)

    return asyncio.run(run())


def test_a_batch_checks_each_write_against_the_ones_before_it(store: LogStore) -> None:
    _prior, first = commit_one_batch(store, [Write(key("kept"), b'{"v":1}', expect=MUST_NOT_EXIST)])
    kept = first[0]
    assert isinstance(kept, LogRow)
    value = '{"text":"caf\\u00e9 \\"quoted\\" \\\\ ✓","n":1.5e300}'.encode()
    prior, results = commit_one_batch(store, [
        Write(key("a"), value, expect=MUST_NOT_EXIST),
        Write(key("a"), b'{"v":2}', expect=ANY_REVISION),  # the same key again: sees the write before it
        Write(key("a"), b'{"v":3}', expect=MUST_NOT_EXIST),  # refused: "a" exists now
        Write(key("kept"), b'{"v":4}', expect=kept.revision),
        Write(key("kept"), b'{"v":5}', expect=kept.revision),  # refused: "kept" moved on in this batch
        Write(key("missing"), b"{}", deleted=True),  # refused: nothing to delete
        Write(key("gone"), b'{"v":6}', expect=MUST_NOT_EXIST),
        Write(key("gone"), b'{"v":6}', deleted=True),
    ])
    assert prior == kept.revision
    rows = [r for r in results if isinstance(r, LogRow)]
    refused = [i for i, r in enumerate(results) if isinstance(r, PreconditionFailed)]
    assert refused == [2, 4, 5]
    assert [r.revision for r in rows] == list(range(prior + 1, prior + 6))
    a1, a2, kept2, gone1, gone2 = rows
    assert a1.value == value and a1.created and a1.prev_revision == 0
    assert a2.value == b'{"v":2}' and not a2.created and a2.prev_revision == a1.revision
    assert kept2.prev_revision == kept.revision
    assert gone2.deleted and gone2.prev_revision == gone1.revision
    assert store.get(key("a")) == a2 and store.get(key("gone")) is None
    assert store.get(key("kept")).value == b'{"v":4}'  # type: ignore[union-attr]
    assert [r.revision for r in store.history(0)] == [kept.revision, *[r.revision for r in rows]]


def test_a_batch_whose_writes_after_an_append_are_all_refused_commits_that_append(store: LogStore) -> None:
    # The second write makes the batch append the first before checking it, and is refused: the batch has no
    # last append to commit along with (PostgreSQL's writer commits it after the plan instead).
    prior, results = commit_one_batch(store, [
        Write(key("once"), b'{"v":1}', expect=MUST_NOT_EXIST),
        Write(key("once"), b'{"v":2}', expect=MUST_NOT_EXIST),
    ])
    created, refused = results
    assert isinstance(created, LogRow) and created.revision == prior + 1
    assert isinstance(refused, PreconditionFailed)
    assert store.get(key("once")) == created
    _prior, again = commit_one_batch(store, [Write(key("once"), b'{"v":3}', expect=created.revision)])
    assert isinstance(again[0], LogRow) and again[0].revision == created.revision + 1


def test_a_committed_row_holds_its_values_length_not_the_encoders_buffer(store: LogStore) -> None:
    # orjson.dumps returns bytes whose allocation is its buffer's (8 KiB for these 700 bytes); the watch ring and the
    # writer's recent rows keep committed rows by the ten thousand.
    tracemalloc.start()
    try:
        values = [orjson.dumps({"data": {"pad": "x" * 700}, "n": n}) for n in range(100)]
        length = sum(len(v) for v in values)
        _prior, rows = commit_one_batch(store, [Write(key(f"k{n}"), v) for n, v in enumerate(values)])
        assert [r.value for r in rows if isinstance(r, LogRow)] == values
        del values
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        del rows
        gc.collect()
        freed = held - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert freed < 2 * length  # the values' bytes and the rows themselves, not 100 buffers of 8 KiB
