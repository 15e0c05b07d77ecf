"""Warning Events about placed workloads, forwarded to the hub (``POST …/events``), coalesced and bounded.

An Event is sent when it is new or its ``count``/``lastTimestamp`` moved on since it was last sent; while
the hub is away only the newest state of each Event waits (at most ``MAX_PENDING``, the oldest dropped
first). A hub that does not know the request (an older hub answers 404) is asked again only after a while.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from syncer.hubclient import HubClient, HubError

log = logging.getLogger(__name__)
MAX_BATCH = 100  # events per POST (the hub's limit)
MAX_PENDING = 1000
MAX_SENT = 10_000  # event states remembered to tell "moved on" from "seen"
UNSUPPORTED_RETRY_SECONDS = 300.0


class EventForwarder:
    def __init__(self, hub: HubClient, target: str, interval: float,
                 placed: Callable[[str], list[dict[str, Any]]]) -> None:
        self.hub = hub
        self.target = target
        self.interval = interval
        self.placed = placed  # held ident -> the object's report identity per source space
        self.pending: dict[str, tuple[str, dict[str, Any]]] = {}  # event uid -> (ident, event)
        self.sent: dict[str, tuple[Any, Any]] = {}  # event uid -> (count, lastTimestamp) last sent
        self.wake = asyncio.Event()
        self.connected: asyncio.Event | None = None  # the reporter's: set while the stream is connected
        self._unsupported_until = 0.0

    def offer(self, ident: str, event: dict[str, Any]) -> None:
        uid = str((event.get("metadata") or {}).get("uid") or "")
        if not uid or self.sent.get(uid) == (event.get("count"), event.get("lastTimestamp")):
            return
        self.pending.pop(uid, None)
        self.pending[uid] = (ident, event)
        while len(self.pending) > MAX_PENDING:
            del self.pending[next(iter(self.pending))]
        self.wake.set()

    def _items(self, ident: str, event: dict[str, Any]) -> list[dict[str, Any]]:
        involved = event.get("involvedObject") or {}
        source = event.get("source") or {}
        # What an Event is about (a pod, a ReplicaSet) lives in the placed object's namespace: the space's name of
        # it is the base's (a mapped namespace reads back as the space's).
        return [{**base, "regarding": {"kind": involved.get("kind", ""),
                                       "namespace": base["namespace"] if involved.get("namespace") else "",
                                       "name": involved.get("name", "")},
                 "type": event.get("type") or "Warning", "reason": str(event.get("reason") or "")[:128],
                 "message": str(event.get("message") or "")[:4096], "count": max(1, int(event.get("count") or 1)),
                 "firstTimestamp": event.get("firstTimestamp") or event.get("eventTime"),
                 "lastTimestamp": event.get("lastTimestamp") or event.get("eventTime"),
                 "source": str(source.get("component") or event.get("reportingComponent") or "")[:128]}
                for base in self.placed(ident)]

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.wake.wait()
            if self.connected is not None:
                await self.connected.wait()
            self.wake.clear()
            if loop.time() < self._unsupported_until:
                await asyncio.sleep(self._unsupported_until - loop.time())
            batch: list[tuple[str, str, dict[str, Any]]] = []
            items: list[dict[str, Any]] = []
            while self.pending and len(items) < MAX_BATCH:
                uid = next(iter(self.pending))
                ident, event = self.pending.pop(uid)
                batch.append((uid, ident, event))
                items.extend(self._items(ident, event))
            if items:
                try:
                    await self.hub.events(items[:MAX_BATCH])
                    for uid, _ident, event in batch:
                        self.sent[uid] = (event.get("count"), event.get("lastTimestamp"))
                    while len(self.sent) > MAX_SENT:
                        del self.sent[next(iter(self.sent))]
                except HubError as exc:
                    for uid, ident, event in batch:
                        self.pending.setdefault(uid, (ident, event))
                    if exc.code == 404:
                        log.info("syncer %s: the hub does not take forwarded Events (%s); asking again in %.0fs",
                                 self.target, exc.message, UNSUPPORTED_RETRY_SECONDS)
                        self._unsupported_until = loop.time() + UNSUPPORTED_RETRY_SECONDS
                    else:
                        log.warning("syncer %s: forwarding Events failed (%s), will resend: %s", self.target,
                                    exc.reason, exc.message)
            if self.pending:
                self.wake.set()
            await asyncio.sleep(self.interval)
