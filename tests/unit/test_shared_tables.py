"""Per-space tables alike in most spaces are kept once (``apiserver.sharedtables``): what each space reads is its
own table's content whatever it shares, a change to one space's table leaves the others as they were."""

from __future__ import annotations

from apiserver.sharedtables import SharedTables

DEFAULTS = ("default", "kube-system", "kube-public", "kube-node-lease")


def test_alike_tables_are_one_and_a_change_gives_a_space_its_own() -> None:
    phases: SharedTables[str, str] = SharedTables()
    for space in ("a", "b", "c"):
        for name in DEFAULTS:
            phases.set(space, name, "Active")
    assert phases._tables["a"] is phases._tables["b"] is phases._tables["c"]

    phases.set("b", "default", "Terminating")
    phases.set("c", "team", "Active")
    assert [phases.get(space, "default") for space in "abc"] == ["Active", "Terminating", "Active"]
    assert phases.get("c", "team") == "Active" and phases.get("a", "team") is None
    assert phases._tables["a"] is not phases._tables["b"]

    phases.set("b", "default", "Active")
    phases.pop("c", "team")
    assert phases._tables["a"] is phases._tables["b"] is phases._tables["c"]  # alike again: shared again

    for name in DEFAULTS:
        phases.pop("a", name)
    assert phases.get("a", "default") is None and phases.get("b", "default") == "Active"
    assert sorted((space, name) for space, name, _ in phases.items()) == sorted(
        (space, name) for space in "bc" for name in DEFAULTS)


def test_a_large_table_is_its_space_own_and_changes_in_place() -> None:
    phases: SharedTables[str, str] = SharedTables(shared_max=2)
    for space in ("a", "b"):
        for name in DEFAULTS:
            phases.set(space, name, "Active")
    assert phases._tables["a"] is not phases._tables["b"]
    own = phases._tables["a"]
    phases.set("a", "team", "Active")
    assert phases._tables["a"] is own and phases.get("a", "team") == "Active" and phases.get("b", "team") is None
