"""``resource.Quantity`` as a number: the one parser shared by validation, the simulator and the syncer.

A module of its own (no other spaces imports) so that the syncer can read quantities without loading
the built-in kinds.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

_QUANTITY_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                          r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: Any) -> Decimal | None:
    """A ``resource.Quantity`` as a number, or None when it is not one."""
    if (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY_RE.match(value.strip())
    if not match:
        return None
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:
        return None
    suffix = match.group(2) or ""
    if suffix in _BINARY:
        return number * (2 ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    return number.scaleb(int(suffix[1:]))
