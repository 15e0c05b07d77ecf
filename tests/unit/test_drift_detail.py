"""Dotted field paths (apimachinery/dottedpaths.py), policy annotations and drift details (syncer/driftdetail.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from apimachinery.dottedpaths import PATH_PATTERN, PathError, format_path, parse_path, value_at, with_values
from kubeclient.client import KubeClient
from placement.downsync import compile_test, ownership_annotations
from syncer.autoscalers import Autoscalers, Target, target_of
from syncer.driftdetail import differing_paths, manager_of, merged
from syncer.policies import policy_of

REPO = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize("text", ["spec.replicas", "a[0].b[1][2]", "spec..replicas", "a[x]", "a b", ".a", "a.",
                                  "a\x1cb", "d.\x1f[1]", "a\u3000b", "\u00e9t\u00e9[03]", "a\x7f", "a\n"])
def test_the_schema_pattern_agrees_with_the_parser(text: str) -> None:
    try:
        parse_path(text)
        parses = True
    except PathError:
        parses = False
    # Read as Python reads the schema (its ``$`` takes a final newline), which the API models do too.
    assert bool(re.search(PATH_PATTERN, text)) == parses


def test_the_crd_schema_repeats_the_pattern() -> None:
    crd = yaml.safe_load((REPO / "placement" / "crds" / "edgeplacements.yaml").read_text())
    test = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["downsync"]
    assert test["items"]["properties"]["retainFields"]["items"]["pattern"] == PATH_PATTERN


def test_tests_give_copies_their_ownership_annotations() -> None:
    problems: list[str] = []
    tests = [compile_test(0, {"resources": ["deployments"], "retainFields": ["spec.replicas"]}, problems),
             compile_test(1, {"resources": ["deployments"], "retainFields": ["data..x", "spec.paused"],
                              "driftMode": "ReportOnly"}, problems)]
    assert problems == ['downsync[1].retainFields[0]: "data..x" is not a field path (names joined by ".", list '
                        'items as [i], e.g. spec.replicas or spec.template.spec.containers[0].image)']
    assert ownership_annotations(tests) == {"spacehub.io/retain-fields": "spec.paused,spec.replicas",
                                            "spacehub.io/drift-mode": "ReportOnly"}
    assert ownership_annotations(tests[:1]) == {"spacehub.io/retain-fields": "spec.replicas"}


def _hpa(name: str, kind: str, target: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {"metadata": {"namespace": "app", "name": name},
            "spec": {"scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target}}}


def test_the_hpa_index_tells_of_each_target_gained_or_lost() -> None:
    told: list[Target] = []
    index = Autoscalers(cast(KubeClient, None), "syncer t", told.append)  # its watch is never started here
    index._listed([_hpa("a", "Deployment", "web"), _hpa("b", "Deployment", "web")])
    assert told == [("app", "apps", "Deployment", "web")] and index.scaled("app", "apps", "Deployment", "web")
    index._event("DELETED", _hpa("a", "Deployment", "web"))
    assert len(told) == 1  # b still scales it
    index._event("MODIFIED", _hpa("b", "StatefulSet", "db"))
    assert told[1:] == [("app", "apps", "Deployment", "web"), ("app", "apps", "StatefulSet", "db")]
    assert not index.scaled("app", "apps", "Deployment", "web")
    index._listed([])
    assert told[-1] == ("app", "apps", "StatefulSet", "db") and not index.counts
    assert target_of({"metadata": {}, "spec": {"scaleTargetRef": {"kind": "Deployment"}}}) is None
    assert target_of(_hpa("c", "Thing", "x", api_version="v1")) == ("app", "", "Thing", "x")
