"""structured-merge-diff's typed operations on plain JSON objects, as server-side apply uses them.

The schema is read exactly as :mod:`apiserver.fieldmanager` reads it (the same list keys, key defaults,
atomic maps and lists, ``ObjectMeta`` for custom resources), so paths computed here are the paths
recorded by Update operations. Five operations, each following its upstream counterpart:

* :meth:`TypedSchema.validate` - the checks of converting a value to a typed value (list items
  that cannot be keyed, duplicate keys), with upstream's error text;
* :meth:`TypedSchema.field_set` - ``ToFieldSet``: the leaves, list items, map keys of untyped or
  ``additionalProperties`` maps, and empty or null values a value sets (no ``.`` for struct fields);
* :meth:`TypedSchema.ensure_named_fields` - ``EnsureNamedFieldsAreMembers``: struct fields with
  members below them become members themselves, so pruning can remove whole structs;
* :meth:`TypedSchema.merge` - ``Merge``: maps key by key, associative lists item by item in
  upstream's interleaved order, everything atomic replaced by the applied value;
* :meth:`TypedSchema.remove_items` - ``RemoveItems``: drop member paths (with their subtrees).

Nulls are kept while the operations run, as upstream keeps them (a map emptied by removal becomes
null, which is itself a member of the field set); :func:`strip_nulls` drops them at the end as the
apiserver's conversion to the stored object does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from apiserver.fieldmanager import (
    FieldSet,
    Path,
    PathElement,
    UntrackableError,
    child_schema,
    format_path,
    item_keyer,
    list_keys,
    root_schema,
    schema_view,
)

ABSENT: Any = object()  # a value that is not there at all (Go's nil), unlike JSON null (None)

View = Mapping[str, Any] | None


class TypedError(ValueError):
    """A value that cannot be read with its schema; ``errors`` are upstream's ValidationErrors."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        text = errors[0] if len(errors) == 1 else "errors:\n" + "\n".join(f"  {e}" for e in errors)
        super().__init__(text)


class _ItemError(ValueError):
    """A list item that has no path element."""


def _go_quote_list(names: Iterable[str]) -> str:
    # fmt's %q of a []string: ["a" "b"].
    return "[" + " ".join(f'"{n}"' for n in names) + "]"


class _Trie:
    """A field set as structured-merge-diff stores it: members and children per path element."""

    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, _Trie] = {}

    @classmethod
    def of(cls, fields: FieldSet) -> _Trie:
        root = cls()
        for path in fields:
            node = root
            for pe in path[:-1]:
                node = node.children.setdefault(pe, cls())
            node.members.add(path[-1])
        return root


class TypedSchema:
    """One kind's schema (a built-in definition or a custom resource's inline schema)."""

    def __init__(self, schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> None:
        self.defs = defs
        self.root: View = root_schema(schema, defs)

    # -- schema navigation -------------------------------------------------------------------
    def child(self, view: View, key: str) -> View:
        return schema_view(child_schema(view, key), self.defs)

    def items(self, view: View) -> View:
        return schema_view(view.get("items"), self.defs) if view is not None else None

    @staticmethod
    def is_field(view: View, key: str) -> bool:
        """A struct field (a declared property), as opposed to a key of a map."""
        return view is not None and key in (view.get("properties") or {})

    @staticmethod
    def is_atomic_map(view: View) -> bool:
        return view is not None and view.get("x-kubernetes-map-type") == "atomic"

    @staticmethod
    def list_keys(view: View) -> tuple[str, ...] | None:
        """None for an atomic list, else the key fields of the associative list (empty for a set)."""
        return list_keys(view)

    def keyer(self, view: View, keys: tuple[str, ...]) -> Callable[[Any], PathElement]:
        """How items of an associative list are addressed; raises :class:`_ItemError`."""
        by_key = item_keyer(keys, view.get("items") if view is not None else None, self.defs)
        if not keys:
            def by_value(item: Any) -> PathElement:
                if isinstance(item, dict):
                    raise _ItemError("associative list without keys has an element that's a map type")
                if isinstance(item, list):
                    raise _ItemError("not supported: associative list with lists as elements")
                if item is None:
                    raise _ItemError("associative list without keys has an element that's an explicit null")
                return PathElement.value(item)
            return by_value

        def keyed(item: Any) -> PathElement:
            if item is None:
                raise _ItemError("associative list with keys may not have a null element")
            if not isinstance(item, dict):
                raise _ItemError("associative list with keys may not have non-map elements")
            try:
                return by_key(item)
            except UntrackableError:
                raise _ItemError(f"associative list with keys has an element that omits all key fields "
                                 f"{_go_quote_list(keys)} (and doesn't have default values for any key "
                                 f"fields)") from None
        return keyed

    def _elements(self, view: View, keys: tuple[str, ...], items: list[Any]) -> list[PathElement | None]:
        key_of = self.keyer(view, keys)
        out: list[PathElement | None] = []
        for item in items:
            try:
                out.append(key_of(item))
            except _ItemError:
                out.append(None)  # upstream ignores the error here; validate() reports it
        return out

    def view_at(self, path: Path, cache: dict[Path, View]) -> View:
        """The schema of the node at ``path`` (None once untyped)."""
        if path in cache:
            return cache[path]
        parent = self.view_at(path[:-1], cache)
        pe = path[-1]
        if pe.kind == "f":
            view = self.child(parent, pe.text)
        elif pe.kind == "k" and self.list_keys(parent) is not None:
            view = self.items(parent)
        else:
            view = None
        cache[path] = view
        return view

    # -- validate ----------------------------------------------------------------------------
    def validate(self, value: Mapping[str, Any], *, allow_duplicates: bool) -> None:
        """Raise :class:`TypedError` when a list item has no key, or (unless allowed) a key repeats."""
        errors: list[str] = []
        self._validate(value, self.root, (), errors, allow_duplicates)
        if errors:
            raise TypedError(errors)

    def _validate(self, value: Any, view: View, path: Path, errors: list[str], allow_duplicates: bool) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                if sub is not None:
                    self._validate(sub, self.child(view, key), (*path, PathElement.field(key)), errors,
                                   allow_duplicates)
            return
        if not isinstance(value, list):
            return
        keys = self.list_keys(view)
        items = self.items(view)
        if keys is None:
            for i, item in enumerate(value):
                self._validate(item, items, (*path, PathElement.index(i)), errors, allow_duplicates)
            return
        key_of = self.keyer(view, keys)
        where = format_path(path)
        seen: set[PathElement] = set()
        for i, item in enumerate(value):
            try:
                pe = key_of(item)
            except _ItemError as err:
                # Upstream gives up on the rest of the list: deeper errors cannot be located.
                errors.append(f"{where}: element {i}: {err}")
                return
            if pe in seen and not allow_duplicates:
                errors.append(f"{where}: duplicate entries for key {format_path((pe,))}")
            seen.add(pe)
            self._validate(item, items, (*path, pe), errors, allow_duplicates)

    # -- field sets --------------------------------------------------------------------------
    def field_set(self, value: Mapping[str, Any]) -> FieldSet:
        """Every path ``value`` sets (``ToFieldSet``)."""
        out: set[Path] = set()
        self._fields(value, self.root, (), out)
        return FieldSet(out)

    def _fields(self, value: Any, view: View, path: Path, out: set[Path]) -> None:
        if isinstance(value, dict):
            if self.is_atomic_map(view):
                out.add(path)
                return
            for key, sub in value.items():
                sub_path = (*path, PathElement.field(key))
                if sub is None:
                    out.add(sub_path)
                    continue
                self._fields(sub, self.child(view, key), sub_path, out)
                # Struct fields are implied by their members; map keys, nulls and empty maps are not.
                if (isinstance(sub, dict) and not sub) or not self.is_field(view, key):
                    out.add(sub_path)
            return
        if isinstance(value, list):
            keys = self.list_keys(view)
            if keys is None:
                out.add(path)
                return
            items = self.items(view)
            elements = self._elements(view, keys, value)
            counts: dict[PathElement, int] = {}
            for pe in elements:
                if pe is not None:
                    counts[pe] = counts.get(pe, 0) + 1
            for pe, item in zip(elements, value, strict=True):
                if pe is None:
                    continue
                item_path = (*path, pe)
                out.add(item_path)
                # Duplicated items are owned as a whole.
                if counts[pe] == 1:
                    self._fields(item, items, item_path, out)
            return
        out.add(path)

    def ensure_named_fields(self, fields: FieldSet) -> FieldSet:
        """``fields`` plus every struct field that has members below it."""
        cache: dict[Path, View] = {(): self.root}
        named: set[Path] = set()
        for path in fields:
            for n in range(1, len(path)):
                prefix = path[:n]
                if prefix in named or prefix[-1].kind != "f":
                    continue
                if self.is_field(self.view_at(prefix[:-1], cache), prefix[-1].text):
                    named.add(prefix)
        return fields | FieldSet(named) if named else fields

    # -- merge -------------------------------------------------------------------------------
    def merge(self, live: Mapping[str, Any], applied: Mapping[str, Any]) -> dict[str, Any]:
        """``applied`` merged into ``live``; neither is modified and the result shares nothing."""
        out = self._merge(dict(live), dict(applied), self.root)
        return out if isinstance(out, dict) else {}

    def _merge(self, lhs: Any, rhs: Any, view: View) -> Any:
        if rhs is ABSENT:
            return copy.deepcopy(lhs)
        if lhs is ABSENT or lhs is None:
            return copy.deepcopy(rhs)
        if rhs is None:
            # A null merges into a non-empty granular map or list as nothing, else it is the value.
            granular = ((isinstance(lhs, dict) and not self.is_atomic_map(view))
                        or (isinstance(lhs, list) and self.list_keys(view) is not None))
            return copy.deepcopy(lhs) if granular and lhs else None
        if isinstance(lhs, dict) and isinstance(rhs, dict):
            if self.is_atomic_map(view) or (not lhs and not rhs):
                return copy.deepcopy(rhs)
            out: dict[str, Any] = {}
            for key in dict.fromkeys([*lhs, *rhs]):
                out[key] = self._merge(lhs.get(key, ABSENT), rhs.get(key, ABSENT), self.child(view, key))
            return out
        if isinstance(lhs, list) and isinstance(rhs, list):
            keys = self.list_keys(view)
            if keys is None or (not lhs and not rhs):
                return copy.deepcopy(rhs)
            return self._merge_items(lhs, rhs, view, keys)
        return copy.deepcopy(rhs)

    def _merge_items(self, lhs: list[Any], rhs: list[Any], view: View, keys: tuple[str, ...]) -> list[Any]:
        """Merge associative lists in structured-merge-diff's order: live items keep their places,
        applied items come in applied order, each new one after the live items before it."""
        items = self.items(view)
        key_of = self.keyer(view, keys)
        lhs_pes = [key_of(item) for item in lhs]
        rhs_pes = [key_of(item) for item in rhs]
        live_by_pe: dict[PathElement, Any] = {}
        for pe, item in zip(lhs_pes, lhs, strict=True):
            # A duplicated live item does not merge with the applied one: it is replaced.
            live_by_pe[pe] = None if pe in live_by_pe else item
        applied_by_pe = dict(zip(rhs_pes, rhs, strict=True))
        shared = [pe for pe in rhs_pes if pe in live_by_pe]
        next_shared = shared.pop(0) if shared else None
        merged_rhs: set[PathElement] = set()
        out: list[Any] = []
        li = ri = 0
        while li < len(lhs_pes) or ri < len(rhs_pes):
            if li < len(lhs_pes) and ri < len(rhs_pes):
                pe = lhs_pes[li]
                if pe == rhs_pes[ri]:
                    merged_rhs.add(pe)
                    out.append(self._merge(live_by_pe[pe], applied_by_pe[pe], items))
                    li += 1
                    ri += 1
                    next_shared = shared.pop(0) if shared else None
                    continue
                if pe in applied_by_pe and next_shared is not None and next_shared != pe:
                    # A shared item, but not the one whose turn it is.
                    li += 1
                    continue
            if li < len(lhs_pes):
                pe = lhs_pes[li]
                if pe not in applied_by_pe:
                    out.append(copy.deepcopy(lhs[li]))
                    li += 1
                    continue
                if pe in merged_rhs:
                    li += 1
            if ri < len(rhs_pes):
                pe = rhs_pes[ri]
                merged_rhs.add(pe)
                out.append(self._merge(live_by_pe.get(pe, ABSENT), applied_by_pe[pe], items))
                ri += 1
                if next_shared is not None and next_shared == pe:
                    next_shared = shared.pop(0) if shared else None
        return out

    # -- removal -----------------------------------------------------------------------------
    def remove_items(self, value: Mapping[str, Any], fields: FieldSet) -> dict[str, Any]:
        """``value`` without the member paths of ``fields`` and what lies below them. Untouched
        subtrees are shared with ``value``; containers emptied by the removal become null."""
        if not fields:
            return dict(value)
        out = self._remove(dict(value), self.root, _Trie.of(fields))
        return out if isinstance(out, dict) else {}

    def _remove(self, value: Any, view: View, node: _Trie) -> Any:
        if isinstance(value, dict):
            if not value or self.is_atomic_map(view):
                return None
            out: dict[str, Any] = {}
            for key, sub in value.items():
                pe = PathElement.field(key)
                if pe in node.members:
                    continue
                below = node.children.get(pe)
                out[key] = self._remove(sub, self.child(view, key), below) if below is not None else sub
            return out or None
        if isinstance(value, list):
            keys = self.list_keys(view)
            if not value or keys is None:
                return None
            items = self.items(view)
            kept: list[Any] = []
            for pe, item in zip(self._elements(view, keys, value), value, strict=True):
                if pe is not None and pe in node.members:
                    continue
                below = node.children.get(pe) if pe is not None else None
                if below is not None:
                    item = self._remove(item, items, below)
                if item is not None:
                    kept.append(item)
            return kept or None
        return value


def strip_nulls(value: Any) -> Any:
    """A copy of ``value`` without null map values or list items (what the stored object keeps)."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value if v is not None]
    return value
