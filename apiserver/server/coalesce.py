"""One write to the connection per event-loop step: a response's head and body leave as one TLS record.

uvicorn writes a response's status line and headers when the app starts the response and its body when the
app sends it, two ``transport.write`` calls a few microseconds apart. Over TLS each is its own record, its own
encryption call and its own ``send`` system call; profiled under ``wrk`` at 100 clients creating ConfigMaps,
the two took about 11 % of the event loop's samples. Writes made during one step of the event loop are joined
and handed to the transport once, at the start of the next step: what the peer receives, byte for byte, is
unchanged, and nothing waits longer than the step that is already under way. A writer that already joins
its own writes (the sync broadcaster: one chunk per stream and pass) writes through with :meth:`write_now`,
without the buffer and the scheduled flush.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CoalescingTransport:
    """A transport whose writes within one event-loop step reach the wrapped transport as one write.

    Everything else is the wrapped transport's own; closing or handing the connection to another protocol
    first sends what is pending, aborting drops it (as the wrapped transport's abort drops its buffer).
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def write_now(self, data: bytes) -> None:
        """Hand ``data`` to the connection at once, after whatever is pending."""
        if self._pending:
            self.flush()
        self._transport.write(data)

    def flush(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        size = self._transport.get_write_buffer_size()
        return size + sum(map(len, self._pending)) if self._pending else size

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.flush()
        self._transport.set_protocol(protocol)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, writing through a :class:`CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]
