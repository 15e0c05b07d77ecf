"""CEL's type conversions ``int``, ``uint``, ``double``, ``string``, ``bytes``, ``bool``, ``dyn`` and ``type``.

Owns how values print as strings, as cel-go prints them (a double as Go's ``strconv.FormatFloat``
``'g'`` form, timestamps in RFC 3339 UTC, durations in seconds), and how strings parse as numbers
and bools, with Go's ``strconv`` error wording.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal
from typing import Any

from cel.parser import UInt
from cel.stdlib.arguments import is_int
from cel.stdlib.overflow import INT64_MAX, INT64_MIN, UINT64_MAX, checked_int64
from cel.stdlib.timestamps import format_duration, format_timestamp
from cel.types import EvalError, Meter, NoOverload, Opaque, TypeValue, is_number, register, type_name

_GO_INT = re.compile(r"[+-]?[0-9]+")


def _to_int(m: Meter, v: Any) -> int:
    if is_int(v):
        return v
    if isinstance(v, UInt):
        return checked_int64(int(v))
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v) or not (-(2.0**63) <= v < 2.0**63):
            raise EvalError("int range error")
        return int(v)
    if isinstance(v, str):
        if not _GO_INT.fullmatch(v):
            raise EvalError(f'strconv.ParseInt: parsing "{v}": invalid syntax')
        n = int(v)
        if n < INT64_MIN or n > INT64_MAX:
            raise EvalError(f'strconv.ParseInt: parsing "{v}": value out of range')
        return n
    if isinstance(v, dt.datetime):
        return int(v.timestamp() // 1)
    raise NoOverload("int", (v,))


def _to_uint(m: Meter, v: Any) -> UInt:
    if isinstance(v, UInt):
        return v
    if is_int(v):
        if v < 0:
            raise EvalError("uint range error")
        return UInt(v)
    if isinstance(v, float):
        if math.isnan(v) or not (0 <= v < 2.0**64):
            raise EvalError("uint range error")
        return UInt(int(v))
    if isinstance(v, str):
        if not re.fullmatch(r"\+?[0-9]+", v) or int(v) > UINT64_MAX:
            raise EvalError(f'strconv.ParseUint: parsing "{v}": invalid syntax')
        return UInt(int(v))
    raise NoOverload("uint", (v,))


def _to_double(m: Meter, v: Any) -> float:
    if isinstance(v, float):
        return v
    if is_number(v):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            raise EvalError(f'strconv.ParseFloat: parsing "{v}": invalid syntax') from None
    raise NoOverload("double", (v,))


def go_float(f: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``, which is how cel-go prints a double."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(f)).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    exp = len(text) + int(exponent) - 1
    if exp < -4 or exp >= 21:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        out = f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    elif exp < 0:
        out = "0." + "0" * (-exp - 1) + text
    elif len(text) <= exp + 1:
        out = text + "0" * (exp + 1 - len(text))
    else:
        out = text[:exp + 1] + "." + text[exp + 1:]
    return ("-" if sign else "") + out


def to_string(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            raise EvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(v, dt.datetime):
        return format_timestamp(v)
    if isinstance(v, dt.timedelta):
        return format_duration(v)
    if isinstance(v, Opaque):
        return str(v)
    if isinstance(v, TypeValue):
        return v.name
    raise NoOverload("string", (v,))


def _to_string(m: Meter, v: Any) -> str:
    return to_string(v)


def _to_bytes(m: Meter, v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    raise NoOverload("bytes", (v,))


_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
          "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _to_bool(m: Meter, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        if v in _BOOLS:
            return _BOOLS[v]
        raise EvalError(f'strconv.ParseBool: parsing "{v}": invalid syntax')
    raise NoOverload("bool", (v,))


def _type_of(m: Meter, v: Any) -> TypeValue:
    name = type_name(v)
    return TypeValue({"google.protobuf.Timestamp": "google.protobuf.Timestamp"}.get(name, name))


register("int", _to_int, sigs=("int->int", "uint->int", "double->int", "string->int", "timestamp->int"))
register("uint", _to_uint, sigs=("uint->uint", "int->uint", "double->uint", "string->uint"))
register("double", _to_double, sigs=("double->double", "int->double", "uint->double", "string->double"))
register("string", _to_string, sigs=("string->string", "int->string", "uint->string", "double->string",
                                     "bool->string", "bytes->string", "timestamp->string", "duration->string",
                                     "IP->string", "CIDR->string", "Quantity->string", "URL->string"))
register("bytes", _to_bytes, sigs=("bytes->bytes", "string->bytes"))
register("bool", _to_bool, sigs=("bool->bool", "string->bool"))
register("dyn", lambda m, v: v, sigs=("A->dyn",))
register("type", _type_of, sigs=("A->type",))
