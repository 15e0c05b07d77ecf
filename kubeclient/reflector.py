"""List then watch forever, as client-go's reflector runs it: the one loop every reader of an API server's objects
uses (the syncer's drift, owned-object, Event and upsync watches; the hub's kube-space mirror).

Lists (the state now), then watches from the list's resourceVersion, resuming each watch the server ends (or
that is cut) from the last resourceVersion seen — an event's or a bookmark's; lists again when that version
expired (410 Gone). Other failures back off (``kubeclient.backoff``) and list again, or, for a caller that
starts over itself (``retry=False``), end the loop with the error; a 404 — the type is not served yet, its CRD
on the way — is logged quietly. A 405 ends the loop (the type is served without ``watch`` there). What it sees
goes to two callbacks: each whole listing, then each event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kubeclient.backoff import Backoff
from kubeclient.client import GVR, WATCH_SECONDS, ClusterError, KubeClient

log = logging.getLogger(__name__)
BACKOFF = (0.5, 30.0)  # the first and the longest pause while the server fails


class Reflector:
    def __init__(self, client: KubeClient, gvr: GVR, *, owner: str, namespace: str = "", label_selector: str = "",
                 field_selector: str = "", on_list: Callable[[list[dict[str, Any]]], None],
                 on_event: Callable[[str, dict[str, Any]], None],
                 on_unwatchable: Callable[[], None] | None = None, retry: bool = True,
                 watch_seconds: int = WATCH_SECONDS) -> None:
        self.client = client
        self.gvr = gvr
        self.owner = owner  # who watches, for the logs: "syncer wec1", "space root:kube"
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.on_list = on_list
        self.on_event = on_event  # (ADDED | MODIFIED | DELETED, object); bookmarks only move the version
        self.on_unwatchable = on_unwatchable  # the server does not watch this type: the loop has ended
        self.retry = retry
        self.watch_seconds = watch_seconds
        self.backoff = Backoff(*BACKOFF)

    async def run(self, resume_from: str = "") -> None:
        """Forever (until a 405, or the first failure without ``retry``); ``resume_from``: a resourceVersion the
        caller has listed at itself, to watch from before listing."""
        where = f" in {self.namespace}" if self.namespace else ""
        rv = resume_from
        while True:
            try:
                if not rv:
                    items, rv = await self.client.list(self.gvr, self.label_selector, namespace=self.namespace,
                                                       field_selector=self.field_selector)
                    self.on_list(items)
                    self.backoff.reset()
                await self._watch(rv)
            except ClusterError as exc:
                rv = ""  # whatever failed, what happened meanwhile is known only from a new list
                if exc.gone:
                    continue  # our resourceVersion is too old: list again
                if exc.code == 405:  # the verb is not served for this type here: asking again changes nothing
                    log.info("%s: the server does not watch %s%s, so it is not watched: %s", self.owner, self.gvr,
                             where, exc.message)
                    if self.on_unwatchable is not None:
                        self.on_unwatchable()
                    return
                if not self.retry:
                    raise
                delay = self.backoff.next()
                level = logging.DEBUG if exc.not_found else logging.INFO
                log.log(level, "%s: watch of %s%s failed (%s), again in %.1fs: %s", self.owner, self.gvr, where,
                        exc.reason, delay, exc.message)
                await asyncio.sleep(delay)

    async def _watch(self, rv: str) -> None:
        """Watch from ``rv`` until an error, each watch the server ends resumed from the last version seen."""
        while True:
            async for event in self.client.watch(self.gvr, self.label_selector, rv, namespace=self.namespace,
                                                 field_selector=self.field_selector, seconds=self.watch_seconds):
                obj = event.get("object") or {}
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if event.get("type") != "BOOKMARK":
                    self.on_event(str(event.get("type")), obj)


class Reflectors:
    """A set of running reflectors by key, started and stopped as what needs them comes and goes."""

    def __init__(self) -> None:
        self.tasks: dict[Any, asyncio.Task[None]] = {}

    def ensure(self, key: Any, reflector: Callable[[], Reflector]) -> None:
        if key not in self.tasks:
            self.tasks[key] = asyncio.get_running_loop().create_task(reflector().run(), name=f"watch {key}")

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
