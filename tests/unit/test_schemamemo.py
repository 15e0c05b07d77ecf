"""The memo of what was worked out from a body and its kind's schema answers only for that very schema, keeps a
None as a value, and stays bounded, the oldest going first."""

from __future__ import annotations

from apiserver.schemamemo import MISSING, SchemaMemo


def test_a_value_is_kept_for_its_schema_only_and_none_is_a_value() -> None:
    memo: SchemaMemo[int | None] = SchemaMemo(4)
    schema, alike, defs = {"type": "object"}, {"type": "object"}, {}
    memo.put("body", schema, defs, None)
    assert memo.get("body", schema, defs) is None
    assert memo.get("body", alike, defs) is MISSING  # equal content, another schema: not answered for
    assert memo.get("body", schema, {}) is MISSING
    assert memo.get("other", schema, defs) is MISSING


def test_the_oldest_goes_first_when_full() -> None:
    memo: SchemaMemo[int] = SchemaMemo(2)
    schema, defs = {}, {}
    for i in range(3):
        memo.put(i, schema, defs, i)
    assert len(memo) == 2
    assert [memo.get(i, schema, defs) for i in range(3)] == [MISSING, 1, 2]
