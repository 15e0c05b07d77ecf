"""Dotted field paths (apimachinery/dottedpaths.py), policy annotations and drift details (syncer/driftdetail.py)."""

from __future__ import annotations

import pytest

from apimachinery.dottedpaths import PathError, format_path, parse_path, value_at, with_values
from syncer.driftdetail import differing_paths, manager_of, merged
from syncer.policies import policy_of


@pytest.mark.parametrize("text, path", [
    ("spec.replicas", ("spec", "replicas")),
    ("spec.template.spec.containers[0].image", ("spec", "template", "spec", "containers", 0, "image")),
    ("data.m[1][2]", ("data", "m", 1, 2)),
    ("metadata.annotations.team", ("metadata", "annotations", "team")),
])
def test_paths_parse_and_print_as_kubectl_prints_them(text: str, path: tuple[str | int, ...]) -> None:
    assert parse_path(text) == path
    assert format_path(path) == text


@pytest.mark.parametrize("text", ["", "spec..replicas", ".spec", "spec.", "spec.containers[x]", "a[0", "a b"])
def test_bad_paths_are_refused(text: str) -> None:
    with pytest.raises(PathError):
        parse_path(text)


def test_with_values_takes_the_sources_values_and_drops_what_it_lacks() -> None:
    obj = {"spec": {"replicas": 2, "template": {"c": [{"image": "a"}]}}, "data": {"x": "1"}}
    out = with_values(obj, [("spec", "replicas"), ("spec", "template", "c", 0, "image"), ("data", "x")],
                      {"spec": {"replicas": 5, "template": {"c": [{"image": "b"}]}}})
    assert out == {"spec": {"replicas": 5, "template": {"c": [{"image": "b"}]}}, "data": {}}
    assert obj["spec"]["replicas"] == 2  # the input is not changed
    assert value_at(out, ("spec", "template", "c", 3)) == (False, None)


def test_policy_annotations() -> None:
    policy = policy_of({"metadata": {"annotations": {"spacehub.io/retain-fields": "spec.replicas, data.k",
                                                     "spacehub.io/drift-mode": "ReportOnly"}}})
    assert policy.retain == (("spec", "replicas"), ("data", "k")) and policy.report_only and policy.problem is None
    bad = policy_of({"metadata": {"annotations": {"spacehub.io/drift-mode": "Sometimes"}}})
    assert bad.problem is not None and "spacehub.io/drift-mode" in bad.problem
    assert not policy_of({}).report_only and policy_of({}).retain == ()


def test_differing_paths_descend_into_maps_and_equal_length_lists() -> None:
    before = {"spec": {"replicas": 2, "c": [{"image": "a", "name": "w"}], "ports": [1]}}
    after = {"spec": {"replicas": 3, "c": [{"image": "b", "name": "w"}], "ports": [1, 2]}}
    assert differing_paths(before, after) == [("spec", "c", 0, "image"), ("spec", "ports"), ("spec", "replicas")]


def test_the_manager_is_the_last_other_writer_owning_the_path() -> None:
    live = {"metadata": {"managedFields": [
        {"manager": "spacehub-syncer", "time": "2026-01-01T00:00:09Z", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "old", "time": "2026-01-01T00:00:01Z", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "hpa", "time": "2026-01-01T00:00:05Z", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "ops", "time": "2026-01-01T00:00:07Z", "fieldsV1": {"f:spec": {"f:template": {"f:c": {}}}}}]}}
    assert manager_of(live, ("spec", "replicas"), "spacehub-syncer") == "hpa"
    assert manager_of(live, ("spec", "template", "c", 0, "image"), "spacehub-syncer") == "ops"
    assert manager_of(live, ("data",), "spacehub-syncer") == ""


def test_merged_keeps_the_latest_entry_per_path() -> None:
    history = [{"path": "a", "time": "1"}, {"path": "b", "time": "1"}]
    assert merged(history, [{"path": "a", "time": "2"}]) == [{"path": "b", "time": "1"}, {"path": "a", "time": "2"}]
