"""Placement's view of kube spaces: their API servers' objects, fed to the engine as the watch bus feeds it.

A built-in space's objects reach ``PlacementService.on_commit`` as the store's committed rows. A kube space's
live on its API server (``spaces.providers``), so a ``KubeSpaceMirror`` per kube space lists and watches
there what placement needs — the space's EdgePlacements, its Namespaces and CRDs, and the resources their
``downsync`` tests name (every listable one of a group, or of all groups, for a test that names none or
``*``) — and hands ``on_commit`` the same ``Entry`` rows, keyed by the kube space's id, with the object's
``resourceVersion`` as revision. It keeps the latest row of each object: the service reads a placed
object's content from it (``PlacementService.external``) instead of the store. The engine changes nothing.

A server that stops answering changes nothing: the mirror stops updating and keeps every row (so clusters
keep what was placed), and starts over with a full relist once the server answers again. Deletions are only
ever synthesized from a complete, successful list of a resource (an object it no longer holds) or from the
server's own DELETED events. Every hub process runs the mirrors for its own engine; they only read.

The rows are in memory; ``listeners`` hear of every change to them, so that the hub can keep a copy
(``hub.mirrorlog``), and ``KubeSpaceMirrors.start`` takes that copy back as each space's state until its
server's first complete list replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from apiserver.customresources import CRD_RESOURCE
from apiserver.store import Key, LogRow, right_sized
from apiserver.watch import Entry
from kubeclient.backoff import Backoff
from kubeclient.client import GVR, ClusterError, KubeClient
from kubeclient.reflector import Reflector
from placement.downsync import WILDCARD, compile_test
from placement.placed import NOT_PLACED
from placement.results import PLACEMENTS
from placement.service import PlacementService
from spaces.providers.kubespaces import KubeSpace, KubeSpaces
from spaces.providers.upstream import ProviderError

log = logging.getLogger(__name__)
EDGE_GROUP, EDGE_VERSION = "edge.kubestellar.io", "v2alpha1"
WATCH_SECONDS = 60  # the server ends each watch after this long; the mirror watches again from where it was
RETRY_BACKOFF = (0.5, 5.0)  # the first and the longest pause while the server fails
# Told that kube space ``space``'s rows changed: the keys that did, or None for any of them (after a complete
# list, or when the space stops being a kube space).
Changed = Callable[[str, Collection[Key] | None], None]


@dataclass(frozen=True)
class Mirrored:
    """One resource the mirror lists and watches."""

    resource: str  # the store's form: ``configmaps``, ``deployments.apps``
    gvr: GVR
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.gvr.group}/{self.gvr.version}" if self.gvr.group else self.gvr.version


PLACEMENT_RESOURCE = Mirrored(PLACEMENTS, GVR(EDGE_GROUP, EDGE_VERSION, "edgeplacements"), "EdgePlacement")


class Restart(Exception):
    """The resources to mirror changed: list everything again."""


class MirrorError(Exception):
    """The server answered, but not with what the mirror needs."""


@dataclass(frozen=True)
class Wanted:
    """What placements' downsync tests name."""

    groups: frozenset[str | None] = frozenset()  # every resource of these groups (None: of every group)
    pairs: frozenset[tuple[str, str]] = frozenset()  # (group, plural)
    plurals: frozenset[str] = frozenset()  # of any group

    @property
    def every_group(self) -> bool:
        """Whether discovery must look at every group."""
        return None in self.groups or bool(self.plurals)

    def names(self, group: str, plural: str) -> bool:
        return None in self.groups or group in self.groups or (group, plural) in self.pairs or plural in self.plurals


def wanted(placements: Sequence[dict[str, Any]]) -> Wanted:
    groups: set[str | None] = set()
    pairs: set[tuple[str, str]] = set()
    plurals: set[str] = set()
    for placement in placements:
        for i, raw in enumerate((placement.get("spec") or {}).get("downsync") or []):
            test = compile_test(i, raw, [])
            if not test.discriminates:
                continue  # matches nothing
            if test.resources is None or WILDCARD in test.resources:
                groups.add(test.api_group)
            elif test.api_group is None:
                plurals.update(test.resources)
            else:
                pairs.update((test.api_group, plural) for plural in test.resources)
    return Wanted(frozenset(groups), frozenset(pairs), frozenset(plurals))


class KubeSpaceMirror:
    def __init__(self, space: KubeSpace, spaces: KubeSpaces, deliver: Callable[[Sequence[Entry]], None],
                 changed: Changed | None = None) -> None:
        self.space = space
        self.spaces = spaces
        self.deliver = deliver
        self.changed = changed
        self.rows: dict[Key, LogRow] = {}
        # Whether the rows come from a complete list of the server in this process (not only from a copy).
        self.listed = False
        self._wanted = Wanted()

    def row(self, key: Key) -> LogRow | None:
        return self.rows.get(key)

    async def run(self) -> None:
        backoff = Backoff(*RETRY_BACKOFF, jitter=False)
        while True:
            try:
                await self._session()
            except Restart:
                backoff.reset()
                continue
            except (ClusterError, MirrorError, ProviderError) as exc:
                log.info("space %s: mirror paused: %s", self.space.path, exc)
            except Exception:
                log.exception("space %s: mirror failed", self.space.path)
            # Backing off is the point: the server is down or refusing, and nothing else says when it is back.
            await asyncio.sleep(backoff.next())

    async def _session(self) -> None:
        """List everything, hand over the differences, then follow every resource until something changes."""
        client = (await self.spaces.upstream(self.space.id)).client
        placements, rv = await client.list(PLACEMENT_RESOURCE.gvr, "")
        self._wanted = wanted(placements)
        resources = await self._resources(client)
        lists = {PLACEMENT_RESOURCE: (placements, rv)}
        for m in resources:
            lists[m] = await client.list(m.gvr, "")
        entries: list[Entry] = []
        for m, (items, _rv) in lists.items():
            entries.extend(self._replace(m.resource, [self._row(m, obj, None) for obj in items]))
        listed = {m.resource for m in lists}
        # Resources no placement names any more: their objects leave the engine (the server was just listed).
        entries.extend(self._gone([k for k in self.rows if k.resource not in listed]))
        self.listed = True
        self._hand(entries, complete=True)
        # Each resource followed from its list (and listed again alone when its version expires); any other
        # failure ends the session, and the next starts over with a full list.
        watches = [asyncio.ensure_future(self._reflector(client, m).run(resume_from=lists[m][1])) for m in lists]
        try:
            done, _ = await asyncio.wait(watches, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()  # raises what ended the session
        finally:
            for task in watches:
                task.cancel()
            for task in watches:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def _reflector(self, client: KubeClient, m: Mirrored) -> Reflector:
        return Reflector(client, m.gvr, owner=f"space {self.space.path}", retry=False, watch_seconds=WATCH_SECONDS,
                         on_list=lambda items: self._relisted(m, items),
                         on_event=lambda kind, obj: self._event(m, kind, obj))

    async def _resources(self, client: KubeClient) -> list[Mirrored]:
        """The resources to mirror besides EdgePlacements, from the server's discovery."""
        want = self._wanted
        named = {g for g, _ in want.pairs} | {g for g in want.groups if g is not None} | {"apiextensions.k8s.io"}
        versions = [("", "v1")]
        for group in (await client.request_json("GET", "/apis")).get("groups") or []:
            name = group.get("name", "")
            if want.every_group or name in named:
                versions.append((name, (group.get("preferredVersion") or {}).get("version", "")))
        found = []
        for group, version in versions:
            gv = f"{group}/{version}" if group else version
            listing = await client.request_json("GET", f"/apis/{gv}" if group else f"/api/{version}")
            for r in listing.get("resources") or []:
                plural = r.get("name", "")
                resource = f"{plural}.{group}" if group else plural
                if "/" in plural or not {"list", "watch"} <= set(r.get("verbs") or []) or resource in NOT_PLACED:
                    continue
                if resource in ("namespaces", CRD_RESOURCE) or want.names(group, plural):
                    found.append(Mirrored(resource, GVR(group, version, plural), r.get("kind", "")))
        return found

    def _hand(self, entries: list[Entry], complete: bool = False) -> None:
        """Give the engine what changed, and tell the listener which rows did (all of them after a complete list:
        the rows it keeps may differ from these in more than the changes since the last one)."""
        if entries:
            self.deliver(entries)
        if self.changed is not None and (entries or complete):
            self.changed(self.space.id, None if complete else [e.row.key for e in entries])

    def _row(self, m: Mirrored, obj: dict[str, Any], event: str | None) -> LogRow:
        """An object of the server as a committed row of the kube space (list items carry no kind)."""
        obj = {**obj, "apiVersion": m.api_version, "kind": m.kind}
        meta = obj.get("metadata") or {}
        key = Key(self.space.id, m.resource, meta.get("namespace") or "", meta.get("name") or "")
        try:
            revision = int(meta.get("resourceVersion") or 0)
        except ValueError:
            raise MirrorError(f"{m.resource} {key.name}: resourceVersion {meta.get('resourceVersion')!r} is "
                              "not a number") from None
        previous = self.rows.get(key)
        return LogRow(revision, key, created=previous is None, deleted=event == "DELETED",
                      prev_revision=previous.revision if previous else 0, value=right_sized(orjson.dumps(obj)))

    def _replace(self, resource: str, rows: list[LogRow]) -> list[Entry]:
        """A complete list of ``resource``: what changed since the rows kept, and what it no longer holds."""
        entries = []
        listed = {row.key for row in rows}
        for row in rows:
            previous = self.rows.get(row.key)
            if previous is None or previous.revision != row.revision:
                self.rows[row.key] = row
                entries.append(Entry(row))
        entries.extend(self._gone([k for k in self.rows if k.resource == resource and k not in listed]))
        return entries

    def _gone(self, keys: list[Key]) -> list[Entry]:
        entries = []
        for key in keys:
            last = self.rows.pop(key)
            entries.append(Entry(LogRow(last.revision, key, created=False, deleted=True,
                                        prev_revision=last.revision, value=last.value)))
        return entries

    def _relisted(self, m: Mirrored, items: list[dict[str, Any]]) -> None:
        """A resource listed again alone (its watch's version expired): what changed, and what it no longer
        holds."""
        self._hand(self._replace(m.resource, [self._row(m, obj, None) for obj in items]))
        if m is PLACEMENT_RESOURCE:
            self._check_placements()

    def _event(self, m: Mirrored, kind: str, obj: dict[str, Any]) -> None:
        """Hand one watch event over."""
        row = self._row(m, obj, kind)
        if row.deleted:
            if self.rows.pop(row.key, None) is None:
                return
        else:
            self.rows[row.key] = row
        self._hand([Entry(row)])
        if m is PLACEMENT_RESOURCE:
            self._check_placements()

    def _check_placements(self) -> None:
        if wanted([orjson.loads(r.value) for k, r in self.rows.items() if k.resource == PLACEMENTS]) != self._wanted:
            raise Restart("the placements name other resources")


class KubeSpaceMirrors:
    """One mirror per kube space, each started over when its Space or Secret changes and dropped with it."""

    def __init__(self, spaces: KubeSpaces, placement: PlacementService) -> None:
        self.spaces = spaces
        self.placement = placement
        self._mirrors: dict[str, KubeSpaceMirror] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.listeners: list[Changed] = []  # told of every change to a mirror's rows

    def get(self, space_id: str) -> KubeSpaceMirror | None:
        return self._mirrors.get(space_id)

    def start(self, kept: Mapping[str, Mapping[Key, LogRow]] | None = None) -> None:
        """Mirror every kube space, starting from the rows ``kept`` of each (by space id; what the hub recorded):
        the engine gets them at once, as the space's state until its server's first complete list replaces it."""
        entries = []
        for space in self.spaces.all():
            rows = (kept or {}).get(space.id)
            if rows:
                mirror = self._mirrors[space.id] = self._mirror(space)
                mirror.rows = dict(rows)
                entries.extend(Entry(row) for row in rows.values())
        self.spaces.listeners.append(self._changed)
        for space in self.spaces.all():
            self._changed(space.id)  # the service reads these spaces from their mirrors from now on
        if entries:  # before any mirror runs: their first lists compare with these rows
            self.placement.on_commit(entries)

    def _mirror(self, space: KubeSpace) -> KubeSpaceMirror:
        return KubeSpaceMirror(space, self.spaces, self.placement.on_commit, self._tell)

    def _tell(self, space_id: str, keys: Collection[Key] | None) -> None:
        for listener in self.listeners:
            listener(space_id, keys)

    def _changed(self, space_id: str) -> None:
        task = self._tasks.pop(space_id, None)
        if task is not None:
            task.cancel()
        space = self.spaces.get(space_id)
        if space is None:  # deleted (the service forgets its objects from the Space's deletion) or now built-in
            if self._mirrors.pop(space_id, None) is not None:
                self._tell(space_id, None)
            self.placement.external.pop(space_id, None)
            return
        # Kept over a restart: the next full list is compared with what the engine has.
        mirror = self._mirrors.get(space_id)
        if mirror is None or mirror.space != space:
            mirror = self._mirror(space)
            if space_id in self._mirrors:
                mirror.rows = self._mirrors[space_id].rows
            self._mirrors[space_id] = mirror
        self.placement.external[space_id] = mirror.row
        self._tasks[space_id] = asyncio.create_task(mirror.run(), name=f"kube-space-mirror-{space_id}")

    async def stop(self) -> None:
        tasks, self._tasks = list(self._tasks.values()), {}
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
