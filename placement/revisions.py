"""Revisions of placed objects: each content change is a numbered revision, kept in the store.

A revision is the content clusters get of an object (its projection, :mod:`placement.projection`), its digest
and a number counting from 1 per object. The hub process holding the placement leadership records a new
revision when an object a rollout placement selects changes content (``record``); every hub process takes the
records in from the log (one internal record per object, replaced at each new revision), so all of them, and a
restarted hub, agree on the numbers and can send a cluster the content of an earlier revision. The newest
``limit`` revisions of an object are kept (the placements' ``spec.revisionHistoryLimit``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from apiserver.service import Objects
from apiserver.store import INTERNAL_SPACE, Key, Write
from apiserver.watch import Entry
from apiserver.writeoptions import now_rfc3339
from placement.model import ObjectRef

RECORDS = "objectrevisions.spacehub.io"


@dataclass(frozen=True)
class Revision:
    number: int
    digest: str
    content: dict[str, Any]
    created: str


def object_key(ref: ObjectRef) -> str:
    """How rollouts name an object in ``status.rollout`` (stable across processes)."""
    return f"{ref.space}/{ref.resource}/{ref.namespace}/{ref.name}"


def digest_of(content: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


class RevisionHistory:
    def __init__(self, objects: Objects) -> None:
        self.objects = objects
        self._history: dict[ObjectRef, list[Revision]] = {}

    def _key(self, ref: ObjectRef) -> Key:
        # A digest: a space path and an object reference together may outgrow the log's name column.
        name = hashlib.sha256(object_key(ref).encode()).hexdigest()
        return Key(INTERNAL_SPACE, RECORDS, "", name)

    # --- every process -----------------------------------------------------------------------------

    def load(self) -> None:
        """Read every object's kept revisions (blocking; at startup)."""
        for row in self.objects.rows_in(INTERNAL_SPACE, RECORDS):
            self._take(row.value, deleted=False)

    def listen(self) -> None:
        self.objects.bus.add_internal_listener(RECORDS, self._taken)

    def _taken(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            self._take(entry.row.value, entry.row.deleted)

    def _take(self, value: bytes, deleted: bool) -> None:
        doc = orjson.loads(value)
        ref = ObjectRef(doc["space"], doc["resource"], doc["namespace"], doc["name"])
        if deleted:
            self._history.pop(ref, None)
            return
        self._history[ref] = [Revision(r["revision"], r["digest"], r["content"], r["created"])
                              for r in doc["revisions"]]

    def of(self, ref: ObjectRef) -> list[Revision]:
        """The object's kept revisions, oldest first."""
        return list(self._history.get(ref, ()))

    def newest(self, ref: ObjectRef) -> Revision | None:
        kept = self._history.get(ref)
        return kept[-1] if kept else None

    def get(self, ref: ObjectRef, number: int) -> Revision | None:
        return next((r for r in self._history.get(ref, ()) if r.number == number), None)

    # --- the lease holder ----------------------------------------------------------------------------

    async def record(self, ref: ObjectRef, content: dict[str, Any], limit: int,
                     in_use: frozenset[int] = frozenset()) -> Revision:
        """The object's revision for this content: the newest if it has the same digest, else a new one. Of
        the older ones the newest ``limit`` are kept, and those in ``in_use`` (clusters still run them)."""
        digest = digest_of(content)
        kept = self._history.get(ref, [])
        if kept and kept[-1].digest == digest:
            return kept[-1]
        revision = Revision((kept[-1].number if kept else 0) + 1, digest, content, now_rfc3339())
        every = [*kept, revision]
        newest = {r.number for r in every[-limit:]}
        await self._write(ref, [r for r in every if r.number in newest or r.number in in_use])
        return revision

    async def forget(self, ref: ObjectRef) -> None:
        """The object is gone: so is its history."""
        if self._history.pop(ref, None) is not None:
            doc = {"space": ref.space, "resource": ref.resource, "namespace": ref.namespace, "name": ref.name,
                   "revisions": []}
            await self._put(self._key(ref), orjson.dumps(doc), deleted=True)

    async def _write(self, ref: ObjectRef, kept: list[Revision]) -> None:
        doc = {"space": ref.space, "resource": ref.resource, "namespace": ref.namespace, "name": ref.name,
               "revisions": [{"revision": r.number, "digest": r.digest, "content": r.content, "created": r.created}
                             for r in kept]}
        self._history[ref] = kept  # at once here; the log feed brings the same to every process
        await self._put(self._key(ref), orjson.dumps(doc), deleted=False)

    async def _put(self, key: Key, value: bytes, *, deleted: bool) -> None:
        for result in await self.objects.writer.write_many([Write(key, value, deleted=deleted)]):
            if isinstance(result, BaseException):
                raise result
