"""The clusters' side of a space's pods watch: which changes are sent, and the store revision events carry."""

from __future__ import annotations

from typing import Any

import orjson

from debug.fleet import Found
from debug.naming import labelled
from debug.watch import _differences, _revision_of, _shown


def shown(name: str, cluster: str, rv: str) -> dict[str, Any]:
    return labelled(cluster, {"metadata": {"name": name, "namespace": "shop", "resourceVersion": rv}}, name)


def test_changes_are_added_modified_and_deleted_by_shown_name_and_cluster_version() -> None:
    before = {("shop", "a"): shown("a", "wec1", "1"), ("shop", "b"): shown("b", "wec1", "1"),
              ("shop", "c"): shown("c", "wec1", "1")}
    now = {("shop", "a"): shown("a", "wec1", "1"), ("shop", "b"): shown("b", "wec1", "2"),
           ("shop", "d"): shown("d", "wec2", "1")}
    assert [(kind, pod["metadata"]["name"]) for kind, pod in _differences(before, now)] == [
        ("DELETED", "c"), ("MODIFIED", "b"), ("ADDED", "d")]
    moved = {("shop", "a"): shown("a", "wec2", "1")}  # same name and version, another cluster: a change
    assert [kind for kind, _ in _differences({("shop", "a"): before["shop", "a"]}, moved)] == ["MODIFIED"]


def test_a_cluster_that_did_not_answer_keeps_its_pods() -> None:
    before = {("shop", "a"): shown("a", "wec1", "1"), ("shop", "b"): shown("b", "wec2", "1")}
    now = _shown(Found(pods=[shown("b", "wec2", "2")], failed=["wec1"]), before)
    assert sorted(now) == [("shop", "a"), ("shop", "b")] and now["shop", "b"]["metadata"]["resourceVersion"] == "2"
    assert sorted(_shown(Found(pods=[]), before)) == []  # both answered: both gone


def test_the_revision_of_a_stored_event_object_table_row_or_bookmark() -> None:
    def event(obj: dict[str, Any], kind: str = "ADDED") -> bytes:
        return orjson.dumps({"type": kind, "object": obj}) + b"\n"

    assert _revision_of(event({"kind": "Pod", "metadata": {"resourceVersion": "41"}})) == "41"
    assert _revision_of(event({"kind": "Table", "rows": [{"object": {"metadata": {"resourceVersion": "42"}}}]})) == "42"
    assert _revision_of(event({"kind": "Pod", "metadata": {"resourceVersion": "43"}}, "BOOKMARK")) == "43"
    assert _revision_of(event({"kind": "Status", "code": 410}, "ERROR")) == ""
