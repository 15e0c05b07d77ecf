"""The one runtime every process that serves spaces runs: store, writer, watch, object service, controllers.

The hub and the cluster simulator both serve spaces; they differ in their catalogue and in what they
compose on top (placement and the sync server; simulated controllers), never in how the store is opened,
writes are committed, controllers are loaded and started, history is compacted, or everything is shut
down. ``open`` builds the parts, so that the owner can construct its own components on them; ``start``
loads every component from the store (the owner's too) before any of them runs, then starts them;
``stop`` undoes it in reverse order.

On PostgreSQL several processes may share one database: each follows every commit through the log feed,
and only the holder of the lease (``leadership``) runs the controllers and compaction; the owner gates its
own singletons on it too. A process that can no longer be sure of its history or its lease exits
(``fatal``), to be restarted by its supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from apimachinery.errors import StatusError
from apiserver.access import AdminsOnly, Authorizer
from apiserver.admission.engine import AdmissionEngine
from apiserver.admission.webhooks import WebhookIndex
from apiserver.catalog import Catalog
from apiserver.controllers.crds import CRDController
from apiserver.controllers.gc import OWNER_REFERENCES, GarbageCollector
from apiserver.controllers.namespaces import DELETING, NamespaceController
from apiserver.identity import ADMINS
from apiserver.rbac import bootstrap
from apiserver.rbac.authorizer import RBACAuthorizer
from apiserver.rbac.escalation import EscalationCheck
from apiserver.rbac.policy import PolicyIndex
from apiserver.server.admission import AdmissionChain, AdmissionHook
from apiserver.server.webhooks import Webhooks
from apiserver.service import Objects
from apiserver.spacepaths import ROOT
from apiserver.store import LogRow, LogStore, open_writer, storage_failure
from apiserver.store.feed import LogFeed, LogNotices, LogTail
from apiserver.store.lease import Leadership, PostgresLease
from apiserver.store.marked import MarkedRows
from apiserver.watch import WatchBus
from apiserver.writeoptions import WriteOptions
from spaces.kind import SPACES
from spaces.lifecycle import SpaceController
from spaces.seeding import Default, SpaceDefaults

log = logging.getLogger(__name__)
T = TypeVar("T")

READ_THREADS = 8  # store reads run in threads so that a slow query never blocks the event loop


@dataclass
class RuntimeSettings:
    db_url: str
    public_url: str = ""  # how clients reach this process (Space status.url)
    compact_horizon: int = 10_000  # revisions of history kept for watches
    compact_interval: float = 60.0  # seconds between compactions
    thread_prefix: str = "spacehub-read"
    # Kubernetes RBAC in every space (default roles, escalation checks); off, only administrators may act.
    rbac: bool = False
    privileged_groups: tuple[str, ...] = (ADMINS,)  # identities RBAC lets do anything


class SpaceRuntime:
    """Owns the long-lived parts of a space server and their start-up and shut-down order."""

    def __init__(self, catalog: Catalog, settings: RuntimeSettings,
                 observe_batch: Callable[[int, float], None] | None = None) -> None:
        self.catalog = catalog
        self.settings = settings
        self._observe_batch = observe_batch
        self._compaction: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Open the store and build the writer, watch bus, object service and the space controllers."""
        loop = asyncio.get_running_loop()
        self.executor = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix=self.settings.thread_prefix)
        self.store = await loop.run_in_executor(self.executor, LogStore, self.settings.db_url)
        start_revision = await loop.run_in_executor(self.executor, self.store.current_revision)
        self.bus = WatchBus(start_revision)
        self.tail: LogTail | None = LogTail(self.store) if self.store.is_postgres else None
        self.feed = LogFeed(self._read_tail, self.bus.publish, start_revision, self.fatal)
        self.writer = open_writer(self.store, loop, self.feed.committed, self._observe_batch)
        self.notices: LogNotices | None = None
        self.leadership: Leadership = Leadership(held=True)
        if self.tail is not None:
            await self.tail.open()
        if self.store.is_postgres:  # other processes may write this log and hold the lease
            self.notices = LogNotices(self.store, self.feed.notified, lambda: self.writer.session)
            self.leadership = PostgresLease(self.store, loop, self.fatal)
        self.objects = Objects(self.store, self.writer, self.bus, self.catalog, self.executor)
        self.namespaces = NamespaceController(self.objects, self.catalog)
        self.spaces = SpaceController(self.objects, self.catalog, self.namespaces, self.settings.public_url)
        # Rows found by a marker in their JSON, read in one pass at start; the owner may ask for markers too.
        self.marked_rows = MarkedRows()
        self.marked_rows.want(OWNER_REFERENCES)
        self.marked_rows.want(DELETING)
        self.gc = GarbageCollector(self.objects, self.catalog)
        self.crds = CRDController(self.objects, self.catalog)
        self.admission = AdmissionEngine(self.store)
        self.webhook_index = WebhookIndex(self.store)
        self.webhooks = Webhooks(self.webhook_index, self.objects, self.catalog)
        self.policy: PolicyIndex | None = PolicyIndex() if self.settings.rbac else None
        self.authorizer: Authorizer = AdminsOnly() if self.policy is None else \
            RBACAuthorizer(self.policy, self.settings.privileged_groups)

    async def start(self, loads: Sequence[Callable[[], None]] = ()) -> None:
        """Load the controllers and ``loads`` (the owner's components) from the store, then start the
        controllers, admission and compaction, and make sure the root space has its namespaces. The rows of
        ``marked_rows`` are read first, for every marker asked for since :meth:`open`."""
        policy_load = [] if self.policy is None else [lambda: self.policy.load(self.store.list_resource_everywhere)]
        await self.run_sync(self.marked_rows.read, self.store)
        for load in (lambda: self.namespaces.load(self.marked_rows.take(DELETING)), self.spaces.load,
                     lambda: self.gc.load(self.marked_rows.take(OWNER_REFERENCES)), self.crds.load,
                     self.admission.load, self.webhook_index.load, *policy_load, *loads):
            await self.run_sync(load)
        self.bus.add_listener(self.admission.on_commit)
        self.bus.add_listener(self.webhook_index.on_commit)
        # kube's order: mutating webhooks (before validation), then policies, then validating webhooks.
        self.objects.mutate = self.webhooks.mutate
        self.objects.admit_delete = self.webhooks.admit_delete
        policies = AdmissionHook(self.admission, self.objects, self.catalog)
        if self.policy is None:
            self.objects.admit = AdmissionChain(policies, self.webhooks.validate)
        else:
            assert isinstance(self.authorizer, RBACAuthorizer)
            self.bus.add_listener(self.policy.on_commit)
            self.objects.admit = AdmissionChain(EscalationCheck(self.policy, self.authorizer), policies,
                                                self.webhooks.validate)
        self.namespaces.start(self.leadership)
        self.spaces.start(self.leadership)
        self.gc.start(self.leadership)
        self.crds.start(self.leadership)
        if self.policy is not None:
            self.spaces.seeder.components.append(SpaceDefaults("spacehub", in_space=self.missing_default_roles))
        # Spaces made before a default object was added to every space get it now.
        for space, phase in list(self.spaces.phases.items()):
            if phase == "Active" and space not in self.spaces.kube_spaces:
                await self.spaces.seeder.seed(space)
        self._compaction = asyncio.create_task(self._compact_loop(), name="compaction")

    def drain(self) -> None:
        """The server is stopping: end the watches, so their connections close instead of holding it up."""
        bus = getattr(self, "bus", None)  # None: stopped before it opened its store
        if bus is not None:
            bus.close_watches()

    async def stop(self) -> None:
        if self._compaction is not None:
            self._compaction.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._compaction
        await self.crds.stop()
        await self.gc.stop()
        await self.spaces.stop()
        await self.namespaces.stop()
        await self.objects.webhook_client.close()
        await self.writer.close()
        if self.notices is not None:
            await self.notices.stop()
        if self.tail is not None:
            await self.tail.close()
        await self.run_sync(self.leadership.stop)
        self.store.close()
        self.executor.shutdown(wait=False)

    async def store_check(self) -> str | None:
        """Why the store refuses writes (unreachable, or a full disk: the database's message), or None when it
        takes them."""
        if self.writer.failing is None and not self.store.is_postgres:
            return None
        return await self.run_sync(self.writer.probe)

    async def _read_tail(self, after: int, upto: int) -> list[LogRow]:
        """The log's rows in (after, upto]: on PostgreSQL what other processes committed; on SQLite, where this
        process is the only writer, only ever its own (the feed has them from the writer and never asks)."""
        if self.tail is not None:
            return await self.tail.read(after, upto)
        return await self.run_sync(self.store.rows_between, after, upto)

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking work (store reads, loads) on the runtime's read threads."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def ensure_space(self, name: str, manager: str) -> str | None:
        """Create space ``name`` unless it exists; its phase before (None: it was created now)."""
        phase = self.spaces.phase(name)
        if phase is None:
            space_type = self.catalog.by_group_resource(ROOT, SPACES)
            assert space_type is not None
            try:
                await self.objects.create(ROOT, space_type, "", {"metadata": {"name": name}},
                                          WriteOptions(manager=manager))
            except StatusError as exc:
                if exc.code != 409:  # another hub process on the same database created it just now
                    raise
        return phase

    def missing_default_roles(self, space: str) -> list[Default]:
        """The default ClusterRoles and bindings (``apiserver.rbac.bootstrap``) that ``space`` lacks."""
        assert self.policy is not None
        role_names, binding_names = bootstrap.default_names()
        if all(self.policy.has_cluster_role(space, name) for name in role_names) and \
                all(self.policy.has_cluster_role_binding(space, name) for name in binding_names):
            return []  # what nearly every space answers at start: no objects built
        return [(f"{plural}.rbac.authorization.k8s.io", obj) for objects, present, plural in (
                    (bootstrap.cluster_roles(), self.policy.has_cluster_role, "clusterroles"),
                    (bootstrap.cluster_role_bindings(), self.policy.has_cluster_role_binding, "clusterrolebindings"))
                for obj in objects if not present(space, obj["metadata"]["name"])]

    def fatal(self, reason: str) -> None:
        """End the process at once: it cannot go on serving correctly (its supervisor restarts it)."""
        log.critical("exiting: %s", reason)
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stderr.flush()
        os._exit(70)

    async def _compact_loop(self) -> None:
        await self.leadership.wait()
        while True:
            await asyncio.sleep(self.settings.compact_interval)
            try:
                await self.objects.run_sync(self.store.compact, self.settings.compact_horizon)
            except Exception as exc:
                cause = storage_failure(exc)
                if cause is None:
                    log.exception("compaction failed")
                else:  # a full disk: said once a round, not as a traceback
                    log.warning("compaction failed: %s", cause)
