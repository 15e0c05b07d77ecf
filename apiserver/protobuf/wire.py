"""The protobuf wire format, reading side: tags, varints, fixed-width and length-delimited values."""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
_GROUP_START, _GROUP_END = 3, 4
WIRE_NAMES = {VARINT: "varint", FIXED64: "fixed64", LEN: "length-delimited", FIXED32: "fixed32",
              _GROUP_START: "start-group", _GROUP_END: "end-group"}

_MAX_FIELD = (1 << 29) - 1


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("unexpected end of data inside a varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift >= 64:
            raise WireError("varint longer than 10 bytes")
    if value >> 64:
        raise WireError("varint overflows 64 bits")
    return value, pos


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` for each field: an int for numeric wire types, bytes for LEN."""
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = read_varint(data, pos)
        number, wire_type = tag >> 3, tag & 7
        if number == 0 or number > _MAX_FIELD:
            raise WireError(f"illegal field number {number}")
        value: int | bytes
        if wire_type == VARINT:
            value, pos = read_varint(data, pos)
        elif wire_type == LEN:
            size, pos = read_varint(data, pos)
            if size > end - pos:
                raise WireError(f"field {number}: length {size} runs past the end of the data")
            value, pos = data[pos:pos + size], pos + size
        elif wire_type in (FIXED64, FIXED32):
            width = 8 if wire_type == FIXED64 else 4
            if width > end - pos:
                raise WireError(f"field {number}: unexpected end of data inside a fixed-width value")
            value, pos = int.from_bytes(data[pos:pos + width], "little"), pos + width
        else:
            # Groups are proto1 relics no Kubernetes message uses; 6 and 7 are not wire types at all.
            raise WireError(f"field {number}: unsupported wire type {wire_type}")
        yield number, wire_type, value


def packed(data: bytes, wire_type: int) -> list[int]:
    """The elements of a packed repeated scalar field."""
    out: list[int] = []
    pos = 0
    if wire_type == VARINT:
        while pos < len(data):
            value, pos = read_varint(data, pos)
            out.append(value)
        return out
    width = 8 if wire_type == FIXED64 else 4
    if len(data) % width:
        raise WireError(f"packed fixed-width data of {len(data)} bytes is not a multiple of {width}")
    return [int.from_bytes(data[i:i + width], "little") for i in range(0, len(data), width)]


def as_int32(value: int) -> int:
    """A varint as Go's int32 conversion sees it: the low 32 bits, two's complement."""
    value &= 0xFFFF_FFFF
    return value - (1 << 32) if value >> 31 else value


def as_int64(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def as_double(value: int) -> float:
    return struct.unpack("<d", value.to_bytes(8, "little"))[0]
