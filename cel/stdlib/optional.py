"""CEL's ``optional`` library: ``optional.of``, ``optional.none``, ``optional.ofNonZeroValue`` and the methods.

Owns ``hasValue``, ``value``, ``orValue`` and ``or`` on optional values, and what counts as a zero value.
"""

from __future__ import annotations

from typing import Any

from cel.types import NONE, EvalError, Meter, NoOverload, Optional, is_number, register


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
