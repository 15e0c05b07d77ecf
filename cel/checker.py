"""The CEL type checker: resolves names and functions and infers a static type for every node.

Owns the compile-time errors a rule author sees (``undeclared reference to 'x' (in container '')``,
``undefined field 'x'``, ``found no matching overload for '_+_' applied to '(int, string)'`` …)
and two rewrites of the AST: namespaced calls (``format.dns1123Label()``, ``sets.contains(…)``)
become global calls, and escaped property names (``self.x__dash__y``) become their JSON names.
It errs on the side of accepting: where a type is unknown (``dyn``) it never reports an error that
cel-go might not, because refusing a CRD that kube-apiserver accepts is the worse failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cel.parser import Call, Ident, Index, ListLit, Lit, Macro, MapLit, Node, Select, UInt
from cel.types import (
    BOOL,
    BYTES,
    DOUBLE,
    DYN,
    INT,
    NULL,
    REGISTRY,
    STRING,
    TYPE,
    UINT,
    CelType,
    Signature,
    is_param,
    list_of,
    map_of,
    optional_of,
)

_TYPE_NAMES = {"int", "uint", "double", "string", "bytes", "bool", "list", "map", "null_type", "type"}
_NUMERIC = {"int", "uint", "double"}
_RESERVED_ESCAPES = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
                     "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")


def escape_field(name: str) -> str | None:
    """Kubernetes' escaping of a property name into a CEL identifier, or None when it cannot be escaped."""
    if name in _RESERVED_ESCAPES:
        return f"__{name}__"
    if not re.fullmatch(r"[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*", name):
        return None
    out = name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__")
    return out.replace("/", "__slash__")


class CheckError(Exception):
    def __init__(self, issues: list[tuple[int, str]]) -> None:
        super().__init__(issues[0][1])
        self.issues = issues


class Checker:
    def __init__(self, variables: Mapping[str, CelType]) -> None:
        self.variables = dict(variables)
        self.types: dict[int, CelType] = {}
        self.issues: list[tuple[int, str]] = []
        self.references: set[str] = set()

    def run(self, node: Node) -> CelType:
        t = self.check(node, {})
        if self.issues:
            raise CheckError(sorted(self.issues))
        return t

    def error(self, node: Node, message: str) -> CelType:
        self.issues.append((node.pos, message))
        return DYN

    def check(self, node: Node, scope: dict[str, CelType]) -> CelType:
        t = self._check(node, scope)
        self.types[id(node)] = t
        return t

    def _check(self, node: Node, scope: dict[str, CelType]) -> CelType:
        if isinstance(node, Lit):
            return _literal_type(node.value)
        if isinstance(node, Ident):
            return self.ident(node, scope)
        if isinstance(node, Select):
            return self.select(node, scope)
        if isinstance(node, Index):
            return self.index(node, scope)
        if isinstance(node, Call):
            return self.call(node, scope)
        if isinstance(node, ListLit):
            elems = [self.check(e, scope) for e in node.elems]
            elems = [_unwrap_optional(t) if opt else t for t, opt in zip(elems, node.optional, strict=True)]
            return list_of(_join(elems))
        if isinstance(node, MapLit):
            keys, values = [], []
            for k, v, opt in node.entries:
                keys.append(self.check(k, scope))
                vt = self.check(v, scope)
                values.append(_unwrap_optional(vt) if opt else vt)
            return map_of(_join(keys), _join(values))
        if isinstance(node, Macro):
            return self.macro(node, scope)
        raise TypeError(f"unknown CEL node {node!r}")

    def ident(self, node: Ident, scope: dict[str, CelType]) -> CelType:
        if node.name in scope:
            return scope[node.name]
        if node.name in self.variables:
            self.references.add(node.name)
            return self.variables[node.name]
        if node.name in _TYPE_NAMES:
            return TYPE
        return self.error(node, f"undeclared reference to '{node.name}' (in container '')")

    def select(self, node: Select, scope: dict[str, CelType]) -> CelType:
        operand = self.check(node.operand, scope)
        optional = node.optional
        if operand.kind == "optional":
            # Selecting through an optional keeps the result optional (optional chaining).
            operand = operand.params[0]
            optional = True
        field_type = self.field_type(node, operand)
        if node.test_only:
            return BOOL
        return optional_of(field_type) if optional else field_type

    def field_type(self, node: Select, operand: CelType) -> CelType:
        if operand.kind == "dyn":
            return DYN
        if operand.kind == "map":
            if operand.params[0].kind not in ("string", "dyn"):
                return self.error(node, f"type '{operand}' does not support field selection")
            return operand.params[1]
        if operand.kind == "object":
            fields = operand.fields or {}
            if node.field in fields:
                info = fields[node.field]
                node.field = info.name
                return info.type
            if operand.open:
                return DYN
            return self.error(node, f"undefined field '{node.field}'")
        return self.error(node, f"type '{operand}' does not support field selection")

    def index(self, node: Index, scope: dict[str, CelType]) -> CelType:
        operand = self.check(node.operand, scope)
        key = self.check(node.index, scope)
        optional = node.optional
        if operand.kind == "optional":
            operand = operand.params[0]
            optional = True
        if operand.kind == "dyn":
            result = DYN
        elif operand.kind == "list" and key.kind in ("int", "uint", "dyn"):
            result = operand.params[0]
        elif operand.kind == "map" and _assignable(operand.params[0], key):
            result = operand.params[1]
        elif operand.kind == "object" and key.kind in ("string", "dyn"):
            result = DYN
        else:
            return self.error(node, f"found no matching overload for '_[_]' applied to '({operand}, {key})'")
        return optional_of(result) if optional else result

    def macro(self, node: Macro, scope: dict[str, CelType]) -> CelType:
        target = self.check(node.target, scope)
        if target.kind == "list" or target.kind == "map":
            var = target.params[0]
        elif target.kind in ("dyn", "object"):
            var = DYN
        else:
            self.error(node.target, f"expression of type '{target}' cannot be the range of a comprehension "
                                    f"(must be list, map, or dynamic)")
            var = DYN
        inner = {**scope, node.var: var}
        if node.filter is not None:
            self._expect_bool(node.filter, self.check(node.filter, inner))
        body = self.check(node.body, inner)
        if node.kind == "map":
            return list_of(body)
        self._expect_bool(node.body, body)
        if node.kind == "filter":
            return list_of(var)
        return BOOL

    def _expect_bool(self, node: Node, t: CelType) -> None:
        if t.kind not in ("bool", "dyn"):
            self.error(node, f"found no matching overload for '_&&_' applied to '(bool, {t})'")

    def call(self, node: Call, scope: dict[str, CelType]) -> CelType:
        fn = node.function
        if node.target is not None:
            qualified = _qualified_name(node.target)
            if qualified is not None and qualified.split(".")[0] not in scope \
                    and qualified.split(".")[0] not in self.variables and f"{qualified}.{fn}" in REGISTRY:
                node.function = fn = f"{qualified}.{fn}"
                node.target = None
        if fn == "_?_:_":
            cond, then, other = (self.check(a, scope) for a in node.args)
            self._expect_bool(node.args[0], cond)
            return _join([then, other])
        if fn in ("_&&_", "_||_"):
            for a in node.args:
                t = self.check(a, scope)
                if t.kind not in ("bool", "dyn"):
                    self.error(node, f"found no matching overload for '{fn}' applied to '({t}, bool)'")
            return BOOL
        args = [self.check(a, scope) for a in node.args]
        target = self.check(node.target, scope) if node.target is not None else None
        fndef = REGISTRY.get(fn)
        sigs = None if fndef is None else fndef.member_sigs if target is not None else fndef.global_sigs
        if not sigs:
            return self.error(node, f"undeclared reference to '{fn}' (in container '')")
        actual = [target, *args] if target is not None else args
        results = [r for sig in sigs if (r := _match(sig, actual)) is not None]
        if not results:
            shown = ", ".join(str(a) for a in args)
            applied = f"{target}.({shown})" if target is not None else f"({shown})"
            return self.error(node, f"found no matching overload for '{fn}' applied to '{applied}'")
        return _join(results)


def _qualified_name(node: Node) -> str | None:
    if isinstance(node, Ident):
        return node.name
    if isinstance(node, Select) and not node.test_only and not node.optional:
        inner = _qualified_name(node.operand)
        return f"{inner}.{node.field}" if inner else None
    return None


def _literal_type(value: object) -> CelType:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, UInt):
        return UINT
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, str):
        return STRING
    return BYTES


def _unwrap_optional(t: CelType) -> CelType:
    return t.params[0] if t.kind == "optional" else DYN if t.kind == "dyn" else t


def _join(types: list[CelType]) -> CelType:
    """The common type of branches or literal elements; dyn when they differ."""
    known = [t for t in types if t.kind not in ("dyn", "null_type")]
    if not known:
        return DYN if any(t.kind == "dyn" for t in types) or not types else NULL
    first = known[0]
    if all(t.same(first) for t in known) and len(known) == len(types):
        return first
    if all(t.same(first) for t in known) and first.kind in ("object", "map", "list", "optional"):
        return first   # null joins with nullable aggregates
    return DYN


def _assignable(want: CelType, have: CelType) -> bool:
    if want.kind == "dyn" or have.kind == "dyn":
        return True
    if want.kind in _NUMERIC and have.kind in _NUMERIC:
        return want.kind == have.kind
    if have.kind == "null_type":
        return want.kind not in ("int", "uint", "double", "bool", "string", "bytes")
    if want.kind != have.kind:
        # Schema objects and string-keyed maps are interchangeable for equality and membership.
        return {want.kind, have.kind} == {"object", "map"}
    if want.kind == "object":
        return True
    return len(want.params) == len(have.params) and all(
        _assignable(w, h) for w, h in zip(want.params, have.params, strict=True))


def _match(sig: Signature, actual: list[CelType]) -> CelType | None:
    if len(sig.params) != len(actual):
        return None
    binds: dict[str, CelType] = {}
    for pattern, have in zip(sig.params, actual, strict=True):
        if not _unify(pattern, have, binds):
            return None
    return _substitute(sig.result, binds)


def _unify(pattern: CelType, have: CelType, binds: dict[str, CelType]) -> bool:
    if is_param(pattern):
        bound = binds.get(pattern.kind)
        if bound is None or bound.kind == "dyn":
            binds[pattern.kind] = have
            return True
        return have.kind == "dyn" or _assignable(bound, have)
    if pattern.kind == "dyn" or have.kind == "dyn":
        _bind_all(pattern, binds)
        return True
    if pattern.kind != have.kind:
        return have.kind == "null_type" and pattern.kind not in ("int", "uint", "double", "bool", "string",
                                                                 "bytes") and pattern.kind in (
            "list", "map", "object", "google.protobuf.Timestamp", "google.protobuf.Duration")
    if pattern.kind == "object":
        return True
    if len(pattern.params) != len(have.params):
        return False
    return all(_unify(p, h, binds) for p, h in zip(pattern.params, have.params, strict=True))


def _bind_all(pattern: CelType, binds: dict[str, CelType]) -> None:
    if is_param(pattern):
        binds.setdefault(pattern.kind, DYN)
    for p in pattern.params:
        _bind_all(p, binds)


def _substitute(t: CelType, binds: dict[str, CelType]) -> CelType:
    if is_param(t):
        return binds.get(t.kind, DYN)
    if not t.params:
        return t
    return CelType(t.kind, tuple(_substitute(p, binds) for p in t.params))


__all__ = ["CheckError", "Checker", "escape_field"]
