"""The JSONPath subset CRDs use: additionalPrinterColumns and scale subresource paths.

Supports ``.field``, ``['field.with.dots']``, ``[index]`` (negative too), ``[*]`` and filters
``[?(@.key=="value")]`` / ``[?(@.key!="value")]``, as client-go's jsonpath evaluates them for
``kubectl get`` columns. Evaluation never raises on missing data; it yields no values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_TOKEN = re.compile(
    r"""\.(?P<field>(?:\\\.|[A-Za-z0-9_\-$/])+)"""
    r"""|\[\s*'(?P<quoted>[^']*)'\s*\]"""
    r"""|\[\s*"(?P<dquoted>[^"]*)"\s*\]"""
    r"""|\[\s*(?P<index>-?\d+)\s*\]"""
    r"""|\[\s*(?P<star>\*)\s*\]"""
    r"""|\[\s*\?\(\s*@\.(?P<fkey>[A-Za-z0-9_.\-]+)\s*(?P<op>==|!=)\s*(?P<fval>"[^"]*"|'[^']*'|-?\d+|true|false)\s*\)\s*\]"""
)

Step = tuple[str, Any]


class JSONPathError(ValueError):
    pass


def parse(path: str) -> list[Step]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise JSONPathError(f"invalid JSONPath {path!r} at position {pos}")
        if m.group("field") is not None:
            # Label keys contain dots; kubectl's JSONPath escapes them as "\.".
            steps.append(("field", m.group("field").replace("\\.", ".")))
        elif m.group("quoted") is not None or m.group("dquoted") is not None:
            steps.append(("field", m.group("quoted") if m.group("quoted") is not None else m.group("dquoted")))
        elif m.group("index") is not None:
            steps.append(("index", int(m.group("index"))))
        elif m.group("star") is not None:
            steps.append(("star", None))
        else:
            raw = m.group("fval")
            value: Any = raw[1:-1] if raw[0] in "\"'" else (raw == "true" if raw in ("true", "false") else int(raw))
            steps.append(("filter", (m.group("fkey").split("."), m.group("op"), value)))
        pos = m.end()
    if not steps:
        raise JSONPathError(f"empty JSONPath {path!r}")
    return steps


def _walk(node: Any, steps: list[Step]) -> Iterator[Any]:
    if not steps:
        yield node
        return
    kind, arg = steps[0]
    rest = steps[1:]
    if kind == "field":
        if isinstance(node, dict) and arg in node:
            yield from _walk(node[arg], rest)
    elif kind == "index":
        if isinstance(node, list) and -len(node) <= arg < len(node):
            yield from _walk(node[arg], rest)
    elif kind == "star":
        values = node if isinstance(node, list) else list(node.values()) if isinstance(node, dict) else []
        for item in values:
            yield from _walk(item, rest)
    elif kind == "filter" and isinstance(node, list):
        keys, op, expected = arg
        for item in node:
            actual: Any = item
            for key in keys:
                actual = actual.get(key) if isinstance(actual, dict) else None
            if (actual == expected) == (op == "=="):
                yield from _walk(item, rest)


def values(obj: Any, path: str | list[Step]) -> list[Any]:
    steps = parse(path) if isinstance(path, str) else path
    return list(_walk(obj, steps))


def first(obj: Any, path: str | list[Step]) -> Any:
    found = values(obj, path)
    return found[0] if found else None


def set_value(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set a simple dotted field path (``.spec.replicas``), creating objects on the way."""
    steps = parse(path)
    if any(kind != "field" for kind, _ in steps):
        raise JSONPathError(f"{path!r} is not a simple field path")
    node = obj
    for _, key in steps[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[steps[-1][1]] = value
