"""The tunnel's frames and multiplexer (kubeclient/tunnel/), two sessions joined by an in-memory pipe: what the
protocol guarantees when a peer misbehaves, overloads it or goes silent (tests/integration/test_tunnel.py
runs it over real WebSockets, proxies and clusters)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kubeclient.tunnel.frames import (
    MAX_CHUNK,
    MORE,
    TEXT,
    WINDOW,
    Frame,
    FrameError,
    Kind,
    decode,
    encode,
    encode_end,
    end_of,
)
from kubeclient.tunnel.mux import MAX_STREAMS, Session
from kubeclient.tunnel.stream import Closed, Message, Stream, StreamReset


class Pipe:
    """One end of an in-memory connection (None in a queue: the other end closed)."""

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]) -> None:
        self.inbox, self.outbox = inbox, outbox
        self.sent: list[Frame] = []

    async def send(self, data: bytes) -> None:
        self.sent.append(decode(data))
        await self.outbox.put(data)

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def close(self, code: int, reason: str) -> None:
        await self.outbox.put(None)


def pipes() -> tuple[Pipe, Pipe]:
    a: asyncio.Queue[bytes | None] = asyncio.Queue()
    b: asyncio.Queue[bytes | None] = asyncio.Queue()
    return Pipe(a, b), Pipe(b, a)


async def until(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.005)


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())


def test_frames_round_trip() -> None:
    frame = decode(encode(Kind.DATA, 7, b"abc", TEXT | MORE))
    assert (frame.kind, frame.stream, frame.flags, frame.payload) == (Kind.DATA, 7, TEXT | MORE, b"abc")
    assert end_of(decode(encode_end(3, 4001, "bye"))) == (4001, "bye")
    assert end_of(decode(encode_end(3))) == (None, "")
    with pytest.raises(FrameError):
        decode(b"\x04\x00")
    with pytest.raises(FrameError):
        decode(encode(Kind.OPEN, 1, b"[1]")).json()


def test_streams_carry_bodies_and_messages_and_end_on_both_sides() -> None:
    async def echo(stream: Stream) -> None:
        stream.respond({"status": 200})
        while True:
            item = await stream.receive_message()
            if isinstance(item, Closed):
                stream.end(item.code, "echoed")
                return
            await stream.send_message(item.data, item.text)

    async def scenario() -> None:
        hub_end, syncer_end = pipes()
        hub = Session(hub_end, ping_interval=30)
        syncer = Session(syncer_end, ping_interval=30, on_open=echo)
        tasks = [asyncio.create_task(hub.run()), asyncio.create_task(syncer.run())]
        stream = hub.open({"method": "GET"})
        assert (await stream.response(5))["status"] == 200
        big = bytes(range(256)) * 1024  # 256 KiB: four frames, one message, the whole window
        for message in (Message(b"one"), Message("zw\u00f6lf".encode(), text=True), Message(big), Message(b"")):
            await stream.send_message(message.data, message.text)
            assert await stream.receive_message() == message
        stream.end(4000, "done")
        assert await stream.receive_message() == Closed(4000, "echoed")
        await until(lambda: not hub.streams and not syncer.streams)
        assert hub.bytes_sent == syncer.bytes_received == len(big) + 3 + 6
        hub.close()
        assert await tasks[0] == "closed by this side"
        assert await tasks[1] == "the connection ended"

    run(scenario)


def test_a_sender_past_its_window_has_its_stream_reset() -> None:
    async def scenario() -> None:
        hub_end, syncer_end = pipes()
        hub = Session(hub_end, ping_interval=30)
        task = asyncio.create_task(hub.run())
        stream = hub.open({"method": "GET"})
        await syncer_end.send(encode(Kind.RESPONSE, stream.id, b'{"status": 200}'))
        for _ in range(WINDOW // MAX_CHUNK + 1):  # one frame more than the window, nobody reading
            await syncer_end.send(encode(Kind.DATA, stream.id, b"x" * MAX_CHUNK))
        await until(lambda: stream.failure is not None)
        assert stream.failure is not None and stream.failure["code"] == 500
        assert stream.buffered <= WINDOW
        assert any(f.kind == Kind.RESET and f.stream == stream.id for f in hub_end.sent)
        await stream.next()  # what came within the window is still there to read, then the reset
        for _ in range(WINDOW // MAX_CHUNK):
            await stream.next()
        with pytest.raises(StreamReset):
            await stream.next()
        hub.close()
        await task

    run(scenario)


def test_opens_beyond_the_limit_are_refused_and_the_tunnels_end_fails_the_rest() -> None:
    started: list[int] = []
    cancelled: list[int] = []

    async def hold(stream: Stream) -> None:
        started.append(stream.id)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(stream.id)
            raise

    async def scenario() -> None:
        hub_end, syncer_end = pipes()
        hub = Session(hub_end, ping_interval=30)
        syncer = Session(syncer_end, ping_interval=30, on_open=hold)
        tasks = [asyncio.create_task(hub.run()), asyncio.create_task(syncer.run())]
        streams = [hub.open({"n": i}) for i in range(MAX_STREAMS + 1)]
        with pytest.raises(StreamReset) as refused:
            await streams[-1].response(5)
        assert refused.value.status["code"] == 429
        await until(lambda: len(started) == MAX_STREAMS)
        syncer.close()
        await asyncio.gather(*tasks)
        assert len(cancelled) == MAX_STREAMS
        with pytest.raises(StreamReset) as lost:
            await streams[0].response(5)
        assert lost.value.status["code"] == 503

    run(scenario)


def test_the_syncers_pings_keep_a_quiet_tunnel_the_hub_only_answers_and_silence_ends_it() -> None:
    async def scenario() -> None:
        hub_end, syncer_end = pipes()
        hub = Session(hub_end, ping_interval=0.05, pings=False)
        syncer = Session(syncer_end, ping_interval=0.05)
        tasks = [asyncio.create_task(hub.run()), asyncio.create_task(syncer.run())]
        await syncer_end.outbox.put(encode(42, 0, b"?"))  # a frame type of a newer peer: ignored
        await until(lambda: sum(f.kind == Kind.PONG for f in hub_end.sent) >= 6)  # twice the silence allowed
        assert not any(task.done() for task in tasks)
        assert sum(f.kind == Kind.PING for f in syncer_end.sent) >= 6
        assert not any(f.kind == Kind.PING for f in hub_end.sent)  # one side's pings are enough traffic
        hub.close()
        await asyncio.gather(*tasks)

        lonely_end, _silent_peer = pipes()
        why = await asyncio.wait_for(Session(lonely_end, ping_interval=0.05).run(), 5)
        assert why == "nothing heard for 0.15s"  # three intervals
        assert [f.kind for f in lonely_end.sent][:2] == [Kind.PING, Kind.PING]

        answering_end, _silent_syncer = pipes()
        why = await asyncio.wait_for(Session(answering_end, ping_interval=0.05, pings=False).run(), 5)
        assert why == "nothing heard for 0.15s" and not answering_end.sent  # a silent syncer is noticed too

    run(scenario)
