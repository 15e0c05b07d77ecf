"""The SPDY/3.1 codec of port-forwarding, and the port-forward session driven as kubectl drives it."""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

import pytest

from sim.streams import spdy
from sim.streams.httpd import serve_http
from sim.streams.portforward import PortForwardSession

# A SYN_STREAM made by another implementation (node's spdy-transport test suite): stream 1, ":method: GET" and
# ":path: /", its header block compressed with the SPDY/3 dictionary.
FOREIGN_SYN_STREAM = bytes.fromhex("800300010000002c0000000100000000000078f9e3c6a7c202e50e507ab442a45a77d7105006"
                                   "b32a4804974d8cfa00000000ffff")


def test_the_dictionary_is_spdy3s() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2  # the FDICT id every SPDY/3 header block carries
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")


def test_a_foreign_header_block_decodes() -> None:
    (frame,) = spdy.Framer().feed(FOREIGN_SYN_STREAM)
    assert frame == spdy.SynStream(1, [(":method", "GET"), (":path", "/")])


def test_encoded_header_blocks_name_the_dictionary() -> None:
    encoded = spdy.Framer().encode(spdy.SynReply(1, [("streamtype", "data")]))
    # control bit and version 3, type 2, then the stream id and a zlib stream with FDICT 0xe3c6a7c2
    assert encoded[:4] == b"\x80\x03\x00\x02"
    assert encoded[12:18] == b"\x78\xf9\xe3\xc6\xa7\xc2"


FRAMES: list[spdy.Frame] = [
    spdy.SynStream(1, [("streamtype", "error"), ("port", "80"), ("requestid", "0")], priority=3),
    spdy.SynStream(3, [("streamtype", "data")], flags=spdy.FLAG_FIN | spdy.FLAG_UNIDIRECTIONAL, associated_to=1),
    spdy.SynReply(1),
    spdy.SynReply(3, [("status", "200"), ("x", "a"), ("x", "b")], flags=spdy.FLAG_FIN),
    spdy.HeadersFrame(5, [("k", "v")]),
    spdy.Data(1, b"hello"),
    spdy.Data(3, b"", spdy.FLAG_FIN),
    spdy.Data(0x7FFFFFFF, bytes(range(256)) * 300),
    spdy.RstStream(7, spdy.CANCEL),
    spdy.Settings(((0, 7, 65536), (1, 4, 100))),
    spdy.Ping(1),
    spdy.GoAway(9, 0),
    spdy.WindowUpdate(3, 4096),
]


def test_every_frame_round_trips_through_one_connection() -> None:
    client, server = spdy.Framer(), spdy.Framer()
    wire = b"".join(client.encode(f) for f in FRAMES)
    assert server.feed(wire) == FRAMES


def test_frames_split_anywhere_are_reassembled() -> None:
    client, server = spdy.Framer(), spdy.Framer()
    wire = b"".join(client.encode(f) for f in FRAMES)
    got: list[spdy.Frame] = []
    for i in range(0, len(wire), 7):
        got += server.feed(wire[i:i + 7])
    assert got == FRAMES


def test_header_compression_is_one_context_per_direction() -> None:
    client, server = spdy.Framer(), spdy.Framer()
    headers = [("streamtype", "data"), ("port", "8080"), ("requestid", "12")]
    first = client.encode(spdy.SynStream(1, headers))
    second = client.encode(spdy.SynStream(3, headers))
    assert len(second) < len(first)  # the second block refers back to the first
    with pytest.raises(spdy.SpdyError):
        spdy.Framer().feed(second)  # so it cannot be read without it
    assert server.feed(first + second) == [spdy.SynStream(1, headers), spdy.SynStream(3, headers)]


def test_header_blocks_are_lower_case_and_join_repeated_names() -> None:
    block = spdy.encode_header_block([("StreamType", "data"), ("x", "1"), ("x", "2")])
    assert block == (b"\x00\x00\x00\x02" b"\x00\x00\x00\x0astreamtype\x00\x00\x00\x04data"
                     b"\x00\x00\x00\x01x\x00\x00\x00\x031\x002")
    assert spdy.decode_header_block(block) == [("streamtype", "data"), ("x", "1"), ("x", "2")]
    with pytest.raises(spdy.SpdyError):
        spdy.decode_header_block(b"\x00\x00\x00\x01\x00\x00\x00\x01X\x00\x00\x00\x00")
    with pytest.raises(spdy.SpdyError):
        spdy.decode_header_block(b"\x00\x00\x00\x01\x00\x00")


def test_other_versions_and_unknown_control_frames() -> None:
    framer = spdy.Framer()
    with pytest.raises(spdy.SpdyError):
        framer.feed(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")  # a SPDY/2 PING
    assert spdy.Framer().feed(b"\x80\x03\x00\x0a\x00\x00\x00\x00") == []  # CREDENTIAL: ignored


# --- the session ------------------------------------------------------------------------------------


class FakeSocket:
    def __init__(self) -> None:
        self.sent = b""
        self.closed = False

    async def send(self, data: bytes) -> None:
        self.sent += data


POD: dict[str, Any] = {"metadata": {"name": "web-1", "uid": "u1"},
                       "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 8080}]}]}}


def _streams(request: int, port: int, first: int) -> list[spdy.Frame]:
    headers = [("port", str(port)), ("requestid", str(request))]
    return [spdy.SynStream(first, [("streamtype", "error"), *headers]), spdy.Data(first, b"", spdy.FLAG_FIN),
            spdy.SynStream(first + 2, [("streamtype", "data"), *headers])]


async def _session(script: list[list[spdy.Frame]]) -> list[spdy.Frame]:
    """Feed each batch of client frames, letting the session work in between; the frames it sent back."""
    socket = FakeSocket()
    session = PortForwardSession(socket, "wec1", POD)  # type: ignore[arg-type]
    client = spdy.Framer()
    runner = asyncio.create_task(session.run())
    for batch in script:
        await session.feed(b"".join(client.encode(f) for f in batch))
        for _ in range(20):
            await asyncio.sleep(0)
    await session.feed(client.encode(spdy.GoAway(0)))
    await runner
    return spdy.Framer().feed(socket.sent)


def test_session_replies_answers_http_and_closes_both_streams() -> None:
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    got = asyncio.run(_session([_streams(0, 8080, 1), [spdy.Data(3, request), spdy.Data(3, request)],
                                [spdy.Data(3, b"", spdy.FLAG_FIN)], [spdy.Ping(1)]]))
    assert got[:2] == [spdy.SynReply(1), spdy.SynReply(3)]
    body = b"".join(f.data for f in got if isinstance(f, spdy.Data) and f.stream_id == 3)
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 33\r\n\r\n"
              b"pod=web-1 cluster=wec1 port=8080\n")
    assert body == answer * 2
    fins = [f.stream_id for f in got if isinstance(f, spdy.Data) and f.fin]
    assert sorted(fins) == [1, 3]
    assert got[-1] == spdy.Ping(1)
    assert not [f for f in got if isinstance(f, spdy.Data) and f.stream_id == 1 and f.data]  # no error


def test_session_reports_a_port_nothing_listens_on() -> None:
    got = asyncio.run(_session([_streams(4, 80, 5)]))
    error = b"".join(f.data for f in got if isinstance(f, spdy.Data) and f.stream_id == 5).decode()
    assert error.startswith("error forwarding port 80 to pod ")
    assert "failed to connect to localhost:80 inside namespace" in error
    assert sorted(f.stream_id for f in got if isinstance(f, spdy.Data) and f.fin) == [5, 7]


def test_session_serves_concurrent_connections_and_resets() -> None:
    get = b"GET /x HTTP/1.1\r\n\r\n"
    got = asyncio.run(_session([_streams(0, 8080, 1) + _streams(1, 8080, 5),
                                [spdy.Data(7, get), spdy.Data(3, get)], [spdy.RstStream(3, spdy.CANCEL)],
                                [spdy.Data(7, b"", spdy.FLAG_FIN)]]))
    for stream in (3, 7):
        assert b"".join(f.data for f in got if isinstance(f, spdy.Data) and f.stream_id == stream).endswith(
            b"port=8080\n")
    fins = {f.stream_id for f in got if isinstance(f, spdy.Data) and f.fin}
    assert fins == {1, 5, 7}  # the reset data stream gets no FIN


def test_session_refuses_streams_without_a_port_or_type() -> None:
    got = asyncio.run(_session([[spdy.SynStream(1, [("streamtype", "data")]),
                                 spdy.SynStream(3, [("streamtype", "other"), ("port", "80")])]]))
    assert got == [spdy.RstStream(1, spdy.PROTOCOL_ERROR), spdy.RstStream(3, spdy.PROTOCOL_ERROR)]


# --- the HTTP responder -----------------------------------------------------------------------------


def _http(chunks: list[bytes]) -> bytes:
    async def go() -> bytes:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        for chunk in [*chunks, None]:
            queue.put_nowait(chunk)
        out = bytearray()

        async def write(data: bytes) -> None:
            out.extend(data)
        await serve_http(queue.get, write, b"hi\n")
        return bytes(out)
    return asyncio.run(go())


def test_http_keep_alive_pipelining_and_bodies() -> None:
    out = _http([b"GET / HTTP/1.1\r\n\r\nPOST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", b"cdeHEAD / HTTP/1.1\r\n",
                 b"\r\n"])
    assert out.count(b"HTTP/1.1 200 OK") == 3 and out.count(b"hi\n") == 2  # HEAD: no body
    assert b"Connection: close" not in out


def test_http_close_and_http10() -> None:
    assert _http([b"GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n"]).count(b"200 OK") == 1
    assert _http([b"GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n"]).count(b"200 OK") == 1
    keep = _http([b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n"])
    assert keep.count(b"200 OK") == 2


def test_http_bad_requests() -> None:
    assert _http([b"nonsense\r\n\r\n"]).startswith(b"HTTP/1.1 400 Bad Request")
    assert _http([b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"]).startswith(b"HTTP/1.1 400")
    assert _http([b"GET / HTTP/1.1\r\n"]) == b""  # the client left mid-request


def test_http_download_path_answers_that_many_bytes_and_other_paths_the_fixed_body() -> None:
    out = _http([b"GET /bytes/3000000 HTTP/1.1\r\n\r\nGET /bytes/x HTTP/1.1\r\n\r\nGET /bytes/0 HTTP/1.1\r\n\r\n"])
    first, rest = out.split(b"\r\n\r\n", 1)
    assert b"Content-Length: 3000000" in first
    body, rest = rest[:3_000_000], rest[3_000_000:]
    assert body[:3] == b"\x00\x01\x02" and body[256:259] == b"\x00\x01\x02"
    assert rest.count(b"HTTP/1.1 200 OK") == 2 and rest.count(b"hi\n") == 1  # /bytes/x: not a size
    assert rest.endswith(b"Content-Length: 0\r\n\r\n")
    too_big = _http([b"GET /bytes/999999999999 HTTP/1.1\r\n\r\n"])
    assert too_big.endswith(b"hi\n")
