"""Range checks for CEL's 64-bit integers, timestamps and durations: out of range is an error, never a wrap.

As cel-go's ``common/types/overflow.go``: ``int`` and ``uint`` arithmetic and conversions fail with
``integer overflow`` / ``unsigned integer overflow``, and timestamps must stay within years 1 to 9999,
durations within ±10,000 years.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cel.parser import UInt
from cel.types import EvalError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1


def checked_int64(n: int) -> int:
    if n < INT64_MIN or n > INT64_MAX:
        raise EvalError("integer overflow")
    return n


def checked_uint64(n: int) -> UInt:
    if n < 0 or n > UINT64_MAX:
        raise EvalError("unsigned integer overflow")
    return UInt(n)


_MIN_TS = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
_MAX_TS = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)


def checked_time(v: Any) -> Any:
    if isinstance(v, dt.datetime) and not (_MIN_TS <= v <= _MAX_TS):
        raise EvalError("timestamp overflow")
    if isinstance(v, dt.timedelta) and abs(v) > dt.timedelta(seconds=315_576_000_000):
        raise EvalError("duration overflow")
    return v
