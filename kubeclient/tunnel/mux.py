"""One tunnel connection: many concurrent streams over one WebSocket, each flow-controlled, with keepalive.

Both ends run a :class:`Session` over their own WebSocket library, adapted to :class:`Transport`. Three rules
keep one stream from hurting the others or the process:

* the reader never waits for anything but the connection: frames go out through one writer task (in the
  order they were made, so streams take turns), and what arrives is queued on its stream;
* a stream's sender may have at most ``WINDOW`` bytes of DATA that the receiving consumer has not taken yet
  (credit, returned by WINDOW frames as the consumer takes data; ``stream.Stream``), so a consumer that
  stops reading holds at most a window of its own stream, and its sender stops reading its source (a
  followed log, a port-forward) instead of buffering;
* the syncer's side, when it has sent nothing for ``ping_interval`` seconds, sends a PING (answered by a
  PONG), and a side that hears nothing for ``SILENT_PINGS`` intervals takes the connection for dead, so proxies
  see traffic both ways and both ends notice a vanished peer. The hub's side only answers (``pings=False``):
  with both sides pinging, an idle tunnel carried four frames per interval instead of two, and a hub holds
  thousands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from kubeclient.tunnel.frames import Frame, FrameError, Kind, decode, encode, encode_json, window_of
from kubeclient.tunnel.stream import Stream, StreamReset, failure

log = logging.getLogger(__name__)
SILENT_PINGS = 3  # intervals without a frame before the peer counts as gone
# Concurrent streams a side accepts; more OPENs are refused with 429. With a window each, this bounds what one
# tunnel can make a side hold for consumers that stop reading: 128 MiB.
MAX_STREAMS = 128
CLOSE_SECONDS = 2.0  # for the WebSocket closing handshake when a session ends


class Transport(Protocol):
    """One WebSocket, as either end's library offers it: binary messages in and out."""

    async def send(self, data: bytes) -> None: ...

    async def receive(self) -> bytes | None:
        """The next binary message; None once the connection has ended."""

    async def close(self, code: int, reason: str) -> None: ...


Handler = Callable[[Stream], Awaitable[None]]


class Session:
    """One tunnel connection. The hub opens streams (:meth:`open`); the syncer serves them (``on_open``)."""

    def __init__(self, transport: Transport, *, ping_interval: float, on_open: Handler | None = None,
                 name: str = "tunnel", pings: bool = True) -> None:
        self.transport = transport
        self.ping_interval = ping_interval
        self.pings = pings
        self.on_open = on_open
        self.name = name
        self.streams: dict[int, Stream] = {}
        self.opened = 0  # streams ever opened
        self.bytes_sent = 0  # DATA payload bytes, each way
        self.bytes_received = 0
        self.hello: dict[str, Any] | None = None
        self.ended = False
        self._outbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._handlers: dict[int, asyncio.Task[None]] = {}
        self._next_id = 1
        self._stop = asyncio.Event()
        self._close: tuple[int, str] = (1000, "")
        self._said = asyncio.get_running_loop().time()

    @property
    def buffered(self) -> int:
        """DATA bytes received on open streams that their consumers have not taken."""
        return sum(stream.buffered for stream in self.streams.values())

    def emit(self, frame: bytes) -> None:
        """Queue a frame for the writer (never waits: the reader calls this too)."""
        if not self.ended:
            self._outbox.put_nowait(frame)

    def say_hello(self, hello: dict[str, Any]) -> None:
        self.emit(encode_json(Kind.HELLO, 0, hello))

    def open(self, request: dict[str, Any]) -> Stream:
        """A new stream asking for ``request`` (the OPEN payload); unchecked here, the caller applies the rules."""
        if self.ended:
            raise StreamReset(failure(503, "ServiceUnavailable", f"{self.name} has ended"))
        stream = Stream(self, self._next_id, request)
        self._next_id += 1
        self.streams[stream.id] = stream
        self.opened += 1
        self.emit(encode_json(Kind.OPEN, stream.id, request))
        return stream

    def forget(self, stream: Stream) -> None:
        if self.streams.get(stream.id) is stream:
            del self.streams[stream.id]

    def close(self, code: int = 1000, reason: str = "") -> None:
        """End the session: :meth:`run` returns after closing the WebSocket with ``code``."""
        self._close = (code, reason)
        self._stop.set()

    async def run(self) -> str:
        """Serve the connection until it ends, is closed or falls silent; say why. Every stream still open
        then fails with 503."""
        tasks = [asyncio.create_task(self._read(), name=f"{self.name} reader"),
                 asyncio.create_task(self._write(), name=f"{self.name} writer"),
                 asyncio.create_task(self._stop.wait(), name=f"{self.name} stop")]
        if self.pings:
            tasks.append(asyncio.create_task(self._keepalive(), name=f"{self.name} keepalive"))
        why = "closed"
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task.exception() is not None:
                    why = f"failed: {task.exception()!r}"
                elif isinstance(task.result(), str):
                    why = task.result()
                else:
                    why = "closed by this side" + (f": {self._close[1]}" if self._close[1] else "")
        finally:
            self.ended = True
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._fail_all(why)
            await asyncio.gather(*list(self._handlers.values()), return_exceptions=True)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_SECONDS):
                    await self.transport.close(*self._close)
        return why

    def _fail_all(self, why: str) -> None:
        status = failure(503, "ServiceUnavailable", f"{self.name} ended: {why}")
        for stream in list(self.streams.values()):
            stream.fail(status)
        for task in self._handlers.values():
            task.cancel()

    async def _read(self) -> str:
        while True:
            silence = self.ping_interval * SILENT_PINGS
            try:
                async with asyncio.timeout(silence):
                    data = await self.transport.receive()
            except TimeoutError:
                return f"nothing heard for {silence:g}s"
            if data is None:
                return "the connection ended"
            try:
                self._dispatch(decode(data))
            except FrameError as exc:
                self._close = (1002, "protocol error")
                return f"protocol error: {exc}"

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            frame = await self._outbox.get()
            await self.transport.send(frame)
            self._said = loop.time()

    async def _keepalive(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = self._said + self.ping_interval - loop.time()
            if due <= 0:
                self.emit(encode(Kind.PING, 0))
                due = self.ping_interval
            await asyncio.sleep(due)

    def _dispatch(self, frame: Frame) -> None:
        kind = frame.kind
        if kind == Kind.PING:
            self.emit(encode(Kind.PONG, 0))
        elif kind == Kind.HELLO:
            self.hello = frame.json()
            interval = self.hello.get("pingInterval")
            if isinstance(interval, int | float) and interval > 0:
                self.ping_interval = float(interval)
        elif kind == Kind.OPEN:
            self._accept(frame)
        elif (stream := self.streams.get(frame.stream)) is None:
            return  # a stream already over here (a late WINDOW, DATA after a RESET): nothing to do
        elif kind == Kind.WINDOW:
            stream.grant(window_of(frame))
        elif kind == Kind.RESET:
            stream.fail(frame.json() or failure(499, "Cancelled", "the peer cancelled the stream"))
            handler = self._handlers.get(stream.id)
            if handler is not None:
                handler.cancel()
        elif kind in (Kind.RESPONSE, Kind.DATA, Kind.END):
            if kind == Kind.DATA:
                self.bytes_received += len(frame.payload)
            stream.deliver(frame)
        # PONG, and frame types a newer peer may use, need nothing: hearing them is what counts

    def _accept(self, frame: Frame) -> None:
        if self.on_open is None or frame.stream in self.streams:
            self.emit(encode_json(Kind.RESET, frame.stream, failure(400, "BadRequest", "unexpected OPEN")))
            return
        if len(self.streams) >= MAX_STREAMS:
            self.emit(encode_json(Kind.RESET, frame.stream, failure(
                429, "TooManyRequests", f"{MAX_STREAMS} streams are open through this tunnel already")))
            return
        stream = Stream(self, frame.stream, frame.json())
        self.streams[stream.id] = stream
        self.opened += 1
        task = asyncio.create_task(self._serve(stream, self.on_open), name=f"{self.name} stream {stream.id}")
        self._handlers[stream.id] = task

    async def _serve(self, stream: Stream, handler: Handler) -> None:
        try:
            await handler(stream)
            if not stream.done:
                stream.reset(failure(500, "InternalError", "the stream's handler ended before the stream"))
        except StreamReset:
            pass
        except Exception as exc:  # a bug in a handler must not take the tunnel down
            log.exception("%s: stream %d failed", self.name, stream.id)
            stream.reset(failure(500, "InternalError", f"the syncer failed to relay the request: {exc!r}"))
        finally:
            self._handlers.pop(stream.id, None)
