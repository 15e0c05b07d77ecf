"""Decode-time checks of request bodies against a kind's schema (``fieldValidation``).

kube-apiserver decodes a body into the kind's Go struct before anything else runs. Two things
come out of that step and nothing else in spacehub reproduces them:

* unknown fields: with ``fieldValidation=Strict`` they fail the request, with ``Warn`` they become
  warnings (the caller decides); reported as paths like ``spec.template.spec.containers[0].foo``.
* type mismatches: always a 400, worded as Go's ``encoding/json`` words them, e.g. ``json: cannot
  unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32``, plus the
  messages of the custom decoders (base64 ``[]byte``, ``Quantity``, ``Time``).

This module owns those two checks and nothing more (no defaulting, no semantic validation). It
runs on every create and update, so a schema is compiled once into a small tree of
:class:`_Node` objects (``$ref`` resolved and memoised per definitions map) and the body is walked
without copying it.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]

_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
_MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# Node kinds.
_ANY = 0  # anything goes: RawExtension, FieldsV1, JSON, untyped or preserve-unknown nodes
_OBJECT = 1  # a struct: known properties, optionally extra keys checked against one schema
_MAP = 2  # additionalProperties only
_ARRAY = 3
_STRING = 4
_BYTES = 5  # format: byte, base64 on the wire
_TIME_KIND = 6
_INTEGER = 7
_NUMBER = 8
_BOOLEAN = 9
_INT_OR_STRING_KIND = 10
_QUANTITY_KIND = 11

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class _Node:
    """One compiled schema node. ``go`` is the Go type name used in decoder messages."""

    __slots__ = ("extra", "go", "item", "kind", "layout", "open", "props", "struct")

    def __init__(self, kind: int = _ANY, go: str = "interface {}") -> None:
        self.kind = kind
        self.go = go
        self.props: dict[str, _Node] = {}
        self.extra: _Node | None = None  # schema of keys outside ``props``
        self.open = False  # unknown keys allowed without a check
        self.item: _Node | None = None  # array items or map values
        self.struct = ""  # Go struct name reported for errors in this object's fields
        self.layout = ""  # time layout, for Time / MicroTime


_ANY_NODE = _Node()


def _go_name(def_name: str) -> str:
    """``io.k8s.api.apps.v1.DeploymentSpec`` -> ``v1.DeploymentSpec`` (Go's ``reflect.Type`` name)."""
    parts = def_name.rsplit(".", 2)
    return f"{parts[-2]}.{parts[-1]}" if len(parts) >= 2 else def_name


def _types(schema: Schema) -> set[str]:
    t = schema.get("type")
    if t is None:
        return set()
    out = {t} if isinstance(t, str) else set(t)
    out.discard("null")
    return out


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


class _Compiler:
    """Compiles schemas of one definitions map; named definitions are compiled once."""

    def __init__(self, defs: Mapping[str, Schema]) -> None:
        self.defs = defs
        self.named: dict[str, _Node] = {}
        # A caller passing ``defs[name]`` itself gets the named node (Go type name, Time ...).
        self.names_by_id = {id(schema): name for name, schema in defs.items()}

    def ref(self, name: str) -> _Node:
        node = self.named.get(name)
        if node is not None:
            return node
        node = _Node()
        # Registered before filling so recursive schemas (JSONSchemaProps) terminate.
        self.named[name] = node
        schema = self.defs.get(name)
        if schema is None:
            return node
        go = _go_name(name)
        if name == _INT_OR_STRING:
            # IntOrString.UnmarshalJSON decodes non-strings into an int32, so that is the type
            # Go names when the value is neither.
            node.kind, node.go = _INT_OR_STRING_KIND, "int32"
        elif name == _QUANTITY:
            node.kind, node.go = _QUANTITY_KIND, go
        elif name in (_TIME, _MICRO_TIME):
            # Time.UnmarshalJSON decodes into a string first, then parses the layout.
            node.kind, node.go = _TIME_KIND, "string"
            node.layout = _RFC3339_MICRO if name == _MICRO_TIME else _RFC3339
        else:
            self._fill(node, schema, go, name.rsplit(".", 1)[-1])
        return node

    def compile(self, schema: Schema, go: str = "", struct: str = "") -> _Node:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.ref(_ref_name(ref))
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping) \
                and "$ref" in all_of[0]:
            # The OpenAPI form of a described reference.
            return self.ref(_ref_name(all_of[0]["$ref"]))
        node = _Node()
        self._fill(node, schema, go, struct)
        return node

    def _fill(self, node: _Node, schema: Schema, go: str, struct: str) -> None:
        if schema.get("x-kubernetes-int-or-string") is True:
            node.kind, node.go = _INT_OR_STRING_KIND, "int32"
            return
        types = _types(schema)
        if not types:
            alternatives = schema.get("oneOf") or schema.get("anyOf")
            if isinstance(alternatives, list):
                for alt in alternatives:
                    if isinstance(alt, Mapping):
                        types |= _types(alt)
                if types == {"integer", "string"}:
                    node.kind, node.go = _INT_OR_STRING_KIND, "int32"
            return  # untyped: anything
        if len(types) != 1:
            return
        (kind,) = types
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        if kind == "object":
            props = schema.get("properties")
            extra = schema.get("additionalProperties")
            if isinstance(props, Mapping) and props:
                node.kind = _OBJECT
                node.go = go or "struct"
                node.struct = struct
                node.props = {name: self.compile(sub) for name, sub in props.items()
                              if isinstance(sub, Mapping)}
                if isinstance(extra, Mapping):
                    node.extra = self.compile(extra)
                node.open = preserve or extra is True
            elif isinstance(extra, Mapping) and not preserve:
                node.kind = _MAP
                node.item = self.compile(extra)
                node.go = go or f"map[string]{node.item.go}"
            else:
                # RawExtension, FieldsV1, empty structs: the decoder keeps whatever comes.
                node.go = go or node.go
        elif kind == "array":
            items = schema.get("items")
            node.kind = _ARRAY
            node.item = self.compile(items) if isinstance(items, Mapping) else _ANY_NODE
            node.go = go or f"[]{node.item.go}"
        elif kind == "string":
            if schema.get("format") == "byte":
                node.kind, node.go = _BYTES, "[]uint8"
            else:
                node.kind, node.go = _STRING, "string"
        elif kind == "integer":
            fmt = schema.get("format")
            node.kind, node.go = _INTEGER, fmt if fmt in _INT_RANGES else "int64"
        elif kind == "number":
            node.kind, node.go = _NUMBER, "float64"
        elif kind == "boolean":
            node.kind, node.go = _BOOLEAN, "bool"


_cache_lock = threading.Lock()
_compilers: OrderedDict[int, _Compiler] = OrderedDict()
_roots: OrderedDict[tuple[int, int], tuple[Schema, Mapping[str, Schema], _Node]] = OrderedDict()
_COMPILER_CACHE_SIZE = 8
_ROOT_CACHE_SIZE = 512


def _root(schema: Schema, defs: Mapping[str, Schema]) -> _Node:
    """The compiled top-level node of ``schema``, with the envelope fields every kind has."""
    key = (id(schema), id(defs))
    with _cache_lock:
        hit = _roots.get(key)
        if hit is not None and hit[0] is schema and hit[1] is defs:
            _roots.move_to_end(key)
            return hit[2]
        compiler = _compilers.get(id(defs))
        if compiler is None or compiler.defs is not defs:
            compiler = _Compiler(defs)
            _compilers[id(defs)] = compiler
            while len(_compilers) > _COMPILER_CACHE_SIZE:
                _compilers.popitem(last=False)
        # Compiling under the lock: a half-filled recursive node must never be walked.
        name = compiler.names_by_id.get(id(schema))
        node = compiler.ref(name) if name is not None else compiler.compile(schema)
        if node.kind == _OBJECT:
            root = _Node(_OBJECT, node.go)
            root.props = dict(node.props)
            root.extra, root.open, root.struct = node.extra, node.open, node.struct
            # apiVersion and kind are decoded into TypeMeta and never unknown; a kind whose
            # schema omits metadata (a custom resource) still has ObjectMeta.
            root.props.setdefault("apiVersion", _ANY_NODE)
            root.props.setdefault("kind", _ANY_NODE)
            if "metadata" not in root.props and _OBJECT_META in defs:
                root.props["metadata"] = compiler.ref(_OBJECT_META)
            node = root
        # The entry pins both objects so their ids are not reused while the key is cached.
        _roots[key] = (schema, defs, node)
        while len(_roots) > _ROOT_CACHE_SIZE:
            _roots.popitem(last=False)
        return node


# --- public API ----------------------------------------------------------------------------------


def unknown_fields(obj: Any, schema: Schema, defs: Mapping[str, Schema]) -> list[str]:
    """Paths of the fields of ``obj`` its schema does not know, in document order."""
    return check(obj, schema, defs, "", want_types=False)[0]


def type_errors(obj: Any, schema: Schema, defs: Mapping[str, Schema], kind: str) -> list[str]:
    """Decode errors of ``obj`` (wrong JSON types, bad base64, quantities, times), in document order.

    kube-apiserver stops at the first one and answers 400 BadRequest with
    ``<Kind> in version "<v>" cannot be handled as a <Kind>: <message>``.
    """
    return check(obj, schema, defs, kind, want_unknown=False)[1]


def check(obj: Any, schema: Schema, defs: Mapping[str, Schema], kind: str, *,
          want_unknown: bool = True, want_types: bool = True) -> tuple[list[str], list[str]]:
    """Both checks in one walk: ``(unknown field paths, type error messages)``.

    ``kind`` names the top-level Go struct in messages (``Deployment``); it defaults to the
    schema's own name.
    """
    root = _root(schema, defs)
    if kind and root.kind == _OBJECT and root.struct != kind:
        named = _Node(_OBJECT, root.go)
        named.props, named.extra, named.open, named.struct = root.props, root.extra, root.open, kind
        root = named
    walk = _Walk(want_unknown, want_types)
    if obj is not None and root.kind != _ANY:
        walk.value(obj, root, "", kind or root.struct, "")
    return walk.unknown, walk.errors


def strict_decoding_message(paths: list[str]) -> str:
    """kube's wording for unknown fields, used for the Strict error and the Warn warnings."""
    return "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)


# --- the walk ------------------------------------------------------------------------------------


def _describe(value: Any) -> str:
    """Go's ``UnmarshalTypeError.Value`` for a decoded JSON value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "array"


def _number_text(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


class _Walk:
    __slots__ = ("errors", "unknown", "want_types", "want_unknown")

    def __init__(self, want_unknown: bool, want_types: bool) -> None:
        self.unknown: list[str] = []
        self.errors: list[str] = []
        self.want_unknown = want_unknown
        self.want_types = want_types

    def mismatch(self, what: str, go: str, struct: str, field: str, key: str | None = None) -> None:
        if not self.want_types:
            return
        if key is not None:
            field = f"{field}.{key}" if field else key
        if field:
            self.errors.append(f"json: cannot unmarshal {what} into Go struct field "
                               f"{struct}.{field} of type {go}")
        else:
            # Go adds no struct context to an error at the top level.
            self.errors.append(f"json: cannot unmarshal {what} into Go value of type {go}")

    def value(self, value: Any, node: _Node, path: str, struct: str, field: str) -> None:
        """Check a non-null container (or untyped) ``value`` against ``node``.

        ``path`` is the unknown-field path (with ``[i]`` and map keys); ``struct``/``field`` are
        Go's error context: the innermost struct holding the field, and the chain of struct field
        names only, as ``encoding/json`` records them. Scalars go to :meth:`scalar`, which builds
        no strings unless it reports something.
        """
        kind = node.kind
        if kind == _OBJECT:
            if not isinstance(value, dict):
                self.mismatch(_describe(value), node.go, struct, field)
                return
            props = node.props
            inner = node.struct or struct
            for key, sub in value.items():
                child = props.get(key)
                if child is None:
                    child = node.extra
                    if child is None:
                        if not node.open and self.want_unknown:
                            self.unknown.append(f"{path}.{key}" if path else key)
                        continue
                if sub is None:
                    continue  # null decodes to the zero value everywhere
                child_kind = child.kind
                if child_kind >= _STRING:
                    if self.want_types:
                        self.scalar(sub, child, inner, field, key)
                elif child_kind != _ANY:
                    self.value(sub, child, f"{path}.{key}" if path else key, inner,
                               f"{field}.{key}" if field else key)
        elif kind in (_ARRAY, _MAP):
            if not isinstance(value, list if kind == _ARRAY else dict):
                self.mismatch(_describe(value), node.go, struct, field)
                return
            item = node.item or _ANY_NODE
            item_kind = item.kind
            if item_kind == _ANY:
                return
            entries = enumerate(value) if kind == _ARRAY else value.items()
            for key, sub in entries:
                if sub is None:
                    continue
                if item_kind >= _STRING:
                    if self.want_types:
                        self.scalar(sub, item, struct, field)
                elif kind == _ARRAY:
                    self.value(sub, item, f"{path}[{key}]", struct, field)
                else:
                    self.value(sub, item, f"{path}.{key}" if path else key, struct, field)
        elif kind >= _STRING and self.want_types:
            self.scalar(value, node, struct, field)

    def scalar(self, value: Any, node: _Node, struct: str, field: str,
               key: str | None = None) -> None:
        kind = node.kind
        if kind == _STRING:
            if type(value) is not str:
                self.mismatch(_describe(value), "string", struct, field, key)
        elif kind in (_INTEGER, _INT_OR_STRING_KIND):
            if kind == _INT_OR_STRING_KIND and type(value) is str:
                return
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.mismatch(_describe(value), node.go, struct, field, key)
                return
            # Integral floats are accepted: YAML bodies converted by a client may carry "3.0"
            # as a float, and the value is still a valid integer.
            if isinstance(value, float) and not value.is_integer():
                self.mismatch(f"number {_number_text(value)}", node.go, struct, field, key)
                return
            low, high = _INT_RANGES.get(node.go, _INT_RANGES["int64"])
            if not low <= value <= high:
                self.mismatch(f"number {_number_text(value)}", node.go, struct, field, key)
        elif kind == _BOOLEAN:
            if type(value) is not bool:
                self.mismatch(_describe(value), "bool", struct, field, key)
        elif kind == _NUMBER:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                self.mismatch(_describe(value), "float64", struct, field, key)
        elif kind == _BYTES:
            if isinstance(value, str):
                bad = base64_error_offset(value)
                if bad is not None:
                    self.errors.append(f"illegal base64 data at input byte {bad}")
            elif not isinstance(value, list) or not all(
                    isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in value):
                # Go also decodes a JSON array of small numbers into []byte.
                self.mismatch(_describe(value), "[]uint8", struct, field, key)
        elif kind == _QUANTITY_KIND:
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                self.errors.append(_QUANTITY_FORMAT_WRONG)
            else:
                text = value.strip() if isinstance(value, str) else _number_text(value)
                message = quantity_error(text)
                if message:
                    self.errors.append(message)
        elif kind == _TIME_KIND:
            if not isinstance(value, str):
                self.mismatch(_describe(value), "string", struct, field, key)
            else:
                message = time_error(value, node.layout)
                if message:
                    self.errors.append(message)


# --- custom decoders: base64, Quantity, Time -----------------------------------------------------

_B64_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_B64_QUICK = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_NEWLINES = (10, 13)
_PAD = 61  # '='


def base64_error_offset(text: str) -> int | None:
    """Byte offset Go's ``base64.StdEncoding`` reports for ``text``, or None if it decodes.

    Follows ``decodeQuantum``: CR and LF are skipped anywhere, padding is required, and a
    quantum that ends early is reported at its start.
    """
    if _B64_QUICK.fullmatch(text):
        return None
    src = text.encode()
    end = len(src)
    si = 0
    while True:
        j = 0
        while j < 4:
            if si == end:
                return None if j == 0 else si - j
            c = src[si]
            si += 1
            if c in _B64_ALPHABET:
                j += 1
                continue
            if c in _NEWLINES:
                continue
            if c != _PAD or j < 2:
                return si - 1
            if j == 2:
                # "==" expected; the first "=" is consumed.
                while si < end and src[si] in _NEWLINES:
                    si += 1
                if si == end:
                    return end
                if src[si] != _PAD:
                    return si - 1
                si += 1
            while si < end and src[si] in _NEWLINES:
                si += 1
            return si if si < end else None


_QUANTITY_FORMAT_WRONG = ("quantities must match the regular expression "
                          "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
_QUANTITY_SUFFIX = "unable to parse quantity's suffix"
_QUANTITY_SUFFIXES = frozenset({"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
                                "n", "u", "m", "k", "M", "G", "T", "P", "E"})
_QUANTITY_SPLIT = re.compile(r"[+-]?[0-9]*(?:\.[0-9]*)?")
_QUANTITY_SUFFIX_CHARS = re.compile(r"[eEinumkKMGTP]*[-+]?[0-9]*")
_EXPONENT = re.compile(r"[eE][+-]?[0-9]+")


def quantity_error(text: str) -> str | None:
    """The error of ``resource.ParseQuantity(text)`` as far as its format goes, or None."""
    if not text:
        return _QUANTITY_FORMAT_WRONG
    number = _QUANTITY_SPLIT.match(text)
    pos = number.end() if number else 0
    suffix_match = _QUANTITY_SUFFIX_CHARS.match(text, pos)
    if suffix_match is None or suffix_match.end() != len(text):
        return _QUANTITY_FORMAT_WRONG
    suffix = text[pos:]
    if suffix in _QUANTITY_SUFFIXES or _EXPONENT.fullmatch(suffix):
        return None
    return _QUANTITY_SUFFIX


_RFC3339 = "2006-01-02T15:04:05Z07:00"
_RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
_RFC3339_QUICK = re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:"
                            r"[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-4]):[0-5]\d)")
_YEAR = re.compile(r"[+-]?[0-9]+")
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _go_quote(text: str) -> str:
    """``time``'s own quoting of values in parse errors."""
    out = ['"']
    for ch in text:
        if ch >= "\x80" or ch < " ":
            out.extend(f"\\x{b:02x}" for b in ch.encode())
        elif ch in '"\\':
            out.append("\\" + ch)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _getnum(text: str, fixed: bool) -> tuple[int, str] | None:
    if not text[:1].isdigit() or not text[:1].isascii():
        return None
    if len(text) < 2 or not ("0" <= text[1] <= "9"):
        return None if fixed else (int(text[0]), text[1:])
    return int(text[:2]), text[2:]


def time_error(text: str, layout: str = _RFC3339) -> str | None:
    """The error of Go's ``time.Parse(layout, text)`` for the RFC 3339 layouts, or None.

    Mirrors the element-by-element parse so messages name the element that failed, e.g.
    ``parsing time "2024-13-01T00:00:00Z": month out of range``.
    """
    micro = layout == _RFC3339_MICRO
    if not micro and _RFC3339_QUICK.fullmatch(text) and _day_ok(text):
        return None

    def cannot(rest: str, elem: str) -> str:
        return (f"parsing time {_go_quote(text)} as {_go_quote(layout)}: cannot parse "
                f"{_go_quote(rest)} as {_go_quote(elem)}")

    def out_of_range(what: str) -> str:
        return f"parsing time {_go_quote(text)}: {what} out of range"

    value = text
    # year
    if len(value) < 4 or not _YEAR.fullmatch(value[:4]):
        return cannot(value, "2006")
    year = int(value[:4])
    value = value[4:]
    numbers: dict[str, int] = {}
    for prefix, elem, fixed, limit, name in (("-", "01", True, 12, "month"),
                                            ("-", "02", True, None, "day"),
                                            ("T", "15", False, 23, "hour"),
                                            (":", "04", True, 59, "minute"),
                                            (":", "05", True, 59, "second")):
        if not value.startswith(prefix):
            return cannot(value, prefix)
        value = value[1:]
        got = _getnum(value, fixed)
        if got is None:
            return cannot(value, elem)
        number, value = got
        if name == "month" and not 1 <= number <= 12:
            return out_of_range("month")
        if limit is not None and name != "month" and number > limit:
            return out_of_range(name)
        numbers[name] = number
    if micro:
        if len(value) < 7 or value[0] not in ".," or not value[1:7].isdigit():
            return cannot(value, ".000000")
        value = value[7:]
    elif len(value) >= 2 and value[0] in ".," and value[1].isdigit():
        n = 2
        while n < len(value) and value[n].isdigit():
            n += 1
        value = value[n:]
    # zone
    if value.startswith("Z"):
        value = value[1:]
    else:
        hold = value
        if len(value) < 6 or value[3] != ":":
            return cannot(hold, "Z07:00")
        sign, hours, minutes, value = value[0], value[1:3], value[4:6], value[6:]
        hr = _getnum(hours, True)
        mm = _getnum(minutes, True) if hr is not None else None
        if hr is not None and hr[0] > 24:
            return out_of_range("time zone offset hour")
        if mm is not None and mm[0] > 60:
            return out_of_range("time zone offset minute")
        if hr is None or mm is None or sign not in "+-":
            return cannot(hold, "Z07:00")
    if value:
        return f"parsing time {_go_quote(text)}: extra text: {_go_quote(value)}"
    if not 1 <= numbers["day"] <= _days_in(numbers["month"], year):
        return out_of_range("day")
    return None


def _days_in(month: int, year: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _DAYS_IN_MONTH[month - 1]


def _day_ok(text: str) -> bool:
    return int(text[8:10]) <= _days_in(int(text[5:7]), int(text[:4]))
