"""The tunnel's wire format: every frame is one binary WebSocket message, a 6-byte header and a payload.

Header (big-endian): frame type (1 byte), flags (1 byte), stream id (4 bytes; 0 for the connection's own
frames). Payloads: JSON for HELLO, OPEN, RESPONSE and RESET, raw bytes for DATA, an optional close code and
reason for END, a 4-byte increment for WINDOW, nothing for PING and PONG. docs/sync-protocol.md has the table.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Any

import orjson

VERSION = 1
HEADER = struct.Struct(">BBI")
_CLOSE = struct.Struct(">H")
_WINDOW = struct.Struct(">I")

# Per stream and direction: DATA bytes a receiver accepts before it has granted more (WINDOW frames). A window
# must cover the time a grant takes to come back through hub, tunnel and syncer: with 256 KiB a port-forward's
# download ran at 60-80 MiB/s on loopback, with 1 MiB at ~125 (bench/debug_bench.py).
WINDOW = 1024 * 1024
# A receiver grants back what its consumer took once that is half a window: fewer WINDOW frames than one per
# DATA, and since a DATA payload is at most MAX_CHUNK <= GRANT_AT, a sender never waits for a grant that the
# receiver holds back (what is neither buffered nor granted is under GRANT_AT, so the sender's credit exceeds
# WINDOW - GRANT_AT >= MAX_CHUNK).
GRANT_AT = WINDOW // 2
MAX_CHUNK = 64 * 1024
MAX_MESSAGE = 4 * 1024 * 1024  # one relayed WebSocket message, reassembled (aiohttp's default limit)
MAX_FRAME = HEADER.size + MAX_CHUNK + 64 * 1024  # DATA, or a JSON frame (OPEN with its headers) at most


class Kind(enum.IntEnum):
    HELLO = 1  # hub → syncer, stream 0, first frame: {"version", "pingInterval"}
    OPEN = 2  # hub → syncer: {"method", "path", "query", "headers", "upgrade"}
    RESPONSE = 3  # syncer → hub: {"status", "headers", "subprotocol"}
    DATA = 4  # either way: body bytes, or (upgraded) a WebSocket message or a piece of one
    END = 5  # either way: nothing more from this side (upgraded: a WebSocket close, with its code)
    RESET = 6  # either way: the stream is abandoned; payload: a kube Status (may be empty from the hub)
    WINDOW = 7  # either way: the receiver consumed this many more bytes of the stream's DATA
    PING = 8  # either way, stream 0: answered by PONG
    PONG = 9


TEXT = 0x01  # DATA of an upgraded stream: a text message (its UTF-8 bytes)
MORE = 0x02  # DATA of an upgraded stream: the message continues in the next DATA frame


class FrameError(ValueError):
    """Bytes that are not a frame: the connection is not speaking this protocol."""


@dataclass(frozen=True)
class Frame:
    kind: int  # a Kind, or a number a newer peer uses (ignored)
    stream: int
    flags: int
    payload: bytes

    def json(self) -> dict[str, Any]:
        try:
            value = orjson.loads(self.payload) if self.payload else {}
        except orjson.JSONDecodeError as exc:
            raise FrameError(f"{Kind(self.kind).name} frame with a payload that is not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise FrameError(f"{Kind(self.kind).name} frame with a payload that is not a JSON object")
        return value


def encode(kind: int, stream: int, payload: bytes = b"", flags: int = 0) -> bytes:
    return HEADER.pack(kind, flags, stream) + payload


def encode_json(kind: Kind, stream: int, value: dict[str, Any]) -> bytes:
    return encode(kind, stream, orjson.dumps(value))


def decode(data: bytes) -> Frame:
    if len(data) < HEADER.size:
        raise FrameError(f"a frame of {len(data)} bytes is shorter than its header")
    kind, flags, stream = HEADER.unpack_from(data)
    return Frame(kind, stream, flags, bytes(data[HEADER.size:]))


def encode_end(stream: int, code: int | None = None, reason: str = "") -> bytes:
    payload = b"" if code is None else _CLOSE.pack(code) + reason.encode()[:123]  # a close frame's limit
    return encode(Kind.END, stream, payload)


def end_of(frame: Frame) -> tuple[int | None, str]:
    """The close code and reason an END carries (None: a plain half-close)."""
    if len(frame.payload) < _CLOSE.size:
        return None, ""
    return _CLOSE.unpack_from(frame.payload)[0], frame.payload[_CLOSE.size:].decode(errors="replace")


def encode_window(stream: int, increment: int) -> bytes:
    return encode(Kind.WINDOW, stream, _WINDOW.pack(increment))


def window_of(frame: Frame) -> int:
    if len(frame.payload) != _WINDOW.size:
        raise FrameError("a WINDOW frame carries 4 bytes")
    return int(_WINDOW.unpack(frame.payload)[0])
