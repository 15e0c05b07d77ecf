"""SPDY/3.1 framing, as much as port-forwarding needs (the server side of kubectl's tunnelled SPDY).

kubectl 1.37 port-forwards over a WebSocket whose subprotocol is ``SPDY/3.1+portforward.k8s.io`` (KEP-4006):
the binary messages carry a plain SPDY/3.1 byte stream, message boundaries meaning nothing. Frames
(draft-mbelshe-httpbis-spdy-00, version 3):

* control: ``1 | version(15) | type(16) | flags(8) | length(24) | payload``;
* data: ``0 | stream-id(31) | flags(8) | length(24) | payload`` (flag 0x01: FIN, the sender's half-close).

Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are ``count(32) (name-length(32) name value-length(32)
value)*`` (names lower case, several values of one name joined by NUL), compressed with zlib and the
SPDY/3 dictionary, one compression context per direction for the whole connection, each block ending with a
sync flush. A :class:`Framer` holds both contexts of one connection: :meth:`Framer.feed` turns received bytes
into frames, :meth:`Framer.encode` turns frames into bytes; encoded header blocks must go out in the order
they were encoded.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
MAX_LENGTH = (1 << 24) - 1

SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

# RST_STREAM status codes.
PROTOCOL_ERROR = 1
INVALID_STREAM = 2
REFUSED_STREAM = 3
CANCEL = 5
INTERNAL_ERROR = 6

# The SPDY/3 header dictionary: length-prefixed header names and values, then a tail of status lines,
# dates and media types without prefixes (draft 3, section 2.6.10.1). Its adler32 is 0xe3c6a7c2.
_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location", "content-md5",
    "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host", "if-match",
    "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer", "retry-after",
    "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
    "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie",
    "keep-alive", "origin",
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()

HeaderList = list[tuple[str, str]]


class SpdyError(Exception):
    """The peer broke the protocol; the connection cannot go on."""


@dataclass(frozen=True)
class Data:
    stream_id: int
    data: bytes = b""
    flags: int = 0

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: HeaderList = field(default_factory=list)
    flags: int = 0
    associated_to: int = 0
    priority: int = 0
    slot: int = 0

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)

    def header(self, name: str) -> str:
        return next((v for k, v in self.headers if k == name), "")


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: HeaderList = field(default_factory=list)
    flags: int = 0


@dataclass(frozen=True)
class HeadersFrame:
    """A HEADERS frame."""

    stream_id: int
    headers: HeaderList = field(default_factory=list)
    flags: int = 0


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Settings:
    entries: tuple[tuple[int, int, int], ...] = ()  # (flags, id, value)
    flags: int = 0


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


Frame = Data | SynStream | SynReply | HeadersFrame | RstStream | Settings | Ping | GoAway | WindowUpdate


def encode_header_block(headers: HeaderList) -> bytes:
    """The uncompressed name/value block; names are sent lower case, repeated names joined by NUL."""
    merged: dict[str, list[str]] = {}
    for name, value in headers:
        merged.setdefault(name.lower(), []).append(value)
    out = [struct.pack(">I", len(merged))]
    for name, values in merged.items():
        raw_name, raw_value = name.encode(), "\x00".join(values).encode()
        out.append(struct.pack(">I", len(raw_name)) + raw_name + struct.pack(">I", len(raw_value)) + raw_value)
    return b"".join(out)


def decode_header_block(block: bytes) -> HeaderList:
    """Pairs in order; a value holding NULs gives one pair per value."""
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        pos, out = 4, []
        for _ in range(count):
            (size,) = struct.unpack_from(">I", block, pos)
            name = block[pos + 4:pos + 4 + size].decode()
            pos += 4 + size
            (size,) = struct.unpack_from(">I", block, pos)
            value = block[pos + 4:pos + 4 + size].decode()
            pos += 4 + size
            if not name or name != name.lower():
                raise SpdyError(f"invalid header name {name!r}")
            out.extend((name, v) for v in value.split("\x00"))
    except (struct.error, UnicodeDecodeError) as exc:
        raise SpdyError(f"malformed header block: {exc}") from None
    if pos != len(block):
        raise SpdyError("header block has trailing bytes")
    return out


class Framer:
    """Both directions of one SPDY connection: parsing received bytes and encoding frames to send."""

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(zdict=DICTIONARY)
        self._deflater = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, zdict=DICTIONARY)
        self._buffer = bytearray()

    # --- sending ------------------------------------------------------------------------------

    def _compress(self, headers: HeaderList) -> bytes:
        block = encode_header_block(headers)
        return self._deflater.compress(block) + self._deflater.flush(zlib.Z_SYNC_FLUSH)

    def encode(self, frame: Frame) -> bytes:
        if isinstance(frame, Data):
            if len(frame.data) > MAX_LENGTH:
                raise ValueError("data frame too long")
            return struct.pack(">II", frame.stream_id & 0x7FFFFFFF, (frame.flags << 24) | len(frame.data)) + \
                frame.data
        if isinstance(frame, SynStream):
            head = struct.pack(">IIBB", frame.stream_id, frame.associated_to, (frame.priority & 7) << 5, frame.slot)
            return _control(SYN_STREAM, frame.flags, head + self._compress(frame.headers))
        if isinstance(frame, SynReply):
            return _control(SYN_REPLY, frame.flags, struct.pack(">I", frame.stream_id) + self._compress(frame.headers))
        if isinstance(frame, HeadersFrame):
            return _control(HEADERS, frame.flags, struct.pack(">I", frame.stream_id) + self._compress(frame.headers))
        if isinstance(frame, RstStream):
            return _control(RST_STREAM, 0, struct.pack(">II", frame.stream_id, frame.status))
        if isinstance(frame, Settings):
            body = struct.pack(">I", len(frame.entries)) + b"".join(
                struct.pack(">II", (flags << 24) | ident, value) for flags, ident, value in frame.entries)
            return _control(SETTINGS, frame.flags, body)
        if isinstance(frame, Ping):
            return _control(PING, 0, struct.pack(">I", frame.ping_id))
        if isinstance(frame, GoAway):
            return _control(GOAWAY, 0, struct.pack(">II", frame.last_good_stream_id, frame.status))
        return _control(WINDOW_UPDATE, 0, struct.pack(">II", frame.stream_id, frame.delta))

    # --- receiving ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by ``data`` (bytes of an incomplete frame wait for the next call)."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= 8:
            word, flags_length = struct.unpack_from(">II", self._buffer, 0)
            length = flags_length & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            flags = flags_length >> 24
            if word & 0x80000000:
                version, kind = (word >> 16) & 0x7FFF, word & 0xFFFF
                if version != VERSION:
                    raise SpdyError(f"unsupported SPDY version {version}")
                frame = self._control_frame(kind, flags, payload)
                if frame is not None:
                    frames.append(frame)
            else:
                frames.append(Data(word & 0x7FFFFFFF, payload, flags))
        return frames

    def _inflate(self, block: bytes) -> HeaderList:
        try:
            return decode_header_block(self._inflater.decompress(block))
        except zlib.error as exc:
            raise SpdyError(f"header block does not decompress: {exc}") from None

    def _control_frame(self, kind: int, flags: int, payload: bytes) -> Frame | None:
        try:
            if kind == SYN_STREAM:
                stream_id, associated, priority, slot = struct.unpack_from(">IIBB", payload, 0)
                return SynStream(stream_id & 0x7FFFFFFF, self._inflate(payload[10:]), flags, associated & 0x7FFFFFFF,
                                 priority >> 5, slot)
            if kind in (SYN_REPLY, HEADERS):
                (stream_id,) = struct.unpack_from(">I", payload, 0)
                kind_of = SynReply if kind == SYN_REPLY else HeadersFrame
                return kind_of(stream_id & 0x7FFFFFFF, self._inflate(payload[4:]), flags)
            if kind == RST_STREAM:
                stream_id, status = struct.unpack_from(">II", payload, 0)
                return RstStream(stream_id & 0x7FFFFFFF, status)
            if kind == SETTINGS:
                (count,) = struct.unpack_from(">I", payload, 0)
                entries = []
                for i in range(count):
                    flags_id, value = struct.unpack_from(">II", payload, 4 + 8 * i)
                    entries.append((flags_id >> 24, flags_id & 0xFFFFFF, value))
                return Settings(tuple(entries), flags)
            if kind == PING:
                return Ping(struct.unpack_from(">I", payload, 0)[0])
            if kind == GOAWAY:
                last, status = struct.unpack_from(">II", payload, 0) if len(payload) >= 8 else \
                    (struct.unpack_from(">I", payload, 0)[0], 0)
                return GoAway(last & 0x7FFFFFFF, status)
            if kind == WINDOW_UPDATE:
                stream_id, delta = struct.unpack_from(">II", payload, 0)
                return WindowUpdate(stream_id & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        except struct.error as exc:
            raise SpdyError(f"malformed control frame of type {kind}: {exc}") from None
        return None  # unknown control frames are ignored, as the draft asks


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    if len(payload) > MAX_LENGTH:
        raise ValueError("control frame too long")
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload
