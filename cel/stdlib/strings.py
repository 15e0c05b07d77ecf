"""CEL's string functions: the standard ``contains``/``startsWith``/``endsWith`` and cel-go's ``strings`` extension.

Owns ``charAt``, ``indexOf``, ``lastIndexOf`` (on lists too, as Kubernetes' lists library adds them),
``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim`` (Go's Unicode white
space), ``join``, ``reverse`` (strings and lists) and ``strings.quote``. Every function charges for
its input before it works, and ``replace`` for its output too.
"""

from __future__ import annotations

from typing import Any

from cel.estimates import set_estimate
from cel.stdlib.arguments import charge_sizes, is_int, require_strings
from cel.stdlib.lists import estimate_list_reverse
from cel.types import EvalError, Meter, NoOverload, equal, register, size_cost


def _contains(m: Meter, s: Any, sub: Any) -> bool:
    require_strings("contains", s, sub)
    charge_sizes(m, s)
    return sub in s


def _starts(m: Meter, s: Any, prefix: Any) -> bool:
    require_strings("startsWith", s, prefix)
    charge_sizes(m, prefix)
    return bool(s.startswith(prefix))


def _ends(m: Meter, s: Any, suffix: Any) -> bool:
    require_strings("endsWith", s, suffix)
    charge_sizes(m, suffix)
    return bool(s.endswith(suffix))


register("contains", _contains, sigs=("string,string->bool",), member=("string,string->bool",))
register("startsWith", _starts, sigs=("string,string->bool",), member=("string,string->bool",))
register("endsWith", _ends, sigs=("string,string->bool",), member=("string,string->bool",))


def _char_at(m: Meter, s: Any, i: Any) -> str:
    if not isinstance(s, str) or not is_int(i):
        raise NoOverload("charAt", (s, i))
    if i < 0 or i > len(s):
        raise EvalError(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def _index_of(m: Meter, s: Any, x: Any, start: Any = 0) -> int:
    if isinstance(s, list):
        m.charge(size_cost(len(s)))
        return next((i for i, v in enumerate(s) if equal(v, x)), -1)
    if not isinstance(s, str) or not isinstance(x, str) or not is_int(start):
        raise NoOverload("indexOf", (s, x))
    m.charge(size_cost(len(s)))
    if start < 0 or start > len(s):
        raise EvalError(f"index out of range: {start}")
    return s.find(x, start)


def _last_index_of(m: Meter, s: Any, x: Any, end: Any = None) -> int:
    if isinstance(s, list):
        m.charge(size_cost(len(s)))
        return next((i for i in range(len(s) - 1, -1, -1) if equal(s[i], x)), -1)
    if not isinstance(s, str) or not isinstance(x, str) or not (end is None or is_int(end)):
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
        require_strings("upperAscii" if upper else "lowerAscii", s)
        charge_sizes(m, s)
        return str(s.translate(table))
    return convert


def _replace(m: Meter, s: Any, old: Any, new: Any, n: Any = -1) -> str:
    if not (isinstance(s, str) and isinstance(old, str) and isinstance(new, str) and is_int(n)):
        raise NoOverload("replace", (s, old, new))
    charge_sizes(m, s)
    count = len(s) + 1 if old == "" else s.count(old)
    if n >= 0:
        count = min(count, n)
    # Charged before building: the output may be far larger than the input.
    m.charge(size_cost(len(s) + count * max(0, len(new) - len(old))))
    return s.replace(old, new, n if n >= 0 else -1)


def _split(m: Meter, s: Any, sep: Any, n: Any = -1) -> list[str]:
    if not (isinstance(s, str) and isinstance(sep, str) and is_int(n)):
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
    if not isinstance(s, str) or not is_int(start) or not (end is None or is_int(end)):
        raise NoOverload("substring", (s, start))
    end = len(s) if end is None else end
    if start < 0 or start > len(s):
        raise EvalError(f"index out of range: {start}")
    if end < 0 or end > len(s):
        raise EvalError(f"index out of range: {end}")
    if start > end:
        raise EvalError(f"invalid substring range. start: {start}, end: {end}")
    charge_sizes(m, s)
    return s[start:end]


_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def _trim(m: Meter, s: Any) -> str:
    require_strings("trim", s)
    charge_sizes(m, s)
    return str(s.strip(_GO_SPACE))


def _join(m: Meter, items: Any, sep: Any = "") -> str:
    if not isinstance(items, list) or not isinstance(sep, str) or not all(isinstance(i, str) for i in items):
        raise NoOverload("join", (items, sep))
    m.charge(size_cost(sum(len(i) for i in items) + len(sep) * len(items)))
    return sep.join(items)


def _reverse(m: Meter, v: Any) -> Any:
    if isinstance(v, str | list):
        charge_sizes(m, v)
        return v[::-1]
    raise NoOverload("reverse", (v,))


_QUOTE = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
          "\\": "\\\\", '"': '\\"'}


def quote(s: str) -> str:
    return '"' + "".join(_QUOTE.get(c, c) for c in s) + '"'


def _quote(m: Meter, s: Any) -> str:
    require_strings("strings.quote", s)
    charge_sizes(m, s)
    return quote(s)


register("charAt", _char_at, member=("string,int->string",))
register("indexOf", _index_of, member=("string,string->int", "string,string,int->int", "list(A),A->int"))
register("lastIndexOf", _last_index_of, member=("string,string->int", "string,string,int->int", "list(A),A->int"))
register("lowerAscii", _ascii_case(False), member=("string->string",))
register("upperAscii", _ascii_case(True), member=("string->string",))
register("replace", _replace, member=("string,string,string->string", "string,string,string,int->string"))
register("split", _split, member=("string,string->list(string)", "string,string,int->list(string)"))
register("substring", _substring, member=("string,int->string", "string,int,int->string"))
register("trim", _trim, member=("string->string",))
register("join", _join, member=("list(string)->string", "list(string),string->string"))
register("reverse", _reverse, member=("string->string", "list(A)->list(A)"))
set_estimate("reverse", estimate_list_reverse)


register("strings.quote", _quote, sigs=("string->string",))
