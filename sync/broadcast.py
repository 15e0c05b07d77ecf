"""The broadcaster: after each drain of the placement engine, one pass writes every idle stream's new changes
straight to its connection.

A stream whose syncer has everything up to the engine's current seq is *attached*: its task parks, and the
broadcaster, told which targets changed, reads each attached target's changes since the stream's seq and
writes their lines as one chunk with :class:`~sync.direct.DirectSink`. A change's line is made once per
pass for every target whose copy is not its own (:data:`SharedLineOf`: the same bytes for all of them, see
:mod:`sync.frames`); only the targets with a copy of their own (customized, divided, pinned by a rollout,
leaving, in a conflict) have theirs made one by one. Per cluster that is a list slice, a dict lookup per
change and a socket write: no task wake-up, no ASGI ``send`` chain.

Anything else wakes the stream's task, which detaches and goes on exactly as a stream without a broadcaster
would: a seq the change log no longer holds (snapshot), upsync rules to resend, the SyncTarget deleted (its
DELETEs are written, then the stream ends), a slow reader or a closing connection (the sink refuses the
write; the task sends through ASGI, waiting for the socket to drain), a ping due, an error. The
attachment's seq is only ever advanced together with a successful write, without an ``await`` between, so
the task resumes exactly after the last message the syncer was sent: never a gap, never a repeat.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from placement.model import Change
from sync.direct import DirectSink

log = logging.getLogger(__name__)

ChangesSince = Callable[[str, int], "list[Change] | None"]
LineOf = Callable[[Change, str], Awaitable[bytes | None]]


@dataclass(frozen=True, slots=True)
class SharedLine:
    """A change's line for every target but ``own`` (None: nothing to send, the object went and its DELETE
    follows); the targets in ``own`` have a copy of their own, made by :data:`LineOf`."""

    line: bytes | None
    own: frozenset[str] = frozenset()


# A change's line for all its targets at once; None when any target's may be its own (all ask LineOf).
SharedLineOf = Callable[[Change], Awaitable[SharedLine | None]]


@dataclass(eq=False)
class Attachment:
    """One parked stream: the last seq its syncer was sent and when (pings count from it)."""

    target: str
    seq: int
    sent: float
    sink: DirectSink
    woken: asyncio.Event = field(default_factory=asyncio.Event)
    detached: bool = False

    async def until_woken(self, ping_interval: float) -> bool:
        """Until the broadcaster hands the stream back (False) or a ping is due (True)."""
        loop = asyncio.get_running_loop()
        while not self.woken.is_set():
            left = ping_interval - (loop.time() - self.sent)
            if left <= 0:
                return True
            try:
                await asyncio.wait_for(self.woken.wait(), left)
            except TimeoutError:
                continue  # the broadcaster may have written meanwhile: the ping is due later then
        return False


class Broadcaster:
    def __init__(self, changes_since: ChangesSince, line_of: LineOf, shared_line_of: SharedLineOf,
                 target_gone: Callable[[str], bool]) -> None:
        self._changes_since = changes_since
        self._line_of = line_of
        self._shared_line_of = shared_line_of
        self._target_gone = target_gone
        self._attached: dict[str, list[Attachment]] = {}
        self._pending: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        # Told why a stream went back to its task: "slow_reader" (the write was refused) or "behind_log".
        self.on_handback: Callable[[str], None] = lambda reason: None
        self.frames_sent = 0  # message lines written (the hub's metrics read it)

    def attach(self, target: str, seq: int, sent: float, sink: DirectSink) -> Attachment:
        attachment = Attachment(target, seq, sent, sink)
        self._attached.setdefault(target, []).append(attachment)
        return attachment

    def detach(self, attachment: Attachment) -> None:
        attachment.detached = True
        streams = self._attached.get(attachment.target)
        if streams is not None and attachment in streams:
            streams.remove(attachment)
            if not streams:
                del self._attached[attachment.target]

    def hand_all_back(self) -> None:
        """Wake every parked stream's task (the server is stopping: each ends its stream)."""
        for streams in self._attached.values():
            for attachment in streams:
                attachment.woken.set()

    def attached(self) -> int:
        return sum(len(streams) for streams in self._attached.values())

    def targets_changed(self, changed: set[str], rules_changed: set[str]) -> None:
        """Called by the placement service after a drain: ``changed`` targets have new changes,
        ``rules_changed`` targets may have new upsync rules (their streams' tasks resend them)."""
        for target in rules_changed:
            for attachment in self._attached.get(target, ()):
                attachment.woken.set()
        small, large = (changed, self._attached) if len(changed) < len(self._attached) else (self._attached, changed)
        self._pending.update(target for target in small if target in large)
        if self._pending and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, set()
                # Per seq, the change's shared line, made when a target first needs it. Kept for this pass only:
                # each line is the change as it stood when first asked, as if all of the pass ran at that moment.
                shared: dict[int, SharedLine | None] = {}
                for target in batch:
                    for attachment in list(self._attached.get(target, ())):
                        await self._send(attachment, shared)
        finally:
            self._task = None

    async def _send(self, attachment: Attachment, shared: dict[int, SharedLine | None]) -> None:
        if attachment.woken.is_set():
            return
        seq, target = attachment.seq, attachment.target
        try:
            changes = self._changes_since(target, seq)
            if not changes:  # behind the change log, or nothing to write: the stream's task decides
                if changes is None:
                    self.on_handback("behind_log")
                attachment.woken.set()
                return
            lines = []
            for change in changes:
                if change.seq not in shared:
                    shared[change.seq] = await self._shared_line_of(change)
                common = shared[change.seq]
                if common is not None and target not in common.own:
                    line = common.line
                else:
                    line = await self._line_of(change, target)
                if line is not None:  # None: the object went meanwhile; its DELETE follows
                    lines.append(line)
        except Exception:
            log.exception("stream of sync target %s: the broadcaster could not make its changes", target)
            attachment.woken.set()
            return
        if attachment.detached or attachment.woken.is_set() or attachment.seq != seq:
            return  # its task took the stream back while the lines were made
        if lines and not attachment.sink.write(b"".join(lines)):
            self.on_handback("slow_reader")
            attachment.woken.set()  # a slow reader or a closing connection: the task sends, or ends
            return
        attachment.seq = changes[-1].seq
        attachment.sent = asyncio.get_running_loop().time()
        self.frames_sent += len(lines)
        if self._target_gone(target):
            attachment.woken.set()  # its DELETEs are written: the task ends the stream
