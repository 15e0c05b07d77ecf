"""cel-go's ``format`` string function: ``%s %d %f %e %b %o %x %X`` and ``%%`` over a list of arguments.

Owns how each verb renders its argument, with cel-go's error wording, and how ``%s`` prints lists,
maps (keys sorted), bytes and optionals. The cost covers the template, the arguments and the output.
"""

from __future__ import annotations

import math
import re
from typing import Any

from cel.stdlib.conversions import go_float, to_string
from cel.stdlib.strings import quote
from cel.types import (
    EvalError,
    Meter,
    NoOverload,
    Optional,
    is_number,
    register,
    size_cost,
    type_name,
    value_size,
)


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


register("format", _format, member=("string,list(dyn)->string",))
