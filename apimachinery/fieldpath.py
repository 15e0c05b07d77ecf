"""Field paths and field sets as structured-merge-diff writes them, and Go's JSON string encoding.

Owns:

* :func:`go_json_string`, a string as Go JSON encoders write it (``encoding/json``, or the
  json-iterator dialect structured-merge-diff uses), and :func:`go_json`, the compact JSON that
  key and value path elements embed;
* :class:`PathElement` and :data:`Path`, their structured-merge-diff order and :func:`format_path`,
  the human form conflict messages use;
* :class:`FieldSet`, a set of field paths with the ``FieldsV1`` wire format (``f:``/``k:``/``v:``/
  ``i:`` keys, ``.`` for a node that is itself a member), serialised byte for byte as
  structured-merge-diff does, so sets read from clients and written back compare equal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

import orjson

# ----------------------------------------------------------------------------------------------
# JSON strings exactly as Go writes them: HTML-safe (``<``, ``>``, ``&`` as ``\u003c`` …), U+2028
# and U+2029 escaped, other control characters as ``\u00XX``. Two dialects differ in ``\b`` and
# ``\f``: encoding/json has written them as ``\b`` / ``\f`` since Go 1.22; json-iterator (what
# structured-merge-diff writes path elements with) keeps the older ``\u0008`` / ``\u000c``.
# A Python string can hold a lone surrogate (JSON ``"\ud800"`` decodes to one); Go's decoders
# turn it into U+FFFD, which the encoders then write as is, so it is written as U+FFFD here.

_JSONITER_ESCAPES = {
    **{chr(c): f"\\u{c:04x}" for c in range(0x20)},
    '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
    "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
}
_ENCODING_JSON_ESCAPES = {**_JSONITER_ESCAPES, "\b": "\\b", "\f": "\\f"}
_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029\ud800-\udfff]')


def _escaper(table: Mapping[str, str]) -> Callable[[re.Match[str]], str]:
    def escape(match: re.Match[str]) -> str:
        return table.get(match.group(), "\ufffd")  # not in the table: a lone surrogate
    return escape


_ESCAPE_ENCODING_JSON = _escaper(_ENCODING_JSON_ESCAPES)
_ESCAPE_JSONITER = _escaper(_JSONITER_ESCAPES)


def go_json_string(text: str, *, jsoniter: bool = False) -> str:
    """``text`` as a quoted JSON string the way Go's ``encoding/json`` writes it (HTML-safe); with
    ``jsoniter``, the way json-iterator's standard-library-compatible config writes it (``\\b``
    and ``\\f`` as ``\\u0008`` and ``\\u000c``)."""
    return '"' + _NEEDS_ESCAPE.sub(_ESCAPE_JSONITER if jsoniter else _ESCAPE_ENCODING_JSON, text) + '"'


def _go_float(f: float) -> str:
    if f == 0:
        return "0"
    if 1e-6 <= abs(f) < 1e21:
        text = format(Decimal(repr(f)), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    # Exponent form; Go drops the leading zero of a negative exponent ("1e-07" -> "1e-7").
    return re.sub(r"e-0(\d)$", r"e-\1", repr(f))


def go_json(value: Any) -> str:
    """Compact JSON of ``value`` as structured-merge-diff serialises values in path elements
    (json-iterator, standard-library compatible): sorted map keys, HTML-safe strings, shortest
    floats without a trailing ``.0``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return go_json_string(value, jsoniter=True)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{go_json_string(k, jsoniter=True)}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    raise TypeError(f"not a JSON value: {value!r}")


# ----------------------------------------------------------------------------------------------
# Paths


class PathElement(str):
    """One step of a field path, held as its canonical ``FieldsV1`` key: ``f:<field>``,
    ``k:<item keys as JSON>``, ``v:<set value as JSON>`` or ``i:<index>``.

    A ``str`` so that paths hash fast (CPython caches string hashes) and equal elements are equal
    strings; build elements with the constructors, which canonicalise the JSON.
    """

    __slots__ = ()

    @property
    def kind(self) -> str:
        return self[0]

    @property
    def text(self) -> str:
        return self[2:]

    @classmethod
    def field(cls, name: str) -> PathElement:
        return cls("f:" + name)

    @classmethod
    def key(cls, fields: Mapping[str, Any]) -> PathElement:
        return cls("k:" + go_json(dict(fields)))

    @classmethod
    def value(cls, value: Any) -> PathElement:
        return cls("v:" + go_json(value))

    @classmethod
    def index(cls, i: int) -> PathElement:
        return cls(f"i:{i}")

    @classmethod
    def parse(cls, key: str) -> PathElement | None:
        """Parse a ``FieldsV1`` key; None for element kinds this version does not know (skipped,
        as upstream does)."""
        if len(key) < 2 or key[1] != ":":
            raise ValueError(f"invalid path element {key!r}")
        kind, body = key[0], key[2:]
        if kind == "f":
            return cls.field(body)
        if kind == "k":
            fields = json.loads(body)
            if not isinstance(fields, dict):
                raise ValueError(f"invalid key path element {key!r}")
            return cls.key(fields)
        if kind == "v":
            return cls.value(json.loads(body))
        if kind == "i":
            return cls.index(int(body))
        return None

    def __repr__(self) -> str:
        return f"PathElement({str.__repr__(self)})"


Path = tuple[PathElement, ...]


def _value_order(v: Any) -> tuple[Any, ...]:
    # structured-merge-diff's total order: numbers < strings < booleans < lists < maps < null.
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, int | float):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, list):
        return (3, tuple(_value_order(x) for x in v))
    if isinstance(v, dict):
        return (4, tuple((k, _value_order(v[k])) for k in sorted(v)))
    return (5,)


@lru_cache(maxsize=65536)
def _element_order(pe: PathElement) -> tuple[Any, ...]:
    if pe.kind == "f":
        return (0, pe.text)
    if pe.kind == "k":
        fields = json.loads(pe.text)
        return (1, tuple((k, _value_order(fields[k])) for k in sorted(fields)))
    if pe.kind == "v":
        return (2, _value_order(json.loads(pe.text)))
    return (3, int(pe.text))


def _path_order(path: Path) -> tuple[tuple[Any, ...], ...]:
    return tuple(_element_order(pe) for pe in path)


def format_path(path: Path) -> str:
    """Human form used in conflict messages: ``.spec.containers[name="nginx"].image``."""
    parts = []
    for pe in path:
        if pe.kind == "f":
            parts.append("." + pe.text)
        elif pe.kind == "k":
            fields = json.loads(pe.text)
            parts.append("[" + ",".join(f"{k}={go_json(fields[k])}" for k in sorted(fields)) + "]")
        elif pe.kind == "v":
            parts.append(f"[={pe.text}]")
        else:
            parts.append(f"[{pe.text}]")
    return "".join(parts)


# ----------------------------------------------------------------------------------------------
# Field sets


class FieldSet:
    """An immutable set of field paths.

    Membership is per path, exactly as in structured-merge-diff: owning ``.spec.template`` says
    nothing about ``.spec.template.metadata``; :meth:`recursive_difference` removes whole subtrees.
    """

    __slots__ = ("_paths", "_wire")

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        self._paths = frozenset(p for p in paths if p)
        # FieldsV1 as JSON once the set is encoded a second time (a set kept and recorded again, as a
        # create's fields are by the object's shape); b"" after the first time; None before.
        self._wire: bytes | None = None

    # -- FieldsV1 --------------------------------------------------------------------------
    @classmethod
    def from_fields_v1(cls, fields: Mapping[str, Any] | None) -> FieldSet:
        """Read a ``fieldsV1`` object; raises ValueError when it is malformed."""
        if fields is None:
            return cls()
        if not isinstance(fields, Mapping):
            raise ValueError("fieldsV1 must be an object")
        paths: set[Path] = set()
        _read_fields_v1(fields, (), paths)
        return cls(paths)

    def to_fields_v1(self) -> dict[str, Any]:
        """The ``fieldsV1`` object, a new one on every call (its caller may change it)."""
        if self._wire:
            return orjson.loads(self._wire)
        root = _Trie()
        for path in self._paths:
            node = root
            for pe in path[:-1]:
                node = node.children.setdefault(pe, _Trie())
            node.members.add(path[-1])
        fields = root.emit(include_self=False)
        self._wire = b"" if self._wire is None else orjson.dumps(fields)
        return fields

    # -- set algebra -----------------------------------------------------------------------
    def union(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths | other._paths)

    def intersection(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths & other._paths)

    def difference(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths - other._paths)

    __or__ = union
    __and__ = intersection
    __sub__ = difference

    def recursive_difference(self, prefixes: FieldSet) -> FieldSet:
        """Drop every path that lies at or under one of ``prefixes``."""
        if not prefixes:
            return self
        cut = prefixes._paths
        return FieldSet(p for p in self._paths if not any(p[:n] in cut for n in range(1, len(p) + 1)))

    def under(self, prefix: Path) -> FieldSet:
        """The paths at or under ``prefix``."""
        return FieldSet(p for p in self._paths if p[:len(prefix)] == prefix)

    @property
    def empty(self) -> bool:
        return not self._paths

    def __bool__(self) -> bool:
        return bool(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __iter__(self) -> Iterator[Path]:
        """All member paths, in structured-merge-diff order."""
        return iter(sorted(self._paths, key=_path_order))

    def leaves(self) -> Iterator[Path]:
        """Member paths with no other member below them."""
        parents = {p[:n] for p in self._paths for n in range(1, len(p))}
        return (p for p in self if p not in parents)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSet) and self._paths == other._paths

    def __hash__(self) -> int:
        return hash(self._paths)

    def __repr__(self) -> str:
        return f"FieldSet({[format_path(p) for p in self]})"


class _Trie:
    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, _Trie] = {}

    def emit(self, include_self: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if include_self:
            out["."] = {}
        for pe in sorted(self.members | self.children.keys(), key=_element_order):
            child = self.children.get(pe)
            out[str(pe)] = {} if child is None else child.emit(include_self=pe in self.members)
        return out


def _read_fields_v1(node: Mapping[str, Any], prefix: Path, out: set[Path]) -> bool:
    """Collect the paths under ``prefix``; returns whether ``prefix`` itself is a member (it has a
    ``.`` entry, or nothing below it)."""
    member = False
    has_children = False
    for key, value in node.items():
        if key == ".":
            member = True
            continue
        pe = PathElement.parse(key)
        if pe is None:
            continue
        if not isinstance(value, Mapping):
            raise ValueError(f"fieldsV1 entry {key!r} must be an object")
        has_children = True
        if _read_fields_v1(value, (*prefix, pe), out):
            out.add((*prefix, pe))
    return member or not has_children
