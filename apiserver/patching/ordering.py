"""Element identity and element order for merged lists, as apimachinery's strategicpatch decides them.

Strategic merge compares values the way Go compares decoded JSON (a bool is never equal to a
number), identifies map elements by their merge-key value, and orders a merged list by the rule of
the "preserve order in strategic merge patch" design: elements named by the patch (or by its
``$setElementOrder`` list) keep the patch's relative order, elements only the server has keep the
live relative order, and the two runs are interleaved using the live positions. An element the
server has never seen therefore lands before the server-only elements it is compared with, which is
why a strategic patch without ``$setElementOrder`` puts a new container first, exactly as a real
kube-apiserver does.
"""

from __future__ import annotations

from typing import Any

from apiserver.patching.failures import malformed, rejected

MAP = "map"
LIST = "list"


def kind(value: Any) -> str:
    """The JSON kind of a decoded value; ``bool`` is told apart from numbers like Go's types are."""
    if isinstance(value, dict):
        return MAP
    if isinstance(value, list):
        return LIST
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string"


def same(left: Any, right: Any) -> bool:
    return kind(left) == kind(right) and left == right


def element_kind(*lists: list[Any]) -> str | None:
    """The one kind shared by every element of ``lists``; None when they are all empty."""
    found: str | None = None
    for items in lists:
        for item in items:
            current = kind(item)
            if found is None and current == LIST:
                raise rejected("lists of lists are not supported")
            if found is not None and current != found:
                raise malformed("list element types are not identical")
            found = current
    return found


def identity(value: Any) -> tuple[str, Any] | None:
    """A hashable stand-in for a scalar that keeps :func:`same` semantics; None for maps and lists."""
    value_kind = kind(value)
    return None if value_kind in (MAP, LIST) else (value_kind, value)


def merge_key_value(item: Any, merge_key: str) -> Any:
    """The merge-key value of a list element, which must be a map carrying it."""
    if not isinstance(item, dict):
        raise malformed(f"expected a map in a list merged by {merge_key!r}, got {kind(item)}")
    if merge_key not in item:
        raise malformed(f"map: {_brief(item)} does not contain declared merge key: {merge_key}")
    return item[merge_key]


def find_by_key(items: list[Any], merge_key: str, value: Any) -> int:
    """Index of the first map element whose merge key equals ``value``, or -1."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise malformed(f"value for key {i} is not a map")
        if merge_key in item and same(item[merge_key], value):
            return i
    return -1


def partition(merged: list[Any], named: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Split ``merged`` into the elements ``named`` mentions and the ones only the server has."""
    if merge_key:
        for item in (*merged, *named):
            merge_key_value(item, merge_key)
    mentioned = _Positions(named, merge_key)
    in_patch: list[Any] = []
    server_only: list[Any] = []
    for item in merged:
        (in_patch if mentioned.of(item) >= 0 else server_only).append(item)
    return in_patch, server_only


def normalize(in_patch: list[Any], server_only: list[Any], patch_order: list[Any],
              server_order: list[Any], merge_key: str) -> list[Any]:
    """Order the merged list: patch order for patch items, live order for the rest, interleaved.

    The inputs come from :func:`partition`, which has already checked their merge keys.
    """
    live = _Positions(server_order, merge_key)
    in_patch = _sorted_by(in_patch, _Positions(patch_order, merge_key))
    server_only = _sorted_by(server_only, live)
    return _interleave(server_only, in_patch, live)


class _Positions:
    """First position of each element (or merge-key value) in a list, looked up in constant time."""

    def __init__(self, items: list[Any], merge_key: str) -> None:
        self.merge_key = merge_key
        self.items = items
        self.first: dict[tuple[str, Any], int] = {}
        for i, item in enumerate(items):
            identity = self._identity(item)
            if identity is not None:
                self.first.setdefault(identity, i)

    def of(self, wanted: Any) -> int:
        identity = self._identity(wanted)
        if identity is not None:
            return self.first.get(identity, -1)
        # Maps or lists as identities are unhashable; they are rare enough to search for.
        target = self._value(wanted)
        return next((i for i, item in enumerate(self.items) if same(self._value(item), target)), -1)

    def _value(self, item: Any) -> Any:
        if not self.merge_key:
            return item
        return item.get(self.merge_key) if isinstance(item, dict) else None

    def _identity(self, item: Any) -> tuple[str, Any] | None:
        return identity(self._value(item))


def _sorted_by(items: list[Any], order: _Positions) -> list[Any]:
    # Upstream's comparator only orders items both found in `order`; in every reachable case they are,
    # and items that are not keep their relative order at the end.
    def position(item: Any) -> int:
        found = order.of(item)
        return found if found >= 0 else len(order.items)

    return sorted(items, key=position)


def _interleave(server_only: list[Any], in_patch: list[Any], live: _Positions) -> list[Any]:
    """Insert server-only items among patch items wherever the live order puts them first."""
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(in_patch):
        if j >= len(in_patch):
            out.append(server_only[i])
            i += 1
        elif i >= len(server_only):
            out.append(in_patch[j])
            j += 1
        elif _before(server_only[i], in_patch[j], live):
            out.append(server_only[i])
            i += 1
        else:
            out.append(in_patch[j])
            j += 1
    return out


def _before(left: Any, right: Any, live: _Positions) -> bool:
    # Only two items the live list both holds can be compared; otherwise the patch item goes first.
    li = live.of(left)
    ri = live.of(right)
    return li >= 0 and ri >= 0 and li < ri


def _brief(item: dict[str, Any], limit: int = 200) -> str:
    text = repr(item)
    return text if len(text) <= limit else text[:limit] + "…"
