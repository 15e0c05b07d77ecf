"""``resource.Quantity`` as a number: the one parser shared by validation, the simulator and the syncer.

A module of its own (no other spaces imports) so that the syncer can read quantities without loading
the built-in kinds.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

_QUANTITY_RE = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                          r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?")
BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}  # powers of 1024
DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}  # of 10


def quantity_value(text: str) -> tuple[Fraction, bool] | None:
    """A quantity string's exact value and whether its suffix is binary (``Ki`` ... ``Ei``, which CEL's
    ``quantity`` keeps for printing), or None when the whole string is not a quantity."""
    match = _QUANTITY_RE.fullmatch(text)
    if not match:
        return None
    number = Fraction(match.group(1))
    suffix = match.group(2) or ""
    if suffix in BINARY_SUFFIXES:
        return number * 1024 ** BINARY_SUFFIXES[suffix], True
    exponent = DECIMAL_SUFFIXES[suffix] if suffix in DECIMAL_SUFFIXES else int(suffix[1:])
    return number * Fraction(10) ** exponent, False


def parse_quantity(value: Any) -> Decimal | None:
    """A ``resource.Quantity`` as a number, or None when it is not one."""
    if (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    parsed = quantity_value(value.strip())
    if parsed is None:
        return None
    exact = parsed[0]  # a decimal or binary multiple: its denominator is a power of ten
    return Decimal(exact.numerator) / Decimal(exact.denominator)
