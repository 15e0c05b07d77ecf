"""One list-then-watch loop over a resource of the cluster, as client-go's reflector runs it.

Lists (the state now), then watches from the list's resourceVersion; lists again when the watch's
version expired (410) or the server ended it badly; backs off while the cluster fails (a 404 — the type is
not served yet, its CRD on the way — is quiet); ends when the cluster answers 405 (a hub's space lists its
clusters' pods but does not watch them: README "Hubs of hubs"). What it sees goes to two callbacks: the whole
listing, then each event. Used for drift (the objects the syncer manages), for what workloads own (pods, ReplicaSets),
for Warning Events and for upsync.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kubeclient.backoff import Backoff
from syncer.cluster import GVR, Cluster, ClusterError

log = logging.getLogger(__name__)


class WatchLoop:
    def __init__(self, cluster: Cluster, gvr: GVR, *, target: str, namespace: str = "", label_selector: str = "",
                 field_selector: str = "", on_list: Callable[[list[dict[str, Any]]], None],
                 on_event: Callable[[str, dict[str, Any]], None],
                 on_unwatchable: Callable[[], None] | None = None) -> None:
        self.cluster = cluster
        self.gvr = gvr
        self.target = target
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.on_list = on_list
        self.on_event = on_event  # (ADDED | MODIFIED | DELETED, object)
        self.on_unwatchable = on_unwatchable  # the cluster does not watch this type: the loop has ended

    async def run(self) -> None:
        backoff = Backoff(0.5, 30.0)
        where = f" in {self.namespace}" if self.namespace else ""
        while True:
            try:
                items, rv = await self.cluster.list(self.gvr, self.label_selector, namespace=self.namespace,
                                                    field_selector=self.field_selector)
                self.on_list(items)
                backoff.reset()
                while True:
                    async for event in self.cluster.watch(self.gvr, self.label_selector, rv, namespace=self.namespace,
                                                          field_selector=self.field_selector):
                        obj = event.get("object") or {}
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        if event.get("type") != "BOOKMARK":
                            self.on_event(str(event.get("type")), obj)
            except ClusterError as exc:
                if exc.gone:
                    continue  # our resourceVersion is too old: list again
                if exc.code == 405:  # the verb is not served for this type here: asking again changes nothing
                    log.info("syncer %s: the cluster does not watch %s%s, so it is not watched: %s", self.target,
                             self.gvr, where, exc.message)
                    if self.on_unwatchable is not None:
                        self.on_unwatchable()
                    return
                delay = backoff.next()
                level = logging.DEBUG if exc.not_found else logging.INFO
                log.log(level, "syncer %s: watch of %s%s failed (%s), again in %.1fs: %s", self.target, self.gvr,
                        where, exc.reason, delay, exc.message)
                await asyncio.sleep(delay)


class Watches:
    """A set of running watch loops by key, started and stopped as what needs them comes and goes."""

    def __init__(self) -> None:
        self.tasks: dict[Any, asyncio.Task[None]] = {}

    def ensure(self, key: Any, loop: Callable[[], WatchLoop]) -> None:
        if key not in self.tasks:
            self.tasks[key] = asyncio.get_running_loop().create_task(loop().run(), name=f"watch {key}")

    def drop(self, key: Any) -> None:
        task = self.tasks.pop(key, None)
        if task is not None:
            task.cancel()

    def keys(self) -> list[Any]:
        return list(self.tasks)

    async def stop(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.tasks.clear()
