"""Label selectors: parsing the ``labelSelector`` query string and ``metav1.LabelSelector`` objects, and
matching label sets against them.

Owns the label-selector grammar, its error wording and the one matcher every caller uses. The behaviour
follows apimachinery (``pkg/labels``, ``LabelSelectorAsSelector``), because clients (kubectl, client-go
informers, controllers) depend on both the matching rules and the 400 messages. Field selectors are
:mod:`apimachinery.fieldselectors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from apimachinery.errors import bad_request
from apimachinery.gofmt import go_quote
from apimachinery.names import is_label_value, is_qualified_name

_INT64 = re.compile(r"[+-]?[0-9]+")


def _go_json_strings(values: list[str] | None) -> str:
    if not values:
        return "null"  # apimachinery passes a nil slice here
    return "[" + ",".join(go_quote(v) for v in values) + "]"


def _invalid(path: str, bad_value: str, detail: str) -> str:
    return f"{path}: Invalid value: {bad_value}: {detail}"


def _aggregate(errors: list[str]) -> str:
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _parse_int64(text: str) -> int | None:
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


# ----------------------------------------------------------------------------------------------
# Label selectors


class Op(StrEnum):
    """Requirement operators, spelled as apimachinery's ``selection.Operator``."""

    IN = "in"
    NOT_IN = "notin"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_BINARY_OPS = (Op.IN, Op.NOT_IN, Op.EQUALS, Op.DOUBLE_EQUALS, Op.NOT_EQUALS, Op.GREATER_THAN, Op.LESS_THAN)


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Op
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator in (Op.IN, Op.EQUALS, Op.DOUBLE_EQUALS):
            return present and labels[self.key] in self.values
        if self.operator in (Op.NOT_IN, Op.NOT_EQUALS):
            # Upstream: a missing label satisfies "not equal" / "not in".
            return not present or labels[self.key] not in self.values
        if self.operator is Op.EXISTS:
            return present
        if self.operator is Op.DOES_NOT_EXIST:
            return not present
        if not present or len(self.values) != 1:
            return False
        have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if self.operator is Op.GREATER_THAN else have < want

    def __str__(self) -> str:
        if self.operator is Op.EXISTS:
            return self.key
        if self.operator is Op.DOES_NOT_EXIST:
            return "!" + self.key
        values = ",".join(sorted(self.values))
        if self.operator in (Op.IN, Op.NOT_IN):
            return f"{self.key} {self.operator.value} ({values})"
        symbol = {Op.GREATER_THAN: ">", Op.LESS_THAN: "<"}.get(self.operator, self.operator.value)
        return f"{self.key}{symbol}{values}"


def _new_requirement(key: str, op: Op, values: list[str]) -> Requirement:
    """apimachinery ``NewRequirement``: the checks and the error text of a single requirement."""
    errs: list[str] = []
    if key_errs := is_qualified_name(key):
        errs.append(_invalid("key", go_quote(key), "; ".join(key_errs)))
    if op in (Op.IN, Op.NOT_IN):
        if not values:
            errs.append(_invalid("values", _go_json_strings(values),
                                 "for 'in', 'notin' operators, values set can't be empty"))
    elif op in (Op.EQUALS, Op.DOUBLE_EQUALS, Op.NOT_EQUALS):
        if len(values) != 1:
            errs.append(_invalid("values", _go_json_strings(values),
                                 "exact-match compatibility requires one single value"))
    elif op in (Op.EXISTS, Op.DOES_NOT_EXIST):
        if values:
            errs.append(_invalid("values", _go_json_strings(values),
                                 "values set must be empty for exists and does not exist"))
    else:
        if len(values) != 1:
            errs.append(_invalid("values", _go_json_strings(values),
                                 "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(values):
            if _parse_int64(v) is None:
                errs.append(_invalid(f"values[{i}]", go_quote(v),
                                     "for 'Gt', 'Lt' operators, the value must be an integer"))
    for i, v in enumerate(values):
        if value_errs := is_label_value(v):
            errs.append(_invalid(f"values[{i}][{key}]", go_quote(v), "; ".join(value_errs)))
    if errs:
        raise _SelectorSyntaxError(_aggregate(errs))
    # Canonical (sorted, distinct) values, so equal selectors compare and hash equal.
    return Requirement(key, op, tuple(sorted(set(values))))


@dataclass(frozen=True)
class LabelSelector:
    """ANDed requirements; ``nothing`` is the selector of a nil ``metav1.LabelSelector``."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (``Nothing`` is not empty, as upstream)."""
        return not self.nothing and not self.requirements

    def requires_exact_match(self, key: str) -> str | None:
        """The one value ``key`` must have (``key=v``, ``key==v``, ``key in (v)``), else None."""
        for r in self.requirements:
            if r.key == key:
                exact = r.operator in (Op.EQUALS, Op.DOUBLE_EQUALS, Op.IN) and len(r.values) == 1
                return r.values[0] if exact else None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)


class _SelectorSyntaxError(Exception):
    pass


class _Tok(Enum):
    EOS = "end of string"
    CLOSE = ")"
    COMMA = ","
    NOT = "!"
    DOUBLE_EQUALS = "=="
    EQUALS = "="
    GT = ">"
    IDENT = "identifier"
    IN = "in"
    LT = "<"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    OPEN = "("


_SYMBOLS = {"(": _Tok.OPEN, ")": _Tok.CLOSE, ",": _Tok.COMMA, "!": _Tok.NOT, "=": _Tok.EQUALS,
            ">": _Tok.GT, "<": _Tok.LT, "==": _Tok.DOUBLE_EQUALS, "!=": _Tok.NOT_EQUALS}
_KEYWORDS = {"in": _Tok.IN, "notin": _Tok.NOT_IN}
_WHITESPACE = " \t\r\n"
_SPECIAL = "=!(),><"


def _lex(text: str) -> list[tuple[_Tok, str]]:
    items: list[tuple[_Tok, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append((_Tok.EOS, ""))
            return items
        if text[pos] in _SPECIAL:
            # The longest run of operator characters that still forms a token ("!=", "==").
            symbol = text[pos]
            if text[pos:pos + 2] in _SYMBOLS:
                symbol = text[pos:pos + 2]
            items.append((_SYMBOLS[symbol], symbol))
            pos += len(symbol)
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        items.append((_KEYWORDS.get(word, _Tok.IDENT), word))


class _LabelParser:
    """Recursive descent over the token list, one method per rule of the upstream grammar."""

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def _peek(self, values: bool = True) -> tuple[_Tok, str]:
        tok, lit = self.items[min(self.pos, len(self.items) - 1)]
        # In value position "in" and "notin" are ordinary words ("x in (in)").
        if values and tok in (_Tok.IN, _Tok.NOT_IN):
            tok = _Tok.IDENT
        return tok, lit

    def _next(self, values: bool = True) -> tuple[_Tok, str]:
        item = self._peek(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self._peek()
            if tok is _Tok.EOS:
                return requirements
            if tok not in (_Tok.IDENT, _Tok.NOT):
                raise _SelectorSyntaxError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except _SelectorSyntaxError as e:
                raise _SelectorSyntaxError(f"unable to parse requirement: {e}") from None
            tok, lit = self._next()
            if tok is _Tok.EOS:
                return requirements
            if tok is not _Tok.COMMA:
                raise _SelectorSyntaxError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self._peek()
            if tok not in (_Tok.IDENT, _Tok.NOT):
                raise _SelectorSyntaxError(f"found '{lit}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        negated = False
        tok, lit = self._next()
        if tok is _Tok.NOT:
            negated = True
            tok, lit = self._next()
        if tok is not _Tok.IDENT:
            raise _SelectorSyntaxError(f"found '{lit}', expected: identifier")
        key = lit
        if errs := is_qualified_name(key):
            # The parser validates the key with a nil field path, which Go prints as "<nil>".
            raise _SelectorSyntaxError(_invalid("<nil>", go_quote(key), "; ".join(errs)))
        if negated:
            return _new_requirement(key, Op.DOES_NOT_EXIST, [])
        if self._peek()[0] in (_Tok.EOS, _Tok.COMMA):
            return _new_requirement(key, Op.EXISTS, [])
        op = self._operator()
        values = self._value_set() if op in (Op.IN, Op.NOT_IN) else self._exact_value()
        return _new_requirement(key, op, sorted(values))

    def _operator(self) -> Op:
        tok, lit = self._next(values=False)
        ops = {_Tok.IN: Op.IN, _Tok.EQUALS: Op.EQUALS, _Tok.DOUBLE_EQUALS: Op.DOUBLE_EQUALS,
               _Tok.GT: Op.GREATER_THAN, _Tok.LT: Op.LESS_THAN, _Tok.NOT_IN: Op.NOT_IN,
               _Tok.NOT_EQUALS: Op.NOT_EQUALS}
        if tok not in ops:
            expected = ", ".join(o.value for o in _BINARY_OPS)
            raise _SelectorSyntaxError(f"found '{lit}', expected: {expected}")
        return ops[tok]

    def _value_set(self) -> set[str]:
        tok, lit = self._next()
        if tok is not _Tok.OPEN:
            raise _SelectorSyntaxError(f"found '{lit}' expected: '('")
        tok, lit = self._peek()
        if tok is _Tok.CLOSE:
            self._next()
            return {""}
        if tok not in (_Tok.IDENT, _Tok.COMMA):
            raise _SelectorSyntaxError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self._identifier_list()
        self._next()  # the ")" the list stopped at
        return values

    def _identifier_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self._next()
            if tok is _Tok.IDENT:
                values.add(lit)
                tok, lit = self._peek()
                if tok is _Tok.CLOSE:
                    return values
                if tok is not _Tok.COMMA:
                    raise _SelectorSyntaxError(f"found '{lit}', expected: ',' or ')'")
            elif tok is _Tok.COMMA:
                # Empty items ("(,a)", "(a,)", "(a,,b)") stand for the empty value.
                if not values:
                    values.add("")
                tok, _ = self._peek()
                if tok is _Tok.CLOSE:
                    values.add("")
                    return values
                if tok is _Tok.COMMA:
                    self._next()
                    values.add("")
            else:
                raise _SelectorSyntaxError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._peek()[0] in (_Tok.EOS, _Tok.COMMA):
            return {""}
        tok, lit = self._next()
        if tok is not _Tok.IDENT:
            raise _SelectorSyntaxError(f"found '{lit}', expected: identifier")
        return {lit}


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the ``labelSelector`` query syntax; an empty string selects everything."""
    try:
        requirements = _LabelParser(text).parse()
    except _SelectorSyntaxError as e:
        raise bad_request(str(e)) from None
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


def _go_string(value: Any) -> str:
    """A JSON value decoded into a Go string field: null is the empty string."""
    return "" if value is None else str(value)


_OBJECT_OPS = {"In": Op.IN, "NotIn": Op.NOT_IN, "Exists": Op.EXISTS, "DoesNotExist": Op.DOES_NOT_EXIST}


def label_selector_from_object(sel: Mapping[str, Any] | None) -> LabelSelector:
    """``metav1.LabelSelectorAsSelector``: nil selects nothing, ``{}`` selects everything."""
    if sel is None:
        return NOTHING
    match_labels = sel.get("matchLabels") or {}
    expressions = sel.get("matchExpressions") or []
    if not match_labels and not expressions:
        return EVERYTHING
    requirements: list[Requirement] = []
    try:
        for key in sorted(match_labels):
            requirements.append(_new_requirement(str(key), Op.EQUALS, [_go_string(match_labels[key])]))
        for expr in expressions:
            # A null item decodes as Go's zero requirement, whose empty operator is refused below.
            expr = expr if isinstance(expr, Mapping) else {}
            operator = _go_string(expr.get("operator"))
            if operator not in _OBJECT_OPS:
                raise _SelectorSyntaxError(f"{go_quote(operator)} is not a valid label selector operator")
            requirements.append(_new_requirement(_go_string(expr.get("key")), _OBJECT_OPS[operator],
                                                 [_go_string(v) for v in expr.get("values") or []]))
    except _SelectorSyntaxError as e:
        raise bad_request(str(e)) from None
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))
