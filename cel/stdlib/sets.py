"""cel-go's ``sets`` extension: ``sets.contains``, ``sets.equivalent`` and ``sets.intersects`` over lists.

Membership is CEL equality, so the cost is charged as the product of the two lists' sizes.
"""

from __future__ import annotations

from typing import Any

from cel.estimates import CallEstimate, CallSite, FunctionEstimator, fixed, set_estimate
from cel.types import Meter, NoOverload, equal, register, size_cost


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


def _estimate(factor: float) -> FunctionEstimator:
    # cel-go's estimateSetsCost: m*n comparisons (twice for equivalence) plus the call.
    def estimate(site: CallSite) -> CallEstimate | None:
        if len(site.args) != 2:
            return None
        product = site.size(site.args[0]).mul(site.size(site.args[1]))
        return CallEstimate(product.by_factor(factor).add(fixed(1)))
    return estimate


for _name, _fn, _factor in (("sets.contains", _sets_contains, 1.0), ("sets.equivalent", _sets_equivalent, 2.0),
                            ("sets.intersects", _sets_intersects, 1.0)):
    register(_name, _fn, sigs=("list(A),list(A)->bool",))
    set_estimate(_name, _estimate(_factor))
