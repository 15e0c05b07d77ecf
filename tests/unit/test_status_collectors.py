"""status.collectors: KubeStellar's StatusCollector compiled and evaluated into CombinedStatus results."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from apimachinery.gofmt import go_float
from status import collectors
from status.collectors import ClusterRow, CollectorError, compile_collector, evaluate

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
              "spec": {"replicas": 3}, "status": {"replicas": 3, "availableReplicas": 3}}


def status(available: int, phase: str = "Running", **extra: Any) -> dict[str, Any]:
    return {"replicas": 3, "readyReplicas": available, "availableReplicas": available, "phase": phase, **extra}


ROWS = [
    ClusterRow("paris", {"region": "eu", "tier": "edge"}, status(3), dt.datetime(2025, 3, 1, 10, tzinfo=dt.UTC)),
    ClusterRow("berlin", {"region": "eu"}, status(2, "Pending"), "2025-03-01T11:00:00Z"),
    ClusterRow("ohio", {"region": "us"}, status(1), None),
    ClusterRow("lima", {"region": "sa"}, None, None),   # nothing returned yet: not in the table
]


def run(spec: dict[str, Any], rows: list[ClusterRow] = ROWS, name: str = "sc") -> dict[str, Any]:
    return evaluate(compile_collector(spec, name=name), DEPLOYMENT, rows)


def number(text: str) -> dict[str, str]:
    return {"type": "Number", "float": text}


def test_count_over_two_clusters_is_one_number_row() -> None:
    result = run({"combinedFields": [{"name": "count", "type": "COUNT"}], "limit": 10}, ROWS[:2], name="count-wecs")
    assert result == {"name": "count-wecs", "columnNames": ["count"], "rows": [{"columns": [number("2")]}]}


def test_count_ignores_clusters_that_returned_nothing() -> None:
    assert run({"combinedFields": [{"name": "count", "type": "COUNT"}]})["rows"] == [{"columns": [number("3")]}]


def test_sum_avg_min_max_of_available_replicas() -> None:
    spec = {"combinedFields": [{"name": t.lower(), "type": t, "subject": "returned.status.availableReplicas"}
                               for t in ("SUM", "AVG", "MIN", "MAX")]}
    result = run(spec)
    assert result["columnNames"] == ["sum", "avg", "min", "max"]
    assert result["rows"] == [{"columns": [number("6"), number("2"), number("1"), number("3")]}]
    assert "rowErrors" not in result and "aggregationErrors" not in result


def test_aggregates_of_nothing_are_their_identities_and_avg_is_nan() -> None:
    spec = {"filter": "false", "combinedFields": [
        {"name": "n", "type": "COUNT"},
        *({"name": t.lower(), "type": t, "subject": "returned.status.availableReplicas"}
          for t in ("SUM", "AVG", "MIN", "MAX"))]}
    result = run(spec)
    assert result["rows"] == [{"columns": [number("0"), number("0"), number("NaN"), number("+Inf"), number("-Inf")]}]
    assert result["aggregationErrors"] == [{"columnName": "avg", "error": "no values to average"}]


def test_group_by_region_counts_per_value() -> None:
    spec = {"groupBy": [{"name": "region", "def": 'inventory.labels["region"]'}],
            "combinedFields": [{"name": "count", "type": "COUNT"},
                               {"name": "ready", "type": "SUM", "subject": "returned.status.readyReplicas"}]}
    result = run(spec)
    assert result["columnNames"] == ["region", "count", "ready"]
    assert result["rows"] == [
        {"columns": [{"type": "String", "string": "eu"}, number("2"), number("5")]},
        {"columns": [{"type": "String", "string": "us"}, number("1"), number("1")]},
    ]


def test_group_by_several_columns_and_a_histogram_of_numbers() -> None:
    spec = {"groupBy": [{"name": "phase", "def": "returned.status.phase"},
                        {"name": "available", "def": "returned.status.availableReplicas"}],
            "combinedFields": [{"name": "count", "type": "COUNT"}]}
    rows = [*ROWS, ClusterRow("tokyo", {}, status(1), None)]
    assert run(spec, rows)["rows"] == [
        {"columns": [{"type": "String", "string": "Pending"}, number("2"), number("1")]},
        {"columns": [{"type": "String", "string": "Running"}, number("1"), number("2")]},
        {"columns": [{"type": "String", "string": "Running"}, number("3"), number("1")]},
    ]


def test_select_gives_a_row_per_cluster_with_an_object_column() -> None:
    spec = {"select": [{"name": "wec", "def": "inventory.name"}, {"name": "status", "def": "returned.status"},
                       {"name": "retrievalTime", "def": "propagation.lastReturnedUpdateTimestamp"}]}
    result = run(spec)
    assert result["columnNames"] == ["wec", "status", "retrievalTime"]
    assert result["rows"] == [
        {"columns": [{"type": "String", "string": "berlin"}, {"type": "Object", "object": status(2, "Pending")},
                     {"type": "String", "string": "2025-03-01T11:00:00Z"}]},
        {"columns": [{"type": "String", "string": "ohio"}, {"type": "Object", "object": status(1)},
                     {"type": "String", "string": "0001-01-01T00:00:00Z"}]},   # never returned: Go's zero time
        {"columns": [{"type": "String", "string": "paris"}, {"type": "Object", "object": status(3)},
                     {"type": "String", "string": "2025-03-01T10:00:00Z"}]},
    ]


def test_select_values_of_every_type() -> None:
    spec = {"select": [{"name": n, "def": d} for n, d in (
        ("int", "returned.status.readyReplicas"), ("double", "double(returned.status.readyReplicas) * 0.5"),
        ("bool", "obj.spec.replicas == returned.status.availableReplicas"), ("null", "null"),
        ("list", "[inventory.name, 1]"), ("labels", "inventory.labels"), ("huge", "1000000.0 * 1.5"))]}
    assert run(spec, ROWS[:1])["rows"] == [{"columns": [
        number("3"), number("1.5"), {"type": "Bool", "bool": True}, {"type": "Null"},
        {"type": "Array", "array": ["paris", 1]}, {"type": "Object", "object": {"region": "eu", "tier": "edge"}},
        number("1.5e+06")]}]


def test_filter_keeps_the_clusters_short_of_the_desired_replicas() -> None:
    spec = {"filter": "obj.spec.replicas != returned.status.availableReplicas",
            "select": [{"name": "wec", "def": "inventory.name"}]}
    assert run(spec)["rows"] == [{"columns": [{"type": "String", "string": "berlin"}]},
                                 {"columns": [{"type": "String", "string": "ohio"}]}]


def test_the_filter_sees_the_object_without_its_status() -> None:
    spec = {"filter": "!has(obj.status) && obj.metadata.name == 'web'", "combinedFields": [{"name": "n",
                                                                                           "type": "COUNT"}]}
    assert run(spec)["rows"] == [{"columns": [number("3")]}]


def test_a_null_filter_is_false_and_a_non_boolean_filter_is_a_row_error() -> None:
    spec = {"filter": "inventory.name == 'paris' ? true : null", "combinedFields": [{"name": "n", "type": "COUNT"}]}
    assert run(spec)["rows"] == [{"columns": [number("1")]}]
    spec = {"filter": "returned.status.phase", "combinedFields": [{"name": "n", "type": "COUNT"}]}
    result = run(spec)
    assert result["rows"] == [{"columns": [number("0")]}]
    assert result["rowErrors"] == [{"wec": {"clusterId": "berlin"}, "columnName": "",
                                    "error": "filter expression has type string but expected bool or null"}]


def test_limit_caps_the_rows_and_zero_means_the_default() -> None:
    select = [{"name": "wec", "def": "inventory.name"}]
    assert [r["columns"][0]["string"] for r in run({"select": select, "limit": 2})["rows"]] == ["berlin", "ohio"]
    many = [ClusterRow(f"c{i:02d}", {}, status(1), None) for i in range(30)]
    assert len(run({"select": select}, many)["rows"]) == collectors.DEFAULT_LIMIT
    assert len(run({"select": select, "limit": 0}, many)["rows"]) == collectors.DEFAULT_LIMIT
    grouped = {"groupBy": [{"name": "wec", "def": "inventory.name"}],
               "combinedFields": [{"name": "n", "type": "COUNT"}], "limit": 3}
    assert [r["columns"][0]["string"] for r in run(grouped, many)["rows"]] == ["c00", "c01", "c02"]


def test_a_runtime_error_is_a_row_error_and_the_row_stays_out_of_aggregation() -> None:
    rows = [*ROWS, ClusterRow("quito", {"region": "sa"}, {"phase": "Pending"}, None)]
    spec = {"combinedFields": [{"name": "count", "type": "COUNT"},
                               {"name": "available", "type": "SUM", "subject": "returned.status.availableReplicas"}]}
    result = run(spec, rows)
    assert result["rows"] == [{"columns": [number("3"), number("6")]}]
    assert result["rowErrors"] == [{"wec": {"clusterId": "quito"}, "columnName": "available",
                                    "error": "failed to evaluate expression: no such key: availableReplicas"}]


def test_a_select_error_leaves_the_column_null_and_says_why() -> None:
    rows = [ClusterRow("quito", {}, {"phase": "Pending"}, None), *ROWS[:1]]
    result = run({"select": [{"name": "wec", "def": "inventory.name"},
                             {"name": "ready", "def": "returned.status.readyReplicas"}]}, rows)
    assert result["rows"] == [{"columns": [{"type": "String", "string": "paris"}, number("3")]},
                              {"columns": [{"type": "String", "string": "quito"}, {"type": "Null"}]}]
    assert result["rowErrors"][0]["wec"] == {"clusterId": "quito"}


def test_strings_are_parsed_as_numbers_where_possible_else_zero_with_an_error() -> None:
    rows = [ClusterRow("a", {}, {"v": "2.5"}, None), ClusterRow("b", {}, {"v": "lots"}, None),
            ClusterRow("c", {}, {"v": 4}, None), ClusterRow("d", {}, {"v": None}, None)]
    result = run({"combinedFields": [{"name": "sum", "type": "SUM", "subject": "returned.status.v"},
                                     {"name": "avg", "type": "AVG", "subject": "returned.status.v"}]}, rows)
    assert result["rows"] == [{"columns": [number("6.5"), number(go_float(6.5 / 3))]}]
    error = ('for WEC b, failed to parse combinedField subject as a float: strconv.ParseFloat: parsing "lots": '
             "invalid syntax")
    assert result["aggregationErrors"] == [{"columnName": "sum", "error": error}, {"columnName": "avg", "error": error}]


def test_a_runaway_expression_is_cut_off_as_a_row_error() -> None:
    spec = {"select": [{"name": "n", "def": "returned.status.items.all(x, returned.status.items.all(y, x != y))"}]}
    with pytest.raises(CollectorError) as refused:
        compile_collector(spec)
    assert refused.value.path == "spec.select[0].def"
    assert "estimated expression cost exceeds the per-call budget" in refused.value.detail
    # One the estimate lets by (a single scan) but whose data makes it run away.
    spec = {"select": [{"name": "n", "def": "returned.status.items.filter(x, x > 0).size()"}]}
    rows = [ClusterRow(f"c{i}", {}, {"items": list(range(1, 600_000))}, None) for i in range(3)]
    result = run(spec, rows)
    assert result["rows"] == [{"columns": [{"type": "Null"}]}] * 3
    # Cut off by the cost limit, or on a loaded machine by the evaluation's time limit first: either way one row
    # error, and the message starts as cel-go's does.
    [error] = result["rowErrors"]
    assert {k: v for k, v in error.items() if k != "error"} == {"wec": {"clusterId": "c0"}, "columnName": "n"}
    assert error["error"].startswith("failed to evaluate expression: operation cancelled: actual cost limit exceeded")


def test_the_whole_evaluation_has_a_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compile_collector({"select": [{"name": "n", "def": "returned.status.items.map(x, x * 2).size()"}]})
    monkeypatch.setattr(collectors, "PER_CALL_LIMIT", 1000)
    run_ = collectors._Run(compiled, budget=2500)
    for i in range(4):
        row = ClusterRow(f"c{i}", {}, {"items": list(range(300))}, None)
        run_.add(row, row.status, {})
    result = run_.result()
    assert result["rows"][:2] == [{"columns": [number("300")]}] * 2
    assert result["rows"][2:] == [{"columns": [{"type": "Null"}]}] * 2
    assert "budget exhausted" in result["rowErrors"][0]["error"]


@pytest.mark.parametrize(("spec", "path", "detail"), [
    ({"groupBy": [{"name": "g", "def": "inventory.name + 1"}], "combinedFields": [{"name": "n", "type": "COUNT"}]},
     "spec.groupBy[0].def", "found no matching overload for '_+_' applied to '(string, int)'"),
    ({"select": [{"name": "s", "def": "inventory.nam"}]}, "spec.select[0].def", "undefined field 'nam'"),
    ({"select": [{"name": "s", "def": "returned.status.("}]}, "spec.select[0].def", "Syntax error"),
    ({"filter": "inventory.name", "select": [{"name": "s", "def": "inventory.name"}]}, "spec.filter",
     "must evaluate to a bool or null, not string"),
    ({"groupBy": [{"name": "g", "def": "inventory.labels"}], "combinedFields": [{"name": "n", "type": "COUNT"}]},
     "spec.groupBy[0].def", "must evaluate to an atomic value, not map(string, string)"),
    ({"combinedFields": [{"name": "m", "type": "MAX", "subject": "propagation.lastReturnedUpdateTimestamp > "
                                                               "timestamp('2025-01-01T00:00:00Z')"}]},
     "spec.combinedFields[0].subject", "must evaluate to a number or a string, not bool"),
    ({"select": [{"name": "s", "def": "inventory.name"}], "groupBy": [{"name": "g", "def": "inventory.name"}]},
     "spec.select", "must be empty when groupBy or combinedFields is given"),
    ({"groupBy": [{"name": "g", "def": "inventory.name"}]}, "spec.groupBy", "must be empty when combinedFields is"),
    ({"combinedFields": [{"name": "n", "type": "COUNT"}, {"name": "n", "type": "COUNT"}]},
     "spec.combinedFields[1].name", ""),
    ({"combinedFields": [{"name": "s", "type": "SUM"}]}, "spec.combinedFields[0].subject", "required for SUM"),
    ({"combinedFields": [{"name": "c", "type": "COUNT", "subject": "1"}]}, "spec.combinedFields[0].subject",
     "must be omitted for COUNT"),
    ({"combinedFields": [{"name": "c", "type": "MEDIAN", "subject": "1"}]}, "spec.combinedFields[0].type", ""),
    ({"select": [{"name": "s", "def": "inventory.name"}], "limit": -1}, "spec.limit", "greater than or equal to 0"),
    ({"select": [{"def": "inventory.name"}]}, "spec.select[0].name", ""),
])
def test_bad_collectors_are_refused_with_the_field(spec: dict[str, Any], path: str, detail: str) -> None:
    with pytest.raises(CollectorError) as refused:
        compile_collector(spec)
    assert refused.value.path == path
    assert detail in refused.value.detail


def test_every_problem_is_reported_and_the_structure_comes_first() -> None:
    with pytest.raises(CollectorError) as refused:
        compile_collector({"filter": "1 +", "select": [{"name": "a", "def": "inventory.name + 1"},
                                                      {"name": "b", "def": "obj.spec.(("}]})
    assert [p.path for p in refused.value.problems] == ["spec.filter", "spec.select[0].def", "spec.select[1].def"]
    with pytest.raises(CollectorError) as refused:
        compile_collector({"filter": "1 +", "groupBy": [{"name": "a", "def": "inventory.name"}]})
    assert [p.path for p in refused.value.problems] == ["spec.groupBy"]


def test_typed_inventory_evaluates_what_kubestellar_documents() -> None:
    expressions = ("size(inventory.labels) > 0", "inventory.name", 'inventory.labels["region"]',
                   "propagation.lastReturnedUpdateTimestamp",
                   "returned.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')")
    spec = {"select": [{"name": f"x{i}", "def": expression} for i, expression in enumerate(expressions)]}
    rows = [ClusterRow("paris", {"region": "eu", "tier": "edge"},
                       status(3, conditions=[{"type": "Available", "status": "True"}]),
                       dt.datetime(2025, 3, 1, 10, tzinfo=dt.UTC)),
            ClusterRow("ohio", {"region": "us"}, status(1, conditions=[{"type": "Available", "status": "False"}]),
                       None)]
    result = run(spec, rows)
    assert "rowErrors" not in result
    by_cluster = {row["columns"][1]["string"]: row["columns"] for row in result["rows"]}
    assert by_cluster == {
        "paris": [{"type": "Bool", "bool": True}, {"type": "String", "string": "paris"},
                  {"type": "String", "string": "eu"}, {"type": "String", "string": "2025-03-01T10:00:00Z"},
                  {"type": "Bool", "bool": True}],
        # Never returned an update: Go's zero time, as KubeStellar's zero metav1.Time renders.
        "ohio": [{"type": "Bool", "bool": True}, {"type": "String", "string": "ohio"},
                 {"type": "String", "string": "us"}, {"type": "String", "string": "0001-01-01T00:00:00Z"},
                 {"type": "Bool", "bool": False}]}


def test_values_json_cannot_hold_are_written_as_kubernetes_writes_them() -> None:
    spec = {"select": [{"name": "o", "def": "{'d': duration('90s'), 'b': b'hi', 'nan': [0.0 / 0.0], "
                                            "'t': timestamp('2025-03-01T10:00:00.250Z')}"},
                       {"name": "inf", "def": "-1.0 / 0.0"}]}
    assert run(spec, ROWS[:1])["rows"] == [{"columns": [
        {"type": "Object", "object": {"d": "90s", "b": "aGk=", "nan": [None], "t": "2025-03-01T10:00:00.25Z"}},
        number("-Inf")]}]
