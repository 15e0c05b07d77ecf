"""Reading nested JSON objects that may hold anything: user input, cluster objects, watch events."""

from __future__ import annotations

from typing import Any


def get(obj: Any, *path: str | int) -> Any:
    """``obj[path[0]][path[1]]…``, or None as soon as a step is missing or of the wrong type."""
    node = obj
    for key in path:
        if isinstance(key, int):
            node = node[key] if isinstance(node, list) and -len(node) <= key < len(node) else None
        else:
            node = node.get(key) if isinstance(node, dict) else None
    return node


def dicts(value: Any) -> list[dict[str, Any]]:
    """The dict items of a list, so loops over user input never trip on junk entries."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
