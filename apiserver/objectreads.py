"""Reads of stored objects, shared by every kind: the read half of kube's generic registry store.

Keyed reads (``get``, ``find``), kube's lists, the changes feed for watches, and whole-store reads for the
in-memory indexes and controllers. Every object read for a client goes through the conversion to the requested
version. The writes (``apiserver.service.Objects``) build on these.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from apimachinery import errors
from apimachinery.fieldselectors import FieldSelector
from apimachinery.selectors import LabelSelector
from apiserver.crdconversion import Converter
from apiserver.listing import ListResult, list_page
from apiserver.resourcetypes import ResourceType
from apiserver.store import Key, LogRow, LogStore, shared_key
from apiserver.store.recent import RecentRows
from apiserver.watch import Entry, WatchBus, changes, decode_object
from apiserver.webhookclient import WebhookClient

T = TypeVar("T")


class ObjectReads:
    def __init__(self, store: LogStore, bus: WatchBus, executor: ThreadPoolExecutor) -> None:
        self.store = store
        self.bus = bus
        self._executor = executor
        # Where updates start from: the newest rows of recently written keys (stale ones fail the write's
        # precondition and are read again from the store).
        self.recent = RecentRows()
        bus.add_listener(self.recent.on_commit)
        # The server's one client for webhooks (admission and CRD conversion), and the conversion of stored
        # objects to the requested version and back that every read and write goes through.
        self.webhook_client = WebhookClient()
        self.converter = Converter(self.webhook_client)

    async def run_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(fn, *args, **kwargs))

    @staticmethod
    def key(space: str, rtype: ResourceType, namespace: str, name: str) -> Key:
        return shared_key(space, rtype.storage_resource, namespace if rtype.namespaced else "", name)

    # --- reads ------------------------------------------------------------------------------

    async def get_row(self, space: str, rtype: ResourceType, namespace: str, name: str) -> LogRow:
        row = await self.find_row(self.key(space, rtype, namespace, name))
        if row is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return row

    async def get(self, space: str, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        return await self.converter.served_one(rtype, decode_object(await self.get_row(space, rtype, namespace, name)))

    async def find(self, space: str, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as ``get`` serves it, or None when there is none: for callers to whom absence is an answer,
        not an error."""
        row = await self.find_row(self.key(space, rtype, namespace, name))
        return None if row is None else await self.converter.served_one(rtype, decode_object(row))

    async def find_row(self, key: Key) -> LogRow | None:
        """The stored row of a key, or None when there is none (deleted or never created)."""
        row = await self.run_sync(self.store.get, key)
        if row is not None:
            self.recent.offer(row)
        return row

    # Whole-store reads for in-memory indexes and controllers. They block: call them at startup or through
    # ``run_sync``.

    def rows_in(self, space: str, resource: str | None = None) -> list[LogRow]:
        """Every live object of one space, of one kind (storage resource) or of all (None)."""
        return self.snapshot_of(space, resource)[1]

    def snapshot_of(self, space: str, resource: str | None = None) -> tuple[int, list[LogRow]]:
        """:meth:`rows_in`, and the store's revision they are a snapshot of (to order later changes against)."""
        return self.store.list(space, resource, None)

    def rows_of_resource(self, resource: str) -> list[LogRow]:
        """Every live object of one kind (storage resource) in every space."""
        return self.store.list_resource_everywhere(resource)

    def count_in(self, space: str, resource: str) -> int:
        """How many live objects of one kind (storage resource) one space holds now."""
        return self.store.count(space, resource, None, at=self.store.current_revision())

    def count_by_resource(self) -> dict[str, int]:
        """Live objects of every space by storage resource, the internal records excepted (reads every key)."""
        return self.store.count_by_resource()

    def current_revision(self) -> int:
        return self.store.current_revision()

    def changes(self, space: str | None, resource: str, after: int) -> AsyncIterator[Entry]:
        """Every change of one kind in one space (None: every space) after revision ``after``, then live ones."""
        return changes(self.bus, self.store, space, resource, after, self.run_sync)

    async def list(self, space: str, rtype: ResourceType, namespace: str | None, *,
                   labels: LabelSelector | None = None, fields: FieldSelector | None = None,
                   limit: int = 0, continue_token: str = "", resource_version: str = "",
                   resource_version_match: str = "") -> ListResult:
        """A list as kube's GetList serves it (``apiserver.listing``): a page, its resourceVersion and continue
        token."""
        return await list_page(self.store, self.bus, self.run_sync, self.converter, space, rtype, namespace,
                               labels=labels,
                               fields=fields, limit=limit, continue_token=continue_token,
                               resource_version=resource_version, resource_version_match=resource_version_match)
