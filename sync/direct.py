"""Writing a stream's chunks straight to its connection, bypassing the ASGI ``send`` chain.

A live stream's messages go out as HTTP/1.1 chunks of a response already started. Through ASGI, each
chunk costs a task wake-up, Starlette's ``StreamingResponse``, every middleware's ``send`` wrapper and
uvicorn's ``send``: at 1,000 clusters, most of the hub's CPU per change. The broadcaster
(:mod:`sync.broadcast`) instead frames the chunk itself and hands it to the connection's transport,
exactly as uvicorn's httptools protocol would (``<hex length>\\r\\n<data>\\r\\n``).

This relies on uvicorn's httptools protocol (its per-request ``RequestResponseCycle``, whose bound
``send`` the server hands the application). Where the server is another one, or the response is not
chunked, :meth:`DirectSink.of` gives None and the stream's own task sends everything through ASGI as
before. A write is refused, and the stream's task takes over (and waits for the socket to drain), when
the connection is closing, the reader is slow (the transport's buffer is past :data:`HIGH_WATER` or
uvicorn paused writing), or the response is not in its body. The hub's connections join the writes of one
event-loop step (:mod:`apiserver.server.coalesce`); a chunk is already the pass's one write to its connection,
so it goes through at once (``write_now``), without a buffer and a scheduled flush per stream.
"""

from __future__ import annotations

from typing import Any

HIGH_WATER = 256 * 1024  # bytes queued on a connection beyond which its reader counts as slow
SERVER_SEND = "spacehub.server_send"  # scope key: the ``send`` the server gave the application
_UVICORN_HTTPTOOLS = "uvicorn.protocols.http.httptools_impl"
_CYCLE_ATTRIBUTES = ("transport", "flow", "chunked_encoding", "response_started", "response_complete",
                     "disconnected")


class DirectSink:
    def __init__(self, cycle: Any) -> None:
        self._cycle = cycle
        transport = cycle.transport
        self._write_now = getattr(transport, "write_now", transport.write)

    @classmethod
    def of(cls, server_send: Any) -> DirectSink | None:
        """A sink for the response ``server_send`` belongs to; None where the server is not uvicorn's
        httptools protocol."""
        cycle = getattr(server_send, "__self__", None)
        if cycle is None or type(cycle).__module__ != _UVICORN_HTTPTOOLS:
            return None
        if not all(hasattr(cycle, name) for name in _CYCLE_ATTRIBUTES):
            return None
        return cls(cycle)

    def write(self, data: bytes) -> bool:
        """Send ``data`` as one chunk now; False (nothing written) when it must go the slow way."""
        cycle = self._cycle
        transport = cycle.transport
        if (cycle.disconnected or cycle.response_complete or not cycle.response_started
                or cycle.chunked_encoding is not True or cycle.flow.write_paused or transport.is_closing()
                or transport.get_write_buffer_size() > HIGH_WATER):
            return False
        self._write_now(b"%x\r\n%b\r\n" % (len(data), data))
        return True
