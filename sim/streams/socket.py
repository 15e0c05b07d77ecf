"""An accepted WebSocket as the stream sessions use it: binary messages in and out, and one session's run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected

T = TypeVar("T")
Feed = Callable[[bytes], Awaitable[None]]


class Socket:
    """Sends never raise: once the client is gone they do nothing (``closed`` tells)."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.closed = False

    async def send(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            await self.ws.send_bytes(data)
        except (WebSocketDisconnect, WebSocketDisconnected, RuntimeError, OSError):
            self.closed = True

    async def close(self, code: int = 1000) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(WebSocketDisconnect, WebSocketDisconnected, RuntimeError, OSError):
                await self.ws.close(code)

    async def _pump(self, feed: Feed) -> None:
        while True:
            try:
                message = await self.ws.receive()
            except (WebSocketDisconnect, WebSocketDisconnected, RuntimeError, OSError):
                break
            if message["type"] == "websocket.disconnect":
                break
            data = message.get("bytes")
            if data is None:
                data = (message.get("text") or "").encode()
            await feed(data)
        self.closed = True

    async def run(self, feed: Feed, work: Coroutine[Any, Any, T]) -> tuple[bool, T | None]:
        """Feed every inbound message to ``feed`` while ``work`` runs: (True, its result) when it finishes
        first, (False, None) when the client went away first (the work is cancelled)."""
        reader = asyncio.create_task(self._pump(feed), name="websocket-reader")
        worker = asyncio.create_task(work, name="stream-session")
        try:
            await asyncio.wait({reader, worker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not worker.done():
                worker.cancel()
            results = await asyncio.gather(worker, return_exceptions=True)
            if not reader.done():
                reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        outcome = results[0]
        if isinstance(outcome, BaseException):
            if isinstance(outcome, asyncio.CancelledError):
                return False, None
            raise outcome
        return True, outcome
