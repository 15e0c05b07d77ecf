"""The value types of static cost estimation, shared by the estimator and the function libraries.

Mirrors cel-go's ``checker.SizeEstimate``/``CostEstimate``/``CallEstimate`` and ``AstNode``: a size
or a cost is a ``[min, max]`` range of unsigned 64-bit integers whose arithmetic saturates instead of
overflowing, and a function's estimator sees its target and arguments as :class:`ArgNode` values
(type, field path into the schema, the size already known from the expression). Also holds the table
of per-function estimators the libraries declare (:func:`set_estimate`), apart from
:mod:`cel.cost` so they need not import the estimator.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from cel.types import CelType

UINT64_MAX = 2**64 - 1
_TWO_TO_64 = float(2**64)

# cel-go common/cost.go.
SELECT_AND_IDENT_COST = 1
CONST_COST = 0
LIST_CREATE_BASE_COST = 10
MAP_CREATE_BASE_COST = 30
STRING_TRAVERSAL_COST_FACTOR = 0.1
REGEX_STRING_LENGTH_COST_FACTOR = 0.25


def add_u64(x: int, y: int) -> int:
    return min(x + y, UINT64_MAX)


def mul_u64(x: int, y: int) -> int:
    return min(x * y, UINT64_MAX)


def mul_factor_u64(x: int, factor: float) -> int:
    """``x * factor`` rounded up, computed in float64 as cel-go does (so large values round alike)."""
    xf = float(x)
    if xf > 0 and factor > 0 and xf > UINT64_MAX / factor:
        return UINT64_MAX
    product = math.ceil(xf * factor)
    return UINT64_MAX if product >= _TWO_TO_64 else int(product)


class Estimate(NamedTuple):
    """A ``[lo, hi]`` range of sizes or costs."""

    lo: int
    hi: int

    def add(self, other: Estimate) -> Estimate:
        return Estimate(add_u64(self.lo, other.lo), add_u64(self.hi, other.hi))

    def mul(self, other: Estimate) -> Estimate:
        return Estimate(mul_u64(self.lo, other.lo), mul_u64(self.hi, other.hi))

    def by_factor(self, factor: float) -> Estimate:
        return Estimate(mul_factor_u64(self.lo, factor), mul_factor_u64(self.hi, factor))

    def union(self, other: Estimate) -> Estimate:
        return Estimate(min(self.lo, other.lo), max(self.hi, other.hi))


def fixed(n: int) -> Estimate:
    return Estimate(n, n)


UNKNOWN = Estimate(0, UINT64_MAX)


class CallEstimate(NamedTuple):
    """A function's own cost (without its arguments') and, for strings, bytes, lists and maps, its result size."""

    cost: Estimate
    size: Estimate | None = None


@dataclass(frozen=True)
class ArgNode:
    """A call's target or argument as a function estimator sees it (cel-go's ``checker.AstNode``)."""

    type: CelType
    path: tuple[str, ...] | None          # variable, then field names and @items/@keys/@values
    size: Estimate | None = None          # known from the expression itself (literals, earlier calls)
    literal: Any = None                   # the value when the node is a literal
    is_literal: bool = False


@dataclass(frozen=True)
class CallSite:
    """One call being estimated: what a library's estimator may inspect."""

    function: str
    target: ArgNode | None
    args: list[ArgNode]
    estimate_size: Callable[[ArgNode], Estimate | None]   # the schema-driven size of a node, if any

    def size(self, node: ArgNode) -> Estimate:
        """The size the expression gives, else the schema's, else unknown (kube's ``sizeEstimate``)."""
        if node.size is not None:
            return node.size
        estimated = self.estimate_size(node)
        return estimated if estimated is not None else UNKNOWN

    def element(self, node: ArgNode) -> ArgNode | None:
        """The first type parameter of a list (or map) as a node of its own (kube's ``listElementNode``)."""
        if not node.type.params:
            return None
        path = None if node.path is None else (*node.path, "@items")
        return ArgNode(node.type.params[0], path)


FunctionEstimator = Callable[[CallSite], CallEstimate | None]

# The functions upstream costs specially, by name: a call's own cost (without its arguments') and its
# result size; a function not here (or an estimator returning None) gets cel-go's built-in estimate.
ESTIMATORS: dict[str, FunctionEstimator] = {}


def set_estimate(name: str, estimate: FunctionEstimator) -> None:
    """Declare how upstream costs ``name`` (a cel-go extension, or Kubernetes' library for the functions it costs)."""
    if name in ESTIMATORS:
        raise ValueError(f"CEL function {name} already has a cost estimator")
    ESTIMATORS[name] = estimate
