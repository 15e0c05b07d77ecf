"""CEL for CRD validation rules and admission policies: compile once, evaluate many times, never unbounded.

Engine: our own small interpreter (parser, checker, closure evaluator) rather than either PyPI engine.
``cel-python`` (celpy) is pure Python but has no optional syntax (``a.?b``, ``[?k]``), no type checker
and a slow lark tree walk; ``common-expression-language`` (Rust) is fast and takes Python callbacks
but cannot parse ``.?`` either, checks nothing at compile time, and once its Rust loop runs it cannot
be cut off — a nested ``all`` over big lists would pin a server thread. Ours charges cel-go-like
cost units at every step and checks a wall clock, so evaluation always stops; RE2 keeps regexes linear.
The language knows nothing of servers: it must never import anything but ``apimachinery``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cel import k8s as _k8s  # noqa: F401  (registers the Kubernetes libraries)
from cel import k8s_cost as _k8s_cost  # noqa: F401  (Kubernetes' cost estimates for them)
from cel import stdlib as _stdlib  # noqa: F401  (registers the standard library)
from cel.checker import Checker, CheckError
from cel.cost import Estimator, TypeSizer
from cel.interp import Program, compile_node, plain
from cel.parser import Call, CelSyntaxError, Lit, Node, format_issue, parse
from cel.stdlib.regex import check_regex
from cel.types import DYN, HINTS, CelType, CostExceeded, EvalError, Meter, Optional

# kube's request-size fallbacks for an unbounded string (less its quotes) and list (of "" items, with commas).
UNBOUNDED_STRING = 3 * 1024 * 1024 - 2
UNBOUNDED_LIST = UNBOUNDED_STRING // 3
# kube's PerCallLimit; one unit here is one evaluation step, as in cel-go's runtime cost.
PER_CALL_LIMIT = 1_000_000
# Hard wall-clock cut-off per evaluation, a backstop behind the cost counter (slow machine, a cost
# model gap): no single rule may hold a worker thread longer than this.
EVAL_TIME_LIMIT_SECONDS = 2.0


class CelCompileError(Exception):
    """A rule that does not compile; ``str()`` is kube's wording (``compilation failed: ERROR: <input>:1:5: …``)."""

    def __init__(self, detail: str, issues: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        # Just the ``ERROR: <input>:L:C: …`` lines, for callers that add their own prefix.
        self.issues = issues or detail


class CelEvalError(Exception):
    """A runtime error (no such key, no such overload, division by zero …), worded as cel-go words it."""


class CelCostExceeded(CelEvalError):
    """Evaluation was cut off by the cost limit or the wall-clock limit."""


@dataclass
class CompiledExpression:
    source: str
    output_type: str = "dyn"                                  # the checker's result type, e.g. "bool"
    references: frozenset[str] = frozenset()                  # declared variables the expression uses
    _program: Program | None = field(default=None, repr=False)
    _root: Node | None = field(default=None, repr=False)
    _types: dict[int, CelType] = field(default_factory=dict, repr=False)
    _variables: dict[str, CelType] = field(default_factory=dict, repr=False)   # the declarations it was checked with

    def evaluate(self, activation: Mapping[str, Any], *, cost_limit: int = PER_CALL_LIMIT) -> Any:
        return self.evaluate_with_cost(activation, cost_limit=cost_limit)[0]

    def evaluate_with_cost(self, activation: Mapping[str, Any], *, cost_limit: int = PER_CALL_LIMIT,
                           keep_optional: bool = False) -> tuple[Any, int]:
        """The result as plain Python and the cost it took; raises :class:`CelCostExceeded` past the limit."""
        if self._program is None:
            raise CelEvalError("expression was not compiled")
        meter = Meter(cost_limit, EVAL_TIME_LIMIT_SECONDS)
        try:
            result = self._program(dict(activation), meter)
        except CostExceeded as exc:
            raise CelCostExceeded(str(exc)) from None
        except EvalError as exc:
            raise CelEvalError(str(exc)) from None
        except RecursionError:
            raise CelEvalError("max recursion depth exceeded") from None
        if keep_optional and isinstance(result, Optional):
            return result, meter.cost
        return plain(result), meter.cost


def compile_expression(source: str, variables: Mapping[str, str | None]) -> CompiledExpression:
    """Parse, check and prepare ``source``; variables map a name to a type hint (``"object"``, ``"int"`` …)."""
    return compile_typed(source, {name: HINTS.get(hint or "dyn", DYN) for name, hint in variables.items()})


def compile_typed(source: str, variables: Mapping[str, CelType]) -> CompiledExpression:
    """:func:`compile_expression` with full static types (the CRD schema's, with size bounds)."""
    try:
        root = parse(source)
    except CelSyntaxError as exc:
        issues = format_issue(source, exc.offset, exc.message)
        raise CelCompileError(f"compilation failed: {issues}", issues) from None
    except RecursionError:
        issues = format_issue(source, 0, "expression recursion limit exceeded")
        raise CelCompileError(f"compilation failed: {issues}", issues) from None
    checker = Checker(variables)
    try:
        result_type = checker.run(root)
    except CheckError as exc:
        issues = "\n".join(format_issue(source, pos, msg) for pos, msg in exc.issues)
        raise CelCompileError(f"compilation failed: {issues}", issues) from None
    _check_constant_regexes(root)
    return CompiledExpression(source, str(result_type), frozenset(checker.references), compile_node(root), root,
                              checker.types, dict(variables))


def _check_constant_regexes(node: Node) -> None:
    for call in _walk(node):
        if isinstance(call, Call) and call.function in ("matches", "find", "findAll"):
            pattern = call.args[0] if call.target is not None else call.args[-1] if call.args else None
            if isinstance(pattern, Lit) and isinstance(pattern.value, str):
                problem = check_regex(pattern.value)
                if problem:
                    raise CelCompileError(f"program instantiation failed: {problem}")


def _walk(node: Node) -> list[Node]:
    out = [node]
    for value in vars(node).values():
        if isinstance(value, Node):
            out.extend(_walk(value))
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Node):
                    out.extend(_walk(item))
                elif isinstance(item, tuple):
                    out.extend(n for part in item if isinstance(part, Node) for n in _walk(part))
    return out


def estimated_cost(compiled: CompiledExpression, max_list_size: int | None,
                   max_string_length: int | None) -> int | None:
    """Worst-case cost of one evaluation; sizes the declarations leave unbounded use the given maxima
    (or, when None, the largest a request body can hold, as kube does)."""
    if compiled._root is None:
        return None
    sizer = TypeSizer(compiled._variables, UNBOUNDED_LIST if max_list_size is None else max_list_size,
                      UNBOUNDED_STRING if max_string_length is None else max_string_length)
    return Estimator(compiled._types, sizer).estimate(compiled._root).hi


__all__ = ["PER_CALL_LIMIT", "CelCompileError", "CelCostExceeded", "CelEvalError", "CompiledExpression",
           "compile_expression", "estimated_cost"]
