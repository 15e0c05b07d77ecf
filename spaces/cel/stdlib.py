"""CEL's standard functions and the cel-go extension libraries Kubernetes enables.

Owns the operators, conversions, ``size``, timestamps and durations, the ``optional`` library, the
cel-go ``strings`` (v2+), ``lists`` and ``sets`` extensions, and Kubernetes' ``lists`` and
``regex`` libraries. Every function charges the meter for work proportional to its input *before*
doing it (cel-go's 0.1 per character or element), so no single call can run away. Regular
expressions use RE2 (linear time, the syntax cel-go uses), never Python's backtracking ``re``.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
import zoneinfo
from decimal import Decimal
from typing import Any

import re2

from spaces.cel.parser import UInt
from spaces.cel.types import (
    NONE,
    CostExceeded,
    EvalError,
    Meter,
    NoOverload,
    Opaque,
    Optional,
    TypeValue,
    compare,
    equal,
    is_number,
    register,
    size_cost,
    type_name,
    value_size,
)

_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
_UINT_MAX = 2**64 - 1


def _i64(n: int) -> int:
    if n < _INT_MIN or n > _INT_MAX:
        raise EvalError("integer overflow")
    return n


def _u64(n: int) -> UInt:
    if n < 0 or n > _UINT_MAX:
        raise EvalError("unsigned integer overflow")
    return UInt(n)


def _is_int(v: Any) -> bool:
    return type(v) is int


def _sizes_cost(m: Meter, *values: Any) -> None:
    m.charge(size_cost(sum(value_size(v) for v in values)))


# --- arithmetic ------------------------------------------------------------------------------------


def _add(m: Meter, a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return _i64(a + b)
    if isinstance(a, UInt) and isinstance(b, UInt):
        return _u64(a + b)
    if isinstance(a, float) and isinstance(b, float):
        return a + b
    if (isinstance(a, str) and isinstance(b, str)) or (isinstance(a, bytes) and isinstance(b, bytes)) \
            or (isinstance(a, list) and isinstance(b, list)):
        _sizes_cost(m, a, b)
        return a + b
    try:
        if (isinstance(a, dt.datetime) and isinstance(b, dt.timedelta)) or (isinstance(a, dt.timedelta) \
                and isinstance(b, dt.datetime | dt.timedelta)):
            return _check_time(a + b)
    except OverflowError:
        raise EvalError("timestamp overflow") from None
    raise NoOverload("_+_", (a, b))


def _sub(m: Meter, a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return _i64(a - b)
    if isinstance(a, UInt) and isinstance(b, UInt):
        return _u64(a - b)
    if isinstance(a, float) and isinstance(b, float):
        return a - b
    try:
        if (isinstance(a, dt.datetime) and isinstance(b, dt.datetime | dt.timedelta)) or (isinstance(
                a, dt.timedelta) and isinstance(b, dt.timedelta)):
            return _check_time(a - b)
    except OverflowError:
        raise EvalError("timestamp overflow") from None
    raise NoOverload("_-_", (a, b))


def _mul(m: Meter, a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return _i64(a * b)
    if isinstance(a, UInt) and isinstance(b, UInt):
        return _u64(a * b)
    if isinstance(a, float) and isinstance(b, float):
        return a * b
    raise NoOverload("_*_", (a, b))


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _div(m: Meter, a: Any, b: Any) -> Any:
    if (_is_int(a) and _is_int(b)) or (isinstance(a, UInt) and isinstance(b, UInt)):
        if b == 0:
            raise EvalError("division by zero")
        q = _truncdiv(a, b)
        return _u64(q) if isinstance(a, UInt) else _i64(q)
    if isinstance(a, float) and isinstance(b, float):
        if b == 0:
            return math.copysign(math.inf, a) * math.copysign(1, b) if a != 0 and not math.isnan(a) else math.nan
        return a / b
    raise NoOverload("_/_", (a, b))


def _mod(m: Meter, a: Any, b: Any) -> Any:
    if (_is_int(a) and _is_int(b)) or (isinstance(a, UInt) and isinstance(b, UInt)):
        if b == 0:
            raise EvalError("modulus by zero")
        r = abs(a) % abs(b)
        r = -r if a < 0 else r
        return UInt(r) if isinstance(a, UInt) else r
    raise NoOverload("_%_", (a, b))


def _neg(m: Meter, a: Any) -> Any:
    if _is_int(a):
        return _i64(-a)
    if isinstance(a, float):
        return -a
    raise NoOverload("-_", (a,))


def _not(m: Meter, a: Any) -> bool:
    if isinstance(a, bool):
        return not a
    raise NoOverload("!_", (a,))


def _ordering(name: str, test: Any) -> Any:
    def op(m: Meter, a: Any, b: Any) -> bool:
        if isinstance(a, str | bytes) and type(a) is type(b):
            _sizes_cost(m, a if len(a) < len(b) else b)
        try:
            return bool(test(compare(a, b)))
        except NoOverload:
            raise NoOverload(name, (a, b)) from None
    return op


def _in(m: Meter, value: Any, container: Any) -> bool:
    if isinstance(container, list):
        return any(equal(value, item, m) for item in container)
    if isinstance(container, dict):
        m.charge(1)
        if isinstance(value, list | dict):
            return False
        try:
            return value in container
        except TypeError:
            return False
    raise NoOverload("@in", (value, container))


def _size(m: Meter, v: Any) -> int:
    if isinstance(v, str | bytes | list | dict):
        return len(v)
    raise NoOverload("size", (v,))


_NUM = ("int", "uint", "double")
_COMPARABLE = [f"{a},{b}->bool" for a in _NUM for b in _NUM] + [
    f"{t},{t}->bool" for t in ("string", "bytes", "bool", "timestamp", "duration")]
register("_+_", _add, sigs=("int,int->int", "uint,uint->uint", "double,double->double", "string,string->string",
                            "bytes,bytes->bytes", "list(A),list(A)->list(A)", "timestamp,duration->timestamp",
                            "duration,timestamp->timestamp", "duration,duration->duration"),
         cost=lambda s: size_cost(s[0] + s[1]), result_size=lambda s: s[0] + s[1])
register("_-_", _sub, sigs=("int,int->int", "uint,uint->uint", "double,double->double",
                            "timestamp,timestamp->duration", "timestamp,duration->timestamp",
                            "duration,duration->duration"))
register("_*_", _mul, sigs=("int,int->int", "uint,uint->uint", "double,double->double"))
register("_/_", _div, sigs=("int,int->int", "uint,uint->uint", "double,double->double"))
register("_%_", _mod, sigs=("int,int->int", "uint,uint->uint"))
register("-_", _neg, sigs=("int->int", "double->double"))
register("!_", _not, sigs=("bool->bool",))
register("_==_", lambda m, a, b: equal(a, b, m), sigs=("A,B->bool",), cost=lambda s: size_cost(min(s)))
register("_!=_", lambda m, a, b: not equal(a, b, m), sigs=("A,B->bool",), cost=lambda s: size_cost(min(s)))
for _name, _test in (("_<_", lambda c: c < 0), ("_<=_", lambda c: c <= 0), ("_>_", lambda c: c > 0),
                     ("_>=_", lambda c: c >= 0)):
    register(_name, _ordering(_name, _test), sigs=tuple(_COMPARABLE),
             cost=lambda s: size_cost(min(s)))
register("@in", _in, sigs=("A,list(A)->bool", "A,map(A,B)->bool"), cost=lambda s: size_cost(s[1]))
register("size", _size, sigs=("string->int", "bytes->int", "list(A)->int", "map(A,B)->int"),
         member=("string->int", "bytes->int", "list(A)->int", "map(A,B)->int"))


# --- conversions -----------------------------------------------------------------------------------

_GO_INT = re.compile(r"[+-]?[0-9]+")


def _to_int(m: Meter, v: Any) -> int:
    if _is_int(v):
        return v
    if isinstance(v, UInt):
        return _i64(int(v))
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v) or not (-(2.0**63) <= v < 2.0**63):
            raise EvalError("int range error")
        return int(v)
    if isinstance(v, str):
        if not _GO_INT.fullmatch(v):
            raise EvalError(f'strconv.ParseInt: parsing "{v}": invalid syntax')
        n = int(v)
        if n < _INT_MIN or n > _INT_MAX:
            raise EvalError(f'strconv.ParseInt: parsing "{v}": value out of range')
        return n
    if isinstance(v, dt.datetime):
        return int(v.timestamp() // 1)
    raise NoOverload("int", (v,))


def _to_uint(m: Meter, v: Any) -> UInt:
    if isinstance(v, UInt):
        return v
    if _is_int(v):
        if v < 0:
            raise EvalError("uint range error")
        return UInt(v)
    if isinstance(v, float):
        if math.isnan(v) or not (0 <= v < 2.0**64):
            raise EvalError("uint range error")
        return UInt(int(v))
    if isinstance(v, str):
        if not re.fullmatch(r"\+?[0-9]+", v) or int(v) > _UINT_MAX:
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


def format_timestamp(t: dt.datetime) -> str:
    t = t.astimezone(dt.UTC)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        base += "." + f"{t.microsecond:06d}".rstrip("0")
    return base + "Z"


def format_duration(d: dt.timedelta) -> str:
    micros = d // dt.timedelta(microseconds=1)
    seconds, frac = divmod(abs(micros), 1_000_000)
    text = f"{seconds}.{frac:06d}".rstrip("0").rstrip(".") if frac else str(seconds)
    return f"{'-' if micros < 0 else ''}{text}s"


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


# --- timestamps and durations ---------------------------------------------------------------------

_MIN_TS = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
_MAX_TS = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_US = {"ns": Decimal("0.001"), "us": Decimal(1), "µs": Decimal(1), "μs": Decimal(1), "ms": Decimal(1000),
            "s": Decimal(1_000_000), "m": Decimal(60_000_000), "h": Decimal(3_600_000_000)}


def _check_time(v: Any) -> Any:
    if isinstance(v, dt.datetime) and not (_MIN_TS <= v <= _MAX_TS):
        raise EvalError("timestamp overflow")
    if isinstance(v, dt.timedelta) and abs(v) > dt.timedelta(seconds=315_576_000_000):
        raise EvalError("duration overflow")
    return v


def parse_timestamp(text: str) -> dt.datetime:
    m = _RFC3339.fullmatch(text)
    if not m:
        raise EvalError(f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse')
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = m.group(7) or ""
    micro = int((frac[1:] + "000000")[:6]) if frac else 0
    zone = m.group(8)
    tz = dt.UTC if zone in ("Z", "z") else dt.timezone(
        (1 if zone[0] == "+" else -1) * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        return dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz).astimezone(dt.UTC)
    except ValueError as exc:
        raise EvalError(f'parsing time "{text}": {exc}') from None


def parse_duration(text: str) -> dt.timedelta:
    body = text
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return dt.timedelta(0)
    total = Decimal(0)
    pos = 0
    if not body:
        raise EvalError(f'time: invalid duration "{text}"')
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if not m or m.group(1) in ("", "."):
            raise EvalError(f'time: invalid duration "{text}"')
        total += Decimal(m.group(1)) * _UNIT_US[m.group(2)]
        pos = m.end()
    return _check_time(dt.timedelta(microseconds=int(sign * total)))


def _timestamp(m: Meter, v: Any) -> dt.datetime:
    if isinstance(v, dt.datetime):
        return v
    if isinstance(v, str):
        return _check_time(parse_timestamp(v))
    if _is_int(v):
        try:
            return _check_time(dt.datetime.fromtimestamp(v, dt.UTC))
        except (OverflowError, OSError, ValueError):
            raise EvalError("timestamp overflow") from None
    raise NoOverload("timestamp", (v,))


def _duration(m: Meter, v: Any) -> dt.timedelta:
    if isinstance(v, dt.timedelta):
        return v
    if isinstance(v, str):
        return parse_duration(v)
    raise NoOverload("duration", (v,))


register("timestamp", _timestamp, sigs=("string->timestamp", "int->timestamp", "timestamp->timestamp"))
register("duration", _duration, sigs=("string->duration", "duration->duration"))


def _in_zone(t: dt.datetime, tz: str | None) -> dt.datetime:
    if tz is None or tz == "UTC":
        return t.astimezone(dt.UTC)
    m = re.fullmatch(r"([+-]?)(\d{2}):(\d{2})", tz)
    if m:
        offset = dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return t.astimezone(dt.timezone(-offset if m.group(1) == "-" else offset))
    try:
        return t.astimezone(zoneinfo.ZoneInfo(tz))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise EvalError(f"unknown time zone {tz}") from None


def _time_getter(name: str, of_time: Any, of_duration: Any = None) -> None:
    def getter(m: Meter, v: Any, tz: Any = None) -> int:
        if isinstance(v, dt.datetime) and (tz is None or isinstance(tz, str)):
            return int(of_time(_in_zone(v, tz)))
        if of_duration is not None and isinstance(v, dt.timedelta) and tz is None:
            return int(of_duration(v))
        raise NoOverload(name, (v,) if tz is None else (v, tz))
    member = ["timestamp->int", "timestamp,string->int"] + (["duration->int"] if of_duration else [])
    register(name, getter, member=tuple(member))


def _total(d: dt.timedelta, unit: dt.timedelta) -> int:
    return int(d / unit) if d >= dt.timedelta(0) else -int(-d / unit)


_time_getter("getFullYear", lambda t: t.year)
_time_getter("getMonth", lambda t: t.month - 1)
_time_getter("getDate", lambda t: t.day)
_time_getter("getDayOfMonth", lambda t: t.day - 1)
_time_getter("getDayOfWeek", lambda t: (t.weekday() + 1) % 7)
_time_getter("getDayOfYear", lambda t: t.timetuple().tm_yday - 1)
_time_getter("getHours", lambda t: t.hour, lambda d: _total(d, dt.timedelta(hours=1)))
_time_getter("getMinutes", lambda t: t.minute, lambda d: _total(d, dt.timedelta(minutes=1)))
_time_getter("getSeconds", lambda t: t.second, lambda d: _total(d, dt.timedelta(seconds=1)))
_time_getter("getMilliseconds", lambda t: t.microsecond // 1000,
             lambda d: _total(d, dt.timedelta(milliseconds=1)) % 1000)


# --- strings ---------------------------------------------------------------------------------------


def _str_args(name: str, *values: Any) -> None:
    if not all(isinstance(v, str) for v in values):
        raise NoOverload(name, values)


def _contains(m: Meter, s: Any, sub: Any) -> bool:
    _str_args("contains", s, sub)
    _sizes_cost(m, s)
    return sub in s


def _starts(m: Meter, s: Any, prefix: Any) -> bool:
    _str_args("startsWith", s, prefix)
    _sizes_cost(m, prefix)
    return bool(s.startswith(prefix))


def _ends(m: Meter, s: Any, suffix: Any) -> bool:
    _str_args("endsWith", s, suffix)
    _sizes_cost(m, suffix)
    return bool(s.endswith(suffix))


@functools.lru_cache(maxsize=512)
def compile_regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise EvalError(f"error parsing regexp: {exc}") from None


def check_regex(pattern: str) -> str | None:
    """The error a constant pattern will raise, for reporting it at compile time as cel-go does."""
    try:
        compile_regex(pattern)
    except EvalError as exc:
        return str(exc)
    return None


def _matches(m: Meter, s: Any, pattern: Any) -> bool:
    _str_args("matches", s, pattern)
    m.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    return compile_regex(pattern).search(s) is not None


def _find(m: Meter, s: Any, pattern: Any) -> str:
    _str_args("find", s, pattern)
    m.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    found = compile_regex(pattern).search(s)
    return found.group(0) if found else ""


def _find_all(m: Meter, s: Any, pattern: Any, limit: Any = -1) -> list[str]:
    _str_args("findAll", s, pattern)
    if not _is_int(limit):
        raise NoOverload("findAll", (s, pattern, limit))
    m.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    if limit == 0:
        return []
    out = []
    for found in compile_regex(pattern).finditer(s):
        out.append(found.group(0))
        if 0 < limit <= len(out):
            break
    return out


register("contains", _contains, sigs=("string,string->bool",), member=("string,string->bool",),
         cost=lambda s: size_cost(s[0]))
register("startsWith", _starts, sigs=("string,string->bool",), member=("string,string->bool",))
register("endsWith", _ends, sigs=("string,string->bool",), member=("string,string->bool",))
register("matches", _matches, sigs=("string,string->bool",), member=("string,string->bool",),
         cost=lambda s: size_cost(s[0]) * max(1, size_cost(s[1])))
register("find", _find, member=("string,string->string",), cost=lambda s: size_cost(s[0]) * max(1, size_cost(s[1])),
         result_size=lambda s: s[0])
register("findAll", _find_all, member=("string,string->list(string)", "string,string,int->list(string)"),
         cost=lambda s: size_cost(s[0]) * max(1, size_cost(s[1])), result_size=lambda s: s[0])


def _char_at(m: Meter, s: Any, i: Any) -> str:
    if not isinstance(s, str) or not _is_int(i):
        raise NoOverload("charAt", (s, i))
    if i < 0 or i > len(s):
        raise EvalError(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def _index_of(m: Meter, s: Any, x: Any, start: Any = 0) -> int:
    if isinstance(s, list):
        m.charge(size_cost(len(s)))
        return next((i for i, v in enumerate(s) if equal(v, x)), -1)
    if not isinstance(s, str) or not isinstance(x, str) or not _is_int(start):
        raise NoOverload("indexOf", (s, x))
    m.charge(size_cost(len(s)))
    if start < 0 or start > len(s):
        raise EvalError(f"index out of range: {start}")
    return s.find(x, start)


def _last_index_of(m: Meter, s: Any, x: Any, end: Any = None) -> int:
    if isinstance(s, list):
        m.charge(size_cost(len(s)))
        return next((i for i in range(len(s) - 1, -1, -1) if equal(s[i], x)), -1)
    if not isinstance(s, str) or not isinstance(x, str) or not (end is None or _is_int(end)):
        raise NoOverload("lastIndexOf", (s, x))
    m.charge(size_cost(len(s)))
    if end is None:
        return s.rfind(x)
    if end < 0 or end > len(s):
        raise EvalError(f"index out of range: {end}")
    return s.rfind(x, 0, end + len(x))


def _ascii_case(upper: bool) -> Any:
    table = {c: c - 32 for c in range(97, 123)} if upper else {c: c + 32 for c in range(65, 91)}

    def convert(m: Meter, s: Any) -> str:
        _str_args("upperAscii" if upper else "lowerAscii", s)
        _sizes_cost(m, s)
        return str(s.translate(table))
    return convert


def _replace(m: Meter, s: Any, old: Any, new: Any, n: Any = -1) -> str:
    if not (isinstance(s, str) and isinstance(old, str) and isinstance(new, str) and _is_int(n)):
        raise NoOverload("replace", (s, old, new))
    _sizes_cost(m, s)
    count = len(s) + 1 if old == "" else s.count(old)
    if n >= 0:
        count = min(count, n)
    # Charged before building: the output may be far larger than the input.
    m.charge(size_cost(len(s) + count * max(0, len(new) - len(old))))
    return s.replace(old, new, n if n >= 0 else -1)


def _split(m: Meter, s: Any, sep: Any, n: Any = -1) -> list[str]:
    if not (isinstance(s, str) and isinstance(sep, str) and _is_int(n)):
        raise NoOverload("split", (s, sep))
    m.charge(size_cost(len(s)) * 2)
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        if 0 < n < len(chars):
            return [*chars[:n - 1], "".join(chars[n - 1:])]
        return chars
    return s.split(sep, n - 1 if n > 0 else -1)


def _substring(m: Meter, s: Any, start: Any, end: Any = None) -> str:
    if not isinstance(s, str) or not _is_int(start) or not (end is None or _is_int(end)):
        raise NoOverload("substring", (s, start))
    end = len(s) if end is None else end
    if start < 0 or start > len(s):
        raise EvalError(f"index out of range: {start}")
    if end < 0 or end > len(s):
        raise EvalError(f"index out of range: {end}")
    if start > end:
        raise EvalError(f"invalid substring range. start: {start}, end: {end}")
    _sizes_cost(m, s)
    return s[start:end]


_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def _trim(m: Meter, s: Any) -> str:
    _str_args("trim", s)
    _sizes_cost(m, s)
    return str(s.strip(_GO_SPACE))


def _join(m: Meter, items: Any, sep: Any = "") -> str:
    if not isinstance(items, list) or not isinstance(sep, str) or not all(isinstance(i, str) for i in items):
        raise NoOverload("join", (items, sep))
    m.charge(size_cost(sum(len(i) for i in items) + len(sep) * len(items)))
    return sep.join(items)


def _reverse(m: Meter, v: Any) -> Any:
    if isinstance(v, str | list):
        _sizes_cost(m, v)
        return v[::-1]
    raise NoOverload("reverse", (v,))


_QUOTE = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
          "\\": "\\\\", '"': '\\"'}


def quote(s: str) -> str:
    return '"' + "".join(_QUOTE.get(c, c) for c in s) + '"'


def _quote(m: Meter, s: Any) -> str:
    _str_args("strings.quote", s)
    _sizes_cost(m, s)
    return quote(s)


def _format_value(v: Any, nested: bool = False) -> str:
    if isinstance(v, str):
        return quote(v) if nested else v
    if isinstance(v, list):
        return "[" + ", ".join(_format_value(x, True) for x in v) + "]"
    if isinstance(v, dict):
        items = sorted(((_format_value(k, True), _format_value(x, True)) for k, x in v.items()))
        return "{" + ", ".join(f"{k}: {x}" for k, x in items) + "}"
    if v is None:
        return "null"
    if isinstance(v, bytes) and nested:
        return "b" + quote(v.decode(errors="replace"))
    if isinstance(v, Optional):
        return f"optional.of({_format_value(v.value, True)})" if v.has else "optional.none()"
    return to_string(v)


_VERB = re.compile(r"%(?:\.(\d+))?([sdfeboxX%])")


def _format(m: Meter, template: Any, args: Any) -> str:
    if not isinstance(template, str) or not isinstance(args, list):
        raise NoOverload("format", (template, args))
    m.charge(size_cost(len(template) + sum(value_size(a) for a in args)))
    out: list[str] = []
    pos = 0
    index = 0
    for verb in _VERB.finditer(template):
        out.append(template[pos:verb.start()])
        pos = verb.end()
        precision, kind = verb.group(1), verb.group(2)
        if kind == "%":
            out.append("%")
            continue
        if index >= len(args):
            raise EvalError(f"index {index} out of range")
        arg = args[index]
        index += 1
        out.append(_format_one(kind, precision, arg))
    out.append(template[pos:])
    text = "".join(out)
    m.charge(size_cost(len(text)))
    return text


def _format_one(kind: str, precision: str | None, arg: Any) -> str:
    if kind == "s":
        return _format_value(arg)
    if kind == "d":
        if isinstance(arg, int) and not isinstance(arg, bool):
            return str(int(arg))
        if isinstance(arg, float) and (math.isinf(arg) or math.isnan(arg)):
            return go_float(arg).replace("+", "")
        raise EvalError(f"error during formatting: integer clause can only be used on integers, was given "
                        f"{type_name(arg)}")
    if kind in ("f", "e"):
        if not is_number(arg) and not isinstance(arg, str):
            raise EvalError(f"error during formatting: fixed-point clause can only be used on doubles, was given "
                            f"{type_name(arg)}")
        value = float(arg)
        digits = 6 if precision is None else int(precision)
        if math.isnan(value) or math.isinf(value):
            return go_float(value).replace("+", "")
        return f"{value:.{digits}{kind}}"
    if kind == "b":
        if isinstance(arg, bool):
            return "1" if arg else "0"
        if isinstance(arg, int):
            return format(int(arg), "b")
        raise EvalError(f"error during formatting: only integers and bools can be formatted as binary, was given "
                        f"{type_name(arg)}")
    if kind == "o":
        if isinstance(arg, int) and not isinstance(arg, bool):
            return format(int(arg), "o")
        raise EvalError(f"error during formatting: octal clause can only be used on integers, was given "
                        f"{type_name(arg)}")
    if isinstance(arg, int) and not isinstance(arg, bool):
        return format(int(arg), kind)
    if isinstance(arg, str | bytes):
        raw = arg.encode() if isinstance(arg, str) else arg
        return raw.hex() if kind == "x" else raw.hex().upper()
    raise EvalError(f"error during formatting: only integers, byte buffers, and strings can be formatted as hex, "
                    f"was given {type_name(arg)}")


register("charAt", _char_at, member=("string,int->string",))
register("indexOf", _index_of, member=("string,string->int", "string,string,int->int", "list(A),A->int"),
         cost=lambda s: size_cost(s[0]))
register("lastIndexOf", _last_index_of, member=("string,string->int", "string,string,int->int", "list(A),A->int"),
         cost=lambda s: size_cost(s[0]))
register("lowerAscii", _ascii_case(False), member=("string->string",), cost=lambda s: size_cost(s[0]),
         result_size=lambda s: s[0])
register("upperAscii", _ascii_case(True), member=("string->string",), cost=lambda s: size_cost(s[0]),
         result_size=lambda s: s[0])
register("replace", _replace, member=("string,string,string->string", "string,string,string,int->string"),
         cost=lambda s: size_cost(s[0] + s[0] * s[2]), result_size=lambda s: s[0] * max(1, s[2]))
register("split", _split, member=("string,string->list(string)", "string,string,int->list(string)"),
         cost=lambda s: size_cost(s[0]) * 2, result_size=lambda s: s[0])
register("substring", _substring, member=("string,int->string", "string,int,int->string"),
         cost=lambda s: size_cost(s[0]), result_size=lambda s: s[0])
register("trim", _trim, member=("string->string",), cost=lambda s: size_cost(s[0]), result_size=lambda s: s[0])
register("join", _join, member=("list(string)->string", "list(string),string->string"),
         cost=lambda s: size_cost(s[0] * 2 + s[0] * s[-1]), result_size=lambda s: s[0] * 2)
register("reverse", _reverse, member=("string->string", "list(A)->list(A)"), cost=lambda s: size_cost(s[0]),
         result_size=lambda s: s[0])
register("format", _format, member=("string,list(dyn)->string",), cost=lambda s: size_cost(s[0] + s[1]),
         result_size=lambda s: s[0] + s[1] * 8)
register("strings.quote", _quote, sigs=("string->string",), cost=lambda s: size_cost(s[0]),
         result_size=lambda s: s[0] * 2 + 2)


# --- lists (cel-go ext.Lists and Kubernetes' lists library) ---------------------------------------


def _list_arg(name: str, v: Any) -> list[Any]:
    if not isinstance(v, list):
        raise NoOverload(name, (v,))
    return v


def _is_sorted(m: Meter, v: Any) -> bool:
    items = _list_arg("isSorted", v)
    m.charge(size_cost(len(items)))
    return all(compare(items[i], items[i + 1]) <= 0 for i in range(len(items) - 1))


def _sum(m: Meter, v: Any) -> Any:
    items = _list_arg("sum", v)
    m.charge(size_cost(len(items)))
    if not items:
        return 0
    total = items[0]
    for item in items[1:]:
        total = _add(m, total, item)
    return total


def _extreme(name: str, pick_max: bool) -> Any:
    def extreme(m: Meter, v: Any) -> Any:
        items = _list_arg(name, v)
        m.charge(size_cost(len(items)))
        if not items:
            raise EvalError(f"{name} called on empty list")
        best = items[0]
        for item in items[1:]:
            c = compare(item, best)
            if (c > 0 and pick_max) or (c < 0 and not pick_max):
                best = item
        return best
    return extreme


def _slice(m: Meter, v: Any, start: Any, end: Any) -> list[Any]:
    items = _list_arg("slice", v)
    if not _is_int(start) or not _is_int(end):
        raise NoOverload("slice", (v, start, end))
    if start < 0 or end < 0:
        raise EvalError(f"cannot slice(start:{start}, end:{end}), negative indexes not supported")
    if start > end:
        raise EvalError(f"cannot slice(start:{start}, end:{end}), start must be less than or equal to end")
    if end > len(items):
        raise EvalError(f"cannot slice(start:{start}, end:{end}), list is length {len(items)}")
    m.charge(size_cost(end - start))
    return items[start:end]


def _flatten(m: Meter, v: Any, depth: Any = 1) -> list[Any]:
    items = _list_arg("flatten", v)
    if not _is_int(depth):
        raise NoOverload("flatten", (v, depth))
    if depth < 0:
        raise EvalError("level must be non-negative")
    out: list[Any] = []
    for item in items:
        m.charge(1)
        if isinstance(item, list) and depth > 0:
            out.extend(_flatten(m, item, depth - 1))
        else:
            out.append(item)
    return out


def _distinct(m: Meter, v: Any) -> list[Any]:
    items = _list_arg("distinct", v)
    m.charge(size_cost(len(items) * len(items)))
    out: list[Any] = []
    for item in items:
        if not any(equal(item, seen) for seen in out):
            out.append(item)
    return out


def _sort(m: Meter, v: Any) -> list[Any]:
    items = _list_arg("sort", v)
    m.charge(size_cost(len(items) * max(1, math.ceil(math.log2(len(items) + 1)))))
    return sorted(items, key=functools.cmp_to_key(compare))


def _first_last(first: bool) -> Any:
    def pick(m: Meter, v: Any) -> Optional:
        items = _list_arg("first" if first else "last", v)
        if not items:
            return NONE
        return Optional(True, items[0] if first else items[-1])
    return pick


def _range(m: Meter, n: Any) -> list[int]:
    if not _is_int(n):
        raise NoOverload("lists.range", (n,))
    m.charge(size_cost(max(0, n)))
    return list(range(n))


register("isSorted", _is_sorted, member=("list(A)->bool",), cost=lambda s: size_cost(s[0]))
register("sum", _sum, member=("list(A)->A",), cost=lambda s: size_cost(s[0]))
register("min", _extreme("min", False), member=("list(A)->A",), cost=lambda s: size_cost(s[0]))
register("max", _extreme("max", True), member=("list(A)->A",), cost=lambda s: size_cost(s[0]))
register("slice", _slice, member=("list(A),int,int->list(A)",), cost=lambda s: size_cost(s[0]),
         result_size=lambda s: s[0])
register("flatten", _flatten, member=("list(dyn)->list(dyn)", "list(dyn),int->list(dyn)"),
         cost=lambda s: s[0], result_size=lambda s: s[0] * s[0])
register("distinct", _distinct, member=("list(A)->list(A)",), cost=lambda s: size_cost(s[0] * s[0]),
         result_size=lambda s: s[0])
register("sort", _sort, member=("list(A)->list(A)",), cost=lambda s: size_cost(s[0] * 20),
         result_size=lambda s: s[0])
register("first", _first_last(True), member=("list(A)->optional(A)",))
register("last", _first_last(False), member=("list(A)->optional(A)",))
register("lists.range", _range, sigs=("int->list(int)",), cost=lambda s: 100_000, result_size=lambda s: 1_000_000)


# --- sets ------------------------------------------------------------------------------------------


def _set_args(name: str, m: Meter, a: Any, b: Any) -> tuple[list[Any], list[Any]]:
    if not isinstance(a, list) or not isinstance(b, list):
        raise NoOverload(name, (a, b))
    m.charge(size_cost(len(a) * len(b)))
    return a, b


def _sets_contains(m: Meter, a: Any, b: Any) -> bool:
    a, b = _set_args("sets.contains", m, a, b)
    return all(any(equal(x, y) for y in a) for x in b)


def _sets_equivalent(m: Meter, a: Any, b: Any) -> bool:
    a, b = _set_args("sets.equivalent", m, a, b)
    return all(any(equal(x, y) for y in a) for x in b) and all(any(equal(x, y) for y in b) for x in a)


def _sets_intersects(m: Meter, a: Any, b: Any) -> bool:
    a, b = _set_args("sets.intersects", m, a, b)
    return any(any(equal(x, y) for y in a) for x in b)


for _name, _fn in (("sets.contains", _sets_contains), ("sets.equivalent", _sets_equivalent),
                   ("sets.intersects", _sets_intersects)):
    register(_name, _fn, sigs=("list(A),list(A)->bool",), cost=lambda s: size_cost(s[0] * s[1]))


# --- optional --------------------------------------------------------------------------------------


def _zero(v: Any) -> bool:
    return v is None or v is False or (is_number(v) and v == 0) or (isinstance(v, str | bytes | list | dict)
                                                                     and len(v) == 0)


def _opt(name: str, v: Any) -> Optional:
    if not isinstance(v, Optional):
        raise NoOverload(name, (v,))
    return v


def _opt_value(m: Meter, v: Any) -> Any:
    opt = _opt("value", v)
    if not opt.has:
        raise EvalError("optional.none() dereference")
    return opt.value


register("optional.of", lambda m, v: Optional(True, v), sigs=("A->optional(A)",))
register("optional.none", lambda m: NONE, sigs=("->optional(dyn)",))
register("optional.ofNonZeroValue", lambda m, v: NONE if _zero(v) else Optional(True, v), sigs=("A->optional(A)",))
register("hasValue", lambda m, v: _opt("hasValue", v).has, member=("optional(A)->bool",))
register("value", _opt_value, member=("optional(A)->A",))
register("orValue", lambda m, v, d: (lambda o: o.value if o.has else d)(_opt("orValue", v)),
         member=("optional(A),A->A",))
register("or", lambda m, v, other: (lambda o: o if o.has else _opt("or", other))(_opt("or", v)),
         member=("optional(A),optional(A)->optional(A)",))


__all__ = ["CostExceeded", "check_regex", "compile_regex", "go_float", "quote", "to_string"]
