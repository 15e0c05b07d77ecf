"""What a drift was: the field paths that differ from what the syncer applied, and who changed them.

The paths come from comparing the syncer's fields as the cluster answered its last apply with the same
fields now (lists of different lengths count as one change of the whole list); the manager is read from
the object's ``metadata.managedFields``: of the managers other than the syncer that own the path (or, for a
path through a list item, the field holding the list), the one that wrote last. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from apimachinery.dottedpaths import Path, format_path
from apimachinery.nested import dicts

MAX_DRIFT_ENTRIES = 20  # per object: the latest drift per path, the oldest paths dropped first
UNKNOWN_MANAGER = ""  # no managedFields entry owns the path (a manager that does not track fields)


def differing_paths(before: Any, after: Any, at: Path = ()) -> list[Path]:
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[Path] = []
        for key in sorted(before.keys() | after.keys()):
            out += differing_paths(before.get(key), after.get(key), (*at, key))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            out += differing_paths(old, new, (*at, index))
        return out
    return [] if before == after else [at]


def _owns(fields: Any, path: Path) -> bool:
    """Whether a FieldsV1 set holds ``path``'s map steps (up to its first list index)."""
    node = fields
    for step in path:
        if isinstance(step, int):
            return True
        if not isinstance(node, dict) or f"f:{step}" not in node:
            return False
        node = node[f"f:{step}"]
    return True


def manager_of(live: dict[str, Any], path: Path, own_manager: str) -> str:
    entries = dicts((live.get("metadata") or {}).get("managedFields"))
    owners = [e for e in entries if e.get("manager") != own_manager and _owns(e.get("fieldsV1"), path)]
    if not owners:
        return UNKNOWN_MANAGER
    return str(max(owners, key=lambda e: str(e.get("time") or "")).get("manager") or UNKNOWN_MANAGER)


def describe(before: dict[str, Any], live: dict[str, Any], after: dict[str, Any], own_manager: str,
             time: str, corrected: bool) -> list[dict[str, Any]]:
    """One drift entry per differing path: ``{path, manager, time, corrected}``."""
    return [{"path": format_path(path), "manager": manager_of(live, path, own_manager), "time": time,
             "corrected": corrected} for path in differing_paths(before, after)]


def merged(history: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history`` with ``new`` entries replacing those of the same path, newest last, bounded."""
    paths = {entry["path"] for entry in new}
    return ([entry for entry in history if entry["path"] not in paths] + new)[-MAX_DRIFT_ENTRIES:]
