"""Static worst-case cost of a checked expression, in the same units the evaluator charges.

Owns the estimate kube-apiserver makes before it accepts a CRD: every node costs what the
evaluator would charge it, comprehensions multiply their body by the largest size their range can
have, and string or list functions cost in proportion to the largest input. Sizes come from the
schema bounds carried on the types (``maxLength``, ``maxItems``, ``maxProperties``) and, where a
bound is missing, from the largest value a request can carry — kube's own fallback.
"""

from __future__ import annotations

from collections.abc import Mapping

from spaces.cel.parser import Call, Ident, Index, ListLit, Lit, Macro, MapLit, Node, Select
from spaces.cel.types import REGISTRY, CelType

# kube-apiserver's largest request body; unbounded strings and lists are sized from it.
MAX_REQUEST_BYTES = 3 * 1024 * 1024
UNBOUNDED_STRING = MAX_REQUEST_BYTES - 2
# An unbounded list is costed as if filled with its smallest possible items ("", {}, 0 …) plus commas.
UNBOUNDED_LIST = (MAX_REQUEST_BYTES - 2) // 2


class Estimator:
    def __init__(self, types: Mapping[int, CelType], max_list: int | None, max_string: int | None) -> None:
        self.types = types
        self.max_list = UNBOUNDED_LIST if max_list is None else max_list
        self.max_string = UNBOUNDED_STRING if max_string is None else max_string

    def type_size(self, t: CelType | None) -> int:
        if t is None:
            return self.max_list
        if t.max_size is not None:
            return t.max_size
        if t.kind in ("string", "bytes"):
            return self.max_string
        if t.kind in ("list", "map", "object", "dyn"):
            return self.max_list
        return 1

    def node_size(self, node: Node) -> int:
        return self.type_size(self.types.get(id(node)))

    def estimate(self, node: Node) -> tuple[int, int]:
        """(worst-case cost, worst-case size of the value) of one node."""
        if isinstance(node, Lit):
            value = node.value
            return 0, len(value) if isinstance(value, str | bytes) else 1
        if isinstance(node, Ident):
            return 1, self.node_size(node)
        if isinstance(node, Select):
            cost, _ = self.estimate(node.operand)
            return cost + 1, self.node_size(node)
        if isinstance(node, Index):
            a, _ = self.estimate(node.operand)
            b, _ = self.estimate(node.index)
            return a + b + 1, self.node_size(node)
        if isinstance(node, ListLit):
            return 1 + sum(self.estimate(e)[0] for e in node.elems), len(node.elems)
        if isinstance(node, MapLit):
            cost = 1 + sum(self.estimate(k)[0] + self.estimate(v)[0] for k, v, _ in node.entries)
            return cost, len(node.entries)
        if isinstance(node, Macro):
            return self.macro(node)
        if isinstance(node, Call):
            return self.call(node)
        return 1, 1

    def macro(self, node: Macro) -> tuple[int, int]:
        target_cost, n = self.estimate(node.target)
        body, _ = self.estimate(node.body)
        per_item = 1 + body + (self.estimate(node.filter)[0] if node.filter is not None else 0)
        return target_cost + 1 + n * per_item, n

    def call(self, node: Call) -> tuple[int, int]:
        if node.function == "_?_:_":
            cond, then, other = (self.estimate(a) for a in node.args)
            return cond[0] + 1 + max(then[0], other[0]), max(then[1], other[1])
        parts = [self.estimate(a) for a in ([node.target] if node.target is not None else []) + node.args]
        cost = 1 + sum(c for c, _ in parts)
        sizes = [s for _, s in parts]
        fndef = REGISTRY.get(node.function)
        if fndef is not None and fndef.cost is not None and sizes:
            cost += fndef.cost(sizes)
        if fndef is not None and fndef.result_size is not None and sizes:
            return cost, fndef.result_size(sizes)
        return cost, self.node_size(node)
