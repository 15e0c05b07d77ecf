"""Writes to a connection during one event-loop step leave as one write (a response's head and body)."""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.server.coalesce import CoalescingTransport


class RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[Any] = []
        self.closing = False

    def write(self, data: Any) -> None:
        self.events.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True
        self.events.append("close")

    def abort(self) -> None:
        self.closing = True
        self.events.append("abort")

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1)}.get(name, default)


def test_writes_of_one_step_reach_the_transport_as_one_write_at_the_next() -> None:
    async def run() -> list[Any]:
        inner = RecordingTransport()
        t = CoalescingTransport(inner, asyncio.get_running_loop())
        t.write(b"HTTP/1.1 201 Created\r\n\r\n")
        t.write(memoryview(b'{"kind":"ConfigMap"}'))
        t.write(b"")
        assert inner.events == [] and t.get_write_buffer_size() == 44
        await asyncio.sleep(0)
        t.write(b"next")
        await asyncio.sleep(0)
        return inner.events

    assert asyncio.run(run()) == [b'HTTP/1.1 201 Created\r\n\r\n{"kind":"ConfigMap"}', b"next"]


def test_close_sends_what_is_pending_first_and_abort_drops_it() -> None:
    async def run() -> tuple[list[Any], list[Any]]:
        loop = asyncio.get_running_loop()
        closed, aborted = RecordingTransport(), RecordingTransport()
        for inner in (closed, aborted):
            t = CoalescingTransport(inner, loop)
            t.write(b"a")
            t.write(b"b")
            t.close() if inner is closed else t.abort()
            assert t.get_extra_info("peername") == ("127.0.0.1", 1)
        await asyncio.sleep(0)  # the scheduled flush finds nothing left to send
        return closed.events, aborted.events

    assert asyncio.run(run()) == ([b"ab", "close"], ["abort"])


def test_a_write_now_goes_out_at_once_after_what_is_pending() -> None:
    async def run() -> tuple[list[Any], list[Any]]:
        inner = RecordingTransport()
        t = CoalescingTransport(inner, asyncio.get_running_loop())
        t.write_now(b"chunk 1")
        at_once = list(inner.events)
        t.write(b"head")
        t.write_now(b"chunk 2")
        await asyncio.sleep(0)  # the scheduled flush finds nothing left to send
        return at_once, inner.events

    assert asyncio.run(run()) == ([b"chunk 1"], [b"chunk 1", b"head", b"chunk 2"])
