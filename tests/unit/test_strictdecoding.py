"""``check_fields``: what each ``fieldValidation`` mode makes of a body's unknown fields and type errors, and the
bodies it found clean kept by their JSON (a body seen clean is not walked again; any other body is)."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest

from apimachinery.errors import StatusError
from apiserver import strictdecoding
from apiserver.catalog import Catalog
from apiserver.resourcetypes import ResourceType
from apiserver.schemamemo import SchemaMemo
from apiserver.spacepaths import ROOT
from apiserver.strictdecoding import check_fields

CATALOG = Catalog()


def rtype(resource: str) -> ResourceType:
    found = CATALOG.by_group_resource(ROOT, resource)
    assert found is not None
    return found


def role() -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "view", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]}


@pytest.fixture(autouse=True)
def walks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """An empty memo, and the number of bodies walked."""
    monkeypatch.setattr(strictdecoding, "_CLEAN", SchemaMemo(256))
    walked: list[int] = []
    check = strictdecoding.check

    def counting(*args: Any) -> Any:
        walked.append(1)
        return check(*args)

    monkeypatch.setattr(strictdecoding, "check", counting)
    yield walked


def checked(resource: str, obj: dict[str, Any], mode: str = "Strict") -> tuple[dict[str, Any], list[str]]:
    """The body as ``check_fields`` leaves it, and its warnings."""
    body, warnings = copy.deepcopy(obj), []
    check_fields(CATALOG, rtype(resource), body, mode, warnings, patch=False)
    return body, warnings


def test_a_body_seen_clean_is_clean_again_without_a_walk(walks: list[int]) -> None:
    assert checked("clusterroles.rbac.authorization.k8s.io", role()) == (role(), [])
    assert checked("clusterroles.rbac.authorization.k8s.io", role()) == (role(), [])
    assert len(walks) == 1


def test_any_other_body_is_walked(walks: list[int]) -> None:
    checked("clusterroles.rbac.authorization.k8s.io", role())
    unknown = role()
    unknown["rules"][0]["verbz"] = ["get"]
    with pytest.raises(StatusError, match=re.escape('unknown field "rules[0].verbz"')):
        checked("clusterroles.rbac.authorization.k8s.io", unknown)
    assert checked("clusterroles.rbac.authorization.k8s.io", unknown, "Warn") == (
        role(), ['unknown field "rules[0].verbz"'])
    wrong_type = role()
    wrong_type["rules"][0]["verbs"] = "get"
    wrong = re.escape("cannot unmarshal string into Go struct field PolicyRule.rules.verbs")
    with pytest.raises(StatusError, match=wrong):
        checked("clusterroles.rbac.authorization.k8s.io", wrong_type)
    assert len(walks) == 4
    # Another kind with the same body is walked against its own schema.
    with pytest.raises(StatusError, match='unknown field "rules"'):
        checked("configmaps", {**role(), "apiVersion": "v1", "kind": "ConfigMap"})


def test_bodies_that_json_cannot_tell_apart_are_not_kept(walks: list[int]) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": None}}
    checked("configmaps", cm)
    checked("configmaps", cm)
    assert len(walks) == 2  # orjson writes NaN as null too
    assert len(strictdecoding._CLEAN) == 0


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(strictdecoding, "_CLEAN", SchemaMemo(3))
    for i in range(5):
        checked("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}})
    assert len(strictdecoding._CLEAN) == 3
