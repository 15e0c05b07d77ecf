"""One status from many clusters' statuses: KubeStellar's multi-WEC aggregation rules for one object.

When a workload object runs in several clusters, the status it shows in its space summarises theirs
(KubeStellar's ``wantMultiWECReportedState``, docs ``multi-wec-aggregated-status.md``): readiness counts
take the least any cluster has, counts of what is wrong or merely present take the most, flags must
hold everywhere, a condition is False when any cluster says so, and whatever the clusters disagree on
in shape or text is left out rather than invented — except a Pod's ``phase``, which is the least advanced one
(:data:`POD_PHASES`): a Pod runs everywhere only when it runs in every cluster. With ``divided`` (the replicas
are split across the clusters rather than repeated in each) every count is the sum instead.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

# Counts of pods that exist or are wrong: the summary must not hide any cluster's (surge included).
# numberMisscheduled as KubeStellar's own DaemonSet aggregation (pkg/status/aggregation/daemonset.go).
MAX_FIELDS = frozenset({"replicas", "unavailableReplicas", "numberUnavailable", "numberMisscheduled", "failed"})
# The caller maps the space object's generation; a cluster's own counter means nothing there.
GENERATION = "observedGeneration"
# The reason of a condition some clusters do not report at all, so that none of them speaks for it.
NOT_EVERYWHERE = "NotReportedByAllClusters"

_DROP = object()  # what clusters disagree on: left out of the result
# A Pod's phases, the one that speaks for all first: any cluster's failure, then one that cannot tell, then one
# still starting; Succeeded only when it is done everywhere.
POD_PHASES = ("Failed", "Unknown", "Pending", "Running", "Succeeded")


def aggregate(statuses: Sequence[Mapping[str, Any] | None], *, divided: bool = False) -> dict[str, Any] | None:
    """The status one object shows in its space, from the ``.status`` each of its clusters reported.

    ``None`` entries (clusters that reported none) are ignored; with no status at all the result is
    ``None``, with one it is a copy. ``observedGeneration`` is never in the result: the caller maps the
    space object's generation. Keys come out sorted and the result depends only on the statuses given
    (condition types in the order they first appear), never on chance.
    """
    present = [status for status in statuses if status is not None]
    if not present:
        return None
    if len(present) == 1:
        single = copy.deepcopy(dict(present[0]))
        single.pop(GENERATION, None)
        return single
    out: dict[str, Any] = {}
    for key in sorted({key for status in present for key in status} - {GENERATION}):
        value = _merge_top(key, [status.get(key) for status in present], divided)
        if value is not _DROP:
            out[key] = value
    return out


def _merge_top(key: str, values: list[Any], divided: bool) -> Any:
    """A top-level field, which clusters may leave out: Kubernetes omits zero counts and false flags."""
    if key == "conditions" and _are_conditions(values):
        return _merge_conditions(values)
    if key == "phase" and values and all(v in POD_PHASES for v in values):
        return min(values, key=POD_PHASES.index)
    given = [v for v in values if v is not None]
    if not given:
        return _DROP
    if len(given) < len(values):
        if all(_is_number(v) for v in given):
            values = [0 if v is None else v for v in values]
        elif all(isinstance(v, bool) for v in given):
            values = [False if v is None else v for v in values]
        else:
            return _DROP
    return _merge(key, values, divided)


def _merge(key: str, values: list[Any], divided: bool) -> Any:
    """Values every cluster has at one place, combined by the rule for what they are; ``_DROP`` if none fits."""
    if key == "conditions" and _are_conditions(values):
        return _merge_conditions(values)
    if all(isinstance(v, bool) for v in values):
        return all(values)
    if all(_is_number(v) for v in values):
        return _merge_numbers(key, values, divided)
    if all(isinstance(v, Mapping) for v in values):
        keys = set(values[0])
        if any(set(v) != keys for v in values):
            return _DROP
        out = {}
        for name in sorted(keys):
            merged = _merge(name, [v[name] for v in values], divided)
            if merged is not _DROP:
                out[name] = merged
        return out
    if all(isinstance(v, list) for v in values):
        shape = _shape(values[0])
        if any(_shape(v) != shape for v in values):
            return _DROP
        items = [_merge(key, list(column), divided) for column in zip(*values, strict=True)]
        # An item is known only whole: one that lost a field the clusters disagree on is an item no
        # cluster has, so the list is kept only when every item survives intact.
        if any(item is _DROP or _shape(item) != _shape(values[0][i]) for i, item in enumerate(items)):
            return _DROP
        return items
    first = values[0]
    if all(type(v) is type(first) and v == first for v in values):
        return first
    return _DROP


def _merge_numbers(key: str, values: list[int | float], divided: bool) -> int | float:
    if divided and all(isinstance(v, int) for v in values):
        return sum(values)
    return max(values) if key in MAX_FIELDS else min(values)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shape(value: Any) -> Any:
    """What must agree for lists to be combined: keys, lengths and kinds of leaves, not their values."""
    if isinstance(value, Mapping):
        return tuple(sorted((k, _shape(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", *(_shape(v) for v in value))
    if _is_number(value):
        return "number"
    return type(value).__name__


# --- conditions -------------------------------------------------------------------------------------


def _are_conditions(values: list[Any]) -> bool:
    """Whether these are lists of conditions ({type, status, …}); a cluster may have none (``None``)."""
    lists = [v for v in values if v is not None]
    return bool(lists) and all(
        isinstance(v, list) and all(isinstance(c, Mapping) and isinstance(c.get("type"), str) for c in v)
        for v in lists)


def _merge_conditions(values: list[Any]) -> list[dict[str, Any]]:
    """Per type: any False is False, all True is True, else Unknown (a cluster without it does not know),
    carrying the entry of the latest transition among the clusters that have the winning status."""
    lists: list[list[Mapping[str, Any]]] = [v or [] for v in values]
    types = list(dict.fromkeys(c["type"] for conditions in lists for c in conditions))
    out = []
    for kind in types:
        entries = [next((c for c in conditions if c["type"] == kind), None) for conditions in lists]
        said = [e.get("status") if e is not None else None for e in entries]
        status = "False" if "False" in said else "True" if all(s == "True" for s in said) else "Unknown"
        winners = [e for e in entries if e is not None and e.get("status") == status]
        if winners:
            merged = dict(max(winners, key=_transition_order))
        else:
            # Some say True, the rest have no such condition: nobody's reason explains Unknown.
            latest = max((e for e in entries if e is not None), key=_transition_order)
            reporting = sum(e is not None for e in entries)
            merged = {"type": kind, "reason": NOT_EVERYWHERE,
                      "message": f"{reporting} of {len(entries)} clusters report this condition"}
            if "lastTransitionTime" in latest:
                merged["lastTransitionTime"] = latest["lastTransitionTime"]
        merged["status"] = status
        out.append({k: merged[k] for k in sorted(merged)})
    return out


_EARLIEST = dt.datetime.min.replace(tzinfo=dt.UTC)


def _transition_order(condition: Mapping[str, Any]) -> tuple[dt.datetime, str]:
    """Latest ``lastTransitionTime`` last; ties by content, so the input order never decides."""
    return _time(condition.get("lastTransitionTime")), json.dumps(condition, sort_keys=True, default=str)


def _time(value: Any) -> dt.datetime:
    if not isinstance(value, str):
        return _EARLIEST
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return _EARLIEST
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


__all__ = ["aggregate"]
