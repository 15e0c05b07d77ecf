"""One stream of a tunnel: a request and its response, or a relayed WebSocket, with its flow control.

A :class:`Stream` keeps what arrived for it until its consumer takes it, and grants the peer credit for
what was taken (WINDOW frames, once half a window); it sends DATA only within the credit the peer granted
(frames.py explains the numbers). It reaches its connection only through :class:`Link`, which
``mux.Session`` is.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

from apimachinery.errors import StatusError
from kubeclient.tunnel.frames import (
    GRANT_AT,
    MAX_CHUNK,
    MAX_MESSAGE,
    MORE,
    TEXT,
    WINDOW,
    Frame,
    Kind,
    encode,
    encode_end,
    encode_json,
    encode_window,
    end_of,
)


class Link(Protocol):
    """What a stream needs of its connection."""

    bytes_sent: int

    def emit(self, frame: bytes) -> None:
        """Queue a frame for the connection's writer."""

    def forget(self, stream: Stream) -> None:
        """The stream is over: frames for its id are ignored from now on."""


@dataclass(frozen=True)
class Message:
    """One WebSocket message of an upgraded stream."""

    data: bytes
    text: bool = False  # a text message: ``data`` is its UTF-8


@dataclass(frozen=True)
class Closed:
    """The peer closed an upgraded stream's WebSocket with this code."""

    code: int
    reason: str = ""

    @property
    def sendable_code(self) -> int:
        """The code to close the next WebSocket along with: those that only describe a closing (1005 none
        given, 1006 abnormal, 1015 TLS) or that are reserved may not be sent in a close frame."""
        return self.code if 3000 <= self.code < 5000 or self.code in _SENDABLE else 1000


_SENDABLE = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014})


class StreamReset(Exception):
    """The stream was reset (by either side) or its tunnel ended; ``status`` is a kube Status saying why."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(str(status.get("message") or "stream reset"))
        self.status = status


def failure(code: int, reason: str, message: str) -> dict[str, Any]:
    return StatusError(code, reason, message).to_status()


class Stream:
    """One request over the tunnel, seen from either end."""

    def __init__(self, session: Link, stream_id: int, request: dict[str, Any]) -> None:
        self.session = session
        self.id = stream_id
        self.request = request  # the OPEN's payload
        self.buffered = 0  # DATA bytes received that the consumer has not taken
        self._inbox: deque[Frame] = deque()
        self._arrived = asyncio.Event()
        self._allowance = WINDOW  # DATA bytes the peer may still send
        self._taken = 0  # taken by the consumer, not yet granted back
        self._credit = WINDOW  # DATA bytes this side may still send
        self._credited = asyncio.Event()
        self.sent_end = False
        self.got_end = False
        self.failure: dict[str, Any] | None = None  # a RESET's Status, or why the tunnel ended

    @property
    def credit(self) -> int:
        """DATA bytes this side may send before the peer grants more."""
        return self._credit

    @property
    def done(self) -> bool:
        return self.failure is not None or (self.sent_end and self.got_end)

    # --- receiving --------------------------------------------------------------------------------

    async def next(self) -> Frame:
        """The next RESPONSE, DATA or END; :class:`StreamReset` once what arrived before a reset is taken."""
        while not self._inbox:
            if self.failure is not None:
                raise StreamReset(self.failure)
            self._arrived.clear()
            await self._arrived.wait()
        frame = self._inbox.popleft()
        if frame.kind == Kind.DATA and frame.payload:
            self._take(len(frame.payload))
        return frame

    async def response(self, timeout: float) -> dict[str, Any]:
        """The RESPONSE's payload; TimeoutError after ``timeout`` seconds, :class:`StreamReset` if refused."""
        async with asyncio.timeout(timeout):
            frame = await self.next()
        if frame.kind != Kind.RESPONSE:
            raise StreamReset(failure(502, "BadGateway", f"the syncer answered with {Kind(frame.kind).name}, "
                                                         "not RESPONSE"))
        return frame.json()

    async def receive_message(self) -> Message | Closed:
        """An upgraded stream's next whole message, or how the peer closed it."""
        parts: list[bytes] = []
        size = 0
        while True:
            frame = await self.next()
            if frame.kind == Kind.END:
                code, reason = end_of(frame)
                return Closed(code if code is not None else 1005, reason)
            if frame.kind != Kind.DATA:
                continue
            parts.append(frame.payload)
            size += len(frame.payload)
            if size > MAX_MESSAGE:
                self.reset(failure(413, "RequestEntityTooLarge", f"a WebSocket message over {MAX_MESSAGE} bytes"))
                raise StreamReset(self.failure or {})
            if not frame.flags & MORE:
                return Message(b"".join(parts), bool(frame.flags & TEXT))

    def _take(self, size: int) -> None:
        self.buffered -= size
        self._taken += size
        if self._taken >= GRANT_AT and not self.done:
            self.session.emit(encode_window(self.id, self._taken))
            self._allowance += self._taken
            self._taken = 0

    # --- sending ----------------------------------------------------------------------------------

    async def send(self, payload: bytes, flags: int = 0) -> None:
        """One DATA frame of at most ``MAX_CHUNK`` bytes, once the receiver has room for it."""
        while self._credit < len(payload) and self.failure is None:
            self._credited.clear()
            await self._credited.wait()
        if self.failure is not None:
            raise StreamReset(self.failure)
        if self.sent_end:
            raise StreamReset(failure(500, "InternalError", "DATA after END"))
        self._credit -= len(payload)
        self.session.bytes_sent += len(payload)
        self.session.emit(encode(Kind.DATA, self.id, payload, flags))

    async def send_body(self, data: bytes) -> None:
        for start in range(0, len(data), MAX_CHUNK):
            await self.send(data[start:start + MAX_CHUNK])

    async def send_message(self, data: bytes, text: bool = False) -> None:
        """One WebSocket message, in pieces of ``MAX_CHUNK`` (all but the last flagged MORE)."""
        kind = TEXT if text else 0
        start = 0
        while True:
            piece = data[start:start + MAX_CHUNK]
            start += len(piece)
            last = start >= len(data)
            await self.send(piece, kind | (0 if last else MORE))
            if last:
                return

    def respond(self, head: dict[str, Any]) -> None:
        self.session.emit(encode_json(Kind.RESPONSE, self.id, head))

    def end(self, code: int | None = None, reason: str = "") -> None:
        """Nothing more from this side (an upgraded stream: close its WebSocket with ``code``)."""
        if self.sent_end or self.failure is not None:
            return
        self.sent_end = True
        self.session.emit(encode_end(self.id, code, reason))
        self._settle()

    def reset(self, status: dict[str, Any] | None = None) -> None:
        """Abandon the stream; the peer gets ``status`` (or none: the hub's consumer went away)."""
        if self.done:
            return
        self.session.emit(encode_json(Kind.RESET, self.id, status) if status else encode(Kind.RESET, self.id))
        self.fail(status or failure(499, "Cancelled", "the stream was cancelled"))

    # --- from the session's reader ----------------------------------------------------------------

    def deliver(self, frame: Frame) -> None:
        """A RESPONSE, DATA or END arrived: queue it for the consumer (DATA only within the window)."""
        if frame.kind == Kind.DATA:
            size = len(frame.payload)
            if size > MAX_CHUNK or size > self._allowance:
                self.reset(failure(500, "InternalError", "the peer sent more than the stream's window"))
                return
            self._allowance -= size
            self.buffered += size
        elif frame.kind == Kind.END:
            self.got_end = True
        self._inbox.append(frame)
        self._arrived.set()
        self._settle()

    def grant(self, increment: int) -> None:
        """A WINDOW arrived: the peer took ``increment`` more bytes."""
        self._credit += increment
        self._credited.set()

    def fail(self, status: dict[str, Any]) -> None:
        """The stream is over without an ending: reset (by either side), or its tunnel ended."""
        if self.failure is None:
            self.failure = status
        self._arrived.set()
        self._credited.set()
        self.session.forget(self)

    def _settle(self) -> None:
        if self.sent_end and self.got_end:
            self.session.forget(self)
