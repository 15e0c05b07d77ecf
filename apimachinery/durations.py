"""How kubectl and server-side tables show an age: apimachinery's ``duration.HumanDuration``.

Used by the AGE columns the server computes and by every command that prints a table.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_time(timestamp: Any) -> datetime | None:
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        parsed = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``: about two significant figures."""
    whole = int(seconds)  # Go truncates toward zero
    # Up to two seconds in the future is tolerated as clock skew between machines.
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        s = whole % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """The AGE cell: ``HumanDuration(now - timestamp)``, or ``<unknown>`` when there is no timestamp."""
    then = parse_time(timestamp)
    if then is None:
        return "<unknown>"
    current = now or datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    return human_duration((current - then).total_seconds())
