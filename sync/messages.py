"""The stream's messages: one JSON object per NDJSON line, and the entry JSON naming a desired entry.

Owns the wire shapes of docs/sync-protocol.md and the (version, kind) of each entry's type. Never reads
the engine or the store; callers hand it entries and objects.
"""

from __future__ import annotations

from typing import Any

import orjson

from apiserver.catalog import Catalog
from placement.model import DesiredEntry

CONTENT_TYPE = "application/x-ndjson"
_DEFAULT_TYPES = {"namespaces": ("v1", "Namespace"),
                  "customresourcedefinitions.apiextensions.k8s.io": ("v1", "CustomResourceDefinition")}


class EntryTypes:
    """(version, kind) of a space's resource from the hub's catalog, remembering the last answer so that a
    DELETE of a type the space no longer serves (its CRD deleted with it) still names it."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._known: dict[tuple[str, str], tuple[str, str]] = {}

    def lookup(self, space: str, resource: str) -> tuple[str, str]:
        rtype = self.catalog.by_group_resource(space, resource)
        if rtype is not None:
            found = (rtype.version, rtype.kind)
            self._known[(space, resource)] = found
            return found
        return self._known.get((space, resource)) or _DEFAULT_TYPES.get(resource, ("", ""))

    def entry_json(self, entry: DesiredEntry) -> dict[str, Any]:
        ref = entry.ref
        version, kind = self.lookup(ref.space, ref.resource)
        return {"space": ref.space, "group": ref.group, "version": version, "resource": ref.plural,
                "namespace": ref.namespace, "name": ref.name, "kind": kind, "entryKind": entry.kind,
                "implicit": entry.implicit}


def implicit_namespace(name: str) -> dict[str, Any]:
    """What a cluster gets for a Namespace that exists only because placed objects live in it."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def line(message: dict[str, Any]) -> bytes:
    return orjson.dumps(message) + b"\n"


def reset(seq: int) -> bytes:
    return line({"type": "RESET", "seq": seq})


def upsert(seq: int, entry: dict[str, Any], obj: dict[str, Any], revision: str | None) -> bytes:
    message: dict[str, Any] = {"type": "UPSERT", "seq": seq, "entry": entry}
    if revision is not None:
        message["revision"] = revision
    message["object"] = obj
    return line(message)


def hold(seq: int, entry: dict[str, Any], reason: str) -> bytes:
    """The entry is desired but its copy for this cluster cannot be made: keep whatever the cluster has."""
    return line({"type": "HOLD", "seq": seq, "entry": entry, "reason": reason})


def delete(seq: int, entry: dict[str, Any]) -> bytes:
    return line({"type": "DELETE", "seq": seq, "entry": entry})


def synced(seq: int, epoch: str, ping_interval: float) -> bytes:
    return line({"type": "SYNCED", "seq": seq, "epoch": epoch, "pingInterval": ping_interval})


def upsync_rules(seq: int, rules: list[dict[str, Any]]) -> bytes:
    return line({"type": "UPSYNC", "seq": seq, "rules": rules})


def ping(seq: int) -> bytes:
    return line({"type": "PING", "seq": seq})
