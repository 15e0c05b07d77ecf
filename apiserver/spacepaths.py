"""Space paths: how a space's place in the tree is written, stored and validated.

Every space is a child of another except ``root``. Its *path* is the names from ``root`` down, joined by
``:`` (``root:org:team``); that is what people read and type, and what ``/clusters/<path>`` serves. Its
*id* is the path below ``root`` (``org:team``; ``root`` itself is ``root``): the ``space`` of every key in
the store, the name every layer above this one uses for it, and what spaces created before the hierarchy
were already stored under, so their data stays valid. ``/clusters/<id>`` reaches the same space, so old
kubeconfigs keep working. Because no Space may be named ``root``, an id never starts with ``root`` and the
two forms can never be confused.

A space ``team`` created in ``root:org`` is a Space object named ``team`` stored in space ``org``: a
space's children are exactly the Space objects inside it, and nothing else records the tree. Names are DNS
labels (no ``:``), checked with every other name rule in ``apimachinery.names``.
"""

from __future__ import annotations

from apimachinery.errors import Cause
from apimachinery.names import invalid, is_dns1123_label

ROOT = "root"
SEPARATOR = ":"
# Levels below root: root:1:2:…:8. A bound keeps paths readable and each request's parent walk short.
MAX_DEPTH = 8
# Characters of the whole path (``root:…``); its id, 5 shorter, then always fits the store's 253-character
# ``space`` column.
MAX_PATH_LENGTH = 253


def store_id(path: str) -> str:
    """The id of a space given its path (``root:org:team`` → ``org:team``) or its id (left as it is)."""
    if path.startswith(ROOT + SEPARATOR):
        return path[len(ROOT) + 1:]
    return path


def full_path(space: str) -> str:
    """The path of a space given its id or its path (``org:team`` → ``root:org:team``)."""
    space = store_id(space)
    return ROOT if space == ROOT else f"{ROOT}{SEPARATOR}{space}"


def child_id(parent: str, name: str) -> str:
    """The id of the space that Space object ``name`` stored in space ``parent`` (an id) stands for."""
    return name if parent == ROOT else f"{parent}{SEPARATOR}{name}"


def parent_id(space: str) -> str | None:
    """The id of the space holding ``space``'s Space object; None for root."""
    if space == ROOT:
        return None
    parent, sep, _ = space.rpartition(SEPARATOR)
    return parent if sep else ROOT


def base_name(space: str) -> str:
    """The name of ``space``'s Space object in its parent (``org:team`` → ``team``)."""
    return space.rpartition(SEPARATOR)[2]


def depth(space: str) -> int:
    """Levels below root: 0 for root, 1 for ``team-a``, 2 for ``org:team``."""
    return 0 if space == ROOT else space.count(SEPARATOR) + 1


def child_causes(parent: str, name: str) -> list[Cause]:
    """What forbids a Space named ``name`` in space ``parent`` (an id) beyond the name rules: its depth and
    the length of its path, as 422 causes on ``metadata.name``."""
    path = full_path(child_id(parent, name))
    causes = []
    if depth(parent) + 1 > MAX_DEPTH:
        causes.append(invalid("metadata.name", name, f'space "{path}" would be {depth(parent) + 1} levels below '
                                                     f"{ROOT}: must be no more than {MAX_DEPTH}"))
    if len(path) > MAX_PATH_LENGTH:
        causes.append(invalid("metadata.name", name, f'the path of space "{path[:64]}…" would be {len(path)} '
                                                     f"characters: must be no more than {MAX_PATH_LENGTH}"))
    return causes


def path_problems(path: str) -> list[str]:
    """Why ``path`` (a full path) cannot name a space; empty when it can. Checked by clients before a path
    goes into a URL, so that something like ``../x`` never points anywhere but a space."""
    segments = path.split(SEPARATOR)
    if segments[0] != ROOT:
        return [f'must start with "{ROOT}"']
    problems = []
    for segment in segments[1:]:
        if segment == ROOT:
            problems.append(f'"{ROOT}" names only the root space')
        problems.extend(f'"{segment}": {msg}' for msg in is_dns1123_label(segment))
    return problems


def resolve(current: str, target: str) -> str:
    """The full path ``target`` names when typed in space ``current`` (a full path), as ``kubectl ws`` reads it:
    ``:root:org`` and anything starting with ``root`` are absolute, ``..`` is the parent, anything else
    (``team``, ``team:sub``) is below ``current``. Raises ValueError when ``target`` names no valid path."""
    if target == "..":
        parent = parent_id(store_id(current))
        if parent is None:
            raise ValueError(f'the {ROOT} space has no parent')
        return full_path(parent)
    absolute = target[1:] if target.startswith(SEPARATOR) else target
    if absolute.split(SEPARATOR)[0] == ROOT:
        path = absolute
    elif target.startswith(SEPARATOR):
        raise ValueError(f'invalid space path "{target}": an absolute path starts with "{SEPARATOR}{ROOT}"')
    else:
        path = f"{current}{SEPARATOR}{target}"
    problems = path_problems(path)
    if problems:
        raise ValueError(f'invalid space path "{target}": ' + "; ".join(problems))
    return path
