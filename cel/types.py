"""Static CEL types for the checker and the cost estimator, and the runtime value helpers they share.

Owns :class:`CelType` (with the size bounds the cost estimator reads), the overload-signature
notation the function libraries declare (``"list(A),A->int"``), runtime type names, CEL
equality and ordering on plain Python values, the ``optional`` value and the ``Meter`` that counts
evaluation cost. It must never import the libraries (they import it).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cel.parser import UInt

# --- errors raised while evaluating ---------------------------------------------------------------


class EvalError(Exception):
    """A CEL runtime error; the message is cel-go's wording (``no such key: x`` …)."""


class NoOverload(EvalError):
    def __init__(self, function: str, args: tuple[Any, ...] = ()) -> None:
        shown = ", ".join(type_name(a) for a in args)
        super().__init__(f"no such overload: {function}({shown})" if args else f"no such overload: {function}")


class CostExceeded(EvalError):
    pass


# --- the cost meter ---------------------------------------------------------------------------------

# Checking the clock costs about as much as a few evaluation steps, so it is done every this many units.
_CLOCK_EVERY = 2048


class Meter:
    """Evaluation cost so far; raises :class:`CostExceeded` past the limit or past the deadline.

    One meter belongs to one evaluation (one thread), so it needs no lock.
    """

    __slots__ = ("cost", "deadline", "limit", "next_clock")

    def __init__(self, limit: int, seconds: float) -> None:
        self.cost = 0
        self.limit = limit
        self.deadline = time.monotonic() + seconds
        self.next_clock = _CLOCK_EVERY

    def charge(self, units: int) -> None:
        self.cost += units
        if self.cost > self.limit:
            raise CostExceeded("operation cancelled: actual cost limit exceeded")
        if self.cost >= self.next_clock:
            self.next_clock = self.cost + _CLOCK_EVERY
            if time.monotonic() > self.deadline:
                raise CostExceeded("operation cancelled: actual cost limit exceeded (evaluation time limit)")

    def tick(self) -> None:
        """One comprehension iteration: cheap in units but it must still reach the clock check."""
        self.charge(1)


def size_cost(n: int) -> int:
    """cel-go charges 0.1 per character or element traversed, rounded up."""
    return math.ceil(n * 0.1)


# --- optional values and type values ----------------------------------------------------------------


class Optional:
    __slots__ = ("has", "value")

    def __init__(self, has: bool, value: Any = None) -> None:
        self.has = has
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Optional) and other.has == self.has and (not self.has or equal(self.value,
                                                                                                other.value))

    def __hash__(self) -> int:
        return hash(self.has)

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.has else "optional.none()"


NONE = Optional(False)


@dataclass(frozen=True)
class TypeValue:
    """The value of a type name (``int``, ``string`` …) as returned by ``type(x)``."""

    name: str

    def __str__(self) -> str:
        return self.name


class Opaque:
    """Base of the library object types (URL, IP, CIDR, Quantity, Format …)."""

    type_name = "opaque"

    def cel_equal(self, other: Any) -> bool:
        return self == other


def type_name(v: Any) -> str:
    if v is None:
        return "null_type"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, UInt):
        return "uint"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bytes):
        return "bytes"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, dt.datetime):
        return "google.protobuf.Timestamp"
    if isinstance(v, dt.timedelta):
        return "google.protobuf.Duration"
    if isinstance(v, Optional):
        return "optional_type"
    if isinstance(v, TypeValue):
        return "type"
    if isinstance(v, Opaque):
        return v.type_name
    return type(v).__name__


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def equal(a: Any, b: Any, meter: Meter | None = None) -> bool:
    """CEL equality: numbers compare across int/uint/double, other types must match, deep for aggregates."""
    if meter is not None:
        meter.charge(1)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, (str, bytes)):
        if type(a) is not type(b):
            return False
        if meter is not None:
            meter.charge(size_cost(min(len(a), len(b))))
        return a == b
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(equal(x, y, meter) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        return all(not (k not in b or not equal(v, b[k], meter)) for k, v in a.items())
    if isinstance(a, Opaque):
        return type(a) is type(b) and a.cel_equal(b)
    if isinstance(a, Optional) or isinstance(b, Optional):
        return isinstance(a, Optional) and isinstance(b, Optional) and a.has == b.has and (
            not a.has or equal(a.value, b.value, meter))
    if a is None or b is None:
        return a is None and b is None
    if type(a) is not type(b):
        return False
    return bool(a == b)


def compare(a: Any, b: Any) -> int:
    """CEL ordering (``<`` …): numbers across types, strings, bytes, bools, timestamps, durations."""
    if is_number(a) and is_number(b):
        if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
            raise EvalError("NaN values cannot be ordered")
        return (a > b) - (a < b)
    if type(a) is type(b) and isinstance(a, str | bytes | bool | dt.datetime | dt.timedelta):
        return (a > b) - (a < b)
    if isinstance(a, Opaque) and type(a) is type(b) and hasattr(a, "compare"):
        return int(a.compare(b))
    raise NoOverload("_<_", (a, b))


def value_size(v: Any) -> int:
    if isinstance(v, str | bytes | list | dict):
        return len(v)
    return 1


# --- static types -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldInfo:
    name: str          # the JSON property name (the CEL name may be escaped)
    type: CelType


@dataclass(frozen=True, eq=False)
class CelType:
    kind: str
    params: tuple[CelType, ...] = ()
    # Objects only: declared fields by CEL (escaped) name, and whether unknown fields may be present.
    fields: Mapping[str, FieldInfo] | None = None
    open: bool = False
    # What kube's DeclType records for cost estimation: MaxElements (the largest length, item or property
    # count the schema allows, from maxLength/maxItems/maxProperties or what fits in a request; None =
    # unknown) and MinSerializedSize (the smallest JSON encoding of a value, which bounds how many fit).
    max_size: int | None = None
    min_json_size: int = 0
    # For schema objects: ``by_json``, the field types by JSON property name (field paths and typed values use it).
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.kind == "list":
            return f"list({self.params[0]})"
        if self.kind == "map":
            return f"map({self.params[0]}, {self.params[1]})"
        if self.kind == "optional":
            return f"optional_type({self.params[0]})"
        if self.kind == "type":
            return f"type({self.params[0]})" if self.params else "type"
        return self.kind

    def same(self, other: CelType) -> bool:
        return self.kind == other.kind and len(self.params) == len(other.params) and all(
            a.same(b) for a, b in zip(self.params, other.params, strict=True))


DYN = CelType("dyn")
INT = CelType("int")
UINT = CelType("uint")
DOUBLE = CelType("double")
STRING = CelType("string")
BYTES = CelType("bytes")
BOOL = CelType("bool")
NULL = CelType("null_type")
TIMESTAMP = CelType("google.protobuf.Timestamp")
DURATION = CelType("google.protobuf.Duration")
TYPE = CelType("type")


def list_of(t: CelType, max_size: int | None = None) -> CelType:
    return CelType("list", (t,), max_size=max_size)


def map_of(k: CelType, v: CelType, max_size: int | None = None) -> CelType:
    return CelType("map", (k, v), max_size=max_size)


def optional_of(t: CelType) -> CelType:
    return CelType("optional", (t,))


_SIMPLE = {t.kind: t for t in (DYN, INT, UINT, DOUBLE, STRING, BYTES, BOOL, NULL, TIMESTAMP, DURATION, TYPE)}
_SIMPLE.update({"timestamp": TIMESTAMP, "duration": DURATION, "null": NULL})

# The type hints of compile_expression's ``variables`` argument.
HINTS = {"object": CelType("object", fields={}, open=True), "map": map_of(STRING, DYN), "list": list_of(DYN),
         "string": STRING, "int": INT, "bool": BOOL, "dyn": DYN, "double": DOUBLE, "number": DYN}


def parse_type(text: str) -> CelType:
    """``"list(A)"``, ``"map(K,V)"``, ``"optional(A)"``, a simple name, an opaque name or a type parameter."""
    text = text.strip()
    if "(" in text:
        head, inner = text.split("(", 1)
        inner = inner[:-1]
        parts, depth, cur = [], 0, ""
        for ch in inner:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "("
            depth -= ch == ")"
            cur += ch
        parts.append(cur)
        return CelType(head.strip(), tuple(parse_type(p) for p in parts))
    if text in _SIMPLE:
        return _SIMPLE[text]
    return CelType(text)


def is_param(t: CelType) -> bool:
    return len(t.kind) == 1 and t.kind.isupper()


@dataclass(frozen=True)
class Signature:
    params: tuple[CelType, ...]
    result: CelType

    @staticmethod
    def of(text: str) -> Signature:
        args, result = text.split("->")
        params = tuple(parse_type(p) for p in _split_top(args)) if args.strip() else ()
        return Signature(params, parse_type(result))


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    parts.append(cur)
    return parts


@dataclass
class FnDef:
    """A CEL function: global and/or receiver-style signatures and one implementation."""

    name: str
    impl: Callable[..., Any]                       # impl(meter, *args); receiver first for member calls
    global_sigs: list[Signature] = field(default_factory=list)
    member_sigs: list[Signature] = field(default_factory=list)


REGISTRY: dict[str, FnDef] = {}


def register(name: str, impl: Callable[..., Any], *, sigs: tuple[str, ...] = (), member: tuple[str, ...] = ()) -> None:
    existing = REGISTRY.get(name)
    if existing is not None:
        raise ValueError(f"CEL function {name} registered twice")
    REGISTRY[name] = FnDef(name, impl, [Signature.of(s) for s in sigs], [Signature.of(s) for s in member])
