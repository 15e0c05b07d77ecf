"""Compaction keeps exactly the rows a list at or after its horizon reads (each key's newest row at the horizon,
unless a tombstone, and every row above it), round after round, on SQLite and on PostgreSQL: it reads only the rows
written since the last round, which must leave the same rows as looking at all of them."""

from __future__ import annotations

import random

from sqlalchemy import text

from apiserver.store import Key, LogRow, LogStore, Write
from tests.unit.test_group_commit import commit_one_batch


def kept_by_definition(history: list[LogRow], horizon: int) -> set[int]:
    """The rows a list at ``horizon`` or later needs, from every row ever written."""
    newest: dict[Key, LogRow] = {}
    for row in history:
        if row.revision <= horizon:
            newest[row.key] = row
    return ({r.revision for r in newest.values() if not r.deleted}
            | {r.revision for r in history if r.revision > horizon})


def test_each_round_keeps_what_a_list_at_its_horizon_needs(store: LogStore) -> None:
    rng = random.Random(7)
    keys = [Key(f"s{i % 3}", "configmaps", "ns", f"k{i}") for i in range(12)]
    live: set[Key] = set()
    history: list[LogRow] = []
    for _ in range(6):
        for _ in range(8):
            batch: list[Write] = []
            for key in rng.sample(keys, 4):
                delete = key in live and rng.random() < 0.4
                batch.append(Write(key, b'{"metadata":{}}', deleted=delete))
                live.symmetric_difference_update({key} if delete or key not in live else set())
            _, outcomes = commit_one_batch(store, batch)
            history += [o for o in outcomes if isinstance(o, LogRow)]
        horizon = store.compact(keep=rng.randint(3, 15))
        with store.engine.connect() as conn:
            stored = {int(r[0]) for r in conn.execute(text("SELECT id FROM kv_log"))}
        assert stored == kept_by_definition(history, horizon)
