"""CEL's operators: arithmetic, negation, logical not, equality, ordering, ``in`` and ``size``.

The overloads of cel-go's ``common/stdlib`` for ``+ - * / %``, ``-x``, ``!x``, ``== !=``, ``< <= > >=``
(numbers compare across int, uint and double), membership in lists and map keys, and ``size``.
Integer results are range-checked, and timestamp and duration arithmetic stays within CEL's range.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from cel.parser import UInt
from cel.stdlib.arguments import charge_sizes, is_int
from cel.stdlib.overflow import checked_int64, checked_time, checked_uint64
from cel.types import EvalError, Meter, NoOverload, compare, equal, register


def add(m: Meter, a: Any, b: Any) -> Any:
    if is_int(a) and is_int(b):
        return checked_int64(a + b)
    if isinstance(a, UInt) and isinstance(b, UInt):
        return checked_uint64(a + b)
    if isinstance(a, float) and isinstance(b, float):
        return a + b
    if (isinstance(a, str) and isinstance(b, str)) or (isinstance(a, bytes) and isinstance(b, bytes)) \
            or (isinstance(a, list) and isinstance(b, list)):
        charge_sizes(m, a, b)
        return a + b
    try:
        if (isinstance(a, dt.datetime) and isinstance(b, dt.timedelta)) or (isinstance(a, dt.timedelta) \
                and isinstance(b, dt.datetime | dt.timedelta)):
            return checked_time(a + b)
    except OverflowError:
        raise EvalError("timestamp overflow") from None
    raise NoOverload("_+_", (a, b))


def _sub(m: Meter, a: Any, b: Any) -> Any:
    if is_int(a) and is_int(b):
        return checked_int64(a - b)
    if isinstance(a, UInt) and isinstance(b, UInt):
        return checked_uint64(a - b)
    if isinstance(a, float) and isinstance(b, float):
        return a - b
    try:
        if (isinstance(a, dt.datetime) and isinstance(b, dt.datetime | dt.timedelta)) or (isinstance(
                a, dt.timedelta) and isinstance(b, dt.timedelta)):
            return checked_time(a - b)
    except OverflowError:
        raise EvalError("timestamp overflow") from None
    raise NoOverload("_-_", (a, b))


def _mul(m: Meter, a: Any, b: Any) -> Any:
    if is_int(a) and is_int(b):
        return checked_int64(a * b)
    if isinstance(a, UInt) and isinstance(b, UInt):
        return checked_uint64(a * b)
    if isinstance(a, float) and isinstance(b, float):
        return a * b
    raise NoOverload("_*_", (a, b))


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _div(m: Meter, a: Any, b: Any) -> Any:
    if (is_int(a) and is_int(b)) or (isinstance(a, UInt) and isinstance(b, UInt)):
        if b == 0:
            raise EvalError("division by zero")
        q = _truncdiv(a, b)
        return checked_uint64(q) if isinstance(a, UInt) else checked_int64(q)
    if isinstance(a, float) and isinstance(b, float):
        if b == 0:
            return math.copysign(math.inf, a) * math.copysign(1, b) if a != 0 and not math.isnan(a) else math.nan
        return a / b
    raise NoOverload("_/_", (a, b))


def _mod(m: Meter, a: Any, b: Any) -> Any:
    if (is_int(a) and is_int(b)) or (isinstance(a, UInt) and isinstance(b, UInt)):
        if b == 0:
            raise EvalError("modulus by zero")
        r = abs(a) % abs(b)
        r = -r if a < 0 else r
        return UInt(r) if isinstance(a, UInt) else r
    raise NoOverload("_%_", (a, b))


def _neg(m: Meter, a: Any) -> Any:
    if is_int(a):
        return checked_int64(-a)
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
            charge_sizes(m, a if len(a) < len(b) else b)
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
register("_+_", add, sigs=("int,int->int", "uint,uint->uint", "double,double->double", "string,string->string",
                            "bytes,bytes->bytes", "list(A),list(A)->list(A)", "timestamp,duration->timestamp",
                            "duration,timestamp->timestamp", "duration,duration->duration"))
register("_-_", _sub, sigs=("int,int->int", "uint,uint->uint", "double,double->double",
                            "timestamp,timestamp->duration", "timestamp,duration->timestamp",
                            "duration,duration->duration"))
register("_*_", _mul, sigs=("int,int->int", "uint,uint->uint", "double,double->double"))
register("_/_", _div, sigs=("int,int->int", "uint,uint->uint", "double,double->double"))
register("_%_", _mod, sigs=("int,int->int", "uint,uint->uint"))
register("-_", _neg, sigs=("int->int", "double->double"))
register("!_", _not, sigs=("bool->bool",))
register("_==_", lambda m, a, b: equal(a, b, m), sigs=("A,B->bool",))
register("_!=_", lambda m, a, b: not equal(a, b, m), sigs=("A,B->bool",))
for _name, _test in (("_<_", lambda c: c < 0), ("_<=_", lambda c: c <= 0), ("_>_", lambda c: c > 0),
                     ("_>=_", lambda c: c >= 0)):
    register(_name, _ordering(_name, _test), sigs=tuple(_COMPARABLE))
register("@in", _in, sigs=("A,list(A)->bool", "A,map(A,B)->bool"))
register("size", _size, sigs=("string->int", "bytes->int", "list(A)->int", "map(A,B)->int"),
         member=("string->int", "bytes->int", "list(A)->int", "map(A,B)->int"))
