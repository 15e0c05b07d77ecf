"""One syncer's stream: a snapshot or the missed changes, then live changes and pings, as NDJSON chunks.

Owns the order and content of the messages of one connection (docs/sync-protocol.md): when a snapshot
is due, what each change carries, when to ping and when the stream ends (its SyncTarget is gone). It
reads the engine only from the event loop, each decision without an intervening ``await``, so a desired
set and its seq always belong together. Never writes anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from inventory.clusters import Inventory
from placement.model import Change, DesiredEntry
from placement.service import PlacementService
from sync import messages
from sync.broadcast import Broadcaster
from sync.direct import DirectSink
from sync.frames import SharedLines
from sync.messages import EntryTypes

# Lines are gathered into chunks of about this size; a chunk is also sent whenever the stream would wait.
CHUNK_BYTES = 64 * 1024
_FLUSH = b""  # an empty line: send what was gathered


class StreamSource:
    def __init__(self, service: PlacementService, inventory: Inventory, types: EntryTypes, epoch: str,
                 ping_interval: float) -> None:
        self.service = service
        self.inventory = inventory
        self.types = types
        self.epoch = epoch
        self.ping_interval = ping_interval
        self.shared = SharedLines()
        self.broadcaster = Broadcaster(lambda target, seq: service.engine.changes_since(target, seq), self._change,
                                       lambda target: inventory.sync_target(target) is None)
        service.target_listeners.append(self.broadcaster.targets_changed)
        self.closing = False
        self.open = 0  # streams being served now

    def close(self) -> None:
        """The server is stopping: every stream ends after what it has sent (its syncer reconnects, to another
        hub process or to this one restarted, and resumes from its seq)."""
        self.closing = True
        self.broadcaster.hand_all_back()
        self.service.wake_streams()

    async def stream(self, target: str, since: int, epoch: str | None,
                     sink: DirectSink | None = None) -> AsyncIterator[bytes]:
        """The response body for ``GET …/targets/{target}/stream?since=…&epoch=…``, chunk by chunk; while the
        syncer is up to date, the broadcaster writes its changes to ``sink`` (when there is one)."""
        buffer = bytearray()
        self.open += 1
        try:
            async for line in self._lines(target, since, epoch, sink):
                if buffer and (not line or len(buffer) + len(line) > CHUNK_BYTES):
                    yield bytes(buffer)
                    buffer.clear()
                buffer += line
        finally:
            self.open -= 1

    async def _lines(self, target: str, since: int, epoch: str | None,
                     sink: DirectSink | None) -> AsyncIterator[bytes]:
        """Message lines; ``_FLUSH`` wherever what was produced must reach the syncer before going on."""
        engine = self.service.engine
        loop = asyncio.get_running_loop()
        seq = since if epoch in (None, self.epoch) else 0
        first = True
        sent = loop.time()
        rules_sent: list[dict[str, Any]] | None = None
        while not self.closing:
            waiter = self.service.target_changed(target)
            changes = engine.changes_since(target, seq) if seq > 0 else None
            if changes is None:
                # Read together, with no await in between: the set is exactly the one at seq.
                entries, seq = engine.desired(target), engine.current_seq(target)
                yield messages.reset(seq)
                for entry in entries:
                    line = await self._upsert(seq, entry, target)
                    if line is not None:
                        yield line
                yield messages.synced(seq, self.epoch, self.ping_interval)
                rules_sent = engine.upsync_rules(target)
                yield messages.upsync_rules(seq, rules_sent)  # after every SYNCED: the rules as of now
            elif changes or first:
                for change in changes:
                    line = await self._change(change, target)
                    if line is not None:
                        yield line
                    seq = change.seq
                if first:
                    yield messages.synced(seq, self.epoch, self.ping_interval)
                    rules_sent = engine.upsync_rules(target)
                    yield messages.upsync_rules(seq, rules_sent)
            elif self.inventory.sync_target(target) is None:
                yield _FLUSH
                return  # the SyncTarget was deleted; its DELETEs have been sent
            elif (rules := engine.upsync_rules(target)) != rules_sent:
                rules_sent = rules
                yield messages.upsync_rules(seq, rules)
            else:
                seq, sent, ping_due = await self._idle(target, seq, sent, sink, waiter)
                if ping_due:
                    yield messages.ping(seq)
                    yield _FLUSH
                    sent = loop.time()
                continue
            first = False
            yield _FLUSH
            sent = loop.time()
        yield _FLUSH

    async def _idle(self, target: str, seq: int, sent: float, sink: DirectSink | None,
                    waiter: asyncio.Event) -> tuple[int, float, bool]:
        """Wait, everything sent so far, for more to send: ``(seq, sent, ping due)`` after it. With a sink the
        broadcaster writes the changes meanwhile (advancing seq and sent); without, the next change wakes us."""
        if sink is not None:
            attachment = self.broadcaster.attach(target, seq, sent, sink)
            try:
                ping_due = await attachment.until_woken(self.ping_interval)
            finally:
                self.broadcaster.detach(attachment)
            return attachment.seq, attachment.sent, ping_due
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(waiter.wait(), max(0.0, self.ping_interval - (loop.time() - sent)))
        except TimeoutError:
            return seq, sent, True
        return seq, sent, False

    async def _upsert(self, seq: int, entry: DesiredEntry, target: str) -> bytes | None:
        """The UPSERT of ``target``'s copy; a HOLD when that copy cannot be made (the cluster keeps what it
        has); None when the object was deleted meanwhile (its DELETE follows)."""
        if entry.kind == "namespace" and entry.implicit:
            return messages.upsert(seq, self.types.entry_json(entry), messages.implicit_namespace(entry.ref.name),
                                   None)
        outcome = await self.service.content_for(entry.ref, target)
        if outcome is None:
            return None
        if outcome.obj is None:
            return messages.hold(seq, self.types.entry_json(entry), outcome.error or "")
        obj, revision = outcome.obj, outcome.revision
        return self.shared.line(seq, entry, obj, revision,
                                lambda: messages.upsert(seq, self.types.entry_json(entry), obj, revision))

    async def _change(self, change: Change, target: str) -> bytes | None:
        if change.op == "delete":
            return self.shared.deletion(change.seq, change.entry,
                                        lambda: messages.delete(change.seq, self.types.entry_json(change.entry)))
        return await self._upsert(change.seq, change.entry, target)
