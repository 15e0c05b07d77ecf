"""The scheduling fields of an EdgePlacement spec: read, validated, compiled.

Owns ``numberOfClusters``, ``spreadConstraints``, ``prioritizers`` and ``tolerations``: their defaults
(every weight 1, ``maxSkew`` 1, ``whenUnsatisfiable: DoNotSchedule``), the causes that refuse a bad
spec (kube's field paths, for the 422 the EdgePlacement's strategy answers) and the compiled form the
scheduler (:mod:`placement.scheduler`) evaluates. A spec with none of the fields is not scheduled: it
goes to every cluster its Locations select, as before. Never does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import Cause
from cel import CelCompileError, CompiledExpression, compile_expression
from inventory.taints import EFFECTS, OPERATORS, Toleration, tolerations_of

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
PRIORITIZER_TYPES = ("Capacity", "Label", "CEL")
NUMBER_TYPES = ("int", "uint", "double", "dyn")  # what a CEL score may be declared to return
CEL_VARIABLES = {"cluster": "object"}  # cluster.name, cluster.labels, cluster.capacity (cpu in cores, memory bytes)
FIELDS = ("numberOfClusters", "spreadConstraints", "prioritizers", "tolerations")


@dataclass(frozen=True)
class Spread:
    topology_key: str
    max_skew: int = 1
    min_domains: int = 1
    hard: bool = True  # whenUnsatisfiable: DoNotSchedule


@dataclass(frozen=True)
class Prioritizer:
    type: str
    weight: int = 1
    label_key: str = ""
    values: tuple[tuple[str, float], ...] = ()
    expression: CompiledExpression | None = None

    @property
    def name(self) -> str:
        """How the explain view names its column: ``Capacity``, ``Label:tier``, ``CEL#2``."""
        return self.type if self.type == "Capacity" else f"Label:{self.label_key}" if self.type == "Label" \
            else f"CEL:{self.expression.source if self.expression else ''}"

    def __eq__(self, other: object) -> bool:  # compiled expressions compare by their source
        return isinstance(other, Prioritizer) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def _identity(self) -> tuple[Any, ...]:
        return (self.type, self.weight, self.label_key, self.values,
                self.expression.source if self.expression else None)


@dataclass(frozen=True)
class SchedulingSpec:
    number: int | None  # None: every eligible cluster
    spreads: tuple[Spread, ...]
    prioritizers: tuple[Prioritizer, ...]
    tolerations: tuple[Toleration, ...]


def scheduling_causes(spec: Mapping[str, Any]) -> list[Cause]:
    """Why the scheduling fields of ``spec`` are refused (empty: they are fine), with kube's field paths."""
    causes: list[Cause] = []
    compile_scheduling(spec, causes)
    return causes


def compile_scheduling(spec: Mapping[str, Any], causes: list[Cause] | None = None) -> SchedulingSpec | None:
    """The compiled scheduling fields, or None when the spec has none of them (placed on every cluster)."""
    if not any(spec.get(f) is not None for f in FIELDS):
        return None
    found: list[Cause] = [] if causes is None else causes
    number = spec.get("numberOfClusters")
    if number is not None and (not _is_int(number) or number < 0):
        found.append(_invalid("spec.numberOfClusters", number, "must be a non-negative integer"))
        number = None
    return SchedulingSpec(number, _spreads(spec.get("spreadConstraints"), found),
                          _prioritizers(spec.get("prioritizers"), found),
                          _tolerations(spec.get("tolerations"), found))


def _spreads(raw: Any, causes: list[Cause]) -> tuple[Spread, ...]:
    out = []
    for i, item in enumerate(_items(raw, "spec.spreadConstraints", causes)):
        path = f"spec.spreadConstraints[{i}]"
        key = item.get("topologyKey")
        if not isinstance(key, str) or not key:
            causes.append(Cause("FieldValueRequired", "Required value", f"{path}.topologyKey"))
            continue
        skew, domains = item.get("maxSkew", 1), item.get("minDomains", 1)
        when = item.get("whenUnsatisfiable", DO_NOT_SCHEDULE)
        ok = True
        if not _is_int(skew) or skew < 1:
            causes.append(_invalid(f"{path}.maxSkew", skew, "must be greater than or equal to 1"))
            ok = False
        if not _is_int(domains) or domains < 1:
            causes.append(_invalid(f"{path}.minDomains", domains, "must be greater than or equal to 1"))
            ok = False
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{when}": supported values: '
                                f'"{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"', f"{path}.whenUnsatisfiable"))
            ok = False
        if ok:
            out.append(Spread(key, skew, domains, when == DO_NOT_SCHEDULE))
    return tuple(out)


def _prioritizers(raw: Any, causes: list[Cause]) -> tuple[Prioritizer, ...]:
    out = []
    for i, item in enumerate(_items(raw, "spec.prioritizers", causes)):
        path = f"spec.prioritizers[{i}]"
        kind, weight = item.get("type"), item.get("weight", 1)
        if not _is_int(weight) or weight < 0:
            causes.append(_invalid(f"{path}.weight", weight, "must be a non-negative integer"))
            continue
        if kind == "Capacity":
            out.append(Prioritizer("Capacity", weight))
        elif kind == "Label":
            key, values = item.get("labelKey"), item.get("values") or {}
            if not isinstance(key, str) or not key:
                causes.append(Cause("FieldValueRequired", "Required value", f"{path}.labelKey"))
                continue
            if not isinstance(values, Mapping) or not all(
                    isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 100 for v in values.values()):
                causes.append(_invalid(f"{path}.values", values, "must map label values to scores from 0 to 100"))
                continue
            out.append(Prioritizer("Label", weight, key, tuple(sorted((str(k), float(v)) for k, v in values.items()))))
        elif kind == "CEL":
            compiled = _cel(item.get("expression"), f"{path}.expression", causes)
            if compiled is not None:
                out.append(Prioritizer("CEL", weight, expression=compiled))
        else:
            supported = ", ".join(f'"{t}"' for t in PRIORITIZER_TYPES)
            causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{kind}": supported values: {supported}',
                                f"{path}.type"))
    return tuple(out)


def _cel(source: Any, path: str, causes: list[Cause]) -> CompiledExpression | None:
    if not isinstance(source, str) or not source.strip():
        causes.append(Cause("FieldValueRequired", "Required value", path))
        return None
    try:
        compiled = compile_expression(source, CEL_VARIABLES)
    except CelCompileError as exc:
        causes.append(_invalid(path, source, str(exc)))
        return None
    if compiled.output_type not in NUMBER_TYPES:
        causes.append(_invalid(path, source, f"must evaluate to a number (a score from 0 to 100), not "
                                             f"{compiled.output_type}"))
        return None
    return compiled


def _tolerations(raw: Any, causes: list[Cause]) -> tuple[Toleration, ...]:
    items = _items(raw, "spec.tolerations", causes)
    for i, item in enumerate(items):
        path = f"spec.tolerations[{i}]"
        operator, effect, seconds = item.get("operator", "Equal"), item.get("effect", ""), item.get("tolerationSeconds")
        if operator not in OPERATORS:
            causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{operator}": supported values: '
                                '"Equal", "Exists"', f"{path}.operator"))
        if operator == "Exists" and item.get("value"):
            causes.append(_invalid(f"{path}.value", item.get("value"),
                                   "value must be empty when `operator` is 'Exists'"))
        if effect not in ("", *EFFECTS):
            causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{effect}": supported values: '
                                '"NoSchedule", "NoExecute"', f"{path}.effect"))
        if seconds is not None and (not _is_int(seconds) or seconds < 0):
            causes.append(_invalid(f"{path}.tolerationSeconds", seconds, "must be a non-negative integer"))
        elif seconds is not None and effect != "NoExecute":
            causes.append(_invalid(f"{path}.effect", effect,
                                   "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    return tolerations_of(items)


def _items(raw: Any, path: str, causes: list[Cause]) -> list[Mapping[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        causes.append(Cause("FieldValueTypeInvalid", "Invalid value: must be a list", path))
        return []
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, Mapping):
            out.append(item)
        else:
            causes.append(Cause("FieldValueTypeInvalid", "Invalid value: must be an object", f"{path}[{i}]"))
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _invalid(path: str, value: Any, detail: str) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else repr(value)
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", path)
