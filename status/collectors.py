"""KubeStellar's StatusCollector: its CEL compiled once, then evaluated per object into a CombinedStatus result.

A StatusCollector is an SQL ``SELECT`` over a table with one row per cluster that returned the object's
status (KubeStellar ``docs/content/direct/combined-status.md``): ``filter`` is the ``WHERE``; either
``select`` lists per-cluster columns, or ``combinedFields`` (COUNT, SUM, AVG, MIN, MAX) aggregate the
rows, grouped by the ``groupBy`` columns; ``limit`` caps the rows (20 by default). Expressions see
``inventory`` (the cluster: ``name`` and, beside KubeStellar's, ``labels``), ``obj`` (the workload object
without its status), ``returned.status`` and ``propagation.lastReturnedUpdateTimestamp``.

:func:`compile_collector` refuses a collector whose structure, CEL syntax, CEL types or estimated cost
is wrong, naming the field. :func:`evaluate` never raises for what one cluster's data does to an
expression: a failure is a row error of the result, and a meter (per call and for the whole evaluation)
stops expressions that run away.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cel import (
    PER_CALL_LIMIT,
    CelCompileError,
    CelCostExceeded,
    CelEvalError,
    CompiledExpression,
    compile_typed,
    estimated_cost,
)
from cel.crd_rules import RUNTIME_CEL_COST_BUDGET
from cel.types import DYN, TIMESTAMP, CelType, FieldInfo, map_of, type_name
from status.values import number_value, order_key, to_value

DEFAULT_LIMIT = 20
AGGREGATOR_TYPES = ("COUNT", "SUM", "AVG", "MIN", "MAX")
FILTER_COLUMN = ""  # KubeStellar's FilterColumnName: the column a filter's errors are reported under

# Workload data is dyn, without schema bounds. Kubernetes' fallback for unbounded data (as many items as
# the largest request body holds) would refuse even one scan over ``conditions``; sized as 10,000 items,
# a scan passes and a scan inside a scan does not. The runtime meter stops what the estimate lets by.
ESTIMATE_LIST_SIZE = 10_000
ESTIMATE_STRING_LENGTH = 64 * 1024

_NAME = CelType("string", max_size=253)                # a DNS subdomain: the cluster's name
_LABELS = map_of(CelType("string", max_size=317), CelType("string", max_size=63))  # prefix/name → value
VARIABLES: Mapping[str, CelType] = {
    "inventory": CelType("object", fields={"name": FieldInfo("name", _NAME),
                                           "labels": FieldInfo("labels", _LABELS)}),
    "obj": DYN,
    "returned": CelType("object", fields={"status": FieldInfo("status", DYN)}),
    "propagation": CelType("object", fields={
        "lastReturnedUpdateTimestamp": FieldInfo("lastReturnedUpdateTimestamp", TIMESTAMP)}),
}
# KubeStellar's lastReturnedUpdateTimestamp before anything was returned: Go's zero time.
ZERO_TIME = dt.datetime(1, 1, 1, tzinfo=dt.UTC)

# The result types each kind of expression may have (an optional of one of them too); select takes any.
_FILTER_TYPES = ("bool", "dyn", "null_type")
_ATOMIC_TYPES = ("bool", "int", "uint", "double", "string", "bytes", "null_type", "dyn",
                 "google.protobuf.Timestamp", "google.protobuf.Duration")
_SUBJECT_TYPES = ("int", "uint", "double", "string", "dyn", "null_type")


# --- compiling --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec: the field, its value, why, and the kube ``reason`` it amounts to."""

    path: str
    value: Any
    detail: str
    reason: str = "FieldValueInvalid"


class CollectorError(ValueError):
    """A StatusCollector that cannot run. ``problems`` holds every one found; ``path`` and ``detail`` the first."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{p.path}: {p.detail}" for p in self.problems))

    @property
    def path(self) -> str:
        return self.problems[0].path

    @property
    def detail(self) -> str:
        return self.problems[0].detail


@dataclass(frozen=True, eq=False)
class NamedExpression:
    name: str
    expression: CompiledExpression


@dataclass(frozen=True, eq=False)
class Aggregator:
    name: str
    type: str                                  # one of AGGREGATOR_TYPES
    subject: CompiledExpression | None         # None for COUNT


@dataclass(frozen=True, eq=False)
class CompiledCollector:
    """A StatusCollector ready to evaluate; immutable, so one may serve many objects and threads."""

    name: str
    filter: CompiledExpression | None
    group_by: tuple[NamedExpression, ...]
    combined_fields: tuple[Aggregator, ...]
    select: tuple[NamedExpression, ...]
    limit: int

    @property
    def column_names(self) -> list[str]:
        if self.select:
            return [c.name for c in self.select]
        return [c.name for c in self.group_by] + [a.name for a in self.combined_fields]


@dataclass
class _Spec:
    """The problems found so far while reading a spec."""

    problems: list[Problem] = field(default_factory=list)

    def add(self, path: str, value: Any, detail: str, reason: str = "FieldValueInvalid") -> None:
        self.problems.append(Problem(path, value, detail, reason))

    def entries(self, spec: Mapping[str, Any], key: str) -> list[tuple[str, Mapping[str, Any]]]:
        value = spec.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.add(f"spec.{key}", value, "must be a list")
            return []
        out = []
        for i, entry in enumerate(value):
            if isinstance(entry, Mapping):
                out.append((f"spec.{key}[{i}]", entry))
            else:
                self.add(f"spec.{key}[{i}]", entry, "must be an object")
        return out

    def text(self, entry: Mapping[str, Any], path: str, key: str) -> str | None:
        value = entry.get(key)
        if value is None or value == "":
            self.add(f"{path}.{key}", value, "", "FieldValueRequired")
            return None
        if not isinstance(value, str):
            self.add(f"{path}.{key}", value, "must be a string")
            return None
        return value

    def limit(self, spec: Mapping[str, Any]) -> int:
        value = spec.get("limit")
        if value is None:
            return DEFAULT_LIMIT
        if not isinstance(value, int) or isinstance(value, bool):
            self.add("spec.limit", value, "must be an integer")
            return DEFAULT_LIMIT
        if value < 0:
            self.add("spec.limit", value, "must be greater than or equal to 0")
        # KubeStellar's Go type has no way to leave limit out (``limit: 0`` is what its clients send
        # for "unset"), so 0 means the documented default.
        return value or DEFAULT_LIMIT

    def cel(self, path: str, source: str, allowed: tuple[str, ...] | None, wanted: str) -> CompiledExpression | None:
        try:
            compiled = compile_typed(source, VARIABLES)
        except CelCompileError as exc:
            self.add(path, source, exc.detail)
            return None
        kind = compiled.output_type.split("(")[0]
        if allowed is not None and kind not in allowed and kind != "optional_type":
            self.add(path, source, f"must evaluate to {wanted}, not {compiled.output_type}")
            return None
        cost = estimated_cost(compiled, ESTIMATE_LIST_SIZE, ESTIMATE_STRING_LENGTH) or 0
        if cost > PER_CALL_LIMIT:
            self.add(path, source, f"estimated expression cost exceeds the per-call budget by a factor of "
                                   f"{_factor(cost)} (try simplifying the expression)", "FieldValueForbidden")
            return None
        return compiled


def _factor(cost: int) -> str:
    factor = cost / PER_CALL_LIMIT
    return "more than 100x" if factor > 100 else f"{factor:.1f}x"


def compile_collector(spec: Mapping[str, Any], *, name: str = "") -> CompiledCollector:
    """A StatusCollector's ``spec`` checked and compiled, or :class:`CollectorError` naming each bad field
    (``spec.groupBy[0].def``) with the CEL error text. ``name`` is the collector's, for the results."""
    if not isinstance(spec, Mapping):
        raise CollectorError([Problem("spec", spec, "must be an object")])
    check = _Spec()
    filter_source = spec.get("filter")
    if filter_source is not None and not isinstance(filter_source, str):
        check.add("spec.filter", filter_source, "must be a string")
    group_by = [(path, check.text(e, path, "name"), check.text(e, path, "def")) for path, e in
                check.entries(spec, "groupBy")]
    select = [(path, check.text(e, path, "name"), check.text(e, path, "def")) for path, e in
              check.entries(spec, "select")]
    combined = [(path, check.text(e, path, "name"), e.get("type"), e.get("subject")) for path, e in
                check.entries(spec, "combinedFields")]
    limit = check.limit(spec)
    # The rules of KubeStellar's validateStatusCollector (pkg/status/statuscollector.go).
    if select and (group_by or combined):
        check.add("spec.select", "", "must be empty when groupBy or combinedFields is given",
                  "FieldValueForbidden")
    if group_by and not combined:
        check.add("spec.groupBy", "", "must be empty when combinedFields is", "FieldValueForbidden")
    seen: set[str] = set()
    for path, column, *_ in [*group_by, *combined, *select]:
        if column is not None and column in seen:
            check.add(f"{path}.name", column, "", "FieldValueDuplicate")
        if column is not None:
            seen.add(column)
    for path, _name, kind, subject in combined:
        if kind not in AGGREGATOR_TYPES:
            check.add(f"{path}.type", kind, "", "FieldValueNotSupported")
        elif kind == "COUNT" and subject is not None:
            check.add(f"{path}.subject", subject, "must be omitted for COUNT, which counts rows")
        elif kind != "COUNT" and not subject:
            check.add(f"{path}.subject", subject, f"an expression is required for {kind}", "FieldValueRequired")
        elif kind != "COUNT" and not isinstance(subject, str):
            check.add(f"{path}.subject", subject, "must be a string")
    if check.problems:
        # As KubeStellar: the structure must be right before the expressions are worth reading.
        raise CollectorError(check.problems)
    # Past the structural checks every name, def and subject is a non-empty string.
    compiled = CompiledCollector(
        name=name,
        filter=check.cel("spec.filter", filter_source, _FILTER_TYPES, "a bool or null") if filter_source else None,
        group_by=tuple(NamedExpression(n, check.cel(f"{p}.def", d, _ATOMIC_TYPES, "an atomic value"))
                       for p, n, d in group_by),
        combined_fields=tuple(Aggregator(n, t, s and check.cel(f"{p}.subject", s, _SUBJECT_TYPES,
                                                               "a number or a string"))
                              for p, n, t, s in combined),
        select=tuple(NamedExpression(n, check.cel(f"{p}.def", d, None, "")) for p, n, d in select),
        limit=limit)
    if check.problems:
        raise CollectorError(check.problems)
    return compiled


# --- evaluating -------------------------------------------------------------------------------------


class ClusterRow(NamedTuple):
    """One cluster the object went to: its name and labels, the ``.status`` it returned (``None``: nothing
    yet, so it is not in the table) and when that was last updated (``None``: never)."""

    cluster: str
    labels: Mapping[str, str]
    status: Mapping[str, Any] | None
    returned_at: dt.datetime | str | None = None


_FAILED = object()  # an expression that failed for one cluster; its error is in rowErrors
_OUT_OF_BUDGET = ("evaluation cost budget exhausted: the status collector's expressions cost more than "
                  f"{RUNTIME_CEL_COST_BUDGET} for this object")


@dataclass
class _Group:
    values: tuple[dict[str, Any], ...]                     # the rendered groupBy values
    members: list[tuple[str, list[Any]]] = field(default_factory=list)   # (cluster, subject values)


@dataclass
class _Run:
    """One evaluation: the rows so far, the first error of each column, and the cost budget left."""

    collector: CompiledCollector
    budget: int = RUNTIME_CEL_COST_BUDGET
    selected: list[list[dict[str, Any]]] = field(default_factory=list)
    groups: dict[tuple[str, ...], _Group] = field(default_factory=dict)
    row_errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    aggregation_errors: list[dict[str, str]] = field(default_factory=list)

    def error(self, cluster: str, column: str, text: str) -> None:
        # As KubeStellar: one error per column is enough to say what is wrong (the first, by cluster name).
        self.row_errors.setdefault(column, {"wec": {"clusterId": cluster}, "columnName": column, "error": text})

    def run(self, expression: CompiledExpression, activation: Mapping[str, Any], cluster: str, column: str) -> Any:
        if self.budget <= 0:
            self.error(cluster, column, _OUT_OF_BUDGET)
            return _FAILED
        limit = min(PER_CALL_LIMIT, self.budget)
        try:
            value, cost = expression.evaluate_with_cost(activation, cost_limit=limit)
        except CelCostExceeded as exc:
            self.budget -= limit
            self.error(cluster, column, _OUT_OF_BUDGET if limit < PER_CALL_LIMIT
                       else f"failed to evaluate expression: {exc}")
            return _FAILED
        except CelEvalError as exc:
            self.error(cluster, column, f"failed to evaluate expression: {exc}")
            return _FAILED
        self.budget -= cost
        return value

    def add(self, row: ClusterRow, status: Mapping[str, Any], workload: Mapping[str, Any]) -> None:
        collector, cluster = self.collector, row.cluster
        activation = {"inventory": {"name": cluster, "labels": dict(row.labels or {})}, "obj": workload,
                      "returned": {"status": dict(status)},
                      "propagation": {"lastReturnedUpdateTimestamp": _timestamp(row.returned_at)}}
        if collector.filter is not None:
            keep = self.run(collector.filter, activation, cluster, FILTER_COLUMN)
            if keep is _FAILED:
                return
            if keep is not None and not isinstance(keep, bool):
                self.error(cluster, FILTER_COLUMN,
                           f"filter expression has type {type_name(keep)} but expected bool or null")
                return
            if not keep:  # null counts as false
                return
        if collector.select:
            values = [self.run(c.expression, activation, cluster, c.name) for c in collector.select]
            self.selected.append([to_value(None if v is _FAILED else v) for v in values])
            return
        keys = [self.run(c.expression, activation, cluster, c.name) for c in collector.group_by]
        subjects = [None if a.subject is None else self.run(a.subject, activation, cluster, a.name)
                    for a in collector.combined_fields]
        for column, key in zip(collector.group_by, keys, strict=True):
            if isinstance(key, dict | list):
                self.error(cluster, column.name, f"groupBy expression must evaluate to an atomic value, "
                                                 f"not {type_name(key)}")
                return
        if _FAILED in keys or _FAILED in subjects:
            return  # as KubeStellar: a row with an error takes no part in aggregation
        rendered = tuple(to_value(k) for k in keys)
        group_key = tuple(json.dumps(v, sort_keys=True) for v in rendered)
        self.groups.setdefault(group_key, _Group(rendered)).members.append((cluster, subjects))

    def aggregate(self, aggregator: Aggregator, index: int, members: list[tuple[str, list[Any]]]) -> dict[str, Any]:
        if aggregator.type == "COUNT":
            return number_value(len(members))
        numbers: list[float] = []
        problem = ""
        for cluster, subjects in members:
            number, trouble = _as_number(subjects[index])
            if trouble and not problem:
                problem = f"for WEC {cluster}, {trouble}"
            if number is not None:
                numbers.append(number)
        result = _combine(aggregator.type, numbers)
        if aggregator.type == "AVG" and not numbers and not problem:
            problem = "no values to average"
        if problem:
            self.aggregation_errors.append({"columnName": aggregator.name, "error": problem})
        return number_value(result)

    def result(self) -> dict[str, Any]:
        collector = self.collector
        if collector.select:
            rows = self.selected[:collector.limit]
        else:
            groups = sorted(self.groups.values(), key=lambda g: tuple(order_key(v) for v in g.values))
            if not collector.group_by and not groups:
                groups = [_Group(())]  # without groupBy there is always one group, if empty (COUNT 0)
            rows = [[*g.values, *(self.aggregate(a, i, g.members) for i, a in enumerate(collector.combined_fields))]
                    for g in groups[:collector.limit]]
        out: dict[str, Any] = {"name": collector.name, "columnNames": collector.column_names,
                               "rows": [{"columns": columns} for columns in rows]}
        if self.row_errors:
            out["rowErrors"] = list(self.row_errors.values())
        if self.aggregation_errors:
            out["aggregationErrors"] = self.aggregation_errors
        return out


def evaluate(collector: CompiledCollector, obj: Mapping[str, Any], rows: Sequence[ClusterRow]) -> dict[str, Any]:
    """The collector's ``NamedStatusCombination`` for one workload object over its clusters' rows:
    ``{"name", "columnNames", "rows": [{"columns": [Value …]}]}`` plus ``rowErrors`` and
    ``aggregationErrors`` when there are any. Rows come out in cluster-name order (``select``) or in the
    order of their groupBy values; clusters that returned no status are not in the table."""
    workload = {k: v for k, v in obj.items() if k != "status"}
    run = _Run(collector)
    for row in sorted((ClusterRow(*r) for r in rows), key=lambda r: r.cluster):
        if row.status is not None:
            run.add(row, row.status, workload)
    return run.result()


def _timestamp(value: dt.datetime | str | None) -> dt.datetime:
    if value is None:
        return ZERO_TIME
    parsed = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _as_number(value: Any) -> tuple[float | None, str]:
    """A subject as KubeStellar's aggregations read it: numbers as they are, strings parsed (else 0 and
    an error), null skipped as SQL skips it, anything else skipped with an error."""
    if value is None:
        return None, ""
    if isinstance(value, bool):
        return None, "combinedField subject has unexpected type bool"
    if isinstance(value, int | float):
        return float(value), ""
    if isinstance(value, str):
        # Go's ParseFloat: no surrounding space and no digit separators, which Python's float() allows.
        if value == value.strip() and "_" not in value:
            try:
                return float(value), ""
            except ValueError:
                pass
        return 0.0, (f"failed to parse combinedField subject as a float: strconv.ParseFloat: parsing "
                     f"{json.dumps(value)}: invalid syntax")
    return None, f"combinedField subject has unexpected type {type_name(value)}"


def _combine(kind: str, numbers: list[float]) -> float:
    """SUM, AVG, MIN or MAX in float64 as KubeStellar computes them: the identity for no values (AVG:
    NaN), and a NaN never wins a MIN or MAX because every comparison with it is false."""
    if kind == "SUM":
        return sum(numbers, 0.0)
    if kind == "AVG":
        return sum(numbers, 0.0) / len(numbers) if numbers else math.nan
    best = math.inf if kind == "MIN" else -math.inf
    for x in numbers:
        if (x < best) if kind == "MIN" else (x > best):
            best = x
    return best


__all__ = ["AGGREGATOR_TYPES", "DEFAULT_LIMIT", "ClusterRow", "CollectorError", "CompiledCollector", "Problem",
           "compile_collector", "evaluate"]
