"""Field ownership: what decides which fields a write owns, as kube-apiserver's field manager does.

Owns the typed diff ownership is decided from (the field paths and sets themselves live in
:mod:`apimachinery.fieldpath`, re-exported here; the managedFields entries recorded from the diff
are :mod:`apiserver.managedfields`'):

* the schema view: the upstream definitions read with structured-merge-diff's list and map
  semantics (:func:`schema_view`, :func:`list_keys`, :func:`item_keyer` …), shared with
  :mod:`apiserver.ssa.typed`;
* :func:`zero_value`, the Go zero value of a kind that a create is diffed against;
* :func:`compare`, the typed diff of two objects (added / modified / removed paths) that decides
  ownership, and :func:`shape_of`, what of a new object its diff against the zero value reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from apimachinery.fieldpath import FieldSet, Path, PathElement, format_path, go_json
from apiserver.definitions import ref_name, resolve

__all__ = [
    "Comparison",
    "FieldSet",
    "Path",
    "PathElement",
    "UntrackableError",
    "child_schema",
    "compare",
    "fields_of",
    "format_path",
    "go_json",
    "item_keyer",
    "list_keys",
    "root_schema",
    "schema_view",
    "shape_of",
    "values_equal",
    "zero_value",
]

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


# Views of referring schema nodes, computed once per node: every write walks them (a create's managedFields
# resolved ObjectMeta's reference anew each time). Keyed by identity, holding the objects so that their ids
# cannot be reused; started over when a long run of CRD changes has made it large.
_VIEW_CACHE: dict[tuple[int, int], tuple[Any, Any, Mapping[str, Any]]] = {}
_VIEW_CACHE_LIMIT = 100_000


def schema_view(node: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> Mapping[str, Any] | None:
    """The schema node with ``$ref`` followed; extensions on the referring node win. The result is shared:
    callers must not mutate it."""
    if node is None:
        return None
    target: Mapping[str, Any] = node
    if "$ref" not in node and isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        target = node["allOf"][0]
    if "$ref" not in target:
        return node
    key = (id(node), id(defs))
    cached = _VIEW_CACHE.get(key)
    if cached is None:
        resolved = resolve(defs, dict(target))
        merged = dict(resolved)
        merged.update((k, v) for k, v in node.items() if k.startswith("x-kubernetes-"))
        if len(_VIEW_CACHE) >= _VIEW_CACHE_LIMIT:
            _VIEW_CACHE.clear()
        cached = _VIEW_CACHE[key] = (node, defs, merged)
    return cached[2]


def _ref_of(node: Mapping[str, Any] | None) -> str | None:
    if not node:
        return None
    if "$ref" in node:
        return ref_name(node["$ref"])
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return ref_name(all_of[0]["$ref"])
    return None


def child_schema(view: Mapping[str, Any] | None, key: str) -> Mapping[str, Any] | None:
    """The (unresolved) schema of ``key`` in a map or struct view; None when untyped."""
    if view is None:
        return None  # untyped: maps stay granular, lists atomic
    props = view.get("properties")
    if props and key in props:
        return props[key]
    extra = view.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def list_keys(view: Mapping[str, Any] | None) -> tuple[str, ...] | None:
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


def root_schema(schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> Mapping[str, Any] | None:
    """The view of a kind's schema that paths are computed with (metadata typed as ObjectMeta)."""
    view = schema_view(schema, defs)
    if _OBJECT_META not in defs:
        return view
    # Custom resource schemas leave metadata out or opaque; the apiserver types it as ObjectMeta.
    props = (view or {}).get("properties") or {}
    if (schema_view(props.get("metadata"), defs) or {}).get("properties"):
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


def values_equal(a: Any, b: Any) -> bool:
    """Whether two values are the same leaf for ownership: null map entries count as absent, a
    boolean never equals a number, and the zero value's nulls equal only themselves."""
    if a is _NULL or b is _NULL:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        keys = {k for k, v in a.items() if v is not None} | {k for k, v in b.items() if v is not None}
        return all(values_equal(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return bool(a == b)


def item_keyer(keys: tuple[str, ...], items: Mapping[str, Any] | None,
               defs: Mapping[str, dict]) -> Callable[[Any], PathElement]:
    """How items of an associative list with key fields ``keys`` (empty for a set) and item schema
    ``items`` are addressed: ``k:`` by their key fields (optional keys take their defaults), ``v:`` by
    value. The keyer raises UntrackableError for items it cannot address."""
    if not keys:
        def by_value(item: Any) -> PathElement:
            if isinstance(item, dict | list):
                raise UntrackableError("associative list without keys has a non-scalar element")
            return PathElement.value(item)
        return by_value

    props = (schema_view(items, defs) or {}).get("properties") or {}
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


class _Comparer:
    """structured-merge-diff's compare walk: leaves are added / modified / removed by value; a map,
    list or list item the write creates (or deletes) is itself added (removed)."""

    def __init__(self, defs: Mapping[str, dict]) -> None:
        self.defs = defs
        self.added: set[Path] = set()
        self.modified: set[Path] = set()
        self.removed: set[Path] = set()

    def walk(self, lhs: Any, rhs: Any, schema: Mapping[str, Any] | None, path: Path) -> None:
        view = schema_view(schema, self.defs)
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
        elif not values_equal(lhs, rhs):
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
                    self.walk(lv, rv, child_schema(view, key), (*path, PathElement.field(key)))
            return True
        keys = list_keys(view)
        if keys is None:
            return False
        items = view.get("items") if view is not None else None
        self._list_items(lhs if isinstance(lhs, list) else [], rhs if isinstance(rhs, list) else [],
                         keys, items, path)
        return True

    def _list_items(self, lhs: list[Any], rhs: list[Any], keys: tuple[str, ...],
                    items: Mapping[str, Any] | None, path: Path) -> None:
        key_of = item_keyer(keys, items, self.defs)
        left, right = _index(lhs, key_of), _index(rhs, key_of)
        for pe in dict.fromkeys([*left, *right]):
            lvals, rvals = left.get(pe, []), right.get(pe, [])
            item_path = (*path, pe)
            if len(lvals) <= 1 and len(rvals) <= 1:
                self.walk(lvals[0] if lvals else _ABSENT, rvals[0] if rvals else _ABSENT, items, item_path)
            elif len(lvals) >= 2 and len(rvals) >= 2:
                # Duplicated items are owned as a whole.
                if not values_equal(lvals, rvals):
                    self.modified.add(item_path)
            elif len(lvals) >= 2:
                if rvals:
                    self.walk(_ABSENT, rvals[0], items, item_path)
                self.removed.add(item_path)
            else:
                if lvals:
                    self.walk(lvals[0], _ABSENT, items, item_path)
                self.added.add(item_path)


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
    walker.walk(dict(old), dict(new), root_schema(schema, defs), ())
    return Comparison(FieldSet(walker.added), FieldSet(walker.modified), FieldSet(walker.removed))


def fields_of(obj: Mapping[str, Any], schema: Mapping[str, Any] | None, defs: Mapping[str, dict]) -> FieldSet:
    """Every field ``obj`` sets, as a create of it records them: each leaf, plus each map, list or
    list item it creates beyond the kind's zero value (the ``.`` entries of FieldsV1)."""
    diff = compare(zero_value(schema, defs), obj, schema, defs)
    return diff.added | diff.modified


# ----------------------------------------------------------------------------------------------
# The shape of a new object
#
# A create compares the new object with its kind's zero value, which holds no leaves (only value
# structs and nulls), so of the new object the comparison reads its shape alone: each map's keys
# and which of its values are null, maps, lists or leaves, and each list whole (an associative
# list's items are addressed by their keys' values, a set's by value). A leaf's value in a map
# never matters. Objects alike but for such leaves (names, uids, timestamps, a ConfigMap's values,
# a new space's default objects) have the same shape, so the same create comparison.

_SHAPE_BUDGET = 2_000  # values a shape may hold: a larger object has none (it is compared, not kept)


class _TooLarge(Exception):
    pass


def _exact(value: Any, budget: list[int]) -> Any:
    """A list's items as a hashable value equal only for equal items of equal types (True is not 1)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    if isinstance(value, dict):
        return dict, tuple([(k, _exact(v, budget)) for k, v in value.items()])
    if isinstance(value, list):
        return list, tuple([_exact(v, budget) for v in value])
    return type(value), value


def _list_key(value: list[Any], budget: list[int]) -> Any:
    """A list's items, exactly: their JSON, which tells types apart (``true``, ``1``, ``1.0``, ``"1"``), unless it
    holds a ``null``, which orjson also writes for NaN and infinities (or JSON cannot hold them)."""
    try:
        text = orjson.dumps(value)
    except TypeError:  # keys that are not strings, integers beyond 64 bits
        return _exact(value, budget)
    if b"null" in text:
        return _exact(value, budget)
    budget[0] -= len(text) // 16 + 1
    if budget[0] < 0:
        raise _TooLarge
    return text


def _map_key(value: dict[str, Any], budget: list[int]) -> tuple[Any, ...]:
    """A map's entries: a leaf as its key alone, a null as ``(key,)``, a map or list as ``(key, its shape)``."""
    budget[0] -= len(value)
    if budget[0] < 0:
        raise _TooLarge
    out: list[Any] = []
    for k, v in value.items():
        if isinstance(v, dict):
            out.append((k, _map_key(v, budget)))
        elif isinstance(v, list):
            out.append((k, _list_key(v, budget)))
        elif v is None:
            out.append((k,))
        else:
            out.append(k)
    return tuple(out)


def shape_of(obj: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What of ``obj`` a comparison with its kind's zero value reads (see above), as a hashable
    value; None when it holds more than ``_SHAPE_BUDGET`` values."""
    try:
        return _map_key(dict(obj), [_SHAPE_BUDGET])
    except _TooLarge:
        return None
