"""status.kinds: StatusCollector and CombinedStatus from our CRD files; a bad collector is refused with its CEL error
at the field that holds it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from apiserver.catalog import Catalog
from apiserver.crdschema import validate_crd
from apiserver.resourcetypes import ResourceType
from status.kinds import CRDS, StatusCollectorStrategy, status_types


def rtype(kind: str) -> ResourceType:
    return next(t for t in status_types() if t.kind == kind)


def collector(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector",
            "metadata": {"name": "count-wecs"}, "spec": spec}


def create(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    """What the object service does on create: prepare (defaults), then validate."""
    strategy = rtype("StatusCollector").strategy
    obj = copy.deepcopy(obj)
    strategy.prepare_for_create(obj)
    return [(c.type, c.field, c.message) for c in strategy.validate(obj)]


def test_the_crd_files_are_valid_definitions() -> None:
    files = sorted(Path(CRDS).glob("*.yaml"))
    assert [f.name for f in files] == ["combinedstatuses.yaml", "placementstatuses.yaml", "statuscollectors.yaml"]
    for path in files:
        assert validate_crd(yaml.safe_load(path.read_text()), None) == []


def test_the_kinds_are_kubestellars() -> None:
    sc, cs = rtype("StatusCollector"), rtype("CombinedStatus")
    assert (sc.group, sc.version, sc.plural, sc.namespaced, sc.short_names, sc.subresources) == (
        "control.kubestellar.io", "v1alpha1", "statuscollectors", False, ("sc",), ("status",))
    assert (cs.group, cs.version, cs.plural, cs.namespaced, cs.short_names, cs.subresources) == (
        "control.kubestellar.io", "v1alpha1", "combinedstatuses", True, ("cs",), ())
    assert isinstance(sc.strategy, StatusCollectorStrategy)
    Catalog(extra_types=status_types())   # the hub's catalogue takes them as extra kinds


def test_combined_status_columns_read_the_subject_labels() -> None:
    labels = {"status.kubestellar.io/api-group": "apps", "status.kubestellar.io/resource": "deployments",
              "status.kubestellar.io/namespace": "shop", "status.kubestellar.io/name": "web",
              "status.kubestellar.io/binding-policy": "nginx"}
    obj = {"metadata": {"name": "uid1.uid2", "namespace": "shop", "labels": labels}, "results": []}
    columns = rtype("CombinedStatus").columns
    assert [c.name for c in columns] == ["Name", "SUBJECT_GROUP", "SUBJECT_RSC", "SUBJECT_NS", "SUBJECT_NAME",
                                         "BINDINGPOLICY"]
    assert [c.cell(obj) for c in columns[1:]] == ["apps", "deployments", "shop", "web", "nginx"]


def test_a_good_collector_is_accepted_and_its_limit_defaults_to_20() -> None:
    obj = collector(combinedFields=[{"name": "count", "type": "COUNT"}])
    strategy = rtype("StatusCollector").strategy
    strategy.prepare_for_create(obj)
    assert obj["spec"]["limit"] == 20
    assert strategy.validate(obj) == []
    assert strategy.validate_update(obj, obj) == []


def test_a_type_error_is_refused_at_its_field_with_the_cel_error() -> None:
    causes = create(collector(groupBy=[{"name": "g", "def": "inventory.name + 1"}],
                              combinedFields=[{"name": "count", "type": "COUNT"}]))
    assert len(causes) == 1
    reason, path, message = causes[0]
    assert (reason, path) == ("FieldValueInvalid", "spec.groupBy[0].def")
    assert message.startswith('Invalid value: "inventory.name + 1": compilation failed: ERROR: <input>:1:16: '
                              "found no matching overload for '_+_' applied to '(string, int)'")


def test_structure_and_cost_problems_have_their_kube_reasons() -> None:
    assert create(collector(select=[{"name": "a", "def": "inventory.name"}],
                            combinedFields=[{"name": "n", "type": "COUNT"}])) == [
        ("FieldValueForbidden", "spec.select", "Forbidden: must be empty when groupBy or combinedFields is given")]
    assert create(collector(combinedFields=[{"name": "n", "type": "COUNT"}, {"name": "n", "type": "COUNT"}])) == [
        ("FieldValueDuplicate", "spec.combinedFields[1].name", 'Duplicate value: "n"')]
    assert create(collector(combinedFields=[{"name": "s", "type": "SUM"}])) == [
        ("FieldValueRequired", "spec.combinedFields[0].subject", "Required value: an expression is required for SUM")]
    [(reason, path, message)] = create(collector(select=[{"name": "x", "def": (
        "returned.status.items.all(a, returned.status.items.all(b, a != b))")}]))
    assert (reason, path) == ("FieldValueForbidden", "spec.select[0].def")
    assert "estimated expression cost exceeds the per-call budget" in message


def test_the_schema_is_checked_before_the_expressions() -> None:
    causes = create(collector(limit=-1, select=[{"name": "x", "def": "inventory.name + 1"}]))
    assert [(reason, path) for reason, path, _ in causes] == [("FieldValueInvalid", "spec.limit")]
