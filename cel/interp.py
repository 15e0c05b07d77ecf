"""The metered CEL evaluator: a checked AST turned into nested Python closures.

Owns evaluation semantics that are not plain function calls — variables, field selection, indexing,
``has()``, optional chaining, aggregate literals, the short-circuiting ``&&``/``||``/``?:`` with
CEL's commutative error absorption, and the comprehension macros — and charges the
:class:`~cel.types.Meter` one unit per step (constants are free, as in cel-go). Closures
hold no per-evaluation state, so one compiled program may run in many threads at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cel.parser import Call, Ident, Index, ListLit, Lit, Macro, MapLit, Node, Select, UInt
from cel.types import (
    NONE,
    REGISTRY,
    CostExceeded,
    EvalError,
    Meter,
    NoOverload,
    Opaque,
    Optional,
    TypeValue,
    equal,
    is_number,
    type_name,
)

Activation = dict[str, Any]
Program = Callable[[Activation, Meter], Any]

_TYPE_NAMES = {"int", "uint", "double", "string", "bytes", "bool", "list", "map", "null_type", "type"}


def compile_node(node: Node) -> Program:
    if isinstance(node, Lit):
        value = node.value
        return lambda act, m: value
    if isinstance(node, Ident):
        return _ident(node.name)
    if isinstance(node, Select):
        return _select(node)
    if isinstance(node, Index):
        return _index(node)
    if isinstance(node, Call):
        return _call(node)
    if isinstance(node, ListLit):
        return _list(node)
    if isinstance(node, MapLit):
        return _map(node)
    if isinstance(node, Macro):
        return _macro(node)
    raise TypeError(f"unknown CEL node {node!r}")


def _ident(name: str) -> Program:
    type_value = TypeValue(name) if name in _TYPE_NAMES else None

    def ident(act: Activation, m: Meter) -> Any:
        m.charge(1)
        try:
            return act[name]
        except KeyError:
            if type_value is not None:
                return type_value
            raise EvalError(f"no such attribute(s): {name}") from None
    return ident


def select_field(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        try:
            return value[name]
        except KeyError:
            raise EvalError(f"no such key: {name}") from None
    raise EvalError(f"no such key: {name}" if value is None else f"type '{type_name(value)}' does not support field "
                    f"selection")


def _select(node: Select) -> Program:
    operand = compile_node(node.operand)
    name = node.field
    if node.test_only:
        def has(act: Activation, m: Meter) -> bool:
            value = operand(act, m)
            m.charge(1)
            if isinstance(value, Optional):
                value = value.value if value.has else {}
            if isinstance(value, dict):
                return name in value
            raise EvalError(f"invalid type for field selection: {type_name(value)}")
        return has
    optional = node.optional

    def select(act: Activation, m: Meter) -> Any:
        value = operand(act, m)
        m.charge(1)
        if isinstance(value, Optional):
            if not value.has:
                return NONE
            inner = value.value
            return Optional(True, inner[name]) if isinstance(inner, dict) and name in inner else (
                NONE if isinstance(inner, dict) else Optional(True, select_field(inner, name)))
        if optional:
            if isinstance(value, dict):
                return Optional(True, value[name]) if name in value else NONE
            raise EvalError(f"invalid type for field selection: {type_name(value)}")
        return select_field(value, name)
    return select


def index_value(value: Any, key: Any) -> Any:
    if isinstance(value, list):
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        if not isinstance(key, int) or isinstance(key, bool):
            raise NoOverload("_[_]", (value, key))
        if key < 0 or key >= len(value):
            raise EvalError(f"index out of bounds: {key}")
        return value[key]
    if isinstance(value, dict):
        if isinstance(key, list | dict):
            raise NoOverload("_[_]", (value, key))
        try:
            found = key in value
        except TypeError:
            raise NoOverload("_[_]", (value, key)) from None
        if found:
            return value[key]
        raise EvalError(f"no such key: {key}")
    raise NoOverload("_[_]", (value, key))


def _index(node: Index) -> Program:
    operand = compile_node(node.operand)
    key_of = compile_node(node.index)
    optional = node.optional

    def index(act: Activation, m: Meter) -> Any:
        value = operand(act, m)
        key = key_of(act, m)
        m.charge(1)
        if isinstance(value, Optional):
            if not value.has:
                return NONE
            value, optional_result = value.value, True
        else:
            optional_result = optional
        if optional_result:
            try:
                return Optional(True, index_value(value, key))
            except NoOverload:
                raise
            except EvalError:
                return NONE
        return index_value(value, key)
    return index


def _list(node: ListLit) -> Program:
    elems = [compile_node(e) for e in node.elems]
    optional = list(node.optional)

    def make_list(act: Activation, m: Meter) -> list[Any]:
        m.charge(1)
        out = []
        for elem, opt in zip(elems, optional, strict=True):
            value = elem(act, m)
            if opt:
                if not isinstance(value, Optional):
                    raise EvalError("cannot initialize optional list element from non-optional value")
                if value.has:
                    out.append(value.value)
            else:
                out.append(value)
        return out
    return make_list


def _map(node: MapLit) -> Program:
    entries = [(compile_node(k), compile_node(v), opt) for k, v, opt in node.entries]

    def make_map(act: Activation, m: Meter) -> dict[Any, Any]:
        m.charge(1)
        out: dict[Any, Any] = {}
        for key_of, value_of, opt in entries:
            key = key_of(act, m)
            if isinstance(key, (float, list | dict | Optional)):
                raise EvalError(f"unsupported key type: {type_name(key)}")
            if key in out:
                raise EvalError(f"Failed with repeated key: {key}")
            value = value_of(act, m)
            if opt:
                if not isinstance(value, Optional):
                    raise EvalError("cannot initialize optional entry from non-optional value")
                if value.has:
                    out[key] = value.value
            else:
                out[key] = value
        return out
    return make_map


def _as_bool(value: Any, fn: str) -> bool:
    if isinstance(value, bool):
        return value
    raise NoOverload(fn, (value,))


def _call(node: Call) -> Program:
    fn = node.function
    if fn == "_&&_" or fn == "_||_":
        return _logic(node, fn == "_&&_")
    if fn == "_?_:_":
        cond, then, other = (compile_node(a) for a in node.args)

        def conditional(act: Activation, m: Meter) -> Any:
            m.charge(1)
            return then(act, m) if _as_bool(cond(act, m), "_?_:_") else other(act, m)
        return conditional
    fndef = REGISTRY.get(fn)
    if fndef is None:
        raise EvalError(f"no such function: {fn}")
    impl = fndef.impl
    args = [compile_node(a) for a in node.args]
    if node.target is not None:
        args.insert(0, compile_node(node.target))
    if len(args) == 1:
        only = args[0]

        def call1(act: Activation, m: Meter) -> Any:
            value = only(act, m)
            m.charge(1)
            return impl(m, value)
        return call1
    if len(args) == 2:
        first, second = args

        def call2(act: Activation, m: Meter) -> Any:
            a = first(act, m)
            b = second(act, m)
            m.charge(1)
            return impl(m, a, b)
        return call2

    def call(act: Activation, m: Meter) -> Any:
        values = [a(act, m) for a in args]
        m.charge(1)
        return impl(m, *values)
    return call


def _logic(node: Call, is_and: bool) -> Program:
    left, right = (compile_node(a) for a in node.args)
    fn = "_&&_" if is_and else "_||_"
    # `false && x` is false and `true || x` is true whatever x is, even an error, on either side.
    decisive = not is_and

    def logic(act: Activation, m: Meter) -> bool:
        m.charge(1)
        err: EvalError | None = None
        try:
            lv = left(act, m)
            if not isinstance(lv, bool):
                raise NoOverload(fn, (lv,))
            if lv is decisive:
                return decisive
        except CostExceeded:
            raise
        except EvalError as exc:
            err = exc
        rv = right(act, m)
        if not isinstance(rv, bool):
            if err is not None:
                raise err
            raise NoOverload(fn, (rv,))
        if rv is decisive:
            return decisive
        if err is not None:
            raise err
        return not decisive
    return logic


def _iterate(value: Any, kind: str) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return list(value.keys())
    raise EvalError(f"cannot range over {type_name(value)} in {kind}()")


def _macro(node: Macro) -> Program:
    target = compile_node(node.target)
    body = compile_node(node.body)
    var, kind = node.var, node.kind
    flt = compile_node(node.filter) if node.filter is not None else None

    def run(act: Activation, m: Meter) -> Any:
        items = _iterate(target(act, m), kind)
        m.charge(1)
        inner = dict(act)
        if kind in ("all", "exists"):
            decisive = kind == "exists"
            err: EvalError | None = None
            for item in items:
                m.tick()
                inner[var] = item
                try:
                    result = body(inner, m)
                except CostExceeded:
                    raise
                except EvalError as exc:
                    err = err or exc
                    continue
                if not isinstance(result, bool):
                    err = err or NoOverload("_&&_" if kind == "all" else "_||_", (result,))
                    continue
                if result is decisive:
                    return decisive
            if err is not None:
                raise err
            return not decisive
        if kind == "exists_one":
            count = 0
            for item in items:
                m.tick()
                inner[var] = item
                result = body(inner, m)
                if not isinstance(result, bool):
                    raise NoOverload("exists_one", (result,))
                count += result
            return count == 1
        out = []
        for item in items:
            m.tick()
            inner[var] = item
            if kind == "filter":
                keep = body(inner, m)
                if not isinstance(keep, bool):
                    raise NoOverload("filter", (keep,))
                if keep:
                    out.append(item)
                continue
            if flt is not None:
                keep = flt(inner, m)
                if not isinstance(keep, bool):
                    raise NoOverload("map", (keep,))
                if not keep:
                    continue
            out.append(body(inner, m))
        return out
    return run


def plain(value: Any) -> Any:
    """A result as plain Python: uint → int, optional → its value or None, library objects → str."""
    if isinstance(value, UInt):
        return int(value)
    if isinstance(value, Optional):
        return plain(value.value) if value.has else None
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, TypeValue):
        return value.name
    if isinstance(value, Opaque):
        return str(value)
    return value


__all__ = ["Program", "compile_node", "equal", "is_number", "plain"]
