"""cel-go's ``sets`` extension: ``sets.contains``, ``sets.equivalent`` and ``sets.intersects`` over lists.

Membership is CEL equality, so the cost is charged as the product of the two lists' sizes.
"""

from __future__ import annotations

from typing import Any

from spaces.cel.types import Meter, NoOverload, equal, register, size_cost


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
