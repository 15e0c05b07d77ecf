"""CEL source text → AST: the lexer, a precedence-climbing parser and macro expansion.

Owns the syntax of the CEL spec (langdef.md) including the optional-type syntax Kubernetes enables
(``a.?b``, ``a[?k]``, ``[?x]``, ``{?k: v}``) and the macros ``has``, ``all``, ``exists``,
``exists_one``, ``map`` (2 and 3 argument forms) and ``filter``. It never resolves names or types —
that is the checker's job — and it reports errors in cel-go's ``ERROR: <input>:L:C: …`` shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# cel-go's parser refuses deeper nesting than this; it also keeps Python's own stack safe.
MAX_NESTING = 100
MAX_SOURCE_LENGTH = 100_000


class UInt(int):
    """A CEL ``uint`` value (Python has one integer type, CEL has two)."""

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelSyntaxError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


# --- AST -------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Node:
    pos: int


@dataclass(eq=False)
class Lit(Node):
    value: Any


@dataclass(eq=False)
class Ident(Node):
    name: str


@dataclass(eq=False)
class Select(Node):
    operand: Node
    field: str
    test_only: bool = False   # has(a.b)
    optional: bool = False    # a.?b


@dataclass(eq=False)
class Index(Node):
    operand: Node
    index: Node
    optional: bool = False    # a[?k]


@dataclass(eq=False)
class Call(Node):
    function: str
    args: list[Node]
    target: Node | None = None


@dataclass(eq=False)
class ListLit(Node):
    elems: list[Node]
    optional: list[bool] = field(default_factory=list)


@dataclass(eq=False)
class MapLit(Node):
    entries: list[tuple[Node, Node, bool]]   # key, value, optional entry


@dataclass(eq=False)
class Macro(Node):
    """A comprehension macro: ``target.kind(var, body)`` or ``target.map(var, filter, body)``."""

    kind: str      # all | exists | exists_one | map | filter
    target: Node
    var: str
    body: Node
    filter: Node | None = None


# --- lexer -----------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\n\r\f]+|//[^\n]*)
  | (?P<float>(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?))
  | (?P<uint>(?:0x[0-9a-fA-F]+|[0-9]+)[uU])
  | (?P<int>0x[0-9a-fA-F]+|[0-9]+)
  | (?P<string>[rR]?[bB]?[rR]?(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|\.\?|[-+*/%!<>?:.,()\[\]{}])
""", re.VERBOSE)

_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                       "loop", "package", "namespace", "return", "var", "void", "while"})


@dataclass
class _Tok:
    kind: str    # int uint float string ident op eof
    text: str
    pos: int


def _lex(src: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m:
            raise CelSyntaxError(f"Syntax error: token recognition error at: '{src[pos]}'", pos)
        kind = m.lastgroup or ""
        if kind != "ws":
            text = m.group(0)
            if kind == "ident" and text in ("true", "false", "null", "in"):
                kind = "op" if text == "in" else "ident"
            out.append(_Tok(kind, text, pos))
        pos = m.end()
    out.append(_Tok("eof", "<EOF>", len(src)))
    return out


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?"}


def _unquote(text: str, pos: int) -> str | bytes:
    prefix = ""
    while text[0] in "rRbB":
        prefix += text[0].lower()
        text = text[1:]
    raw, is_bytes = "r" in prefix, "b" in prefix
    body = text[3:-3] if text[:3] in ('"""', "'''") else text[1:-1]
    if raw:
        return body.encode() if is_bytes else body
    out: list[int] | list[str] = []
    buf: list[Any] = out
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            if is_bytes:
                buf.extend(ch.encode())
            else:
                buf.append(ch)
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in _ESCAPES:
            buf.append(ord(_ESCAPES[nxt]) if is_bytes else _ESCAPES[nxt])
            i += 2
        elif nxt in ("x", "X", "u", "U") or nxt.isdigit():
            width = {"x": 2, "X": 2, "u": 4, "U": 8}.get(nxt, 3)
            start = i + 1 if nxt.isdigit() else i + 2
            digits = body[start:start + width]
            base = 8 if nxt.isdigit() else 16
            try:
                code = int(digits, base)
            except ValueError:
                raise CelSyntaxError("Syntax error: invalid escape sequence", pos) from None
            if is_bytes and code < 256 and nxt not in ("u", "U"):
                buf.append(code)
            elif is_bytes:
                buf.extend(chr(code).encode())
            else:
                buf.append(chr(code))
            i = start + width
        else:
            raise CelSyntaxError(f"Syntax error: invalid escape sequence '\\{nxt}'", pos)
    return bytes(buf) if is_bytes else "".join(buf)


# --- parser ----------------------------------------------------------------------------------------

_BINARY_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "in": 3,
                "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}
_BINARY_FN = {"||": "_||_", "&&": "_&&_", "==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_",
              ">": "_>_", ">=": "_>=_", "in": "@in", "+": "_+_", "-": "_-_", "*": "_*_", "/": "_/_",
              "%": "_%_"}
MACROS = {"all": 2, "exists": 2, "exists_one": 2, "filter": 2}

_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1


class _Parser:
    def __init__(self, src: str) -> None:
        self.toks = _lex(src)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, text: str) -> bool:
        if self.tok.kind == "op" and self.tok.text == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> _Tok:
        if self.tok.kind == "op" and self.tok.text == text:
            return self.next()
        raise CelSyntaxError(f"Syntax error: mismatched input '{self.tok.text}' expecting '{text}'", self.tok.pos)

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise CelSyntaxError(f"expression recursion limit exceeded: {MAX_NESTING}", pos)

    def parse(self) -> Node:
        node = self.expr()
        if self.tok.kind != "eof":
            raise CelSyntaxError(f"Syntax error: mismatched input '{self.tok.text}' expecting <EOF>", self.tok.pos)
        return node

    def expr(self) -> Node:
        self.enter(self.tok.pos)
        cond = self.binary(1)
        if self.tok.kind == "op" and self.tok.text == "?":
            pos = self.next().pos
            then = self.binary(1)
            self.expect(":")
            other = self.expr()
            cond = Call(pos, "_?_:_", [cond, then, other])
        self.depth -= 1
        return cond

    def binary(self, min_prec: int) -> Node:
        left = self.unary()
        while self.tok.kind == "op" and _BINARY_PREC.get(self.tok.text, 0) >= min_prec:
            op = self.next()
            prec = _BINARY_PREC[op.text]
            self.enter(op.pos)
            right = self.binary(prec + 1)
            self.depth -= 1
            left = Call(op.pos, _BINARY_FN[op.text], [left, right])
        return left

    def unary(self) -> Node:
        if self.tok.kind == "op" and self.tok.text in ("!", "-"):
            op = self.next()
            self.enter(op.pos)
            if op.text == "-" and self.tok.kind in ("int", "float") and not self._followed_by_member():
                lit = self.next()
                operand: Node = self._number(lit, negative=True)
                operand = self.member_suffix(operand)
            else:
                operand = self.unary()
                operand = Call(op.pos, "!_" if op.text == "!" else "-_", [operand])
            self.depth -= 1
            return operand
        return self.member_suffix(self.primary())

    def _followed_by_member(self) -> bool:
        nxt = self.toks[self.i + 1]
        return nxt.kind == "op" and nxt.text in (".", ".?", "[")

    def _number(self, tok: _Tok, negative: bool = False) -> Lit:
        text = tok.text
        if tok.kind == "float":
            value: Any = float(text)
            return Lit(tok.pos, -value if negative else value)
        if tok.kind == "uint":
            n = int(text[:-1], 0)
            if n > _UINT64_MAX:
                raise CelSyntaxError("error: invalid uint literal", tok.pos)
            return Lit(tok.pos, UInt(n))
        n = int(text, 0)
        if negative:
            n = -n
        if n > _INT64_MAX or n < -_INT64_MAX - 1:
            raise CelSyntaxError("error: invalid int literal", tok.pos)
        return Lit(tok.pos, n)

    def member_suffix(self, node: Node) -> Node:
        while self.tok.kind == "op" and self.tok.text in (".", ".?", "["):
            op = self.next()
            if op.text == "[":
                optional = self.accept("?")
                index = self.expr()
                self.expect("]")
                node = Index(op.pos, node, index, optional)
                continue
            name_tok = self.next()
            if name_tok.kind != "ident":
                raise CelSyntaxError(f"Syntax error: mismatched input '{name_tok.text}' expecting IDENTIFIER",
                                     name_tok.pos)
            if op.text == ".?":
                node = Select(name_tok.pos - 1, node, name_tok.text, optional=True)
                continue
            if self.tok.kind == "op" and self.tok.text == "(":
                call_pos = self.next().pos
                args = self.arglist(")")
                node = self.member_call(call_pos, node, name_tok.text, args)
            else:
                node = Select(op.pos, node, name_tok.text)
        return node

    def member_call(self, pos: int, target: Node, name: str, args: list[Node]) -> Node:
        if (name in MACROS and len(args) == 2) or (name == "map" and len(args) in (2, 3)):
            var = args[0]
            if not isinstance(var, Ident):
                raise CelSyntaxError("argument must be a simple name", var.pos)
            if name == "map" and len(args) == 3:
                return Macro(pos, "map", target, var.name, args[2], args[1])
            return Macro(pos, name, target, var.name, args[1])
        return Call(pos, name, args, target)

    def arglist(self, close: str) -> list[Node]:
        args: list[Node] = []
        if self.accept(close):
            return args
        while True:
            args.append(self.expr())
            if self.accept(close):
                return args
            self.expect(",")

    def primary(self) -> Node:
        tok = self.next()
        if tok.kind in ("int", "uint", "float"):
            return self._number(tok)
        if tok.kind == "string":
            return Lit(tok.pos, _unquote(tok.text, tok.pos))
        if tok.kind == "ident":
            if tok.text in ("true", "false"):
                return Lit(tok.pos, tok.text == "true")
            if tok.text == "null":
                return Lit(tok.pos, None)
            if tok.text in _RESERVED:
                raise CelSyntaxError(f"Syntax error: reserved identifier: {tok.text}", tok.pos)
            if self.tok.kind == "op" and self.tok.text == "(":
                call_pos = self.next().pos
                args = self.arglist(")")
                if tok.text == "has":
                    if len(args) != 1 or not isinstance(args[0], Select) or args[0].optional:
                        raise CelSyntaxError("invalid argument to has() macro", call_pos)
                    sel = args[0]
                    return Select(sel.pos, sel.operand, sel.field, test_only=True)
                return Call(call_pos, tok.text, args)
            return Ident(tok.pos, tok.text)
        if tok.kind == "op":
            if tok.text == "(":
                node = self.expr()
                self.expect(")")
                return node
            if tok.text == "[":
                elems: list[Node] = []
                opts: list[bool] = []
                while not self.accept("]"):
                    opts.append(self.accept("?"))
                    elems.append(self.expr())
                    if not self.accept(","):
                        self.expect("]")
                        break
                return ListLit(tok.pos, elems, opts)
            if tok.text == "{":
                entries: list[tuple[Node, Node, bool]] = []
                while not self.accept("}"):
                    optional = self.accept("?")
                    key = self.expr()
                    self.expect(":")
                    entries.append((key, self.expr(), optional))
                    if not self.accept(","):
                        self.expect("}")
                        break
                return MapLit(tok.pos, entries)
            if tok.text == ".":
                name = self.next()
                if name.kind == "ident":
                    return self.member_suffix(Ident(name.pos, name.text))
        raise CelSyntaxError(f"Syntax error: mismatched input '{tok.text}' expecting {{'[', '{{', '(', '.', '-', "
                             f"'!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
                             f"IDENTIFIER}}", tok.pos)


def parse(src: str) -> Node:
    if len(src) > MAX_SOURCE_LENGTH:
        raise CelSyntaxError(f"expression code point size exceeds limit: size: {len(src)}, limit "
                             f"{MAX_SOURCE_LENGTH}", 0)
    return _Parser(src).parse()


def format_issue(src: str, offset: int, message: str) -> str:
    """One issue rendered as cel-go's ``Issues.String()`` renders it, with the source line and a caret."""
    line_no = src.count("\n", 0, offset) + 1
    line_start = src.rfind("\n", 0, offset) + 1
    line_end = src.find("\n", offset)
    line = src[line_start:] if line_end < 0 else src[line_start:line_end]
    col = offset - line_start + 1
    return f"ERROR: <input>:{line_no}:{col}: {message}\n | {line}\n | {'.' * (col - 1)}^"
