"""The Kubernetes object schemas, taken from a maintained source instead of typed by hand.

Source: the ``kubernetes-validate`` PyPI package, which ships the upstream Kubernetes OpenAPI
definitions converted to JSON Schema per release (``kubernetes-json-schema/v<release>-local/
_definitions.json``). They keep the upstream descriptions, ``required`` lists,
``x-kubernetes-group-version-kind`` tags and the strategic-merge metadata
(``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``) and list types
(``x-kubernetes-list-type`` / ``x-kubernetes-list-map-keys``). That is the merge-key table used by
strategic merge patch, OpenAPI, ``kubectl explain`` and field validation.

References are normalised to ``#/$defs/<name>`` so callers resolve them with :func:`resolve`.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

import orjson

Definitions = dict[str, dict[str, Any]]

_REF_PREFIX = re.compile(r"^.*#/\$defs/")


def schema_dir() -> str:
    """The newest Kubernetes release's schemas kubernetes-validate ships (the image keeps only this one)."""
    import kubernetes_validate

    base = os.path.join(os.path.dirname(kubernetes_validate.__file__), "kubernetes-json-schema")
    releases = [d for d in os.listdir(base) if re.fullmatch(r"v\d+\.\d+\.\d+-local", d)]
    if not releases:
        raise RuntimeError(f"no Kubernetes schemas found under {base}")
    newest = max(releases, key=lambda d: tuple(int(x) for x in d[1:-len("-local")].split(".")))
    return os.path.join(base, newest)


def schema_release() -> str:
    """The Kubernetes release whose schemas are served, e.g. ``1.37.0``."""
    return os.path.basename(schema_dir())[1:-len("-local")]


def _normalise(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                out[key] = _REF_PREFIX.sub("#/$defs/", value)
            else:
                out[key] = _normalise(value)
        return out
    if isinstance(node, list):
        return [_normalise(v) for v in node]
    return node


@functools.cache
def load_definitions() -> Definitions:
    with open(os.path.join(schema_dir(), "_definitions.json"), "rb") as f:
        raw = orjson.loads(f.read())
    return _normalise(raw["$defs"])


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def resolve(defs: Definitions, node: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` (possibly chained) to the schema it names; other nodes are returned as is."""
    seen = 0
    while "$ref" in node and seen < 16:
        node = defs[ref_name(node["$ref"])]
        seen += 1
    return node


def schema_types(node: dict[str, Any]) -> set[str]:
    """The JSON types a schema node allows, with ``null`` dropped (it marks optional fields)."""
    t = node.get("type")
    if t is None:
        return set()
    types = {t} if isinstance(t, str) else set(t)
    types.discard("null")
    return types
