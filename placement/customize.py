"""KubeStellar's per-destination customization of a placed object: parameter expansion and Customizers.

Pure: given the object as every destination gets it, the Customizer it names (if any) and the destination's
parameter definitions, returns the object this destination gets. The rules are those of KubeStellar
PoC2023q4 (``pkg/customize/customize.go`` at v0.14.0):

- ``edge.kubestellar.io/expand-parameters: "true"`` on the object expands ``%(key)`` in every string leaf
  (keys and values of maps are left alone, as upstream's walk does). On the Customizer, it expands each
  replacement's ``path`` and ``value`` before they are used.
- A key is looked up in the definitions in order (the destination Location's labels, then its annotations;
  spacehub adds the SyncTarget's labels last). An unknown key is left as written (upstream's rule) and
  reported, so a typo is visible.
- ``%%`` is a literal ``%``. Upstream v0.14.0 leaves ``%%`` as it is; the PoC documentation and our issue
  define it as the escape, so ``%%(key)`` stays ``%(key)``.
- Each replacement's ``value`` is JSON text placed at every node its ``path`` selects. Paths are JSONPath
  (RFC 9535 via python-jsonpath) with upstream's shorthand ``.N`` for ``[N]``. A path that selects nothing
  but names one member of an existing object creates that member (upstream's "definite path"); a path
  whose parent is missing is an error, where upstream would write ``null`` into the missing parent.

Where upstream logs a bad path or value and carries on, this module raises :class:`CustomizeError`, so the
caller can keep the cluster's previous copy and say why.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonpath
from jsonpath.exceptions import JSONPathError

CUSTOMIZER_ANNOTATION = "edge.kubestellar.io/customizer"
EXPAND_ANNOTATION = "edge.kubestellar.io/expand-parameters"

Definitions = Sequence[Mapping[str, str]]  # looked up in order: the first that has a key wins

_PARAMETER = re.compile(r"%%|%\(([^)]*)\)")
# Upstream's ``.N`` member shorthand for an index, outside quoted names: ``containers.0.env`` → ``containers[0].env``.
_DOT_INDEX = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|\.(\d+)(?=[.\[]|$)""")


class CustomizeError(Exception):
    """A Customizer or expansion that cannot be applied: the destination keeps its previous copy."""


@dataclass
class Customized:
    obj: dict[str, Any]
    unknown_keys: set[str] = field(default_factory=set)  # %(key) parameters no definition has


def wants_expansion(meta: Mapping[str, Any]) -> bool:
    return ((meta.get("annotations") or {}).get(EXPAND_ANNOTATION) or "") == "true"


def customizer_ref(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (namespace, name) of the Customizer an object names; a cluster-scoped object names it as
    ``namespace/name``. Raises CustomizeError when the annotation cannot name one."""
    meta = obj.get("metadata") or {}
    value = ((meta.get("annotations") or {}).get(CUSTOMIZER_ANNOTATION) or "").strip()
    if not value:
        return None
    namespace = meta.get("namespace") or ""
    if "/" in value:
        namespace, _, name = value.partition("/")
    else:
        name = value
    if not namespace or not name or "/" in name:
        raise CustomizeError(f"annotation {CUSTOMIZER_ANNOTATION}: {value!r} does not name a Customizer "
                             "(a cluster-scoped object names it as namespace/name)")
    return namespace, name


def needs_shaping(obj: Mapping[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(CUSTOMIZER_ANNOTATION)) or annotations.get(EXPAND_ANNOTATION) == "true"


def expand_string(text: str, definitions: Definitions, unknown: set[str]) -> str:
    if "%" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        key = match.group(1)
        for defs in definitions:
            if key in defs:
                return str(defs[key])
        unknown.add(key)
        return match.group(0)

    return _PARAMETER.sub(replace, text)


def _expand_leaves(data: Any, definitions: Definitions, unknown: set[str]) -> Any:
    if isinstance(data, str):
        return expand_string(data, definitions, unknown)
    if isinstance(data, dict):
        return {key: _expand_leaves(value, definitions, unknown) for key, value in data.items()}
    if isinstance(data, list):
        return [_expand_leaves(value, definitions, unknown) for value in data]
    return data


def compile_path(path: str) -> jsonpath.JSONPath:
    """A replacement's path; raises CustomizeError with the parser's message."""
    if not path.startswith("$"):
        raise CustomizeError(f"{path!r} is not a JSONPath (it must start with $)")
    text = _DOT_INDEX.sub(lambda m: m.group(1) or f"[{m.group(2)}]", path)
    try:
        return jsonpath.compile(text)
    except JSONPathError as exc:
        raise CustomizeError(f"{path!r} is not a valid JSONPath: {str(exc).splitlines()[0]}") from None


def _set_at(doc: dict[str, Any], parts: Sequence[str | int], value: Any) -> None:
    node: Any = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = copy.deepcopy(value)
    else:
        node[last] = copy.deepcopy(value)


def replace(doc: dict[str, Any], path: str, value: Any) -> None:
    """Place ``value`` at every node ``path`` selects in ``doc`` (in place)."""
    query = compile_path(path)
    matches = list(query.finditer(doc))
    for match in matches:
        parts = match.pointer().parts
        if not parts:
            raise CustomizeError(f"{path!r} selects the whole object; replace its fields instead")
        _set_at(doc, parts, value)
    if matches:
        return
    segments = query.segments
    last = segments[-1].selectors if segments else ()
    name = getattr(last[0], "name", None) if len(last) == 1 and query.singular_query() else None
    if name is None:
        raise CustomizeError(f"{path!r} selects nothing in the object")
    parent_path = "$" + "".join(str(s) for s in segments[:-1])
    parents = [m.obj for m in jsonpath.finditer(parent_path, doc)]
    if len(parents) != 1 or not isinstance(parents[0], dict):
        raise CustomizeError(f"{path!r} selects nothing in the object: {parent_path} is not an object there")
    parents[0][name] = copy.deepcopy(value)


def customize(obj: Mapping[str, Any], customizer: Mapping[str, Any] | None, definitions: Definitions) -> Customized:
    """The object one destination gets (``obj`` is never changed)."""
    unknown: set[str] = set()
    out: dict[str, Any] = copy.deepcopy(dict(obj))
    if wants_expansion(out.get("metadata") or {}):
        out = _expand_leaves(out, definitions, unknown)
    if customizer is None:
        return Customized(out, unknown)
    expand = wants_expansion(customizer.get("metadata") or {})
    for i, item in enumerate(customizer.get("replacements") or []):
        at = f"Customizer {customizer['metadata'].get('namespace', '')}/{customizer['metadata']['name']}: " \
             f"replacements[{i}]"
        path, text = str(item.get("path") or ""), str(item.get("value") or "")
        if expand:
            path, text = expand_string(path, definitions, unknown), expand_string(text, definitions, unknown)
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise CustomizeError(f"{at}.value: {text!r} is not JSON text ({exc.msg})") from None
        try:
            replace(out, path, value)
        except CustomizeError as exc:
            raise CustomizeError(f"{at}.path: {exc}") from None
    _check_identity(obj, out)
    return Customized(out, unknown)


def _check_identity(before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    """A destination's copy is the same object: the syncer finds and reports it by these fields."""
    for field_path in (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")):
        old: Any = before
        new: Any = after
        for part in field_path:
            old = old.get(part) if isinstance(old, Mapping) else None
            new = new.get(part) if isinstance(new, Mapping) else None
        if old != new:
            raise CustomizeError(f"{'.'.join(field_path)} would change from {old!r} to {new!r}; a customization "
                                 "cannot make it another object")
