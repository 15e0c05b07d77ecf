"""Argument checks and size charging that every function family of the standard library shares.

Python's ``bool`` and the parser's ``UInt`` both subclass ``int``, so CEL's ``int`` is tested by exact
type. String, bytes and list arguments are charged by their size before the work on them is done.
"""

from __future__ import annotations

from typing import Any

from cel.types import Meter, NoOverload, size_cost, value_size


def is_int(v: Any) -> bool:
    return type(v) is int


def charge_sizes(m: Meter, *values: Any) -> None:
    m.charge(size_cost(sum(value_size(v) for v in values)))


def require_strings(name: str, *values: Any) -> None:
    if not all(isinstance(v, str) for v in values):
        raise NoOverload(name, values)
