"""Field ownership: ``metadata.managedFields`` as kube-apiserver records it for Update operations.

Owns three things that server-side apply will build on:

* :class:`FieldSet`, a set of field paths with the ``FieldsV1`` wire format (``f:``/``k:``/``v:``/``i:``
  keys, ``.`` for a node that is itself a member), serialised byte for byte as structured-merge-diff
  does, so sets read from clients and written back compare equal;
* :func:`compare`, the typed diff of two objects (added / modified / removed paths) that decides
  ownership, driven by the upstream schemas' list and map semantics;
* :func:`update_managed_fields`, the apiserver's Update pipeline (decode live-or-request managed
  fields, diff, move ownership, strip server fields, cap the number of updaters, encode).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

from spaces.builtin.definitions import ref_name, resolve

# ----------------------------------------------------------------------------------------------
# JSON exactly as Go writes it (jsoniter, standard-library compatible): sorted map keys, HTML-safe
# strings, shortest floats without a trailing ".0". Key and value path elements embed this text.

_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _go_string(s: str) -> str:
    out = ['"']
    for ch in s:
        esc = _GO_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_float(f: float) -> str:
    if f == 0:
        return "0"
    if 1e-6 <= abs(f) < 1e21:
        text = format(Decimal(repr(f)), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    # Exponent form; Go drops the leading zero of a negative exponent ("1e-07" -> "1e-7").
    return re.sub(r"e-0(\d)$", r"e-\1", repr(f))


def go_json(value: Any) -> str:
    """Compact JSON of ``value`` as structured-merge-diff serialises values in path elements."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_go_string(k)}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    raise TypeError(f"not a JSON value: {value!r}")


# ----------------------------------------------------------------------------------------------
# Paths


class PathElement(str):
    """One step of a field path, held as its canonical ``FieldsV1`` key: ``f:<field>``,
    ``k:<item keys as JSON>``, ``v:<set value as JSON>`` or ``i:<index>``.

    A ``str`` so that paths hash fast (CPython caches string hashes) and equal elements are equal
    strings; build elements with the constructors, which canonicalise the JSON.
    """

    __slots__ = ()

    @property
    def kind(self) -> str:
        return self[0]

    @property
    def text(self) -> str:
        return self[2:]

    @classmethod
    def field(cls, name: str) -> PathElement:
        return cls("f:" + name)

    @classmethod
    def key(cls, fields: Mapping[str, Any]) -> PathElement:
        return cls("k:" + go_json(dict(fields)))

    @classmethod
    def value(cls, value: Any) -> PathElement:
        return cls("v:" + go_json(value))

    @classmethod
    def index(cls, i: int) -> PathElement:
        return cls(f"i:{i}")

    @classmethod
    def parse(cls, key: str) -> PathElement | None:
        """Parse a ``FieldsV1`` key; None for element kinds this version does not know (skipped,
        as upstream does)."""
        if len(key) < 2 or key[1] != ":":
            raise ValueError(f"invalid path element {key!r}")
        kind, body = key[0], key[2:]
        if kind == "f":
            return cls.field(body)
        if kind == "k":
            fields = json.loads(body)
            if not isinstance(fields, dict):
                raise ValueError(f"invalid key path element {key!r}")
            return cls.key(fields)
        if kind == "v":
            return cls.value(json.loads(body))
        if kind == "i":
            return cls.index(int(body))
        return None

    def __repr__(self) -> str:
        return f"PathElement({str.__repr__(self)})"


Path = tuple[PathElement, ...]


def _value_order(v: Any) -> tuple[Any, ...]:
    # structured-merge-diff's total order: numbers < strings < booleans < lists < maps < null.
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, int | float):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, list):
        return (3, tuple(_value_order(x) for x in v))
    if isinstance(v, dict):
        return (4, tuple((k, _value_order(v[k])) for k in sorted(v)))
    return (5,)


@lru_cache(maxsize=65536)
def _element_order(pe: PathElement) -> tuple[Any, ...]:
    if pe.kind == "f":
        return (0, pe.text)
    if pe.kind == "k":
        fields = json.loads(pe.text)
        return (1, tuple((k, _value_order(fields[k])) for k in sorted(fields)))
    if pe.kind == "v":
        return (2, _value_order(json.loads(pe.text)))
    return (3, int(pe.text))


def _path_order(path: Path) -> tuple[tuple[Any, ...], ...]:
    return tuple(_element_order(pe) for pe in path)


def format_path(path: Path) -> str:
    """Human form used in conflict messages: ``.spec.containers[name="nginx"].image``."""
    parts = []
    for pe in path:
        if pe.kind == "f":
            parts.append("." + pe.text)
        elif pe.kind == "k":
            fields = json.loads(pe.text)
            parts.append("[" + ",".join(f"{k}={go_json(fields[k])}" for k in sorted(fields)) + "]")
        elif pe.kind == "v":
            parts.append(f"[={pe.text}]")
        else:
            parts.append(f"[{pe.text}]")
    return "".join(parts)


class FieldSet:
    """An immutable set of field paths.

    Membership is per path, exactly as in structured-merge-diff: owning ``.spec.template`` says
    nothing about ``.spec.template.metadata``; :meth:`recursive_difference` removes whole subtrees.
    """

    __slots__ = ("_paths",)

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        self._paths = frozenset(p for p in paths if p)

    # -- FieldsV1 --------------------------------------------------------------------------
    @classmethod
    def from_fields_v1(cls, fields: Mapping[str, Any] | None) -> FieldSet:
        """Read a ``fieldsV1`` object; raises ValueError when it is malformed."""
        if fields is None:
            return cls()
        if not isinstance(fields, Mapping):
            raise ValueError("fieldsV1 must be an object")
        paths: set[Path] = set()
        _read_fields_v1(fields, (), paths)
        return cls(paths)

    def to_fields_v1(self) -> dict[str, Any]:
        root = _Trie()
        for path in self._paths:
            node = root
            for pe in path[:-1]:
                node = node.children.setdefault(pe, _Trie())
            node.members.add(path[-1])
        return root.emit(include_self=False)

    # -- set algebra -----------------------------------------------------------------------
    def union(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths | other._paths)

    def intersection(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths & other._paths)

    def difference(self, other: FieldSet) -> FieldSet:
        return FieldSet(self._paths - other._paths)

    __or__ = union
    __and__ = intersection
    __sub__ = difference

    def recursive_difference(self, prefixes: FieldSet) -> FieldSet:
        """Drop every path that lies at or under one of ``prefixes``."""
        if not prefixes:
            return self
        cut = prefixes._paths
        return FieldSet(p for p in self._paths if not any(p[:n] in cut for n in range(1, len(p) + 1)))

    def under(self, prefix: Path) -> FieldSet:
        """The paths at or under ``prefix``."""
        return FieldSet(p for p in self._paths if p[:len(prefix)] == prefix)

    @property
    def empty(self) -> bool:
        return not self._paths

    def __bool__(self) -> bool:
        return bool(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __iter__(self) -> Iterator[Path]:
        """All member paths, in structured-merge-diff order."""
        return iter(sorted(self._paths, key=_path_order))

    def leaves(self) -> Iterator[Path]:
        """Member paths with no other member below them."""
        parents = {p[:n] for p in self._paths for n in range(1, len(p))}
        return (p for p in self if p not in parents)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSet) and self._paths == other._paths

    def __hash__(self) -> int:
        return hash(self._paths)

    def __repr__(self) -> str:
        return f"FieldSet({[format_path(p) for p in self]})"


class _Trie:
    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, _Trie] = {}

    def emit(self, include_self: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if include_self:
            out["."] = {}
        for pe in sorted(self.members | self.children.keys(), key=_element_order):
            child = self.children.get(pe)
            out[str(pe)] = {} if child is None else child.emit(include_self=pe in self.members)
        return out


def _read_fields_v1(node: Mapping[str, Any], prefix: Path, out: set[Path]) -> bool:
    """Collect the paths under ``prefix``; returns whether ``prefix`` itself is a member (it has a
    ``.`` entry, or nothing below it)."""
    member = False
    has_children = False
    for key, value in node.items():
        if key == ".":
            member = True
            continue
        pe = PathElement.parse(key)
        if pe is None:
            continue
        if not isinstance(value, Mapping):
            raise ValueError(f"fieldsV1 entry {key!r} must be an object")
        has_children = True
        if _read_fields_v1(value, (*prefix, pe), out):
            out.add((*prefix, pe))
    return member or not has_children


# ----------------------------------------------------------------------------------------------
# Schema view: the upstream definitions, read with structured-merge-diff's semantics


_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# List-map key fields that are optional but have a schema default upstream (``+default=``); the
# JSON schemas shipped here drop defaults, and a missing key takes its default when keying an item.
_KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.LocalObjectReference", "name"): "",
}


def _view(node: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> Mapping[str, Any] | None:
    """The schema node with ``$ref`` followed; extensions on the referring node win."""
    if node is None:
        return None
    target: Mapping[str, Any] = node
    if "$ref" not in node and isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        target = node["allOf"][0]
    if "$ref" not in target:
        return node
    resolved = resolve(defs, dict(target))
    merged = dict(resolved)
    merged.update((k, v) for k, v in node.items() if k.startswith("x-kubernetes-"))
    return merged


def _ref_of(node: Mapping[str, Any] | None) -> str | None:
    if not node:
        return None
    if "$ref" in node:
        return ref_name(node["$ref"])
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return ref_name(all_of[0]["$ref"])
    return None


def _child_schema(view: Mapping[str, Any] | None, key: str) -> Mapping[str, Any] | None:
    if view is None:
        return None  # untyped: maps stay granular, lists atomic
    props = view.get("properties")
    if props and key in props:
        return props[key]
    extra = view.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _list_keys(view: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """None for an atomic list; the key fields of an associative list (empty for a set)."""
    if view is None:
        return None
    list_type = view.get("x-kubernetes-list-type")
    if list_type == "map":
        return tuple(view.get("x-kubernetes-list-map-keys") or ())
    if list_type == "set":
        return ()
    if list_type is None and view.get("x-kubernetes-patch-strategy") in ("merge", "merge,retainKeys"):
        # Built-ins without a list type: structured-merge-diff derives it from the strategic-merge
        # metadata, keyed by the merge key, or a set when there is none.
        merge_key = view.get("x-kubernetes-patch-merge-key")
        return (merge_key,) if merge_key else ()
    return None


def _root_schema(schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> Mapping[str, Any] | None:
    view = _view(schema, defs)
    if _OBJECT_META not in defs:
        return view
    # Custom resource schemas leave metadata out or opaque; the apiserver types it as ObjectMeta.
    props = (view or {}).get("properties") or {}
    if (_view(props.get("metadata"), defs) or {}).get("properties"):
        return view
    return {**(view or {}), "properties": {**props, "metadata": {"$ref": f"#/$defs/{_OBJECT_META}"}}}


# ----------------------------------------------------------------------------------------------
# The zero value of a kind. A create is diffed against the Go zero value of the type, and which
# nodes exist there decides where FieldsV1 shows a "." (a node the write added). Go value structs
# always serialise ({}), and slices, maps and pointers without omitempty serialise as null; the
# JSON schemas cannot tell these from optional pointers, so the few that occur are listed here
# (read off the k8s.io/api types).

_NULL = object()  # present in the zero value, as null

# Top-level struct properties that are pointers (absent in the zero value); every other top-level
# struct property (metadata, spec, status …) is a value.
_TOP_LEVEL_POINTERS: dict[str, frozenset[str]] = {
    "io.k8s.api.core.v1.Event": frozenset({"related", "series"}),
    "io.k8s.api.events.v1.Event": frozenset({"related", "series"}),
    "io.k8s.api.node.v1.RuntimeClass": frozenset({"overhead", "scheduling"}),
    "io.k8s.api.policy.v1.Eviction": frozenset({"deleteOptions"}),
    "io.k8s.api.rbac.v1.ClusterRole": frozenset({"aggregationRule"}),
    "io.k8s.api.storage.v1.CSIStorageCapacity": frozenset({"nodeTopology"}),
}

# Nested value structs reachable from a zero value through other value structs.
_VALUE_STRUCTS: dict[str, tuple[str, ...]] = {
    "io.k8s.api.apps.v1.DaemonSetSpec": ("template", "updateStrategy"),
    "io.k8s.api.apps.v1.DeploymentSpec": ("template", "strategy"),
    "io.k8s.api.apps.v1.ReplicaSetSpec": ("template",),
    "io.k8s.api.apps.v1.StatefulSetSpec": ("template", "updateStrategy"),
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec": ("scaleTargetRef",),
    "io.k8s.api.batch.v1.CronJobSpec": ("jobTemplate",),
    "io.k8s.api.batch.v1.JobSpec": ("template",),
    "io.k8s.api.batch.v1.JobTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.core.v1.NodeDaemonEndpoints": ("kubeletEndpoint",),
    "io.k8s.api.core.v1.NodeStatus": ("daemonEndpoints", "nodeInfo"),
    "io.k8s.api.core.v1.PersistentVolumeClaimSpec": ("resources",),
    "io.k8s.api.core.v1.PodTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.core.v1.ServiceStatus": ("loadBalancer",),
    "io.k8s.api.flowcontrol.v1.FlowSchemaSpec": ("priorityLevelConfiguration",),
    "io.k8s.api.networking.v1.IngressStatus": ("loadBalancer",),
    "io.k8s.api.resource.v1.DeviceTaintRuleSpec": ("taint",),
    "io.k8s.api.resource.v1.ResourceClaimSpec": ("devices",),
    "io.k8s.api.resource.v1.ResourceClaimTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.resource.v1.ResourceSliceSpec": ("pool",),
    "io.k8s.api.storage.v1.VolumeAttachmentSpec": ("source",),
    "io.k8s.api.storagemigration.v1.StorageVersionMigrationSpec": ("resource",),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec": ("names",),
}

# Nested slices / pointers without omitempty (null in the zero value).
_NULL_FIELDS: dict[str, tuple[str, ...]] = {
    "io.k8s.api.authentication.v1.TokenRequestSpec": ("boundObjectRef",),
    "io.k8s.api.core.v1.PodSpec": ("containers",),
    "io.k8s.api.storage.v1.CSINodeSpec": ("drivers",),
}


def _definition_name(schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> str | None:
    if schema is None:
        return None
    if ref := _ref_of(schema):
        return ref
    for name, definition in defs.items():
        if definition is schema:
            return name
    gvk = schema.get("x-kubernetes-group-version-kind")
    if gvk:
        for name, definition in defs.items():
            if definition.get("x-kubernetes-group-version-kind") == gvk:
                return name
    return None


# Schemas and definitions live as long as the process (or their CRD); the zero value of each is
# computed once. Keyed by identity, holding the objects so their ids cannot be reused.
_ZERO_CACHE: dict[tuple[int, int], tuple[Any, Any, dict[str, Any]]] = {}


def zero_value(schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> dict[str, Any]:
    """What the apiserver diffs a create against: the Go zero value of a built-in kind, or an
    empty object for custom resources (whose zero value is an empty unstructured object).
    The result is shared: callers must not mutate it."""
    key = (id(schema), id(defs))
    cached = _ZERO_CACHE.get(key)
    if cached is None:
        cached = (schema, defs, _compute_zero_value(schema, defs))
        _ZERO_CACHE[key] = cached
    return cached[2]


def _compute_zero_value(schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> dict[str, Any]:
    name = _definition_name(schema, defs)
    if name is None or name not in defs:
        return {}
    pointers = _TOP_LEVEL_POINTERS.get(name, frozenset())
    out: dict[str, Any] = {}
    for prop, sub in (defs[name].get("properties") or {}).items():
        ref = _ref_of(sub)
        if ref and prop not in pointers and (defs.get(ref) or {}).get("properties"):
            out[prop] = _zero_struct(ref, defs)
    return out


def _zero_struct(name: str, defs: Mapping[str, dict]) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(_NULL_FIELDS.get(name, ()), _NULL)
    props = (defs.get(name) or {}).get("properties") or {}
    for field in _VALUE_STRUCTS.get(name, ()):
        ref = _ref_of(props.get(field))
        if ref:
            out[field] = _zero_struct(ref, defs)
    return out


# ----------------------------------------------------------------------------------------------
# Compare


class UntrackableError(ValueError):
    """The object cannot be expressed as field paths (an associative list item without its keys,
    a set holding objects …); the apiserver then leaves managedFields as they were."""


@dataclass(frozen=True)
class Comparison:
    added: FieldSet
    modified: FieldSet
    removed: FieldSet

    def filtered(self, keep: Callable[[Path], bool]) -> Comparison:
        sets = (self.added, self.modified, self.removed)
        return Comparison(*(FieldSet(p for p in s if keep(p)) for s in sets))


_ABSENT = object()


def _get(mapping: Any, key: str) -> Any:
    if not isinstance(mapping, dict):
        return _ABSENT
    value = mapping.get(key, _ABSENT)
    # Null fields do not survive the apiserver's typed round trip (or CR pruning): treat as absent.
    return _ABSENT if value is None else value


def _shape(value: Any) -> str | None:
    if value is _ABSENT or value is _NULL:
        return None
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return "scalar"


def _is_empty(value: Any) -> bool:
    if value is _ABSENT or value is _NULL:
        return True
    if isinstance(value, dict):
        return all(v is None for v in value.values())
    return isinstance(value, list) and not value


def _equal(a: Any, b: Any) -> bool:
    if a is _NULL or b is _NULL:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        keys = {k for k, v in a.items() if v is not None} | {k for k, v in b.items() if v is not None}
        return all(_equal(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return bool(a == b)


class _Comparer:
    """structured-merge-diff's compare walk: leaves are added / modified / removed by value; a map,
    list or list item the write creates (or deletes) is itself added (removed)."""

    def __init__(self, defs: Mapping[str, dict]) -> None:
        self.defs = defs
        self.added: set[Path] = set()
        self.modified: set[Path] = set()
        self.removed: set[Path] = set()

    def walk(self, lhs: Any, rhs: Any, schema: Mapping[str, Any] | None, path: Path) -> None:
        view = _view(schema, self.defs)
        lshape, rshape = _shape(lhs), _shape(rhs)
        if lshape and rshape and lshape != rshape:
            # The value changed type: a modified leaf, and each side's content on its own.
            self.modified.add(path)
            if lshape != "scalar":
                self._container(lhs, _ABSENT, view, path, lshape)
            if rshape != "scalar":
                self._container(_ABSENT, rhs, view, path, rshape)
            return
        shape = rshape or lshape
        if shape in (None, "scalar") or not self._container(lhs, rhs, view, path, shape):
            self._leaf(lhs, rhs, path)
            return
        if lhs is _ABSENT:
            self.added.add(path)
        elif rhs is _ABSENT:
            self.removed.add(path)

    def _leaf(self, lhs: Any, rhs: Any, path: Path) -> None:
        if lhs is _ABSENT:
            self.added.add(path)
        elif rhs is _ABSENT:
            self.removed.add(path)
        elif not _equal(lhs, rhs):
            self.modified.add(path)

    def _container(self, lhs: Any, rhs: Any, view: Mapping[str, Any] | None, path: Path, shape: str) -> bool:
        """Descend into a map or list; False when it is a leaf (atomic, or empty on both sides)."""
        if _is_empty(lhs) and _is_empty(rhs):
            return False
        if shape == "map":
            if view is not None and view.get("x-kubernetes-map-type") == "atomic":
                return False
            left = lhs if isinstance(lhs, dict) else {}
            right = rhs if isinstance(rhs, dict) else {}
            for key in dict.fromkeys([*left, *right]):
                lv, rv = _get(left, key), _get(right, key)
                if lv is not _ABSENT or rv is not _ABSENT:
                    self.walk(lv, rv, _child_schema(view, key), (*path, PathElement.field(key)))
            return True
        keys = _list_keys(view)
        if keys is None:
            return False
        items = view.get("items") if view is not None else None
        self._list_items(lhs if isinstance(lhs, list) else [], rhs if isinstance(rhs, list) else [],
                         keys, items, path)
        return True

    def _list_items(self, lhs: list[Any], rhs: list[Any], keys: tuple[str, ...],
                    items: Mapping[str, Any] | None, path: Path) -> None:
        key_of = self._item_keyer(keys, items)
        left, right = _index(lhs, key_of), _index(rhs, key_of)
        for pe in dict.fromkeys([*left, *right]):
            lvals, rvals = left.get(pe, []), right.get(pe, [])
            item_path = (*path, pe)
            if len(lvals) <= 1 and len(rvals) <= 1:
                self.walk(lvals[0] if lvals else _ABSENT, rvals[0] if rvals else _ABSENT, items, item_path)
            elif len(lvals) >= 2 and len(rvals) >= 2:
                # Duplicated items are owned as a whole.
                if not _equal(lvals, rvals):
                    self.modified.add(item_path)
            elif len(lvals) >= 2:
                if rvals:
                    self.walk(_ABSENT, rvals[0], items, item_path)
                self.removed.add(item_path)
            else:
                if lvals:
                    self.walk(lvals[0], _ABSENT, items, item_path)
                self.added.add(item_path)

    def _item_keyer(self, keys: tuple[str, ...],
                    items: Mapping[str, Any] | None) -> Callable[[Any], PathElement]:
        """How items of an associative list are addressed: ``k:`` by their key fields, ``v:`` by value."""
        if not keys:
            def by_value(item: Any) -> PathElement:
                if isinstance(item, dict | list):
                    raise UntrackableError("associative list without keys has a non-scalar element")
                return PathElement.value(item)
            return by_value

        props = (_view(items, self.defs) or {}).get("properties") or {}
        item_ref = _ref_of(items)
        defaults = {}
        for key in keys:
            if "default" in (props.get(key) or {}):
                defaults[key] = props[key]["default"]
            elif (item_ref, key) in _KEY_DEFAULTS:
                defaults[key] = _KEY_DEFAULTS[(item_ref, key)]

        def by_key(item: Any) -> PathElement:
            if not isinstance(item, dict):
                raise UntrackableError("associative list with keys has an element that is not an object")
            fields = {}
            for key in keys:
                if item.get(key) is not None:
                    fields[key] = item[key]
                elif key in defaults:
                    fields[key] = defaults[key]
            if not fields:
                raise UntrackableError(
                    f"associative list with keys has an element that omits all key fields {list(keys)}")
            return PathElement.key(fields)
        return by_key


def _index(values: list[Any], key_of: Callable[[Any], PathElement]) -> dict[PathElement, list[Any]]:
    out: dict[PathElement, list[Any]] = {}
    for item in values:
        if item is not None:
            out.setdefault(key_of(item), []).append(item)
    return out


def compare(old: Mapping[str, Any], new: Mapping[str, Any], schema: Mapping[str, Any] | None,
            defs: Mapping[str, dict]) -> Comparison:
    """The paths ``new`` adds, modifies and removes relative to ``old`` (raises UntrackableError)."""
    walker = _Comparer(defs)
    walker.walk(dict(old), dict(new), _root_schema(schema, defs), ())
    return Comparison(FieldSet(walker.added), FieldSet(walker.modified), FieldSet(walker.removed))


def fields_of(obj: Mapping[str, Any], schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> FieldSet:
    """Every field ``obj`` sets, as a create of it records them: each leaf, plus each map, list or
    list item it creates beyond the kind's zero value (the ``.`` entries of FieldsV1)."""
    diff = compare(zero_value(schema, defs), obj, schema, defs)
    return diff.added | diff.modified


# ----------------------------------------------------------------------------------------------
# managedFields


def _f(*names: str) -> Path:
    return tuple(PathElement.field(n) for n in names)


# Never owned by anyone (the fieldmanager's "strip meta" step); removed as members only, so owning
# metadata.labels is unaffected by stripping metadata.
_SERVER_FIELDS = FieldSet([
    _f("apiVersion"), _f("kind"), _f("metadata"), _f("metadata", "name"), _f("metadata", "namespace"),
    _f("metadata", "creationTimestamp"), _f("metadata", "selfLink"), _f("metadata", "uid"),
    _f("metadata", "clusterName"), _f("metadata", "generation"), _f("metadata", "managedFields"),
    _f("metadata", "resourceVersion"),
])
_STATUS = _f("status")
MAX_UPDATE_MANAGERS = 10
_ANCIENT_CHANGES = "ancient-changes"


@dataclass(frozen=True)
class _Owned:
    fields: FieldSet
    api_version: str
    time: str | None


def _identifier(manager: str, operation: str, api_version: str, subresource: str) -> str:
    """The apiserver's manager identity: the entry without fields and time (and without the
    version for Apply), as JSON in Go field order."""
    entry: dict[str, str] = {"manager": manager, "operation": operation}
    if operation != "Apply" and api_version:
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return "{" + ",".join(f"{_go_string(k)}:{_go_string(v)}" for k, v in entry.items() if v) + "}"


def _decode(entries: Any) -> dict[str, _Owned] | None:
    """Managed fields by manager identity; None when any entry is malformed."""
    if entries is None:
        return {}
    if not isinstance(entries, list):
        return None
    out: dict[str, _Owned] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            return None
        operation = entry.get("operation")
        api_version = entry.get("apiVersion")
        if operation not in ("Apply", "Update") or not api_version or entry.get("fieldsType") != "FieldsV1":
            return None
        try:
            fields = FieldSet.from_fields_v1(entry.get("fieldsV1") or {})
        except (ValueError, TypeError):
            return None
        key = _identifier(str(entry.get("manager") or ""), operation, api_version,
                          str(entry.get("subresource") or ""))
        out[key] = _Owned(fields, api_version, entry.get("time"))
    return out


def _encode(managed: Mapping[str, _Owned]) -> list[dict[str, Any]]:
    entries = []
    for key, owned in managed.items():
        ident = json.loads(key)
        entry: dict[str, Any] = {"manager": ident.get("manager", ""), "operation": ident["operation"],
                                 "apiVersion": owned.api_version}
        if owned.time:
            entry["time"] = owned.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = owned.fields.to_fields_v1()
        if ident.get("subresource"):
            entry["subresource"] = ident["subresource"]
        entries.append(entry)
    entries.sort(key=lambda e: (e["operation"], _seconds(e.get("time")), e["manager"], e["apiVersion"],
                                e.get("subresource", "")))
    return entries


def _seconds(time: Any) -> int:
    if not isinstance(time, str):
        return 0
    try:
        return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


def _is_reset(sent: Any) -> bool:
    """``managedFields: []`` or ``[{}]`` in a request clears the recorded ownership."""
    if not isinstance(sent, list):
        return False
    if not sent:
        return True
    return len(sent) == 1 and isinstance(sent[0], Mapping) and all(v in (None, "") for v in sent[0].values())


def _cap_updaters(managed: dict[str, _Owned]) -> None:
    """Fold the oldest Update managers into one ``ancient-changes`` entry per version, keeping at
    most MAX_UPDATE_MANAGERS of them (the apiserver's cap)."""
    updaters = [k for k in managed if json.loads(k)["operation"] == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (_seconds(managed[k].time), k))
    first_by_version: dict[str, str] = {}
    remaining = len(updaters)
    for key in updaters:
        if remaining <= MAX_UPDATE_MANAGERS:
            break
        owned = managed[key]
        version = owned.api_version
        bucket = _identifier(_ANCIENT_CHANGES, "Update", version, "")
        if version not in first_by_version:
            first_by_version[version] = key
            continue
        if bucket not in managed:
            managed[bucket] = managed.pop(first_by_version[version])
        managed[bucket] = _Owned(owned.fields | managed[bucket].fields, version, owned.time)
        del managed[key]
        remaining -= 1


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def update_managed_fields(old: Mapping[str, Any] | None, new: dict[str, Any], manager: str, api_version: str,
                          now: str, schema: dict[str, Any] | None, defs: Mapping[str, dict],
                          subresource: str = "", *, status_subresource: bool = True) -> None:
    """Record an Update (or create, ``old`` None) by ``manager`` in ``new["metadata"]["managedFields"]``.

    Fields the write adds or changes move to ``manager`` (one entry per manager, operation,
    version and subresource, stamped ``now``); fields it removes leave every entry; empty entries
    disappear. The base is the request's managedFields when it carries any (a client may edit
    them), else the live object's; ``[]`` or ``[{}]`` resets them, and subresource writes always
    start from the live ones. An update of an object that has no managedFields stays untracked.
    With ``status_subresource`` the main resource never owns ``status`` and the status subresource
    owns nothing else.
    """
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        meta = new["metadata"] = {}
    live_meta = (old or {}).get("metadata") or {}
    live_entries = live_meta.get("managedFields")
    sent = meta.pop("managedFields", None)
    creating = not live_meta.get("uid")

    managed: dict[str, _Owned] | None
    if subresource:
        managed = _decode(live_entries) or {}
    elif _is_reset(sent):
        managed = {}
    else:
        managed = _decode(sent) or _decode(live_entries) or {}
    if not managed and not creating:
        return

    base = _without_managed_fields(old) if old is not None else zero_value(schema, defs)
    try:
        diff = compare(base, new, schema, defs)
    except UntrackableError:
        if live_entries:
            meta["managedFields"] = live_entries
        return
    if subresource == "status":
        diff = diff.filtered(lambda p: p[:1] == _STATUS)
    elif not subresource and status_subresource:
        diff = diff.filtered(lambda p: p[:1] != _STATUS)

    changed = diff.added | diff.modified
    for key, owned in list(managed.items()):
        kept = owned.fields - changed - diff.removed
        if kept:
            managed[key] = _Owned(kept, owned.api_version, owned.time)
        else:
            del managed[key]

    mine = changed - _SERVER_FIELDS
    if mine:
        me = _identifier(manager or "unknown", "Update", api_version, subresource)
        previous = managed.get(me)
        managed[me] = _Owned(mine | previous.fields if previous else mine, api_version, now)
    _cap_updaters(managed)
    if managed:
        meta["managedFields"] = _encode(managed)
