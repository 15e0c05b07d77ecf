"""A scan of every space's objects that only returns those whose stored JSON holds some bytes (the garbage
collector's and the status controller's start-up read, one pass for both): the database looks, on SQLite and on
PostgreSQL. And the writer's look-up of a key's newest row, which must read that key's rows only."""

from __future__ import annotations

import orjson
import pytest
from sqlalchemy import inspect, text

from apiserver.store import INTERNAL_SPACE, Compacted, Key, LogRow, LogStore, Write
from apiserver.store.logstore import OBSOLETE_INDEXES
from apiserver.store.marked import MarkedRows
from tests.conftest import postgres_schema
from tests.unit.test_group_commit import commit_one_batch


def test_a_scan_for_bytes_returns_the_live_objects_holding_them_in_every_space(store: LogStore) -> None:
    marked = b'{"metadata":{"annotations":{"spacehub.io/mark":"2"}}}'
    commit_one_batch(store, [
        Write(Key("a", "configmaps", "x", "marked"), marked),
        Write(Key("b", "secrets", "", "plain"), b'{"metadata":{}}'),
        Write(Key("b", "configmaps", "x", "was-marked"), marked),
        Write(Key(INTERNAL_SPACE, "records", "", "marked"), marked),
    ])
    commit_one_batch(store, [Write(Key("b", "configmaps", "x", "was-marked"), b'{"metadata":{}}')])

    found = [r.key for r in store.list_spaces_rows(containing=[b'"spacehub.io/mark"'])]
    assert found == [Key("a", "configmaps", "x", "marked")]
    assert len(list(store.list_spaces_rows())) == 3


def test_one_start_up_read_hands_each_component_the_rows_holding_its_marker(store: LogStore) -> None:
    owned = b'{"metadata":{"ownerReferences":[{"uid":"u"}]}}'
    both = b'{"metadata":{"ownerReferences":[{"uid":"u"}],"annotations":{"spacehub.io/mark":"1"}}}'
    commit_one_batch(store, [
        Write(Key("a", "configmaps", "x", "owned"), owned),
        Write(Key("a", "configmaps", "x", "both"), both),
        Write(Key("b", "secrets", "", "plain"), b'{"metadata":{}}'),
        Write(Key(INTERNAL_SPACE, "records", "", "owned"), owned),
    ])
    marked = MarkedRows()
    marked.want(b'"ownerReferences"')
    marked.want(b'"spacehub.io/mark"')
    marked.want(b'"spacehub.io/absent"')
    marked.read(store)

    assert sorted(r.key.name for r in marked.take(b'"ownerReferences"')) == ["both", "owned"]
    assert [r.key.name for r in marked.take(b'"spacehub.io/mark"')] == ["both"]
    assert marked.take(b'"spacehub.io/absent"') == []
    with pytest.raises(KeyError):  # handed over once: the runtime keeps none of them after start-up
        marked.take(b'"ownerReferences"')


def test_opening_a_log_drops_the_index_that_misled_the_writers_look_up(store: LogStore) -> None:
    with store.engine.begin() as conn:
        conn.execute(text("CREATE INDEX kv_log_space_ns ON kv_log (space, namespace, id)"))
    LogStore(store.url).close()
    names = {index["name"] for index in inspect(store.engine).get_indexes("kv_log")}
    assert "kv_log_key" in names and not names & set(OBSOLETE_INDEXES)


def test_the_writers_look_up_of_a_new_key_reads_no_other_row_of_its_namespace() -> None:
    """A namespace PostgreSQL's statistics do not know yet (a fresh log: never analysed) is where the planner
    once chose an index that made every create read every row of its namespace."""
    with postgres_schema() as url:
        store = LogStore(url)
        try:
            commit_one_batch(store, [Write(Key("s", "configmaps", "busy", f"c-{i}"), b"{}") for i in range(500)])
            keys = [Key("s", "configmaps", "busy", "new")]  # one, so that the plan's per-loop counts are exact
            with store.engine.connect() as conn:
                plan = conn.exec_driver_sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {store.batch_statements[0]}",
                                            tuple(list(column) for column in zip(*keys, strict=True))).scalar()
        finally:
            store.close()
    nodes, read = [(orjson.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]], 0
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("Plans", []))
        if node.get("Relation Name") == "kv_log":
            read += (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
    assert read == 0


def test_keys_read_share_their_strings_with_every_key_naming_the_same(store: LogStore) -> None:
    """10,000 spaces each hold a ``default`` namespace: the keys that indexes keep of them hold one ``"default"``
    and one ``"namespaces"``, not 10,000 of each."""
    commit_one_batch(store, [Write(Key(space, "namespaces", "", "default"), b'{"metadata":{}}')
                             for space in ("space-a", "space-b")])
    a, b = (row.key for row in store.list_resource_everywhere("namespaces"))
    assert a.space == "space-a" and b.space == "space-b"
    assert a.resource is b.resource and a.name is b.name and a.namespace is b.namespace


def test_a_scan_of_one_kind_everywhere_may_be_of_one_name(store: LogStore) -> None:
    """Every namespace's ``default`` ServiceAccount in one read (the namespace defaults' start-up look)."""
    commit_one_batch(store, [
        Write(Key("a", "serviceaccounts", "x", "default"), b'{"metadata":{}}'),
        Write(Key("a", "serviceaccounts", "x", "robot"), b'{"metadata":{}}'),
        Write(Key("b", "serviceaccounts", "y", "default"), b'{"metadata":{}}'),
        Write(Key("b", "configmaps", "y", "default"), b'{"metadata":{}}'),
    ])
    commit_one_batch(store, [Write(Key("b", "serviceaccounts", "y", "default"), b'{}', deleted=True)])
    assert [r.key for r in store.list_resource_everywhere("serviceaccounts", "default")] == \
        [Key("a", "serviceaccounts", "x", "default")]
    assert len(store.list_resource_everywhere("serviceaccounts")) == 2


def test_the_keys_of_one_kind_everywhere_are_those_of_its_live_objects(store: LogStore) -> None:
    commit_one_batch(store, [Write(Key(space, "namespaces", "", name), b'{"metadata":{}}')
                             for space in ("a", "b") for name in ("default", "gone")])
    commit_one_batch(store, [Write(Key("b", "namespaces", "", "gone"), b'{}', deleted=True)])
    assert sorted(store.keys_everywhere("namespaces")) == [Key("a", "namespaces", "", "default"),
                                                           Key("a", "namespaces", "", "gone"),
                                                           Key("b", "namespaces", "", "default")]


def test_the_rows_between_two_revisions_come_oldest_first_until_compaction_took_some(store: LogStore) -> None:
    """What a process that follows the log reads (SQLite has no other writer to follow, but reads the same)."""
    _prior, first = commit_one_batch(store, [Write(Key("a", "configmaps", "x", f"cm-{i}"), b"{}") for i in range(3)])
    _prior, second = commit_one_batch(store, [Write(Key("a", "configmaps", "x", "cm-0"), b'{"v":2}')])
    revisions = [row.revision for row in first + second if isinstance(row, LogRow)]
    assert [row.revision for row in store.rows_between(0, revisions[-1])] == revisions
    assert [row.value for row in store.rows_between(revisions[2], revisions[3])] == [b'{"v":2}']
    assert store.rows_between(revisions[-1], revisions[-1]) == []
    assert store.compact(0) == revisions[-1]  # cm-0's first row goes
    with pytest.raises(Compacted):
        store.rows_between(0, revisions[-1])
    assert store.rows_between(revisions[-1], revisions[-1]) == []
