"""Field paths written as kubectl prints them: ``spec.replicas``, ``spec.template.spec.containers[0].image``.

Owns their grammar (names joined by ``.``, each optionally followed by ``[i]`` list indexes), the reverse
(:func:`format_path`), and reading, writing and removing the value at one path of a JSON object. A path
is a tuple of steps: a ``str`` names a map key, an ``int`` a list index. Used for the fields a cluster owns
(``retainFields``): the hub checks them, the syncer leaves them out of what it applies.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

Path = tuple[str | int, ...]

# A map key as a dotted path can hold one: anything but the separators, ASCII control characters and the space
# (an annotation key such as ``example.com/x`` cannot be named; ``metadata.annotations.x`` can). The class is
# spelled out rather than written ``\s``: Python, ECMAScript, RE2 and Hypothesis each read ``\s`` differently
# (Python's takes U+001C..U+001F, the others' do not), and clients generate from the schema with all of them.
_NAME = r"[^.\[\]\x00-\x20\x7f]+"
_SEGMENT = re.compile(rf"({_NAME})((?:\[[0-9]+\])*)")
_INDEX = re.compile(r"\[([0-9]+)\]")
# The whole grammar as one regular expression, for schemas (the EdgePlacement CRD's ``retainFields`` repeats it).
PATH_PATTERN = rf"^{_NAME}(\[[0-9]+\])*(\.{_NAME}(\[[0-9]+\])*)*$"
# What is trimmed around a path (an annotation's ``a, b``; the final newline Python's ``$`` lets through): ASCII
# whitespace only, as ``str.strip()`` would also take characters a name may hold (U+3000, U+001C).
_BLANKS = " \t\n\r\f\v"


class PathError(ValueError):
    """A path that does not parse; the message says why."""


def parse_path(text: str) -> Path:
    if not isinstance(text, str) or not text.strip(_BLANKS):
        raise PathError("a field path may not be empty")
    steps: list[str | int] = []
    for segment in text.strip(_BLANKS).split("."):
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            raise PathError(f'"{text}" is not a field path (names joined by ".", list items as [i], '
                            f'e.g. spec.replicas or spec.template.spec.containers[0].image)')
        steps.append(match.group(1))
        steps.extend(int(i) for i in _INDEX.findall(match.group(2)))
    return tuple(steps)


def parse_paths(texts: Iterable[str]) -> tuple[Path, ...]:
    return tuple(parse_path(text) for text in texts)


def split_list(annotation: str) -> list[str]:
    """The paths of a comma-separated annotation value (blanks dropped)."""
    return [part.strip() for part in annotation.split(",") if part.strip()]


def format_path(path: Path) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def value_at(obj: Any, path: Path) -> tuple[bool, Any]:
    """(whether ``obj`` has a value at ``path``, that value)."""
    node = obj
    for step in path:
        if isinstance(step, int):
            if not isinstance(node, list) or not 0 <= step < len(node):
                return False, None
        elif not isinstance(node, dict) or step not in node:
            return False, None
        node = node[step]
    return True, node


def with_values(obj: dict[str, Any], paths: Iterable[Path], source: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` whose value at each path is ``source``'s, or absent where ``source`` has none.

    A path through a list item ``obj`` lacks is left alone: there is no item to hold the value."""
    out = copy.deepcopy(obj)
    for path in paths:
        present, value = value_at(source, path)
        parent_found, parent = value_at(out, path[:-1])
        if not parent_found:
            continue
        last = path[-1]
        if isinstance(last, int):
            if isinstance(parent, list) and 0 <= last < len(parent) and present:
                parent[last] = copy.deepcopy(value)
        elif isinstance(parent, dict):
            if present:
                parent[last] = copy.deepcopy(value)
            else:
                parent.pop(last, None)
    return out
