"""Field selectors: the ``fieldSelector`` query grammar, its 400 wording, and matching objects against it.

Owns the grammar (apimachinery ``pkg/fields``) and the shape of a kind's selectable fields
(:class:`SelectableFields`); which fields a kind offers is the kind's own business, kept beside its
strategy in the API server as kube keeps it (each registry's ``GetAttrs`` and field-label conversion).
The API server hands the kind's fields to :func:`parse_field_selector`; this module never imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import StatusError, bad_request
from apimachinery.gofmt import go_quote

FieldGetter = Callable[[Mapping[str, Any]], str]


def field_at(*keys: str) -> FieldGetter:
    """The string at ``keys`` (a missing field reads as "", as a Go zero value)."""
    def get(obj: Mapping[str, Any]) -> str:
        node: Any = obj
        for key in keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        return "" if node is None else str(node)
    return get


def go_bool_at(*keys: str) -> FieldGetter:
    """The bool at ``keys`` as Go formats it ("true" / "false"; missing is false)."""
    def get(obj: Mapping[str, Any]) -> str:
        node: Any = obj
        for key in keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        return "true" if node is True else "false"
    return get


NAME_FIELDS: Mapping[str, FieldGetter] = {"metadata.name": field_at("metadata", "name")}
NAME_NAMESPACE_FIELDS: Mapping[str, FieldGetter] = {**NAME_FIELDS,
                                                    "metadata.namespace": field_at("metadata", "namespace")}


# Compared and hashed by identity: a kind's table is one object, built once beside its strategy.
@dataclass(frozen=True, eq=False)
class SelectableFields:
    """The field labels a kind's objects can be selected on, each with how to read it from an object."""

    getters: Mapping[str, FieldGetter]
    # Kinds with their own field-label conversion reject other fields with that conversion's wording; the
    # rest use the generic conversion's message.
    custom: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.getters)


# What every kind without its own conversion offers (custom resources included).
DEFAULT_FIELDS = SelectableFields(NAME_NAMESPACE_FIELDS, custom=False)


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str  # "=", "==" or "!="
    value: str

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{'!=' if self.operator == '!=' else '='}{escaped}"


@dataclass(frozen=True)
class FieldSelector:
    fields: SelectableFields
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        getters = self.fields.getters
        for r in self.requirements:
            equal = getters[r.field](obj) == r.value
            if equal if r.operator == "!=" else not equal:
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact_value(self, field: str) -> str | None:
        """The value ``field`` must equal (``field=v`` / ``field==v``), e.g. for a point lookup by name."""
        for r in self.requirements:
            if r.field == field and r.operator != "!=":
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not escaped; escapes stay in the terms."""
    if not text:
        return []
    terms: list[str] = []
    start, escaped = 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


_TERM_OPERATORS = ("!=", "==", "=")  # "==" before "=" so no "=" is left on the value


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in _TERM_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def _unescape(value: str) -> str:
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # Go prints the offending rune as its code point.
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str, fields: SelectableFields) -> FieldSelector:
    """Parse the ``fieldSelector`` query syntax over a kind's ``fields``; an empty string selects all."""
    requirements: list[FieldRequirement] = []
    # Upstream sorts the raw terms; exact_value() returns the first match in that order.
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, raw = split
        requirements.append(FieldRequirement(field, op, _unescape(raw)))
    for r in requirements:
        if r.field not in fields.getters:
            raise _unsupported_field(r.field, fields)
    return FieldSelector(fields, tuple(requirements))


def _unsupported_field(field: str, fields: SelectableFields) -> StatusError:
    if fields.custom:
        return bad_request(f"field label not supported: {field}")
    return bad_request(f'{go_quote(field)} is not a known field selector: only "metadata.name", '
                       '"metadata.namespace"')
