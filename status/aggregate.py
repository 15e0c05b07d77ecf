"""One status from many clusters' statuses of one object: KubeStellar's multi-cluster aggregation rules.

Pure. With one status: a copy. With several: integer fields take the **min** (ready, available, updated
replicas …: the object is as far along as its slowest cluster), except those that count what is missing
or merely exists — ``unavailableReplicas``, ``numberUnavailable``, ``numberMisscheduled``, ``failed`` and
``replicas`` (pods that exist, surge included) — which take the **max**; booleans AND; ``conditions`` are
merged per type (any ``False`` wins, else all ``True`` is ``True``, else ``Unknown``), carrying the reason,
message and ``lastTransitionTime`` of the latest transition among the clusters with the winning status;
other maps and lists are kept only when every cluster has the same shape (same keys, same length), strings
only when equal. ``observedGeneration`` is left out: what it means across clusters is the caller's to say.
With ``divided`` (replicas split across clusters) integer fields are summed instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MAX_FIELDS = frozenset({"unavailableReplicas", "numberUnavailable", "numberMisscheduled", "failed", "replicas"})
_DROP = object()
_MISSING = object()


def aggregate(statuses: Sequence[Mapping[str, Any] | None], *, divided: bool = False) -> dict[str, Any] | None:
    present = [s for s in statuses if isinstance(s, Mapping)]
    if not present:
        return None
    if len(present) == 1:
        out = dict(present[0])
        out.pop("observedGeneration", None)
        return out
    merged = _merge_maps(present, divided, top=True)
    return merged if isinstance(merged, dict) else None


def _merge_maps(values: Sequence[Mapping[str, Any]], divided: bool, top: bool = False) -> Any:
    """Maps merge key by key. Inside a status, a nested map is kept only when every cluster has the same
    keys; at the top, an integer a cluster leaves out counts as 0 (Deployments omit ``readyReplicas: 0``)."""
    keysets = [set(v) for v in values]
    if not top and any(k != keysets[0] for k in keysets):
        return _DROP
    out: dict[str, Any] = {}
    for key in sorted(set().union(*keysets)):
        if top and key == "observedGeneration":
            continue
        members = [v.get(key, _MISSING) for v in values]
        present = [m for m in members if m is not _MISSING]
        if key == "conditions" and all(isinstance(m, list) for m in present):
            merged: Any = _merge_conditions(present, len(values))
        elif len(present) < len(members):
            if not all(_is_int(m) for m in present):
                continue
            merged = _merge(key, [0 if m is _MISSING else m for m in members], divided)
        else:
            merged = _merge(key, members, divided)
        if merged is not _DROP:
            out[key] = merged
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _merge(key: str, members: Sequence[Any], divided: bool) -> Any:
    first = members[0]
    if all(isinstance(m, bool) for m in members):
        return all(members)
    if all(_is_int(m) for m in members):
        if divided:
            return sum(members)
        return max(members) if key in MAX_FIELDS else min(members)
    if all(isinstance(m, Mapping) for m in members):
        return _merge_maps(members, divided)
    if all(isinstance(m, list) for m in members):
        if any(len(m) != len(first) for m in members):
            return _DROP
        items = [_merge("", [m[i] for m in members], divided) for i in range(len(first))]
        return _DROP if any(i is _DROP for i in items) else items
    if all(m == first for m in members):
        return first
    return _DROP


def _merge_conditions(lists: Sequence[list[Any]], clusters: int) -> list[dict[str, Any]]:
    by_type: dict[str, list[Mapping[str, Any]]] = {}
    for conditions in lists:
        for condition in conditions:
            if isinstance(condition, Mapping) and isinstance(condition.get("type"), str):
                by_type.setdefault(condition["type"], []).append(condition)
    out = []
    for kind in sorted(by_type):
        members = by_type[kind]
        statuses = [str(c.get("status")) for c in members]
        if "False" in statuses:
            winner = "False"
        elif len(members) == clusters and all(s == "True" for s in statuses):
            winner = "True"
        else:
            winner = "Unknown"
        carriers = [c for c in members if str(c.get("status")) == winner] or members
        latest = max(carriers, key=lambda c: str(c.get("lastTransitionTime") or ""))
        condition = {k: v for k, v in latest.items() if k in ("type", "reason", "message", "lastTransitionTime",
                                                               "lastUpdateTime")}
        condition["status"] = winner
        out.append(condition)
    return out
