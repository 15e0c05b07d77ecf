"""A scan of every space's objects that only returns those whose stored JSON holds some bytes (the status
controller looking for its annotation at startup): the database looks, on SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from apiserver.store import INTERNAL_SPACE, Key, LogStore, Write
from tests.conftest import postgres_schema
from tests.unit.test_group_commit import commit_one_batch


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogStore]:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    with postgres_schema() if request.param == "postgresql" else contextlib.nullcontext(url) as chosen:
        s = LogStore(chosen)
        yield s
        s.close()


def test_a_scan_for_bytes_returns_the_live_objects_holding_them_in_every_space(store: LogStore) -> None:
    marked = b'{"metadata":{"annotations":{"spacehub.io/mark":"2"}}}'
    commit_one_batch(store, [
        Write(Key("a", "configmaps", "x", "marked"), marked),
        Write(Key("b", "secrets", "", "plain"), b'{"metadata":{}}'),
        Write(Key("b", "configmaps", "x", "was-marked"), marked),
        Write(Key(INTERNAL_SPACE, "records", "", "marked"), marked),
    ])
    commit_one_batch(store, [Write(Key("b", "configmaps", "x", "was-marked"), b'{"metadata":{}}')])

    found = [r.key for r in store.list_spaces_rows(containing=b'"spacehub.io/mark"')]
    assert found == [Key("a", "configmaps", "x", "marked")]
    assert len(list(store.list_spaces_rows())) == 3


def test_keys_read_share_their_strings_with_every_key_naming_the_same(store: LogStore) -> None:
    """10,000 spaces each hold a ``default`` namespace: the keys that indexes keep of them hold one ``"default"``
    and one ``"namespaces"``, not 10,000 of each."""
    commit_one_batch(store, [Write(Key(space, "namespaces", "", "default"), b'{"metadata":{}}')
                             for space in ("space-a", "space-b")])
    a, b = (row.key for row in store.list_resource_everywhere("namespaces"))
    assert a.space == "space-a" and b.space == "space-b"
    assert a.resource is b.resource and a.name is b.name and a.namespace is b.namespace
