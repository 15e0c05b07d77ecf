"""Read back the parts of a gnostic ``openapi_v2.Document`` protobuf that kubectl uses, for tests.

Written from ``openapiv2/OpenAPIv2.proto`` (github.com/google/gnostic-models) with the repository's
wire reader, independently of the encoder under test: definitions with their schemas, and the
PATCH operations' GVK and query parameter names (what kubectl's v2 verifier reads).
"""

from __future__ import annotations

from typing import Any

import yaml

from apiserver.protobuf.wire import LEN, fields


def _messages(data: bytes, number: int) -> list[bytes]:
    return [v for n, t, v in fields(data) if n == number and t == LEN and isinstance(v, bytes)]


def _string(data: bytes, number: int) -> str:
    values = _messages(data, number)
    return values[-1].decode() if values else ""


def _named(data: bytes, number: int) -> list[tuple[str, bytes]]:
    """A gnostic map: repeated Named* messages, name = 1, value = 2."""
    out = []
    for entry in _messages(data, number):
        values = _messages(entry, 2)
        out.append((_string(entry, 1), values[-1] if values else b""))
    return out


def _extensions(data: bytes, number: int) -> dict[str, Any]:
    """NamedAny vendor extensions, their ``Any.yaml`` parsed as kubectl parses it."""
    return {name: yaml.safe_load(_string(value, 2)) for name, value in _named(data, number)}


def schema(data: bytes) -> dict[str, Any]:
    """An ``openapi_v2.Schema`` as a dict of the fields kube-openapi's model builder reads."""
    out: dict[str, Any] = {}
    if ref := _string(data, 1):
        out["$ref"] = ref
    if description := _string(data, 4):
        out["description"] = description
    for type_item in _messages(data, 22):
        out["type"] = [v.decode() for v in _messages(type_item, 1)]
    for items in _messages(data, 23):
        out["items"] = [schema(s) for s in _messages(items, 1)]
    for props in _messages(data, 25):
        out["properties"] = {name: schema(value) for name, value in _named(props, 1)}
    for additional in _messages(data, 21):
        sub = _messages(additional, 1)
        out["additionalProperties"] = schema(sub[-1]) if sub else \
            next(bool(v) for n, _, v in fields(additional) if n == 2)
    if required := [v.decode() for v in _messages(data, 19)]:
        out["required"] = required
    if extensions := _extensions(data, 31):
        out["extensions"] = extensions
    return out


def definitions(document: bytes) -> dict[str, dict[str, Any]]:
    return {name: schema(value) for defs in _messages(document, 9) for name, value in _named(defs, 1)}


def patch_operations(document: bytes) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Path -> (GVK extension, query parameter names) of each path's PATCH operation."""
    out = {}
    for paths in _messages(document, 8):
        for path, item in _named(paths, 2):
            for patch in _messages(item, 8):
                names = []
                for param_item in _messages(patch, 8):
                    for param in _messages(param_item, 1):
                        for non_body in _messages(param, 2):
                            names += [_string(q, 4) for q in _messages(non_body, 3)]
                gvk = _extensions(patch, 13).get("x-kubernetes-group-version-kind", {})
                out[path] = (gvk, names)
    return out
