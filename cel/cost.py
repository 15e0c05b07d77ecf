"""Static worst-case cost of a checked expression: cel-go's ``checker.Cost`` over our AST.

Owns the estimate kube-apiserver makes before it accepts a CRD rule, unit for unit, because any
difference either refuses CRDs kube accepts or accepts ones it refuses. Every node is costed as
cel-go costs it (identifiers and field selections 1, constants 0, ``has()`` 0 as Kubernetes
configures it, calls 1 plus their arguments unless a function has its own estimate); a macro is
costed as the comprehension cel-go expands it into (``@result`` accumulator, ``@not_strictly_false``
loop condition …), its loop step and condition multiplied by the largest size of its range. Sizes
are ``[min, max]`` ranges: literal sizes, sizes derived by earlier calls, and otherwise what the
*sizer* finds at the node's field path (``self.spec.items.@items``) — for CRD rules the schema's
bounds, see :class:`SchemaSizer`. Upstream's quirks are kept (a path that starts at a comprehension
over a literal resolves to the root's size), since matching kube's numbers is the point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from cel.estimates import (
    CONST_COST,
    ESTIMATORS,
    LIST_CREATE_BASE_COST,
    MAP_CREATE_BASE_COST,
    REGEX_STRING_LENGTH_COST_FACTOR,
    SELECT_AND_IDENT_COST,
    STRING_TRAVERSAL_COST_FACTOR,
    UINT64_MAX,
    UNKNOWN,
    ArgNode,
    CallEstimate,
    CallSite,
    Estimate,
    fixed,
)
from cel.parser import Call, Ident, Index, ListLit, Lit, Macro, MapLit, Node, Select
from cel.types import BOOL, DYN, INT, CelType, is_param, list_of

Path = tuple[str, ...]
# Finds the size of the value at a field path (first element: the variable), or None.
Sizer = Callable[[Path], Estimate | None]

# The accumulator variable of expanded macros; paths rooted at it are not handed to estimators.
ACCUMULATOR = "@result"
_ACCUMULATORS = (ACCUMULATOR, "__result__")
# Kubernetes' environments configure presence tests (has()) to cost nothing (PresenceTestHasCost(false)).
_PRESENCE_TEST_COST = fixed(0)
_SCALARS = frozenset({"bool", "double", "int", "uint", "google.protobuf.Duration", "google.protobuf.Timestamp"})
_MOD64 = 2**64


@dataclass(frozen=True)
class _Entry:
    """The sizes of a container's keys (indexes) and values, known from a literal or a call."""

    container: str   # "list" or "map"
    key: Estimate
    val: Estimate


def _union_entries(a: _Entry | None, b: _Entry | None) -> _Entry | None:
    if a is None or b is None:
        return None
    return _Entry(a.container, a.key.union(b.key), a.val.union(b.val))


@dataclass(frozen=True)
class _Var:
    path: Path | None
    size: Estimate | None
    entry: _Entry | None


@dataclass(frozen=True)
class _Comprehension:
    iter_range: Node
    iter_var: str
    accu_init: Node
    loop_condition: Node
    loop_step: Node
    result: Node


def _is_scalar(t: CelType) -> bool:
    if t.kind == "optional" and t.params:
        return _is_scalar(t.params[0])
    return t.kind in _SCALARS


def _literal_size(node: Node) -> Estimate | None:
    if isinstance(node, Lit):
        return fixed(len(node.value)) if isinstance(node.value, str | bytes) else fixed(1)
    if isinstance(node, ListLit):
        return fixed(len(node.elems))
    if isinstance(node, MapLit):
        return fixed(len(node.entries))
    return None


def _step(t: CelType, name: str) -> CelType | None:
    """One path element down a type: list items or map values, map keys, or an object's field (JSON name)."""
    if name in ("@items", "@values"):
        if t.kind == "list" and t.params:
            return t.params[0]
        return t.params[1] if t.kind == "map" and len(t.params) == 2 else None
    if name == "@keys":
        return t.params[0] if t.kind == "map" and t.params else None
    fields: Mapping[str, CelType] = t.extra.get("by_json", {}) if t.kind == "object" else {}
    return fields.get(name)


def _declared_field(t: CelType, name: str) -> CelType | None:
    """A field of an object type declared in code (no JSON names recorded), by its name."""
    info = t.fields.get(name) if t.kind == "object" and t.fields else None
    return info.type if info is not None else None


class SchemaSizer:
    """kube's ``sizeEstimator``: a path's size is the ``MaxElements`` of the schema type it leads to.

    The first element (``self`` or ``oldSelf``, or whatever a path happens to start with) is skipped,
    as upstream skips it.
    """

    def __init__(self, root: CelType) -> None:
        self.root = root

    def __call__(self, path: Path) -> Estimate | None:
        node: CelType | None = self.root
        for name in path[1:]:
            node = _step(node, name) if node is not None else None
        return None if node is None else Estimate(0, node.max_size or 0)


class TypeSizer:
    """Sizes for expressions outside CRDs: declared bounds, else the given maxima by kind."""

    def __init__(self, variables: Mapping[str, CelType], max_list: int, max_string: int) -> None:
        self.variables = variables
        self.max_list = max_list
        self.max_string = max_string

    def __call__(self, path: Path) -> Estimate | None:
        node = self.variables.get(path[0])
        for name in path[1:]:
            if node is None or node.kind == "dyn":
                break  # anything inside a dyn value is a dyn value: sized by the maxima below
            node = _step(node, name) or _declared_field(node, name)
        if node is None:
            return None
        if node.max_size is not None:
            return Estimate(0, node.max_size)
        most = {"string": self.max_string, "bytes": self.max_string, "list": self.max_list, "map": self.max_list,
                "dyn": max(self.max_list, self.max_string)}.get(node.kind)
        return None if most is None else Estimate(0, most)


class Estimator:
    """Estimates one checked expression; create one per estimate (it records sizes and paths as it goes)."""

    def __init__(self, types: Mapping[int, CelType], sizer: Sizer) -> None:
        self.types = dict(types)
        self.sizer = sizer
        self.paths: dict[int, Path | None] = {}
        self.sizes: dict[int, Estimate] = {}
        self.entries: dict[int, _Entry] = {}
        self.scopes: dict[str, list[_Var]] = {}
        self._synthetic: list[Node] = []   # expanded macro nodes, kept alive so their ids stay unique

    def estimate(self, node: Node) -> Estimate:
        return self.cost(node)

    # --- nodes ------------------------------------------------------------------------------------

    def cost(self, node: Node) -> Estimate:
        if isinstance(node, Lit):
            return fixed(CONST_COST)
        if isinstance(node, Ident):
            var = self._local(node.name)
            self.paths[id(node)] = var.path if var is not None else (node.name,)
            return fixed(SELECT_AND_IDENT_COST)
        if isinstance(node, Select):
            return self._select(node)
        if isinstance(node, Index):
            return self._call(node, "_[?_]" if node.optional else "_[_]", None, [node.operand, node.index])
        if isinstance(node, Call):
            return self._call(node, node.function, node.target, node.args)
        if isinstance(node, ListLit):
            return self._list(node)
        if isinstance(node, MapLit):
            return self._map(node)
        if isinstance(node, Macro):
            return self._comprehension(node, self._expand(node))
        return Estimate(0, 0)

    def _select(self, node: Select) -> Estimate:
        if node.test_only:
            return _PRESENCE_TEST_COST.add(self.cost(node.operand))
        if node.optional:
            # ``a.?b`` is the call ``_?._(a, "b")``: one unit plus its operand.
            return self.cost(node.operand).add(fixed(1))
        cost = self.cost(node.operand)
        operand = self._type(node.operand)
        # Selecting from a map, object or type parameter costs a unit; from dyn or optional nothing.
        if operand.kind in ("map", "object") or is_param(operand):
            cost = cost.add(fixed(SELECT_AND_IDENT_COST))
        self.paths[id(node)] = (*(self._path(node.operand) or ()), node.field)
        return cost

    def _list(self, node: ListLit) -> Estimate:
        total = Estimate(0, 0)
        item = Estimate(UINT64_MAX, 0) if node.elems else Estimate(0, 0)
        for elem in node.elems:
            total = total.add(self.cost(elem))
            item = item.union(self._size_or_unknown(elem))
        self.entries[id(node)] = _Entry("list", fixed(1), item)
        return total.add(fixed(LIST_CREATE_BASE_COST))

    def _map(self, node: MapLit) -> Estimate:
        total = Estimate(0, 0)
        keys = Estimate(UINT64_MAX, 0) if node.entries else Estimate(0, 0)
        values = keys
        for key, value, _optional in node.entries:
            total = total.add(self.cost(key)).add(self.cost(value))
            keys = keys.union(self._size_or_unknown(key))
            values = values.union(self._size_or_unknown(value))
        self.entries[id(node)] = _Entry("map", keys, values)
        return total.add(fixed(MAP_CREATE_BASE_COST))

    # --- calls ------------------------------------------------------------------------------------

    def _call(self, node: Node, function: str, target: Node | None, args: list[Node]) -> Estimate:
        if function == "dyn" and target is None and len(args) == 1:
            # dyn() only disables type checking: one unit, and the argument's sizes carry over.
            cost = self.cost(args[0])
            self._copy_sizes(node, args[0])
            return fixed(1).add(cost)
        arg_costs = [self.cost(a) for a in args]
        arg_nodes = [self._ast_node(a) for a in args]
        total = Estimate(0, 0)
        target_node = None
        if target is not None:
            total = total.add(self.cost(target))
            target_node = self._ast_node(target)
        # Overloads the checker could not narrow down (dyn arguments) are all costed, and the range covers them.
        fn_cost = Estimate(UINT64_MAX, 0)
        result: Estimate | None = None
        for overload in self._overloads(function, target, args):
            call = self._function_cost(node, function, overload, target_node, arg_nodes, arg_costs, args)
            fn_cost = fn_cost.union(call.cost)
            if call.size is not None:
                result = call.size if result is None else result.union(call.size)
            if overload in ("index_list", "index_map"):
                entry = self._entry(args[0])
                result = entry.val if entry is not None else None
                step = "@items" if overload == "index_list" else "@values"
                self.paths[id(node)] = (*(self._path(args[0]) or ()), step)
            if result is None:
                result = self._size(node)
        if result is not None:
            self.sizes[id(node)] = result
        return total.add(fn_cost)

    def _overloads(self, function: str, target: Node | None, args: list[Node]) -> list[str]:
        """The cel-go overloads whose estimates differ from the default, as the checker would resolve them."""
        kinds = [self._type(a).kind for a in args]
        member = target is not None
        if function in ("_&&_", "_||_"):
            return ["logical"]
        if function == "_?_:_":
            return ["conditional"]
        if function in ("_==_", "_!=_"):
            return ["equals"]
        if function in ("_<_", "_<=_", "_>_", "_>=_"):
            # String and bytes ordering is costed like equality; numbers, times and bools are plain.
            known = {k for k in kinds if k != "dyn"}
            if not known:
                return ["equals", "plain"]
            return ["equals"] if known & {"string", "bytes"} else ["plain"]
        if function == "_+_":
            known = {k for k in kinds if k != "dyn"}
            if not known:
                return ["add_string", "add_bytes", "add_list", "plain"]
            by_kind = {"string": "add_string", "bytes": "add_bytes", "list": "add_list"}
            return [by_kind.get(next(iter(known)), "plain")] if len(known) == 1 else ["plain"]
        if function == "_[_]" and args:
            return {"list": ["index_list"], "map": ["index_map"], "dyn": ["index_list", "index_map"]}.get(
                kinds[0], ["plain"])
        if function == "@in" and len(args) == 2:
            return {"list": ["in_list"], "dyn": ["in_list", "plain"]}.get(kinds[1], ["plain"])
        member_overloads = {"matches": "matches_string", "contains": "contains_string",
                            "startsWith": "starts_with_string", "endsWith": "ends_with_string",
                            "format": "string_format"}
        if member and function in member_overloads:
            return [member_overloads[function]]
        if function == "bytes" and kinds == ["string"]:
            return ["string_to_bytes"]
        if function == "string" and kinds == ["bytes"]:
            return ["bytes_to_string"]
        if function == "strings.quote":
            return ["strings_quote"]
        return ["plain"]

    def _function_cost(self, node: Node, function: str, overload: str, target: ArgNode | None,
                       args: list[ArgNode], arg_costs: list[Estimate], arg_exprs: list[Node]) -> CallEstimate:
        arg_sum = Estimate(0, 0)
        for c in arg_costs:
            arg_sum = arg_sum.add(c)
        # A library's own estimate (cel-go extensions, Kubernetes' library) comes first, as upstream.
        estimate = ESTIMATORS.get(function)
        if estimate is not None:
            own = estimate(CallSite(function, target, args, self._estimate_size))
            if own is not None:
                return CallEstimate(own.cost.add(arg_sum), own.size)
        return self._builtin_cost(node, overload, target, args, arg_costs, arg_sum, arg_exprs)

    def _builtin_cost(self, node: Node, overload: str, target: ArgNode | None, args: list[ArgNode],
                      arg_costs: list[Estimate], arg_sum: Estimate, arg_exprs: list[Node]) -> CallEstimate:
        """cel-go's estimates for its standard functions; anything else costs one unit plus its arguments."""
        def size(n: ArgNode) -> Estimate:
            return n.size if n.size is not None else UNKNOWN

        def scan(n: ArgNode) -> Estimate:
            return size(n).by_factor(STRING_TRAVERSAL_COST_FACTOR)

        if overload == "string_format" and target is not None:
            return CallEstimate(scan(target).add(arg_sum))
        if overload in ("string_to_bytes", "bytes_to_string", "strings_quote") and len(args) == 1:
            s = size(args[0])
            # Go's unsigned arithmetic wraps; upstream does not guard these.
            result = {"string_to_bytes": Estimate(s.lo, s.hi * 4 % _MOD64),
                      "bytes_to_string": Estimate(s.lo // 4, s.hi),
                      "strings_quote": Estimate((s.lo + 2) % _MOD64, (s.hi * 2 + 2) % _MOD64)}[overload]
            return CallEstimate(scan(args[0]).add(arg_sum), result)
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return CallEstimate(scan(args[0]).add(arg_sum))
        if overload == "in_list" and len(args) == 2:
            return CallEstimate(size(args[1]).by_factor(1).add(arg_sum))
        if overload == "matches_string" and target is not None and len(args) == 1:
            # RE2 is linear: string length (+1 so an empty string still costs) times a quarter of the regex length.
            text = size(target).add(fixed(1)).by_factor(STRING_TRAVERSAL_COST_FACTOR)
            regex = size(args[0]).by_factor(REGEX_STRING_LENGTH_COST_FACTOR)
            return CallEstimate(text.mul(regex).add(arg_sum))
        if overload == "contains_string" and target is not None and len(args) == 1:
            return CallEstimate(scan(target).mul(scan(args[0])).add(arg_sum))
        if overload == "logical":
            lhs, rhs = arg_costs
            # The left side always runs, the right may be short-circuited.
            return CallEstimate(Estimate(lhs.lo, lhs.add(rhs).hi))
        if overload == "conditional":
            result = size(args[1]).union(size(args[2]))
            entry = _union_entries(self._entry(arg_exprs[1]), self._entry(arg_exprs[2]))
            if entry is not None:
                self.entries[id(node)] = entry
            cost = arg_costs[0].add(arg_costs[1].union(arg_costs[2]))
            return CallEstimate(cost, result)
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            result = size(args[0]).add(size(args[1]))
            entry = _union_entries(self._entry(arg_exprs[0]), self._entry(arg_exprs[1]))
            if entry is not None:
                self.entries[id(node)] = entry
            if overload == "add_list":
                return CallEstimate(fixed(1).add(arg_sum), result)   # concatenation is O(1)
            return CallEstimate(result.by_factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum), result)
        if overload == "equals" and len(args) == 2:
            smallest = min(size(args[0]).hi, size(args[1]).hi)
            compare = Estimate(1 if smallest > 0 else 0, smallest)
            return CallEstimate(compare.by_factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum))
        return CallEstimate(fixed(1).add(arg_sum))

    # --- comprehensions ---------------------------------------------------------------------------

    def _expand(self, macro: Macro) -> _Comprehension:
        """The comprehension cel-go's parser expands a macro into, with the checker's types for the new nodes."""
        rng = self._type(macro.target)
        var_type = rng.params[0] if rng.kind in ("list", "map") and rng.params else DYN
        pos = macro.pos
        accu_type = {"all": BOOL, "exists": BOOL, "exists_one": INT, "map": list_of(self._type(macro.body)),
                     "filter": list_of(var_type)}[macro.kind]

        def accu() -> Node:
            return self._new(Ident(pos, ACCUMULATOR), accu_type)

        def call(function: str, args: list[Node], t: CelType) -> Node:
            return self._new(Call(pos, function, args), t)

        def lit(value: object, t: CelType) -> Node:
            return self._new(Lit(pos, value), t)

        def append(item: Node) -> Node:
            # @result + [item]
            return call("_+_", [accu(), self._new(ListLit(pos, [item], [False]), accu_type)], accu_type)

        if macro.kind == "all":
            return _Comprehension(macro.target, macro.var, lit(True, BOOL),
                                  call("@not_strictly_false", [accu()], BOOL),
                                  call("_&&_", [accu(), macro.body], BOOL), accu())
        if macro.kind == "exists":
            return _Comprehension(macro.target, macro.var, lit(False, BOOL),
                                  call("@not_strictly_false", [call("!_", [accu()], BOOL)], BOOL),
                                  call("_||_", [accu(), macro.body], BOOL), accu())
        if macro.kind == "exists_one":
            step = call("_?_:_", [macro.body, call("_+_", [accu(), lit(1, INT)], INT), accu()], INT)
            return _Comprehension(macro.target, macro.var, lit(0, INT), lit(True, BOOL), step,
                                  call("_==_", [accu(), lit(1, INT)], BOOL))
        init = self._new(ListLit(pos, [], []), accu_type)
        if macro.kind == "map":
            step = append(macro.body)
            if macro.filter is not None:
                step = call("_?_:_", [macro.filter, step, accu()], accu_type)
        else:
            step = call("_?_:_", [macro.body, append(self._new(Ident(pos, macro.var), var_type)), accu()], accu_type)
        return _Comprehension(macro.target, macro.var, init, lit(True, BOOL), step, accu())

    def _comprehension(self, node: Node, comp: _Comprehension) -> Estimate:
        total = self.cost(comp.iter_range).add(self.cost(comp.accu_init))
        init = comp.accu_init
        self._push(ACCUMULATOR, _Var(self._path(init), self._size(init), self._entry(init)))
        self._push_iter(comp.iter_var, comp.iter_range)
        loop = self.cost(comp.loop_condition)
        step = self.cost(comp.loop_step)
        self._pop(comp.iter_var)
        total = total.add(self.cost(comp.result))
        self._pop(ACCUMULATOR)
        count = self._size_or_unknown(comp.iter_range)
        total = total.add(count.mul(step.add(loop)))
        if isinstance(init, Lit):
            size = self._size(init)
            if size is not None:
                self.sizes[id(node)] = size
        else:
            # map() and filter() build a list at most as long as the range.
            self.sizes[id(node)] = count
            entry = self._entry(comp.loop_step)
            if entry is not None:
                self.entries[id(node)] = entry
        return total

    def _push_iter(self, name: str, rng: Node) -> None:
        # A list binds its items, a map (or dyn) its keys; a literal range knows their sizes.
        entry = self._entry(rng)
        container = entry.container if entry is not None else self._type(rng).kind
        base = self._path(rng) or ()
        if container == "list":
            self._push(name, _Var((*base, "@items"), entry.val if entry is not None else None, None))
        else:
            self._push(name, _Var((*base, "@keys"), entry.key if entry is not None else None, None))

    # --- bookkeeping ------------------------------------------------------------------------------

    def _new(self, node: Node, t: CelType) -> Node:
        self._synthetic.append(node)
        self.types[id(node)] = t
        return node

    def _push(self, name: str, var: _Var) -> None:
        self.scopes.setdefault(name, []).append(var)

    def _pop(self, name: str) -> None:
        self.scopes[name].pop()

    def _local(self, name: str) -> _Var | None:
        stack = self.scopes.get(name)
        return stack[-1] if stack else None

    def _type(self, node: Node) -> CelType:
        return self.types.get(id(node), DYN)

    def _path(self, node: Node) -> Path | None:
        if isinstance(node, Ident):
            var = self._local(node.name)
            if var is not None:
                return var.path
        return self.paths.get(id(node))

    def _entry(self, node: Node) -> _Entry | None:
        entry = self.entries.get(id(node))
        if entry is None and isinstance(node, Ident):
            var = self._local(node.name)
            return var.entry if var is not None else None
        return entry

    def _size(self, node: Node) -> Estimate | None:
        """cel-go's computeSize: computed, literal, from the path, scalar, or a local variable's."""
        known = self.sizes.get(id(node))
        if known is not None:
            return known
        literal = _literal_size(node)
        if literal is not None:
            return literal
        path = self._path(node)
        if path:
            found = self.sizer(path)
            if found is not None:
                self.sizes[id(node)] = found
                return found
        if _is_scalar(self._type(node)):
            return fixed(1)
        if isinstance(node, Ident):
            var = self._local(node.name)
            if var is not None and var.size is not None:
                return var.size
        return None

    def _size_or_unknown(self, node: Node) -> Estimate:
        size = self._size(node)
        return size if size is not None else UNKNOWN

    def _copy_sizes(self, dst: Node, src: Node) -> None:
        size = self._size(src)
        if size is not None:
            self.sizes[id(dst)] = size
        entry = self._entry(src)
        if entry is not None:
            self.entries[id(dst)] = entry

    def _ast_node(self, node: Node) -> ArgNode:
        path = self._path(node)
        if path and path[0] in _ACCUMULATORS:
            path = None   # only paths rooted at declared variables are handed out
        literal = isinstance(node, Lit)
        return ArgNode(self._type(node), path, self._size(node), node.value if literal else None, literal)

    def _estimate_size(self, node: ArgNode) -> Estimate | None:
        return self.sizer(node.path) if node.path else None
