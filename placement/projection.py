"""How a workload object must look in a cluster: what the space's server filled in is taken out.

The hub stores each object once; every destination gets this projection of it (computed once per
object revision and shared), so memory grows with objects, not objects times clusters.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from placement.model import ObjectRef

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_SERVER_METADATA = frozenset(("uid", "resourceVersion", "managedFields", "ownerReferences", "generation", "finalizers",
                    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                    "generateName"))
# An EdgePlacement with this annotation ("true", or how many hub levels down it acts: "1" is "true") is meant
# for the child hubs it is placed on: in its own space it is an object to place like any other, not a placement
# (``placement.service``). Projected, "true" or "1" is dropped — an ordinary EdgePlacement in the child hub's
# space — and "N" becomes "N-1", so one placement at the top of a deeper tree is carried down to the hub that
# acts on it (README "Hubs of hubs").
CHILD_HUB_PLACEMENT = "spacehub.io/child-hub-placement"


def child_hub_levels(value: Any) -> int:
    """How many hub levels below this one a placement annotated ``value`` acts (0: it acts here)."""
    if value == "true":
        return 1
    if isinstance(value, str) and value.isdigit() and 0 < int(value) <= 16:
        return int(value)
    return 0
_SERVER_ANNOTATIONS = frozenset((LAST_APPLIED, "kubestellar.io/executing-count", CHILD_HUB_PLACEMENT))
_KIND_SPECIFIC = frozenset(("Service", "Job", "Namespace"))  # project() strips more of these
_JOB_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name")


def _trimmed(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without what every kind's server fills in: a new top level and metadata (annotations too, when
    one is dropped) over ``obj``'s own values, which must not be mutated through it."""
    meta_in = obj.get("metadata")
    meta = {k: v for k, v in meta_in.items() if k not in _SERVER_METADATA} if isinstance(meta_in, dict) else {}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and (not annotations or not _SERVER_ANNOTATIONS.isdisjoint(annotations)):
        kept = {k: v for k, v in annotations.items() if k not in _SERVER_ANNOTATIONS}
        if (levels := child_hub_levels(annotations.get(CHILD_HUB_PLACEMENT))) > 1:
            kept[CHILD_HUB_PLACEMENT] = str(levels - 1)  # one hub level nearer to the one that acts on it
        if kept:
            meta["annotations"] = kept
        else:
            del meta["annotations"]
    trimmed = {k: v for k, v in obj.items() if k != "status" and k != "metadata"}
    trimmed["metadata"] = meta
    return trimmed


def project(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a syncer applies it: server-populated fields stripped (never mutates ``obj``)."""
    # Only what is kept is copied (status and managedFields are often most of an object), and through JSON,
    # which is several times faster than copy.deepcopy for what JSON decoding made.
    out = orjson.loads(orjson.dumps(_trimmed(obj)))
    kind = out.get("kind")
    spec = out.get("spec") if isinstance(out.get("spec"), dict) else None
    if kind == "Service" and spec is not None:
        # Each cluster allocates its own addresses and ports.
        for key in ("clusterIP", "clusterIPs", "healthCheckNodePort"):
            spec.pop(key, None)
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.pop("nodePort", None)
    elif kind == "Job" and spec is not None:
        # The selector and its labels are generated per cluster from the Job's uid there.
        spec.pop("selector", None)
        spec.pop("manualSelector", None)
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            for key in _JOB_LABELS:
                labels.pop(key, None)
    elif kind == "Namespace":
        out.pop("spec", None)  # spec.finalizers belong to the cluster
    return out


def content_digest(obj: dict[str, Any]) -> bytes:
    """A digest of what clusters get of ``obj``: equal for revisions that differ only in status or in what
    the server fills in (the hub writing reported status back makes such revisions)."""
    # Kinds that lose more than server metadata are projected whole; for the rest the trimmed view is the
    # projection's content, without copying it.
    view = project(obj) if obj.get("kind") in _KIND_SPECIFIC else _trimmed(obj)
    return hashlib.blake2b(orjson.dumps(view, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


class ProjectedObjects:
    """Each object's projection at its current revision, cached: one store read per revision however many
    streams ask for it at once (the first one loads, the others await the same load)."""

    def __init__(self, revision_of: Callable[[ObjectRef], int | None],
                 read: Callable[[ObjectRef], Awaitable[dict[str, Any] | None]]) -> None:
        self._revision_of = revision_of  # the object's current revision (None: not a workload object now)
        self._read = read  # the object as stored (None: gone)
        self._projections: dict[ObjectRef, tuple[int, dict[str, Any]]] = {}
        self._projecting: dict[tuple[ObjectRef, int], asyncio.Future[dict[str, Any] | None]] = {}

    def forget(self, ref: ObjectRef) -> None:
        self._projections.pop(ref, None)

    async def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        """The object as its destinations must have it."""
        revision = self._revision_of(ref)
        if revision is None:
            return None
        cached = self._projections.get(ref)
        if cached is not None and cached[0] == revision:
            return cached[1]
        key = (ref, revision)
        loading = self._projecting.get(key)
        if loading is None:
            loading = asyncio.ensure_future(self._load(ref, revision))
            self._projecting[key] = loading
            loading.add_done_callback(lambda _done: self._projecting.pop(key, None))
        # Shielded: one stream going away must not cancel the load the others wait for.
        return await asyncio.shield(loading)

    async def _load(self, ref: ObjectRef, revision: int) -> dict[str, Any] | None:
        obj = await self._read(ref)
        if obj is None:
            return None
        projected = project(obj)
        if self._revision_of(ref) == revision:
            self._projections[ref] = (revision, projected)
        return projected
