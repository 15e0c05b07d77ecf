"""CombinedStatus values: a CEL result as KubeStellar's ``Value`` union, numbers printed as Go prints them.

KubeStellar renders integers in decimal and floating-point numbers with Go's
``strconv.FormatFloat(x, 'g', -1, 64)``: the shortest text that reads back exactly, in exponent form
from 1e+06 up and below 1e-04, and ``NaN``, ``+Inf``, ``-Inf`` for what JSON cannot hold
(``pkg/status/combinedstatus-resolution.go``). Aggregates are always floating-point there, so a SUM
of 1,500,000 replicas reads ``1.5e+06`` — as it does in KubeStellar.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from typing import Any

from apimachinery.gofmt import go_float
from cel.stdlib.timestamps import format_duration

# The order groups are listed in: null, then false and true, then numbers, then strings.
_RANK = {"Null": 0, "Bool": 1, "Number": 2, "String": 3}


def number_value(x: int | float) -> dict[str, Any]:
    return {"type": "Number", "float": str(x) if isinstance(x, int) else go_float(x)}


def to_value(v: Any) -> dict[str, Any]:
    """One column of a row: ``{"type": String|Number|Bool|Null|Object|Array, <field>: …}``."""
    if v is None:
        return {"type": "Null"}
    if isinstance(v, bool):
        return {"type": "Bool", "bool": v}
    if isinstance(v, int | float):
        return number_value(v)
    if isinstance(v, dict):
        return {"type": "Object", "object": to_json(v)}
    if isinstance(v, list):
        return {"type": "Array", "array": to_json(v)}
    return {"type": "String", "string": to_json(v)}


def to_json(v: Any) -> Any:
    """A CEL result as JSON data: timestamps and durations as their text, bytes in base64, and the
    floats JSON has no room for (NaN, ±Inf) as null."""
    if isinstance(v, dict):
        return {str(k): to_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dt.datetime):
        return timestamp_text(v)
    if isinstance(v, dt.timedelta):
        return format_duration(v)
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return v


def timestamp_text(t: dt.datetime) -> str:
    """RFC 3339 in UTC as Go's JSON has it (fraction trimmed), the zero time ``0001-01-01T00:00:00Z`` included."""
    text = t.astimezone(dt.UTC).replace(tzinfo=None).isoformat()
    return (text.rstrip("0") if "." in text else text) + "Z"


def order_key(value: dict[str, Any]) -> tuple[Any, ...]:
    """Where a rendered atomic value sorts among group rows (NaN after every other number)."""
    kind = value["type"]
    if kind == "Bool":
        return _RANK[kind], value["bool"]
    if kind == "Number":
        number = float(value["float"])  # Python reads NaN, +Inf and -Inf as Go writes them
        return _RANK[kind], math.isnan(number), 0.0 if math.isnan(number) else number
    if kind == "String":
        return _RANK[kind], value["string"]
    return (_RANK.get(kind, 4),)


__all__ = ["number_value", "order_key", "timestamp_text", "to_json", "to_value"]
