"""What the syncer holds in its cluster: one :class:`Held` per cluster object it manages.

Owns the identity of a cluster object, the ownership marks the syncer puts on what it creates, and the
fingerprint that tells drift from the syncer's own writes. Knows nothing about HTTP or SQLite.

Several entries of the desired set (the same object placed from two spaces) can name one cluster
object; a Held remembers every entry (``sources``) and is deleted only when the last one goes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeclient.client import GVR

MANAGED_LABEL = "spacehub.io/managed"  # value "true": the only objects a syncer ever deletes
TARGET_ANNOTATION = "spacehub.io/sync-target"
SPACE_ANNOTATION = "spacehub.io/space"
# Apply order: namespaces, then CRDs, then the rest; deletion runs the other way.
ORDER = {"namespace": 0, "crd": 1, "object": 2}


def ident_of(entry: dict[str, Any]) -> str:
    """The cluster object an entry names (the space and version do not matter to the cluster)."""
    return "/".join((entry.get("group") or "", entry["resource"], entry.get("namespace") or "", entry["name"]))


def source_of(entry: dict[str, Any]) -> str:
    """The object as its space names it: a mapped entry (namespaceMapping) names the cluster object in
    ``namespace``/``name`` and the space's in ``spaceNamespace``/``spaceName``."""
    names = (entry.get("spaceNamespace", entry.get("namespace")) or "", entry.get("spaceName", entry["name"]))
    return f"{entry['space']}|{'/'.join((entry.get('group') or '', entry['resource'], *names))}"


def space_names(source: str) -> tuple[str, str, str]:
    """(space, namespace, name) of a source: where reports and Events about it go."""
    space, ident = source.split("|", 1)
    _group, _resource, namespace, name = ident.split("/")
    return space, namespace, name


def marked(obj: dict[str, Any], target: str, space: str) -> dict[str, Any]:
    """``obj`` with the syncer's ownership marks added (a new dict; the input is not changed)."""
    meta = dict(obj.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), MANAGED_LABEL: "true"}
    meta["annotations"] = {**(meta.get("annotations") or {}), TARGET_ANNOTATION: target, SPACE_ANNOTATION: space}
    return {**obj, "metadata": meta}


# A JSON merge patch taking the marks off an object the syncer leaves behind (removal policy orphan).
UNMARK = {"metadata": {"labels": {MANAGED_LABEL: None},
                       "annotations": {TARGET_ANNOTATION: None, SPACE_ANNOTATION: None}}}


def is_ours(live: dict[str, Any], target: str) -> bool:
    meta = live.get("metadata") or {}
    return (meta.get("labels") or {}).get(MANAGED_LABEL) == "true" and \
        (meta.get("annotations") or {}).get(TARGET_ANNOTATION) == target


def content_hash(obj: dict[str, Any]) -> str:
    return hashlib.blake2b(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS), digest_size=12).hexdigest()


_METADATA_COMPARED = ("labels", "annotations")


def _project(applied: Any, live: Any) -> Any:
    """The live values at the paths ``applied`` sets; lists are compared whole."""
    if isinstance(applied, dict):
        live_map = live if isinstance(live, dict) else {}
        return {key: _project(value, live_map.get(key)) for key, value in applied.items()}
    return live


def projection(applied: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The live object's values at the fields the syncer applies (what drift is judged on)."""
    applied_meta = applied.get("metadata") or {}
    live_meta = live.get("metadata") or {}
    out = {key: _project(value, live.get(key)) for key, value in applied.items()
           if key not in ("metadata", "status", "apiVersion", "kind")}
    out["metadata"] = {key: _project(applied_meta.get(key), live_meta.get(key))
                       for key in _METADATA_COMPARED if applied_meta.get(key)}
    return out


def fingerprint(applied: dict[str, Any], live: dict[str, Any]) -> str:
    """A digest of the live object's values at the fields the syncer applies.

    It is taken from the cluster's answer to each apply, so values the cluster normalises (quantities,
    defaults inside lists) count as the syncer's own; a later difference is somebody else's change.
    """
    return content_hash(projection(applied, live))


def resource_version(obj: dict[str, Any]) -> int:
    """The object's resourceVersion as a number, 0 if it is not one (then ordering checks are skipped)."""
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


@dataclass
class Held:
    ident: str
    entry: dict[str, Any]  # the latest entry naming it (group, version, resource, namespace, name, kind…)
    applied: dict[str, Any]  # what the syncer applies, marks included
    desired_hash: str
    sources: set[str] = field(default_factory=set)
    owned: bool = True  # False: an implicit Namespace the cluster already had; never changed or deleted
    live_fp: str = ""  # fingerprint after the syncer's last write ("" when not applied yet)
    applied_rv: int = 0
    error: str | None = None
    deleting: bool = False  # no longer desired; the cluster delete has not succeeded yet
    revision: str | None = None  # the content revision of the last UPSERT (reported as appliedRevision)
    drift: list[dict[str, Any]] = field(default_factory=list)  # the latest drift per field path (driftdetail.py)
    # not persisted:
    in_flight: bool = False
    live_status: Any = None
    live_generation: int | None = None
    retry_at: float = 0.0  # loop time of the next attempt after an error
    retry_delay: float = 0.0
    reported: tuple[Any, ...] | None = None
    corrections: int = 0
    last_correction: str | None = None
    baseline: dict[str, Any] | None = None  # projection() of the cluster's answer to the last apply
    judged_without: tuple[Any, ...] | None = None  # the retained paths drift was last judged without
    retained: dict[str, Any] | None = None  # the cluster's values of the fields it owns, by dotted path

    @property
    def gvr(self) -> GVR:
        return GVR(self.entry.get("group") or "", self.entry.get("version") or "", self.entry["resource"])

    @property
    def namespace(self) -> str:
        return self.entry.get("namespace") or ""

    @property
    def name(self) -> str:
        return str(self.entry["name"])

    @property
    def order(self) -> int:
        return ORDER.get(self.entry.get("entryKind") or "object", 2)

    def describe(self) -> str:
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"{self.entry['resource']}/{self.name}{where}"

    def record(self) -> dict[str, Any]:
        return {"entry": self.entry, "applied": self.applied, "desiredHash": self.desired_hash,
                "sources": sorted(self.sources), "owned": self.owned, "liveFp": self.live_fp,
                "appliedRv": self.applied_rv, "error": self.error, "deleting": self.deleting,
                "revision": self.revision, "drift": self.drift}

    @classmethod
    def from_record(cls, ident: str, record: dict[str, Any]) -> Held:
        return cls(ident=ident, entry=record["entry"], applied=record["applied"], desired_hash=record["desiredHash"],
                   sources=set(record.get("sources") or []), owned=bool(record.get("owned", True)),
                   live_fp=str(record.get("liveFp") or ""), applied_rv=int(record.get("appliedRv") or 0),
                   error=record.get("error"), deleting=bool(record.get("deleting")), revision=record.get("revision"),
                   drift=list(record.get("drift") or []))
