"""CEL's list functions: cel-go's ``lists`` extension and Kubernetes' ``lists`` library.

Owns ``isSorted``, ``sum``, ``min``, ``max``, ``slice``, ``flatten``, ``distinct``, ``sort``, ``first``,
``last`` and ``lists.range``. Element order and sums follow CEL's ordering and ``+``.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from cel.estimates import (
    LIST_CREATE_BASE_COST,
    STRING_TRAVERSAL_COST_FACTOR,
    UINT64_MAX,
    ArgNode,
    CallEstimate,
    CallSite,
    Estimate,
    fixed,
    set_estimate,
)
from cel.stdlib.arguments import is_int
from cel.stdlib.operators import add
from cel.types import NONE, EvalError, Meter, NoOverload, Optional, compare, equal, register, size_cost


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
        total = add(m, total, item)
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
    if not is_int(start) or not is_int(end):
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
    if not is_int(depth):
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
    if not is_int(n):
        raise NoOverload("lists.range", (n,))
    m.charge(size_cost(max(0, n)))
    return list(range(n))


# --- static cost: cel-go's lists extension (version 3, as Kubernetes enables it) -------------------
# isSorted, sum, min and max are Kubernetes' functions; their estimates are in cel.k8s_cost.


def _uint_literal(node: ArgNode, default: int) -> int:
    """A literal int argument as cel-go's ``nodeAsUintValue`` reads it (negative as 0), else ``default``."""
    if not node.is_literal or not is_int(node.literal):
        return default
    return max(0, node.literal)


def _allocating_list_call(factor: float, size: Estimate) -> CallEstimate:
    # One unit for the call, the list allocation, and ``factor`` per element of the result.
    cost = size.by_factor(factor).add(fixed(1)).add(fixed(LIST_CREATE_BASE_COST))
    return CallEstimate(cost, size)


def _estimate_slice(site: CallSite) -> CallEstimate | None:
    if site.target is None or len(site.args) != 2:
        return None
    size = site.size(site.target)
    start = _uint_literal(site.args[0], 0)
    end = _uint_literal(site.args[1], size.hi)
    return _allocating_list_call(1, fixed((end - start) % 2**64))   # unsigned, as upstream computes it


def _estimate_flatten(site: CallSite) -> CallEstimate | None:
    if site.target is None or len(site.args) > 1:
        return None
    depth = _uint_literal(site.args[0], UINT64_MAX) if site.args else 1
    return _allocating_list_call(float(depth), site.size(site.target))


def _estimate_range(site: CallSite) -> CallEstimate | None:
    if site.target is not None or len(site.args) != 1:
        return None
    return _allocating_list_call(1, fixed(_uint_literal(site.args[0], UINT64_MAX)))


def estimate_list_reverse(site: CallSite) -> CallEstimate | None:
    # Only the list overload has an estimator (registered with ``reverse`` in the strings family); Kubernetes'
    # strings extension (version 2) has no string reverse, so that overload costs cel-go's default.
    if site.target is None or site.args or site.target.type.kind != "list":
        return None
    return _allocating_list_call(1, site.size(site.target))


def _estimate_distinct(site: CallSite) -> CallEstimate | None:
    if site.target is None or site.args:
        return None
    size = site.size(site.target)
    return _allocating_list_call(2.0, size.mul(size))


def _estimate_sort(site: CallSite) -> CallEstimate | None:
    # One overload per comparable element type; comparing strings or bytes also traverses them.
    if site.target is None or site.args:
        return None
    size = site.size(site.target)
    squared = size.mul(size)
    elem = site.target.type.params[0].kind if site.target.type.params else "dyn"
    plain = _allocating_list_call(2.0, squared)
    textual = _allocating_list_call(2.0 + STRING_TRAVERSAL_COST_FACTOR, squared)
    if elem in ("string", "bytes"):
        return textual
    if elem == "dyn":
        return CallEstimate(plain.cost.union(textual.cost), squared)
    return plain


register("isSorted", _is_sorted, member=("list(A)->bool",))
register("sum", _sum, member=("list(A)->A",))
register("min", _extreme("min", False), member=("list(A)->A",))
register("max", _extreme("max", True), member=("list(A)->A",))
register("slice", _slice, member=("list(A),int,int->list(A)",))
set_estimate("slice", _estimate_slice)
register("flatten", _flatten, member=("list(dyn)->list(dyn)", "list(dyn),int->list(dyn)"))
set_estimate("flatten", _estimate_flatten)
register("distinct", _distinct, member=("list(A)->list(A)",))
set_estimate("distinct", _estimate_distinct)
register("sort", _sort, member=("list(A)->list(A)",))
set_estimate("sort", _estimate_sort)
register("first", _first_last(True), member=("list(A)->optional(A)",))
register("last", _first_last(False), member=("list(A)->optional(A)",))
register("lists.range", _range, sigs=("int->list(int)",))
set_estimate("lists.range", _estimate_range)
