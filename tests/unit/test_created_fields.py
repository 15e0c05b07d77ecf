"""A create's managedFields kept by the new object's shape (``managedfields._created``, ``fieldmanager.shape_of``):
an object of a shape seen before gets exactly the fields a fresh comparison gives it, and an object whose fields
could differ never shares another's."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from apiserver import managedfields
from apiserver.fieldmanager import FieldSet, shape_of
from apiserver.schemamemo import SchemaMemo
from tests.unit.test_fieldmanager import CONFIGMAP, DEFS, DEPLOYMENT, T0, deployment

# A custom resource's schema with an associative list (keyed by name), a set and an atomic list.
ROUTE = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "routes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
               "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
    "hosts": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}},
    "args": {"type": "array", "items": {"type": "string"}},
}}}}


@pytest.fixture(autouse=True)
def comparisons(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """An empty memo, and the number of comparisons made (one per create the memo did not answer)."""
    monkeypatch.setattr(managedfields, "_CREATED", SchemaMemo(512))
    made: list[int] = []
    compare = managedfields.compare

    def counting(*args: Any) -> Any:
        made.append(1)
        return compare(*args)

    monkeypatch.setattr(managedfields, "compare", counting)
    yield made


def created(obj: dict[str, Any], schema: dict[str, Any] = DEPLOYMENT, api_version: str = "apps/v1",
            manager: str = "m") -> list[dict[str, Any]] | None:
    new = copy.deepcopy(obj)
    managedfields.update_managed_fields(None, new, manager, api_version, T0, schema, DEFS)
    return new["metadata"].get("managedFields")


def fresh(obj: dict[str, Any], schema: dict[str, Any] = DEPLOYMENT, api_version: str = "apps/v1",
          manager: str = "m") -> list[dict[str, Any]] | None:
    """What a create records with nothing kept."""
    kept = managedfields._CREATED
    managedfields._CREATED = SchemaMemo(kept.limit)
    try:
        return created(obj, schema, api_version, manager)
    finally:
        managedfields._CREATED = kept

def test_an_object_alike_but_for_its_leaves_gets_the_fields_a_fresh_comparison_gives(comparisons: list[int]) -> None:
    first = created(deployment())
    other = deployment()
    other["metadata"].update(name="api", namespace="shop", uid="u-2", creationTimestamp=T0)
    other["metadata"]["labels"]["app"] = "api"
    other["spec"]["replicas"] = 7
    other["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"  # inside a list: kept apart
    assert created(other) == fresh(other)
    same_shape = deployment()
    same_shape["metadata"]["name"], same_shape["spec"]["replicas"] = "other", 3
    comparisons.clear()
    assert created(same_shape, manager="someone-else") == [
        {**entry, "manager": "someone-else"} for entry in first or []]
    assert comparisons == []  # answered from the memo
    assert created(same_shape) == fresh(same_shape) == first


def test_the_fields_come_out_new_each_time() -> None:
    first = created(deployment())
    assert first is not None
    first[0]["fieldsV1"]["f:spec"].clear()  # a caller changing what it got changes nothing kept
    assert created(deployment()) == fresh(deployment())


def different_shapes() -> list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(what differs, schema, one object, the other), each pair with different fields."""
    def cm(**data: Any) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, **data}

    def route(**spec: Any) -> dict[str, Any]:
        return {"apiVersion": "example.com/v1", "kind": "Route", "metadata": {"name": "r"}, "spec": spec}

    return [
        ("a key", CONFIGMAP, cm(data={"a": "1"}), cm(data={"b": "1"})),
        ("a leaf or a null", CONFIGMAP, cm(data={"a": "1"}), cm(data={"a": None})),
        ("an empty map or a leaf", CONFIGMAP, cm(data={}), cm(data="x")),
        ("a label", CONFIGMAP, cm(), {**cm(), "metadata": {"name": "c", "labels": {"x": "y"}}}),
        ("an associative list's keys", ROUTE, route(routes=[{"name": "a"}]), route(routes=[{"name": "b"}])),
        ("a set's values", ROUTE, route(hosts=[1]), route(hosts=[2])),
        ("true or 1 in a set", ROUTE, route(hosts=[True]), route(hosts=[1])),
        ("an empty list or not", ROUTE, route(args=[]), route(args=["-v"])),
    ]


@pytest.mark.parametrize(("what", "schema", "one", "other"), different_shapes(), ids=[c[0] for c in different_shapes()])
def test_an_object_whose_fields_may_differ_does_not_share_them(what: str, schema: dict[str, Any],
                                                               one: dict[str, Any], other: dict[str, Any]) -> None:
    assert shape_of(one) != shape_of(other), what
    version = one["apiVersion"]
    created(one, schema, version)
    assert created(other, schema, version) == fresh(other, schema, version)


def test_a_kind_does_not_share_another_kinds_fields() -> None:
    cr = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    created(cr, CONFIGMAP, "v1")
    untyped = {"type": "object"}
    assert created(cr, untyped, "v1") == fresh(cr, untyped, "v1")


def test_leaves_in_maps_do_not_count() -> None:
    assert shape_of({"a": "x", "b": {"c": 1}}) == shape_of({"a": 3, "b": {"c": True}})
    assert shape_of({"a": ["x"]}) != shape_of({"a": ["y"]})  # a list is kept whole
    # orjson writes NaN as null: a list holding a null is kept item by item, types and all.
    assert shape_of({"a": [None]}) != shape_of({"a": [float("nan")]})
    assert shape_of({"a": [{"b": None}]}) != shape_of({"a": [{"b": float("inf")}]})


def test_an_untrackable_object_stays_untracked_when_kept(comparisons: list[int]) -> None:
    keyless = deployment()
    keyless["spec"]["template"]["spec"]["containers"].append({"image": "sidecar"})  # no name: no key
    assert created(keyless) is None
    comparisons.clear()
    assert created(keyless) is None
    assert comparisons == []


def test_objects_too_large_are_compared_not_kept() -> None:
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
           "data": {f"k{i}": "v" for i in range(5_000)}}
    assert shape_of(big) is None
    assert created(big, CONFIGMAP, "v1") == fresh(big, CONFIGMAP, "v1")
    assert len(managedfields._CREATED) == 0


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(managedfields, "_CREATED", SchemaMemo(3))
    for i in range(5):
        created({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {f"k{i}": "v"}},
                CONFIGMAP, "v1")
    assert len(managedfields._CREATED) == 3


def test_a_field_set_encodes_the_same_every_time() -> None:
    fields = FieldSet.from_fields_v1({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {"f:x": {}}}})
    encoded = [fields.to_fields_v1() for _ in range(3)]
    assert encoded[0] == encoded[1] == encoded[2] == {"f:data": {".": {}, "f:a": {}},
                                                       "f:metadata": {"f:labels": {"f:x": {}}}}
    assert encoded[1] is not encoded[2]
    assert list(encoded[2]["f:data"]) == [".", "f:a"]  # the order kept too
