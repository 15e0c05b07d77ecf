"""One syncer's stream: a snapshot or the missed changes, then live changes and pings, as NDJSON chunks.

Owns the order and content of the messages of one connection (docs/sync-protocol.md): when a snapshot
is due, what each change carries, when to ping and when the stream ends (its SyncTarget is gone). It
reads the engine only from the event loop, each decision without an intervening ``await``, so a desired
set and its seq always belong together. Never writes anything.

Also keeps what the hub's metrics show of the streams, read when scraped: each open stream's position
(the seq its syncer was last sent), the message lines sent, and when the drains published which seqs, so
that a stream's lag is known in seqs and in seconds without any work per change beyond a counter.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from time import monotonic
from typing import Any

from inventory.clusters import Inventory
from placement.model import Change, DesiredEntry
from placement.service import PlacementService
from placement.shaping import Outcome
from sync import messages
from sync.broadcast import Attachment, Broadcaster, SharedLine
from sync.direct import DirectSink
from sync.frames import SharedLines
from sync.messages import EntryTypes

# Lines are gathered into chunks of about this size; a chunk is also sent whenever the stream would wait.
CHUNK_BYTES = 64 * 1024
_FLUSH = b""  # an empty line: send what was gathered
# Drains remembered for the lag in seconds: a stream further behind than the oldest shows at least its age.
PUBLISHED_DRAINS = 4096


@dataclass(eq=False)
class StreamPosition:
    """One open stream: its target, the seq of the last message its syncer was sent (the attachment's while
    the broadcaster writes for it) and when it opened (``time.monotonic``)."""

    target: str
    seq: int
    opened: float
    attachment: Attachment | None = None

    @property
    def sent(self) -> int:
        return self.attachment.seq if self.attachment is not None else self.seq


@dataclass(frozen=True)
class Lag:
    """How far a target's stream trails its desired set: the changes it has yet to send (the whole desired set
    when it must start over from a snapshot), and the seconds since the first of them was published to the
    streams (at most since the stream opened)."""

    changes: int
    seconds: float


UP_TO_DATE = Lag(0, 0.0)


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
                                       self._shared_change, lambda target: inventory.sync_target(target) is None)
        service.target_listeners.append(self.broadcaster.targets_changed)
        service.target_listeners.append(self._published)
        self.closing = False
        self.open = 0  # streams being served now
        self.positions: set[StreamPosition] = set()
        self.frames_sent = 0  # message lines the streams' tasks sent (the broadcaster counts its own)
        # (newest seq, monotonic time) after each drain that changed desired sets: when each seq reached the streams.
        self._drains: deque[tuple[int, float]] = deque(maxlen=PUBLISHED_DRAINS)

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
        lines = 0
        position = StreamPosition(target, since if epoch in (None, self.epoch) else 0, monotonic())
        self.open += 1
        self.positions.add(position)
        try:
            async for line in self._lines(position, sink):
                if buffer and (not line or len(buffer) + len(line) > CHUNK_BYTES):
                    yield bytes(buffer)
                    buffer.clear()
                    self.frames_sent += lines
                    lines = 0
                if line:
                    buffer += line
                    lines += 1
        finally:
            self.open -= 1
            self.positions.discard(position)

    async def _lines(self, position: StreamPosition, sink: DirectSink | None) -> AsyncIterator[bytes]:
        """Message lines; ``_FLUSH`` wherever what was produced must reach the syncer before going on."""
        engine = self.service.engine
        loop = asyncio.get_running_loop()
        target, seq = position.target, position.seq
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
                rules_sent = self._upsync_rules(target)
                yield messages.upsync_rules(seq, rules_sent)  # after every SYNCED: the rules as of now
            elif changes or first:
                for change in changes:
                    line = await self._change(change, target)
                    if line is not None:
                        yield line
                    seq = change.seq
                if first:
                    yield messages.synced(seq, self.epoch, self.ping_interval)
                    rules_sent = self._upsync_rules(target)
                    yield messages.upsync_rules(seq, rules_sent)
            elif self.inventory.sync_target(target) is None:
                yield _FLUSH
                return  # the SyncTarget was deleted; its DELETEs have been sent
            elif (rules := self._upsync_rules(target)) != rules_sent:
                rules_sent = rules
                yield messages.upsync_rules(seq, rules)
            else:
                seq, sent, ping_due = await self._idle(position, seq, sent, sink, waiter)
                if ping_due:
                    yield messages.ping(seq)
                    yield _FLUSH
                    sent = loop.time()
                continue
            first = False
            yield _FLUSH
            sent = loop.time()
            position.seq = seq  # sent: the flush returns once the chunk is written
        yield _FLUSH

    async def _idle(self, position: StreamPosition, seq: int, sent: float, sink: DirectSink | None,
                    waiter: asyncio.Event) -> tuple[int, float, bool]:
        """Wait, everything sent so far, for more to send: ``(seq, sent, ping due)`` after it. With a sink the
        broadcaster writes the changes meanwhile (advancing seq and sent); without, the next change wakes us."""
        if sink is not None:
            attachment = position.attachment = self.broadcaster.attach(position.target, seq, sent, sink)
            try:
                ping_due = await attachment.until_woken(self.ping_interval)
            finally:
                self.broadcaster.detach(attachment)
                position.attachment, position.seq = None, attachment.seq
            return attachment.seq, attachment.sent, ping_due
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(waiter.wait(), max(0.0, self.ping_interval - (loop.time() - sent)))
        except TimeoutError:
            return seq, sent, True
        return seq, sent, False

    def _published(self, changed: set[str], _rules_changed: set[str]) -> None:
        """After a drain: every seq up to the engine's newest has now reached the streams (or their tasks)."""
        if changed:
            self._drains.append((self.service.engine.last_seq(), monotonic()))

    def lag(self) -> dict[str, Lag]:
        """Per target with an open stream, the lag of its most advanced stream (the one that serves it; another
        may be a connection its syncer has left). Read when the metrics are scraped: a seq compared per stream;
        for those behind, their changes counted and the drains searched.

        Changes are counted rather than seqs subtracted: seqs come from one counter for all targets, so their
        difference grows with every other cluster's changes too."""
        engine = self.service.engine
        now = monotonic()
        out: dict[str, Lag] = {}
        for position in self.positions:
            target, seq = position.target, position.sent
            lag = UP_TO_DATE
            if seq != engine.current_seq(target):
                changes = engine.changes_since(target, seq)
                if changes is None:  # it starts over from a snapshot: its whole desired set, there all along
                    behind, since = len(engine.desired(target)), position.opened
                else:
                    # Empty (up to date) when the log moved on only with changes not for this cluster (objects
                    # naming their own target clusters). Their time: the first drain after seq (none yet: now).
                    behind, since = len(changes), now
                    published = bisect_right(self._drains, seq, key=lambda drain: drain[0])
                    if published < len(self._drains):
                        since = self._drains[published][1]
                if behind:
                    lag = Lag(behind, now - max(since, position.opened))
            known = out.get(target)
            if known is None or (lag.changes, lag.seconds) < (known.changes, known.seconds):
                out[target] = lag
        return out

    async def _upsert(self, seq: int, entry: DesiredEntry, target: str) -> bytes | None:
        """The UPSERT of ``target``'s copy; a HOLD when that copy cannot be made (the cluster keeps what it
        has); None when the object was deleted meanwhile (its DELETE follows)."""
        line = self._upsert_of_any_copy(seq, entry)
        if line is not None:
            return line
        return self._upsert_line(seq, entry, await self.service.content_for(entry.ref, target))

    def _upsert_of_any_copy(self, seq: int, entry: DesiredEntry) -> bytes | None:
        """The line every cluster gets whatever its copy: a HOLD when the namespace mapping cannot name the
        namespace in the clusters, an implicit Namespace's UPSERT; None for any other entry."""
        ref, mapping = entry.ref, self.service.namespaces
        problem = mapping.problem(ref.space, ref.name if entry.kind == "namespace" else ref.namespace)
        if problem is not None:
            return messages.hold(seq, self._entry_json(entry), f"namespace mapping: {problem}")
        if entry.kind == "namespace" and entry.implicit:
            return messages.upsert(seq, self._entry_json(entry),
                                   mapping.object(ref.space, messages.implicit_namespace(ref.name)), None)
        return None

    def _upsert_line(self, seq: int, entry: DesiredEntry, outcome: Outcome | None) -> bytes | None:
        """The line of a copy's outcome: its UPSERT, a HOLD when it cannot be made, None when the object went."""
        if outcome is None:
            return None
        if outcome.obj is None:
            return messages.hold(seq, self._entry_json(entry), outcome.error or "")
        obj, revision, space = outcome.obj, outcome.revision, entry.ref.space
        # Mapping depends on the space and namespace alone, not the cluster: the line stays shared by the streams.
        return self.shared.line(seq, entry, obj, revision, lambda: messages.upsert(
            seq, self._entry_json(entry), self.service.namespaces.object(space, obj), revision))

    def _upsync_rules(self, target: str) -> list[dict[str, Any]]:
        """The target's upsync rules naming cluster namespaces (namespaceMapping)."""
        engine, mapping = self.service.engine, self.service.namespaces
        return [mapping.upsync_rule(rule, engine.space_namespaces(rule["space"])) if mapping.maps(rule["space"])
                else rule for rule in engine.upsync_rules(target)]

    def _entry_json(self, entry: DesiredEntry) -> dict[str, Any]:
        """The entry as the cluster gets it: naming the cluster object (its namespace mapped)."""
        return self.service.namespaces.entry(self.types.entry_json(entry))

    async def _change(self, change: Change, target: str) -> bytes | None:
        if change.op == "delete":
            return self._deletion(change)
        return await self._upsert(change.seq, change.entry, target)

    async def _shared_change(self, change: Change) -> SharedLine | None:
        """``change``'s line for all its targets at once (the broadcaster asks once per change and pass): the
        line of every target whose copy is not its own, and the targets whose copy is; None when any target's
        copy may be its own (each is asked with :meth:`_change`)."""
        if change.op == "delete":
            return SharedLine(self._deletion(change))
        line = self._upsert_of_any_copy(change.seq, change.entry)
        if line is not None:
            return SharedLine(line)
        shared = await self.service.shared_copy(change.entry.ref)
        if shared is None:
            return None
        outcome, own = shared
        return SharedLine(self._upsert_line(change.seq, change.entry, outcome), own)

    def _deletion(self, change: Change) -> bytes:
        return self.shared.deletion(change.seq, change.entry,
                                    lambda: messages.delete(change.seq, self._entry_json(change.entry)))
