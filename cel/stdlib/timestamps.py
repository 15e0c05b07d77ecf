"""CEL's timestamps and durations: RFC 3339 and Go duration text both ways, and the time-zone getters.

Owns ``timestamp(…)``, ``duration(…)`` and ``getFullYear`` … ``getMilliseconds`` (on a timestamp,
optionally in a named or fixed-offset time zone; the hour to millisecond getters on a duration too),
and the parsing and printing the Kubernetes libraries and CRD rules reuse.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from decimal import Decimal
from typing import Any

from cel.stdlib.arguments import is_int
from cel.stdlib.overflow import checked_time
from cel.types import EvalError, Meter, NoOverload, register

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_US = {"ns": Decimal("0.001"), "us": Decimal(1), "µs": Decimal(1), "μs": Decimal(1), "ms": Decimal(1000),
            "s": Decimal(1_000_000), "m": Decimal(60_000_000), "h": Decimal(3_600_000_000)}


def format_timestamp(t: dt.datetime) -> str:
    t = t.astimezone(dt.UTC)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        base += "." + f"{t.microsecond:06d}".rstrip("0")
    return base + "Z"


def format_duration(d: dt.timedelta) -> str:
    micros = d // dt.timedelta(microseconds=1)
    seconds, frac = divmod(abs(micros), 1_000_000)
    text = f"{seconds}.{frac:06d}".rstrip("0").rstrip(".") if frac else str(seconds)
    return f"{'-' if micros < 0 else ''}{text}s"


def parse_timestamp(text: str) -> dt.datetime:
    m = _RFC3339.fullmatch(text)
    if not m:
        raise EvalError(f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse')
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = m.group(7) or ""
    micro = int((frac[1:] + "000000")[:6]) if frac else 0
    zone = m.group(8)
    tz = dt.UTC if zone in ("Z", "z") else dt.timezone(
        (1 if zone[0] == "+" else -1) * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        return dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz).astimezone(dt.UTC)
    except ValueError as exc:
        raise EvalError(f'parsing time "{text}": {exc}') from None


def parse_duration(text: str) -> dt.timedelta:
    body = text
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return dt.timedelta(0)
    total = Decimal(0)
    pos = 0
    if not body:
        raise EvalError(f'time: invalid duration "{text}"')
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if not m or m.group(1) in ("", "."):
            raise EvalError(f'time: invalid duration "{text}"')
        total += Decimal(m.group(1)) * _UNIT_US[m.group(2)]
        pos = m.end()
    return checked_time(dt.timedelta(microseconds=int(sign * total)))


def _timestamp(m: Meter, v: Any) -> dt.datetime:
    if isinstance(v, dt.datetime):
        return v
    if isinstance(v, str):
        return checked_time(parse_timestamp(v))
    if is_int(v):
        try:
            return checked_time(dt.datetime.fromtimestamp(v, dt.UTC))
        except (OverflowError, OSError, ValueError):
            raise EvalError("timestamp overflow") from None
    raise NoOverload("timestamp", (v,))


def _duration(m: Meter, v: Any) -> dt.timedelta:
    if isinstance(v, dt.timedelta):
        return v
    if isinstance(v, str):
        return parse_duration(v)
    raise NoOverload("duration", (v,))


register("timestamp", _timestamp, sigs=("string->timestamp", "int->timestamp", "timestamp->timestamp"))
register("duration", _duration, sigs=("string->duration", "duration->duration"))


def _in_zone(t: dt.datetime, tz: str | None) -> dt.datetime:
    if tz is None or tz == "UTC":
        return t.astimezone(dt.UTC)
    m = re.fullmatch(r"([+-]?)(\d{2}):(\d{2})", tz)
    if m:
        offset = dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return t.astimezone(dt.timezone(-offset if m.group(1) == "-" else offset))
    try:
        return t.astimezone(zoneinfo.ZoneInfo(tz))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise EvalError(f"unknown time zone {tz}") from None


def _time_getter(name: str, of_time: Any, of_duration: Any = None) -> None:
    def getter(m: Meter, v: Any, tz: Any = None) -> int:
        if isinstance(v, dt.datetime) and (tz is None or isinstance(tz, str)):
            return int(of_time(_in_zone(v, tz)))
        if of_duration is not None and isinstance(v, dt.timedelta) and tz is None:
            return int(of_duration(v))
        raise NoOverload(name, (v,) if tz is None else (v, tz))
    member = ["timestamp->int", "timestamp,string->int"] + (["duration->int"] if of_duration else [])
    register(name, getter, member=tuple(member))


def _total(d: dt.timedelta, unit: dt.timedelta) -> int:
    return int(d / unit) if d >= dt.timedelta(0) else -int(-d / unit)


_time_getter("getFullYear", lambda t: t.year)
_time_getter("getMonth", lambda t: t.month - 1)
_time_getter("getDate", lambda t: t.day)
_time_getter("getDayOfMonth", lambda t: t.day - 1)
_time_getter("getDayOfWeek", lambda t: (t.weekday() + 1) % 7)
_time_getter("getDayOfYear", lambda t: t.timetuple().tm_yday - 1)
_time_getter("getHours", lambda t: t.hour, lambda d: _total(d, dt.timedelta(hours=1)))
_time_getter("getMinutes", lambda t: t.minute, lambda d: _total(d, dt.timedelta(minutes=1)))
_time_getter("getSeconds", lambda t: t.second, lambda d: _total(d, dt.timedelta(seconds=1)))
_time_getter("getMilliseconds", lambda t: t.microsecond // 1000,
             lambda d: _total(d, dt.timedelta(milliseconds=1)) % 1000)
