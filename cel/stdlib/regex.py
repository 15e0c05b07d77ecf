"""CEL's regular expressions: the standard ``matches`` and Kubernetes' ``find`` and ``findAll``.

Patterns are RE2 (linear time, the syntax cel-go uses), never Python's backtracking ``re``, compiled
once and cached; a constant pattern that does not compile is reported at compile time.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

from cel.stdlib.arguments import is_int, require_strings
from cel.types import EvalError, Meter, NoOverload, register, size_cost

# RE2 logs every pattern it refuses to stderr; a refusal here is the expression's error, not an incident.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@functools.lru_cache(maxsize=512)
def compile_regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        raise EvalError(f"error parsing regexp: {exc}") from None


def check_regex(pattern: str) -> str | None:
    """The error a constant pattern will raise, for reporting it at compile time as cel-go does."""
    try:
        compile_regex(pattern)
    except EvalError as exc:
        return str(exc)
    return None


def _matches(m: Meter, s: Any, pattern: Any) -> bool:
    require_strings("matches", s, pattern)
    m.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    return compile_regex(pattern).search(s) is not None


def _find(m: Meter, s: Any, pattern: Any) -> str:
    require_strings("find", s, pattern)
    m.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    found = compile_regex(pattern).search(s)
    return found.group(0) if found else ""


def _find_all(m: Meter, s: Any, pattern: Any, limit: Any = -1) -> list[str]:
    require_strings("findAll", s, pattern)
    if not is_int(limit):
        raise NoOverload("findAll", (s, pattern, limit))
    m.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    if limit == 0:
        return []
    out = []
    for found in compile_regex(pattern).finditer(s):
        out.append(found.group(0))
        if 0 < limit <= len(out):
            break
    return out


register("matches", _matches, sigs=("string,string->bool",), member=("string,string->bool",))
register("find", _find, member=("string,string->string",))
register("findAll", _find_all, member=("string,string->list(string)", "string,string,int->list(string)"))
