"""Taints on SyncTargets and the tolerations of placements: kube's rules, and ``spacehub cluster taint``'s syntax.

Owns the reading of ``SyncTarget.spec.taints`` and of a placement's ``spec.tolerations``, whether a
toleration tolerates a taint (``k8s.io/api/core/v1`` ``Toleration.ToleratesTaint``), until when a
tolerated ``NoExecute`` taint is tolerated (``tolerationSeconds`` counted from the taint's ``timeAdded``),
and the ``kubectl taint`` argument syntax (``key=value:Effect``, ``key:Effect-``, ``key-``). Never does
I/O: the command (:mod:`inventory.cli`) is a thin caller of the placement REST API, kept apart so that the hub,
which applies these rules, does not import the client.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apimachinery.durations import parse_time

NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"
EFFECTS = (NO_SCHEDULE, NO_EXECUTE)
OPERATORS = ("Equal", "Exists")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str
    time_added: dt.datetime | None = None  # NoExecute: when it was put on (tolerationSeconds count from it)


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""  # "": every effect
    seconds: float | None = None  # NoExecute only: tolerated for so long after the taint was added

    def tolerates(self, taint: Taint) -> bool:
        """kube's ``ToleratesTaint``: an empty key with Exists matches every taint, an empty effect every effect."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return bool(self.key) and self.value == taint.value


def taints_of(target: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The well-formed taints of a SyncTarget (the CRD's schema refuses the rest; older objects may hold them)."""
    raw = (target.get("spec") or {}).get("taints")
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if isinstance(item, Mapping) and isinstance(item.get("key"), str) and item.get("effect") in EFFECTS:
            out.append(Taint(item["key"], str(item.get("value") or ""), item["effect"],
                             parse_time(item.get("timeAdded"))))
    return tuple(out)


def tolerations_of(raw: Any) -> tuple[Toleration, ...]:
    """A placement's ``spec.tolerations`` (validated by :mod:`placement.schedulingspec`; bad items are skipped)."""
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        seconds = item.get("tolerationSeconds")
        out.append(Toleration(str(item.get("key") or ""), str(item.get("operator") or "Equal"),
                              str(item.get("value") or ""), str(item.get("effect") or ""),
                              float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool)
                              else None))
    return tuple(out)


def blocks_new_choice(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first taint that keeps a cluster from being newly chosen (any effect, not tolerated), or None."""
    for taint in taints:
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def evicting(taints: Sequence[Taint], tolerations: Sequence[Toleration], now: dt.datetime,
             seen: Mapping[Taint, dt.datetime] | None = None) -> tuple[Taint | None, dt.datetime | None]:
    """(the NoExecute taint that moves a chosen cluster's copies off now, or None; the earliest later time one
    will). A taint without ``timeAdded`` counts from ``seen`` (when the deciding hub first saw it), else now."""
    soonest: dt.datetime | None = None
    for taint in taints:
        if taint.effect != NO_EXECUTE:
            continue
        matching = [t for t in tolerations if t.tolerates(taint)]
        if not matching:
            return taint, None
        if any(t.seconds is None for t in matching):
            continue  # tolerated for ever
        added = taint.time_added or (seen or {}).get(taint) or now
        until = added + dt.timedelta(seconds=max(t.seconds or 0.0 for t in matching))
        if until <= now:
            return taint, None
        soonest = until if soonest is None else min(soonest, until)
    return None, soonest


def describe(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


# --- the kubectl taint syntax and its merge --------------------------------------------------------


def parse_taint_args(args: Sequence[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``key=value:Effect`` / ``key:Effect`` to add, ``key:Effect-`` / ``key-`` to remove (``kubectl taint``).
    Raises ValueError naming the bad argument."""
    add: list[dict[str, Any]] = []
    remove: list[dict[str, Any]] = []
    for arg in args:
        removing = arg.endswith("-")
        body = arg[:-1] if removing else arg
        key_value, colon, effect = body.partition(":")
        key, eq, value = key_value.partition("=")
        if not key or (colon and effect not in EFFECTS) or (not removing and not colon):
            raise ValueError(f'invalid taint "{arg}": expected KEY[=VALUE]:EFFECT to add or KEY[:EFFECT]- to '
                             f'remove, EFFECT one of {", ".join(EFFECTS)}')
        if removing:
            remove.append({"key": key, **({"effect": effect} if effect else {})})
        else:
            add.append({"key": key, **({"value": value} if eq else {}), "effect": effect})
    return add, remove


def merge_taints(current: Any, add: Sequence[Mapping[str, Any]], remove: Sequence[Mapping[str, Any]],
                 now: dt.datetime) -> list[dict[str, Any]]:
    """``current`` with ``remove`` taken off (by key, and effect if given) and ``add`` put on, replacing a taint of
    the same key and effect; a NoExecute taint gets ``timeAdded`` (kept when it was there before unchanged)."""
    taints = [dict(t) for t in current if isinstance(t, Mapping)] if isinstance(current, list) else []
    for r in remove:
        taints = [t for t in taints if not (t.get("key") == r.get("key") and
                                            (not r.get("effect") or t.get("effect") == r.get("effect")))]
    for a in add:
        old = next((t for t in taints if t.get("key") == a.get("key") and t.get("effect") == a.get("effect")), None)
        new = {k: v for k, v in a.items() if k in ("key", "value", "effect") and v not in (None, "")}
        if new.get("effect") == NO_EXECUTE:
            kept = old is not None and old.get("value", "") == new.get("value", "") and old.get("timeAdded")
            new["timeAdded"] = kept or now.strftime("%Y-%m-%dT%H:%M:%SZ")
        taints = [t for t in taints if t is not old] + [new]
    return taints
